//! A stand-in for Slack, for tests: the Web API under `/api/`, Socket Mode at `/socket`, the
//! upload URLs and the `response_url`s it hands out, all on one 127.0.0.1 port, over plain HTTP
//! and ws:// or over TLS (https:// and wss://, see [`install_test_ca`]).
//!
//! Point slack-morphism's production connector (https-only, HTTP/2-only) at it, after
//! [`install_test_ca`]: `SlackClientHyperConnector::new()?.with_slack_api_url(&standin.https_api_base())`;
//! or an http-capable connector (`with_connector`, which needs hyper-util, not a dependency of
//! askrelay) at [`SlackStandIn::api_base`]. The bot token is [`BOT_TOKEN`] and the app token
//! (Socket Mode) [`APP_TOKEN`]; `apps.connections.open` hands out
//! `wss://127.0.0.1:PORT/socket?ticket=…` (ws:// when asked in clear text), and the upload URLs
//! and response_urls follow the scheme too.
//!
//! Every wait in here is event-driven (a `watch` channel bumped on each state change) and gives
//! up with a panic that describes the stand-in's state after 30 s, so a broken test never hangs.
//!
//! Behaviour worth knowing when writing tests:
//! - The Web API answers as Slack does: HTTP 200 with `{"ok":false,"error":"…"}` for a method's
//!   errors (`not_authed` without a token, `invalid_auth` for a wrong one, `not_allowed_token_type`
//!   for the app token on a bot method and the other way round), 429 with `Retry-After` when
//!   rate-limited. JSON bodies, form-encoded bodies and query strings are all read; the record
//!   holds the parameters as JSON either way (a form's `blocks`, `view`, … decoded from their JSON
//!   strings), without the token.
//! - Channels must exist: [`DEFAULT_CHANNEL`] does, [`SlackStandIn::add_channel`] adds others,
//!   `conversations.open` makes DMs (`D…`); anything else is `channel_not_found`.
//! - `chat.postMessage` posts every time: a `client_msg_id` is recorded but de-duplicates
//!   nothing, as Slack documents no such thing for the Web API. A post's `metadata` must have
//!   Slack's shape (`event_type`, `event_payload`); `conversations.history` and
//!   `conversations.replies` return it only with `include_all_metadata`.
//!   [`SlackFailure::LostReply`] makes a call take effect and then lose its answer.
//! - A `chat.postMessage` with a `thread_ts` must reply to a message of that channel that starts
//!   a thread (not a reply itself); anything else is a violation, refused with
//!   `thread_not_found`. The reply keeps its `thread_ts` ([`SlackStandIn::thread`] lists them).
//! - Every body that breaks a Block Kit or message limit (`limits.rs`) gets Slack's answer
//!   (`invalid_blocks`, `invalid_arguments`, `no_text`, …) and is recorded as a [`Violation`], as
//!   is a `blocks` array or view that slack-morphism's own types do not model. When the last handle
//!   on the stand-in is dropped, a recorded violation fails the test (unless the test said
//!   [`SlackStandIn::allow_violations`]); [`SlackStandIn::assert_no_violations`] fails it at once.
//! - Interactions are sent with the stand-in's current copy of the message or view they come
//!   from ([`SlackStandIn::click`], [`SlackStandIn::submit_view`], …), with a `trigger_id` it
//!   remembers (`views.open` with it: unknown → `invalid_trigger_id`, older than 3 s on tokio's
//!   clock → `expired_trigger_id`, used twice → `exchanged_trigger_id`) and a `response_url` that
//!   points at it. An action on a message (or an ephemeral one) carries its `state.values`, as
//!   Slack's client sends them: every `static_select` and `multi_static_select` with what that
//!   person picked in it (kept per message and person until the message's blocks change), else
//!   its initial option(s).
//! - A slash command's ack with a payload is the command's reply, as Slack takes it: checked as a
//!   message body (its `blocks` too), then shown to the user who ran it (an [`Ephemeral`] `via`
//!   `ack`), or in the channel with `response_type: in_channel`.
//! - Envelopes go to the newest live Socket Mode connection; a connection stops being live when
//!   it is sent a `disconnect` or dropped, and the client must come back through a new
//!   `apps.connections.open` (tickets are single-use).
//! - After [`SlackStandIn::deliver_over_http`] (the daemon's `slack.mode = "http"`), envelopes
//!   go to the app's Request URL over HTTP instead, signed as Slack signs them
//!   (`X-Slack-Request-Timestamp`, `X-Slack-Signature`; [`deliver`]): an interaction as the form
//!   field `payload`, a slash command as form fields, an event as JSON. The response is the ack,
//!   recorded with the others (connection 0; its JSON body, if any, the payload) and applied the
//!   same way (a `response_action`, a command's reply), so [`SlackStandIn::click`],
//!   [`SlackStandIn::wait_ack`] and the rest work unchanged; a status other than 200 is no ack
//!   ([`SlackStandIn::http_failures`]). Redelivery is Socket Mode's alone.
//!
//! The code is split by role: [`server`] (the port: plain and TLS), [`web`] (recording, tokens,
//! failures, stalls and rate limits in front of every HTTP request), [`methods`] (what each Web API
//! method, upload URL and response_url does), [`socket`] (Socket Mode), [`deliver`] (the same
//! over HTTP), [`interact`] (sending interactions built by [`fixtures`]), [`blocks`] (the Block Kit checks, reading [`limits`]) and
//! [`json`] (the JSON of the replies); [`realtime`] keeps the waits' deadlines on the wall clock,
//! so that they hold under a paused tokio clock. This file holds the public [`SlackStandIn`] API and the
//! state they share.

