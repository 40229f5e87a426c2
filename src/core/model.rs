//! The tool input of SPEC §1 as plain types, and the validation that turns a JSON value into them.
//!
//! Validation walks the raw `serde_json::Value` instead of relying on serde's derive so that every
//! message names the exact field (`questions[1].options[0].label`) and the rule it broke, which is
//! what an agent needs to fix its call on the next try.

use super::error::AskError;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashSet};

/// Hard limits of SPEC §1 that are not configurable.
pub const MAX_ID_CHARS: usize = 64;
pub const MAX_QUESTION_CHARS: usize = 4000;
pub const MAX_HEADER_CHARS: usize = 80;
pub const MAX_OPTIONS: usize = 25;
pub const MAX_LABEL_CHARS: usize = 200;
pub const MAX_DESCRIPTION_CHARS: usize = 1000;
/// Free text is bounded by what a Discord text input can hold.
pub const MAX_CUSTOM_CHARS: usize = 4000;
/// A request id is an idempotency key chosen by the client; it never reaches Discord.
pub const MAX_REQUEST_ID_CHARS: usize = 128;
pub const MAX_SCOPE_LABELS: usize = 16;
pub const MAX_SCOPE_KEY_CHARS: usize = 64;
pub const MAX_SCOPE_VALUE_CHARS: usize = 200;
/// `caller.agent_id` and `caller.owner_agent_id`.
pub const MAX_AGENT_ID_CHARS: usize = 128;
/// The free-text note of a terminal answer (`by`, `askrelay answer --as`).
pub const MAX_NOTE_CHARS: usize = 200;
/// A cancel's `reason`.
pub const MAX_REASON_CHARS: usize = 500;

/// The suffix that marks the recommended option (SPEC §1 convention).
pub const RECOMMENDED_SUFFIX: &str = " (Recommended)";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuestionOption {
    pub label: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

impl QuestionOption {
    pub fn is_recommended(&self) -> bool {
        self.label.ends_with(RECOMMENDED_SUFFIX)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Question {
    pub id: String,
    pub question: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<String>,
    #[serde(default)]
    pub options: Vec<QuestionOption>,
    #[serde(rename = "multiSelect", default)]
    pub multi_select: bool,
}

/// What kind of answer a question takes; decides rendering and which settlements are valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuestionKind {
    /// One option, or custom text instead.
    Single,
    /// Any subset of the options, plus optional custom text.
    Multi,
    /// No options: custom text only.
    FreeText,
}

impl Question {
    pub fn kind(&self) -> QuestionKind {
        if self.options.is_empty() {
            QuestionKind::FreeText
        } else if self.multi_select {
            QuestionKind::Multi
        } else {
            QuestionKind::Single
        }
    }

    /// The index of the option whose label is exactly `label`.
    pub fn option_index(&self, label: &str) -> Option<usize> {
        self.options.iter().position(|o| o.label == label)
    }
}

/// Who is asking (SPEC §2). A non-null `owner_agent_id` marks a delegated sub-agent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Caller {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    #[serde(default)]
    pub owner_agent_id: Option<String>,
}

/// Free-form labels (`project`, `agent`, `session`, …) that routes match on.
pub type Scope = BTreeMap<String, String>;

/// A validated `ask` operation. Clients build it with [`parse_ask`] too, so what they send is
/// what the daemon will accept (the daemon validates again, with its own limits).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ask {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    #[serde(default, skip_serializing_if = "Caller::is_root")]
    pub caller: Caller,
    #[serde(default, skip_serializing_if = "Scope::is_empty")]
    pub scope: Scope,
    pub questions: Vec<Question>,
}

impl Caller {
    /// The default: the root agent, unnamed.
    pub fn is_root(&self) -> bool {
        self.agent_id.is_none() && self.owner_agent_id.is_none()
    }
}

/// Parses and validates the fields of an `ask` line (or a bare tool input `{"questions":[...]}`).
/// Keys other than the ask fields are rejected.
pub fn parse_ask(obj: &Map<String, Value>, max_questions: usize) -> Result<Ask, AskError> {
    const KEYS: &[&str] = &["op", "request_id", "caller", "scope", "questions"];
    reject_unknown(obj, "", KEYS)?;
    let request_id = match obj.get("request_id") {
        None | Some(Value::Null) => None,
        Some(v) => Some(parse_request_id(v)?),
    };
    let caller = match obj.get("caller") {
        None | Some(Value::Null) => Caller::default(),
        Some(v) => parse_caller(v)?,
    };
    let scope = match obj.get("scope") {
        None | Some(Value::Null) => Scope::new(),
        Some(v) => parse_scope(v)?,
    };
    let questions = parse_questions(obj.get("questions"), max_questions)?;
    Ok(Ask {
        request_id,
        caller,
        scope,
        questions,
    })
}

