//! The `custom_id` and nonce codecs (docs/contract.md, "Discord rendering"): what a button, select menu or modal carries so
//! that a click can be routed back to its question, even after a restart, and to nothing else.
//!
//! Format: `ar:{token}:{question}:{code}`, plus `:{option}` for an option button. The token is
//! the request's unguessable per-request token (20 hex digits, 80 random bits): a control can
//! only ever name the request it was made for, even after the database is reset and request
//! keys start again, and a forged one cannot guess a live request. Numbers are plain decimals
//! in canonical form (no sign, no `+`, no leading zeros), so every accepted string is exactly
//! what [`CustomId::encode`] produces. Label text never goes in: the longest id is 75
//! characters, well under Discord's 100.

use crate::domain::request::Slot;

/// The prefix of every custom_id this daemon produces.
const PREFIX: &str = "ar";

/// Discord's limit on a component's or modal's `custom_id`.
pub const MAX_CUSTOM_ID_CHARS: usize = 100;

/// Discord's limit on a message nonce.
pub const MAX_NONCE_CHARS: usize = 25;

/// The custom_id of the single text input inside our modals.
pub const TEXT_INPUT_ID: &str = "text";

pub use crate::domain::request::{is_token, TOKEN_CHARS};

/// The nonce of the create-message call for question `question` of the request with `token`:
/// the token and the question in two hex digits, so that it never repeats across requests or
/// database resets, and a repeated create after a crash is de-duplicated by Discord.
pub fn nonce(token: &str, question: usize) -> String {
    let n = format!("{token}{:02x}", question.min(0xff));
    debug_assert!(n.len() <= MAX_NONCE_CHARS);
    n
}

/// The nonce of a DM copy of a question: the start of the request's token and a hash of the
/// question and the row's slot. The same row gets the same nonce however often it is planned
/// (the delivery plans a request's rows again beside the stored ones, and posts with its own),
/// so that a DM posted again after a lost record is de-duplicated by Discord; it is not a
/// second DM.
pub fn dm_nonce(token: &str, question: usize, slot: &Slot) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(format!("{token} {question} {slot}"));
    let hash: String = digest[..7].iter().map(|b| format!("{b:02x}")).collect();
    let n = format!("{}{hash}", &token[..token.len().min(11)]);
    debug_assert!(n.len() <= MAX_NONCE_CHARS);
    n
}

/// The nonce of a copy or a note of a question (an escalation step, a reminder): the
/// start of the request's token and random digits. It is stored with its outbox row when the
/// row is planned, so every retry sends the same one; it is random so that two rows planned at
/// once can never share it.
pub fn extra_nonce(token: &str) -> String {
    let mut bytes = [0u8; 7];
    if getrandom::fill(&mut bytes).is_err() {
        bytes.copy_from_slice(&uuid::Uuid::new_v4().as_bytes()[..7]);
    }
    let random: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let n = format!("{}{random}", &token[..token.len().min(11)]);
    debug_assert!(n.len() <= MAX_NONCE_CHARS);
    n
}

/// What a component does.
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
    /// "Submit with note…": opens the note form.
    SubmitWithNote,
    /// "Other…": opens the form for custom text.
    Other,
    /// "Answer…" on a free-text question: opens the form.
    Answer,
    /// "Allow for 30 min": allows with a grant of the route's `grant_durations[i]`.
    Grant(usize),
    /// "Edit…": opens the form to edit the command, then approve it.
    Edit,
    /// "Allow matching…": opens the form for a grant with a pattern.
    GrantPattern,
    /// "Save grant" under the preview of the clicker's pattern, for the route's
    /// `grant_durations[i]`; it is clicked on that preview (an ephemeral message), not on the
    /// question's.
    SaveGrant(usize),
}

/// Which modal form was submitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Form {
    /// Opened by [`Action::Other`]: custom text instead of the options.
    Other,
    /// Opened by [`Action::Answer`]: the answer to a free-text question.
    Answer,
    /// Opened by [`Action::SubmitWithNote`]: the clicker's draft plus a note.
    Note,
    /// Opened by [`Action::Edit`]: the command as the approver edited it.
    Edit,
    /// Opened by a click on option `i`, a label of the route's `confirm_labels`: the word that
    /// confirms it.
    Confirm(usize),
    /// Opened by [`Action::Submit`] when the draft has a label that needs the word.
    ConfirmDraft,
    /// Opened by [`Action::Grant`] (grant `i`) when the allow label needs the word.
    ConfirmGrant(usize),
    /// Opened by [`Action::GrantPattern`]: the pattern and the length of a grant.
    GrantPattern,
    /// Slack's preview of a grant's pattern, pushed over its form when that form is sent:
    /// submitting it is "Save grant" with the route's `grant_durations[i]` (Discord saves
    /// from a button, [`Action::SaveGrant`], and opens no such form).
    SaveGrant(usize),
}

