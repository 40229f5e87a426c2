//! The cluster over one PostgreSQL database: node leases, the lead, and notices.
//!
//! Each node holds a *lease connection*: a connection of its own, not from the pool, named
//! `askrelay-lease NODE` in `pg_stat_activity`. On it the node holds a session advisory lock
//! keyed by its node id, so a second daemon with the same id is refused; and, while it leads,
//! the lead lock. Session locks live exactly as long as their session, so a node that dies, or
//! whose connection the server closes, lets go of both without anyone cleaning up.
//!
//! A node learns that it lost the lead the next time it confirms it ([`Cluster::hold_lead`]):
//! while it leads, that asks `pg_locks` whether its session still holds the lock, and any
//! failure of the lease connection counts as a loss, since a lock on a dead session is gone.
//! The node then reconnects and takes its node lock again; the lead it must win again like
//! anyone else.
//!
//! Notices are `NOTIFY`s sent by the store's writes, in their transactions (`askrelay_outbox`
//! with the writing node's id, `askrelay_ended` with `KEY NODE`), and heard here on a listening
//! connection of its own, `askrelay-listen NODE`. Every answer that counts sends
//! `askrelay_ended`, not only the last: the owner's view of the request changed. A node hears
//! its own notices too; they only wake it for work it would find anyway.

use super::Backend;
use crate::domain::cluster::{Cluster, NodeInfo, Notice};
use crate::domain::request::{now_ms, Post, Request};
use crate::domain::store::Holder;
use anyhow::{bail, Context, Result};
use async_trait::async_trait;
use sqlx::postgres::{PgListener, PgPoolOptions};
use sqlx::{Connection, PgConnection, PgPool};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// The channel of "outbox work may be due" (a request stored, answered or ended).
pub(super) const OUTBOX: &str = "askrelay_outbox";
/// The channel of "this request was answered (one of its questions) or ended", with `KEY NODE`
/// (the node that owns it).
pub(super) const ENDED: &str = "askrelay_ended";

/// The lead lock, in the two-key space of advisory locks, apart from the nodes' one-key locks
/// (`NODE_LOCK`). The first key spells "askr".
const LEAD_LOCK: (u32, u32) = (0x6173_6b72, 1);

/// Takes the lead lock if it is free.
fn try_lead_sql() -> String {
    format!(
        "SELECT pg_try_advisory_lock({}, {})",
        LEAD_LOCK.0, LEAD_LOCK.1
    )
}

/// Whether this session holds the lead lock (`objsubid` 2: a lock of two keys).
fn holds_lead_sql() -> String {
    format!(
        "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' \
         AND pid = pg_backend_pid() AND classid = {} AND objid = {} AND objsubid = 2 \
         AND granted)",
        LEAD_LOCK.0, LEAD_LOCK.1
    )
}

/// A node's lock: a 64-bit hash of its id.
const NODE_LOCK: &str = "hashtextextended('askrelay node ' || $1, 0)";

/// How often the notice stream checks that its connection is alive: a connection cut without
/// a word (a network partition) would otherwise go unnoticed until the next notice.
const LISTEN_PROBE: Duration = Duration::from_secs(30);

/// The pauses between attempts to listen again after a cut: from the first, doubling up to the
/// last.
const FIRST_PAUSE: Duration = Duration::from_millis(100);
const LAST_PAUSE: Duration = Duration::from_secs(5);

/// The payload of an `askrelay_ended` notice.
pub(super) fn ended_payload(key: i64, node: Option<&str>) -> String {
    format!("{key} {}", node.unwrap_or(""))
}

/// This node's lease connection and what it holds.
#[derive(Default)]
pub(crate) struct Lease {
    /// `None` before the lease is taken, and after the connection broke until a call takes
    /// the node lock again.
    conn: Option<PgConnection>,
    /// Whether the lead lock is held on `conn`.
    leading: bool,
}

