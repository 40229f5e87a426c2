//! A vote on a quorum route's question, as stored with its request, and how a question's
//! votes stand. The rules that count them (who is one person, what decides alone) are the
//! route's policy: [`super::quorum`].

use super::answer::{Settlement, Terms};
use serde::{Deserialize, Serialize};

/// One person's vote on a question of a quorum route. `person` counts them once, whatever
/// surface or copy of the message they voted through.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Vote {
    pub person: String,
    pub via: String,
    pub id: String,
    pub name: String,
    pub selected: Vec<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom: Option<String>,
    pub at_ms: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terms: Option<Terms>,
}

impl Vote {
    /// How the voter is named in an audit row and a grant: `alice (discord 111)`.
    pub fn describe(&self) -> String {
        format!("{} ({} {})", self.name, self.via, self.id)
    }

    pub fn settlement(&self) -> Settlement {
        Settlement {
            selected: self.selected.clone(),
            custom: self.custom.clone(),
            terms: self.terms.clone(),
        }
    }
}

/// How a question's votes stand, for messages and replies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tally {
    /// Votes for the answer that has the most (the one this vote chose, when it is asked
    /// for).
    pub count: usize,
    pub needed: usize,
}
