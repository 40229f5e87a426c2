//! The chat layer: the approval rules every chat platform shares, with no platform in it.
//!
//! A platform's adapter (`answerer::discord`, `answerer::slack`) turns its payloads into plain
//! facts: the [`Person`] who pressed (their platform id already mapped to an [`Actor`]), the request
//! they pressed on, the option or the text of a form. This layer decides, and returns typed
//! values that the adapter renders: a refusal and why ([`admit::Refusal`]), which form asks
//! for the confirm word ([`confirm::WordFor`]), what a settlement came to
//! ([`vote::Settle`]), what a batch or a listing holds. Markup, components and the
//! platform's callbacks stay in the adapter, and so does most text; where both platforms say
//! the same words (a batch's reply), they are written here once, in the markup the adapter
//! supplies ([`batch::Style`]).
//!
//! What only the platform knows (who is on a route's allowlists, where a route posts, the
//! route's policy) it supplies through the [`Platform`] trait. A second platform is a new
//! adapter that implements it; nothing here changes.
//!
//! The parts, by the rule they own: `admit.rs` who may press and in what order the checks
//! run; `press.rs` what an admitted press comes to (settle, ask for the word, open a form,
//! save a draft, refuse); `form.rs` what a sent form comes to; `vote.rs` what a settlement (a
//! win, a vote, a late press) came to; `confirm.rs` the typed confirm word; `grant.rs` the
//! grants ("Allow for …", a pattern's preview, save); `edit.rs` edit-then-approve; `drafts.rs`
//! multi-select drafts; `batch.rs` approvals answered at once, and the reply that says what
//! became of each; `listing.rs` what `pending`, `history` and `grants` list for whom;
//! `digest.rs` the digest's schedule and median; `timers.rs` the reminder and escalation
//! timers' queue, which each adapter fires its own way; `term.rs` an adapter's term of work
//! (its gate, in a cluster the lead it follows, and what its outbox is at work on);
//! `command.rs` the `/askrelay` command (its listings, cancel, revoke) as a typed
//! [`command::Command`].

pub mod admit;
pub mod batch;
pub mod command;
pub mod confirm;
pub mod digest;
pub mod drafts;
pub mod edit;
pub mod form;
pub mod grant;
pub mod listing;
pub mod press;
pub mod term;
#[cfg(test)]
mod tests;
pub mod timers;
pub mod vote;

use crate::domain::quorum::Policy;
use crate::domain::request::{Actor, Request};

/// A person who used a control or a command, as the platform vouches for them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Person {
    /// The person as answers and audit rows name them (`actor.id` is the platform's user id).
    pub actor: Actor,
    /// The groups the platform places them in where they pressed (Discord: role ids), as
    /// opaque ids.
    pub groups: Vec<String>,
    /// A bot account, which never answers.
    pub bot: bool,
    /// An operator (a platform's operator lists): sees every route's requests, may cancel.
    pub operator: bool,
}

/// What only the platform knows, asked by the chat layer's rules. `place` is where a person
/// is (Discord: a channel id), as the platform writes it.
pub trait Platform: Send + Sync {
    /// The answerer name of the requests this platform shows (`Request::answerer`).
    fn name(&self) -> &'static str;
    /// Whether `person` may answer `req` at `now_ms`: the route's allowlists, widened by what
    /// the request has reached by then (its DMs, the escalation steps that began).
    fn may_answer(&self, req: &Request, person: &Person, now_ms: i64) -> bool;
    /// Whether a listing at `place` may show `req` to `person`: the request's route posts
    /// there and they may answer on it there.
    fn shows(&self, req: &Request, person: &Person, place: &str) -> bool;
    /// Whether `person` may answer at `place` on the route named `route` (any route: `None`).
    fn answers_at(&self, person: &Person, place: &str, route: Option<&str>) -> bool;
    /// The approval policy of the request's route.
    fn policy(&self, req: &Request) -> Policy;
    /// This daemon's host name, as the requester rule compares it.
    fn host(&self) -> String;
}