/// Takes this node's lease: its lock on a lease connection, and its row in `nodes`.
pub(super) async fn acquire(shared: &Backend, me: &Holder) -> Result<()> {
    if let Some(held) = shared.me.get() {
        if held.node != me.node {
            bail!(
                "this store already holds the lease of node {:?}, not {:?}",
                held.node,
                me.node
            );
        }
    }
    let mut lease = shared.lease.lock().await;
    if lease.conn.is_some() {
        return Ok(());
    }
    let conn = take_node_lock(shared, me).await?;
    lease.conn = Some(conn);
    lease.leading = false;
    let _ = shared.me.set(me.clone());
    Ok(())
}

/// Opens a lease connection and takes the node lock on it, then registers the node; or fails
/// naming the daemon that has the node id.
async fn take_node_lock(shared: &Backend, me: &Holder) -> Result<PgConnection> {
    let mut conn = shared
        .connect
        .dedicated(&format!("askrelay-lease {}", me.node))
        .await?;
    let result = bounded(shared, async {
        let got: bool = sqlx::query_scalar(&format!("SELECT pg_try_advisory_lock({NODE_LOCK})"))
            .bind(&me.node)
            .fetch_one(&mut conn)
            .await?;
        if !got {
            let holder: Option<(String, i64)> =
                sqlx::query_as("SELECT host, pid FROM nodes WHERE node = $1")
                    .bind(&me.node)
                    .fetch_optional(&mut conn)
                    .await?;
            return Ok(Err(holder));
        }
        // Registered only once the lock is ours, so that a refused daemon never overwrites
        // the row of the one that runs.
        sqlx::query(
            "INSERT INTO nodes (node, host, pid, version, heartbeat_at, leader) \
             VALUES ($1, $2, $3, $4, $5, false) \
             ON CONFLICT (node) DO UPDATE SET host = EXCLUDED.host, pid = EXCLUDED.pid, \
             version = EXCLUDED.version, heartbeat_at = EXCLUDED.heartbeat_at, leader = false",
        )
        .bind(&me.node)
        .bind(&me.host)
        .bind(i64::from(me.pid))
        .bind(env!("CARGO_PKG_VERSION"))
        .bind(now_ms())
        .execute(&mut conn)
        .await?;
        anyhow::Ok(Ok(()))
    })
    .await;
    match result {
        Ok(Ok(())) => Ok(conn),
        Ok(Err(holder)) => {
            let _ = conn.close().await;
            match holder {
                Some((host, pid)) if host == me.host && pid == i64::from(me.pid) => bail!(
                    "cluster.node_id {:?}: the node lock is still held by this daemon's previous \
                     lease connection, which the server has not closed yet",
                    me.node
                ),
                Some((host, pid)) => bail!(
                    "cluster.node_id {:?} is in use by another askrelay daemon (pid {pid} on \
                     host {host}); stop it first, or give this daemon its own cluster.node_id",
                    me.node
                ),
                None => bail!(
                    "cluster.node_id {:?} is in use by another askrelay daemon (its pid and \
                     host are unknown); stop it first, or give this daemon its own \
                     cluster.node_id",
                    me.node
                ),
            }
        }
        Err(e) => Err(e.context("cannot take this node's lease")),
    }
}

/// `fut` within the connect timeout: a lease connection that does not answer is as good as
/// broken (a network partition would otherwise hang the caller until TCP gives up).
async fn bounded<T>(shared: &Backend, fut: impl Future<Output = Result<T>>) -> Result<T> {
    match tokio::time::timeout(shared.connect.connect_timeout, fut).await {
        Ok(r) => r,
        Err(_) => bail!(
            "the database did not answer within {}s (postgres.connect_timeout_secs)",
            shared.connect.connect_timeout.as_secs()
        ),
    }
}

/// Records in `nodes` whether this node leads (taking it: and that no other node does).
/// Best effort: the lock is what counts, the column is what listings show.
async fn record_lead(shared: &Backend, node: &str, leading: bool) {
    let sql = if leading {
        "UPDATE nodes SET leader = (node = $1)"
    } else {
        "UPDATE nodes SET leader = false WHERE node = $1"
    };
    if let Err(e) = sqlx::query(sql).bind(node).execute(&shared.pool).await {
        tracing::warn!(error = %e, "cannot record the lead in the nodes table");
    }
}

