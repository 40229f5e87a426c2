//! The cluster over one PostgreSQL database: node leases, the lead, fencing, and notices.
//!
//! **The lead is a lease** on the database's clock (migrations/postgres/0006): one row naming
//! its holder, an epoch that grows at every change of holder, and a deadline. Every node beats
//! every quarter of `cluster.failover_secs` with one statement on its *lease connection* (a
//! connection of its own, `askrelay-lease NODE` in `pg_stat_activity`): it records its
//! heartbeat and renews the lease it holds, or takes the lease if it has expired. Each beat has
//! its own deadline (half a beat, connecting included), so a cut-off or stalled database never
//! holds a beat for `connect_timeout_secs`. A leader whose renewal does not come back stops its
//! Discord work before the lease can expire ([`LeaseTiming::stop_at`]); a frozen leader finds,
//! when it wakes, that its term is over. No lock lives on a session, so nothing waits for the
//! server to notice a dead connection.
//!
//! **Fencing.** The leader's term (its epoch, and when it must stop) is kept here, in the
//! backend, and every write made for the Discord answerer (claiming an outbox row before
//! posting or editing, recording a post or an edit, a timer's step, the digest's turn) checks
//! in its own transaction that the lease still names this node with that epoch and has not
//! expired, holding the row `FOR SHARE` so that a takeover waits until the write committed. A
//! refused write ([`Fenced`]) ends the term at once and wakes [`Cluster::deposed`]. Such a
//! transaction also sets `idle_in_transaction_session_timeout` to a beat, so a leader frozen in
//! the middle of one cannot hold the lease's row for longer than that.
//!
//! The lease connection also holds a session advisory lock keyed by the node id, taken at
//! start-up, so that a second daemon with the same id is refused. When the connection breaks,
//! a new one is opened for the next beat without that lock (the old session may still hold it
//! until the server notices it is gone): the lock guards start-up only.
//!
//! **Behind a pooler** (`postgres.pooler_url`, PgBouncer in transaction mode) no session
//! lasts: the beat is a transaction on the pool, and the node id is guarded by a *claim* on
//! the node's row (migrations/postgres/0021) instead of the session lock: a random token of
//! this process, and how long it holds (`claim_until`, renewed by every beat to the lease's
//! length ahead). A second daemon with the id is refused while the claim holds; one that starts
//! after a crash waits for the dead claim to lapse (at most `failover_secs`), and a clean
//! shutdown clears it. A beat whose claim was taken (this node was silent past it and another
//! daemon started with its id) fails, and takes no lead. Only the leader listens for notices,
//! on the one connection of its own it opens to `database_url`; followers hear of answers at
//! their next poll (`cluster.poll_interval_ms`).
//!
//! Notices, and listening for them, are `notices.rs`'s.

use super::notices;
use super::Backend;
use crate::domain::clock::host_ms;
use crate::domain::cluster::{
    Beat, Cluster, Fenced, LeaseTiming, NodeInfo, Notice, Takeover, Term,
};
use crate::domain::request::{Post, Request};
use crate::domain::store::Holder;
use anyhow::{bail, Context, Result};
use async_trait::async_trait;
use sqlx::{Connection, PgConnection};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// A node's lock: a 64-bit hash of its id.
const NODE_LOCK: &str = "hashtextextended('askrelay node ' || $1, 0)";

