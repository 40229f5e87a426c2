//! Drafts for multi-select: each choice in a multi-select saves the person's selection (in
//! the store) until "Submit". A draft whose save failed is remembered here for the term, and
//! "Submit" is refused until a save succeeds, so that it never submits an older or empty
//! selection in its place.
//!
//! What a term remembers, the next one does not know: a save that failed on the leader before
//! (cut off from the database, then replaced), or before a restart. So a term submits only
//! what it can vouch for: a draft saved since it began, or no draft at all on a question asked
//! since it began. Otherwise (a draft saved in an earlier term, or none on a question that
//! earlier terms showed) the person is asked to choose again rather than have an older or an
//! empty selection submitted for them.

use crate::domain::request::{AuditAction, AuditEntry, Draft, Request};
use crate::domain::{AnswererContext, Settlement};
use std::collections::HashSet;
use std::sync::Mutex;

/// The most unsaved drafts remembered at once.
const MAX_UNSAVED_DRAFTS: usize = 1000;

/// Drafts whose save failed: (request key, question, the person's platform id).
#[derive(Debug, Default)]
pub struct UnsavedDrafts(Mutex<HashSet<(i64, usize, String)>>);

impl UnsavedDrafts {
    /// Notes whether `person`'s last draft of question `idx` of request `key` was saved.
    pub fn mark(&self, key: i64, idx: usize, person: &str, saved: bool) {
        let mut unsaved = self.0.lock().unwrap();
        let id = (key, idx, person.to_owned());
        if saved {
            unsaved.remove(&id);
        } else if unsaved.len() < MAX_UNSAVED_DRAFTS {
            unsaved.insert(id);
        }
    }

    /// Whether `person`'s last draft of question `idx` of request `key` failed to save.
    pub fn unsaved(&self, key: i64, idx: usize, person: &str) -> bool {
        self.0
            .lock()
            .unwrap()
            .contains(&(key, idx, person.to_owned()))
    }
}

/// Why a selection was not kept as the person's draft.
#[derive(Debug)]
pub enum NotSaved {
    /// The draft could not be saved: the cause, to log. The person chooses again.
    Draft(anyhow::Error),
    /// The draft was saved but its audit row was not written: the cause, to class.
    Audit(String),
}

/// Keeps `person`'s selection `selected` of question `idx` of `req` as their draft, with its
/// audit row (`audit` names the source and the actor), and notes in `unsaved` whether both
/// were written, so that "Submit" never sends an older selection in its place.
pub async fn save(
    ctx: &AnswererContext,
    unsaved: &UnsavedDrafts,
    req: &Request,
    idx: usize,
    person: &str,
    selected: Vec<usize>,
    audit: AuditEntry,
) -> Result<(), NotSaved> {
    let saved = ctx.save_draft(req, idx, person, &selected).await;
    let audit = AuditEntry {
        request_key: Some(req.key),
        request_id: Some(req.request_id.clone()),
        question_idx: Some(idx),
        action: AuditAction::Draft,
        detail: Some(crate::domain::audit::settlement_detail(
            &req.questions[idx],
            &Settlement {
                selected,
                ..Settlement::default()
            },
        )),
        accepted: true,
        ..audit
    };
    let kept = match saved {
        Ok(()) => ctx
            .record(audit)
            .await
            .map_err(|e| NotSaved::Audit(format!("{e:#}"))),
        Err(e) => Err(NotSaved::Draft(e)),
    };
    unsaved.mark(req.key, idx, person, kept.is_ok());
    kept
}

/// Why a draft cannot be submitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotSubmitted {
    /// The person's last selection failed to save: they choose again.
    LastNotSaved,
    /// The person's selection (or its absence) is older than this term, whose leader cannot
    /// know whether a later one failed to save before it: they choose again.
    EarlierTerm,
    /// The saved draft cannot be read now: the cause, to class.
    Unreadable(String),
}

/// The settlement of `person`'s saved selection of question `idx`, to submit; never an older
/// or an empty selection in place of one that failed to save, in this term (`unsaved`) or
/// before it began (`term_began_ms`, on the cluster's clock; see the module comment).
pub async fn submitted(
    ctx: &AnswererContext,
    unsaved: &UnsavedDrafts,
    term_began_ms: i64,
    req: &Request,
    idx: usize,
    person: &str,
) -> Result<Settlement, NotSubmitted> {
    if unsaved.unsaved(req.key, idx, person) {
        return Err(NotSubmitted::LastNotSaved);
    }
    let draft = ctx.draft(req, idx, person).await.map_err(|e| {
        tracing::error!(error = %format!("{e:#}"), "cannot read a draft");
        NotSubmitted::Unreadable(format!("{e:#}"))
    })?;
    let selected = vouched(draft, req.created_at_ms, term_began_ms)?;
    Ok(Settlement {
        selected,
        ..Settlement::default()
    })
}

/// The selection a term that began at `term_began_ms` may submit for a question of a request
/// created at `created_at_ms`, from the person's saved `draft` (see the module comment).
pub fn vouched(
    draft: Option<Draft>,
    created_at_ms: i64,
    term_began_ms: i64,
) -> Result<Vec<usize>, NotSubmitted> {
    match draft {
        Some(d) if d.saved_at_ms >= term_began_ms => Ok(d.selected),
        None if created_at_ms >= term_began_ms => Ok(Vec::new()),
        _ => Err(NotSubmitted::EarlierTerm),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn saved(selected: &[usize], at: i64) -> Option<Draft> {
        Some(Draft {
            selected: selected.to_vec(),
            saved_at_ms: at,
        })
    }

    #[test]
    fn a_term_submits_only_what_it_can_vouch_for() {
        // A term that began at 1000, on a question asked at 500 (shown by an earlier term).
        assert_eq!(vouched(saved(&[0, 2], 1200), 500, 1000), Ok(vec![0, 2]));
        assert_eq!(
            vouched(saved(&[0], 900), 500, 1000),
            Err(NotSubmitted::EarlierTerm),
            "a draft saved before the term: a later one may have failed to save"
        );
        assert_eq!(
            vouched(None, 500, 1000),
            Err(NotSubmitted::EarlierTerm),
            "no draft on a question an earlier term showed: the first may have failed"
        );
        // A question asked in this term: every save of it was this term's.
        assert_eq!(vouched(None, 1500, 1000), Ok(Vec::new()));
        assert_eq!(vouched(saved(&[], 1600), 1500, 1000), Ok(Vec::new()));
        // A store with no terms (the default) trusts every draft.
        assert_eq!(vouched(saved(&[1], 5), 1, 0), Ok(vec![1]));
    }
}
