//! A stand-in for Discord, for tests: REST under `/api/v10/...` over plain HTTP and a plain-ws
//! gateway at `/`, both on one 127.0.0.1 port.
//!
//! Point serenity at it with
//! `HttpBuilder::new(token).proxy(&standin.base_url).ratelimiter_disabled(true)`; serenity asks
//! `GET /api/v10/gateway` for the gateway address and gets `ws://127.0.0.1:PORT`.
//!
//! `StandIn::start_with(StandInOptions { tls, rate_limits })` also serves REST over TLS for
//! `discord.com` (so serenity's own rate limiter can stay on, see docs/contract.md, "Discord facts for offline testing") and enforces
//! Discord-like rate limits with real `X-RateLimit-*` headers and 429s.
//!
//! Every wait in here is event-driven (a `watch` channel bumped on each state change) and gives up
//! with a panic that describes the stand-in's state after 30 s, so a broken test never hangs.
//!
//! Behaviour worth knowing when writing tests:
//! - `wait_for_request` returns the FIRST recorded request (past or future) that matches.
//! - Interaction callbacks and interaction webhooks only work for interactions the stand-in knows
//!   (sent with `send_interaction` or registered with `register_interaction`); anything else
//!   gets what Discord answers: 404 `Unknown interaction` (10062) / `Unknown Webhook` (10015).
//!   A second callback for the same interaction gets 400 `Interaction has already been
//!   acknowledged.` (40060).
//! - `send_interaction` replaces the payload's `message` with the stand-in's current copy of that
//!   message when it has one (Discord sends the message as it is now).
//! - Dispatching (`send_interaction`, `send_dispatch`, `send_reconnect`, ...) waits until a gateway
//!   session is live; after `drop_gateway`/`send_reconnect`/`send_invalid_session` the old
//!   connection no longer counts as live, so the next dispatch goes to the resumed or new session.
//! - Messages with content over 2000 characters, more than 5 action rows, more than 5 components
//!   in a row, or a custom_id that is empty, over 100 characters or repeated get 400
//!   `Invalid Form Body` (50035); an empty message gets 400 `Cannot send an empty message` (50006).
//!
//! The code is split by role: [`rest`] answers the REST routes (with [`messages`], [`checks`]
//! and [`json`]: what they do to messages and interactions, the body checks, the replies' JSON),
//! [`gateway`] runs the WebSocket gateway, [`ratelimit`] enforces the Discord-like rate limits
//! and [`tls`] serves REST over TLS for `discord.com`. This file holds the public [`StandIn`] API and the state they share.

mod checks;
mod gateway;
mod json;
mod messages;
mod ratelimit;
mod reply;
mod rest;
mod tls;

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
use serde_json::{json, Value};
use tokio::sync::{mpsc, watch};

use gateway::gateway_upgrade;
use ratelimit::Window;
use rest::rest;
use tls::{start_tls, TlsInfo};

const WAIT_LIMIT: Duration = Duration::from_secs(30);
const DISCORD_EPOCH_MS: u64 = 1_420_070_400_000;
const BOT_USER_ID: u64 = 1_180_000_000_000_000_001;
const APPLICATION_ID: u64 = 1_180_000_000_000_000_002;
const GUILD_ID: u64 = 1_180_000_000_000_000_003;

/// One REST request as the stand-in received it.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub method: String,
    /// The full path without the query, e.g. `/api/v10/channels/1/messages`.
    pub path: String,
    /// The raw query without the `?`, e.g. `&wait=true`; empty when there was none.
    pub query: String,
    /// The body parsed as JSON (for multipart, the `payload_json` part); a non-JSON body is kept
    /// as a JSON string; `None` when the body was empty.
    pub body: Option<Value>,
    /// The file parts of a multipart body, in order (empty for any other body).
    pub files: Vec<RecordedFile>,
    /// The status the stand-in answered with.
    pub status: u16,
    /// Request headers, names in lower case.
    pub headers: Vec<(String, String)>,
    /// When the stand-in received the whole request, before handling it.
    pub at: Instant,
}

/// One file part of a multipart body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedFile {
    /// The form field, e.g. `files[0]`.
    pub field: String,
    pub filename: Option<String>,
    pub content_type: Option<String>,
    pub data: Vec<u8>,
}

