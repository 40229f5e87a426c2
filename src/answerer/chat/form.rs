//! A form sent back, decided: a typed answer, a note with the draft, an edited command, the
//! confirm word, or a grant's pattern. The platform decodes which form it was and its inputs;
//! the [`FormStep`] says what it comes to.

use super::confirm::{self, WordFor};
use super::drafts::NotSubmitted;
use super::press::{self, Kept};
use super::{edit, grant};
use crate::domain::quorum::Policy;
use crate::domain::request::Request;
use crate::domain::{AnswererContext, Settlement};

/// Which form was sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sent {
    /// "Other…": a typed answer in place of the options.
    Other,
    /// "Answer…": a typed answer to a question without options.
    Answer,
    /// A note to go with the draft.
    Note,
    /// The edited command.
    Edit,
    /// The confirm word, for what it settles.
    Word(WordFor),
    /// A grant's pattern (and length, which the platform reads for [`grant::preview`]), with
    /// the confirm word beside it where the platform's form has room for it.
    GrantPattern,
}

/// What a sent form comes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FormStep {
    /// Settle with this, with the word typed to confirm a label that needs it.
    Settle {
        settlement: Settlement,
        typed: Option<String>,
    },
    /// Show the grant with this pattern for "Save grant" (checked by [`grant::preview`]), with
    /// the confirm word typed beside it (checked already), when the allow label needs it.
    Preview {
        pattern: String,
        typed: Option<String>,
    },
    /// The form's text was blank: nothing is recorded.
    Empty,
    /// The word typed is not this one: nothing is recorded.
    WordMismatch(String),
    /// The route gives no such grant (any more).
    NoSuchGrant,
    /// The draft cannot be submitted.
    NotSubmitted(NotSubmitted),
}

/// What `person`'s (their platform id) form `sent` on question `idx` of `req` comes to:
/// `text` its main input (`None`: blank), `word` the confirm word an edit or a grant's pattern
/// carries.
#[allow(clippy::too_many_arguments)] // the form's facts, each from a different owner
pub async fn decide(
    ctx: &AnswererContext,
    kept: &Kept,
    req: &Request,
    idx: usize,
    policy: &Policy,
    person: &str,
    sent: Sent,
    text: Option<String>,
    word: Option<String>,
) -> FormStep {
    let read_draft = || press::draft(ctx, kept, req, idx, person);
    decide_with(req, policy, sent, text, word, read_draft).await
}

/// [`decide`], with the person's draft read by `read_draft` (at most once, for a note and
/// for the word that confirms a draft).
pub(super) async fn decide_with<F, R>(
    req: &Request,
    policy: &Policy,
    sent: Sent,
    text: Option<String>,
    word: Option<String>,
    read_draft: F,
) -> FormStep
where
    F: FnOnce() -> R,
    R: std::future::Future<Output = Result<Settlement, NotSubmitted>>,
{
    let Some(text) = text.filter(|t| !t.trim().is_empty()) else {
        return FormStep::Empty;
    };
    let (settlement, typed) = match sent {
        Sent::Other | Sent::Answer => (Settlement::text(text), None),
        Sent::Note => match read_draft().await {
            Ok(s) => (
                Settlement {
                    custom: Some(text),
                    ..s
                },
                None,
            ),
            Err(e) => return FormStep::NotSubmitted(e),
        },
        // An edit of a label that needs the word carries it in its second input.
        Sent::Edit => (edit::edited(req, text), word),
        // A grant's allow is the first option of an approval asked alone: when its label needs
        // the word, the word typed beside the pattern must be it (the core checks it again
        // when the grant is saved).
        Sent::GrantPattern => {
            let needs_word = req
                .questions
                .first()
                .is_some_and(|q| confirm::allow_needs_word(policy, q));
            let typed = match (needs_word, word) {
                (false, _) => None,
                (true, Some(w)) if confirm::check(policy, req, &w).is_ok() => Some(w),
                (true, _) => return FormStep::WordMismatch(confirm::word(policy, req).to_owned()),
            };
            return FormStep::Preview {
                pattern: text,
                typed,
            };
        }
        // The word, trimmed, must be the one the question shows (case matters); the core
        // checks it again.
        Sent::Word(what) => {
            if let Err(word) = confirm::check(policy, req, &text) {
                return FormStep::WordMismatch(word.to_owned());
            }
            let settlement = match what {
                WordFor::Choice(i) => Settlement::choice(i),
                WordFor::Grant(g) => match grant::settlement(policy, g) {
                    Some(s) => s,
                    None => return FormStep::NoSuchGrant,
                },
                WordFor::Draft => match read_draft().await {
                    Ok(s) => s,
                    Err(e) => return FormStep::NotSubmitted(e),
                },
            };
            (settlement, Some(text))
        }
    };
    FormStep::Settle { settlement, typed }
}