/// One beat in one statement: the database's time; the lease as it was; the lease renewed
/// (held by `$1` in epoch `$2`, unexpired) or taken (expired, or never held, or held by `$1` in
/// an epoch it does not know: a take whose reply was lost, or a term a refused write ended
/// while a beat renewed it), with the epoch one more on a change of term; and this node's
/// heartbeat. `$3` is the lease's length in ms. Only this process beats as `$1` (the node lock,
/// [`acquire`]), so a lease that names `$1` is its own to take again.
const BEAT: &str = "\
WITH clock AS (SELECT askrelay_now_ms() AS now), \
before AS (SELECT holder, epoch, renewed_at, expires_at FROM lease WHERE one = 1), \
took AS ( \
  INSERT INTO lease AS l (one, holder, epoch, renewed_at, expires_at) \
  SELECT 1, $1, 1, now, now + $3 FROM clock \
  ON CONFLICT (one) DO UPDATE SET \
    epoch = CASE WHEN l.holder = EXCLUDED.holder AND l.epoch = $2 \
                  AND l.expires_at > EXCLUDED.renewed_at THEN l.epoch ELSE l.epoch + 1 END, \
    holder = EXCLUDED.holder, renewed_at = EXCLUDED.renewed_at, expires_at = EXCLUDED.expires_at \
  WHERE l.holder = EXCLUDED.holder OR l.expires_at <= EXCLUDED.renewed_at \
  RETURNING epoch), \
beat AS ( \
  INSERT INTO nodes (node, host, pid, version, heartbeat_at, leader) \
  SELECT $1, $4, $5, $6, now, EXISTS (SELECT 1 FROM took) FROM clock \
  ON CONFLICT (node) DO UPDATE SET host = EXCLUDED.host, pid = EXCLUDED.pid, \
    version = EXCLUDED.version, heartbeat_at = EXCLUDED.heartbeat_at, leader = EXCLUDED.leader) \
SELECT (SELECT epoch FROM took), b.holder, b.epoch, b.renewed_at, b.expires_at, c.now \
FROM clock c LEFT JOIN before b ON true";

/// [`BEAT`] behind a pooler: the same, but only while this process's claim (`$7`) holds the
/// node's row, whose `claim_until` it renews; the last column says whether it did. It is a
/// transaction there, whose renewal holds the lease's row until its `COMMIT`: like a fenced
/// write's, it sets `idle_in_transaction_session_timeout` to a beat (`$8`, ms), so that a leader
/// frozen or cut off before its `COMMIT` cannot hold every takeover off for the pool's deadline.
pub(super) const BEAT_CLAIMED: &str = "\
WITH clock AS (SELECT askrelay_now_ms() AS now, \
  set_config('idle_in_transaction_session_timeout', $8, true) AS idle), \
mine AS (SELECT 1 FROM nodes WHERE node = $1 AND claim = $7), \
before AS (SELECT holder, epoch, renewed_at, expires_at FROM lease WHERE one = 1), \
took AS ( \
  INSERT INTO lease AS l (one, holder, epoch, renewed_at, expires_at) \
  SELECT 1, $1, 1, now, now + $3 FROM clock WHERE EXISTS (SELECT 1 FROM mine) \
  ON CONFLICT (one) DO UPDATE SET \
    epoch = CASE WHEN l.holder = EXCLUDED.holder AND l.epoch = $2 \
                  AND l.expires_at > EXCLUDED.renewed_at THEN l.epoch ELSE l.epoch + 1 END, \
    holder = EXCLUDED.holder, renewed_at = EXCLUDED.renewed_at, expires_at = EXCLUDED.expires_at \
  WHERE l.holder = EXCLUDED.holder OR l.expires_at <= EXCLUDED.renewed_at \
  RETURNING epoch), \
beat AS ( \
  UPDATE nodes n SET host = $4, pid = $5, version = $6, heartbeat_at = c.now, \
    leader = EXISTS (SELECT 1 FROM took), claim_until = c.now + $3 \
  FROM clock c WHERE n.node = $1 AND n.claim = $7) \
SELECT (SELECT epoch FROM took), b.holder, b.epoch, b.renewed_at, b.expires_at, c.now, \
  EXISTS (SELECT 1 FROM mine) \
FROM clock c LEFT JOIN before b ON true";