impl Recorded {
    /// The first request header with this (case-insensitive) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A failure to inject with [`StandIn::fail_next`].
#[derive(Clone, Debug)]
pub enum Failure {
    /// 429 with Discord's headers and body.
    RateLimited { retry_after_secs: f64, global: bool },
    /// This status with a Discord-style JSON error body.
    Status(u16),
}

/// How long [`StandIn::stall_next`] holds a request before handling it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stall {
    For(Duration),
    /// Until [`StandIn::release_stalls`] (or the client gives up and closes the connection).
    UntilReleased,
}

/// Discord-like rate limits for [`StandIn::start_with`]. A window opens with the first request
/// after the previous one closed; requests over the limit get 429 with Discord's headers and body.
#[derive(Clone, Debug)]
pub struct RateLimits {
    /// `POST /channels/{id}/messages` per channel and window (Discord: 5).
    pub channel_messages: u32,
    /// The per-channel window (Discord: 5 s).
    pub channel_window: Duration,
    /// Requests per second across all routes except interaction callbacks (Discord: 50).
    pub global_per_second: u32,
}

impl Default for RateLimits {
    fn default() -> Self {
        RateLimits {
            channel_messages: 5,
            channel_window: Duration::from_secs(5),
            global_per_second: 50,
        }
    }
}

/// How to start the stand-in; the default is what [`StandIn::start`] does.
#[derive(Clone, Debug, Default)]
pub struct StandInOptions {
    /// Also serve REST over TLS on a second port, with a certificate for `discord.com` signed by
    /// a throw-away CA ([`StandIn::tls_root_cert_pem`]): point a reqwest client at it with
    /// `.resolve("discord.com", standin.tls_addr())` and keep serenity's rate limiter on.
    pub tls: bool,
    /// Enforce rate limits (none by default).
    pub rate_limits: Option<RateLimits>,
}

/// How many requests the rate limits turned away.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RateLimitCounts {
    /// 429s for a per-channel bucket.
    pub channel: usize,
    /// 429s for the global limit.
    pub global: usize,
}

/// A running stand-in. Cheap to clone; the server stops when the last clone is dropped.
#[derive(Clone)]
pub struct StandIn {
    /// `http://127.0.0.1:PORT`, what serenity's `HttpBuilder::proxy` takes.
    pub base_url: String,
    /// `ws://127.0.0.1:PORT`, what `GET /api/v10/gateway` returns.
    pub gateway_url: String,
    shared: Arc<Shared>,
    _server: Arc<ServerTask>,
    tls: Option<TlsInfo>,
}

/// The server, stopped when the last clone of the stand-in is dropped. Then, unless the test
/// is already failing or opted out, every body the stand-in still holds is checked against
/// Discord's OpenAPI spec and limits: no test that talks to the stand-in can send an invalid
/// body unnoticed, whatever it asserts itself.
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
        let (requests, check) = {
            let mut st = self.shared.lock();
            (std::mem::take(&mut st.requests), !st.skip_body_check)
        };
        if check {
            if let Err(e) = check_bodies(&requests) {
                panic!("{e}");
            }
        }
    }
}

/// A task stopped when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Checks every recorded body (a multipart body by its `payload_json` part); the number
/// checked (0 when the spec is absent and the check skipped, which is said once per process),
/// or what was wrong.
pub fn check_bodies(requests: &[Recorded]) -> Result<usize, String> {
    let Some(validator) = super::discord_schema::Validator::load_or_skip()? else {
        return Ok(0);
    };
    let mut checked = 0;
    for r in requests {
        let Some(body) = &r.body else { continue };
        if let Err(problems) = validator.check(&r.method, &r.path, body) {
            return Err(format!(
                "{} {} sent an invalid body:\n{}\n{body:#}",
                r.method,
                r.path,
                problems.join("\n")
            ));
        }
        checked += 1;
    }
    Ok(checked)
}

#[derive(Clone)]
struct Ids {
    bot_user_id: u64,
    application_id: u64,
    guild_id: u64,
    gateway_url: String,
}