/// Validates a request id given by a client.
pub fn parse_request_id(v: &Value) -> Result<String, AskError> {
    let s = v
        .as_str()
        .ok_or_else(|| AskError::invalid("request_id: must be a string"))?;
    check_text(s, "request_id", MAX_REQUEST_ID_CHARS)?;
    if s.chars().any(char::is_control) {
        return Err(AskError::invalid(
            "request_id: must not contain control characters",
        ));
    }
    Ok(s.to_owned())
}

fn parse_caller(v: &Value) -> Result<Caller, AskError> {
    let obj = v
        .as_object()
        .ok_or_else(|| AskError::invalid("caller: must be an object"))?;
    reject_unknown(obj, "caller", &["agent_id", "owner_agent_id"])?;
    let field = |name: &str| -> Result<Option<String>, AskError> {
        match obj.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => {
                check_line(s, &format!("caller.{name}"), MAX_AGENT_ID_CHARS)?;
                Ok(Some(s.clone()))
            }
            Some(_) => Err(AskError::invalid(format!(
                "caller.{name}: must be a string or null"
            ))),
        }
    };
    Ok(Caller {
        agent_id: field("agent_id")?,
        owner_agent_id: field("owner_agent_id")?,
    })
}

fn parse_scope(v: &Value) -> Result<Scope, AskError> {
    let obj = v
        .as_object()
        .ok_or_else(|| AskError::invalid("scope: must be an object of string labels"))?;
    if obj.len() > MAX_SCOPE_LABELS {
        return Err(AskError::invalid(format!(
            "scope: at most {MAX_SCOPE_LABELS} labels, got {}",
            obj.len()
        )));
    }
    let mut scope = Scope::new();
    for (k, v) in obj {
        check_line(k, &format!("scope key {k:?}"), MAX_SCOPE_KEY_CHARS)?;
        let s = match v {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            Value::Null => continue,
            _ => {
                return Err(AskError::invalid(format!(
                    "scope.{k}: must be a string, number or boolean"
                )))
            }
        };
        if s.chars().count() > MAX_SCOPE_VALUE_CHARS {
            return Err(AskError::invalid(format!(
                "scope.{k}: at most {MAX_SCOPE_VALUE_CHARS} characters"
            )));
        }
        if s.chars().any(super::text::is_display_control) {
            return Err(AskError::invalid(format!(
                "scope.{k}: must not contain control characters"
            )));
        }
        scope.insert(k.clone(), s);
    }
    Ok(scope)
}

fn parse_questions(v: Option<&Value>, max_questions: usize) -> Result<Vec<Question>, AskError> {
    let arr = match v {
        None | Some(Value::Null) => {
            return Err(AskError::invalid(
                "questions: is required (an array of 1 or more questions)",
            ))
        }
        Some(Value::Array(a)) => a,
        Some(_) => return Err(AskError::invalid("questions: must be an array")),
    };
    if arr.is_empty() {
        return Err(AskError::invalid(
            "questions: must hold at least 1 question",
        ));
    }
    if arr.len() > max_questions {
        return Err(AskError::invalid(format!(
            "questions: at most {max_questions} questions (limits.max_questions), got {}",
            arr.len()
        )));
    }
    let mut ids = HashSet::new();
    let mut out = Vec::with_capacity(arr.len());
    for (i, q) in arr.iter().enumerate() {
        let path = format!("questions[{i}]");
        let question = parse_question(q, &path)?;
        if !ids.insert(question.id.clone()) {
            return Err(AskError::invalid(format!(
                "{path}.id: \"{}\" is used twice; ids must be unique within a request",
                question.id
            )));
        }
        out.push(question);
    }
    Ok(out)
}

