//! Drafts for multi-select: each choice in a multi-select saves the person's selection (in
//! the store) until "Submit". A draft whose save failed is remembered here for the term, and
//! "Submit" is refused until a save succeeds, so that it never submits an older or empty
//! selection in its place.

use crate::domain::request::Request;
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

/// Why a draft cannot be submitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotSubmitted {
    /// The person's last selection failed to save: they choose again.
    LastNotSaved,
    /// The saved draft cannot be read now: the cause, to class.
    Unreadable(String),
}

/// The settlement of `person`'s saved selection of question `idx`, to submit; never an older
/// or an empty selection in place of one that failed to save.
pub async fn submitted(
    ctx: &AnswererContext,
    unsaved: &UnsavedDrafts,
    req: &Request,
    idx: usize,
    person: &str,
) -> Result<Settlement, NotSubmitted> {
    if unsaved.unsaved(req.key, idx, person) {
        return Err(NotSubmitted::LastNotSaved);
    }
    let selected = ctx.draft(req, idx, person).await.map_err(|e| {
        tracing::error!(error = %format!("{e:#}"), "cannot read a draft");
        NotSubmitted::Unreadable(format!("{e:#}"))
    })?;
    Ok(Settlement {
        selected,
        ..Settlement::default()
    })
}