struct Shared {
    ids: Ids,
    state: Mutex<St>,
    version: watch::Sender<u64>,
    /// When the last dispatch (op 0) was handed to a gateway socket: where the benchmark's
    /// answer path starts its clock.
    last_dispatch: Mutex<Option<Instant>>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, St> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn bump(&self) {
        self.version.send_modify(|v| *v = v.wrapping_add(1));
    }
}

struct FailRule {
    method: String,
    path_contains: String,
    failure: Failure,
    remaining: usize,
}

struct StallRule {
    method: String,
    path_contains: String,
    stall: Stall,
    remaining: usize,
}

/// A request that a stall rule held (see [`StandIn::stall_next`]).
#[derive(Clone, Debug)]
pub struct Held {
    pub method: String,
    pub path: String,
    /// When the hold began.
    pub at: Instant,
}

/// A message created with a nonce that an earlier message of the same channel already carried
/// (see [`StandIn::nonce_reuses`]): a duplicate post, whether or not de-duplication was on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NonceReuse {
    pub channel_id: u64,
    pub nonce: String,
    /// The new message.
    pub message_id: u64,
    /// The first message that carried the nonce.
    pub first_message_id: u64,
}

/// A gateway connection the stand-in closed because its client stopped heartbeating (see
/// [`StandIn::enforce_heartbeats`]), as Discord closes a zombie connection.
#[derive(Clone, Debug)]
pub struct ZombieClose {
    /// Whether the connection had a live (identified or resumed) session.
    pub was_live: bool,
    /// When the client's last frame arrived.
    pub last_heard: Instant,
    /// When its next heartbeat was due (`last_heard` + the interval): the client was gone by then.
    pub silent_from: Instant,
    /// When the stand-in closed it.
    pub closed_at: Instant,
}

struct StoredMessage {
    channel_id: u64,
    id: u64,
    value: Value,
}

struct InteractionRec {
    id: u64,
    channel_id: u64,
    message_id: Option<u64>,
    responded: bool,
    original: Option<u64>,
}

enum ConnCmd {
    Send(Value),
    Drop,
}

struct Conn {
    tx: mpsc::UnboundedSender<ConnCmd>,
    session: Option<String>,
    live: bool,
}

/// A thread created in a channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Thread {
    pub id: u64,
    /// The channel it is in.
    pub parent: u64,
    pub name: String,
}

#[derive(Default)]
struct St {
    requests: Vec<Recorded>,
    failures: Vec<FailRule>,
    missing: HashSet<u64>,
    forbidden: HashSet<u64>,
    messages: Vec<StoredMessage>,
    /// Every message `POST /channels/{id}/messages` created, as it was then (append-only).
    created: Vec<Value>,
    nonces: HashMap<(u64, String), (u64, Instant)>,
    last_snowflake: u64,
    interactions: HashMap<String, InteractionRec>,
    next_conn_id: u64,
    conns: HashMap<u64, Conn>,
    sessions: HashMap<String, u64>,
    session_counter: u64,
    identify_count: usize,
    resume_count: usize,
    heartbeat_count: usize,
    last_identify: Option<Value>,
    rate_limits: Option<RateLimits>,
    channel_windows: HashMap<u64, Window>,
    global_window: Option<Window>,
    limited: RateLimitCounts,
    /// Requests to hold before handling them (see `stall_next`).
    stalls: Vec<StallRule>,
    /// Requests held so far (oldest first), and how many times held ones were released.
    held: Vec<Held>,
    releases: u64,
    /// While set, the gateway refuses every connection (503 to the upgrade).
    gateway_down: bool,
    /// Gateway upgrades refused while down.
    refused_upgrades: usize,
    /// Set by [`StandIn::allow_invalid_bodies`]: the bodies are not checked at the end.
    skip_body_check: bool,
    /// DM channels opened with `POST /users/@me/channels`: user → channel.
    dms: HashMap<u64, u64>,
    /// Threads created with `POST /channels/{id}/threads`, in order.
    threads: Vec<Thread>,
    /// Application command ids by (guild or global, name).
    commands: HashMap<(Option<u64>, String), u64>,
    /// Set by [`StandIn::set_nonce_dedup`]`(false)`: a create with `enforce_nonce` and a nonce
    /// already seen creates a new message anyway, so that a duplicate post shows.
    nonce_dedup_off: bool,
    /// Every (channel, nonce) a created message carried, and that message's id.
    nonces_used: HashMap<(u64, String), u64>,
    /// Messages created with a nonce already used in their channel.
    nonce_reuses: Vec<NonceReuse>,
    /// Set by [`StandIn::enforce_heartbeats`]: the interval HELLO asks for, in ms, and the
    /// stand-in closes a connection that sends nothing for [`ZOMBIE_INTERVALS`] of them.
    heartbeat_ms: Option<u64>,
    /// The connections closed for that.
    zombies: Vec<ZombieClose>,
}

