//! The tool input (docs/contract.md, "Tool input") as plain types, and the validation that turns a JSON value into them.
//!
//! Validation walks the raw `serde_json::Value` instead of relying on serde's derive so that every
//! message names the exact field (`questions[1].options[0].label`) and the rule it broke, which is
//! what an agent needs to fix its call on the next try.

use super::error::AskError;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashSet};

/// Hard limits of the tool input (docs/contract.md, "Tool input") that are not configurable.
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
/// `context.text`, in bytes of UTF-8 (16 KiB).
pub const MAX_CONTEXT_TEXT_BYTES: usize = 16 * 1024;
/// `context.files`: Discord takes at most 10 attachments per message, and one is kept for
/// `context.text` when it is too long to show inline.
pub const MAX_CONTEXT_FILES: usize = 9;
/// `context.files[].content`, in bytes of UTF-8 (1 MiB).
pub const MAX_CONTEXT_FILE_BYTES: usize = 1024 * 1024;
/// `context.files[].name`.
pub const MAX_CONTEXT_FILE_NAME_CHARS: usize = 100;

/// The suffix that marks the recommended option (docs/contract.md, "Tool input").
pub const RECOMMENDED_SUFFIX: &str = " (Recommended)";

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
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

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
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

    /// The options that `picks` name, as indices in the order given: each pick is an option's
    /// label, exactly, or (with `by_number`, for a person at a terminal) its number from 1. A
    /// pick that names none is `INVALID_REQUEST`, listing what the question offers.
    pub fn resolve(&self, picks: &[String], by_number: bool) -> Result<Vec<usize>, AskError> {
        picks
            .iter()
            .map(|p| {
                self.option_index(p)
                    .or_else(|| {
                        let n = p.parse::<usize>().ok().filter(|_| by_number)?;
                        (1..=self.options.len()).contains(&n).then(|| n - 1)
                    })
                    .ok_or_else(|| self.no_such_option(p, by_number))
            })
            .collect()
    }

    fn no_such_option(&self, pick: &str, by_number: bool) -> AskError {
        use super::text::Escaped;
        let offered = if self.options.is_empty() {
            "none (free text only)".to_owned()
        } else if by_number {
            let all: Vec<String> = self
                .options
                .iter()
                .enumerate()
                .map(|(i, o)| format!("{}. {}", i + 1, Escaped(&o.label)))
                .collect();
            all.join(", ")
        } else {
            let all: Vec<String> = self
                .options
                .iter()
                .map(|o| format!("{:?}", Escaped(&o.label)))
                .collect();
            all.join(", ")
        };
        let how = if by_number {
            "give a label or a number"
        } else {
            "its options are"
        };
        AskError::invalid(format!(
            "question {:?} has no option {:?}; {how}: {offered}",
            Escaped(&self.id),
            Escaped(pick)
        ))
    }
}

/// Who is asking (docs/contract.md, "Socket protocol"). A non-null `owner_agent_id` marks a delegated sub-agent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Caller {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    #[serde(default)]
    pub owner_agent_id: Option<String>,
}

/// Free-form labels (`project`, `agent`, `session`, …) that routes match on.
pub type Scope = BTreeMap<String, String>;

/// What exactly is being approved, shown with the question: a text (markdown) and files (a
/// diff, a plan). On the socket only (docs/contract.md, "Context"); the tool input has no such field.
/// How it is shown is the answerer's business.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Context {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<ContextFile>,
    /// What the approval is for, in a form grants match on and approvers may edit: set by the
    /// approval front doors (`askrelay hook`, `askrelay approve`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<Approval>,
}

/// The subject of an approval: a tool and its exact command, and the agent session asking
/// (docs/approvals.md, "Grants"). A grant matches the tool, the command (or its pattern), the
/// asking uid and host, and the session when there is one.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Approval {
    pub tool: String,
    pub command: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// Whether the approver may edit the command before approving it (Edit…): the front door
    /// runs the edited command.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub editable: bool,
}

