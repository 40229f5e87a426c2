//! Batches (docs/approvals.md, "Batches"): pending approvals answered at once, "Allow
//! selected" or "Deny selected".
//!
//! A *pending approval* is a pending request with one open single-select question that has an
//! option labelled "Deny" and an allow option, "Allow" or else "Allow once" (the labels of the
//! front doors). A batch offers a person the approvals they may answer now, and not their own
//! request on a route that excludes the requester; on a verdict, each selected request goes
//! through the checks of a press on its own message ([`check`]), then the core settles it
//! ([`decide_one`], which audits every refusal). What each came to is a typed [`Decided`]; the
//! platform edits the request's messages, and the reply's words are written here ([`item`],
//! [`report`]) in the platform's [`Style`]: its markup, its length limit, and what it says its
//! own way (its allowlists' names, an earlier answer, agent text made inert).
//!
//! The controls' ids are the same on every platform ([`BatchId`]: `ar:batch:pick`,
//! `ar:batch:allow`, `ar:batch:deny`); the selection's values are the requests' tokens.

use super::admit::{self, Refused};
use super::listing;
use super::vote::{self, Settle};
use super::{Person, Platform};
use crate::domain::approval::{is_approval, Verdict};
use crate::domain::request::{is_token, Answered, AuditAction, AuditEntry, Post, Request, Status};
use crate::domain::{AnswererContext, Question, Settlement};
use std::fmt;
use std::str::FromStr;

/// What a batch control does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchId {
    /// The select menu of approvals: its values are request tokens.
    Pick,
    /// "Allow selected" or "Deny selected".
    Decide(Verdict),
}

const PREFIX: &str = "ar:batch:";

impl fmt::Display for BatchId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let code = match self {
            BatchId::Pick => "pick",
            BatchId::Decide(Verdict::Allow) => "allow",
            BatchId::Decide(Verdict::Deny) => "deny",
        };
        write!(f, "{PREFIX}{code}")
    }
}

impl FromStr for BatchId {
    type Err = ();

    /// Exactly what [`BatchId`]'s `Display` writes, nothing else.
    fn from_str(s: &str) -> Result<Self, ()> {
        match s.strip_prefix(PREFIX).ok_or(())? {
            "pick" => Ok(BatchId::Pick),
            "allow" => Ok(BatchId::Decide(Verdict::Allow)),
            "deny" => Ok(BatchId::Decide(Verdict::Deny)),
            _ => Err(()),
        }
    }
}

/// A verdict's button: "Allow selected", "Deny selected".
pub fn button(v: Verdict) -> &'static str {
    match v {
        Verdict::Allow => "Allow selected",
        Verdict::Deny => "Deny selected",
    }
}

/// The selected values, each once, in order, at most `max`: the tokens a verdict decides.
pub fn selection(values: impl IntoIterator<Item = String>, max: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for v in values {
        if !out.contains(&v) && out.len() < max {
            out.push(v);
        }
    }
    out
}

/// Whether a batch offers `req` to `person` at `now_ms`: a pending approval this platform
/// shows that they may answer on its route (as a press would be admitted), and not one they
/// asked themselves on a route that excludes the requester.
pub fn answerable(platform: &dyn Platform, req: &Request, person: &Person, now_ms: i64) -> bool {
    if !req.shown_by(platform.name()) || !is_approval(req) {
        return false;
    }
    platform.may_answer(req, person, now_ms)
        && !platform
            .policy(req)
            .refuses_requester(req, &person.actor, &platform.host())
}

/// The listed approvals `person` may answer at `now_ms`, for the batch controls.
pub fn offered<'a>(
    platform: &dyn Platform,
    person: &Person,
    listed: &[&'a (Request, Vec<Post>)],
    now_ms: i64,
) -> Vec<&'a Request> {
    listed
        .iter()
        .map(|(req, _)| req)
        .filter(|req| answerable(platform, req, person, now_ms))
        .collect()
}

/// Why one selected request of a batch was not answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Skipped {
    /// It is not one the person is shown where they pressed.
    NotListed,
    /// It is not an approval with the verdict's option.
    NotApproval(Verdict),
    /// The person may not answer it.
    NotAllowed,
    /// It was answered already.
    Answered(Box<Answered>),
    /// It ended.
    Ended(Status),
}