mod blocks;
mod deliver;
pub mod fixtures;
mod history;
mod interact;
mod json;
pub mod limits;
mod methods;
mod realtime;
mod server;
mod socket;
#[cfg(test)]
mod tests;
mod web;

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::routing::get;
use axum::Router;
use serde_json::Value;
use tokio::sync::watch;

pub use blocks::{live_mentions, mrkdwn_texts};
pub use deliver::{signature, HttpFailure};
pub use fixtures::{Person, SelectedOption, ViewValues};
pub use interact::{Action, Sent};
pub use server::{install_test_ca, test_ca_pem};
pub use socket::{Ack, EnvelopeType, SentEnvelope};

const WAIT_LIMIT: Duration = Duration::from_secs(30);

/// The bot token every Web API method but `apps.connections.open` wants.
pub const BOT_TOKEN: &str = "xoxb-1-standin-bot-token";
/// The app-level token `apps.connections.open` wants (Socket Mode).
pub const APP_TOKEN: &str = "xapp-1-A0STANDIN1-1-standin-app-token";
/// The workspace.
pub const TEAM_ID: &str = "T0STANDIN1";
pub const TEAM_DOMAIN: &str = "askrelay-standin";
/// The app (`api_app_id`, Socket Mode's `connection_info.app_id`).
pub const APP_ID: &str = "A0STANDIN1";
/// The bot user and the bot, as `auth.test` reports them.
pub const BOT_USER_ID: &str = "U0STANDBOT";
pub const BOT_ID: &str = "B0STANDBOT";
/// A channel that exists from the start (`#askrelay`), with the bot in it.
pub const DEFAULT_CHANNEL: &str = "C0STANDIN1";

/// How a request's parameters came.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// `application/json` body.
    Json,
    /// `application/x-www-form-urlencoded` body.
    Form,
    /// Only a query string (what slack-morphism sends for its GET methods).
    Query,
    /// A body of bytes (an upload).
    Binary,
    /// Nothing at all.
    Empty,
}

/// The token a request carried, by kind (the token itself is never recorded).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Auth {
    None,
    /// [`BOT_TOKEN`].
    Bot,
    /// [`APP_TOKEN`].
    App,
    /// Some other token.
    Invalid,
}

