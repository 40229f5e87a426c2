//! The REST routes under `/api/v10/...`: recording each request, injected failures, missing
//! and forbidden channels, channel messages (create with nonces, get, edit, delete), interaction
//! callbacks and interaction webhooks (followups, `@original`), the checks Discord makes on
//! message bodies, and the JSON of the replies (messages, the bot user, the application,
//! channels).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::Response;
use serde_json::{json, Value};

use super::ratelimit::{bucket_key, check_rate_limits, hash_hex, ratelimit_headers};
use super::reply::Reply;
use super::{
    now_secs_f64, parse_snowflake, Failure, Held, Ids, NonceReuse, Recorded, RecordedFile, Shared,
    St, Stall, StoredMessage,
};

const NONCE_WINDOW: Duration = Duration::from_secs(300);
const BOT_USERNAME: &str = "askrelay-test";
const MAX_CONTENT_CHARS: usize = 2000;
const MAX_ROWS: usize = 5;
const MAX_ROW_COMPONENTS: usize = 5;
const MAX_CUSTOM_ID_CHARS: usize = 100;

pub(super) async fn rest(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_string();
    let query = uri.query().unwrap_or_default().to_string();
    let content_type = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let at = Instant::now();
    hold(&shared, method.as_str(), &path).await;
    let files = multipart_files(&body, &content_type);
    let body = parse_body(&body, &content_type);
    let recorded_headers = headers
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_ascii_lowercase(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    let reply = {
        let mut st = shared.lock();
        let reply = handle_rest(
            &mut st,
            &shared.ids,
            method.as_str(),
            &path,
            body.as_ref(),
            &files,
        );
        st.requests.push(Recorded {
            method: method.as_str().to_string(),
            path,
            query,
            body,
            files,
            status: reply.status,
            headers: recorded_headers,
            at,
        });
        reply
    };
    shared.bump();
    reply.into_response()
}

/// Holds the request when a stall rule matches it (see `StandIn::stall_next`).
async fn hold(shared: &Arc<Shared>, method: &str, path: &str) {
    let (stall, releases) = {
        let mut st = shared.lock();
        let Some(i) = st.stalls.iter().position(|r| {
            (r.method.is_empty() || r.method == "*" || r.method.eq_ignore_ascii_case(method))
                && path.contains(&r.path_contains)
        }) else {
            return;
        };
        let stall = st.stalls[i].stall;
        st.stalls[i].remaining -= 1;
        if st.stalls[i].remaining == 0 {
            st.stalls.remove(i);
        }
        st.held.push(Held {
            method: method.to_owned(),
            path: path.to_owned(),
            at: Instant::now(),
        });
        (stall, st.releases)
    };
    shared.bump();
    match stall {
        Stall::For(d) => tokio::time::sleep(d).await,
        Stall::UntilReleased => {
            let mut version = shared.version.subscribe();
            while shared.lock().releases == releases {
                if version.changed().await.is_err() {
                    return;
                }
            }
        }
    }
}

fn parse_body(bytes: &[u8], content_type: &str) -> Option<Value> {
    if bytes.is_empty() {
        return None;
    }
    if let Ok(v) = serde_json::from_slice::<Value>(bytes) {
        return Some(v);
    }
    let text = String::from_utf8_lossy(bytes);
    if content_type.starts_with("multipart/") {
        if let Some(v) = multipart_payload_json(&text) {
            return Some(v);
        }
    }
    Some(Value::String(text.into_owned()))
}

fn multipart_payload_json(text: &str) -> Option<Value> {
    let at = text.find("name=\"payload_json\"")?;
    let rest = &text[at..];
    let start = rest.find("\r\n\r\n")? + 4;
    let rest = &rest[start..];
    let end = rest.find("\r\n--").unwrap_or(rest.len());
    serde_json::from_str(&rest[..end]).ok()
}

/// The file parts of a multipart body (every part with a filename), split on the boundary of
/// its content type; empty for any other body.
fn multipart_files(bytes: &[u8], content_type: &str) -> Vec<RecordedFile> {
    let Some(boundary) = content_type
        .strip_prefix("multipart/form-data")
        .and_then(|rest| {
            rest.split(';')
                .find_map(|p| p.trim().strip_prefix("boundary="))
        })
        .map(|b| b.trim_matches('"'))
    else {
        return Vec::new();
    };
    let delimiter = format!("--{boundary}").into_bytes();
    let mut parts = Vec::new();
    let mut rest = bytes;
    while let Some(at) = find(rest, &delimiter) {
        rest = &rest[at + delimiter.len()..];
        if rest.starts_with(b"--") {
            break;
        }
        let rest_part = rest.strip_prefix(b"\r\n").unwrap_or(rest);
        let Some(head_end) = find(rest_part, b"\r\n\r\n") else {
            break;
        };
        let head = String::from_utf8_lossy(&rest_part[..head_end]).into_owned();
        let after = &rest_part[head_end + 4..];
        let end = find(after, &[b"\r\n".as_slice(), &delimiter].concat()).unwrap_or(after.len());
        let data = after[..end].to_vec();
        rest = &after[end..];
        let param = |name: &str| {
            let key = format!("{name}=\"");
            head.find(&key).and_then(|i| {
                let v = &head[i + key.len()..];
                v.find('"').map(|j| v[..j].to_owned())
            })
        };
        let content_type = head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case("content-type")
                .then(|| v.trim().to_owned())
        });
        if let (Some(field), Some(filename)) = (param(" name"), param("filename")) {
            parts.push(RecordedFile {
                field,
                filename: Some(filename),
                content_type,
                data,
            });
        }
    }
    parts
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn strip_api_prefix(path: &str) -> &str {
    if let Some(rest) = path.strip_prefix("/api/v") {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 {
            return &rest[digits..];
        }
    }
    path.strip_prefix("/api").unwrap_or(path)
}