/// Gives up the lead and the lease: unlocks, and closes the lease connection (which would
/// release every lock of its session anyway). Runs before the pool closes.
pub(super) async fn release(shared: &Backend) {
    let mut lease = shared.lease.lock().await;
    let Some(mut conn) = lease.conn.take() else {
        return;
    };
    if std::mem::take(&mut lease.leading) {
        if let Some(me) = shared.me.get() {
            record_lead(shared, &me.node, false).await;
        }
    }
    let _ = bounded(shared, async {
        sqlx::query("SELECT pg_advisory_unlock_all()")
            .execute(&mut conn)
            .await?;
        conn.close().await?;
        anyhow::Ok(())
    })
    .await;
}

/// The store's cluster: this node's view of the others, sharing the store's pool.
pub struct PgCluster {
    shared: Arc<Backend>,
    node: String,
}

impl PgCluster {
    pub(super) fn new(shared: Arc<Backend>, node: String) -> PgCluster {
        PgCluster { shared, node }
    }

    fn holder(&self) -> Result<Holder> {
        self.shared
            .me
            .get()
            .cloned()
            .context("the cluster is used before the store's lease was taken")
    }
}

#[async_trait]
impl Cluster for PgCluster {
    fn node(&self) -> &str {
        &self.node
    }

    async fn heartbeat(&self, leading: bool) -> Result<()> {
        let me = self.holder()?;
        // An upsert: a row someone deleted comes back.
        sqlx::query(
            "INSERT INTO nodes (node, host, pid, version, heartbeat_at, leader) \
             VALUES ($1, $2, $3, $4, $5, $6) \
             ON CONFLICT (node) DO UPDATE SET host = EXCLUDED.host, pid = EXCLUDED.pid, \
             version = EXCLUDED.version, heartbeat_at = EXCLUDED.heartbeat_at, \
             leader = EXCLUDED.leader",
        )
        .bind(&me.node)
        .bind(&me.host)
        .bind(i64::from(me.pid))
        .bind(env!("CARGO_PKG_VERSION"))
        .bind(now_ms())
        .bind(leading)
        .execute(&self.shared.pool)
        .await?;
        Ok(())
    }

    async fn hold_lead(&self) -> Result<bool> {
        let me = self.holder()?;
        let shared = &*self.shared;
        let mut lease = shared.lease.lock().await;
        let leading = lease.leading;
        if let Some(conn) = lease.conn.as_mut() {
            // Holding: does this session still have the lock? Not holding: take it if free
            // (taking it again while held would stack a second hold on the same session).
            let sql = if leading {
                holds_lead_sql()
            } else {
                try_lead_sql()
            };
            let held = bounded(shared, async {
                Ok(sqlx::query_scalar::<_, bool>(&sql).fetch_one(conn).await?)
            })
            .await;
            match held {
                Ok(held) => {
                    if held != leading {
                        lease.leading = held;
                        if leading {
                            tracing::warn!("this node lost the lead");
                        }
                        record_lead(shared, &me.node, held).await;
                    }
                    return Ok(held);
                }
                Err(e) => {
                    tracing::warn!(
                        error = %format!("{e:#}"),
                        "the lease connection failed; reconnecting"
                    );
                    // Dropping it closes the socket; the server then ends the session and
                    // whatever it held.
                    lease.conn = None;
                }
            }
        }
        // No lease connection (it broke, now or before): a new one, with the node lock again.
        let was_leading = std::mem::take(&mut lease.leading);
        if was_leading {
            record_lead(shared, &me.node, false).await;
        }
        let conn = take_node_lock(shared, &me).await;
        if was_leading {
            // The lead lived on the dead session: it is gone, and this call says so, whether
            // or not the node lock could be taken again (the next call tries again).
            tracing::warn!("this node lost the lead with its lease connection");
            match conn {
                Ok(conn) => lease.conn = Some(conn),
                Err(e) => tracing::warn!(error = %format!("{e:#}"), "cannot renew the lease"),
            }
            return Ok(false);
        }
        let mut conn = conn?;
        let took = bounded(shared, async {
            Ok(sqlx::query_scalar::<_, bool>(&try_lead_sql())
                .fetch_one(&mut conn)
                .await?)
        })
        .await;
        lease.conn = Some(conn);
        let took = took?;
        if took {
            lease.leading = true;
            record_lead(shared, &me.node, true).await;
        }
        Ok(took)
    }

