//! What the REST routes do to channel messages and interactions: create (with nonces and
//! uploaded files), get, edit and delete, interaction callbacks, and interaction webhooks
//! (followups, `@original`).

use super::checks::{invalid_form_body, is_empty_message, validate_message};
use super::json::{build_message, merge_message};
use super::reply::Reply;
use super::{parse_snowflake, Ids, NonceReuse, RecordedFile, St, StoredMessage};
use serde_json::{json, Value};
use std::collections::HashSet;
use std::time::{Duration, Instant};

const NONCE_WINDOW: Duration = Duration::from_secs(300);

pub(super) fn create_channel_message(
    st: &mut St,
    ids: &Ids,
    cid: u64,
    body: Option<&Value>,
    files: &[RecordedFile],
) -> Reply {
    let Some(body) = body.filter(|b| b.is_object()) else {
        return Reply::error(400, 50006, "Cannot send an empty message");
    };
    if let Some(err) = validate_message(body) {
        return err;
    }
    let attachments = match uploaded_attachments(st, body, files) {
        Ok(a) => a,
        Err(reply) => return reply,
    };
    if is_empty_message(body) {
        return Reply::error(400, 50006, "Cannot send an empty message");
    }
    let nonce_key = match (body.get("nonce"), body.get("enforce_nonce")) {
        (Some(nonce), Some(Value::Bool(true))) if !nonce.is_null() => {
            let nonce = match nonce {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            Some((cid, nonce))
        }
        _ => None,
    };
    if let Some(key) = nonce_key.as_ref().filter(|_| !st.nonce_dedup_off) {
        if let Some(&(mid, at)) = st.nonces.get(key) {
            if at.elapsed() < NONCE_WINDOW {
                if let Some(existing) = st.messages.iter().find(|m| m.id == mid) {
                    return Reply::json(200, existing.value.clone());
                }
            }
        }
    }
    let id = st.next_snowflake();
    let mut msg = build_message(ids, id, cid, body, None);
    if !attachments.is_empty() {
        msg["attachments"] = Value::Array(
            attachments
                .into_iter()
                .map(|mut a| {
                    let aid = a["id"].as_str().unwrap_or_default().to_owned();
                    let name = a["filename"].as_str().unwrap_or_default().to_owned();
                    let url = format!("https://cdn.discordapp.com/attachments/{cid}/{aid}/{name}");
                    a["url"] = json!(url);
                    a["proxy_url"] =
                        json!(url.replace("cdn.discordapp.com", "media.discordapp.net"));
                    a
                })
                .collect(),
        );
    }
    st.messages.push(StoredMessage {
        channel_id: cid,
        id,
        value: msg.clone(),
    });
    st.created.push(msg.clone());
    note_nonce(st, cid, body, id);
    if let Some(key) = nonce_key {
        st.nonces.insert(key, (id, Instant::now()));
    }
    Reply::json(200, msg)
}

/// Remembers the nonce of a created message, and counts it as reused when an earlier message
/// of the channel carried it (with `enforce_nonce` or not).
pub(super) fn note_nonce(st: &mut St, cid: u64, body: &Value, id: u64) {
    let nonce = match body.get("nonce") {
        None | Some(Value::Null) => return,
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    };
    match st.nonces_used.entry((cid, nonce.clone())) {
        std::collections::hash_map::Entry::Occupied(first) => {
            let first_message_id = *first.get();
            st.nonce_reuses.push(NonceReuse {
                channel_id: cid,
                nonce,
                message_id: id,
                first_message_id,
            });
        }
        std::collections::hash_map::Entry::Vacant(e) => {
            e.insert(id);
        }
    }
}

/// The attachments of a create, as Discord builds them: each entry of the body's
/// `attachments` must name a `files[N]` part by its id N (as Discord's spec has it, a
/// snowflake string), at most 10; every file part must be named by one. A mismatch is 400
/// `Invalid Form Body`, as Discord answers it.
pub(super) fn uploaded_attachments(
    st: &mut St,
    body: &Value,
    files: &[RecordedFile],
) -> Result<Vec<Value>, Reply> {
    let meta = body
        .get("attachments")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let bad = |message: &str| {
        invalid_form_body(json!({"attachments": {"_errors": [
            {"code": "ATTACHMENT_NOT_FOUND", "message": message}
        ]}}))
    };
    if meta.len() > 10 || files.len() > 10 {
        return Err(bad("Must be 10 or fewer in length."));
    }
    let mut out = Vec::new();
    let mut used = HashSet::new();
    for m in &meta {
        let id = match m.get("id") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            _ => return Err(bad("Attachment id is required.")),
        };
        let field = format!("files[{id}]");
        let Some(file) = files.iter().find(|f| f.field == field) else {
            return Err(bad(&format!("No file part {field} for this attachment.")));
        };
        used.insert(field);
        let filename = m
            .get("filename")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or_else(|| file.filename.clone())
            .unwrap_or_default();
        out.push(json!({
            "id": st.next_snowflake().to_string(),
            "filename": filename,
            "size": file.data.len(),
            "content_type": file.content_type,
        }));
    }
    if let Some(extra) = files.iter().find(|f| !used.contains(&f.field)) {
        if !meta.is_empty() {
            return Err(bad(&format!(
                "The file part {} has no attachment.",
                extra.field
            )));
        }
        // Without `attachments` Discord takes the parts as they come.
        for f in files {
            out.push(json!({
                "id": st.next_snowflake().to_string(),
                "filename": f.filename.clone().unwrap_or_default(),
                "size": f.data.len(),
                "content_type": f.content_type,
            }));
        }
    }
    Ok(out)
}