/// A connection silent for this many heartbeat intervals is closed (with
/// [`StandIn::enforce_heartbeats`]).
const ZOMBIE_INTERVALS: u32 = 4;

impl St {
    fn live_count(&self) -> usize {
        self.conns.values().filter(|c| c.live).count()
    }

    fn next_snowflake(&mut self) -> u64 {
        let ms = now_millis().saturating_sub(DISCORD_EPOCH_MS);
        let candidate = ms << 22;
        self.last_snowflake = candidate.max(self.last_snowflake + 1);
        self.last_snowflake
    }

    fn message_mut(&mut self, id: u64) -> Option<&mut StoredMessage> {
        self.messages.iter_mut().find(|m| m.id == id)
    }

    fn summary(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "gateway: {} open connection(s), {} live; identify_count={}, resume_count={}",
            self.conns.len(),
            self.live_count(),
            self.identify_count,
            self.resume_count
        );
        let _ = writeln!(out, "REST requests so far ({}):", self.requests.len());
        for r in &self.requests {
            let body = r
                .body
                .as_ref()
                .map(|b| {
                    let s = b.to_string();
                    if s.chars().count() > 300 {
                        format!("{}...", s.chars().take(300).collect::<String>())
                    } else {
                        s
                    }
                })
                .unwrap_or_default();
            let _ = writeln!(out, "  {} {} -> {} {}", r.method, r.path, r.status, body);
        }
        out
    }
}

impl StandIn {
    /// Starts the stand-in on 127.0.0.1 with an OS-chosen port.
    pub async fn start() -> StandIn {
        Self::start_with(StandInOptions::default()).await
    }