fn handle_rest(
    st: &mut St,
    ids: &Ids,
    method: &str,
    path: &str,
    body: Option<&Value>,
    files: &[RecordedFile],
) -> Reply {
    if let Some(failure) = take_failure(st, method, path) {
        return failure_reply(&failure, path);
    }
    let route = strip_api_prefix(path);
    let segs: Vec<&str> = route.split('/').filter(|s| !s.is_empty()).collect();
    let limited_headers = match check_rate_limits(st, method, &segs) {
        Ok(h) => h,
        Err(reply) => return reply,
    };

    if segs.first() == Some(&"channels") {
        match segs.get(1).and_then(|s| parse_snowflake(s)) {
            None => return Reply::error(404, 10003, "Unknown Channel"),
            Some(cid) if st.missing.contains(&cid) => {
                return Reply::error(404, 10003, "Unknown Channel")
            }
            Some(cid) if st.forbidden.contains(&cid) => {
                return Reply::error(403, 50001, "Missing Access")
            }
            Some(_) => {}
        }
    }

    let mut reply = match (method, segs.as_slice()) {
        ("GET", ["gateway"]) => Reply::json(200, json!({"url": ids.gateway_url})),
        ("GET", ["gateway", "bot"]) => Reply::json(
            200,
            json!({
                "url": ids.gateway_url,
                "shards": 1,
                "session_start_limit": {
                    "total": 1000, "remaining": 999, "reset_after": 86_400_000u64, "max_concurrency": 1
                }
            }),
        ),
        ("GET", ["users", "@me"]) => {
            let mut user = bot_user_json(ids);
            user["verified"] = json!(true);
            user["mfa_enabled"] = json!(false);
            user["email"] = Value::Null;
            user["locale"] = json!("en-US");
            Reply::json(200, user)
        }
        ("GET", ["oauth2", "applications", "@me"]) | ("GET", ["applications", "@me"]) => {
            Reply::json(200, application_json(ids))
        }
        ("POST", ["users", "@me", "channels"]) => {
            let user = body
                .and_then(|b| b.get("recipient_id"))
                .and_then(|r| match r {
                    Value::String(s) => parse_snowflake(s),
                    other => other.as_u64(),
                });
            match user {
                None => form_error(
                    &["recipient_id"],
                    "BASE_TYPE_REQUIRED",
                    "This field is required",
                ),
                Some(user) => {
                    let cid = match st.dms.get(&user) {
                        Some(&c) => c,
                        None => {
                            let c = st.next_snowflake();
                            st.dms.insert(user, c);
                            c
                        }
                    };
                    Reply::json(200, dm_channel_json(cid, user))
                }
            }
        }
        ("PUT", ["applications", app, "commands"])
            if parse_snowflake(app) == Some(ids.application_id) =>
        {
            overwrite_commands(st, ids, None, body)
        }
        ("PUT", ["applications", app, "guilds", guild, "commands"])
            if parse_snowflake(app) == Some(ids.application_id) =>
        {
            overwrite_commands(st, ids, parse_snowflake(guild), body)
        }
        ("GET", ["channels", cid]) if st.dms.values().any(|&c| Some(c) == parse_snowflake(cid)) => {
            let cid = parse_snowflake(cid).unwrap_or_default();
            let user = st
                .dms
                .iter()
                .find(|(_, &c)| c == cid)
                .map(|(&u, _)| u)
                .unwrap_or_default();
            Reply::json(200, dm_channel_json(cid, user))
        }
        ("GET", ["channels", cid]) => {
            let cid = parse_snowflake(cid).unwrap_or_default();
            let last = st
                .messages
                .iter()
                .rev()
                .find(|m| m.channel_id == cid)
                .map(|m| m.id);
            Reply::json(200, channel_json(ids, cid, last))
        }
        ("POST", ["channels", _, "typing"]) => Reply::no_content(),
        ("POST", ["channels", cid, "messages"]) => {
            let cid = parse_snowflake(cid).unwrap_or_default();
            create_channel_message(st, ids, cid, body, files)
        }
        ("GET", ["channels", cid, "messages"]) => {
            let cid = parse_snowflake(cid).unwrap_or_default();
            let list: Vec<Value> = st
                .messages
                .iter()
                .rev()
                .filter(|m| m.channel_id == cid)
                .map(|m| m.value.clone())
                .collect();
            Reply::json(200, Value::Array(list))
        }
        (_, ["channels", cid, "messages", mid]) => {
            let cid = parse_snowflake(cid).unwrap_or_default();
            match parse_snowflake(mid) {
                Some(mid) => channel_message_op(st, method, cid, mid, body),
                None => Reply::unknown_message(),
            }
        }
        ("POST", ["interactions", iid, token, "callback"]) => {
            interaction_callback(st, ids, iid, token, body)
        }
        (_, ["webhooks", app, token, rest @ ..]) => {
            if parse_snowflake(app) != Some(ids.application_id) {
                Reply::unknown_webhook()
            } else {
                webhook_op(st, ids, method, token, rest, body)
            }
        }
        _ => Reply::not_found(),
    };
    if reply.status < 300 {
        match limited_headers {
            Some(h) => reply.headers.extend(h),
            None => reply
                .headers
                .extend(ratelimit_headers(&bucket_key(method, &segs))),
        }
    }
    reply
}