pub(super) fn channel_message_op(
    st: &mut St,
    method: &str,
    cid: u64,
    mid: u64,
    body: Option<&Value>,
) -> Reply {
    let Some(idx) = st
        .messages
        .iter()
        .position(|m| m.id == mid && m.channel_id == cid)
    else {
        return Reply::unknown_message();
    };
    match method {
        "GET" => Reply::json(200, st.messages[idx].value.clone()),
        "DELETE" => {
            st.messages.remove(idx);
            Reply::no_content()
        }
        "PATCH" => {
            let empty = json!({});
            let patch = body.filter(|b| b.is_object()).unwrap_or(&empty);
            if let Some(err) = validate_message(patch) {
                return err;
            }
            merge_message(&mut st.messages[idx].value, patch);
            Reply::json(200, st.messages[idx].value.clone())
        }
        _ => Reply::error(405, 0, "405: Method Not Allowed"),
    }
}

pub(super) fn interaction_callback(
    st: &mut St,
    ids: &Ids,
    iid: &str,
    token: &str,
    body: Option<&Value>,
) -> Reply {
    let known = st
        .interactions
        .get(token)
        .is_some_and(|rec| Some(rec.id) == parse_snowflake(iid));
    if !known {
        return Reply::error(404, 10062, "Unknown interaction");
    }
    if st.interactions[token].responded {
        return Reply::error(400, 40060, "Interaction has already been acknowledged.");
    }
    let Some(kind) = body.and_then(|b| b.get("type")).and_then(Value::as_u64) else {
        return invalid_form_body(json!({"type": {"_errors": [
            {"code": "BASE_TYPE_REQUIRED", "message": "This field is required"}
        ]}}));
    };
    let empty = json!({});
    let data = body
        .and_then(|b| b.get("data"))
        .filter(|d| d.is_object())
        .unwrap_or(&empty);
    if matches!(kind, 4 | 7) {
        if let Some(err) = validate_message(data) {
            return err;
        }
    }
    let (channel_id, message_id) = {
        let rec = &st.interactions[token];
        (rec.channel_id, rec.message_id)
    };
    let original = match kind {
        4 | 5 => {
            let id = st.next_snowflake();
            let mut msg = build_message(ids, id, channel_id, data, Some(ids.application_id));
            if kind == 5 {
                // A deferred reply shows "thinking" (LOADING) until @original is edited.
                let flags = msg["flags"].as_u64().unwrap_or(0) | 128;
                msg["flags"] = json!(flags);
                msg["content"] = json!("");
            }
            st.messages.push(StoredMessage {
                channel_id,
                id,
                value: msg,
            });
            Some(id)
        }
        6 => message_id,
        7 => {
            if let Some(mid) = message_id {
                if let Some(m) = st.message_mut(mid) {
                    let mut patch = data.clone();
                    if let Some(obj) = patch.as_object_mut() {
                        obj.remove("flags");
                    }
                    merge_message(&mut m.value, &patch);
                }
            }
            message_id
        }
        _ => None,
    };
    let rec = st.interactions.get_mut(token).expect("checked above");
    rec.responded = true;
    rec.original = original;
    Reply::no_content()
}

pub(super) fn webhook_op(
    st: &mut St,
    ids: &Ids,
    method: &str,
    token: &str,
    rest: &[&str],
    body: Option<&Value>,
) -> Reply {
    let Some(rec) = st.interactions.get(token) else {
        return Reply::unknown_webhook();
    };
    let (channel_id, original, responded) = (rec.channel_id, rec.original, rec.responded);
    match (method, rest) {
        ("POST", []) => {
            if !responded {
                return Reply::unknown_webhook();
            }
            let Some(body) = body.filter(|b| b.is_object()) else {
                return Reply::error(400, 50006, "Cannot send an empty message");
            };
            if let Some(err) = validate_message(body) {
                return err;
            }
            if is_empty_message(body) {
                return Reply::error(400, 50006, "Cannot send an empty message");
            }
            let id = st.next_snowflake();
            let msg = build_message(ids, id, channel_id, body, Some(ids.application_id));
            st.messages.push(StoredMessage {
                channel_id,
                id,
                value: msg.clone(),
            });
            Reply::json(200, msg)
        }
        (_, ["messages", which]) => {
            let mid = if *which == "@original" {
                original
            } else {
                parse_snowflake(which)
            };
            let Some(mid) = mid else {
                return Reply::unknown_message();
            };
            let Some(idx) = st.messages.iter().position(|m| m.id == mid) else {
                return Reply::unknown_message();
            };
            match method {
                "GET" => Reply::json(200, st.messages[idx].value.clone()),
                "DELETE" => {
                    st.messages.remove(idx);
                    Reply::no_content()
                }
                "PATCH" => {
                    let empty = json!({});
                    let patch = body.filter(|b| b.is_object()).unwrap_or(&empty);
                    if let Some(err) = validate_message(patch) {
                        return err;
                    }
                    let value = &mut st.messages[idx].value;
                    merge_message(value, patch);
                    // Editing a deferred reply ends its LOADING state.
                    if let Some(flags) = value["flags"].as_u64() {
                        value["flags"] = json!(flags & !128);
                    }
                    Reply::json(200, value.clone())
                }
                _ => Reply::error(405, 0, "405: Method Not Allowed"),
            }
        }
        _ => Reply::not_found(),
    }
}