fn parse_question(v: &Value, path: &str) -> Result<Question, AskError> {
    let obj = v
        .as_object()
        .ok_or_else(|| AskError::invalid(format!("{path}: must be an object")))?;
    reject_unknown(
        obj,
        path,
        &["id", "question", "header", "options", "multiSelect"],
    )?;
    let id = required_text(obj, path, "id", MAX_ID_CHARS)?;
    no_controls(&id, &format!("{path}.id"))?;
    let question = required_text(obj, path, "question", MAX_QUESTION_CHARS)?;
    let header = optional_text(obj, path, "header", MAX_HEADER_CHARS)?;
    if let Some(h) = &header {
        no_controls(h, &format!("{path}.header"))?;
    }
    let multi_select = match obj.get("multiSelect") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => {
            return Err(AskError::invalid(format!(
                "{path}.multiSelect: must be true or false"
            )))
        }
    };
    let options = match obj.get("options") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => {
            if a.len() > MAX_OPTIONS {
                return Err(AskError::invalid(format!(
                    "{path}.options: at most {MAX_OPTIONS} options, got {}",
                    a.len()
                )));
            }
            let mut labels = HashSet::new();
            // TR39 skeleton → the first label with it, so look-alikes are caught.
            let mut skeletons: std::collections::HashMap<String, usize> =
                std::collections::HashMap::new();
            let mut options = Vec::with_capacity(a.len());
            for (j, o) in a.iter().enumerate() {
                let opath = format!("{path}.options[{j}]");
                let oobj = o
                    .as_object()
                    .ok_or_else(|| AskError::invalid(format!("{opath}: must be an object")))?;
                reject_unknown(oobj, &opath, &["label", "description"])?;
                let label = required_text(oobj, &opath, "label", MAX_LABEL_CHARS)?;
                let description =
                    optional_text(oobj, &opath, "description", MAX_DESCRIPTION_CHARS)?;
                if !labels.insert(label.clone()) {
                    return Err(AskError::invalid(format!(
                        "{opath}.label: \"{label}\" is used twice; labels must be unique within a question"
                    )));
                }
                check_label_hygiene(&label, &format!("{opath}.label"))?;
                let skeleton: String = unicode_security::skeleton(&label).collect();
                if let Some(first) = skeletons.insert(skeleton, j) {
                    return Err(AskError::invalid(format!(
                        "{opath}.label: looks the same as {path}.options[{first}].label (Unicode \
                         confusables); labels of one question must be told apart at a glance"
                    )));
                }
                options.push(QuestionOption { label, description });
            }
            options
        }
        Some(_) => {
            return Err(AskError::invalid(format!(
                "{path}.options: must be an array"
            )))
        }
    };
    if multi_select && options.is_empty() {
        return Err(AskError::invalid(format!(
            "{path}.multiSelect: needs at least one option; leave it out for a free-text question"
        )));
    }
    Ok(Question {
        id,
        question,
        header,
        options,
        multi_select,
    })
}

fn reject_unknown(obj: &Map<String, Value>, path: &str, known: &[&str]) -> Result<(), AskError> {
    if let Some(k) = obj.keys().find(|k| !known.contains(&k.as_str())) {
        let prefix = if path.is_empty() {
            String::new()
        } else {
            format!("{path}.")
        };
        let expected: Vec<&str> = known.iter().copied().filter(|k| *k != "op").collect();
        return Err(AskError::invalid(format!(
            "{prefix}{k}: unknown field; expected one of {}",
            expected.join(", ")
        )));
    }
    Ok(())
}

fn required_text(
    obj: &Map<String, Value>,
    path: &str,
    name: &str,
    max: usize,
) -> Result<String, AskError> {
    let field = format!("{path}.{name}");
    match obj.get(name) {
        None | Some(Value::Null) => Err(AskError::invalid(format!("{field}: is required"))),
        Some(Value::String(s)) => {
            check_text(s, &field, max)?;
            Ok(s.clone())
        }
        Some(_) => Err(AskError::invalid(format!("{field}: must be a string"))),
    }
}

fn optional_text(
    obj: &Map<String, Value>,
    path: &str,
    name: &str,
    max: usize,
) -> Result<Option<String>, AskError> {
    let field = format!("{path}.{name}");
    match obj.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => {
            let n = s.chars().count();
            if n > max {
                return Err(AskError::invalid(format!(
                    "{field}: at most {max} characters, got {n}"
                )));
            }
            Ok(Some(s.clone()))
        }
        Some(_) => Err(AskError::invalid(format!("{field}: must be a string"))),
    }
}

/// A one-line text: non-empty, at most `max` characters, no control characters.
pub fn check_line(s: &str, field: &str, max: usize) -> Result<(), AskError> {
    check_text(s, field, max)?;
    no_controls(s, field)
}

fn no_controls(s: &str, field: &str) -> Result<(), AskError> {
    if s.chars().any(super::text::is_display_control) {
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
        if super::text::is_display_control(c) {
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
            c => !is_invisible(c),
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

/// Unicode's Default_Ignorable_Code_Point, and the blank Hangul fillers.
fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{034F}' | '\u{061C}' | '\u{115F}' | '\u{1160}' | '\u{17B4}' | '\u{17B5}'
        | '\u{180B}'..='\u{180F}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{206F}' | '\u{3164}' | '\u{FE00}'..='\u{FE0F}' | '\u{FEFF}'
        | '\u{FFA0}' | '\u{FFF0}'..='\u{FFF8}' | '\u{1BCA0}'..='\u{1BCA3}'
        | '\u{1D173}'..='\u{1D17A}' | '\u{E0000}'..='\u{E0FFF}')
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

fn check_text(s: &str, field: &str, max: usize) -> Result<(), AskError> {
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