/// One HTTP request as the stand-in received it.
#[derive(Clone, Debug)]
pub struct Recorded {
    /// The Web API method (`chat.postMessage`), or `upload` for an upload URL and
    /// `response_url` for a response URL.
    pub method: String,
    /// `GET`, `POST`, …
    pub http_method: String,
    /// The path without the query, e.g. `/api/chat.postMessage`.
    pub path: String,
    /// The parameters as one JSON object: the JSON body, or the form and query decoded (with the
    /// JSON-valued ones, such as `blocks` and `view`, parsed). Never the token.
    pub params: Value,
    pub encoding: Encoding,
    /// The bytes of an upload (`method == "upload"`).
    pub bytes: Option<Vec<u8>>,
    /// Request headers, names in lower case, without `authorization` and `cookie`.
    pub headers: Vec<(String, String)>,
    pub auth: Auth,
    /// Whether it came over TLS.
    pub tls: bool,
    /// The HTTP status answered, and the JSON body (`Value::Null` for a non-JSON answer).
    pub status: u16,
    pub reply: Value,
    /// When the whole request had arrived, before any stall.
    pub at: Instant,
}

impl Recorded {
    /// The first request header with this (case-insensitive) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// A parameter (`params[key]`).
    pub fn param(&self, key: &str) -> Option<&Value> {
        self.params.get(key)
    }

    /// A parameter that is a string.
    pub fn param_str(&self, key: &str) -> Option<&str> {
        self.params.get(key).and_then(Value::as_str)
    }

    /// Whether Slack would call it a success (HTTP 200 and `ok` not false).
    pub fn ok(&self) -> bool {
        self.status == 200 && self.reply.get("ok") != Some(&Value::Bool(false))
    }

    /// The `error` answered, if any.
    pub fn error(&self) -> Option<&str> {
        self.reply.get("error").and_then(Value::as_str)
    }
}

/// Something a request did that Slack would refuse, or that the daemon must not rely on: a
/// broken limit, a block slack-morphism cannot model, a truncated text, an ack for an envelope
/// never sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The Web API method, `response_url`, or `socket`.
    pub method: String,
    /// A JSON pointer into the request's parameters (`/blocks/0/text/text`), or empty.
    pub pointer: String,
    pub problem: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", self.method, self.pointer, self.problem)
    }
}

/// A failure to inject with [`SlackStandIn::fail_next`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SlackFailure {
    /// HTTP 429 with `Retry-After: secs` and `{"ok":false,"error":"ratelimited"}`.
    RateLimited { retry_after_secs: u64 },
    /// HTTP 200 with `{"ok":false,"error":"<code>"}` (`channel_not_found`, `internal_error`, …).
    Error(String),
    /// This HTTP status with a plain-text body (a 5xx from Slack's edge, say).
    Status(u16),
    /// The call takes effect (a message is posted), then its answer is lost: this HTTP status
    /// with a plain-text body instead (a 5xx from Slack's edge after the work was done).
    LostReply(u16),
}

/// Slack-like rate limits for [`SlackStandIn::set_rate_limits`]: each method's tier per minute
/// (a window opens with the first call after the last one closed) and `chat.postMessage` per
/// channel per second. Over the limit: 429 with `Retry-After` (whole seconds, rounded up).
#[derive(Clone, Debug)]
pub struct RateLimits {
    /// Calls per minute for Tiers 1 to 4.
    pub tiers_per_minute: [u32; 4],
    /// `chat.postMessage` calls per channel per second.
    pub post_message_per_channel_per_second: u32,
}

impl Default for RateLimits {
    fn default() -> Self {
        RateLimits {
            tiers_per_minute: [
                limits::TIER1_PER_MINUTE,
                limits::TIER2_PER_MINUTE,
                limits::TIER3_PER_MINUTE,
                limits::TIER4_PER_MINUTE,
            ],
            post_message_per_channel_per_second: limits::POST_MESSAGE_PER_CHANNEL_PER_SECOND,
        }
    }
}

