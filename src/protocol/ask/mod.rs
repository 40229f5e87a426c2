//! An ask as it arrives on a line (or as a bare tool input), read field by field from the JSON
//! value: each error names the field and the rule it broke (serde's would not), which is what
//! an agent needs to fix its call on the next try. What is read is then checked by the
//! domain's rules ([`Ask::validate`]).

use super::fields::{optional_string, reject_unknown, required_string};
use crate::domain::error::AskError;
use crate::domain::model::{
    check_request_id, Approval, Ask, Caller, Context, ContextFile, Limits, OnDisconnect, Question,
    QuestionOption, Scope, MAX_SCOPE_LABELS,
};
use serde_json::{Map, Value};

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
        "on_disconnect",
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
    let on_disconnect = match obj.get("on_disconnect") {
        None | Some(Value::Null) => OnDisconnect::Grace,
        Some(Value::String(s)) if s == "grace" => OnDisconnect::Grace,
        Some(Value::String(s)) if s == "withdraw" => OnDisconnect::Withdraw,
        Some(_) => {
            return Err(AskError::invalid(
                "on_disconnect: must be \"grace\" (wait cancel_grace_secs for a re-attach) or \
                 \"withdraw\" (end the request at once)",
            ))
        }
    };
    let ask = Ask {
        request_id,
        caller,
        scope,
        questions,
        context,
        on_disconnect,
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

/// Reads and validates a request id given by a client.
pub fn parse_request_id(v: &Value) -> Result<String, AskError> {
    let s = v
        .as_str()
        .ok_or_else(|| AskError::invalid("request_id: must be a string"))?;
    check_request_id(s)?;
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

#[cfg(test)]
mod tests;