/// Claims the node's row behind a pooler (`$5`, this process's token), unless another
/// process's claim on it holds; `$6` is how long the claim holds until the first beat.
const CLAIM: &str = "\
INSERT INTO nodes AS n (node, host, pid, version, heartbeat_at, leader, claim, claim_until) \
VALUES ($1, $2, $3, $4, askrelay_now_ms(), false, $5, askrelay_now_ms() + $6) \
ON CONFLICT (node) DO UPDATE SET host = EXCLUDED.host, pid = EXCLUDED.pid, \
  version = EXCLUDED.version, heartbeat_at = EXCLUDED.heartbeat_at, leader = false, \
  claim = EXCLUDED.claim, claim_until = EXCLUDED.claim_until \
WHERE n.claim IS NULL OR n.claim = EXCLUDED.claim OR n.claim_until <= EXCLUDED.heartbeat_at \
RETURNING true";

/// How long a claim holds before the node's first beat renews it.
const FIRST_CLAIM: Duration = Duration::from_secs(10);

/// The longest a starting daemon waits for another's claim on its node id to lapse.
const CLAIM_WAIT: Duration = Duration::from_secs(30);

/// The fence of a write made for the Discord answerer: the lease still names `$1` in epoch
/// `$2` and has not expired. `FOR SHARE` makes a takeover wait until the write committed; the
/// setting (`$3`, ms) keeps a frozen leader from holding that lock for longer than a beat.
const FENCE: &str = "SELECT set_config('idle_in_transaction_session_timeout', $3, true) \
     FROM lease WHERE one = 1 AND holder = $1 AND epoch = $2 AND expires_at > askrelay_now_ms() \
     FOR SHARE";

/// This node's lease connection.
#[derive(Default)]
pub(crate) struct Lease {
    /// `None` before the lease is taken, and after the connection broke until the next beat
    /// opens another; always `None` behind a pooler.
    conn: Option<PgConnection>,
    /// Behind a pooler: whether this process claimed its node's row (and has not released it).
    claimed: bool,
}

/// Runs `$body` as one transaction on a pooled connection (`$tx`), within `$limit`, outside
/// the silence of [`super::deadline`]: a beat is what ends a silence, and must not be refused
/// for one. The connection is closed, not given back, unless the transaction committed.
macro_rules! pooled_tx {
    ($shared:expr, $limit:expr, |$tx:ident| $body:block) => {
        bounded($limit, async {
            let shared: &Backend = $shared;
            let mut held = super::deadline::Held::new(shared.pool.acquire().await?);
            let mut $tx = super::begin(shared, &mut held).await?;
            let value = async { $body }.await?;
            $tx.commit().await?;
            held.keep();
            anyhow::Ok(value)
        })
    };
}

/// The leader's term as the fence knows it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fence {
    epoch: i64,
    stop_at: Instant,
    /// A beat, in ms: `idle_in_transaction_session_timeout` of a fenced transaction.
    idle_ms: u128,
}

impl Backend {
    /// This node's term, while it lasts.
    fn term(&self) -> Option<Fence> {
        let fence = *self.fence.lock().unwrap();
        fence.filter(|f| Instant::now() < f.stop_at)
    }

    /// The epoch of this node's term, while it lasts.
    pub(super) fn epoch(&self) -> Option<i64> {
        self.term().map(|f| f.epoch)
    }

    fn set_term(&self, fence: Option<Fence>) {
        *self.fence.lock().unwrap() = fence;
        self.lead_changed(fence.is_some());
    }

    /// Tells the notice listener of a pooled node whether this node leads.
    fn lead_changed(&self, leads: bool) {
        self.leading
            .send_if_modified(|l| std::mem::replace(l, leads) != leads);
    }

    /// Whether the pool goes through a transaction-mode pooler.
    pub(super) fn pooled(&self) -> bool {
        self.connect.prelude().is_some()
    }