/// A message as Slack keeps it.
#[derive(Clone, Debug)]
struct StoredMessage {
    channel: String,
    ts: String,
    /// The message object as `conversations.history` and interaction payloads show it.
    value: Value,
}

/// An ephemeral message (`chat.postEphemeral`, a `response_url` reply that is ephemeral, or a
/// slash command's reply in its ack).
#[derive(Clone, Debug, PartialEq)]
pub struct Ephemeral {
    pub channel: String,
    /// Who sees it.
    pub user: String,
    pub ts: String,
    pub text: Option<String>,
    pub blocks: Option<Value>,
    /// `chat.postEphemeral`, `response_url`, or `ack` (a slash command's reply in its ack).
    pub via: String,
    /// Deleted through a response_url (`delete_original`).
    pub deleted: bool,
}

/// A modal as Slack keeps it: the view object `views.open` answered, updated in place.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredView {
    pub id: String,
    /// The user it was opened for (who used the trigger_id).
    pub user: Option<String>,
    /// The view object (`id`, `hash`, `title`, `blocks`, `private_metadata`, `state`, …).
    pub value: Value,
    /// Closed by the user, or cleared by a view_submission's ack.
    pub closed: bool,
}

/// A file uploaded through `files.getUploadURLExternal`.
#[derive(Clone, Debug, PartialEq)]
pub struct Upload {
    pub file_id: String,
    pub filename: String,
    /// The `length` announced.
    pub length: u64,
    /// The bytes posted to the upload URL.
    pub bytes: Option<Vec<u8>>,
    /// Set by `files.completeUploadExternal`: the title, and where it was shared.
    pub completed: bool,
    pub title: Option<String>,
    pub channel: Option<String>,
    pub thread_ts: Option<String>,
}

#[derive(Clone, Debug)]
struct Channel {
    name: String,
    /// For a DM, the user at the other end.
    dm_user: Option<String>,
    /// `not_in_channel` for posts.
    bot_member: bool,
}

#[derive(Clone, Debug)]
struct User {
    value: Value,
}

struct TriggerRec {
    issued: tokio::time::Instant,
    user: String,
    used: bool,
}

struct ResponseUrl {
    channel: Option<String>,
    /// The message the interaction came from (a message, or an ephemeral one).
    message_ts: Option<String>,
    user: String,
    uses: usize,
    issued: tokio::time::Instant,
}

struct FailRule {
    method: String,
    failure: SlackFailure,
    remaining: usize,
}

struct StallRule {
    method: String,
    remaining: usize,
}

struct Ids {
    addr: std::net::SocketAddr,
}

struct Shared {
    ids: Ids,
    state: Mutex<St>,
    version: watch::Sender<u64>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, St> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn bump(&self) {
        self.version.send_modify(|v| *v = v.wrapping_add(1));
    }

    /// `http://127.0.0.1:PORT` or `https://…`, as the client reached the stand-in.
    fn http_base(&self, tls: bool) -> String {
        let scheme = if tls { "https" } else { "http" };
        format!("{scheme}://{}", self.ids.addr)
    }
}

#[derive(Default)]
struct St {
    requests: Vec<Recorded>,
    violations: Vec<Violation>,
    allow_violations: bool,
    /// The last `ts` handed out: seconds and millionths.
    last_ts: (u64, u64),
    /// For ids: D…, V…, F…, tickets, envelopes.
    counter: u64,
    channels: BTreeMap<String, Channel>,
    users: BTreeMap<String, User>,
    usergroups: BTreeMap<String, Vec<String>>,
    messages: Vec<StoredMessage>,
    deleted: Vec<StoredMessage>,
    ephemerals: Vec<Ephemeral>,
    /// What each person picked in the selects of a message (or an ephemeral one), by its `ts`
    /// and the user: `state.values` entries by block_id then action_id, as Slack's client keeps
    /// them until the message changes.
    picks: HashMap<(String, String), serde_json::Map<String, Value>>,
    views: Vec<StoredView>,
    triggers: HashMap<String, TriggerRec>,
    response_urls: HashMap<String, ResponseUrl>,
    uploads: Vec<Upload>,
    failures: Vec<FailRule>,
    stalls: Vec<StallRule>,
    held: Vec<String>,
    releases: u64,
    rate_limits: Option<RateLimits>,
    /// Open windows by key (method, or method + channel): when opened (tokio's clock, so that a
    /// paused clock's advance closes them), calls so far.
    windows: HashMap<String, (tokio::time::Instant, u32)>,
    rate_limited: usize,
    socket: socket::SocketState,
}

