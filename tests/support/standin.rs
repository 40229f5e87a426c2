//! A stand-in for Discord, for tests: REST under `/api/v10/...` over plain HTTP and a plain-ws
//! gateway at `/`, both on one 127.0.0.1 port.
//!
//! Point serenity at it with
//! `HttpBuilder::new(token).proxy(&standin.base_url).ratelimiter_disabled(true)`; serenity asks
//! `GET /api/v10/gateway` for the gateway address and gets `ws://127.0.0.1:PORT`.
//!
//! `StandIn::start_with(StandInOptions { tls, rate_limits })` also serves REST over TLS for
//! `discord.com` (so serenity's own rate limiter can stay on, see DISCORD-NOTES.md) and enforces
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

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::body::{Body, Bytes};
use axum::extract::ws::{Message as WsMessage, WebSocket, WebSocketUpgrade};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use serde_json::{json, Value};
use tokio::sync::{mpsc, watch};

const WAIT_LIMIT: Duration = Duration::from_secs(30);
const HEARTBEAT_INTERVAL_MS: u64 = 41_250;
const NONCE_WINDOW: Duration = Duration::from_secs(300);
const DISCORD_EPOCH_MS: u64 = 1_420_070_400_000;
const BOT_USER_ID: u64 = 1_180_000_000_000_000_001;
const APPLICATION_ID: u64 = 1_180_000_000_000_000_002;
const GUILD_ID: u64 = 1_180_000_000_000_000_003;
const BOT_USERNAME: &str = "askrelay-test";
const MAX_CONTENT_CHARS: usize = 2000;
const MAX_ROWS: usize = 5;
const MAX_ROW_COMPONENTS: usize = 5;
const MAX_CUSTOM_ID_CHARS: usize = 100;

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
    /// The status the stand-in answered with.
    pub status: u16,
    /// Request headers, names in lower case.
    pub headers: Vec<(String, String)>,
    /// When the stand-in received the whole request, before handling it.
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
}

/// A failure to inject with [`StandIn::fail_next`].
#[derive(Clone, Debug)]
pub enum Failure {
    /// 429 with Discord's headers and body.
    RateLimited { retry_after_secs: f64, global: bool },
    /// This status with a Discord-style JSON error body.
    Status(u16),
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

#[derive(Clone)]
struct TlsInfo {
    addr: std::net::SocketAddr,
    root_pem: String,
    _server: Arc<ServerTask>,
}

struct ServerTask(tokio::task::JoinHandle<()>);

impl Drop for ServerTask {
    fn drop(&mut self) {
        self.0.abort();
    }
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
    /// While set, the gateway refuses every connection (503 to the upgrade).
    gateway_down: bool,
    /// Gateway upgrades refused while down.
    refused_upgrades: usize,
}

/// A fixed rate-limit window: opens at the first request after the previous one closed.
#[derive(Clone, Copy)]
struct Window {
    start: Instant,
    count: u32,
}

/// Takes one request from the window: `Ok((remaining, reset_after))` or `Err(retry_after)`.
fn take_window(
    w: &mut Option<Window>,
    now: Instant,
    limit: u32,
    len: Duration,
) -> Result<(u32, Duration), Duration> {
    let win = match w {
        Some(win) if now < win.start + len => win,
        _ => w.insert(Window {
            start: now,
            count: 0,
        }),
    };
    let left = (win.start + len).saturating_duration_since(now);
    if win.count >= limit {
        return Err(left);
    }
    win.count += 1;
    Ok((limit - win.count, left))
}

/// Seconds rounded up to the millisecond, so that a client that waits that long is never early.
fn secs_up(d: Duration) -> f64 {
    (d.as_secs_f64() * 1000.0).ceil() / 1000.0
}

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

