//! Typed confirmation (a route's `confirm_labels` and `confirm_word`): a label that lets
//! something destructive happen settles only when the person also types a word the question
//! shows (the target's name, or `approve`), against blind approval. The route says which labels
//! and which word; the hub checks the word on every surface (a Discord modal, a terminal's
//! `--confirm`), so no path settles such a label without it.
//!
//! The word is a literal (`approve`, the default) or `{scope.KEY}`: the request's scope label
//! KEY, when the request has it and it is a word (see [`is_word`]); else `approve`.

use super::answer::Settlement;
use super::model::{Question, Scope};
use std::fmt;
use std::str::FromStr;

/// The word when the route names none, or when the scope label it names is missing.
pub const DEFAULT_WORD: &str = "approve";

/// The most characters of a word: a name to read and type, not a sentence.
pub const MAX_WORD_CHARS: usize = 64;

/// Characters a word may have besides letters and digits: enough for host, project and
/// branch names, none that Discord markdown or a shell would take for syntax.
const WORD_PUNCTUATION: &str = "._-+/:@#";

/// Whether `s` can be asked for: 1 to [`MAX_WORD_CHARS`] letters, digits and
/// [`WORD_PUNCTUATION`]. No spaces (what is typed is trimmed), no control, format or hidden
/// characters (a word that looks like another could not be typed), no markup.
pub fn is_word(s: &str) -> bool {
    let n = s.chars().count();
    (1..=MAX_WORD_CHARS).contains(&n)
        && s.chars()
            .all(|c| c.is_alphanumeric() || WORD_PUNCTUATION.contains(c))
}

/// What a route asks to be typed (`confirm_word`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Word {
    /// This very word.
    Literal(String),
    /// The request's scope label with this key (`{scope.KEY}`).
    Scope(String),
}

impl Default for Word {
    fn default() -> Self {
        Word::Literal(DEFAULT_WORD.to_owned())
    }
}

impl FromStr for Word {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        if let Some(inner) = s.strip_prefix('{') {
            let key = inner
                .strip_suffix('}')
                .and_then(|k| k.strip_prefix("scope."))
                .ok_or_else(|| {
                    format!("{s:?} is not {{scope.KEY}} (a scope label's key in braces)")
                })?;
            if !is_word(key) {
                return Err(format!(
                    "{s:?}: the scope label's key must be 1 to {MAX_WORD_CHARS} letters, digits \
                     or {WORD_PUNCTUATION}"
                ));
            }
            return Ok(Word::Scope(key.to_owned()));
        }
        if !is_word(s) {
            return Err(format!(
                "{s:?} is not a word: give 1 to {MAX_WORD_CHARS} letters, digits or \
                 {WORD_PUNCTUATION} (no spaces), or {{scope.KEY}}"
            ));
        }
        Ok(Word::Literal(s.to_owned()))
    }
}

impl fmt::Display for Word {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Word::Literal(w) => f.write_str(w),
            Word::Scope(k) => write!(f, "{{scope.{k}}}"),
        }
    }
}

impl Word {
    /// The word a request with `scope` asks for. A scope value that is not a word (too long,
    /// spaces, hidden characters) falls back to [`DEFAULT_WORD`], as a missing one does: it
    /// could not be typed as shown.
    pub fn resolve<'a>(&'a self, scope: &'a Scope) -> &'a str {
        match self {
            Word::Literal(w) => w,
            Word::Scope(k) => scope
                .get(k)
                .map(String::as_str)
                .filter(|v| is_word(v))
                .unwrap_or(DEFAULT_WORD),
        }
    }
}

/// A route's typed confirmation: which labels need it, and the word.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Confirm {
    /// Option labels that settle (or vote) only with the word typed.
    pub labels: Vec<String>,
    pub word: Word,
}

/// Why an answer that needs the word was not taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unconfirmed {
    /// No word came with it.
    Missing { labels: Vec<String>, word: String },
    /// Another word came.
    Wrong { labels: Vec<String>, word: String },
}

impl fmt::Display for Unconfirmed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (Unconfirmed::Missing { labels, word } | Unconfirmed::Wrong { labels, word }) = self;
        let labels: Vec<String> = labels
            .iter()
            .map(|l| format!("{:?}", super::text::Escaped(l)))
            .collect();
        let labels = labels.join(", ");
        match self {
            Unconfirmed::Missing { .. } => write!(
                f,
                "{labels} needs typing {word} to confirm; nothing was recorded (give the word: \
                 askrelay answer --confirm {word})"
            ),
            Unconfirmed::Wrong { .. } => write!(
                f,
                "the word typed did not match; nothing was recorded (type {word} to confirm \
                 {labels})"
            ),
        }
    }
}

impl Confirm {
    /// Whether the route asks for typing at all.
    pub fn is_on(&self) -> bool {
        !self.labels.is_empty()
    }

    /// Whether option `label` needs the word.
    pub fn covers(&self, label: &str) -> bool {
        self.labels.iter().any(|l| l == label)
    }