impl Skipped {
    /// The audit action of this refusal.
    pub fn action(&self) -> AuditAction {
        match self {
            Skipped::NotListed => AuditAction::Stale,
            Skipped::NotApproval(_) => AuditAction::Forged,
            Skipped::NotAllowed => AuditAction::Denied,
            Skipped::Answered(_) | Skipped::Ended(_) => AuditAction::Late,
        }
    }
}

/// The checks of one selected request, as a press on its own message: listed to `person` at
/// `place`, an approval with the verdict's option, the route's allowlists at `now_ms`, still
/// open. The option the verdict picks.
pub fn check(
    platform: &dyn Platform,
    req: &Request,
    person: &Person,
    place: &str,
    verdict: Verdict,
    now_ms: i64,
) -> Result<usize, Skipped> {
    let q = &req.questions[0];
    if !listing::sees(platform, person, place, req) {
        return Err(Skipped::NotListed);
    }
    let option = match verdict.option(q) {
        Some(i) if req.questions.len() == 1 && !q.multi_select => i,
        _ => return Err(Skipped::NotApproval(verdict)),
    };
    if !platform.may_answer(req, person, now_ms) {
        return Err(Skipped::NotAllowed);
    }
    match admit::open(req, 0) {
        Ok(()) => Ok(option),
        Err(r) => Err(match r.why {
            Refused::Answered(a) => Skipped::Answered(a),
            Refused::Ended { status, .. } => Skipped::Ended(status),
            _ => Skipped::NotAllowed,
        }),
    }
}

/// What became of one selected request of a batch.
#[derive(Debug)]
pub enum Decided {
    /// No request has this token: nothing was recorded (audited as `stale`).
    Unknown,
    /// The store could not read it (logged).
    Unreadable,
    /// The request, its outbox rows, and what became of it: refused by the checks of a press
    /// (audited), or what the core's settlement came to (audited by the core). The platform
    /// edits the request's messages after a [`Settle::Won`] or a [`Settle::Voted`].
    Read {
        req: Box<Request>,
        posts: Vec<Post>,
        outcome: Result<Settle, Skipped>,
    },
}

/// One request of a batch, by its `token`: read, checked as a press on its own message
/// ([`check`]), then settled through the core (quorum, requester rule, first wins). A refusal
/// is audited with `audit`'s source, actor and detail.
#[allow(clippy::too_many_arguments)] // reason: each is one fact of the press, named at the call.
pub async fn decide_one(
    ctx: &AnswererContext,
    platform: &dyn Platform,
    person: &Person,
    place: &str,
    verdict: Verdict,
    token: &str,
    audit: &AuditEntry,
    now_ms: i64,
) -> Decided {
    let refuse = |req: Option<&Request>, action: AuditAction| {
        let mut entry = audit.clone();
        entry.request_key = req.map(|r| r.key);
        entry.request_id = req.map(|r| r.request_id.clone());
        entry.question_idx = req.map(|_| 0);
        entry.action = action;
        entry.accepted = false;
        entry
    };
    let found = if is_token(token) {
        ctx.by_token(token).await
    } else {
        Ok(None)
    };
    let (req, posts) = match found {
        Ok(Some(found)) => found,
        Ok(None) => {
            ctx.refuse(refuse(None, AuditAction::Stale)).await;
            return Decided::Unknown;
        }
        Err(e) => {
            tracing::error!(error = %format!("{e:#}"), "cannot read a request for a batch");
            return Decided::Unreadable;
        }
    };
    let outcome = match check(platform, &req, person, place, verdict, now_ms) {
        Err(skipped) => {
            ctx.refuse(refuse(Some(&req), skipped.action())).await;
            Err(skipped)
        }
        Ok(i) => {
            crate::crash::point("clicked");
            Ok(vote::settle(
                ctx,
                &req,
                0,
                Settlement::choice(i),
                person.actor.clone(),
                None,
            )
            .await)
        }
    };
    Decided::Read {
        req: Box::new(req),
        posts,
        outcome,
    }
}

/// What a platform writes its own way in a batch's reply; the words around it are the same on
/// every platform.
pub trait Style {
    /// The most characters the reply holds.
    const REPLY_MAX: usize;
    /// `text` in bold.
    fn bold(&self, text: &str) -> String;
    /// A request's id (agent text, shown inert), or one no request has (`None`).
    fn request_id(&self, id: Option<&str>) -> String;
    /// Why the person may not answer a request: the route's allowlists, named as the
    /// platform's config names them.
    fn not_allowed(&self) -> &'static str;
    /// An earlier answer to `q`: by whom, when, and what.
    fn already(&self, q: &Question, a: &Answered) -> String;
    /// The core's refusal (agent text and all) made inert.
    fn inert(&self, text: &str) -> String;
}

