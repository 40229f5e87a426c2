//! An ask as it arrives on the socket, read field by field: each error names the field and the
//! rule it broke (serde's would not), and what is read is checked against the limits in
//! [`super`].

use super::*;

/// Reads an `ask` line (or a bare tool input `{"questions":[...]}`): its shape (types, and no
/// key but the ask's), then its rules ([`Ask::validate`]). Every error names its field.
pub fn parse_ask(obj: &Map<String, Value>, max_questions: usize) -> Result<Ask, AskError> {
    const KEYS: &[&str] = &[
        "op",
        "request_id",
        "caller",
        "scope",
        "questions",
        "context",
    ];
    reject_unknown(obj, "", KEYS)?;
    let request_id = match obj.get("request_id") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            v.as_str()
                .ok_or_else(|| AskError::invalid("request_id: must be a string"))?
                .to_owned(),
        ),
    };
    let caller = match obj.get("caller") {
        None | Some(Value::Null) => Caller::default(),
        Some(v) => parse_caller(v)?,
    };
    let scope = match obj.get("scope") {
        None | Some(Value::Null) => Scope::new(),
        Some(v) => parse_scope(v)?,
    };
    let questions = parse_questions(obj.get("questions"))?;
    let context = match obj.get("context") {
        None | Some(Value::Null) => None,
        Some(v) => Some(read_context(v)?).filter(|c| !c.is_empty()),
    };
    let ask = Ask {
        request_id,
        caller,
        scope,
        questions,
        context,
    };
    ask.validate(&Limits { max_questions })?;
    Ok(ask)
}

/// Reads and validates a `context` object.
pub fn parse_context(v: &Value) -> Result<Context, AskError> {
    let c = read_context(v)?;
    c.validate()?;
    Ok(c)
}

/// A context's shape: an object of an optional `text` and optional `files` of
/// `{"name","content"}`, all strings.
fn read_context(v: &Value) -> Result<Context, AskError> {
    let obj = v.as_object().ok_or_else(|| {
        AskError::invalid("context: must be an object like {\"text\": \"...\", \"files\": [...]}")
    })?;
    reject_unknown(obj, "context", &["text", "files", "approval"])?;
    let text = match obj.get("text") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(AskError::invalid("context.text: must be a string")),
    };
    let files = match obj.get("files") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => {
            let mut files = Vec::with_capacity(a.len());
            for (i, f) in a.iter().enumerate() {
                let path = format!("context.files[{i}]");
                let fobj = f
                    .as_object()
                    .ok_or_else(|| AskError::invalid(format!("{path}: must be an object")))?;
                reject_unknown(fobj, &path, &["name", "content"])?;
                let name = required_string(fobj, &path, "name")?;
                let content = match fobj.get("content") {
                    None | Some(Value::Null) => {
                        return Err(AskError::invalid(format!("{path}.content: is required")))
                    }
                    Some(Value::String(s)) => s.clone(),
                    Some(_) => {
                        return Err(AskError::invalid(format!(
                            "{path}.content: must be a string (UTF-8 text)"
                        )))
                    }
                };
                files.push(ContextFile { name, content });
            }
            files
        }
        Some(_) => return Err(AskError::invalid("context.files: must be an array")),
    };
    let approval = match obj.get("approval") {
        None | Some(Value::Null) => None,
        Some(v) => Some(read_approval(v)?),
    };
    Ok(Context {
        text,
        files,
        approval,
    })
}

/// An approval subject's shape: `{"tool", "command", "session"?, "editable"?}`.
fn read_approval(v: &Value) -> Result<Approval, AskError> {
    let path = "context.approval";
    let obj = v.as_object().ok_or_else(|| {
        AskError::invalid(
            "context.approval: must be an object like {\"tool\": \"Bash\", \"command\": \"...\"}",
        )
    })?;
    reject_unknown(obj, path, &["tool", "command", "session", "editable"])?;
    let session = match obj.get("session") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => {
            return Err(AskError::invalid(
                "context.approval.session: must be a string",
            ))
        }
    };
    let editable = match obj.get("editable") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => {
            return Err(AskError::invalid(
                "context.approval.editable: must be true or false",
            ))
        }
    };
    Ok(Approval {
        tool: required_string(obj, path, "tool")?,
        command: required_string(obj, path, "command")?,
        session,
        editable,
    })
}

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