    /// The labels of `q`'s options that need the word, in the question's order.
    pub fn labels_of<'q>(&self, q: &'q Question) -> Vec<&'q str> {
        q.options
            .iter()
            .map(|o| o.label.as_str())
            .filter(|l| self.covers(l))
            .collect()
    }

    /// The labels chosen in `s` that need the word (none: it settles as usual).
    pub fn needed<'q>(&self, q: &'q Question, s: &Settlement) -> Vec<&'q str> {
        s.selected
            .iter()
            .filter_map(|&i| q.options.get(i))
            .map(|o| o.label.as_str())
            .filter(|l| self.covers(l))
            .collect()
    }

    /// Checks `typed` for settlement `s` of `q` on a request with `scope`: what is typed,
    /// trimmed, must be the word exactly (case matters).
    pub fn check(
        &self,
        q: &Question,
        s: &Settlement,
        scope: &Scope,
        typed: Option<&str>,
    ) -> Result<(), Unconfirmed> {
        let needed = self.needed(q, s);
        if needed.is_empty() {
            return Ok(());
        }
        let word = self.word.resolve(scope);
        let labels = needed.iter().map(|l| (*l).to_owned()).collect();
        match typed {
            Some(t) if matches(word, t) => Ok(()),
            Some(_) => Err(Unconfirmed::Wrong {
                labels,
                word: word.to_owned(),
            }),
            None => Err(Unconfirmed::Missing {
                labels,
                word: word.to_owned(),
            }),
        }
    }
}

/// Whether `typed` is `word`: trimmed, then exactly (case-sensitive).
pub fn matches(word: &str, typed: &str) -> bool {
    typed.trim() == word
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::model::QuestionOption;

    fn scope(pairs: &[(&str, &str)]) -> Scope {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn q() -> Question {
        Question {
            id: "permission".into(),
            question: "Allow?".into(),
            header: None,
            options: ["Allow", "Deny", "Always allow"]
                .iter()
                .map(|l| QuestionOption {
                    label: (*l).into(),
                    description: None,
                })
                .collect(),
            multi_select: true,
        }
    }

    #[test]
    fn a_word_is_a_literal_or_a_scope_label() {
        assert_eq!("approve".parse(), Ok(Word::default()));
        assert_eq!("prod-eu.1".parse(), Ok(Word::Literal("prod-eu.1".into())));
        assert_eq!("{scope.project}".parse(), Ok(Word::Scope("project".into())));
        for bad in [
            "",
            "two words",
            "`x`",
            "a\u{200b}b",
            "{project}",
            "{scope.}",
            "{scope.a b}",
            "{scope.project",
            "scope.project}",
            &"x".repeat(65),
        ] {
            assert!(bad.parse::<Word>().is_err(), "{bad:?}");
        }
        for w in ["approve", "{scope.host}"] {
            assert_eq!(w.parse::<Word>().unwrap().to_string(), w);
        }
        assert!(is_word(&"é".repeat(64)));
    }

    #[test]
    fn the_scope_word_falls_back_to_approve() {
        let w = Word::Scope("project".into());
        assert_eq!(w.resolve(&scope(&[("project", "prod-eu")])), "prod-eu");
        assert_eq!(w.resolve(&scope(&[("host", "db1")])), DEFAULT_WORD);
        assert_eq!(w.resolve(&scope(&[("project", "a b")])), DEFAULT_WORD);
        assert_eq!(
            w.resolve(&scope(&[("project", "pr\u{202e}od")])),
            DEFAULT_WORD
        );
        assert_eq!(
            Word::Literal("yes".into()).resolve(&scope(&[("project", "p")])),
            "yes"
        );
    }

    #[test]
    fn only_the_confirm_labels_need_the_word_trimmed_and_exact() {
        let c = Confirm {
            labels: vec!["Allow".into(), "Always allow".into()],
            word: Word::Scope("project".into()),
        };
        let sc = scope(&[("project", "prod")]);
        let deny = Settlement::choice(1);
        assert_eq!(c.check(&q(), &deny, &sc, None), Ok(()));
        assert_eq!(c.labels_of(&q()), ["Allow", "Always allow"]);
        let both = Settlement {
            selected: vec![1, 2],
            ..Settlement::default()
        };
        assert_eq!(c.needed(&q(), &both), ["Always allow"]);
        let allow = Settlement::choice(0);
        assert_eq!(
            c.check(&q(), &allow, &sc, None),
            Err(Unconfirmed::Missing {
                labels: vec!["Allow".into()],
                word: "prod".into()
            })
        );
        for wrong in ["Prod", "approve", "", "pro d"] {
            assert!(
                matches!(
                    c.check(&q(), &allow, &sc, Some(wrong)),
                    Err(Unconfirmed::Wrong { .. })
                ),
                "{wrong:?}"
            );
        }
        assert_eq!(c.check(&q(), &allow, &sc, Some("  prod\n")), Ok(()));
        let msg = c.check(&q(), &allow, &sc, None).unwrap_err().to_string();
        assert!(msg.contains("\"Allow\" needs typing prod"), "{msg}");
        assert!(!Confirm::default().is_on());
    }
}
