//! Whether the gateway session is connected, for `/healthz`, `askrelay health`, readiness and
//! the `askrelay_discord_gateway_connected` gauge; and the one summary of an outage in the
//! logs: a WARN when the session drops and an INFO with the downtime when it is back, where
//! serenity would log every failed attempt (its own logs are filtered to errors by default).
//!
//! "Up" comes from the gateway's own events (Ready, Resumed). serenity tells a raw handler
//! nothing when a session drops, so "down" is read from the shard manager's runner table: a
//! shard that is reconnecting or being replaced shows a connecting stage, or no runner at all.
//! The table is only looked at when nobody else holds it (serenity may hold it for seconds
//! while it replaces a shard), and a runner still in its first stage says nothing: its stage
//! may be set only after its session is up.
//!
//! Why a connection failed (DNS, TLS, a refused or rejected connection, a proxy) serenity says
//! only in its own log events: [`Causes`] catches them whatever the log filter, and the watch
//! logs each new cause once at WARN, with the time until serenity's next try.

use serenity::gateway::{ConnectionStage, ShardRunnerInfo};
use serenity::model::id::ShardId;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::filter::{Filtered, Targets};
use tracing_subscriber::layer::{Context, Layer};

/// serenity's pause between two tries at starting a shard (its `WAIT_BETWEEN_BOOTS_IN_SECONDS`).
const RETRY: Duration = Duration::from_secs(5);

/// The newest failure serenity logged, and when; taken by [`watch`]. One per process: every
/// gateway client in it logs through the same subscriber.
static FAILURE: Mutex<Option<(String, Instant)>> = Mutex::new(None);

/// How often the runner table is read: a drop shorter than this may go unnoticed (the session
/// resumed; nothing was lost).
const EVERY: Duration = Duration::from_millis(250);

/// The gateway's state as the rest of the daemon sees it. It outlives the lead: a follower
/// reports a closed session, and a node that leads again reconnects rather than connects.
pub(crate) struct Gateway {
    connected: watch::Sender<bool>,
    /// When the session dropped, while it is down after having been up.
    down_since: Mutex<Option<Instant>>,
    /// Whether a first Ready was seen: it is logged and registers `/askrelay`; later ones are
    /// reconnects, summarised instead.
    connected_once: AtomicBool,
    /// The failure causes logged while the session is down: each is logged once per outage,
    /// not at every try.
    causes: Mutex<Vec<String>>,
    /// The bot's own user id, from the first Ready (0 before it): a message by this author is
    /// one askrelay posted.
    bot: AtomicU64,
}

impl Default for Gateway {
    fn default() -> Self {
        Gateway {
            connected: watch::Sender::new(false),
            down_since: Mutex::new(None),
            connected_once: AtomicBool::new(false),
            causes: Mutex::new(Vec::new()),
            bot: AtomicU64::new(0),
        }
    }
}

impl Gateway {
    /// Records the bot's user id (from a Ready).
    pub fn set_bot(&self, id: u64) {
        self.bot.store(id, Ordering::SeqCst);
    }

    /// Whether `author` is this bot (false before the first Ready).
    pub fn is_bot(&self, author: u64) -> bool {
        let bot = self.bot.load(Ordering::SeqCst);
        bot != 0 && bot == author
    }

    /// Whether this Ready is the first of the daemon's run (true once).
    pub fn first_ready(&self) -> bool {
        !self.connected_once.swap(true, Ordering::SeqCst)
    }

    pub fn subscribe(&self) -> watch::Receiver<bool> {
        self.connected.subscribe()
    }

    /// The session is up (Ready or Resumed).
    pub fn up(&self) {
        // What failed before this session no longer matters.
        self.causes.lock().unwrap().clear();
        FAILURE.lock().unwrap().take();
        if self.connected.send_replace(true) {
            return;
        }
        if let Some(since) = self.down_since.lock().unwrap().take() {
            tracing::info!(
                downtime = %crate::domain::expiry::human(since.elapsed()),
                "the Discord gateway connection is back"
            );
        }
    }

    /// This daemon closed the session (it stepped down as its cluster's leader): not an outage.
    pub fn closed(&self) {
        self.connected.send_replace(false);
        *self.down_since.lock().unwrap() = None;
        self.causes.lock().unwrap().clear();
    }

    /// The session is gone; said once per outage.
    fn down(&self) {
        if !self.connected.send_replace(false) {
            return;
        }
        *self.down_since.lock().unwrap() = Some(Instant::now());
        tracing::warn!(
            "lost the Discord gateway connection; reconnecting (questions are still posted over \
             REST, clicks arrive once it is back)"
        );
    }

    /// A try failed: logged unless its cause was already logged in this outage.
    fn failed(&self, cause: String, at: Instant) {
        let mut logged = self.causes.lock().unwrap();
        if logged.contains(&cause) {
            return;
        }
        let next_try_secs = RETRY.saturating_sub(at.elapsed()).as_secs_f32().ceil() as u64;
        tracing::warn!(
            cause = %cause,
            next_try_secs,
            "cannot connect to the Discord gateway; trying again in {next_try_secs} s"
        );
        logged.push(cause);
    }
}

/// A layer that keeps serenity's gateway and client WARN and ERROR events (what a failed
/// connection attempt logs) for [`watch`]; `main` adds it beside the log output, whose filter
/// (`serenity=error` by default) would hide most of them.
pub struct Causes;