fn take_failure(st: &mut St, method: &str, path: &str) -> Option<Failure> {
    let idx = st.failures.iter().position(|r| {
        (r.method.is_empty() || r.method == "*" || r.method.eq_ignore_ascii_case(method))
            && path.contains(&r.path_contains)
    })?;
    let rule = &mut st.failures[idx];
    let failure = rule.failure.clone();
    rule.remaining -= 1;
    if rule.remaining == 0 {
        st.failures.remove(idx);
    }
    Some(failure)
}

fn failure_reply(failure: &Failure, path: &str) -> Reply {
    match *failure {
        Failure::RateLimited {
            retry_after_secs,
            global,
        } => {
            let reset = now_secs_f64() + retry_after_secs;
            let mut headers = vec![
                ("retry-after".to_string(), format!("{retry_after_secs}")),
                (
                    "x-ratelimit-scope".to_string(),
                    if global { "global" } else { "user" }.to_string(),
                ),
                ("x-ratelimit-limit".to_string(), "5".to_string()),
                ("x-ratelimit-remaining".to_string(), "0".to_string()),
                ("x-ratelimit-reset".to_string(), format!("{reset:.3}")),
                (
                    "x-ratelimit-reset-after".to_string(),
                    format!("{retry_after_secs:.3}"),
                ),
                ("x-ratelimit-bucket".to_string(), hash_hex(path)),
            ];
            if global {
                headers.push(("x-ratelimit-global".to_string(), "true".to_string()));
            }
            Reply {
                status: 429,
                body: Some(json!({
                    "message": "You are being rate limited.",
                    "retry_after": retry_after_secs,
                    "global": global,
                })),
                headers,
            }
        }
        Failure::Status(code) => {
            let body = match code {
                400 => json!({"message": "400: Bad Request", "code": 0}),
                401 => json!({"message": "401: Unauthorized", "code": 0}),
                403 => json!({"message": "Missing Permissions", "code": 50013}),
                404 => json!({"message": "404: Not Found", "code": 0}),
                _ => {
                    let reason = StatusCode::from_u16(code)
                        .ok()
                        .and_then(|s| s.canonical_reason())
                        .unwrap_or("Error");
                    json!({"message": format!("{code}: {reason}"), "code": 0})
                }
            };
            Reply::json(code, body)
        }
    }
}