/// The longest approval command: what Discord's modal can hold to edit it.
pub const MAX_APPROVAL_COMMAND_CHARS: usize = 4000;

/// One file of a [`Context`]: always text (UTF-8).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ContextFile {
    pub name: String,
    pub content: String,
}

impl Context {
    /// Neither text nor files.
    pub fn is_empty(&self) -> bool {
        self.text.is_none() && self.files.is_empty() && self.approval.is_none()
    }
}

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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<Context>,
}

impl Caller {
    /// The default: the root agent, unnamed.
    pub fn is_root(&self) -> bool {
        self.agent_id.is_none() && self.owner_agent_id.is_none()
    }
}

/// What an ask may hold that the configuration decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// `limits.max_questions`.
    pub max_questions: usize,
}

impl Limits {
    /// No configured limit: only the contract's own (clients, which the daemon checks again).
    pub const NONE: Limits = Limits {
        max_questions: usize::MAX,
    };
}

impl Ask {
    /// Every rule of an ask (docs/contract.md, "Tool input", and the socket's additions), each error naming its field
    /// and rule: what the line parser checks after reading the shape, and what a typed ask
    /// built in code (a front door's) is checked with before it is sent.
    pub fn validate(&self, limits: &Limits) -> Result<(), AskError> {
        if let Some(id) = &self.request_id {
            check_request_id(id)?;
        }
        for (name, v) in [
            ("agent_id", &self.caller.agent_id),
            ("owner_agent_id", &self.caller.owner_agent_id),
        ] {
            if let Some(v) = v {
                check_line(v, &format!("caller.{name}"), MAX_AGENT_ID_CHARS)?;
            }
        }
        validate_scope(&self.scope)?;
        validate_questions(&self.questions, limits.max_questions)?;
        if let Some(c) = &self.context {
            c.validate()?;
        }
        Ok(())
    }
}

impl Context {
    /// The rules of a context: a text of 1 byte to 16 KiB, at most 9 files, each with a safe
    /// name unique within the context (ignoring case) and 1 byte to 1 MiB of content.
    pub fn validate(&self) -> Result<(), AskError> {
        if let Some(t) = &self.text {
            if t.trim().is_empty() {
                return Err(AskError::invalid(
                    "context.text: must not be empty (leave it out instead)",
                ));
            }
            check_bytes(t, "context.text", MAX_CONTEXT_TEXT_BYTES)?;
        }
        if self.files.len() > MAX_CONTEXT_FILES {
            return Err(AskError::invalid(format!(
                "context.files: at most {MAX_CONTEXT_FILES} files, got {}",
                self.files.len()
            )));
        }
        let mut names = HashSet::new();
        for (i, f) in self.files.iter().enumerate() {
            let path = format!("context.files[{i}]");
            check_text(
                &f.name,
                &format!("{path}.name"),
                MAX_CONTEXT_FILE_NAME_CHARS,
            )?;
            check_file_name(&f.name, &format!("{path}.name"))?;
            // Discord shows names case-insensitively alike as one; so do we.
            if !names.insert(f.name.to_ascii_lowercase()) {
                return Err(AskError::invalid(format!(
                    "{path}.name: \"{}\" is used twice; file names must be unique within a \
                     context",
                    f.name
                )));
            }
            if f.content.is_empty() {
                return Err(AskError::invalid(format!(
                    "{path}.content: must not be empty"
                )));
            }
            check_bytes(
                &f.content,
                &format!("{path}.content"),
                MAX_CONTEXT_FILE_BYTES,
            )?;
        }
        Ok(())
    }
}

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