impl St {
    /// A new `ts`: unique and increasing, seconds from the wall clock.
    fn next_ts(&mut self) -> String {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or_default();
        let (secs, micros) = self.last_ts;
        self.last_ts = if now > secs {
            (now, 100)
        } else if micros + 100 < 1_000_000 {
            (secs, micros + 100)
        } else {
            (secs + 1, 100)
        };
        format!("{}.{:06}", self.last_ts.0, self.last_ts.1)
    }

    /// A new id with this prefix, e.g. `D0000000003`.
    fn next_id(&mut self, prefix: &str) -> String {
        self.counter += 1;
        format!("{prefix}{:010}", self.counter)
    }

    fn violation(&mut self, method: &str, pointer: &str, problem: impl Into<String>) {
        self.violations.push(Violation {
            method: method.to_owned(),
            pointer: pointer.to_owned(),
            problem: problem.into(),
        });
    }

    fn message(&self, channel: &str, ts: &str) -> Option<&StoredMessage> {
        self.messages
            .iter()
            .find(|m| m.channel == channel && m.ts == ts)
    }

    /// The messages `channel` shows as they are now, oldest first: not the replies in threads.
    fn shown_in(&self, channel: &str) -> Vec<Value> {
        self.messages
            .iter()
            .filter(|m| m.channel == channel)
            .filter(|m| m.value.get("thread_ts").is_none_or(|t| t == m.ts.as_str()))
            .map(|m| m.value.clone())
            .collect()
    }

    fn summary(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "{}", self.socket.summary());
        let _ = writeln!(out, "violations: {}", self.violations.len());
        for v in &self.violations {
            let _ = writeln!(out, "  {v}");
        }
        let _ = writeln!(out, "requests so far ({}):", self.requests.len());
        for r in &self.requests {
            let params = r.params.to_string();
            let params = if params.chars().count() > 300 {
                format!("{}...", params.chars().take(300).collect::<String>())
            } else {
                params
            };
            let error = r.error().map(|e| format!(" ({e})")).unwrap_or_default();
            let _ = writeln!(out, "  {} -> {}{error} {params}", r.method, r.status);
        }
        out
    }
}

/// A running stand-in. Cheap to clone; the server stops when the last clone is dropped, and then,
/// unless the test is already failing or said [`SlackStandIn::allow_violations`], a recorded
/// [`Violation`] fails the test.
#[derive(Clone)]
pub struct SlackStandIn {
    shared: Arc<Shared>,
    _server: Arc<ServerTask>,
}

struct ServerTask {
    handle: tokio::task::JoinHandle<()>,
    shared: Arc<Shared>,
}

impl Drop for ServerTask {
    fn drop(&mut self) {
        self.handle.abort();
        if std::thread::panicking() {
            return;
        }
        let st = self.shared.lock();
        if !st.allow_violations && !st.violations.is_empty() {
            let list: Vec<String> = st.violations.iter().map(ToString::to_string).collect();
            drop(st);
            panic!(
                "slack stand-in: {} violation(s) recorded:\n  {}",
                list.len(),
                list.join("\n  ")
            );
        }
    }
}

/// The state of the router of one scheme: the shared state, and whether connections are TLS.
#[derive(Clone)]
struct Ctx {
    shared: Arc<Shared>,
    tls: bool,
}