    /// Starts the stand-in with TLS and/or rate limits (see [`StandInOptions`]).
    pub async fn start_with(options: StandInOptions) -> StandIn {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("stand-in: bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("stand-in: local_addr");
        let base_url = format!("http://{addr}");
        let gateway_url = format!("ws://{addr}");
        let (version, _) = watch::channel(0u64);
        let shared = Arc::new(Shared {
            ids: Ids {
                bot_user_id: BOT_USER_ID,
                application_id: APPLICATION_ID,
                guild_id: GUILD_ID,
                gateway_url: gateway_url.clone(),
            },
            state: Mutex::new(St {
                rate_limits: options.rate_limits.clone(),
                ..St::default()
            }),
            version,
            last_dispatch: Mutex::new(None),
        });
        let app = Router::new()
            .route("/", get(gateway_upgrade))
            .fallback(rest)
            .with_state(Arc::clone(&shared));
        let tls = if options.tls {
            Some(start_tls(app.clone()).await)
        } else {
            None
        };
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        StandIn {
            base_url,
            gateway_url,
            _server: Arc::new(ServerTask {
                handle: server,
                shared: shared.clone(),
            }),
            shared,
            tls,
        }
    }

    /// The TLS address serving REST for `discord.com`; panics unless started with `tls`.
    pub fn tls_addr(&self) -> std::net::SocketAddr {
        self.tls
            .as_ref()
            .expect("stand-in: started without tls")
            .addr
    }

    /// The PEM of the CA that signed the TLS certificate; panics unless started with `tls`.
    pub fn tls_root_cert_pem(&self) -> String {
        self.tls
            .as_ref()
            .expect("stand-in: started without tls")
            .root_pem
            .clone()
    }

    /// A reqwest client that reaches this stand-in's TLS port as `https://discord.com`, for
    /// serenity with its rate limiter on; panics unless started with `tls`.
    pub fn tls_client(&self) -> reqwest::Client {
        reqwest::Client::builder()
            .use_rustls_tls()
            .resolve("discord.com", self.tls_addr())
            .add_root_certificate(
                reqwest::Certificate::from_pem(self.tls_root_cert_pem().as_bytes())
                    .expect("stand-in: the CA certificate"),
            )
            .build()
            .expect("stand-in: the TLS client")
    }

    /// For a test that sends invalid bodies on purpose: skip the check of every body at the end.
    pub fn allow_invalid_bodies(&self) {
        self.shared.lock().skip_body_check = true;
    }

    /// Turns the de-duplication of message creates by nonce on (the default, as Discord does it
    /// for `enforce_nonce: true` within a few minutes) or off. Off, every create makes a new
    /// message, so that a post the daemon sends twice shows as two messages
    /// ([`StandIn::nonce_reuses`]) instead of being absorbed by the nonce.
    pub fn set_nonce_dedup(&self, on: bool) {
        self.shared.lock().nonce_dedup_off = !on;
    }

    /// The messages created with a nonce an earlier message of their channel already carried
    /// (with or without `enforce_nonce`; with de-duplication on, only those past its window or
    /// without `enforce_nonce` can be here).
    pub fn nonce_reuses(&self) -> Vec<NonceReuse> {
        self.shared.lock().nonce_reuses.clone()
    }

    /// Makes the gateway ask for a heartbeat every `interval` (HELLO; Discord asks for about
    /// 41 s, the default here) and close, as Discord does, a connection that sends nothing for
    /// four intervals: a frozen client's session then ends within seconds instead of looking
    /// live forever. Applies to connections opened afterwards.
    pub fn enforce_heartbeats(&self, interval: Duration) {
        self.shared.lock().heartbeat_ms = Some(interval.as_millis().max(1) as u64);
    }

    /// The connections closed because their client went silent, oldest first.
    pub fn zombie_closes(&self) -> Vec<ZombieClose> {
        self.shared.lock().zombies.clone()
    }

    /// How many requests the rate limits turned away so far.
    pub fn rate_limited(&self) -> RateLimitCounts {
        self.shared.lock().limited
    }

    pub fn bot_user_id(&self) -> u64 {
        self.shared.ids.bot_user_id
    }

    pub fn application_id(&self) -> u64 {
        self.shared.ids.application_id
    }

    /// The guild every channel belongs to.
    pub fn guild_id(&self) -> u64 {
        self.shared.ids.guild_id
    }

    /// Every REST request so far, in order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.lock().requests.clone()
    }

    /// The first recorded request (already recorded or still to come) that matches `pred`.
    /// Panics after 30 s.
    pub async fn wait_for_request(&self, pred: impl Fn(&Recorded) -> bool) -> Recorded {
        self.wait_until("a REST request matching the predicate", |st| {
            st.requests.iter().find(|r| pred(r)).cloned()
        })
        .await
    }

    /// Waits until at least `n` recorded requests match `pred`; returns all that match.
    pub async fn wait_for_requests(
        &self,
        n: usize,
        pred: impl Fn(&Recorded) -> bool,
    ) -> Vec<Recorded> {
        self.wait_until(&format!("{n} REST requests matching the predicate"), |st| {
            let found: Vec<Recorded> = st.requests.iter().filter(|r| pred(r)).cloned().collect();
            (found.len() >= n).then_some(found)
        })
        .await
    }

    /// The next `times` requests whose method equals `method` (case-insensitive; `*` or empty
    /// matches any) and whose path contains `path_contains` fail with `failure`, without any
    /// other effect.
    pub fn fail_next(&self, method: &str, path_contains: &str, failure: Failure, times: usize) {
        if let Failure::Status(code) = failure {
            assert!(
                StatusCode::from_u16(code).is_ok() && code >= 200,
                "stand-in: fail_next with an invalid status {code}"
            );
        }
        if times == 0 {
            return;
        }
        self.shared.lock().failures.push(FailRule {
            method: method.to_string(),
            path_contains: path_contains.to_string(),
            failure,
            remaining: times,
        });
    }

