//! What stands in front of every HTTP request but the Socket Mode upgrade: which method it is
//! (`/api/METHOD`, an upload URL, a response_url), its parameters (JSON body, form or query, the
//! token taken out), the stall and failure rules, the token check and the rate limits, then
//! [`super::methods`] for the answer, and the record of it all.

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, Uri};
use axum::response::Response;
use serde_json::{json, Map, Value};
use std::time::{Duration, Instant};

use super::methods;
use super::{Auth, Ctx, Encoding, Recorded, Shared, SlackFailure, St, APP_TOKEN, BOT_TOKEN};

/// Parameters that Slack takes as JSON text inside a form, decoded for the record and the checks.
const JSON_PARAMS: &[&str] = &["blocks", "attachments", "view", "files", "metadata"];

/// An answer: status, body, headers.
pub(super) struct Reply {
    pub(super) status: u16,
    /// JSON, or `Err(text)` for a plain-text body.
    pub(super) body: Result<Value, String>,
    pub(super) headers: Vec<(String, String)>,
}

impl Reply {
    /// `{"ok":true, …fields}`.
    pub(super) fn ok(fields: Value) -> Reply {
        let mut body = json!({"ok": true});
        if let (Some(b), Value::Object(f)) = (body.as_object_mut(), fields) {
            b.extend(f);
        }
        Reply::json(200, body)
    }

    /// `{"ok":false,"error":code}`, HTTP 200, as Slack answers a method's errors.
    pub(super) fn error(code: &str) -> Reply {
        Reply::json(200, json!({"ok": false, "error": code}))
    }

    /// An error with more fields (`errors`, `response_metadata`).
    pub(super) fn error_with(code: &str, fields: Value) -> Reply {
        let mut r = Reply::error(code);
        if let (Ok(Value::Object(b)), Value::Object(f)) = (&mut r.body, fields) {
            b.extend(f);
        }
        r
    }

    pub(super) fn json(status: u16, body: Value) -> Reply {
        Reply {
            status,
            body: Ok(body),
            headers: Vec::new(),
        }
    }

    pub(super) fn text(status: u16, text: &str) -> Reply {
        Reply {
            status,
            body: Err(text.to_owned()),
            headers: Vec::new(),
        }
    }

    /// 429 with `Retry-After` (whole seconds) and Slack's body.
    pub(super) fn rate_limited(retry_after_secs: u64) -> Reply {
        let mut r = Reply::json(429, json!({"ok": false, "error": "ratelimited"}));
        r.headers
            .push(("retry-after".to_owned(), retry_after_secs.to_string()));
        r
    }

    fn into_response(self) -> Response {
        let mut builder = Response::builder().status(self.status);
        for (k, v) in &self.headers {
            builder = builder.header(k.as_str(), v.as_str());
        }
        let response = match self.body {
            Ok(body) => builder
                .header("content-type", "application/json; charset=utf-8")
                .body(Body::from(body.to_string())),
            Err(text) => builder
                .header("content-type", "text/plain; charset=utf-8")
                .body(Body::from(text)),
        };
        response.expect("slack stand-in: building a response")
    }
}

/// What a request is for.
pub(super) enum Target {
    /// `/api/METHOD`
    Api(String),
    /// `/upload/FILE_ID`: the URL `files.getUploadURLExternal` hands out.
    Upload(String),
    /// `/response/TOKEN`: an interaction's response_url.
    ResponseUrl(String),
    Unknown,
}

impl Target {
    fn of(path: &str) -> Target {
        let one = |prefix: &str| {
            path.strip_prefix(prefix)
                .filter(|rest| !rest.is_empty() && !rest.contains('/'))
                .map(str::to_owned)
        };
        if let Some(m) = one("/api/") {
            Target::Api(m)
        } else if let Some(f) = one("/upload/") {
            Target::Upload(f)
        } else if let Some(t) = one("/response/") {
            Target::ResponseUrl(t)
        } else {
            Target::Unknown
        }
    }

    /// The name the record and the rules use.
    fn method(&self) -> String {
        match self {
            Target::Api(m) => m.clone(),
            Target::Upload(_) => "upload".to_owned(),
            Target::ResponseUrl(_) => "response_url".to_owned(),
            Target::Unknown => "unknown".to_owned(),
        }
    }
}

