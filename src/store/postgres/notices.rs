//! Notices between the nodes of a cluster: what they say, and listening for them.
//!
//! Notices are `NOTIFY`s sent by the store's writes, in their transactions (`askrelay_outbox`
//! with the writing node's id, `askrelay_ended` with `KEY NODE`), and heard here on a listening
//! connection of its own, `askrelay-listen NODE`. Every answer that counts sends
//! `askrelay_ended`, not only the last: the owner's view of the request changed. A node hears
//! its own notices too; they only wake it for work it would find anyway.
//!
//! Without a pooler every node listens on its own connection; behind one only the leader does
//! (cluster.rs's module comment), and [`subscribe`] listens while this node leads.

use super::cluster::bounded;
use super::Backend;
use crate::domain::cluster::Notice;
use anyhow::Result;
use sqlx::postgres::{PgListener, PgPoolOptions};
use sqlx::PgPool;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// The channel of "outbox work may be due" (a request stored, answered or ended).
pub(super) const OUTBOX: &str = "askrelay_outbox";
/// The channel of "this request was answered (one of its questions) or ended", with `KEY NODE`
/// (the node that owns it).
pub(super) const ENDED: &str = "askrelay_ended";

/// The pauses between attempts to listen again after a cut: from the first, doubling up to the
/// last.
const FIRST_PAUSE: Duration = Duration::from_millis(100);
const LAST_PAUSE: Duration = Duration::from_secs(5);

/// The payload of an `askrelay_ended` notice.
pub(super) fn ended_payload(key: i64, node: Option<&str>) -> String {
    format!("{key} {}", node.unwrap_or(""))
}

/// The notices this node hears, from now on, for as long as the receiver lives and the store is
/// open, on a connection named `askrelay-listen NODE`.
pub(super) async fn subscribe(shared: &Arc<Backend>, node: &str) -> Result<mpsc::Receiver<Notice>> {
    let name = format!("askrelay-listen {node}");
    if shared.pooled() {
        tracing::info!("behind the pooler, this node listens for cluster notices only while it leads; it polls every poll_interval_ms meanwhile");
        let (tx, rx) = mpsc::channel(256);
        let task = shared.clone();
        shared
            .tasks
            .spawn(async move { relay_while_leading(task, name, tx).await });
        return Ok(rx);
    }
    // Listening before this returns: whatever commits after it is heard.
    let listening = listen(shared, &name).await?;
    tracing::info!("listening for cluster notices");
    let (tx, rx) = mpsc::channel(256);
    let task = shared.clone();
    shared.tasks.spawn(async move {
        let stop = task.closed.clone();
        relay(task, name, listening, tx, stop).await
    });
    Ok(rx)
}

/// A listening connection: a pool of one (which `PgListener` reconnects through) and the
/// listener on it.
struct Listening {
    listener: PgListener,
    pool: PgPool,
}

async fn listen(shared: &Backend, name: &str) -> Result<Listening> {
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .idle_timeout(None)
        .max_lifetime(None)
        .acquire_timeout(shared.connect.deadline)
        .connect_lazy_with(shared.connect.named(name));
    let result = bounded(shared.connect.deadline, async {
        let mut listener = PgListener::connect_with(&pool).await?;
        listener.listen_all([OUTBOX, ENDED]).await?;
        anyhow::Ok(listener)
    })
    .await;
    match result {
        Ok(listener) => Ok(Listening { listener, pool }),
        // Dropping the pool closes its connection; waiting for that could hang on a dead one.
        Err(e) => Err(e.context(format!(
            "cannot listen for notices on the database {}",
            shared.connect.shown
        ))),
    }
}

/// What a notification says, if it is one of ours and not about this node's own work (`me`):
/// the node that stored or changed something acts on it itself, and hearing of it again would
/// only race its own posting and editing.
fn notice(channel: &str, payload: &str, me: &str) -> Option<Notice> {
    match channel {
        OUTBOX if payload == me => None,
        OUTBOX => Some(Notice::Outbox),
        ENDED => {
            let (key, node) = payload.split_once(' ')?;
            Some(Notice::Ended {
                key: key.parse().ok()?,
                node: node.to_owned(),
            })
        }
        _ => None,
    }
}