    /// The next `times` requests whose method and path match (as for `fail_next`) are held
    /// before they are handled: for a while, or until `release_stalls`. A held request counts
    /// as received when it arrived; a client that gives up meanwhile gets nothing.
    pub fn stall_next(&self, method: &str, path_contains: &str, stall: Stall, times: usize) {
        if times == 0 {
            return;
        }
        self.shared.lock().stalls.push(StallRule {
            method: method.to_string(),
            path_contains: path_contains.to_string(),
            stall,
            remaining: times,
        });
    }

    /// The requests held so far, from the `from`-th on (oldest first).
    pub fn held_from(&self, from: usize) -> Vec<Held> {
        self.shared
            .lock()
            .held
            .get(from..)
            .unwrap_or_default()
            .to_vec()
    }

    /// Stall rules still waiting for a request to hold.
    pub fn stalls_waiting(&self) -> usize {
        self.shared.lock().stalls.iter().map(|r| r.remaining).sum()
    }

    /// Lets every request held until released go on.
    pub fn release_stalls(&self) {
        self.shared.lock().releases += 1;
        self.shared.bump();
    }

    /// Waits until `n` requests have been held in all.
    pub async fn wait_stalled(&self, n: usize) {
        self.wait_until(&format!("{n} stalled requests"), |st| {
            (st.held.len() >= n).then_some(())
        })
        .await;
    }

    /// Drops every failure still queued by [`StandIn::fail_next`]: "Discord is back".
    pub fn clear_failures(&self) {
        self.shared.lock().failures.clear();
    }

    /// Every request on `/channels/{channel_id}...` gets 404 Unknown Channel (10003).
    pub fn set_channel_missing(&self, channel_id: u64) {
        self.shared.lock().missing.insert(channel_id);
    }

    /// Every request on `/channels/{channel_id}...` gets 403 Missing Access (50001).
    pub fn set_channel_forbidden(&self, channel_id: u64) {
        self.shared.lock().forbidden.insert(channel_id);
    }

    /// Waits until a gateway session is live: identified and sent READY (or resumed) on a
    /// connection that is still open.
    pub async fn wait_ready(&self) {
        self.wait_until("a live gateway session (READY sent)", |st| {
            (st.live_count() > 0).then_some(())
        })
        .await
    }

    /// How many gateway sessions are live now.
    pub fn live_sessions(&self) -> usize {
        self.shared.lock().live_count()
    }

    /// Waits until at least `n` IDENTIFYs have been received.
    pub async fn wait_identify_count(&self, n: usize) {
        self.wait_until(&format!("{n} gateway IDENTIFY(s)"), |st| {
            (st.identify_count >= n).then_some(())
        })
        .await
    }

    /// Waits until at least `n` RESUMEs have been received.
    pub async fn wait_resume_count(&self, n: usize) {
        self.wait_until(&format!("{n} gateway RESUME(s)"), |st| {
            (st.resume_count >= n).then_some(())
        })
        .await
    }

    /// Remembers an interaction so that its callback and webhook routes work, without sending it
    /// through the gateway (for tests that feed a parsed fixture straight to a handler).
    pub fn register_interaction(&self, payload: &Value) {
        let mut st = self.shared.lock();
        register_interaction_locked(&mut st, payload);
    }

    /// Registers the interaction and dispatches it as INTERACTION_CREATE to the live session(s),
    /// waiting (up to 30 s) for one to be live.
    pub async fn send_interaction(&self, payload: Value) {
        self.wait_until(
            "a live gateway session to send INTERACTION_CREATE to",
            |st| {
                if st.live_count() == 0 {
                    return None;
                }
                let mut payload = payload.clone();
                register_interaction_locked(st, &payload);
                let stored = payload
                    .get("message")
                    .and_then(|m| m.get("id"))
                    .and_then(snowflake_of)
                    .and_then(|mid| st.messages.iter().find(|m| m.id == mid))
                    .map(|m| m.value.clone());
                if let Some(stored) = stored {
                    payload["message"] = stored;
                }
                Some(st.dispatch("INTERACTION_CREATE", &payload))
            },
        )
        .await;
        self.shared.bump();
    }

    /// When the last dispatch (op 0) was written to a gateway socket.
    pub fn last_dispatch_at(&self) -> Option<Instant> {
        *self.shared.last_dispatch.lock().unwrap()
    }

