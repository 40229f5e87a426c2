//! The confirm word: a choice of a label in the route's `confirm_labels` settles only with the
//! word typed. A press of such a label asks for the word instead of settling; the word typed
//! is checked here and again by the core.

use crate::domain::quorum::Policy;
use crate::domain::request::Request;
use crate::domain::{Question, Settlement};

/// What was pressed, as far as the confirm word cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pressed {
    /// "Submit": the person's draft.
    Submit,
    /// "Allow for …" with the route's grant `g`.
    Grant(usize),
    /// An option, or a one-option selection.
    Choice,
}

/// What the form that asks for the word settles once the word is typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WordFor {
    /// The option at this index.
    Choice(usize),
    /// The person's draft, read again when the word comes.
    Draft,
    /// The route's grant `g`.
    Grant(usize),
}

/// The form to ask for the word with, when `settlement` (what was `pressed`) holds a label
/// of the route's `confirm_labels`; `None`: settle at once.
pub fn asks_word(
    policy: &Policy,
    q: &Question,
    settlement: &Settlement,
    pressed: Pressed,
) -> Option<WordFor> {
    if policy.confirm.needed(q, settlement).is_empty() {
        return None;
    }
    Some(match pressed {
        Pressed::Submit => WordFor::Draft,
        Pressed::Grant(g) => WordFor::Grant(g),
        Pressed::Choice => WordFor::Choice(*settlement.selected.first()?),
    })
}

/// Whether approving `q` (its first option, the front door's allow) needs the word: what an
/// edit or a grant's pattern must carry beside it.
pub fn allow_needs_word(policy: &Policy, q: &Question) -> bool {
    q.options
        .first()
        .is_some_and(|o| policy.confirm.covers(&o.label))
}

/// The word that confirms a label of `req`'s route (a literal, or a scope value of `req`).
pub fn word<'a>(policy: &'a Policy, req: &'a Request) -> &'a str {
    policy.confirm.word.resolve(&req.scope)
}

/// Whether `typed`, trimmed, is the word (case matters); `Err` with the word when not.
pub fn check<'a>(policy: &'a Policy, req: &'a Request, typed: &str) -> Result<(), &'a str> {
    let word = word(policy, req);
    if crate::domain::confirm::matches(word, typed) {
        Ok(())
    } else {
        Err(word)
    }
}

/// "Submit with note…" with labels in the `draft` that need the word: a note's form has no
/// room for it, so the press is refused with those labels and the word. `None`: no label
/// needs it.
pub fn note_needs_word<'q>(
    policy: &'q Policy,
    req: &'q Request,
    q: &'q Question,
    draft: &Settlement,
) -> Option<(Vec<&'q str>, &'q str)> {
    let needed = policy.confirm.needed(q, draft);
    if needed.is_empty() {
        return None;
    }
    Some((needed, word(policy, req)))
}
