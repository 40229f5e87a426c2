//! The rules of an ask's fields, each error naming the field and the rule it broke: what
//! [`Ask::validate`] checks, whether the ask came from a line (the protocol's parser reads its
//! shape first) or was built in code (a front door's).

use super::*;

pub(super) fn check_bytes(s: &str, field: &str, max: usize) -> Result<(), AskError> {
    if s.len() > max {
        return Err(AskError::invalid(format!(
            "{field}: at most {max} bytes, got {}",
            s.len()
        )));
    }
    Ok(())
}

/// A file name shows in Discord and in terminals: letters, digits, `.`, `_`, `-` and `+`,
/// not starting with a dot, so that it is never a path, never hidden, and never markup.
pub(super) fn check_file_name(name: &str, field: &str) -> Result<(), AskError> {
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '+')))
    {
        return Err(AskError::invalid(format!(
            "{field}: {:?} is not allowed in a file name; use letters, digits, '.', '_', '-' \
             and '+'",
            c
        )));
    }
    if name.starts_with('.') {
        return Err(AskError::invalid(format!(
            "{field}: must not start with '.'"
        )));
    }
    Ok(())
}

/// A request id: 1 to 128 characters, none of them a control character.
pub fn check_request_id(s: &str) -> Result<(), AskError> {
    check_text(s, "request_id", MAX_REQUEST_ID_CHARS)?;
    if s.chars().any(char::is_control) {
        return Err(AskError::invalid(
            "request_id: must not contain control characters",
        ));
    }
    Ok(())
}

pub(super) fn validate_scope(scope: &Scope) -> Result<(), AskError> {
    if scope.len() > MAX_SCOPE_LABELS {
        return Err(AskError::invalid(format!(
            "scope: at most {MAX_SCOPE_LABELS} labels, got {}",
            scope.len()
        )));
    }
    for (k, s) in scope {
        check_line(k, &format!("scope key {k:?}"), MAX_SCOPE_KEY_CHARS)?;
        if s.chars().count() > MAX_SCOPE_VALUE_CHARS {
            return Err(AskError::invalid(format!(
                "scope.{k}: at most {MAX_SCOPE_VALUE_CHARS} characters"
            )));
        }
        if s.chars().any(crate::domain::text::is_display_control) {
            return Err(AskError::invalid(format!(
                "scope.{k}: must not contain control characters"
            )));
        }
    }
    Ok(())
}

pub(super) fn validate_questions(
    questions: &[Question],
    max_questions: usize,
) -> Result<(), AskError> {
    if questions.is_empty() {
        return Err(AskError::invalid(
            "questions: must hold at least 1 question",
        ));
    }
    if questions.len() > max_questions {
        return Err(AskError::invalid(format!(
            "questions: at most {max_questions} questions (limits.max_questions), got {}",
            questions.len()
        )));
    }
    let mut ids = HashSet::new();
    for (i, q) in questions.iter().enumerate() {
        let path = format!("questions[{i}]");
        q.validate(&path)?;
        if !ids.insert(q.id.as_str()) {
            return Err(AskError::invalid(format!(
                "{path}.id: \"{}\" is used twice; ids must be unique within a request",
                q.id
            )));
        }
    }
    Ok(())
}

impl Question {
    /// The rules of one question, its fields named under `path` (`questions[0]`).
    fn validate(&self, path: &str) -> Result<(), AskError> {
        check_text(&self.id, &format!("{path}.id"), MAX_ID_CHARS)?;
        no_controls(&self.id, &format!("{path}.id"))?;
        check_text(
            &self.question,
            &format!("{path}.question"),
            MAX_QUESTION_CHARS,
        )?;
        if let Some(h) = &self.header {
            check_length(h, &format!("{path}.header"), MAX_HEADER_CHARS)?;
            no_controls(h, &format!("{path}.header"))?;
        }
        if self.options.len() > MAX_OPTIONS {
            return Err(AskError::invalid(format!(
                "{path}.options: at most {MAX_OPTIONS} options, got {}",
                self.options.len()
            )));
        }
        let mut labels = HashSet::new();
        // TR39 skeleton → the first label with it, so look-alikes are caught.
        let mut skeletons: std::collections::HashMap<String, usize> =
            std::collections::HashMap::new();
        for (j, o) in self.options.iter().enumerate() {
            let opath = format!("{path}.options[{j}]");
            let label = &o.label;
            check_text(label, &format!("{opath}.label"), MAX_LABEL_CHARS)?;
            if let Some(d) = &o.description {
                check_length(d, &format!("{opath}.description"), MAX_DESCRIPTION_CHARS)?;
            }
            if !labels.insert(label.as_str()) {
                return Err(AskError::invalid(format!(
                    "{opath}.label: \"{label}\" is used twice; labels must be unique within a question"
                )));
            }
            check_label_hygiene(label, &format!("{opath}.label"))?;
            let skeleton: String = unicode_security::skeleton(label).collect();
            if let Some(first) = skeletons.insert(skeleton, j) {
                return Err(AskError::invalid(format!(
                    "{opath}.label: looks the same as {path}.options[{first}].label (Unicode \
                     confusables); labels of one question must be told apart at a glance"
                )));
            }
        }
        if self.multi_select && self.options.is_empty() {
            return Err(AskError::invalid(format!(
                "{path}.multiSelect: needs at least one option; leave it out for a free-text question"
            )));
        }
        Ok(())
    }
}