    /// Dispatches any op 0 event to the live session(s), waiting (up to 30 s) for one.
    pub async fn send_dispatch(&self, event_name: &str, payload: Value) {
        self.wait_until(
            &format!("a live gateway session to send {event_name} to"),
            |st| (st.live_count() > 0).then(|| st.dispatch(event_name, &payload)),
        )
        .await;
        self.shared.bump();
    }

    /// Drops every open gateway connection without a close frame (waits for a live one first).
    /// The session stays resumable.
    pub async fn drop_gateway(&self) {
        self.wait_until("a live gateway session to drop", |st| {
            if st.live_count() == 0 {
                return None;
            }
            for conn in st.conns.values_mut() {
                conn.live = false;
                let _ = conn.tx.send(ConnCmd::Drop);
            }
            Some(())
        })
        .await;
        self.shared.bump();
    }

    /// Forgets every message, request and interaction recorded so far, so that a long run
    /// (the benchmark's 100,000 questions) keeps the stand-in small and its look-ups fast.
    /// Indexes given by `requests_from` and `created_messages_from` start again at 0.
    pub fn forget_history(&self) {
        let mut st = self.shared.lock();
        st.requests = Vec::new();
        st.messages = Vec::new();
        st.created = Vec::new();
        st.interactions = HashMap::new();
        st.nonces = HashMap::new();
        st.nonces_used = HashMap::new();
    }

    /// Takes the gateway down (every session dropped, every new connection refused) or
    /// brings it back.
    pub fn set_gateway_down(&self, down: bool) {
        {
            let mut st = self.shared.lock();
            st.gateway_down = down;
            if down {
                for conn in st.conns.values_mut() {
                    conn.live = false;
                    let _ = conn.tx.send(ConnCmd::Drop);
                }
            }
        }
        self.shared.bump();
    }

    /// Waits until the gateway has refused `n` connections in all while down.
    pub async fn wait_refused_upgrades(&self, n: usize) {
        self.wait_until("refused gateway connections", |st| {
            (st.refused_upgrades >= n).then_some(())
        })
        .await;
    }

    /// Sends op 7 Reconnect to the live session(s); they stop counting as live.
    pub async fn send_reconnect(&self) {
        self.wait_until("a live gateway session to send op 7 to", |st| {
            if st.live_count() == 0 {
                return None;
            }
            for conn in st.conns.values_mut().filter(|c| c.live) {
                conn.live = false;
                let _ = conn.tx.send(ConnCmd::Send(
                    json!({"op": 7, "d": null, "s": null, "t": null}),
                ));
            }
            Some(())
        })
        .await;
        self.shared.bump();
    }

    /// Sends op 9 Invalid Session to the live session(s); they stop counting as live, and when
    /// not resumable their session is forgotten (a RESUME of it then gets op 9 false).
    pub async fn send_invalid_session(&self, resumable: bool) {
        self.wait_until("a live gateway session to send op 9 to", |st| {
            if st.live_count() == 0 {
                return None;
            }
            let mut forget = Vec::new();
            for conn in st.conns.values_mut().filter(|c| c.live) {
                conn.live = false;
                let _ = conn.tx.send(ConnCmd::Send(
                    json!({"op": 9, "d": resumable, "s": null, "t": null}),
                ));
                if !resumable {
                    forget.extend(conn.session.take());
                }
            }
            for s in forget {
                st.sessions.remove(&s);
            }
            Some(())
        })
        .await;
        self.shared.bump();
    }

    pub fn identify_count(&self) -> usize {
        self.shared.lock().identify_count
    }

    pub fn resume_count(&self) -> usize {
        self.shared.lock().resume_count
    }

    pub fn heartbeat_count(&self) -> usize {
        self.shared.lock().heartbeat_count
    }

    /// The `d` of the last IDENTIFY (token, intents, properties, presence, shard...).
    pub fn last_identify(&self) -> Option<Value> {
        self.shared.lock().last_identify.clone()
    }

    /// Messages in the channel as they are now (after edits), oldest first. Includes interaction
    /// replies and followups (ephemeral ones too, with flag 64).
    /// The DM channel opened with `user`, if the bot opened one.
    pub fn dm_channel(&self, user: u64) -> Option<u64> {
        self.shared.lock().dms.get(&user).copied()
    }

