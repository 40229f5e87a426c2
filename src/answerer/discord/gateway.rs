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

use serenity::gateway::{ConnectionStage, ShardRunnerInfo};
use serenity::model::id::ShardId;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

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
}

impl Default for Gateway {
    fn default() -> Self {
        Gateway {
            connected: watch::Sender::new(false),
            down_since: Mutex::new(None),
            connected_once: AtomicBool::new(false),
        }
    }
}

impl Gateway {
    /// Whether this Ready is the first of the daemon's run (true once).
    pub fn first_ready(&self) -> bool {
        !self.connected_once.swap(true, Ordering::SeqCst)
    }

    pub fn subscribe(&self) -> watch::Receiver<bool> {
        self.connected.subscribe()
    }

    /// The session is up (Ready or Resumed).
    pub fn up(&self) {
        if self.connected.send_replace(true) {
            return;
        }
        if let Some(since) = self.down_since.lock().unwrap().take() {
            tracing::info!(
                downtime = %humantime::format_duration(Duration::from_secs(since.elapsed().as_secs())),
                "the Discord gateway connection is back"
            );
        }
    }

    /// This daemon closed the session (it stepped down as its cluster's leader): not an outage.
    pub fn closed(&self) {
        self.connected.send_replace(false);
        *self.down_since.lock().unwrap() = None;
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
    }
}