fn create_channel_message(
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
fn note_nonce(st: &mut St, cid: u64, body: &Value, id: u64) {
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
fn uploaded_attachments(
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

fn channel_message_op(
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

fn interaction_callback(
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

fn webhook_op(
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

fn invalid_form_body(errors: Value) -> Reply {
    Reply::json(
        400,
        json!({"message": "Invalid Form Body", "code": 50035, "errors": errors}),
    )
}

fn form_error(path: &[&str], code: &str, message: &str) -> Reply {
    let mut errors = json!({"_errors": [{"code": code, "message": message}]});
    for key in path.iter().rev() {
        let mut wrapper = serde_json::Map::new();
        wrapper.insert((*key).to_string(), errors);
        errors = Value::Object(wrapper);
    }
    invalid_form_body(errors)
}

/// The checks Discord makes that the OpenAPI spec does not (see docs/contract.md, "Discord limits").
fn validate_message(body: &Value) -> Option<Reply> {
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

fn is_empty_message(body: &Value) -> bool {
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

fn normalize_embeds(embeds: Option<&Value>) -> Value {
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

fn build_message(ids: &Ids, id: u64, cid: u64, body: &Value, webhook_app: Option<u64>) -> Value {
    let mut msg = json!({
        "type": 0,
        "content": body.get("content").and_then(Value::as_str).unwrap_or_default(),
        "mentions": [],
        "mention_roles": [],
        "attachments": [],
        "embeds": normalize_embeds(body.get("embeds")),
        "timestamp": now_timestamp(),
        "edited_timestamp": null,
        "flags": body.get("flags").and_then(Value::as_u64).unwrap_or(0),
        "components": body.get("components").filter(|c| c.is_array()).cloned().unwrap_or_else(|| json!([])),
        "id": id.to_string(),
        "channel_id": cid.to_string(),
        "author": bot_user_json(ids),
        "pinned": false,
        "mention_everyone": false,
        "tts": body.get("tts").and_then(Value::as_bool).unwrap_or(false),
    });
    if let Some(nonce) = body.get("nonce").filter(|n| !n.is_null()) {
        msg["nonce"] = nonce.clone();
    }
    if let Some(reference) = body.get("message_reference").filter(|r| r.is_object()) {
        let mut reference = reference.clone();
        if reference.get("channel_id").is_none_or(Value::is_null) {
            reference["channel_id"] = json!(cid.to_string());
        }
        reference["type"] = json!(0);
        msg["message_reference"] = reference;
        msg["type"] = json!(19);
    }
    if let Some(app) = webhook_app {
        msg["webhook_id"] = json!(app.to_string());
        msg["application_id"] = json!(app.to_string());
    }
    msg
}

/// Applies an edit: only the fields Discord lets you edit; `null` clears.
fn merge_message(msg: &mut Value, patch: &Value) {
    for key in ["content", "embeds", "components", "flags", "tts"] {
        let Some(v) = patch.get(key) else { continue };
        msg[key] = match (key, v) {
            ("content", Value::Null) => json!(""),
            ("embeds", Value::Null) | ("components", Value::Null) => json!([]),
            ("flags", Value::Null) => json!(0),
            ("embeds", v) => normalize_embeds(Some(v)),
            _ => v.clone(),
        };
    }
    if let Some(attachments) = patch.get("attachments").and_then(Value::as_array) {
        if attachments.is_empty() {
            msg["attachments"] = json!([]);
        }
    }
    msg["edited_timestamp"] = json!(now_timestamp());
}

pub(super) fn bot_user_json(ids: &Ids) -> Value {
    json!({
        "id": ids.bot_user_id.to_string(),
        "username": BOT_USERNAME,
        "discriminator": "0",
        "global_name": null,
        "avatar": null,
        "bot": true,
        "public_flags": 0,
        "flags": 0,
        "banner": null,
        "accent_color": null,
        "avatar_decoration_data": null,
        "primary_guild": null,
        "collectibles": null,
    })
}

fn application_json(ids: &Ids) -> Value {
    json!({
        "id": ids.application_id.to_string(),
        "name": BOT_USERNAME,
        "icon": null,
        "description": "",
        "summary": "",
        "type": null,
        "bot_public": false,
        "bot_require_code_grant": false,
        "verify_key": "0".repeat(64),
        "flags": 0,
        "owner": {
            "id": "1180000000000000009",
            "username": "owner",
            "discriminator": "0",
            "global_name": null,
            "avatar": null,
            "public_flags": 0,
            "flags": 0,
        },
        "team": null,
        "bot": bot_user_json(ids),
        "rpc_origins": [],
        "redirect_uris": [],
        "interactions_endpoint_url": null,
        "role_connections_verification_url": null,
        "tags": [],
        "approximate_guild_count": 1,
        "approximate_user_install_count": 0,
    })
}

fn channel_json(ids: &Ids, cid: u64, last_message_id: Option<u64>) -> Value {
    json!({
        "id": cid.to_string(),
        "type": 0,
        "guild_id": ids.guild_id.to_string(),
        "name": format!("channel-{cid}"),
        "position": 0,
        "permission_overwrites": [],
        "parent_id": null,
        "topic": null,
        "nsfw": false,
        "last_message_id": last_message_id.map(|m| m.to_string()),
        "rate_limit_per_user": 0,
        "flags": 0,
    })
}

/// Bulk-overwrites the application's commands (globally, or in one guild): answers them with
/// ids, as Discord does, keeping the ids of commands that keep their name.
fn overwrite_commands(st: &mut St, ids: &Ids, guild: Option<u64>, body: Option<&Value>) -> Reply {
    let Some(list) = body.and_then(Value::as_array) else {
        return form_error(
            &[],
            "ARRAY_TYPE_CONVERT",
            "Only iterables may be used in a ListType",
        );
    };
    let mut out = Vec::new();
    for c in list {
        let name = c["name"].as_str().unwrap_or_default().to_owned();
        let id = match st.commands.get(&(guild, name.clone())) {
            Some(id) => *id,
            None => {
                let id = st.next_snowflake();
                st.commands.insert((guild, name.clone()), id);
                id
            }
        };
        let mut cmd = c.clone();
        cmd["id"] = json!(id.to_string());
        cmd["application_id"] = json!(ids.application_id.to_string());
        cmd["version"] = json!(id.to_string());
        if cmd.get("type").is_none() {
            cmd["type"] = json!(1);
        }
        if let Some(g) = guild {
            cmd["guild_id"] = json!(g.to_string());
        }
        if cmd.get("default_member_permissions").is_none() {
            cmd["default_member_permissions"] = Value::Null;
        }
        out.push(cmd);
    }
    Reply::json(200, Value::Array(out))
}

/// A DM channel with `user`, as Discord returns it (type 1, no guild).
fn dm_channel_json(cid: u64, user: u64) -> Value {
    json!({
        "id": cid.to_string(),
        "type": 1,
        "last_message_id": null,
        "flags": 0,
        "recipients": [crate::fixtures::user_json(user, &format!("user-{user}"))],
    })
}

fn now_timestamp() -> String {
    serenity::model::Timestamp::now()
        .to_rfc3339()
        .unwrap_or_else(|| "2025-01-01T00:00:00.000000+00:00".to_string())
}