    /// Sends a dispatch to every live session; returns how many got it.
    fn dispatch(&mut self, event_name: &str, payload: &Value) -> usize {
        let St {
            conns, sessions, ..
        } = self;
        let mut sent = 0;
        for conn in conns.values().filter(|c| c.live) {
            let Some(seq) = conn.session.as_ref().and_then(|s| sessions.get_mut(s)) else {
                continue;
            };
            *seq += 1;
            let frame = json!({"op": 0, "t": event_name, "s": *seq, "d": payload});
            if conn.tx.send(ConnCmd::Send(frame)).is_ok() {
                sent += 1;
            }
        }
        sent
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
            shared,
            _server: Arc::new(ServerTask(server)),
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

// ---------------------------------------------------------------------------------------------
// Gateway

async fn gateway_upgrade(State(shared): State<Arc<Shared>>, ws: WebSocketUpgrade) -> Response {
    {
        let mut st = shared.lock();
        if st.gateway_down {
            st.refused_upgrades += 1;
            drop(st);
            shared.bump();
            return Response::builder()
                .status(StatusCode::SERVICE_UNAVAILABLE)
                .body(Body::from("the gateway is down"))
                .unwrap();
        }
    }
    ws.on_upgrade(move |socket| gateway_connection(shared, socket))
}

async fn send_frame(socket: &mut WebSocket, frame: &Value) -> bool {
    socket
        .send(WsMessage::Text(frame.to_string().into()))
        .await
        .is_ok()
}

async fn gateway_connection(shared: Arc<Shared>, mut socket: WebSocket) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let conn_id = {
        let mut st = shared.lock();
        st.next_conn_id += 1;
        let id = st.next_conn_id;
        st.conns.insert(
            id,
            Conn {
                tx,
                session: None,
                live: false,
            },
        );
        id
    };
    shared.bump();

    let hello =
        json!({"op": 10, "d": {"heartbeat_interval": HEARTBEAT_INTERVAL_MS}, "s": null, "t": null});
    if send_frame(&mut socket, &hello).await {
        'conn: loop {
            tokio::select! {
                cmd = rx.recv() => match cmd {
                    Some(ConnCmd::Send(frame)) => {
                        if !send_frame(&mut socket, &frame).await {
                            break 'conn;
                        }
                    }
                    // Dropping the socket without a close frame is the point of `Drop`.
                    Some(ConnCmd::Drop) | None => break 'conn,
                },
                msg = socket.recv() => match msg {
                    Some(Ok(WsMessage::Text(text))) => {
                        for reply in client_frame(&shared, conn_id, text.as_str()) {
                            if !send_frame(&mut socket, &reply).await {
                                break 'conn;
                            }
                        }
                    }
                    Some(Ok(WsMessage::Close(_))) => {
                        // Keep reading so that tungstenite flushes its reply to the close frame
                        // (serenity waits for it when it restarts or shuts down a shard).
                        let drain = async { while let Some(Ok(_)) = socket.recv().await {} };
                        let _ = tokio::time::timeout(Duration::from_secs(5), drain).await;
                        break 'conn;
                    }
                    Some(Ok(_)) => {}
                    Some(Err(_)) | None => break 'conn,
                },
            }
        }
    }

    shared.lock().conns.remove(&conn_id);
    shared.bump();
}

/// Handles one frame from the client; returns the frames to send back, in order.
fn client_frame(shared: &Shared, conn_id: u64, text: &str) -> Vec<Value> {
    let Ok(frame) = serde_json::from_str::<Value>(text) else {
        return Vec::new();
    };
    let d = frame.get("d").cloned().unwrap_or(Value::Null);
    let replies = match frame.get("op").and_then(Value::as_u64) {
        Some(1) => {
            shared.lock().heartbeat_count += 1;
            vec![json!({"op": 11, "d": null, "s": null, "t": null})]
        }
        Some(2) => identify(shared, conn_id, d),
        Some(6) => resume(shared, conn_id, &d),
        _ => Vec::new(),
    };
    shared.bump();
    replies
}

