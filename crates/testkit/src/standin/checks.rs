//! The checks Discord makes on a message body (content length, rows, components, custom ids,
//! an empty message), and its `Invalid Form Body` replies.

use super::reply::Reply;
use serde_json::{json, Value};
use std::collections::HashSet;

const MAX_CONTENT_CHARS: usize = 2000;
const MAX_ROWS: usize = 5;
const MAX_ROW_COMPONENTS: usize = 5;
const MAX_CUSTOM_ID_CHARS: usize = 100;

pub(super) fn invalid_form_body(errors: Value) -> Reply {
    Reply::json(
        400,
        json!({"message": "Invalid Form Body", "code": 50035, "errors": errors}),
    )
}

pub(super) fn form_error(path: &[&str], code: &str, message: &str) -> Reply {
    let mut errors = json!({"_errors": [{"code": code, "message": message}]});
    for key in path.iter().rev() {
        let mut wrapper = serde_json::Map::new();
        wrapper.insert((*key).to_string(), errors);
        errors = Value::Object(wrapper);
    }
    invalid_form_body(errors)
}

/// The checks Discord makes that the OpenAPI spec does not (see docs/contract.md, "Discord limits").
pub(super) fn validate_message(body: &Value) -> Option<Reply> {
    if let Some(content) = body.get("content").and_then(Value::as_str) {
        if content.chars().count() > MAX_CONTENT_CHARS {
            return Some(form_error(
                &["content"],
                "BASE_TYPE_MAX_LENGTH",
                "Must be 2000 or fewer in length.",
            ));
        }
    }
    let rows = body.get("components").and_then(Value::as_array)?;
    if rows.len() > MAX_ROWS {
        return Some(form_error(
            &["components"],
            "BASE_TYPE_MAX_LENGTH",
            "Must be 5 or fewer in length.",
        ));
    }
    let mut seen = HashSet::new();
    for (r, row) in rows.iter().enumerate() {
        let r = r.to_string();
        let children = row
            .get("components")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        if children.len() > MAX_ROW_COMPONENTS {
            return Some(form_error(
                &["components", &r, "components"],
                "BASE_TYPE_MAX_LENGTH",
                "Must be 5 or fewer in length.",
            ));
        }
        for (c, child) in children.iter().enumerate() {
            let c = c.to_string();
            let Some(custom_id) = child.get("custom_id").and_then(Value::as_str) else {
                continue;
            };
            let len = custom_id.chars().count();
            if len == 0 || len > MAX_CUSTOM_ID_CHARS {
                return Some(form_error(
                    &["components", &r, "components", &c, "custom_id"],
                    "BASE_TYPE_BAD_LENGTH",
                    "Must be between 1 and 100 in length.",
                ));
            }
            if !seen.insert(custom_id.to_string()) {
                return Some(form_error(
                    &["components", &r, "components", &c, "custom_id"],
                    "COMPONENT_CUSTOM_ID_DUPLICATED",
                    "Component custom id cannot be duplicated",
                ));
            }
        }
    }
    None
}

pub(super) fn is_empty_message(body: &Value) -> bool {
    let non_empty_array = |key: &str| {
        body.get(key)
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty())
    };
    let has_content = body
        .get("content")
        .and_then(Value::as_str)
        .is_some_and(|s| !s.is_empty());
    !(has_content
        || non_empty_array("embeds")
        || non_empty_array("components")
        || non_empty_array("sticker_ids")
        || non_empty_array("attachments")
        || body.get("poll").is_some_and(|p| !p.is_null()))
}

pub(super) fn normalize_embeds(embeds: Option<&Value>) -> Value {
    let mut list = embeds
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for embed in &mut list {
        if let Some(obj) = embed.as_object_mut() {
            obj.entry("type").or_insert_with(|| json!("rich"));
            obj.entry("content_scan_version")
                .or_insert_with(|| json!(0));
        }
    }
    Value::Array(list)
}