impl SlackStandIn {
    /// Starts the stand-in on 127.0.0.1 with an OS-chosen port, with [`DEFAULT_CHANNEL`] in it.
    pub async fn start() -> SlackStandIn {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("slack stand-in: bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("slack stand-in: local_addr");
        let (version, _) = watch::channel(0u64);
        let mut st = St::default();
        let bot = Person::new(BOT_USER_ID, "askrelay");
        st.users.insert(
            BOT_USER_ID.to_owned(),
            User {
                value: json::user_json(&bot, true),
            },
        );
        st.channels.insert(
            DEFAULT_CHANNEL.to_owned(),
            Channel {
                name: "askrelay".to_owned(),
                dm_user: None,
                bot_member: true,
            },
        );
        let shared = Arc::new(Shared {
            ids: Ids { addr },
            state: Mutex::new(st),
            version,
        });
        let app = |tls: bool| {
            Router::new()
                .route("/socket", get(socket::upgrade))
                .fallback(web::handle)
                .with_state(Ctx {
                    shared: Arc::clone(&shared),
                    tls,
                })
        };
        let (plain, tls) = (app(false), app(true));
        let handle = tokio::spawn(server::serve(listener, plain, tls));
        SlackStandIn {
            _server: Arc::new(ServerTask {
                handle,
                shared: Arc::clone(&shared),
            }),
            shared,
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        self.shared.http_base(false)
    }

    /// `http://127.0.0.1:PORT/api`: what `with_slack_api_url` takes (plain HTTP).
    pub fn api_base(&self) -> String {
        format!("{}/api", self.shared.http_base(false))
    }

    /// `https://127.0.0.1:PORT/api`, for slack-morphism's production connector; call
    /// [`install_test_ca`] before making it.
    pub fn https_api_base(&self) -> String {
        format!("{}/api", self.shared.http_base(true))
    }

    /// The address the stand-in listens on.
    pub fn addr(&self) -> std::net::SocketAddr {
        self.shared.ids.addr
    }

    // --- The workspace -------------------------------------------------------------------------

    /// Adds a channel (`C…`) the bot is in.
    pub fn add_channel(&self, id: &str, name: &str) {
        self.shared.lock().channels.insert(
            id.to_owned(),
            Channel {
                name: name.to_owned(),
                dm_user: None,
                bot_member: true,
            },
        );
    }

    /// Posts to the channel get `not_in_channel` from now on.
    pub fn remove_bot_from_channel(&self, id: &str) {
        if let Some(c) = self.shared.lock().channels.get_mut(id) {
            c.bot_member = false;
        }
    }

    /// Deletes a channel: every method on it gets `channel_not_found` from now on.
    pub fn delete_channel(&self, id: &str) {
        self.shared.lock().channels.remove(id);
    }

    /// Adds a person `users.info` knows (`username` is Slack's `name`).
    pub fn add_user(&self, person: &Person) {
        let value = json::user_json(person, false);
        self.shared
            .lock()
            .users
            .insert(person.id.clone(), User { value });
    }

    /// Marks a person deactivated (`deleted: true` in `users.info`).
    pub fn deactivate_user(&self, id: &str) {
        if let Some(u) = self.shared.lock().users.get_mut(id) {
            u.value["deleted"] = Value::Bool(true);
        }
    }

    /// Sets a user group's members (`usergroups.users.list`; `S…` ids).
    pub fn set_usergroup(&self, id: &str, members: &[&str]) {
        self.shared.lock().usergroups.insert(
            id.to_owned(),
            members.iter().map(|m| (*m).to_owned()).collect(),
        );
    }

    /// The DM channel `conversations.open` opened with `user`, if any.
    pub fn dm_channel(&self, user: &str) -> Option<String> {
        self.shared
            .lock()
            .channels
            .iter()
            .find(|(_, c)| c.dm_user.as_deref() == Some(user))
            .map(|(id, _)| id.clone())
    }

    // --- What Slack holds ----------------------------------------------------------------------

    /// The messages in a channel as they are now (after updates, without deleted ones), oldest
    /// first; as the channel shows them, without the replies in threads ([`SlackStandIn::thread`]).
    pub fn messages(&self, channel: &str) -> Vec<Value> {
        self.shared.lock().shown_in(channel)
    }

    /// Waits until `channel` shows at least `n` messages (as [`SlackStandIn::messages`] counts
    /// them: a post in another channel, such as a digest's, or a reply in a thread does not
    /// count); returns them.
    pub async fn wait_for_messages(&self, channel: &str, n: usize) -> Vec<Value> {
        self.wait_until(&format!("{n} messages in {channel}"), |st| {
            let found = st.shown_in(channel);
            (found.len() >= n).then_some(found)
        })
        .await
    }

    /// The replies in the thread of message `ts` in `channel`, oldest first.
    pub fn thread(&self, channel: &str, ts: &str) -> Vec<Value> {
        self.shared
            .lock()
            .messages
            .iter()
            .filter(|m| m.channel == channel && m.ts != ts)
            .filter(|m| m.value.get("thread_ts").is_some_and(|t| t == ts))
            .map(|m| m.value.clone())
            .collect()
    }

    /// One message as it is now.
    pub fn message(&self, channel: &str, ts: &str) -> Option<Value> {
        self.shared
            .lock()
            .message(channel, ts)
            .map(|m| m.value.clone())
    }

    /// The messages deleted so far (`chat.delete`, `delete_original`), as they were.
    pub fn deleted_messages(&self) -> Vec<Value> {
        self.shared
            .lock()
            .deleted
            .iter()
            .map(|m| m.value.clone())
            .collect()
    }

    /// Every ephemeral message so far, oldest first.
    pub fn ephemerals(&self) -> Vec<Ephemeral> {
        self.shared.lock().ephemerals.clone()
    }

    /// Every modal opened so far, as it is now.
    pub fn views(&self) -> Vec<StoredView> {
        self.shared.lock().views.clone()
    }

    /// One modal as it is now.
    pub fn view(&self, id: &str) -> Option<StoredView> {
        self.shared
            .lock()
            .views
            .iter()
            .find(|v| v.id == id)
            .cloned()
    }

    /// Every file upload begun so far.
    pub fn uploads(&self) -> Vec<Upload> {
        self.shared.lock().uploads.clone()
    }

    // --- Records -------------------------------------------------------------------------------

    /// Every HTTP request so far, in order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.lock().requests.clone()
    }

    /// The requests from index `start` of the (append-only) log on.
    pub fn requests_from(&self, start: usize) -> Vec<Recorded> {
        let st = self.shared.lock();
        st.requests.get(start..).unwrap_or_default().to_vec()
    }

    /// The calls of one method so far.
    pub fn calls(&self, method: &str) -> Vec<Recorded> {
        self.shared
            .lock()
            .requests
            .iter()
            .filter(|r| r.method == method)
            .cloned()
            .collect()
    }

    /// The first request of `method` (already recorded or still to come) that matches `pred`.
    /// Panics after 30 s.
    pub async fn wait_for_request(
        &self,
        method: &str,
        pred: impl Fn(&Recorded) -> bool,
    ) -> Recorded {
        self.wait_until(
            &format!("a {method} request matching the predicate"),
            |st| {
                st.requests
                    .iter()
                    .find(|r| r.method == method && pred(r))
                    .cloned()
            },
        )
        .await
    }

    /// Waits until at least `n` requests of `method` match `pred`; returns all that match.
    pub async fn wait_for_requests(
        &self,
        n: usize,
        method: &str,
        pred: impl Fn(&Recorded) -> bool,
    ) -> Vec<Recorded> {
        self.wait_until(
            &format!("{n} {method} requests matching the predicate"),
            |st| {
                let found: Vec<Recorded> = st
                    .requests
                    .iter()
                    .filter(|r| r.method == method && pred(r))
                    .cloned()
                    .collect();
                (found.len() >= n).then_some(found)
            },
        )
        .await
    }

    /// The violations recorded so far.
    pub fn violations(&self) -> Vec<Violation> {
        self.shared.lock().violations.clone()
    }

    /// Fails the test, listing them, if any violation was recorded.
    pub fn assert_no_violations(&self) {
        let list = self.violations();
        assert!(
            list.is_empty(),
            "slack stand-in: {} violation(s) recorded:\n  {}",
            list.len(),
            list.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("\n  ")
        );
    }

    /// For a test that breaks limits on purpose: violations do not fail it at the end.
    pub fn allow_violations(&self) {
        self.shared.lock().allow_violations = true;
    }

    /// A receiver that sees a change on every state change of the stand-in, for callers that
    /// wait on several things at once.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.shared.version.subscribe()
    }

