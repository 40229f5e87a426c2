//! Batches (docs/approvals.md, "Batches"): pending approvals answered at once, "Allow
//! selected" or "Deny selected".
//!
//! A *pending approval* is a pending request with one open single-select question that has an
//! option labelled "Deny" and an allow option, "Allow" or else "Allow once" (the labels of the
//! front doors). A batch offers a person the approvals they may answer now, and not their own
//! request on a route that excludes the requester; on a verdict, each selected request goes
//! through the checks of a press on its own message ([`check`]), then the core settles it.

use super::admit::{self, Refused};
use super::listing;
use super::{Person, Platform};
use crate::domain::approval::{is_approval, Verdict};
use crate::domain::request::{Answered, AuditAction, Post, Request, Status};

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