    /// Whether `channel` is a DM channel.
    pub fn is_dm(&self, channel: u64) -> bool {
        self.shared.lock().dms.values().any(|&c| c == channel)
    }

    /// The threads created so far, oldest first.
    pub fn threads(&self) -> Vec<Thread> {
        self.shared.lock().threads.clone()
    }

    /// Deletes a thread, as a moderator would: it is an unknown channel from then on.
    pub fn delete_thread(&self, id: u64) {
        let mut st = self.shared.lock();
        st.threads.retain(|t| t.id != id);
        st.missing.insert(id);
    }

    pub fn messages_in(&self, channel_id: u64) -> Vec<Value> {
        self.shared
            .lock()
            .messages
            .iter()
            .filter(|m| m.channel_id == channel_id)
            .map(|m| m.value.clone())
            .collect()
    }

    /// One message as it is now.
    pub fn message(&self, message_id: u64) -> Option<Value> {
        self.shared
            .lock()
            .messages
            .iter()
            .find(|m| m.id == message_id)
            .map(|m| m.value.clone())
    }

    /// The messages `POST /channels/{id}/messages` created, as they were when created (before any
    /// edit), from index `start` of that append-only list on. A create repeated with an enforced
    /// nonce returns the existing message and is not listed again, so two entries for one
    /// question are two messages in the channel.
    pub fn created_messages_from(&self, start: usize) -> Vec<Value> {
        let st = self.shared.lock();
        st.created.get(start..).unwrap_or_default().to_vec()
    }

    /// The REST requests recorded from index `start` of the (append-only) log on, for callers
    /// that follow the log incrementally instead of copying all of it each time.
    pub fn requests_from(&self, start: usize) -> Vec<Recorded> {
        let st = self.shared.lock();
        st.requests.get(start..).unwrap_or_default().to_vec()
    }

    /// A receiver that sees a change on every state change of the stand-in (each REST request,
    /// gateway frame and dispatch), for callers that wait on several things at once.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.shared.version.subscribe()
    }

    async fn wait_until<T>(&self, what: &str, mut check: impl FnMut(&mut St) -> Option<T>) -> T {
        let deadline = tokio::time::Instant::now() + WAIT_LIMIT;
        let mut rx = self.shared.version.subscribe();
        loop {
            let found = {
                let mut st = self.shared.lock();
                check(&mut st)
            };
            if let Some(found) = found {
                return found;
            }
            match tokio::time::timeout_at(deadline, rx.changed()).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) => panic!("stand-in: shut down while waiting for {what}"),
                Err(_) => {
                    let summary = self.shared.lock().summary();
                    panic!(
                        "stand-in: gave up after {} s waiting for {what}\n{summary}",
                        WAIT_LIMIT.as_secs()
                    )
                }
            }
        }
    }
}

/// Remembers the interaction's token; a payload without token, id or channel (a deliberately
/// broken one) is not remembered, so its callback gets 404 Unknown interaction.
fn register_interaction_locked(st: &mut St, payload: &Value) {
    let Some(token) = payload.get("token").and_then(Value::as_str) else {
        return;
    };
    let Some(id) = payload.get("id").and_then(snowflake_of) else {
        return;
    };
    let Some(channel_id) = payload
        .get("channel_id")
        .and_then(snowflake_of)
        .or_else(|| {
            payload
                .get("channel")
                .and_then(|c| c.get("id"))
                .and_then(snowflake_of)
        })
    else {
        return;
    };
    let message_id = payload
        .get("message")
        .and_then(|m| m.get("id"))
        .and_then(snowflake_of);
    st.interactions.insert(
        token.to_string(),
        InteractionRec {
            id,
            channel_id,
            message_id,
            responded: false,
            original: None,
        },
    );
}

fn parse_snowflake(s: &str) -> Option<u64> {
    s.parse::<u64>().ok().filter(|&v| v != 0)
}

fn snowflake_of(v: &Value) -> Option<u64> {
    match v {
        Value::String(s) => parse_snowflake(s),
        Value::Number(n) => n.as_u64().filter(|&v| v != 0),
        _ => None,
    }
}

fn now_millis() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or_default()
}

fn now_secs_f64() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or_default()
}