/// Reads and validates a request id given by a client.
pub fn parse_request_id(v: &Value) -> Result<String, AskError> {
    let s = v
        .as_str()
        .ok_or_else(|| AskError::invalid("request_id: must be a string"))?;
    check_request_id(s)?;
    Ok(s.to_owned())
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

fn parse_caller(v: &Value) -> Result<Caller, AskError> {
    let obj = v
        .as_object()
        .ok_or_else(|| AskError::invalid("caller: must be an object"))?;
    reject_unknown(obj, "caller", &["agent_id", "owner_agent_id"])?;
    let field = |name: &str| -> Result<Option<String>, AskError> {
        match obj.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
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

/// A scope's shape: an object of labels; numbers and booleans are read as their text, null
/// labels are left out.
fn parse_scope(v: &Value) -> Result<Scope, AskError> {
    let obj = v
        .as_object()
        .ok_or_else(|| AskError::invalid("scope: must be an object of string labels"))?;
    // Counted as sent, null labels included.
    if obj.len() > MAX_SCOPE_LABELS {
        return Err(AskError::invalid(format!(
            "scope: at most {MAX_SCOPE_LABELS} labels, got {}",
            obj.len()
        )));
    }
    let mut scope = Scope::new();
    for (k, v) in obj {
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
        scope.insert(k.clone(), s);
    }
    Ok(scope)
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

fn parse_questions(v: Option<&Value>) -> Result<Vec<Question>, AskError> {
    let arr = match v {
        None | Some(Value::Null) => {
            return Err(AskError::invalid(
                "questions: is required (an array of 1 or more questions)",
            ))
        }
        Some(Value::Array(a)) => a,
        Some(_) => return Err(AskError::invalid("questions: must be an array")),
    };
    arr.iter()
        .enumerate()
        .map(|(i, q)| parse_question(q, &format!("questions[{i}]")))
        .collect()
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

/// A question's shape: an object of the known fields, each of its type.
fn parse_question(v: &Value, path: &str) -> Result<Question, AskError> {
    let obj = v
        .as_object()
        .ok_or_else(|| AskError::invalid(format!("{path}: must be an object")))?;
    reject_unknown(
        obj,
        path,
        &["id", "question", "header", "options", "multiSelect"],
    )?;
    let id = required_string(obj, path, "id")?;
    let question = required_string(obj, path, "question")?;
    let header = optional_string(obj, path, "header")?;
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
            let mut options = Vec::with_capacity(a.len());
            for (j, o) in a.iter().enumerate() {
                let opath = format!("{path}.options[{j}]");
                let oobj = o
                    .as_object()
                    .ok_or_else(|| AskError::invalid(format!("{opath}: must be an object")))?;
                reject_unknown(oobj, &opath, &["label", "description"])?;
                options.push(QuestionOption {
                    label: required_string(oobj, &opath, "label")?,
                    description: optional_string(oobj, &opath, "description")?,
                });
            }
            options
        }
        Some(_) => {
            return Err(AskError::invalid(format!(
                "{path}.options: must be an array"
            )))
        }
    };
    Ok(Question {
        id,
        question,
        header,
        options,
        multi_select,
    })
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

fn required_string(obj: &Map<String, Value>, path: &str, name: &str) -> Result<String, AskError> {
    let field = format!("{path}.{name}");
    match obj.get(name) {
        None | Some(Value::Null) => Err(AskError::invalid(format!("{field}: is required"))),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(AskError::invalid(format!("{field}: must be a string"))),
    }
}

fn optional_string(
    obj: &Map<String, Value>,
    path: &str,
    name: &str,
) -> Result<Option<String>, AskError> {
    match obj.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(AskError::invalid(format!(
            "{path}.{name}: must be a string"
        ))),
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