fn check_bytes(s: &str, field: &str, max: usize) -> Result<(), AskError> {
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
fn check_file_name(name: &str, field: &str) -> Result<(), AskError> {
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

fn validate_scope(scope: &Scope) -> Result<(), AskError> {
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
        if s.chars().any(super::text::is_display_control) {
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

fn validate_questions(questions: &[Question], max_questions: usize) -> Result<(), AskError> {
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
            c => !super::text::is_invisible(c),
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

/// Every rule on both sides: at the limit accepted, one over refused, with the field named.
/// (The integration tests in tests/it/limits.rs do the same through the socket.)
#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value) -> Result<Ask, String> {
        let Value::Object(obj) = v else {
            panic!("not an object")
        };
        parse_ask(&obj, 10).map_err(|e| {
            assert_eq!(e.code, crate::domain::ErrorCode::InvalidRequest);
            e.message
        })
    }

    /// An ask with one question built from `q`.
    fn one(q: Value) -> Value {
        json!({ "questions": [q] })
    }

    #[track_caller]
    fn refused(v: Value, starts: &str) {
        match parse(v.clone()) {
            Err(m) => assert!(m.starts_with(starts), "{v}: {m:?} should start {starts:?}"),
            Ok(a) => panic!("{v} was accepted: {a:?}"),
        }
    }

    #[track_caller]
    fn accepted(v: Value) -> Ask {
        parse(v.clone()).unwrap_or_else(|m| panic!("{v} was refused: {m}"))
    }

    fn s(n: usize) -> String {
        "é".repeat(n)
    }

    fn labels(n: usize) -> Vec<Value> {
        (0..n)
            .map(|i| json!({ "label": format!("option {i}") }))
            .collect()
    }

    #[test]
    fn a_full_ask_comes_back_exactly() {
        let ask = accepted(json!({
            "op": "ask",
            "request_id": "deploy-42",
            "caller": {"agent_id": "main", "owner_agent_id": null},
            "scope": {"project": "infra", "n": 3, "on": true, "gone": null},
            "questions": [{
                "id": "go", "question": "Deploy?", "header": "Ship",
                "options": [{"label": "Yes (Recommended)", "description": "now"}, {"label": "No"}],
                "multiSelect": false
            }, {"id": "why", "question": "Why?", "multiSelect": null, "options": null, "header": null}]
        }));
        let want = Ask {
            request_id: Some("deploy-42".into()),
            caller: Caller {
                agent_id: Some("main".into()),
                owner_agent_id: None,
            },
            scope: [("n", "3"), ("on", "true"), ("project", "infra")]
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect(),
            questions: vec![
                Question {
                    id: "go".into(),
                    question: "Deploy?".into(),
                    header: Some("Ship".into()),
                    options: vec![
                        QuestionOption {
                            label: "Yes (Recommended)".into(),
                            description: Some("now".into()),
                        },
                        QuestionOption {
                            label: "No".into(),
                            description: None,
                        },
                    ],
                    multi_select: false,
                },
                Question {
                    id: "why".into(),
                    question: "Why?".into(),
                    header: None,
                    options: vec![],
                    multi_select: false,
                },
            ],
            context: None,
        };
        assert_eq!(ask, want);
        assert!(ask.questions[0].options[0].is_recommended());
        assert!(!ask.questions[0].options[1].is_recommended());
        assert_eq!(ask.questions[0].option_index("No"), Some(1));
        assert_eq!(ask.questions[0].option_index("no"), None);
        assert!(!ask.caller.is_root());
        let bare = accepted(one(json!({"id": "q", "question": "?"})));
        assert_eq!(bare.request_id, None);
        assert!(bare.caller.is_root());
        assert!(bare.scope.is_empty());
        let owned = Caller {
            agent_id: None,
            owner_agent_id: Some("o".into()),
        };
        assert!(!owned.is_root());
    }

    #[test]
    fn picks_resolve_to_options_by_label_or_number() {
        let q = Question {
            id: "q".into(),
            question: "?".into(),
            header: None,
            options: ["a", "b", "2"]
                .iter()
                .map(|l| QuestionOption {
                    label: (*l).into(),
                    description: None,
                })
                .collect(),
            multi_select: true,
        };
        let picks = |p: &[&str]| p.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(q.resolve(&picks(&["b", "a"]), false).unwrap(), [1, 0]);
        // A label wins over a number; numbers count from 1, and only for a person.
        assert_eq!(q.resolve(&picks(&["2", "1"]), true).unwrap(), [2, 0]);
        let e = q.resolve(&picks(&["1"]), false).unwrap_err();
        assert_eq!(e.code, super::super::error::ErrorCode::InvalidRequest);
        assert!(
            e.message
                .contains(r#"has no option "1"; its options are: "a", "b", "2""#),
            "{e}"
        );
        let e = q.resolve(&picks(&["9"]), true).unwrap_err();
        assert!(
            e.message
                .contains("give a label or a number: 1. a, 2. b, 3. 2"),
            "{e}"
        );
    }

    #[test]
    fn kinds_follow_options_and_multi_select() {
        let q = |opts: usize, multi: bool| {
            accepted(one(
                json!({"id": "q", "question": "?", "options": labels(opts), "multiSelect": multi}),
            ))
            .questions
            .remove(0)
            .kind()
        };
        assert_eq!(q(0, false), QuestionKind::FreeText);
        assert_eq!(q(2, false), QuestionKind::Single);
        assert_eq!(q(2, true), QuestionKind::Multi);
        refused(
            one(json!({"id": "q", "question": "?", "multiSelect": true})),
            "questions[0].multiSelect: needs at least one option",
        );
        refused(
            one(json!({"id": "q", "question": "?", "multiSelect": "yes"})),
            "questions[0].multiSelect: must be true or false",
        );
    }

    #[test]
    fn unknown_fields_are_named_where_they_are() {
        refused(
            json!({"questions": [], "x": 1}),
            "x: unknown field; expected one of request_id, caller, scope, questions",
        );
        refused(
            one(json!({"id": "q", "question": "?", "x": 1})),
            "questions[0].x: unknown field; expected one of id, question, header, options, multiSelect",
        );
        refused(
            one(json!({"id": "q", "question": "?", "options": [{"label": "a", "x": 1}]})),
            "questions[0].options[0].x: unknown field; expected one of label, description",
        );
        refused(
            json!({"caller": {"x": 1}, "questions": [{"id": "q", "question": "?"}]}),
            "caller.x: unknown field",
        );
    }

    #[test]
    fn questions_count_from_one_to_the_limit() {
        let q = |i: usize| json!({"id": format!("q{i}"), "question": "?"});
        let n = |k: usize| json!({ "questions": (0..k).map(q).collect::<Vec<_>>() });
        assert_eq!(accepted(n(1)).questions.len(), 1);
        assert_eq!(accepted(n(10)).questions.len(), 10);
        refused(
            n(11),
            "questions: at most 10 questions (limits.max_questions), got 11",
        );
        refused(n(0), "questions: must hold at least 1 question");
        refused(json!({}), "questions: is required");
        refused(json!({"questions": null}), "questions: is required");
        refused(json!({"questions": {}}), "questions: must be an array");
        refused(json!({"questions": [1]}), "questions[0]: must be an object");
        refused(
            json!({"questions": [q(1), q(2), q(1)]}),
            "questions[2].id: \"q1\" is used twice",
        );
    }

    #[test]
    fn question_texts_have_their_limits() {
        let q = |k: &str, v: Value| {
            let mut o = json!({"id": "q", "question": "?"});
            o[k] = v;
            one(o)
        };
        accepted(q("id", json!(s(MAX_ID_CHARS))));
        refused(
            q("id", json!(s(MAX_ID_CHARS + 1))),
            "questions[0].id: at most 64 characters, got 65",
        );
        refused(q("id", json!("  ")), "questions[0].id: must not be empty");
        refused(q("id", json!(null)), "questions[0].id: is required");
        refused(q("id", json!(1)), "questions[0].id: must be a string");
        refused(
            q("id", json!("a\u{1b}b")),
            "questions[0].id: must not contain control characters",
        );
        accepted(q("question", json!(s(MAX_QUESTION_CHARS))));
        refused(
            q("question", json!(s(MAX_QUESTION_CHARS + 1))),
            "questions[0].question: at most 4000",
        );
        accepted(q("header", json!(s(MAX_HEADER_CHARS))));
        accepted(q("header", json!("")));
        refused(
            q("header", json!(s(MAX_HEADER_CHARS + 1))),
            "questions[0].header: at most 80 characters, got 81",
        );
        refused(
            q("header", json!(7)),
            "questions[0].header: must be a string",
        );
        refused(
            q("header", json!("a\u{9b}b")),
            "questions[0].header: must not contain control characters",
        );
    }

    #[test]
    fn options_have_their_limits() {
        let q = |opts: Value| one(json!({"id": "q", "question": "?", "options": opts}));
        assert_eq!(
            accepted(q(json!(labels(MAX_OPTIONS)))).questions[0]
                .options
                .len(),
            25
        );
        refused(
            q(json!(labels(MAX_OPTIONS + 1))),
            "questions[0].options: at most 25 options, got 26",
        );
        refused(q(json!("a")), "questions[0].options: must be an array");
        refused(
            q(json!(["a"])),
            "questions[0].options[0]: must be an object",
        );
        accepted(q(json!([{"label": s(MAX_LABEL_CHARS)}])));
        refused(
            q(json!([{"label": s(MAX_LABEL_CHARS + 1)}])),
            "questions[0].options[0].label: at most 200",
        );
        refused(
            q(json!([{"label": ""}])),
            "questions[0].options[0].label: must not be empty",
        );
        accepted(q(
            json!([{"label": "a", "description": s(MAX_DESCRIPTION_CHARS)}]),
        ));
        refused(
            q(json!([{"label": "a", "description": s(MAX_DESCRIPTION_CHARS + 1)}])),
            "questions[0].options[0].description: at most 1000 characters, got 1001",
        );
        refused(
            q(json!([{"label": "a", "description": false}])),
            "questions[0].options[0].description: must be a string",
        );
        refused(
            q(json!([{"label": "a"}, {"label": "a"}])),
            "questions[0].options[1].label: \"a\" is used twice",
        );
    }

    #[test]
    fn labels_that_look_alike_or_hide_something_are_refused() {
        let q = |l: &[&str]| {
            let opts: Vec<Value> = l.iter().map(|l| json!({ "label": l })).collect();
            one(json!({"id": "q", "question": "?", "options": opts}))
        };
        refused(
            q(&["paypal", "pаypal"]),
            "questions[0].options[1].label: looks the same as questions[0].options[0].label",
        );
        for bad in [
            "a\u{200D}b",         // a joiner between letters
            "a\u{200D}\u{1F469}", // a joiner with an emoji after only
            "\u{1F469}\u{200D}b", // a joiner with an emoji before only
            "\u{200D}\u{1F469}",  // a joiner first
            "a\u{200B}b",         // zero width space
            "a\u{FE0F}",          // a variation selector after a letter
            "a\u{E0061}",         // a tag after a letter
            "a\u{00AD}b",         // soft hyphen
            "x\u{E0100}",         // a variation selector supplement
        ] {
            refused(
                q(&[bad]),
                "questions[0].options[0].label: must not contain invisible characters",
            );
        }
        refused(
            q(&["a\u{202E}b"]),
            "questions[0].options[0].label: must not contain control or bidi characters (U+202E)",
        );
        for good in [
            "\u{1F469}\u{200D}\u{1F4BB} dev", // woman technologist
            "\u{2764}\u{FE0F} yes",           // red heart with its selector
            "\u{1F3F4}\u{E0067}\u{E0062}\u{E0073}\u{E0063}\u{E0074}\u{E007F}", // the flag of Scotland
            "\u{00A9}\u{FE0F} 2026",
            "plain",
        ] {
            let a = accepted(q(&[good]));
            assert_eq!(a.questions[0].options[0].label, good, "byte-exact");
        }
    }

    #[test]
    fn request_ids_are_one_line_of_at_most_128() {
        let r = |v: Value| json!({"request_id": v, "questions": [{"id": "q", "question": "?"}]});
        assert_eq!(accepted(r(json!(s(128)))).request_id, Some(s(128)));
        refused(
            r(json!(s(129))),
            "request_id: at most 128 characters, got 129",
        );
        refused(r(json!(" ")), "request_id: must not be empty");
        refused(r(json!(5)), "request_id: must be a string");
        for c in ['\u{0}', '\u{1f}', '\u{7f}', '\u{85}', '\u{9f}'] {
            refused(
                r(json!(format!("a{c}b"))),
                "request_id: must not contain control characters",
            );
        }
        assert_eq!(accepted(r(json!(null))).request_id, None);
    }

    #[test]
    fn the_caller_is_an_object_of_two_short_ids() {
        let c = |v: Value| json!({"caller": v, "questions": [{"id": "q", "question": "?"}]});
        assert_eq!(accepted(c(json!(null))).caller, Caller::default());
        let got = accepted(c(json!({"agent_id": s(128), "owner_agent_id": "boss"}))).caller;
        assert_eq!(got.agent_id, Some(s(128)));
        assert_eq!(got.owner_agent_id.as_deref(), Some("boss"));
        refused(
            c(json!({"agent_id": s(129)})),
            "caller.agent_id: at most 128 characters",
        );
        refused(
            c(json!({"owner_agent_id": s(129)})),
            "caller.owner_agent_id: at most 128 characters",
        );
        refused(
            c(json!({"agent_id": "a\nb"})),
            "caller.agent_id: must not contain control characters",
        );
        refused(
            c(json!({"agent_id": 1})),
            "caller.agent_id: must be a string or null",
        );
        refused(c(json!("main")), "caller: must be an object");
    }

    #[test]
    fn scope_holds_sixteen_short_labels() {
        let sc = |v: Value| json!({"scope": v, "questions": [{"id": "q", "question": "?"}]});
        let n = |k: usize| Value::Object((0..k).map(|i| (format!("k{i}"), json!("v"))).collect());
        assert_eq!(accepted(sc(n(16))).scope.len(), 16);
        refused(sc(n(17)), "scope: at most 16 labels, got 17");
        // A null label counts toward the limit and is dropped.
        let mut with_null = n(15);
        with_null["gone"] = Value::Null;
        assert_eq!(accepted(sc(with_null.clone())).scope.len(), 15);
        with_null["one_more"] = json!(1);
        refused(sc(with_null), "scope: at most 16 labels, got 17");
        accepted(sc(json!({ s(64): "v" })));
        refused(sc(json!({ s(65): "v" })), "scope key");
        refused(sc(json!({ "a\u{1b}": "v" })), "scope key");
        accepted(sc(json!({ "k": s(200) })));
        refused(
            sc(json!({ "k": s(201) })),
            "scope.k: at most 200 characters",
        );
        refused(
            sc(json!({ "k": "a\u{7}" })),
            "scope.k: must not contain control characters",
        );
        refused(
            sc(json!({ "k": [1] })),
            "scope.k: must be a string, number or boolean",
        );
        refused(
            sc(json!({ "k": {"a": 1} })),
            "scope.k: must be a string, number or boolean",
        );
        refused(
            sc(json!(["a"])),
            "scope: must be an object of string labels",
        );
    }

    #[test]
    fn check_line_is_the_one_line_rule() {
        assert!(check_line(&s(5), "f", 5).is_ok());
        assert_eq!(
            check_line(&s(6), "f", 5).unwrap_err().message,
            "f: at most 5 characters, got 6"
        );
        assert_eq!(
            check_line("a\u{1b}[2J", "f", 50).unwrap_err().message,
            "f: must not contain control characters"
        );
        assert_eq!(
            check_line(" ", "f", 5).unwrap_err().message,
            "f: must not be empty"
        );
    }

    #[test]
    fn context_comes_back_exactly_and_an_empty_one_is_none() {
        let c = |v: Value| json!({"questions": [{"id": "q", "question": "?"}], "context": v});
        let got = accepted(c(json!({
            "text": "rm -rf build/",
            "files": [{"name": "change.diff", "content": "+a\n"}, {"name": "PLAN+v2.md", "content": "x"}]
        })))
        .context
        .unwrap();
        assert_eq!(got.text.as_deref(), Some("rm -rf build/"));
        assert_eq!(got.files.len(), 2);
        assert_eq!(got.files[0].name, "change.diff");
        assert_eq!(got.files[0].content, "+a\n");
        assert_eq!(accepted(c(json!({}))).context, None);
        assert_eq!(accepted(c(json!({"files": []}))).context, None);
        assert_eq!(accepted(c(json!(null))).context, None);
    }

    #[test]
    fn context_has_its_limits_and_names_the_field() {
        let c = |v: Value| json!({"questions": [{"id": "q", "question": "?"}], "context": v});
        let file = |name: &str, content: &str| json!({"name": name, "content": content});
        accepted(c(json!({ "text": "a".repeat(MAX_CONTEXT_TEXT_BYTES) })));
        refused(
            c(json!({ "text": "a".repeat(MAX_CONTEXT_TEXT_BYTES + 1) })),
            "context.text: at most 16384 bytes, got 16385",
        );
        // Bytes, not characters: 'é' is two.
        refused(
            c(json!({ "text": "é".repeat(MAX_CONTEXT_TEXT_BYTES / 2 + 1) })),
            "context.text: at most 16384 bytes",
        );
        refused(c(json!({"text": " "})), "context.text: must not be empty");
        refused(c(json!({"text": 1})), "context.text: must be a string");
        refused(c(json!("x")), "context: must be an object");
        refused(c(json!({"txt": "x"})), "context.txt: unknown field");
        let nine: Vec<Value> = (0..9).map(|i| file(&format!("f{i}"), "x")).collect();
        assert_eq!(
            accepted(c(json!({ "files": nine })))
                .context
                .unwrap()
                .files
                .len(),
            9
        );
        let ten: Vec<Value> = (0..10).map(|i| file(&format!("f{i}"), "x")).collect();
        refused(
            c(json!({ "files": ten })),
            "context.files: at most 9 files, got 10",
        );
        refused(c(json!({"files": {}})), "context.files: must be an array");
        refused(
            c(json!({"files": [1]})),
            "context.files[0]: must be an object",
        );
        refused(
            c(json!({"files": [file("a", "x"), file("", "x")]})),
            "context.files[1].name: must not be empty",
        );
        refused(
            c(json!({"files": [file("a", "x"), {"content": "x"}]})),
            "context.files[1].name: is required",
        );
        refused(
            c(json!({"files": [file("a.txt", "x"), file("A.TXT", "y")]})),
            "context.files[1].name: \"A.TXT\" is used twice",
        );
        for bad in ["../etc/passwd", "a b", "a\u{1b}", "`x`", "é.txt"] {
            refused(
                c(json!({"files": [file(bad, "x")]})),
                "context.files[0].name: ",
            );
        }
        refused(
            c(json!({"files": [file(".hidden", "x")]})),
            "context.files[0].name: must not start with '.'",
        );
        accepted(c(
            json!({"files": [file(&"a".repeat(MAX_CONTEXT_FILE_NAME_CHARS), "x")]}),
        ));
        refused(
            c(json!({"files": [file(&"a".repeat(MAX_CONTEXT_FILE_NAME_CHARS + 1), "x")]})),
            "context.files[0].name: at most 100 characters, got 101",
        );
        accepted(c(
            json!({"files": [file("a", &"x".repeat(MAX_CONTEXT_FILE_BYTES))]}),
        ));
        refused(
            c(json!({"files": [file("a", &"x".repeat(MAX_CONTEXT_FILE_BYTES + 1))]})),
            "context.files[0].content: at most 1048576 bytes, got 1048577",
        );
        refused(
            c(json!({"files": [file("a", "")]})),
            "context.files[0].content: must not be empty",
        );
        refused(
            c(json!({"files": [{"name": "a", "content": [1]}]})),
            "context.files[0].content: must be a string",
        );
        refused(
            c(json!({"files": [{"name": "a"}]})),
            "context.files[0].content: is required",
        );
        refused(
            c(json!({"files": [{"name": "a", "content": "x", "mode": 1}]})),
            "context.files[0].mode: unknown field",
        );
    }
}