/// What a custom_id can name: a component's action or a modal's form. Each has codes of its
/// own, so a component id never parses as a modal's and the other way round.
pub trait Kind: Sized + Copy {
    /// The code, and the number it carries (`b` and `:3`): an option, or a grant's length.
    fn code(self) -> (&'static str, Option<usize>);
    /// The option it names, if any (a grant's number is not an option).
    fn option(self) -> Option<usize>;
    /// Whether it is used on a message of its own (an ephemeral preview) in the question's
    /// channel rather than on the question's message.
    fn off_message(self) -> bool {
        false
    }
    /// The value for a code, reading an option from `option` when the code has one.
    fn from_code(code: &str, option: Option<&str>) -> Option<Self>;
}

impl Kind for Action {
    fn off_message(self) -> bool {
        matches!(self, Action::SaveGrant(_))
    }

    fn option(self) -> Option<usize> {
        match self {
            Action::Choose(i) => Some(i),
            _ => None,
        }
    }

    fn code(self) -> (&'static str, Option<usize>) {
        match self {
            Action::Choose(i) => ("b", Some(i)),
            Action::SelectOne => ("s", None),
            Action::Draft => ("d", None),
            Action::Submit => ("S", None),
            Action::SubmitWithNote => ("N", None),
            Action::Other => ("O", None),
            Action::Answer => ("A", None),
            Action::Grant(i) => ("g", Some(i)),
            Action::Edit => ("E", None),
            Action::GrantPattern => ("P", None),
            Action::SaveGrant(i) => ("V", Some(i)),
        }
    }

    fn from_code(code: &str, option: Option<&str>) -> Option<Self> {
        let plain = |a| option.is_none().then_some(a);
        match code {
            "b" => Some(Action::Choose(parse_canonical(option?)?)),
            "s" => plain(Action::SelectOne),
            "d" => plain(Action::Draft),
            "S" => plain(Action::Submit),
            "N" => plain(Action::SubmitWithNote),
            "O" => plain(Action::Other),
            "A" => plain(Action::Answer),
            "g" => Some(Action::Grant(parse_canonical(option?)?)),
            "E" => plain(Action::Edit),
            "P" => plain(Action::GrantPattern),
            "V" => Some(Action::SaveGrant(parse_canonical(option?)?)),
            _ => None,
        }
    }
}

impl Kind for Form {
    fn option(self) -> Option<usize> {
        match self {
            Form::Confirm(i) => Some(i),
            _ => None,
        }
    }

    fn code(self) -> (&'static str, Option<usize>) {
        match self {
            Form::Other => ("mO", None),
            Form::Answer => ("mA", None),
            Form::Note => ("mN", None),
            Form::Edit => ("mE", None),
            Form::Confirm(i) => ("mC", Some(i)),
            Form::ConfirmDraft => ("mD", None),
            Form::ConfirmGrant(i) => ("mG", Some(i)),
            Form::GrantPattern => ("mP", None),
            Form::SaveGrant(i) => ("mV", Some(i)),
        }
    }

    fn from_code(code: &str, option: Option<&str>) -> Option<Self> {
        if code == "mC" {
            return Some(Form::Confirm(parse_canonical(option?)?));
        }
        if code == "mG" {
            return Some(Form::ConfirmGrant(parse_canonical(option?)?));
        }
        if code == "mV" {
            return Some(Form::SaveGrant(parse_canonical(option?)?));
        }
        if option.is_some() {
            return None;
        }
        match code {
            "mO" => Some(Form::Other),
            "mA" => Some(Form::Answer),
            "mN" => Some(Form::Note),
            "mE" => Some(Form::Edit),
            "mD" => Some(Form::ConfirmDraft),
            "mP" => Some(Form::GrantPattern),
            _ => None,
        }
    }
}

/// A decoded custom_id: which request (by its token), which question (0-based), and what it
/// does: a component [`Action`] (the default) or a modal [`Form`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CustomId<K = Action> {
    pub token: String,
    pub question: usize,
    pub action: K,
}

/// The custom_id of a modal.
pub type ModalId = CustomId<Form>;

impl<K: Kind> CustomId<K> {
    pub fn new(token: &str, question: usize, action: K) -> Self {
        CustomId {
            token: token.to_owned(),
            question,
            action,
        }
    }

