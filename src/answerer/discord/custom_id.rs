//! The `custom_id` codec (SPEC §3): what a button, select menu or modal carries so that a click
//! can be routed back to its question, even after a restart.
//!
//! Format: `ar:{request_key}:{question}:{code}`, plus `:{option}` for an option button. Numbers are
//! plain decimals in canonical form (no sign on unsigned values, no `+`, no leading zeros), so
//! every accepted string is exactly what [`CustomId::encode`] produces. Label text never goes in:
//! the longest possible id is 68 characters, well under Discord's 100.

/// The prefix of every custom_id this daemon produces.
const PREFIX: &str = "ar";

/// Discord's limit on a component's or modal's `custom_id`.
pub const MAX_CUSTOM_ID_CHARS: usize = 100;

/// The custom_id of the single text input inside our modals.
pub const TEXT_INPUT_ID: &str = "text";

/// What a component (or a modal submission) does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// The button for option `i` of a single-select question with 1–5 options.
    Choose(usize),
    /// The single-select menu (6–25 options); the chosen index comes in the interaction's values.
    SelectOne,
    /// The multi-select menu; the values are option indices, recorded as the clicker's draft.
    Draft,
    /// "Submit": settles a multi-select question with the clicker's draft.
    Submit,
    /// "Submit with note…": opens the note modal.
    SubmitWithNote,
    /// "Other…": opens the modal for custom text.
    Other,
    /// "Answer…" on a free-text question: opens the modal.
    Answer,
    /// Submission of the modal opened by [`Action::Other`].
    ModalOther,
    /// Submission of the modal opened by [`Action::Answer`].
    ModalAnswer,
    /// Submission of the modal opened by [`Action::SubmitWithNote`].
    ModalNote,
}

impl Action {
    fn code(self) -> &'static str {
        match self {
            Action::Choose(_) => "b",
            Action::SelectOne => "s",
            Action::Draft => "d",
            Action::Submit => "S",
            Action::SubmitWithNote => "N",
            Action::Other => "O",
            Action::Answer => "A",
            Action::ModalOther => "mO",
            Action::ModalAnswer => "mA",
            Action::ModalNote => "mN",
        }
    }

    /// Whether this is the custom_id of a modal (a modal submission) rather than a component.
    pub fn is_modal(self) -> bool {
        matches!(
            self,
            Action::ModalOther | Action::ModalAnswer | Action::ModalNote
        )
    }
}

/// A decoded custom_id: which request (by its store key), which question (0-based), what action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CustomId {
    pub request_key: i64,
    pub question: usize,
    pub action: Action,
}

impl CustomId {
    pub fn new(request_key: i64, question: usize, action: Action) -> Self {
        CustomId {
            request_key,
            question,
            action,
        }
    }

    /// The custom_id string; always 1 to 100 characters.
    pub fn encode(&self) -> String {
        let mut s = format!(
            "{PREFIX}:{}:{}:{}",
            self.request_key,
            self.question,
            self.action.code()
        );
        if let Action::Choose(i) = self.action {
            s.push(':');
            s.push_str(&i.to_string());
        }
        s
    }

    /// Decodes a custom_id. Returns `None` for anything [`CustomId::encode`] would not produce.
    /// Never panics.
    pub fn parse(s: &str) -> Option<CustomId> {
        if s.len() > MAX_CUSTOM_ID_CHARS {
            return None;
        }
        let mut parts = s.split(':');
        if parts.next()? != PREFIX {
            return None;
        }
        let request_key: i64 = parse_canonical(parts.next()?)?;
        let question: usize = parse_canonical(parts.next()?)?;
        let action = match parts.next()? {
            "b" => Action::Choose(parse_canonical(parts.next()?)?),
            "s" => Action::SelectOne,
            "d" => Action::Draft,
            "S" => Action::Submit,
            "N" => Action::SubmitWithNote,
            "O" => Action::Other,
            "A" => Action::Answer,
            "mO" => Action::ModalOther,
            "mA" => Action::ModalAnswer,
            "mN" => Action::ModalNote,
            _ => return None,
        };
        if parts.next().is_some() {
            return None;
        }
        Some(CustomId {
            request_key,
            question,
            action,
        })
    }
}

/// Free function form of [`CustomId::parse`].
pub fn parse(s: &str) -> Option<CustomId> {
    CustomId::parse(s)
}

/// The `value` of select menu option `i`.
pub fn option_value(i: usize) -> String {
    i.to_string()
}

/// The option index a select menu value stands for, if it is one of `option_count` options.
pub fn parse_option_value(s: &str, option_count: usize) -> Option<usize> {
    parse_canonical::<usize>(s).filter(|&i| i < option_count)
}