impl Causes {
    /// The layer with its own filter: it sees serenity's warnings and errors only.
    pub fn layer<S>() -> Filtered<Causes, Targets, S>
    where
        S: Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    {
        Causes.with_filter(
            Targets::new()
                .with_target("serenity::gateway", Level::WARN)
                .with_target("serenity::client", Level::WARN),
        )
    }
}

impl<S: Subscriber> Layer<S> for Causes {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        struct Message(String);
        impl Visit for Message {
            fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
                if field.name() == "message" {
                    self.0 = format!("{value:?}");
                }
            }
        }
        let mut m = Message(String::new());
        event.record(&mut m);
        if let Some(cause) = cause_of(&m.0) {
            *FAILURE.lock().unwrap() = Some((cause, Instant::now()));
        }
    }
}

/// The cause in one of serenity's messages about a failed connection, without its shard
/// prefix; `None` for messages that are not about one.
fn cause_of(message: &str) -> Option<String> {
    const FAILURES: [&str; 5] = [
        "Err starting shard",
        "HTTP request to get gateway URL failed",
        "Resume failed",
        "Failed to resume",
        "Shard handler received err",
    ];
    FAILURES.iter().find(|f| message.contains(*f))?;
    let cause = message.split_once(": ").map_or(message, |(_, c)| c).trim();
    Some(readable(cause))
}

/// A cause as people read it, from the `Debug` text of serenity's error: an HTTP status (with
/// the body, when it is text) instead of the whole response with its headers, an I/O error's
/// message; anything else as it is, cut at 300 characters.
fn readable(cause: &str) -> String {
    if let Some(status) = after(cause, "Http(Response { status: ") {
        let code: String = status.chars().take_while(char::is_ascii_digit).collect();
        let body = after(cause, "body: Some([")
            .and_then(|b| b.split_once("])"))
            .and_then(|(bytes, _)| {
                bytes
                    .split(", ")
                    .map(|b| b.trim().parse::<u8>().ok())
                    .collect::<Option<Vec<u8>>>()
            })
            .and_then(|b| String::from_utf8(b).ok())
            .filter(|b| !b.trim().is_empty() && !b.chars().any(char::is_control));
        return match body {
            Some(body) => format!("HTTP {code} from the gateway: {}", cut(&body, 120)),
            None => format!("HTTP {code} from the gateway"),
        };
    }
    for key in ["message: \"", "error: \""] {
        if let Some((m, _)) = after(cause, key).and_then(|m| m.split_once('"')) {
            return cut(m, 300);
        }
    }
    cut(cause, 300)
}

fn after<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.find(key).map(|i| &text[i + key.len()..])
}

fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_owned(),
    }
}

/// Watches the shards' runners for a session that dropped, until shutdown.
pub(crate) async fn watch(
    runners: Arc<tokio::sync::Mutex<HashMap<ShardId, ShardRunnerInfo>>>,
    gateway: Arc<Gateway>,
    shutdown: CancellationToken,
) {
    let mut tick = tokio::time::interval(EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tick.tick() => {}
        }
        let Ok(table) = runners.try_lock() else {
            continue;
        };
        let stages: Vec<ConnectionStage> = table.values().map(|r| r.stage).collect();
        drop(table);
        if stages.contains(&ConnectionStage::Connected) {
            continue;
        }
        let reconnecting = stages.is_empty()
            || stages.iter().any(|s| {
                matches!(
                    s,
                    ConnectionStage::Connecting
                        | ConnectionStage::Handshake
                        | ConnectionStage::Identifying
                        | ConnectionStage::Resuming
                )
            });
        if reconnecting && *gateway.connected.borrow() {
            gateway.down();
        }
        // A failure is kept until the drop is said (serenity may log it while the runner
        // table still shows the old session), so that the cause follows the drop.
        if !*gateway.connected.borrow() {
            if let Some((cause, at)) = FAILURE.lock().unwrap().take() {
                gateway.failed(cause, at);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::cause_of;

    #[test]
    fn causes_read_as_people_say_them() {
        let refused = "[Shard Queuer] Err starting shard 0: Tungstenite(Io(Os { code: 111, kind: \
                       ConnectionRefused, message: \"Connection refused\" }))";
        assert_eq!(cause_of(refused).unwrap(), "Connection refused");
        let dns = "[Shard Queuer] Err starting shard 0: Tungstenite(Io(Custom { kind: \
                   Uncategorized, error: \"failed to lookup address information: Name or \
                   service not known\" }))";
        assert_eq!(
            cause_of(dns).unwrap(),
            "failed to lookup address information: Name or service not known"
        );
        let status = "[Shard Queuer] Err starting shard 0: Tungstenite(Http(Response { status: \
                      503, version: HTTP/1.1, headers: {\"date\": \"Wed, 02 Dec 2026 06:21:33 \
                      GMT\"}, body: Some([100, 111, 119, 110]) }))";
        assert_eq!(cause_of(status).unwrap(), "HTTP 503 from the gateway: down");
        let proxy = "Failed to resume: Tungstenite(Http(Response { status: 407, version: \
                     HTTP/1.1, headers: {}, body: None }))";
        assert_eq!(cause_of(proxy).unwrap(), "HTTP 407 from the gateway");
        let tls = "[Shard Queuer] Err starting shard 0: Tungstenite(Tls(Rustls(\
                   InvalidCertificate(UnknownIssuer))))";
        assert_eq!(
            cause_of(tls).unwrap(),
            "Tungstenite(Tls(Rustls(InvalidCertificate(UnknownIssuer))))"
        );
        assert_eq!(cause_of("[ShardRunner] Sending half DC; restarting"), None);
    }
}
