//! How a person's choice becomes the result (docs/contract.md, "Result JSON"): settlements, their rules, and the compact JSON.
//!
//! A settlement stores option *indices*, never display text, so the result always carries the
//! full original labels in option order, whatever the answering platform showed.

use super::error::AskError;
use super::model::{Question, QuestionKind, MAX_CUSTOM_CHARS};
use serde::{Deserialize, Serialize};

/// What one person chose for one question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Settlement {
    /// Indices into the question's options.
    pub selected: Vec<usize>,
    /// Free text, when the person typed some.
    pub custom: Option<String>,
    /// What an approver attached to an allow (a grant, an edited command). Never part of the
    /// result JSON: the agent's front door reads it (docs/approvals.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terms: Option<Terms>,
}

/// Terms an approver attached to an allow on a request with an approval subject
/// ([`super::model::Approval`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub struct Terms {
    /// Allow the requester's later requests that match too, for a while (a grant).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant: Option<GrantTerms>,
    /// The command as the approver edited it: what is approved instead of the one asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edited: Option<String>,
}

/// How long a grant lasts and what it matches.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct GrantTerms {
    pub secs: u64,
    /// A pattern the approver wrote (`*` and `?`, see [`super::glob::pattern_matches`]);
    /// without one the grant matches the exact command that was asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    /// The grant's id, once it is stored (set by the settlement that stores it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

impl Settlement {
    pub fn choice(index: usize) -> Self {
        Settlement {
            selected: vec![index],
            ..Settlement::default()
        }
    }

    pub fn text(custom: impl Into<String>) -> Self {
        Settlement {
            custom: Some(custom.into()),
            ..Settlement::default()
        }
    }

    /// Checks the settlement against the question's kind and normalises it: indices sorted and
    /// unique, and for a single-select question custom text replaces the choice (docs/contract.md, "Result JSON").
    pub fn normalise(mut self, q: &Question) -> Result<Settlement, AskError> {
        if let Some(c) = &self.custom {
            if c.trim().is_empty() {
                return Err(AskError::invalid("custom: must not be empty"));
            }
            let n = c.chars().count();
            if n > MAX_CUSTOM_CHARS {
                return Err(AskError::invalid(format!(
                    "custom: at most {MAX_CUSTOM_CHARS} characters, got {n}"
                )));
            }
        }
        if let Some(bad) = self.selected.iter().find(|&&i| i >= q.options.len()) {
            return Err(AskError::invalid(format!(
                "selected: option index {bad} is out of range; question \"{}\" has {} options",
                q.id,
                q.options.len()
            )));
        }
        self.selected.sort_unstable();
        self.selected.dedup();
        match q.kind() {
            QuestionKind::FreeText => {
                if self.custom.is_none() {
                    return Err(AskError::invalid(format!(
                        "question \"{}\" has no options and takes free text only (--custom)",
                        q.id
                    )));
                }
                self.selected.clear();
            }
            QuestionKind::Single => {
                if self.custom.is_some() {
                    self.selected.clear();
                } else if self.selected.len() != 1 {
                    return Err(AskError::invalid(format!(
                        "question \"{}\" is single-select: choose exactly one option or give custom text, got {}",
                        q.id,
                        self.selected.len()
                    )));
                }
            }
            QuestionKind::Multi => {}
        }
        if self.terms.is_some() && (self.custom.is_some() || self.selected.len() != 1) {
            return Err(AskError::invalid(
                "terms: a grant or an edit goes with one chosen option and no text",
            ));
        }
        Ok(self)
    }
}

/// One entry of the result (docs/contract.md, "Result JSON"); field order is the wire order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuestionAnswer {
    pub id: String,
    pub selected: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom: Option<String>,
}