fn check_length(s: &str, field: &str, max: usize) -> Result<(), AskError> {
    let n = s.chars().count();
    if n > max {
        return Err(AskError::invalid(format!(
            "{field}: at most {max} characters, got {n}"
        )));
    }
    Ok(())
}

/// A one-line text: non-empty, at most `max` characters, no control characters.
pub fn check_line(s: &str, field: &str, max: usize) -> Result<(), AskError> {
    check_text(s, field, max)?;
    no_controls(s, field)
}

fn no_controls(s: &str, field: &str) -> Result<(), AskError> {
    if s.chars().any(crate::domain::text::is_display_control) {
        return Err(AskError::invalid(format!(
            "{field}: must not contain control characters"
        )));
    }
    Ok(())
}

/// Characters that show nothing (or reorder what is shown) and could make two labels look the
/// same, or one say something it does not: bidi controls and the invisible formatting
/// characters. A zero-width joiner between two emoji (👩‍💻) is how emoji are built, so it
/// is allowed there, as are variation selectors and skin tones after an emoji.
fn check_label_hygiene(label: &str, field: &str) -> Result<(), AskError> {
    let chars: Vec<char> = label.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if crate::domain::text::is_display_control(c) {
            return Err(AskError::invalid(format!(
                "{field}: must not contain control or bidi characters (U+{:04X})",
                c as u32
            )));
        }
        let emoji_before = i > 0 && is_emoji_part(chars[i - 1]);
        let emoji_after = chars.get(i + 1).is_some_and(|&n| is_emoji_part(n));
        let allowed = match c {
            '\u{200D}' => emoji_before && emoji_after,
            '\u{FE0E}' | '\u{FE0F}' => emoji_before,
            '\u{E0020}'..='\u{E007F}' => emoji_before,
            c => !crate::domain::text::is_invisible(c),
        };
        if !allowed {
            return Err(AskError::invalid(format!(
                "{field}: must not contain invisible characters (U+{:04X}); they can make \
                 labels look alike",
                c as u32
            )));
        }
    }
    Ok(())
}

/// Characters that make up emoji sequences: pictographs, skin tones, variation selectors and
/// tag characters (near enough to Extended_Pictographic for deciding where a joiner may go).
fn is_emoji_part(c: char) -> bool {
    matches!(c,
        '\u{00A9}' | '\u{00AE}' | '\u{203C}' | '\u{2049}' | '\u{2122}' | '\u{2139}'
        | '\u{2194}'..='\u{21AA}' | '\u{231A}'..='\u{23FF}' | '\u{24C2}' | '\u{25AA}'..='\u{27BF}'
        | '\u{2934}' | '\u{2935}' | '\u{2B05}'..='\u{2B55}' | '\u{3030}' | '\u{303D}'
        | '\u{3297}' | '\u{3299}' | '\u{FE0F}' | '\u{1F000}'..='\u{1FAFF}'
        | '\u{E0020}'..='\u{E007F}')
}

pub fn check_text(s: &str, field: &str, max: usize) -> Result<(), AskError> {
    if s.trim().is_empty() {
        return Err(AskError::invalid(format!("{field}: must not be empty")));
    }
    let n = s.chars().count();
    if n > max {
        return Err(AskError::invalid(format!(
            "{field}: at most {max} characters, got {n}"
        )));
    }
    Ok(())
}