    // --- Faults --------------------------------------------------------------------------------

    /// The next `times` calls of `method` (a Web API method, `upload` or `response_url`; `*`
    /// for any) fail with `failure`: without any other effect, but for
    /// [`SlackFailure::LostReply`], whose call takes effect first.
    pub fn fail_next(&self, method: &str, failure: SlackFailure, times: usize) {
        if let SlackFailure::Status(code) | SlackFailure::LostReply(code) = failure {
            assert!(
                (200..600).contains(&code),
                "slack stand-in: fail_next with an invalid status {code}"
            );
        }
        if times == 0 {
            return;
        }
        self.shared.lock().failures.push(FailRule {
            method: method.to_owned(),
            failure,
            remaining: times,
        });
    }

    /// Drops every failure still queued by [`SlackStandIn::fail_next`]: "Slack is back".
    pub fn clear_failures(&self) {
        self.shared.lock().failures.clear();
    }

    /// The next `times` calls of `method` (`*` for any) are held, unanswered, until
    /// [`SlackStandIn::release_stalls`]. A held call is recorded when it is answered.
    pub fn stall_next(&self, method: &str, times: usize) {
        if times == 0 {
            return;
        }
        self.shared.lock().stalls.push(StallRule {
            method: method.to_owned(),
            remaining: times,
        });
    }