/// Parses a decimal number only in the exact form `to_string` gives it.
fn parse_canonical<T>(s: &str) -> Option<T>
where
    T: std::str::FromStr + ToString,
{
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    let n: T = s.parse().ok()?;
    (n.to_string() == s).then_some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_actions(opt: usize) -> Vec<Action> {
        vec![
            Action::Choose(opt),
            Action::SelectOne,
            Action::Draft,
            Action::Submit,
            Action::SubmitWithNote,
            Action::Other,
            Action::Answer,
            Action::ModalOther,
            Action::ModalAnswer,
            Action::ModalNote,
        ]
    }

    #[test]
    fn round_trips_every_action() {
        for key in [0, 1, 42, -7, i64::MAX, i64::MIN] {
            for q in [0, 3, usize::MAX] {
                for opt in [0, 4, 24, usize::MAX] {
                    for action in all_actions(opt) {
                        let id = CustomId::new(key, q, action);
                        let s = id.encode();
                        assert!(!s.is_empty() && s.chars().count() <= 100, "{s}");
                        assert!(s.starts_with("ar:"));
                        assert_eq!(CustomId::parse(&s), Some(id), "{s}");
                        assert_eq!(parse(&s), Some(id));
                    }
                }
            }
        }
    }

    #[test]
    fn longest_id_fits() {
        let s = CustomId::new(i64::MIN, usize::MAX, Action::Choose(usize::MAX)).encode();
        assert!(s.len() <= 100, "{} chars: {s}", s.len());
        let s = CustomId::new(i64::MAX, usize::MAX, Action::ModalNote).encode();
        assert!(s.len() <= 100);
    }

    #[test]
    fn known_encodings() {
        assert_eq!(
            CustomId::new(12, 0, Action::Choose(3)).encode(),
            "ar:12:0:b:3"
        );
        assert_eq!(CustomId::new(12, 1, Action::Other).encode(), "ar:12:1:O");
        assert_eq!(
            CustomId::new(12, 1, Action::ModalNote).encode(),
            "ar:12:1:mN"
        );
        assert!(Action::ModalAnswer.is_modal());
        assert!(!Action::Answer.is_modal());
    }

    #[test]
    fn rejects_garbage() {
        let long = "9".repeat(10_000);
        let huge_key = format!("ar:{long}:0:S");
        let bad: Vec<&str> = vec![
            "",
            ":",
            ":::",
            "ar",
            "ar:",
            "ar:1",
            "ar:1:2",
            "ar:1:2:",
            "ar:1:2:x",
            "ar:1:2:b",
            "ar:1:2:b:",
            "ar:1:2:b:x",
            "ar:1:2:b:-1",
            "ar:1:2:S:0",
            "ar:1:2:S:",
            "ar:1:2:S::",
            "ar:1:2:b:1:2",
            "ar:1:-2:S",
            "ar:+1:2:S",
            "ar:1:+2:S",
            "ar:01:2:S",
            "ar:1:02:S",
            "ar:1:2:b:03",
            "ar:-0:2:S",
            "ar: 1:2:S",
            "ar:1 :2:S",
            "ar:1:2:s ",
            "AR:1:2:S",
            "xr:1:2:S",
            "ar:1:2:mX",
            "ar:1:2:m",
            "ar:9223372036854775808:0:S",
            "ar:-9223372036854775809:0:S",
            "ar:1:99999999999999999999999:S",
            "ar:1:0:b:99999999999999999999999",
            "ar:١:٢:S",
            "ar:1:2:Ѕ",
            "ar:💥:2:S",
            "ar:1:2:S\n",
            "\u{0}",
            &huge_key,
            &long,
        ];
        for s in bad {
            assert_eq!(CustomId::parse(s), None, "{s:?}");
        }
        // Some well-formed ones still work after all that.
        assert!(CustomId::parse("ar:-3:0:S").is_some());
        assert!(CustomId::parse("ar:0:0:b:0").is_some());
    }

    #[test]
    fn option_values() {
        for i in 0..25 {
            assert_eq!(parse_option_value(&option_value(i), 25), Some(i));
        }
        assert_eq!(parse_option_value("25", 25), None);
        assert_eq!(parse_option_value("0", 0), None);
        for s in [
            "",
            "-1",
            "+1",
            "01",
            "1.0",
            " 1",
            "x",
            "１",
            "99999999999999999999999",
        ] {
            assert_eq!(parse_option_value(s, 25), None, "{s:?}");
        }
        assert_eq!(parse_option_value("7", usize::MAX), Some(7));
    }
}