    /// Checks, in `tx`, that this node still leads in its term; on a refusal the term ends and
    /// the cluster driver hears of it.
    pub(super) async fn fence(&self, tx: &mut PgConnection) -> Result<()> {
        let (Some(term), Some(me)) = (self.term(), self.me.get()) else {
            return Err(Fenced.into());
        };
        let held: Option<String> = sqlx::query_scalar(FENCE)
            .bind(&me.node)
            .bind(term.epoch)
            .bind(term.idle_ms.to_string())
            .fetch_optional(&mut *tx)
            .await?;
        if held.is_none() {
            tracing::warn!(
                epoch = term.epoch,
                "a write for Discord was refused: this node's lease is over; stepping down"
            );
            // Only the refused term ends: a beat may have begun a new one meanwhile.
            let mut fence = self.fence.lock().unwrap();
            if fence.is_some_and(|f| f.epoch == term.epoch) {
                *fence = None;
                drop(fence);
                self.lead_changed(false);
                self.deposed.notify_one();
            }
            return Err(Fenced.into());
        }
        Ok(())
    }
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
    if lease.conn.is_some() || lease.claimed {
        return Ok(());
    }
    if shared.pooled() {
        claim(shared, me).await?;
        lease.claimed = true;
        let _ = shared.me.set(me.clone());
        return Ok(());
    }
    let conn = take_node_lock(shared, me).await?;
    lease.conn = Some(conn);
    let _ = shared.me.set(me.clone());
    Ok(())
}

