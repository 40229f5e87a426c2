//! A press on a question's control, decided: the platform decodes its control into a
//! [`Press`] and renders the [`Step`] it comes to (settle, ask for the confirm word, open a
//! form, save a draft, refuse). What a press needs from earlier presses (grant patterns
//! waiting for "Save grant", drafts whose save failed) is [`Kept`] for the term.

use super::confirm::{self, Pressed, WordFor};
use super::drafts::{self, NotSubmitted, UnsavedDrafts};
use super::edit;
use super::grant::{self, WaitingPatterns};
use crate::domain::quorum::Policy;
use crate::domain::request::{AuditAction, Request};
use crate::domain::{AnswererContext, Settlement};
use std::sync::Mutex;

/// A press, as the platform decoded its control.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Press {
    /// An option's button.
    Choose(usize),
    /// A one-option select: the options picked (`None`: values that are not options).
    SelectOne(Option<Vec<usize>>),
    /// A choice in a multi-select: the person's selection, kept as their draft.
    Draft(Option<Vec<usize>>),
    /// "Allow for …" with the route's grant `g`.
    Grant(usize),
    /// "Edit…": the command, to edit and approve.
    Edit,
    /// "Allow matching…": a grant the person writes.
    GrantPattern,
    /// "Save grant", on the preview of the route's grant `g`.
    SaveGrant(usize),
    /// "Submit": the person's draft.
    Submit,
    /// "Other…": a typed answer in place of the options.
    Other,
    /// "Answer…": a typed answer to a question without options.
    Answer,
    /// "Submit with note…": the draft, with a note.
    SubmitWithNote,
}

/// A form the platform opens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Form {
    Other,
    Answer,
    Note,
    /// The command to edit, starting from this one.
    Edit(String),
    /// A grant's pattern and length.
    GrantPattern,
}

/// Why a press changes nothing (past admission).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// A selection that is not the question's options.
    BadSelection,
    /// A grant the route does not give (any more).
    NoSuchGrant,
    /// The command cannot be edited here.
    NotEditable,
    /// No pattern of this person's is waiting for "Save grant" here.
    NoPatternWaiting,
    /// The draft holds labels that need the confirm word, which a note's form cannot carry.
    NoteNeedsWord { labels: Vec<String>, word: String },
}

impl Refused {
    /// The audit action of this refusal.
    pub fn action(&self) -> AuditAction {
        match self {
            Refused::BadSelection | Refused::NoSuchGrant | Refused::NotEditable => {
                AuditAction::Forged
            }
            Refused::NoPatternWaiting => AuditAction::Stale,
            Refused::NoteNeedsWord { .. } => AuditAction::Forbidden,
        }
    }
}

/// What a press comes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Settle with this (see [`super::vote::settle`]).
    Settle(Settlement),
    /// Settle a grant the person wrote, then tell them what was saved; with the confirm word
    /// typed beside its pattern, when the allow label needs it.
    SaveGrant {
        settlement: Settlement,
        typed: Option<String>,
    },
    /// Ask for the confirm word; the word's form settles.
    AskWord(WordFor),
    /// Open this form.
    Open(Form),
    /// Keep this selection as the person's draft.
    SaveDraft(Vec<usize>),
    /// Refuse, audited.
    Refuse(Refused),
    /// The draft cannot be submitted (told, not audited: nothing was pressed wrong).
    NotSubmitted(NotSubmitted),
}

/// What the platform shows of the question: the command its "Edit…" edits, and whether it
/// offers "Allow matching…".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Shown {
    pub editable: Option<String>,
    pub grantable: bool,
}

/// What presses leave for later presses, kept for the term only.
#[derive(Debug, Default)]
pub struct Kept {
    /// Grant patterns shown in a preview and not saved yet.
    pub patterns: Mutex<WaitingPatterns>,
    /// Multi-select drafts whose save failed.
    pub unsaved: UnsavedDrafts,
    /// When the term began (ms, the cluster's clock): drafts from before are not submitted
    /// (see [`drafts`]). 0 (the default) trusts every draft.
    pub term_began_ms: i64,
}

impl Kept {
    /// For a term that begins now, at `began_ms`.
    pub fn for_term(began_ms: i64) -> Kept {
        Kept {
            term_began_ms: began_ms,
            ..Kept::default()
        }
    }
}

