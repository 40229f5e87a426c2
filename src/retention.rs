//! Retention (`[retention]`, off by default): every `interval_secs`, and once at start-up,
//! deletes the requests that ended more than `ended_after_days` ago with everything stored
//! about them, and the audit rows older than `audit_after_days` (through the audit log's one
//! narrow exception, see docs/security.md). Pending requests are never pruned.

use crate::config::RetentionConfig;
use crate::domain::clock::now_ms;
use crate::domain::store::{Pruned, Store};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

const DAY_MS: f64 = 86_400_000.0;

/// Starts the pruning task when anything is to be pruned. The receiver holds the totals
/// pruned since start-up (tests wait on it).
pub fn spawn(
    config: &RetentionConfig,
    store: Arc<dyn Store>,
    tasks: &TaskTracker,
    shutdown: CancellationToken,
) -> watch::Receiver<Pruned> {
    let (tx, rx) = watch::channel(Pruned::default());
    if !config.enabled() {
        return rx;
    }
    let config = config.clone();
    tasks.spawn(async move {
        let mut every = tokio::time::interval(Duration::from_secs(config.interval_secs));
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = every.tick() => {}
            }
            let now = now_ms();
            let before = |days: Option<f64>| days.map(|d| now - (d * DAY_MS) as i64);
            match store
                .prune(
                    before(config.ended_after_days),
                    before(config.audit_after_days),
                )
                .await
            {
                Ok(p) => {
                    if p.requests > 0 || p.audit > 0 {
                        tracing::info!(
                            requests = p.requests,
                            audit_rows = p.audit,
                            "retention: pruned old records"
                        );
                    }
                    tx.send_modify(|t| {
                        t.requests += p.requests;
                        t.audit += p.audit;
                    });
                }
                Err(e) => {
                    tracing::warn!(error = %format!("{e:#}"), "retention: pruning failed; trying again at the next interval")
                }
            }
        }
    });
    rx
}