/// Opens a lease connection and takes the node lock on it, then registers the node; or fails
/// naming the daemon that has the node id.
async fn take_node_lock(shared: &Backend, me: &Holder) -> Result<PgConnection> {
    let mut conn = shared
        .connect
        .dedicated(
            &format!("askrelay-lease {}", me.node),
            shared.connect.connect_timeout,
        )
        .await?;
    let result = bounded(shared.connect.deadline, async {
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
             VALUES ($1, $2, $3, $4, askrelay_now_ms(), false) \
             ON CONFLICT (node) DO UPDATE SET host = EXCLUDED.host, pid = EXCLUDED.pid, \
             version = EXCLUDED.version, heartbeat_at = EXCLUDED.heartbeat_at, leader = false",
        )
        .bind(&me.node)
        .bind(&me.host)
        .bind(i64::from(me.pid))
        .bind(env!("CARGO_PKG_VERSION"))
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

/// Behind a pooler: claims the node's row, or fails naming the daemon that has the node id. A
/// claim that lapses soon (a daemon that died, or was just restarted) is waited for.
async fn claim(shared: &Backend, me: &Holder) -> Result<()> {
    let attempt = || {
        pooled_tx!(shared, shared.connect.deadline, |tx| {
            let got: Option<bool> = sqlx::query_scalar(CLAIM)
                .bind(&me.node)
                .bind(&me.host)
                .bind(i64::from(me.pid))
                .bind(env!("CARGO_PKG_VERSION"))
                .bind(&shared.claim)
                .bind(FIRST_CLAIM.as_millis() as i64)
                .fetch_optional(&mut *tx)
                .await?;
            if got.is_some() {
                return anyhow::Ok(None);
            }
            let holder: Option<(String, i64, i64)> = sqlx::query_as(
                "SELECT host, pid, COALESCE(claim_until, 0) - askrelay_now_ms() \
                 FROM nodes WHERE node = $1",
            )
            .bind(&me.node)
            .fetch_optional(&mut *tx)
            .await?;
            anyhow::Ok(holder)
        })
    };
    let first = attempt()
        .await
        .context("cannot claim this node's id in the database")?;
    let Some((_, _, left_ms)) = first else {
        return Ok(());
    };
    // A live holder renews its claim at every beat, so that it still holds after this wait;
    // a dead one's lapses.
    let wait = Duration::from_millis(u64::try_from(left_ms).unwrap_or(0) + 50);
    if wait <= CLAIM_WAIT {
        tracing::info!(
            wait_ms = wait.as_millis() as u64,
            "this node's id is claimed by another process; waiting to see whether it beats"
        );
        tokio::time::sleep(wait).await;
        match attempt()
            .await
            .context("cannot claim this node's id in the database")?
        {
            None => return Ok(()),
            Some((host, pid, _)) => bail!(
                "cluster.node_id {:?} is in use by another askrelay daemon (pid {pid} on host \
                 {host}); stop it first, or give this daemon its own cluster.node_id",
                me.node
            ),
        }
    }
    let (host, pid, _) = first.expect("a holder");
    bail!(
        "cluster.node_id {:?} is in use by another askrelay daemon (pid {pid} on host {host}); \
         stop it first, or give this daemon its own cluster.node_id",
        me.node
    )
}

/// `fut` within `limit`: a connection that does not answer is as good as broken (a network
/// partition would otherwise hang the caller until TCP gives up).
pub(super) async fn bounded<T>(limit: Duration, fut: impl Future<Output = Result<T>>) -> Result<T> {
    match tokio::time::timeout(limit, fut).await {
        Ok(r) => r,
        Err(_) => bail!(
            "the database did not answer within {} ms",
            limit.as_millis()
        ),
    }
}

/// Gives up the lead and the lease: ends the lease if this node holds it, and closes the lease
/// connection (which releases the node lock). Runs before the pool closes.
pub(super) async fn release(shared: &Backend) {
    let mut lease = shared.lease.lock().await;
    if std::mem::take(&mut lease.claimed) {
        let term = shared.term();
        shared.set_term(None);
        let node = shared.node().unwrap_or_default().to_owned();
        let released = pooled_tx!(shared, shared.connect.deadline, |tx| {
            if let Some(term) = term {
                end_lease(&mut tx, &node, term.epoch).await?;
            }
            sqlx::query(
                "UPDATE nodes SET claim = NULL, claim_until = NULL WHERE node = $1 AND claim = $2",
            )
            .bind(&node)
            .bind(&shared.claim)
            .execute(&mut *tx)
            .await?;
            anyhow::Ok(())
        })
        .await;
        if let Err(e) = released {
            tracing::warn!(error = %format!("{e:#}"), "cannot release this node's claim; a daemon with its id waits for it to lapse");
        }
        return;
    }
    let Some(mut conn) = lease.conn.take() else {
        return;
    };
    let term = shared.term();
    shared.set_term(None);
    let node = shared.node().unwrap_or_default().to_owned();
    let _ = bounded(shared.connect.deadline, async {
        if let Some(term) = term {
            end_lease(&mut conn, &node, term.epoch).await?;
        }
        sqlx::query("SELECT pg_advisory_unlock_all()")
            .execute(&mut conn)
            .await?;
        conn.close().await?;
        anyhow::Ok(())
    })
    .await;
}

/// Ends the lease now, if `node` holds it in `epoch`: the next node to beat takes it.
async fn end_lease(conn: &mut PgConnection, node: &str, epoch: i64) -> Result<()> {
    sqlx::query(
        "UPDATE lease SET expires_at = askrelay_now_ms() \
         WHERE one = 1 AND holder = $1 AND epoch = $2",
    )
    .bind(node)
    .bind(epoch)
    .execute(conn)
    .await?;
    Ok(())
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

/// One row of [`BEAT`]: the epoch this node holds after it (if any), the lease as it was
/// (holder, epoch, renewed, expires), and the database's time.
type BeatRow = (
    Option<i64>,
    Option<String>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    i64,
);

#[async_trait]
impl Cluster for PgCluster {
    fn node(&self) -> &str {
        &self.node
    }

    async fn beat(&self, timing: &LeaseTiming) -> Result<Beat> {
        let me = self.holder()?;
        let shared = &*self.shared;
        let mut lease = shared.lease.lock().await;
        let held = shared.term();
        let sent = Instant::now();
        // The host's own clock, not now_ms(): the offset is measured against it, and now_ms()
        // already carries the last measurement.
        let local_sent = host_ms();
        let result = if shared.pooled() {
            pooled_tx!(shared, timing.call, |tx| {
                let (mine, holder, epoch, renewed, expires, now, claimed): (
                    Option<i64>,
                    Option<String>,
                    Option<i64>,
                    Option<i64>,
                    Option<i64>,
                    i64,
                    bool,
                ) = sqlx::query_as(BEAT_CLAIMED)
                    .bind(&me.node)
                    .bind(held.map_or(-1, |t| t.epoch))
                    .bind(timing.ttl.as_millis() as i64)
                    .bind(&me.host)
                    .bind(i64::from(me.pid))
                    .bind(env!("CARGO_PKG_VERSION"))
                    .bind(&shared.claim)
                    .bind(timing.beat.as_millis().max(1).to_string())
                    .fetch_one(&mut *tx)
                    .await?;
                if !claimed {
                    tracing::error!(
                        node = %me.node,
                        "another askrelay daemon claimed this node's id while this one did not beat; this one takes no lead (stop one of them)"
                    );
                    bail!("this node's id is claimed by another daemon");
                }
                anyhow::Ok((mine, holder, epoch, renewed, expires, now))
            })
            .await
        } else {
            bounded(timing.call, async {
                if lease.conn.is_none() {
                    lease.conn = Some(
                        shared
                            .connect
                            .dedicated(&format!("askrelay-lease {}", me.node), timing.call)
                            .await?,
                    );
                }
                let conn = lease.conn.as_mut().expect("opened above");
                let row: BeatRow = sqlx::query_as(BEAT)
                    .bind(&me.node)
                    .bind(held.map_or(-1, |t| t.epoch))
                    .bind(timing.ttl.as_millis() as i64)
                    .bind(&me.host)
                    .bind(i64::from(me.pid))
                    .bind(env!("CARGO_PKG_VERSION"))
                    .fetch_one(conn)
                    .await?;
                anyhow::Ok(row)
            })
            .await
        };
        let (mine, holder, epoch, renewed_at, expires_at, db_now) = match result {
            Ok(row) => {
                // The database answers: the pooled calls need not wait for one of theirs.
                shared.deadlines.answered();
                row
            }
            Err(e) => {
                // Not waiting for a connection that did not answer: it may never answer again.
                lease.conn = None;
                return Err(e.context("cannot renew or take the cluster's lease"));
            }
        };
        let local_mid = (local_sent + host_ms()) / 2;
        let term = mine.map(|epoch| Term {
            epoch,
            stop_at: timing.stop_at(sent),
        });
        shared.set_term(term.map(|t| Fence {
            epoch: t.epoch,
            stop_at: t.stop_at,
            idle_ms: timing.beat.as_millis().max(1),
        }));
        if let (Some(t), Some(h)) = (term, held) {
            if t.epoch != h.epoch {
                tracing::warn!(
                    from = h.epoch,
                    to = t.epoch,
                    "this node's lease lapsed and was taken again: a new term"
                );
            }
        }
        let unexpired = expires_at.is_some_and(|x| x > db_now);
        // A new term in place of an earlier one: the lease as it was says whose, and since when
        // nobody led (the release, when it was given back early; else the last renewal).
        let takeover = match (mine, epoch, &holder, renewed_at, expires_at) {
            (Some(now), Some(before), Some(from), Some(renewed), Some(expired))
                if now != before =>
            {
                let released = expired < renewed + timing.ttl.as_millis() as i64;
                let since = if released { expired } else { renewed };
                Some(Takeover {
                    from: from.clone(),
                    released,
                    gap: Duration::from_millis(u64::try_from(db_now - since).unwrap_or(0)),
                })
            }
            _ => None,
        };
        Ok(Beat {
            term,
            leader: match term {
                Some(_) => Some(me.node.clone()),
                // This node's own lapsed term is nobody's lead.
                None => holder.filter(|h| unexpired && *h != me.node),
            },
            epoch: mine.or(epoch).unwrap_or(0),
            renewed_ms_ago: match term {
                Some(_) => Some(0),
                None => renewed_at.map(|r| db_now - r),
            },
            clock_offset_ms: db_now - local_mid,
            takeover,
        })
    }

    fn holds_term(&self) -> bool {
        self.shared.term().is_some()
    }

    fn step_down(&self) {
        self.shared.set_term(None);
    }

    async fn deposed(&self) {
        self.shared.deposed.notified().await
    }

    async fn release_lead(&self) {
        let shared = &*self.shared;
        let Some(term) = shared.term() else {
            return;
        };
        shared.set_term(None);
        if shared.pooled() {
            let ended = pooled_tx!(shared, shared.connect.deadline, |tx| {
                end_lease(&mut tx, &self.node, term.epoch).await
            })
            .await;
            if let Err(e) = ended {
                tracing::warn!(error = %format!("{e:#}"), "cannot end the lease; the next leader waits for it to expire");
            }
            return;
        }
        let mut lease = shared.lease.lock().await;
        if let Some(conn) = lease.conn.as_mut() {
            let ended = bounded(
                shared.connect.deadline,
                end_lease(conn, &self.node, term.epoch),
            )
            .await;
            if let Err(e) = ended {
                tracing::warn!(error = %format!("{e:#}"), "cannot end the lease; the next leader waits for it to expire");
                lease.conn = None;
            }
        }
    }

    async fn nodes(&self) -> Result<Vec<NodeInfo>> {
        let rows: Vec<(String, String, i64, String, i64, bool)> = read!(self, |conn| {
            Ok(sqlx::query_as(
                "SELECT n.node, n.host, n.pid, n.version, n.heartbeat_at, \
                 COALESCE(l.holder = n.node AND l.expires_at > askrelay_now_ms(), false) \
                 AS leader FROM nodes n LEFT JOIN lease l ON l.one = 1 \
                 ORDER BY leader DESC, n.node",
            )
            .fetch_all(conn)
            .await?)
        })?;
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
        let sql = super::select(
            super::Dialect::Postgres,
            super::FULL,
            "WHERE status = 'pending' ORDER BY key",
        );
        let rows = read!(self, |conn| Ok(sqlx::query(&sql).fetch_all(conn).await?))?;
        rows.iter().map(super::with_posts_of).collect()
    }

    async fn orphans(&self, grace: Duration) -> Result<Vec<Request>> {
        // Another node's, and that node silent for longer than `grace` by the database's
        // clock (or never registered).
        let sql = super::select(
            super::Dialect::Postgres,
            super::CONTEXT,
            "WHERE status = 'pending' AND node IS DISTINCT FROM $1 \
             AND NOT EXISTS (SELECT 1 FROM nodes n WHERE n.node = requests.node \
                             AND n.heartbeat_at >= askrelay_now_ms() - $2) \
             ORDER BY key",
        );
        let rows = read!(self, |conn| Ok(sqlx::query(&sql)
            .bind(&self.node)
            .bind(grace.as_millis() as i64)
            .fetch_all(conn)
            .await?))?;
        rows.iter().map(super::request_of).collect()
    }

    async fn ended_among(&self, keys: &[i64]) -> Result<Vec<Request>> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let sql = super::select(
            super::Dialect::Postgres,
            super::CONTEXT,
            "WHERE key = ANY($1) AND status <> 'pending' ORDER BY key",
        );
        let rows = read!(self, |conn| Ok(sqlx::query(&sql)
            .bind(keys)
            .fetch_all(conn)
            .await?))?;
        rows.iter().map(super::request_of).collect()
    }

    async fn last_post_ms(&self) -> Result<Option<i64>> {
        // An index (migrations/postgres/0020) makes this one step, at every scrape.
        read!(self, |conn| Ok(sqlx::query_scalar(
            "SELECT max(posted_at) FROM posts"
        )
        .fetch_one(conn)
        .await?))
    }

    async fn notices(&self) -> Result<mpsc::Receiver<Notice>> {
        notices::subscribe(&self.shared, &self.node).await
    }
}