fn identify(shared: &Shared, conn_id: u64, d: Value) -> Vec<Value> {
    let ids = &shared.ids;
    let shard = d.get("shard").cloned().unwrap_or_else(|| json!([0, 1]));
    let mut st = shared.lock();
    st.identify_count += 1;
    st.last_identify = Some(d);
    st.session_counter += 1;
    let session_id = format!("standin-session-{}", st.session_counter);
    st.sessions.insert(session_id.clone(), 1);
    if let Some(conn) = st.conns.get_mut(&conn_id) {
        conn.session = Some(session_id.clone());
        conn.live = true;
    }
    let mut user = bot_user_json(ids);
    user["verified"] = json!(true);
    user["mfa_enabled"] = json!(false);
    user["email"] = Value::Null;
    let ready = json!({
        "v": 10,
        "user": user,
        "guilds": [],
        "session_id": session_id,
        "session_type": "normal",
        "resume_gateway_url": ids.gateway_url,
        "shard": shard,
        "application": {"id": ids.application_id.to_string(), "flags": 0},
        "private_channels": [],
        "relationships": [],
        "presences": [],
        "guild_join_requests": [],
        "geo_ordered_rtc_regions": [],
        "user_settings": {},
        "auth": {},
        "_trace": ["[\"askrelay-standin\"]"],
    });
    vec![json!({"op": 0, "t": "READY", "s": 1, "d": ready})]
}

fn resume(shared: &Shared, conn_id: u64, d: &Value) -> Vec<Value> {
    let session_id = d
        .get("session_id")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let mut st = shared.lock();
    st.resume_count += 1;
    let Some(seq) = st.sessions.get_mut(&session_id) else {
        return vec![json!({"op": 9, "d": false, "s": null, "t": null})];
    };
    *seq += 1;
    let s = *seq;
    for (id, conn) in st.conns.iter_mut() {
        if *id == conn_id {
            conn.session = Some(session_id.clone());
            conn.live = true;
        } else if conn.session.as_deref() == Some(session_id.as_str()) {
            conn.live = false;
        }
    }
    vec![json!({"op": 0, "t": "RESUMED", "s": s, "d": {"_trace": ["[\"askrelay-standin\"]"]}})]
}

// ---------------------------------------------------------------------------------------------
// REST

struct Reply {
    status: u16,
    body: Option<Value>,
    headers: Vec<(String, String)>,
}

impl Reply {
    fn json(status: u16, body: Value) -> Reply {
        Reply {
            status,
            body: Some(body),
            headers: Vec::new(),
        }
    }

    fn no_content() -> Reply {
        Reply {
            status: 204,
            body: None,
            headers: Vec::new(),
        }
    }

    fn error(status: u16, code: u64, message: &str) -> Reply {
        Reply::json(status, json!({"message": message, "code": code}))
    }

    fn not_found() -> Reply {
        Reply::error(404, 0, "404: Not Found")
    }

    fn unknown_message() -> Reply {
        Reply::error(404, 10008, "Unknown Message")
    }

    fn unknown_webhook() -> Reply {
        Reply::error(404, 10015, "Unknown Webhook")
    }

    fn into_response(self) -> Response {
        let mut builder = Response::builder().status(self.status);
        for (k, v) in &self.headers {
            builder = builder.header(k.as_str(), v.as_str());
        }
        let response = match self.body {
            Some(body) => builder
                .header("content-type", "application/json")
                .body(Body::from(body.to_string())),
            None => builder.body(Body::empty()),
        };
        response.expect("stand-in: building a response")
    }
}

async fn rest(
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
        let reply = handle_rest(&mut st, &shared.ids, method.as_str(), &path, body.as_ref());
        st.requests.push(Recorded {
            method: method.as_str().to_string(),
            path,
            query,
            body,
            status: reply.status,
            headers: recorded_headers,
            at,
        });
        reply
    };
    shared.bump();
    reply.into_response()
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

fn strip_api_prefix(path: &str) -> &str {
    if let Some(rest) = path.strip_prefix("/api/v") {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 {
            return &rest[digits..];
        }
    }
    path.strip_prefix("/api").unwrap_or(path)
}