/// The person's draft of question `idx`, to submit (see [`drafts::submitted`]).
pub async fn draft(
    ctx: &AnswererContext,
    kept: &Kept,
    req: &Request,
    idx: usize,
    person: &str,
) -> Result<Settlement, NotSubmitted> {
    drafts::submitted(ctx, &kept.unsaved, kept.term_began_ms, req, idx, person).await
}

/// What `person`'s (their platform id) admitted `press` on question `idx` of `req` comes to,
/// under the route's `policy`.
#[allow(clippy::too_many_arguments)] // the press's facts, each from a different owner
pub async fn decide(
    ctx: &AnswererContext,
    kept: &Kept,
    req: &Request,
    idx: usize,
    policy: &Policy,
    person: &str,
    press: Press,
    shown: Shown,
) -> Step {
    let read_draft = || draft(ctx, kept, req, idx, person);
    decide_with(kept, req, idx, policy, person, press, shown, read_draft).await
}

/// [`decide`], with the person's draft read by `read_draft` (at most once, and only for
/// "Submit" and "Submit with note…").
#[allow(clippy::too_many_arguments)] // as `decide`, and the draft's reader
pub(super) async fn decide_with<F, R>(
    kept: &Kept,
    req: &Request,
    idx: usize,
    policy: &Policy,
    person: &str,
    press: Press,
    shown: Shown,
    read_draft: F,
) -> Step
where
    F: FnOnce() -> R,
    R: std::future::Future<Output = Result<Settlement, NotSubmitted>>,
{
    let q = &req.questions[idx];
    let pressed = match press {
        Press::Submit => Pressed::Submit,
        Press::Grant(g) => Pressed::Grant(g),
        _ => Pressed::Choice,
    };
    let settlement = match press {
        Press::Choose(i) => Settlement::choice(i),
        Press::SelectOne(Some(p)) if p.len() == 1 => Settlement::choice(p[0]),
        Press::Draft(Some(p)) => return Step::SaveDraft(p),
        Press::SelectOne(_) | Press::Draft(None) => return Step::Refuse(Refused::BadSelection),
        Press::Grant(g) => match grant::settlement(policy, g) {
            Some(s) => s,
            None => return Step::Refuse(Refused::NoSuchGrant),
        },
        Press::Edit => {
            return match shown.editable {
                // On a quorum route the form starts from the edit others voted for last.
                Some(asked) => Step::Open(Form::Edit(edit::starting_command(req, idx, &asked))),
                None => Step::Refuse(Refused::NotEditable),
            };
        }
        Press::GrantPattern => {
            return match shown.grantable {
                true => Step::Open(Form::GrantPattern),
                false => Step::Refuse(Refused::NoSuchGrant),
            }
        }
        Press::SaveGrant(g) => {
            let waiting = kept.patterns.lock().unwrap().take(&req.token, person);
            let Some(w) = waiting.filter(|w| w.g == g) else {
                return Step::Refuse(Refused::NoPatternWaiting);
            };
            return match grant::saved(policy, g, w.pattern) {
                Some(settlement) => Step::SaveGrant {
                    settlement,
                    typed: w.typed,
                },
                None => Step::Refuse(Refused::NoSuchGrant),
            };
        }
        Press::Submit => match read_draft().await {
            Ok(s) => s,
            Err(e) => return Step::NotSubmitted(e),
        },
        Press::Other => return Step::Open(Form::Other),
        Press::Answer => return Step::Open(Form::Answer),
        Press::SubmitWithNote => {
            let draft = match read_draft().await {
                Ok(s) => s,
                Err(e) => return Step::NotSubmitted(e),
            };
            if let Some((labels, word)) = confirm::note_needs_word(policy, req, q, &draft) {
                return Step::Refuse(Refused::NoteNeedsWord {
                    labels: labels.into_iter().map(str::to_owned).collect(),
                    word: word.to_owned(),
                });
            }
            return Step::Open(Form::Note);
        }
    };
    match confirm::asks_word(policy, q, &settlement, pressed) {
        Some(w) => Step::AskWord(w),
        None => Step::Settle(settlement),
    }
}