/// One call, as the methods see it.
pub(super) struct Call<'a> {
    pub(super) method: &'a str,
    pub(super) params: &'a Value,
    pub(super) bytes: Option<&'a [u8]>,
    /// `http://127.0.0.1:PORT` or `https://…`: the base of the URLs handed out.
    pub(super) base: String,
    pub(super) tls: bool,
}

impl Call<'_> {
    pub(super) fn str(&self, key: &str) -> Option<&str> {
        self.params.get(key).and_then(Value::as_str)
    }
}

pub(super) async fn handle(
    State(ctx): State<Ctx>,
    http_method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let at = Instant::now();
    let path = uri.path().to_owned();
    let target = Target::of(&path);
    let method = target.method();
    let content_type = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_ascii_lowercase();
    let (mut params, encoding, bytes) = parse_params(uri.query(), &body, &content_type, &target);
    let bearer = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_owned);
    // Slack also takes the token as a parameter; it is never recorded.
    let param_token = params
        .as_object_mut()
        .and_then(|p| p.remove("token"))
        .and_then(|t| t.as_str().map(str::to_owned));
    let auth = match bearer.or(param_token).as_deref() {
        None | Some("") => Auth::None,
        Some(BOT_TOKEN) => Auth::Bot,
        Some(APP_TOKEN) => Auth::App,
        Some(_) => Auth::Invalid,
    };
    let recorded_headers = headers
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "authorization" | "cookie"))
        .map(|(k, v)| {
            (
                k.as_str().to_ascii_lowercase(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();

    hold(&ctx.shared, &method).await;

    let reply = {
        let mut st = ctx.shared.lock();
        let call = Call {
            method: &method,
            params: &params,
            bytes: bytes.as_deref(),
            base: ctx.shared.http_base(ctx.tls),
            tls: ctx.tls,
        };
        let reply = answer(&mut st, &call, &target, auth);
        st.requests.push(Recorded {
            method: method.clone(),
            http_method: http_method.as_str().to_owned(),
            path,
            params: params.clone(),
            encoding,
            bytes,
            headers: recorded_headers,
            auth,
            tls: ctx.tls,
            status: reply.status,
            reply: reply.body.clone().unwrap_or(Value::Null),
            at,
        });
        reply
    };
    ctx.shared.bump();
    reply.into_response()
}

/// The rules, the token, the rate limits, then the method.
fn answer(st: &mut St, call: &Call, target: &Target, auth: Auth) -> Reply {
    let lost = match take_failure(st, call.method) {
        Some(SlackFailure::RateLimited { retry_after_secs }) => {
            return Reply::rate_limited(retry_after_secs)
        }
        Some(SlackFailure::Error(code)) => return Reply::error(&code),
        Some(SlackFailure::Status(status)) => {
            return Reply::text(status, "stand-in: injected failure")
        }
        Some(SlackFailure::LostReply(status)) => Some(status),
        None => None,
    };
    let reply = serve(st, call, target, auth);
    match lost {
        Some(status) => Reply::text(status, "stand-in: the answer was lost after the call"),
        None => reply,
    }
}

/// The token, the rate limits, then the method.
fn serve(st: &mut St, call: &Call, target: &Target, auth: Auth) -> Reply {
    match target {
        Target::Api(m) => {
            let wanted = if m == "apps.connections.open" {
                Auth::App
            } else {
                Auth::Bot
            };
            match (auth, wanted) {
                (Auth::None, _) => return Reply::error("not_authed"),
                (Auth::Invalid, _) => return Reply::error("invalid_auth"),
                (have, want) if have != want => return Reply::error("not_allowed_token_type"),
                _ => {}
            }
            if let Some(retry_after) = over_rate_limit(st, m, call.params) {
                st.rate_limited += 1;
                return Reply::rate_limited(retry_after);
            }
            methods::api(st, call, m)
        }
        Target::Upload(file_id) => methods::upload(st, call, file_id),
        Target::ResponseUrl(token) => methods::response_url(st, call, token),
        Target::Unknown => Reply::text(404, "Not Found"),
    }
}

/// Holds the call while a stall rule matches it, until `release_stalls`.
async fn hold(shared: &Shared, method: &str) {
    let releases = {
        let mut st = shared.lock();
        let Some(i) = st
            .stalls
            .iter()
            .position(|r| r.method == "*" || r.method == method)
        else {
            return;
        };
        st.stalls[i].remaining -= 1;
        if st.stalls[i].remaining == 0 {
            st.stalls.remove(i);
        }
        st.held.push(method.to_owned());
        st.releases
    };
    shared.bump();
    let mut version = shared.version.subscribe();
    while shared.lock().releases == releases {
        if version.changed().await.is_err() {
            return;
        }
    }
}

fn take_failure(st: &mut St, method: &str) -> Option<SlackFailure> {
    let i = st
        .failures
        .iter()
        .position(|r| r.method == "*" || r.method == method)?;
    let rule = &mut st.failures[i];
    let failure = rule.failure.clone();
    rule.remaining -= 1;
    if rule.remaining == 0 {
        st.failures.remove(i);
    }
    Some(failure)
}

/// The tier of each method the stand-in serves, from its page on api.slack.com/methods.
fn tier(method: &str) -> Option<usize> {
    Some(match method {
        "apps.connections.open" => 1,
        "usergroups.users.list" => 2,
        "chat.update"
        | "chat.delete"
        | "conversations.open"
        | "conversations.info"
        | "conversations.history"
        | "conversations.replies" => 3,
        "auth.test"
        | "chat.postEphemeral"
        | "views.open"
        | "views.update"
        | "users.info"
        | "files.getUploadURLExternal"
        | "files.completeUploadExternal" => 4,
        _ => return None,
    })
}

/// When the call is over its limit, the seconds until its window closes (at least 1).
fn over_rate_limit(st: &mut St, method: &str, params: &Value) -> Option<u64> {
    let limits = st.rate_limits.clone()?;
    let (key, limit, window) = if method == "chat.postMessage" {
        let channel = params.get("channel").and_then(Value::as_str)?;
        (
            format!("{method} {channel}"),
            limits.post_message_per_channel_per_second,
            Duration::from_secs(1),
        )
    } else {
        let tier = tier(method)?;
        (
            method.to_owned(),
            limits.tiers_per_minute[tier - 1],
            Duration::from_secs(60),
        )
    };
    let now = tokio::time::Instant::now();
    let entry = st.windows.entry(key).or_insert((now, 0));
    if now.duration_since(entry.0) >= window {
        *entry = (now, 0);
    }
    if entry.1 >= limit {
        let left = window.saturating_sub(now.duration_since(entry.0));
        return Some(left.as_secs_f64().ceil().max(1.0) as u64);
    }
    entry.1 += 1;
    None
}

/// The parameters of a request as one JSON object, how they came, and an upload's bytes.
fn parse_params(
    query: Option<&str>,
    body: &[u8],
    content_type: &str,
    target: &Target,
) -> (Value, Encoding, Option<Vec<u8>>) {
    let mut params = Map::new();
    if let Some(q) = query {
        params.extend(form_map(q.as_bytes()));
    }
    if matches!(target, Target::Upload(_)) {
        let encoding = if body.is_empty() {
            Encoding::Empty
        } else {
            Encoding::Binary
        };
        return (Value::Object(params), encoding, Some(body.to_vec()));
    }
    let encoding = if body.is_empty() {
        if params.is_empty() {
            Encoding::Empty
        } else {
            Encoding::Query
        }
    } else if content_type.starts_with("application/x-www-form-urlencoded") {
        params.extend(form_map(body));
        Encoding::Form
    } else {
        match serde_json::from_slice::<Value>(body) {
            Ok(Value::Object(o)) => {
                params.extend(o);
                Encoding::Json
            }
            Ok(other) => {
                params.insert("_body".to_owned(), other);
                Encoding::Json
            }
            Err(_) => {
                // Neither declared a form nor JSON: read it as a form, as Slack does.
                params.extend(form_map(body));
                Encoding::Form
            }
        }
    };
    (Value::Object(params), encoding, None)
}

fn form_map(bytes: &[u8]) -> Map<String, Value> {
    url::form_urlencoded::parse(bytes)
        .map(|(k, v)| {
            let v = if JSON_PARAMS.contains(&k.as_ref()) {
                serde_json::from_str(&v).unwrap_or(Value::String(v.into_owned()))
            } else {
                Value::String(v.into_owned())
            };
            (k.into_owned(), v)
        })
        .collect()
}