    async fn release_lead(&self) {
        let shared = &*self.shared;
        let mut lease = shared.lease.lock().await;
        if !std::mem::take(&mut lease.leading) {
            return;
        }
        if let Some(conn) = lease.conn.as_mut() {
            let unlocked = bounded(shared, async {
                sqlx::query(&format!(
                    "SELECT pg_advisory_unlock({}, {})",
                    LEAD_LOCK.0, LEAD_LOCK.1
                ))
                .execute(conn)
                .await?;
                anyhow::Ok(())
            })
            .await;
            if let Err(e) = unlocked {
                // The lock must not outlive this call: drop the session that holds it.
                tracing::warn!(
                    error = %format!("{e:#}"),
                    "cannot release the lead; closing the lease connection"
                );
                lease.conn = None;
            }
        }
        record_lead(shared, &self.node, false).await;
    }

    async fn nodes(&self) -> Result<Vec<NodeInfo>> {
        let rows: Vec<(String, String, i64, String, i64, bool)> = sqlx::query_as(
            "SELECT node, host, pid, version, heartbeat_at, leader FROM nodes \
             ORDER BY leader DESC, node",
        )
        .fetch_all(&self.shared.pool)
        .await?;
        Ok(rows
            .into_iter()
            .map(
                |(node, host, pid, version, heartbeat_at_ms, leader)| NodeInfo {
                    node,
                    host,
                    pid: u32::try_from(pid).unwrap_or(0),
                    version,
                    heartbeat_at_ms,
                    leader,
                },
            )
            .collect())
    }

    async fn all_pending_everywhere(&self) -> Result<Vec<(Request, Vec<Post>)>> {
        let rows = sqlx::query(&super::select(
            super::FULL,
            "WHERE status = 'pending' ORDER BY key",
        ))
        .fetch_all(&self.shared.pool)
        .await?;
        rows.iter().map(super::with_posts_of).collect()
    }

    async fn orphans(&self, before_ms: i64) -> Result<Vec<Request>> {
        // Another node's, and that node silent since before `before_ms` (or never
        // registered).
        let rows = sqlx::query(&super::select(
            super::CONTEXT,
            "WHERE status = 'pending' AND node IS DISTINCT FROM $1 \
             AND NOT EXISTS (SELECT 1 FROM nodes n WHERE n.node = requests.node \
                             AND n.heartbeat_at >= $2) \
             ORDER BY key",
        ))
        .bind(&self.node)
        .bind(before_ms)
        .fetch_all(&self.shared.pool)
        .await?;
        rows.iter().map(super::request_of).collect()
    }

    async fn ended_among(&self, keys: &[i64]) -> Result<Vec<Request>> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let rows = sqlx::query(&super::select(
            super::CONTEXT,
            "WHERE key = ANY($1) AND status <> 'pending' ORDER BY key",
        ))
        .bind(keys)
        .fetch_all(&self.shared.pool)
        .await?;
        rows.iter().map(super::request_of).collect()
    }

    async fn notices(&self) -> Result<mpsc::Receiver<Notice>> {
        let name = format!("askrelay-listen {}", self.node);
        // Listening before this returns: whatever commits after it is heard.
        let listening = listen(&self.shared, &name).await?;
        let (tx, rx) = mpsc::channel(256);
        let shared = self.shared.clone();
        self.shared
            .tasks
            .spawn(async move { relay(shared, name, listening, tx).await });
        Ok(rx)
    }
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
        .acquire_timeout(shared.connect.connect_timeout)
        .connect_lazy_with(shared.connect.named(name));
    let result = bounded(shared, async {
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
async fn relay(shared: Arc<Backend>, name: String, listening: Listening, tx: mpsc::Sender<Notice>) {
    let closed = shared.closed.clone();
    let mut current = Some(listening);
    let mut pause = FIRST_PAUSE;
    let mut probe = tokio::time::interval(LISTEN_PROBE);
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
                let alive = bounded(&shared, async {
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
        let _ = tokio::time::timeout(shared.connect.connect_timeout, pool.close()).await;
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