    /// The custom_id string; always 1 to 100 characters.
    pub fn encode(&self) -> String {
        let (code, option) = self.action.code();
        let mut s = format!("{PREFIX}:{}:{}:{code}", self.token, self.question);
        if let Some(i) = option {
            s.push(':');
            s.push_str(&i.to_string());
        }
        s
    }

    /// Decodes a custom_id. Returns `None` for anything [`CustomId::encode`] would not produce
    /// for this kind. Never panics. No length check is needed: every part is checked exactly
    /// (a 20-digit token, canonical numbers, a known code), which bounds a valid id well under
    /// Discord's 100 characters.
    pub fn parse(s: &str) -> Option<Self> {
        let mut parts = s.split(':');
        if parts.next()? != PREFIX {
            return None;
        }
        let token = parts.next()?;
        if !is_token(token) {
            return None;
        }
        let question: usize = parse_canonical(parts.next()?)?;
        let code = parts.next()?;
        let option = parts.next();
        if parts.next().is_some() {
            return None;
        }
        Some(CustomId {
            token: token.to_owned(),
            question,
            action: K::from_code(code, option)?,
        })
    }
}

/// [`CustomId::parse`] for a component.
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

/// Parses a decimal number only in the exact form `to_string` gives it (so no sign, no leading
/// zero, nothing empty, nothing too large).
fn parse_canonical<T>(s: &str) -> Option<T>
where
    T: std::str::FromStr + ToString,
{
    let n: T = s.parse().ok()?;
    (n.to_string() == s).then_some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "0123456789abcdef0123";

    fn all_actions(opt: usize) -> Vec<Action> {
        vec![
            Action::Choose(opt),
            Action::SelectOne,
            Action::Draft,
            Action::Submit,
            Action::SubmitWithNote,
            Action::Other,
            Action::Answer,
        ]
    }

    const FORMS: [Form; 3] = [Form::Other, Form::Answer, Form::Note];

    #[test]
    fn a_dm_copy_has_one_nonce_however_often_it_is_planned() {
        let slots = [
            Slot::Dm(7),
            Slot::Dm(8),
            Slot::StepDm(1, 7),
            Slot::StepDm(2, 7),
        ];
        let mut seen = std::collections::HashSet::new();
        for q in 0..3 {
            for slot in &slots {
                let n = dm_nonce(TOKEN, q, slot);
                assert_eq!(n, dm_nonce(TOKEN, q, slot), "planned twice, one nonce");
                assert!(n.len() <= MAX_NONCE_CHARS, "{n}");
                assert!(n.starts_with(&TOKEN[..11]), "{n}");
                assert!(seen.insert(n), "every row its own nonce");
            }
        }
        assert_ne!(
            dm_nonce(TOKEN, 0, &Slot::Dm(7)),
            dm_nonce("fedcba98765432100123", 0, &Slot::Dm(7))
        );
    }

    #[test]
    fn round_trips_every_action() {
        for token in [TOKEN, "ffffffffffffffffffff", "00000000000000000000"] {
            for q in [0, 3, usize::MAX] {
                for opt in [0, 4, 24, usize::MAX] {
                    for action in all_actions(opt) {
                        let id = CustomId::new(token, q, action);
                        let s = id.encode();
                        assert!(!s.is_empty() && s.chars().count() <= 100, "{s}");
                        assert!(s.starts_with("ar:"));
                        assert_eq!(CustomId::parse(&s), Some(id.clone()), "{s}");
                        assert_eq!(parse(&s), Some(id));
                        assert_eq!(ModalId::parse(&s), None, "a component is not a form: {s}");
                    }
                }
                for form in FORMS {
                    let id = ModalId::new(token, q, form);
                    let s = id.encode();
                    assert_eq!(ModalId::parse(&s), Some(id), "{s}");
                    assert_eq!(parse(&s), None, "a form is not a component: {s}");
                }
            }
        }
    }

    #[test]
    fn longest_id_fits() {
        let s = CustomId::new(TOKEN, usize::MAX, Action::Choose(usize::MAX)).encode();
        assert!(s.len() <= 100, "{} chars: {s}", s.len());
        assert!(ModalId::new(TOKEN, usize::MAX, Form::Note).encode().len() <= 100);
        assert_eq!(s.len(), 3 + 21 + 21 + 2 + 20, "{s}");
    }

    #[test]
    fn known_encodings() {
        assert_eq!(
            CustomId::new(TOKEN, 0, Action::Choose(3)).encode(),
            "ar:0123456789abcdef0123:0:b:3"
        );
        assert_eq!(
            CustomId::new(TOKEN, 1, Action::Other).encode(),
            "ar:0123456789abcdef0123:1:O"
        );
        assert_eq!(
            ModalId::new(TOKEN, 1, Form::Note).encode(),
            "ar:0123456789abcdef0123:1:mN"
        );
    }

    #[test]
    fn nonces_fit_and_differ_per_question() {
        assert_eq!(nonce(TOKEN, 0), "0123456789abcdef012300");
        assert_eq!(nonce(TOKEN, 10), "0123456789abcdef01230a");
        assert!(nonce(TOKEN, usize::MAX).len() <= MAX_NONCE_CHARS);
        let (a, b) = (extra_nonce(TOKEN), extra_nonce(TOKEN));
        assert_eq!(a.len(), MAX_NONCE_CHARS);
        assert_ne!(a, b);
        assert!(a.starts_with(&TOKEN[..11]));
        assert_ne!(nonce(TOKEN, 1), nonce("0123456789abcdef0124", 1));
    }

    #[test]
    fn rejects_garbage() {
        let long = "9".repeat(10_000);
        let huge = format!("ar:{TOKEN}:{long}:S");
        let t = TOKEN;
        let bad: Vec<String> = vec![
            "".into(),
            ":".into(),
            ":::".into(),
            "ar".into(),
            "ar:".into(),
            format!("ar:{t}"),
            format!("ar:{t}:2"),
            format!("ar:{t}:2:"),
            format!("ar:{t}:2:x"),
            format!("ar:{t}:2:b"),
            format!("ar:{t}:2:b:"),
            format!("ar:{t}:2:b:x"),
            format!("ar:{t}:2:b:-1"),
            format!("ar:{t}:2:S:0"),
            format!("ar:{t}:2:b:1:2"),
            format!("ar:{t}:-2:S"),
            format!("ar:{t}:+2:S"),
            format!("ar:{t}:02:S"),
            format!("ar:{t}:2:b:03"),
            format!("ar: {t}:2:S"),
            format!("ar:{t} :2:S"),
            format!("ar:{t}:2:s "),
            format!("AR:{t}:2:S"),
            format!("xr:{t}:2:S"),
            format!("ar:{t}:2:mX"),
            format!("ar:{t}:2:O:1"),
            format!("ar:{t}:2:S\n"),
            // Tokens: the wrong length, upper case, not hex, the old integer keys.
            "ar:12:0:S".into(),
            "ar:0123456789ABCDEF0123:0:S".into(),
            "ar:0123456789abcdef012:0:S".into(),
            "ar:0123456789abcdef01234:0:S".into(),
            "ar:0123456789abcdef012g:0:S".into(),
            format!("ar:{t}:99999999999999999999999:S"),
            format!("ar:{t}:0:b:99999999999999999999999"),
            format!("ar:{t}:١:S"),
            format!("ar:{t}:2:Ѕ"),
            "\u{0}".into(),
            huge,
            long,
        ];
        for s in &bad {
            assert_eq!(CustomId::<Action>::parse(s), None, "{s:?}");
            assert_eq!(ModalId::parse(s), None, "{s:?}");
        }
        assert!(parse(&format!("ar:{t}:0:S")).is_some());
        assert!(parse(&format!("ar:{t}:0:b:0")).is_some());
        assert!(ModalId::parse(&format!("ar:{t}:0:mN")).is_some());
        assert!(ModalId::parse(&format!("ar:{t}:0:mN:0")).is_none());
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

    #[test]
    fn confirm_forms_round_trip_and_carry_only_indices() {
        for form in [Form::Confirm(0), Form::Confirm(24), Form::ConfirmDraft] {
            let s = ModalId::new(TOKEN, 2, form).encode();
            assert_eq!(
                ModalId::parse(&s),
                Some(ModalId::new(TOKEN, 2, form)),
                "{s}"
            );
            assert_eq!(parse(&s), None, "a form is not a component: {s}");
        }
        assert_eq!(
            ModalId::new(TOKEN, 1, Form::Confirm(3)).encode(),
            "ar:0123456789abcdef0123:1:mC:3"
        );
        let longest = ModalId::new(TOKEN, usize::MAX, Form::Confirm(usize::MAX)).encode();
        assert!(longest.len() <= MAX_CUSTOM_ID_CHARS, "{longest}");
        for bad in [
            format!("ar:{TOKEN}:1:mC"),
            format!("ar:{TOKEN}:1:mC:"),
            format!("ar:{TOKEN}:1:mC:03"),
            format!("ar:{TOKEN}:1:mC:1:2"),
            format!("ar:{TOKEN}:1:mD:1"),
        ] {
            assert_eq!(ModalId::parse(&bad), None, "{bad}");
        }
    }
}
