//! The REST routes under `/api/v10/...`: recording each request (with its multipart files),
//! holds and injected failures, missing and forbidden channels, and routing each request to
//! what answers it: channel messages and interactions (`messages.rs`), checked as Discord checks
//! message bodies (`checks.rs`), with the JSON of the replies (`json.rs`: messages, the bot user,
//! the application, channels).

use std::sync::Arc;
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::Response;
use serde_json::{json, Value};

use super::checks::form_error;
use super::json::{
    application_json, bot_user_json, channel_json, dm_channel_json, overwrite_commands,
};
use super::messages::{
    channel_message_op, create_channel_message, interaction_callback, webhook_op,
};
use super::ratelimit::{bucket_key, check_rate_limits, hash_hex, ratelimit_headers};
use super::reply::Reply;
use super::{
    now_secs_f64, parse_snowflake, Failure, Held, Ids, Recorded, RecordedFile, Shared, St, Stall,
    Thread,
};

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
        ("POST", ["channels", cid, "threads"]) => {
            let parent = parse_snowflake(cid).unwrap_or_default();
            let name = body.and_then(|b| b["name"].as_str()).unwrap_or_default();
            let chars = name.chars().count();
            if chars == 0 || chars > 100 {
                return form_error(
                    &["name"],
                    "BASE_TYPE_BAD_LENGTH",
                    "Must be between 1 and 100 in length.",
                );
            }
            let id = st.next_snowflake();
            st.threads.push(Thread {
                id,
                parent,
                name: name.to_owned(),
            });
            let mut thread = channel_json(ids, id, None);
            thread["type"] = json!(body.and_then(|b| b["type"].as_u64()).unwrap_or(11));
            thread["name"] = json!(name);
            thread["parent_id"] = json!(parent.to_string());
            thread["owner_id"] = json!(ids.bot_user_id.to_string());
            thread["member_count"] = json!(1);
            thread["message_count"] = json!(0);
            thread["thread_metadata"] = json!({
                "archived": false,
                "auto_archive_duration": body
                    .and_then(|b| b["auto_archive_duration"].as_u64())
                    .unwrap_or(4320),
                "archive_timestamp": "2026-01-01T00:00:00.000000+00:00",
                "locked": false,
            });
            Reply::json(201, thread)
        }
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