impl QuestionAnswer {
    /// Builds the answer entry from a normalised settlement: labels in option order.
    pub fn build(q: &Question, s: &Settlement) -> Self {
        let mut idx = s.selected.clone();
        idx.sort_unstable();
        idx.dedup();
        QuestionAnswer {
            id: q.id.clone(),
            selected: idx
                .into_iter()
                .filter_map(|i| q.options.get(i).map(|o| o.label.clone()))
                .collect(),
            custom: s.custom.clone(),
        }
    }
}

/// The tool result (docs/contract.md, "Result JSON").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AskResult {
    pub answers: Vec<QuestionAnswer>,
}

impl AskResult {
    /// The result of a request whose questions were settled with `settlements`, in order.
    pub fn build(questions: &[Question], settlements: &[Settlement]) -> AskResult {
        AskResult {
            answers: questions
                .iter()
                .zip(settlements)
                .map(|(q, s)| QuestionAnswer::build(q, s))
                .collect(),
        }
    }

    /// The exact compact JSON the agent receives.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a result always serializes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::model::QuestionOption;

    fn q(multi: bool, n: usize) -> Question {
        Question {
            id: "q".into(),
            question: "?".into(),
            header: None,
            options: (0..n)
                .map(|i| QuestionOption {
                    label: format!("L{i}"),
                    description: None,
                })
                .collect(),
            multi_select: multi,
        }
    }

    #[test]
    fn single_select_custom_replaces_the_choice() {
        let q = q(false, 3);
        let s = Settlement {
            selected: vec![1],
            custom: Some("mine".into()),
            terms: None,
        }
        .normalise(&q)
        .unwrap();
        let r = AskResult {
            answers: vec![QuestionAnswer::build(&q, &s)],
        };
        assert_eq!(
            r.to_json(),
            r#"{"answers":[{"id":"q","selected":[],"custom":"mine"}]}"#
        );
    }

    #[test]
    fn multi_select_custom_adds_and_labels_follow_option_order() {
        let q = q(true, 4);
        let s = Settlement {
            selected: vec![3, 0, 3],
            custom: Some("also".into()),
            terms: None,
        }
        .normalise(&q)
        .unwrap();
        let r = AskResult {
            answers: vec![QuestionAnswer::build(&q, &s)],
        };
        assert_eq!(
            r.to_json(),
            r#"{"answers":[{"id":"q","selected":["L0","L3"],"custom":"also"}]}"#
        );
    }

    #[test]
    fn multi_select_may_be_empty() {
        let q = q(true, 2);
        let s = Settlement::default().normalise(&q).unwrap();
        assert_eq!(
            serde_json::to_string(&QuestionAnswer::build(&q, &s)).unwrap(),
            r#"{"id":"q","selected":[]}"#
        );
    }

    #[test]
    fn rules_per_kind() {
        assert!(Settlement::default().normalise(&q(false, 2)).is_err());
        assert!(Settlement {
            selected: vec![0, 1],
            ..Settlement::default()
        }
        .normalise(&q(false, 2))
        .is_err());
        assert!(Settlement::choice(0).normalise(&q(false, 0)).is_err());
        assert!(Settlement::choice(5).normalise(&q(true, 2)).is_err());
        assert!(Settlement::text("  ").normalise(&q(false, 0)).is_err());
        assert!(Settlement::text("ok").normalise(&q(false, 0)).is_ok());
    }

    #[test]
    fn custom_text_is_one_to_4000_characters() {
        let free = q(false, 0);
        let at = "語".repeat(MAX_CUSTOM_CHARS);
        assert_eq!(
            Settlement::text(at.clone()).normalise(&free).unwrap(),
            Settlement::text(at)
        );
        assert_eq!(
            Settlement::text("語".repeat(MAX_CUSTOM_CHARS + 1))
                .normalise(&free)
                .unwrap_err()
                .message,
            "custom: at most 4000 characters, got 4001"
        );
        assert_eq!(
            Settlement::text(" \n")
                .normalise(&free)
                .unwrap_err()
                .message,
            "custom: must not be empty"
        );
    }
}
