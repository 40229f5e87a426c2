//! Reading one field of a JSON object, for the line parsers (an operation's fields in
//! [`super`], an ask's in [`super::ask`]): each error names the field by its path
//! (`questions[1].options[0].label`), or by its name at the top of the line.

use crate::domain::error::AskError;
use serde_json::{Map, Value};

/// The name of field `name` under `path` (`""`: at the top of the line).
fn field(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_owned()
    } else {
        format!("{path}.{name}")
    }
}

pub(super) fn reject_unknown(
    obj: &Map<String, Value>,
    path: &str,
    known: &[&str],
) -> Result<(), AskError> {
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

/// A string field that must be there.
pub(super) fn required_string(
    obj: &Map<String, Value>,
    path: &str,
    name: &str,
) -> Result<String, AskError> {
    let field = field(path, name);
    match obj.get(name) {
        None | Some(Value::Null) => Err(AskError::invalid(format!("{field}: is required"))),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(AskError::invalid(format!("{field}: must be a string"))),
    }
}

/// A string field that may be left out (or null).
pub(super) fn optional_string(
    obj: &Map<String, Value>,
    path: &str,
    name: &str,
) -> Result<Option<String>, AskError> {
    match obj.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(AskError::invalid(format!(
            "{}: must be a string",
            field(path, name)
        ))),
    }
}