/// What became of one selected request: done (what) or refused (why), in the platform's markup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// The request's id (agent text, shown inert), when the request is known.
    pub request_id: Option<String>,
    pub outcome: Result<String, String>,
}

/// A request no longer known, as its line of the reply says it.
const UNKNOWN: &str = "it is no longer known to askrelay; nothing was recorded.";

/// One selected request's line of the reply: what `decided` came to, in `style`'s words. The
/// platform edits the request's messages itself (after a [`Settle::Won`] or a
/// [`Settle::Voted`]); this only says what was done.
pub fn item(decided: &Decided, verdict: Verdict, style: &impl Style) -> Item {
    let refused = |why: &str| Item {
        request_id: None,
        outcome: Err(why.to_owned()),
    };
    let (req, outcome) = match decided {
        Decided::Unknown => return refused(UNKNOWN),
        Decided::Unreadable => return refused("askrelay could not read it; try again."),
        Decided::Read { req, outcome, .. } => (req, outcome),
    };
    let q = &req.questions[0];
    let outcome = match outcome {
        Err(skipped) => Err(skipped_text(skipped, q, style)),
        Ok(settled) => settled_text(settled, q, verdict, style),
    };
    Item {
        request_id: Some(req.request_id.clone()),
        outcome,
    }
}

/// What a settlement came to, as its line of the reply says it.
fn settled_text(
    settled: &Settle,
    q: &Question,
    verdict: Verdict,
    style: &impl Style,
) -> Result<String, String> {
    match settled {
        Settle::Won(_) => Ok(verdict.done().to_owned()),
        Settle::Voted(_, t) => Ok(format!(
            "vote recorded, {} of {} approvals",
            t.count, t.needed
        )),
        Settle::AlreadyVoted(t) => Err(format!(
            "you already voted for this answer ({} of {} approvals).",
            t.count, t.needed
        )),
        Settle::AlreadyAnswered(prev) => Err(style.already(q, prev)),
        Settle::Ended(status) => Err(format!(
            "it has ended ({}); your answer did not count.",
            status.as_str()
        )),
        Settle::Unknown => Err(UNKNOWN.to_owned()),
        Settle::NotSaved(_) => {
            Err("the answer could not be saved; try again. Nothing was recorded.".into())
        }
        // The core's refusal (the requester on a route that excludes them, …), audited there.
        Settle::Refused(message) => Err(style.inert(message)),
    }
}

/// Why one selected request was not answered, as its line of the reply says it.
fn skipped_text(skipped: &Skipped, q: &Question, style: &impl Style) -> String {
    match skipped {
        Skipped::NotListed => {
            "it is not one you are shown in this channel; nothing was recorded.".to_owned()
        }
        Skipped::NotApproval(v) => format!(
            "it is not an approval with a “{}” option; answer it on its message.",
            v.label()
        ),
        Skipped::NotAllowed => style.not_allowed().to_owned(),
        Skipped::Answered(a) => style.already(q, a),
        Skipped::Ended(status) => format!("it has ended ({}).", status.as_str()),
    }
}

/// The batch's reply: a summary line, then one line per request, done first; cut to
/// `style`'s [`Style::REPLY_MAX`] with "… and N more".
pub fn report<S: Style>(verdict: Verdict, items: &[Item], style: &S) -> String {
    let done = items.iter().filter(|i| i.outcome.is_ok()).count();
    let mut out = format!(
        "{}: {done} done, {} refused.",
        style.bold(button(verdict)),
        items.len() - done
    );
    let ordered = items
        .iter()
        .filter(|i| i.outcome.is_ok())
        .chain(items.iter().filter(|i| i.outcome.is_err()));
    let lines: Vec<String> = ordered
        .map(|i| {
            let id = style.request_id(i.request_id.as_deref());
            match &i.outcome {
                Ok(what) => format!("{} · {id} · {what}", style.bold("done")),
                Err(why) => format!("{} · {id} · {why}", style.bold("refused")),
            }
        })
        .collect();
    for (n, line) in lines.iter().enumerate() {
        let more = format!(
            "\n{}",
            style.bold(&format!("… and {} more", lines.len() - n))
        );
        let budget = S::REPLY_MAX - more.chars().count();
        if out.chars().count() + 1 + line.chars().count() > budget {
            out.push_str(&more);
            break;
        }
        out.push('\n');
        out.push_str(line);
    }
    out
}