/// Hands notifications to `tx` until it is dropped or the store closes. A connection that is
/// lost comes back: `PgListener` reconnects on its own when the server closed the connection
/// (its `try_recv` then returns `None`, once it listens again); for any other failure the
/// listener is built anew, with a growing pause between attempts. Either way,
/// [`Notice::Resumed`] follows once notices flow again.
async fn relay(
    shared: Arc<Backend>,
    name: String,
    listening: Listening,
    tx: mpsc::Sender<Notice>,
    closed: CancellationToken,
) {
    let mut current = Some(listening);
    let mut pause = FIRST_PAUSE;
    // How often the stream checks that its connection is alive (a query within the deadline):
    // a connection cut without a word (a network partition) would otherwise go unnoticed
    // until the next notice, and the notices meanwhile lost.
    let mut probe = tokio::time::interval(shared.connect.deadline);
    probe.reset();
    loop {
        let Some(l) = current.as_mut() else {
            tokio::select! {
                _ = closed.cancelled() => break,
                _ = tx.closed() => break,
                _ = tokio::time::sleep(pause) => {}
            }
            pause = (pause * 2).min(LAST_PAUSE);
            match listen(&shared, &name).await {
                Ok(l) => {
                    tracing::info!("the notice stream was cut and is back");
                    current = Some(l);
                    pause = FIRST_PAUSE;
                    probe.reset();
                    if !send(&closed, &tx, Notice::Resumed).await {
                        break;
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %format!("{e:#}"), "the notice stream is still cut")
                }
            }
            continue;
        };
        let next = tokio::select! {
            _ = closed.cancelled() => break,
            _ = tx.closed() => break,
            r = l.listener.try_recv() => r.map_err(anyhow::Error::from),
            _ = probe.tick() => {
                let alive = bounded(shared.connect.deadline, async {
                    sqlx::query("SELECT 1").execute(&mut l.listener).await?;
                    anyhow::Ok(())
                })
                .await;
                match alive {
                    Ok(()) => continue,
                    Err(e) => Err(e),
                }
            }
        };
        let out = match next {
            Ok(Some(n)) => {
                match notice(n.channel(), n.payload(), shared.node().unwrap_or_default()) {
                    Some(notice) => notice,
                    None => continue,
                }
            }
            Ok(None) => {
                tracing::info!("the notice stream was cut and is back");
                Notice::Resumed
            }
            Err(e) => {
                tracing::warn!(
                    error = %format!("{e:#}"),
                    "the notice stream is cut; reconnecting"
                );
                // Not waiting for the old connection: it may never answer again.
                current = None;
                continue;
            }
        };
        if !send(&closed, &tx, out).await {
            break;
        }
    }
    if let Some(Listening { listener, pool }) = current {
        drop(listener);
        let _ = tokio::time::timeout(shared.connect.deadline, pool.close()).await;
    }
}

/// Behind a pooler: listens, on a connection of its own to `database_url`, only while this
/// node leads (see the module comment), and hands notifications to `tx` as [`relay`] does. Each
/// time it starts listening it sends [`Notice::Resumed`]: what was sent while this node did not
/// listen is caught up on.
async fn relay_while_leading(shared: Arc<Backend>, name: String, tx: mpsc::Sender<Notice>) {
    let closed = shared.closed.clone();
    let mut leading = shared.leading.subscribe();
    let mut pause = FIRST_PAUSE;
    loop {
        let gone = tokio::select! {
            _ = closed.cancelled() => true,
            _ = tx.closed() => true,
            // The guard is dropped at once: holding it would block the beat that sends.
            r = leading.wait_for(|l| *l) => r.is_err(),
        };
        if gone {
            break;
        }
        let listening = match listen(&shared, &name).await {
            Ok(l) => {
                tracing::info!("leading: listening for cluster notices");
                pause = FIRST_PAUSE;
                l
            }
            Err(e) => {
                tracing::warn!(error = %format!("{e:#}"), "the leader cannot listen for notices yet; it polls meanwhile");
                tokio::select! {
                    _ = closed.cancelled() => break,
                    _ = tx.closed() => break,
                    _ = tokio::time::sleep(pause) => {}
                }
                pause = (pause * 2).min(LAST_PAUSE);
                continue;
            }
        };
        if !send(&closed, &tx, Notice::Resumed).await {
            break;
        }
        let stop = closed.child_token();
        let relaying = relay(
            shared.clone(),
            name.clone(),
            listening,
            tx.clone(),
            stop.clone(),
        );
        tokio::pin!(relaying);
        let led = tokio::select! {
            _ = &mut relaying => None,
            r = leading.wait_for(|l| !*l) => Some(r.is_ok()),
        };
        if led.is_some() {
            // The lead ended: the listening connection is closed.
            stop.cancel();
            relaying.await;
        }
    }
}

/// Hands `notice` on; false once nobody listens or the store closed (a receiver that stopped
/// reading must not hold up `close`).
async fn send(closed: &CancellationToken, tx: &mpsc::Sender<Notice>, notice: Notice) -> bool {
    tokio::select! {
        _ = closed.cancelled() => false,
        sent = tx.send(notice) => sent.is_ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_are_read_from_their_channel_and_payload() {
        assert_eq!(notice(OUTBOX, "b", "a"), Some(Notice::Outbox));
        assert_eq!(notice(OUTBOX, "a", "a"), None, "a node's own work");
        assert_eq!(
            notice(ENDED, &ended_payload(42, Some("node a")), "a"),
            Some(Notice::Ended {
                key: 42,
                node: "node a".into()
            })
        );
        assert_eq!(
            notice(ENDED, &ended_payload(7, None), "a"),
            Some(Notice::Ended {
                key: 7,
                node: String::new()
            })
        );
        assert_eq!(notice(ENDED, "x y", "a"), None);
        assert_eq!(notice("other", "", "a"), None);
    }
}
