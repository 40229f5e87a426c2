//! Votes and first-wins, as a press sees them: a settlement goes through the core
//! ([`AnswererContext::settle`], [`AnswererContext::settle_confirmed`]: the quorum, the requester rule, the confirm word,
//! first wins, the audit row), and what it came to is one typed [`Settle`] for the platform to
//! show: the message's final state, its new vote count, or a private reply.

use crate::domain::quorum::Policy;
use crate::domain::request::{Actor, Answered, Request, Status};
use crate::domain::vote::Tally;
use crate::domain::{AnswererContext, ErrorCode, SettleOutcome, Settlement};

/// What a settlement came to.
#[derive(Debug, Clone)]
pub enum Settle {
    /// It won: the request as it is now, answered. The message shows its final state.
    Won(Box<Request>),
    /// A vote counted on a quorum route; the question is still open. The message shows the
    /// new count.
    Voted(Box<Request>, Tally),
    /// This person already voted for this answer.
    AlreadyVoted(Tally),
    /// Someone settled the question first.
    AlreadyAnswered(Box<Answered>),
    /// The request ended before this counted.
    Ended(Status),
    /// The request is no longer known.
    Unknown,
    /// The store could not save it: the cause, to class (never to show).
    NotSaved(String),
    /// The core refused it (the requester on a route that excludes them, a bad edit, a word
    /// that does not match): its message, agent text and all, for the platform to make inert.
    Refused(String),
}

/// The questions of a pending request that are still open and have votes stored: their
/// messages show the count (a request taken back after a crash or by a new leader shows the
/// votes it already has).
pub fn open_with_votes(req: &Request) -> Vec<usize> {
    if req.status != Status::Pending {
        return Vec::new();
    }
    (0..req.questions.len())
        .filter(|&i| req.answers.get(i).is_some_and(Option::is_none))
        .filter(|&i| req.votes.get(i).is_some_and(|v| !v.is_empty()))
        .collect()
}

/// Settles question `idx` of `req` with `settlement` for `actor` through the core; `confirmed`:
/// the route's policy and the word typed to confirm a label that needs it.
pub async fn settle(
    ctx: &AnswererContext,
    req: &Request,
    idx: usize,
    settlement: Settlement,
    actor: Actor,
    confirmed: Option<(&Policy, &str)>,
) -> Settle {
    let settled = match confirmed {
        None => ctx.settle(req, idx, settlement, actor).await,
        Some((policy, word)) => {
            ctx.settle_confirmed(req, idx, settlement, actor, policy, Some(word))
                .await
        }
    };
    match settled {
        Ok(s) => match s.outcome {
            SettleOutcome::Won { .. } => Settle::Won(Box::new(s.request)),
            SettleOutcome::Voted(t) => Settle::Voted(Box::new(s.request), t),
            SettleOutcome::AlreadyVoted(t) => Settle::AlreadyVoted(t),
            SettleOutcome::AlreadyAnswered(prev) => Settle::AlreadyAnswered(Box::new(prev)),
            SettleOutcome::Ended(status) => Settle::Ended(status),
            SettleOutcome::Unknown => Settle::Unknown,
        },
        Err(e) if e.code == ErrorCode::Internal => Settle::NotSaved(e.message),
        Err(e) => Settle::Refused(e.message),
    }
}

/// The reply when the store refused or failed a write, naming the cause's class (never its
/// text, which may carry paths or URLs): one line, the same on every platform.
pub fn not_saved(cause: &str) -> String {
    let class = failure_class(cause);
    format!("Your answer could not be saved, try again ({class}). Nothing was recorded.")
}

/// The class of a store failure's cause, as a person is told it (never its text, which may
/// carry paths or URLs).
pub fn failure_class(cause: &str) -> &'static str {
    let lower = cause.to_ascii_lowercase();
    // A call past its deadline (`postgres.db_deadline_secs`): the database is cut off, or
    // stalled for longer than a person should wait.
    if lower.contains("did not answer within") {
        return "askrelay's database did not answer in time";
    }
    if [
        "locked",
        "busy",
        "lock timeout",
        "statement timeout",
        "timed out",
    ]
    .iter()
    .any(|w| lower.contains(w))
    {
        "askrelay's database was busy"
    } else {
        "askrelay's database failed"
    }
}