    /// Lets every held call go on.
    pub fn release_stalls(&self) {
        self.shared.lock().releases += 1;
        self.shared.bump();
    }

    /// Waits until `n` calls have been held in all; returns their methods, oldest first.
    pub async fn wait_stalled(&self, n: usize) -> Vec<String> {
        self.wait_until(&format!("{n} stalled calls"), |st| {
            (st.held.len() >= n).then(|| st.held.clone())
        })
        .await
    }

    /// Turns Slack-like rate limits on (`Some`) or off (`None`, the default).
    pub fn set_rate_limits(&self, limits: Option<RateLimits>) {
        let mut st = self.shared.lock();
        st.rate_limits = limits;
        st.windows.clear();
    }

    /// How many calls the rate limits turned away.
    pub fn rate_limited(&self) -> usize {
        self.shared.lock().rate_limited
    }

    async fn wait_until<T>(&self, what: &str, mut check: impl FnMut(&mut St) -> Option<T>) -> T {
        // The wall clock, not tokio's: see `realtime`.
        let mut expired = realtime::after(WAIT_LIMIT);
        let mut rx = self.shared.version.subscribe();
        loop {
            let found = {
                let mut st = self.shared.lock();
                check(&mut st)
            };
            if let Some(found) = found {
                return found;
            }
            let changed = tokio::select! {
                changed = rx.changed() => Some(changed),
                _ = &mut expired => None,
            };
            match changed {
                Some(Ok(())) => {}
                Some(Err(_)) => panic!("slack stand-in: shut down while waiting for {what}"),
                None => {
                    let summary = self.shared.lock().summary();
                    panic!(
                        "slack stand-in: gave up after {} s waiting for {what}\n{summary}",
                        WAIT_LIMIT.as_secs()
                    )
                }
            }
        }
    }
}