fn handle_rest(st: &mut St, ids: &Ids, method: &str, path: &str, body: Option<&Value>) -> Reply {
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
            create_channel_message(st, ids, cid, body)
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

/// With rate limits on: `Err(429)` for a request over a limit, else the `X-RateLimit-*` headers
/// of its bucket when it has a limited one (creating a channel message).
#[allow(clippy::result_large_err)]
fn check_rate_limits(
    st: &mut St,
    method: &str,
    segs: &[&str],
) -> Result<Option<Vec<(String, String)>>, Reply> {
    let Some(limits) = st.rate_limits.clone() else {
        return Ok(None);
    };
    let now = Instant::now();
    // Interaction callbacks are exempt from the global limit, as on Discord.
    if segs.first() != Some(&"interactions") {
        if let Err(retry) = take_window(
            &mut st.global_window,
            now,
            limits.global_per_second,
            Duration::from_secs(1),
        ) {
            st.limited.global += 1;
            let retry = secs_up(retry);
            return Err(Reply {
                status: 429,
                body: Some(json!({
                    "message": "You are being rate limited.",
                    "retry_after": retry,
                    "global": true,
                })),
                headers: vec![
                    ("retry-after".to_string(), format!("{retry:.3}")),
                    ("x-ratelimit-global".to_string(), "true".to_string()),
                    ("x-ratelimit-scope".to_string(), "global".to_string()),
                ],
            });
        }
    }
    let ["channels", cid, "messages"] = segs else {
        return Ok(None);
    };
    if method != "POST" {
        return Ok(None);
    }
    let Some(cid) = parse_snowflake(cid) else {
        return Ok(None);
    };
    let bucket = hash_hex(&format!("POST channels/{cid}/messages"));
    let mut window = st.channel_windows.get(&cid).copied();
    let taken = take_window(
        &mut window,
        now,
        limits.channel_messages,
        limits.channel_window,
    );
    if let Some(w) = window {
        st.channel_windows.insert(cid, w);
    }
    let (remaining, reset_after) = match taken {
        Ok(t) => t,
        Err(retry) => (0, retry),
    };
    let reset_after = secs_up(reset_after);
    let mut headers = vec![
        (
            "x-ratelimit-limit".to_string(),
            limits.channel_messages.to_string(),
        ),
        ("x-ratelimit-remaining".to_string(), remaining.to_string()),
        (
            "x-ratelimit-reset".to_string(),
            format!("{:.3}", now_secs_f64() + reset_after),
        ),
        (
            "x-ratelimit-reset-after".to_string(),
            format!("{reset_after:.3}"),
        ),
        ("x-ratelimit-bucket".to_string(), bucket),
    ];
    if taken.is_err() {
        st.limited.channel += 1;
        headers.push(("retry-after".to_string(), format!("{reset_after:.3}")));
        headers.push(("x-ratelimit-scope".to_string(), "user".to_string()));
        return Err(Reply {
            status: 429,
            body: Some(json!({
                "message": "You are being rate limited.",
                "retry_after": reset_after,
                "global": false,
            })),
            headers,
        });
    }
    Ok(Some(headers))
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

fn bucket_key(method: &str, segs: &[&str]) -> String {
    // Discord buckets by route with the major parameter (channel, webhook/token) kept.
    let major: Vec<&str> = segs.iter().take(3).copied().collect();
    format!("{method} {}", major.join("/"))
}

fn ratelimit_headers(bucket: &str) -> Vec<(String, String)> {
    vec![
        ("x-ratelimit-limit".to_string(), "5".to_string()),
        ("x-ratelimit-remaining".to_string(), "4".to_string()),
        (
            "x-ratelimit-reset".to_string(),
            format!("{:.3}", now_secs_f64() + 1.0),
        ),
        ("x-ratelimit-reset-after".to_string(), "1.000".to_string()),
        ("x-ratelimit-bucket".to_string(), hash_hex(bucket)),
    ]
}

fn hash_hex(s: &str) -> String {
    // FNV-1a, enough for a stable bucket id.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

fn create_channel_message(st: &mut St, ids: &Ids, cid: u64, body: Option<&Value>) -> Reply {
    let Some(body) = body.filter(|b| b.is_object()) else {
        return Reply::error(400, 50006, "Cannot send an empty message");
    };
    if let Some(err) = validate_message(body) {
        return err;
    }
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
    if let Some(key) = &nonce_key {
        if let Some(&(mid, at)) = st.nonces.get(key) {
            if at.elapsed() < NONCE_WINDOW {
                if let Some(existing) = st.messages.iter().find(|m| m.id == mid) {
                    return Reply::json(200, existing.value.clone());
                }
            }
        }
    }
    let id = st.next_snowflake();
    let msg = build_message(ids, id, cid, body, None);
    st.messages.push(StoredMessage {
        channel_id: cid,
        id,
        value: msg.clone(),
    });
    st.created.push(msg.clone());
    if let Some(key) = nonce_key {
        st.nonces.insert(key, (id, Instant::now()));
    }
    Reply::json(200, msg)
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

/// The checks Discord makes that the OpenAPI spec does not (see DISCORD-NOTES.md).
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

fn bot_user_json(ids: &Ids) -> Value {
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

fn now_timestamp() -> String {
    serenity::model::Timestamp::now()
        .to_rfc3339()
        .unwrap_or_else(|| "2025-01-01T00:00:00.000000+00:00".to_string())
}

// ---------------------------------------------------------------------------------------------
// TLS (StandInOptions::tls)

/// Serves `app` over TLS on 127.0.0.1:0 with a certificate for discord.com.
async fn start_tls(app: Router) -> TlsInfo {
    use tokio_rustls::rustls;
    let ca_key = rcgen::KeyPair::generate().expect("stand-in: CA key");
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("CA params");
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "askrelay stand-in CA");
    ca_params.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::CrlSign,
        rcgen::KeyUsagePurpose::DigitalSignature,
    ];
    let ca = rcgen::CertifiedIssuer::self_signed(ca_params, ca_key).expect("stand-in: CA cert");
    let leaf_key = rcgen::KeyPair::generate().expect("stand-in: leaf key");
    let leaf = rcgen::CertificateParams::new(vec!["discord.com".to_string()])
        .expect("leaf params")
        .signed_by(&leaf_key, &ca)
        .expect("stand-in: leaf cert");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("stand-in: TLS versions")
        .with_no_client_auth()
        .with_single_cert(
            vec![leaf.der().clone(), ca.der().clone()],
            rustls::pki_types::PrivateKeyDer::Pkcs8(leaf_key.serialize_der().into()),
        )
        .expect("stand-in: TLS config");
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("stand-in: bind 127.0.0.1:0 for TLS");
    let addr = tcp.local_addr().expect("stand-in: TLS local_addr");
    let (tx, rx) = mpsc::channel(64);
    let server = tokio::spawn(async move {
        // Handshakes run in their own tasks so that a slow one never holds up the others.
        let accept = async move {
            loop {
                let Ok((stream, peer)) = tcp.accept().await else {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                };
                let (acceptor, tx) = (acceptor.clone(), tx.clone());
                tokio::spawn(async move {
                    let hs = tokio::time::timeout(WAIT_LIMIT, acceptor.accept(stream)).await;
                    if let Ok(Ok(tls)) = hs {
                        let _ = tx.send((tls, peer)).await;
                    }
                });
            }
        };
        let serve = axum::serve(TlsListener { rx, addr }, app);
        tokio::select! {
            _ = accept => {}
            _ = serve => {}
        }
    });
    TlsInfo {
        addr,
        root_pem: ca.pem(),
        _server: Arc::new(ServerTask(server)),
    }
}

struct TlsListener {
    rx: mpsc::Receiver<(
        tokio_rustls::server::TlsStream<tokio::net::TcpStream>,
        std::net::SocketAddr,
    )>,
    addr: std::net::SocketAddr,
}

impl axum::serve::Listener for TlsListener {
    type Io = tokio_rustls::server::TlsStream<tokio::net::TcpStream>;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.rx.recv().await {
            Some(conn) => conn,
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.addr)
    }
}
