//! The `/askrelay` command, as every chat platform has it: `pending [all]`, `history [n]`,
//! `grants`, `cancel request [reason]` (operators only) and `revoke grant` (its approver or an
//! operator). The platform decodes its own payload into a [`Command`] and renders what
//! [`run`] returns: a listing, a cancellation or a revocation ([`Done`]), or why not
//! ([`Refused`]). Who sees what is [`super::listing`]'s; the batch a `pending` offers is
//! [`super::batch::offered`].

use super::batch;
use super::listing;
use super::{Person, Platform};
use crate::domain::clock::now_ms;
use crate::domain::grant::Grant;
use crate::domain::request::{Post, Request, Status};
use crate::domain::text::Escaped;
use crate::domain::AnswererContext;

/// How many pending requests a `pending` reads before it filters them for the person.
const PENDING_READ: u32 = 500;
/// How many ended requests a `history` reads before it filters them for the person.
const HISTORY_READ: u32 = 200;

/// A use of the command, decoded by the platform.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// The pending requests with a message where it was used (`all`: of the routes there).
    Pending { all: bool },
    /// Cancels a pending request (operators only); `reason` is what the agent is told.
    Cancel { request: String, reason: String },
    /// The last `n` ended requests.
    History { n: u32 },
    /// The live grants.
    Grants,
    /// Ends a grant now.
    Revoke { grant: String },
}

impl Command {
    /// How the audit log names this use: `/askrelay pending all=false`, ….
    pub fn describe(&self) -> String {
        match self {
            Command::Pending { all } => format!("/askrelay pending all={all}"),
            Command::Cancel { request, .. } => {
                format!("/askrelay cancel request={:?}", Escaped(request))
            }
            Command::History { n } => format!("/askrelay history n={n}"),
            Command::Grants => "/askrelay grants".to_owned(),
            Command::Revoke { grant } => format!("/askrelay revoke grant={:?}", Escaped(grant)),
        }
    }
}

/// What a command did, for the platform to show.
#[derive(Debug)]
pub enum Done {
    /// The pending requests listed for this person here, and the approvals among them that
    /// a batch offers them.
    Pending {
        all: bool,
        listed: Vec<(Request, Vec<Post>)>,
        offered: Vec<Request>,
    },
    /// The ended requests listed for this person here, newest first.
    History(Vec<Request>),
    /// The live grants listed for this person here.
    Grants(Vec<Grant>),
    /// The request was cancelled with this reason.
    Cancelled { request: String, reason: String },
    /// The grant was ended.
    Revoked(Box<Grant>),
}

/// Why a command did nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// `cancel` is for operators.
    NotOperator,
    /// No request has this id.
    NoSuchRequest(String),
    /// The request had ended already (with this status, when it was read as ended).
    Ended(String, Option<Status>),
    /// The core refused the revocation: its message.
    Revoke(String),
    /// The person may answer nothing here, so nothing is listed.
    NotHere,
    /// The store could not be read (logged).
    StoreFailed,
}

/// Runs `command` for `person` at `place`; every use is audited by the platform, which knows
/// how it was asked.
pub async fn run(
    platform: &dyn Platform,
    ctx: &AnswererContext,
    person: &Person,
    place: &str,
    command: &Command,
) -> Result<Done, Refused> {
    let store_failed = |e: anyhow::Error| {
        tracing::error!(error = %format!("{e:#}"), "cannot read requests for /askrelay");
        Refused::StoreFailed
    };
    match command {
        Command::Cancel { request, reason } => {
            if !person.operator {
                return Err(Refused::NotOperator);
            }
            let req = ctx
                .by_id(request)
                .await
                .map_err(store_failed)?
                .ok_or_else(|| Refused::NoSuchRequest(request.clone()))?;
            if req.status != Status::Pending {
                return Err(Refused::Ended(request.clone(), Some(req.status)));
            }
            let source = person.actor.via.into();
            if ctx.cancel(&req, reason, source, person.actor.audit()).await {
                Ok(Done::Cancelled {
                    request: request.clone(),
                    reason: reason.clone(),
                })
            } else {
                Err(Refused::Ended(request.clone(), None))
            }
        }
        Command::Revoke { grant } => ctx
            .revoke_grant(grant, &person.actor, person.operator)
            .await
            .map(|g| Done::Revoked(Box::new(g)))
            .map_err(|e| Refused::Revoke(e.message)),
        _ if !listing::lists_here(platform, person, place) => Err(Refused::NotHere),
        Command::Pending { all } => {
            let pending = ctx.pending_all(PENDING_READ).await.map_err(store_failed)?;
            let listed = listing::pending(platform, person, place, *all, &pending);
            let offered = batch::offered(platform, person, &listed, now_ms())
                .into_iter()
                .cloned()
                .collect();
            Ok(Done::Pending {
                all: *all,
                listed: listed.into_iter().cloned().collect(),
                offered,
            })
        }
        Command::Grants => {
            let grants = ctx.live_grants().await.map_err(store_failed)?;
            Ok(Done::Grants(
                listing::grants(platform, person, place, &grants)
                    .into_iter()
                    .cloned()
                    .collect(),
            ))
        }
        Command::History { n } => {
            let recent = ctx.history_all(HISTORY_READ).await.map_err(store_failed)?;
            Ok(Done::History(
                listing::history(platform, person, place, &recent, *n as usize)
                    .into_iter()
                    .cloned()
                    .collect(),
            ))
        }
    }
}
