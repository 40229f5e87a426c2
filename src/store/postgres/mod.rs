//! The PostgreSQL store: one database shared by the daemons of a cluster.
//!
//! It behaves like the SQLite store (the same rows, the same first-wins rule, the same audit
//! log; see `migrations/postgres/`), with what sharing needs besides: every request is stamped
//! with the node that stored it, and `all_pending` and `Visibility::Owner` see only this node's
//! requests; the lead is a lease row on the database's clock (see `cluster.rs`);
//! and the writes other nodes must hear of send a `NOTIFY` in the same transaction, so that a
//! notice is never sent for a change that did not commit.
//!
//! Settling takes the request's row lock first (`FOR NO KEY UPDATE`), then runs the one
//! conditional UPDATE that decides first-wins. SQLite serializes all writers; PostgreSQL does
//! not, and without the lock two answers to the last two open questions of one request, each
//! counting the other's question as still open, would both leave the request pending. Every
//! transaction that locks a request locks it before the rows that belong to it, so they cannot
//! deadlock on each other.
//!
//! With `postgres.pooler_url` the pool goes through a transaction-mode pooler (PgBouncer):
//! every call, reads included, is then one transaction that carries its own settings
//! (`connect.rs`, `Pooler`), and the cluster keeps no session of its own but the leader's
//! notice listener (`notices.rs`).
//!
//! A write whose transaction fails closes its connection instead of returning it to the pool
//! (as in SQLite, see [`crate::store::sqlite`]): a connection cut mid-transaction is not to be
//! trusted with the next one.

mod connect;
#[cfg(test)]
mod tests;

use super::sql::rows::{PostRow, POST_COLUMNS};
use super::sql::select::{request_of, select, with_posts_of, CONTEXT, FULL};
use super::sql::Dialect;
use crate::config::PostgresConfig;
use crate::domain::audit::{AuditPage, ChainHead, ChainStart};
use crate::domain::clock::now_ms;
use crate::domain::cluster::ClusterHandle;
use crate::domain::error::AskError;
use crate::domain::request::{
    AuditEntry, AuditRow, Created, Draft, DuePost, EditState, NewPost, NewRequest, PlannedPost,
    Post, PostKey, Request, SessionPlace, SettleOutcome, Status, Timer, WithdrawReason,
};
use crate::domain::store::{Holder, NewAnswer, Page, Pruned, Store, Visibility};
use anyhow::{Context, Result};
use async_trait::async_trait;
use cluster::{Fence, Lease, PgCluster};
use connect::Connect;
use sqlx::postgres::{PgPool, PgPoolOptions};
use sqlx::PgConnection;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

#[macro_use]
mod deadline;

/// Runs `$body` as one transaction on a pooled connection (`$tx` is the transaction), within
/// the deadline (`postgres.db_deadline_secs`, or `$limit`), the wait for the connection and the
/// commit included; on any error the transaction is rolled back and the connection is closed
/// instead of going back to the pool. `$body` ends in `anyhow::Ok(..)`.
macro_rules! write_tx {
    ($store:expr, |$tx:ident| $body:block) => {
        write_tx!($store, $store.shared.deadlines.limit(), |$tx| $body)
    };
    ($store:expr, $limit:expr, |$tx:ident| $body:block) => {
        on_conn!($store.shared, $limit, |conn| {
            let mut $tx = $crate::store::postgres::begin(&$store.shared, &mut *conn).await?;
            let value = async { $body }.await?;
            $tx.commit().await?;
            anyhow::Ok(value)
        })
    };
}

/// Runs `$body` (a read, `anyhow::Result<_>`) with `$conn`, a pooled `&mut PgConnection`,
/// within the deadline. Behind a pooler the read is a transaction of its own (see
/// `connect.rs`, `Pooler`).
macro_rules! read {
    ($store:expr, |$conn:ident| $body:expr) => {
        on_conn!($store.shared, $store.shared.deadlines.limit(), |conn| {
            if $store.shared.connect.prelude().is_some() {
                let mut tx = $crate::store::postgres::begin(&$store.shared, &mut *conn).await?;
                let read: anyhow::Result<_> = {
                    let $conn: &mut sqlx::PgConnection = &mut *tx;
                    $body
                };
                let value = read?;
                tx.commit().await?;
                anyhow::Ok(value)
            } else {
                let $conn: &mut sqlx::PgConnection = conn;
                $body
            }
        })
    };
}

/// Begins a transaction on `conn`, one of the pool's; behind a pooler with the prelude that
/// stands in for a session's settings (see `connect.rs`, `Pooler`).
pub(crate) async fn begin<'c>(
    shared: &Backend,
    conn: &'c mut PgConnection,
) -> sqlx::Result<sqlx::Transaction<'c, sqlx::Postgres>> {
    match shared.connect.prelude() {
        Some(prelude) => sqlx::Connection::begin_with(conn, prelude.to_owned()).await,
        None => sqlx::Connection::begin(conn).await,
    }
}

// After the macros, which they use.
mod cluster;
mod notices;
mod operations;

/// How long a pooled connection stays open unused: an idle node (most followers) holds only
/// its lease and listener connections (see docs/cluster.md, "Sizing").
const POOL_IDLE: std::time::Duration = std::time::Duration::from_secs(30);

/// The backend's connections and lease, which the store and its cluster share.
pub(crate) struct Backend {
    pool: PgPool,
    connect: Connect,
    /// Every call's deadline, and whether the database is silent.
    deadlines: deadline::Deadlines,
    /// This daemon, once it took its lease. Until then it has no node id, and stores and sees
    /// requests without one.
    me: OnceLock<Holder>,
    /// The connection that beats and holds this node's lock (see `cluster.rs`).
    lease: tokio::sync::Mutex<Lease>,
    /// This node's term while it leads: what fenced writes check (see `cluster.rs`).
    fence: std::sync::Mutex<Option<Fence>>,
    /// Woken when a fenced write was refused.
    deposed: tokio::sync::Notify,
    /// Whether this node holds a term: behind a pooler, the notice listener follows it.
    leading: tokio::sync::watch::Sender<bool>,
    /// Behind a pooler, this process's claim on its node's row (a random token): what guards
    /// the node id instead of the node lock (see `cluster.rs`).
    claim: String,
    /// Cancelled by [`Store::close`]: ends the notice streams.
    closed: CancellationToken,
    /// The notice streams' tasks, which `close` waits for.
    tasks: TaskTracker,
}

impl Backend {
    fn node(&self) -> Option<&str> {
        self.me.get().map(|h| h.node.as_str())
    }
}

/// The PostgreSQL backend (see the module comment). Open it with [`PgStore::open`]; its
/// [`Store::cluster`] is there once [`Store::acquire_lease`] registered the node.
pub struct PgStore {
    shared: Arc<Backend>,
    /// Handed out by [`Store::cluster`] once the lease is taken. Kept here, not in `Backend`,
    /// which it points to.
    cluster: OnceLock<ClusterHandle>,
}

/// Shows the node, never the URL.
impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("node", &self.node())
            .finish_non_exhaustive()
    }
}

impl PgStore {
    /// Connects to the database at `url` with the settings of `[postgres]`, refuses a schema
    /// newer than this binary knows, and applies the migrations. Errors show the URL with its
    /// password hidden.
    pub async fn open(url: &str, config: &PostgresConfig) -> Result<PgStore> {
        let connect = Connect::new(url, config)?;
        connect.migrate().await?;
        let pool = PgPoolOptions::new()
            .max_connections(config.max_connections)
            .min_connections(0)
            .idle_timeout(Some(POOL_IDLE))
            .acquire_timeout(connect.connect_timeout)
            .connect_with(connect.pooled())
            .await
            .with_context(|| {
                format!("cannot connect to the database {}", connect.pooled_shown())
            })?;
        Ok(PgStore {
            shared: Arc::new(Backend {
                pool,
                deadlines: deadline::Deadlines::new(connect.deadline),
                connect,
                me: OnceLock::new(),
                lease: tokio::sync::Mutex::new(Lease::default()),
                fence: std::sync::Mutex::new(None),
                deposed: tokio::sync::Notify::new(),
                leading: tokio::sync::watch::Sender::new(false),
                claim: uuid::Uuid::new_v4().to_string(),
                closed: CancellationToken::new(),
                tasks: TaskTracker::new(),
            }),
            cluster: OnceLock::new(),
        })
    }

    fn node(&self) -> Option<&str> {
        self.shared.node()
    }

    /// The pool, for tests that need to reach past the store (the audit log's triggers).
    #[cfg(test)]
    pub(crate) fn raw_pool(&self) -> &PgPool {
        &self.shared.pool
    }

    async fn listing(
        &self,
        who: Visibility,
        page: Page,
        pending: bool,
        newest_first: bool,
    ) -> Result<Vec<Request>> {
        let (cmp, order) = if newest_first {
            ("<", "DESC")
        } else {
            (">", "ASC")
        };
        // With the context: listings show what is being approved, as Discord does.
        let sql = select(
            Dialect::Postgres,
            CONTEXT,
            &format!(
                "WHERE (NOT $1 OR status = 'pending') \
                 AND ($2::bigint IS NULL OR (peer_uid = $2 AND node IS NOT DISTINCT FROM $5)) \
                 AND ($3::bigint IS NULL OR key {cmp} $3) ORDER BY key {order} LIMIT $4"
            ),
        );
        // A uid means a user on this node's host: on another host it is someone else.
        let uid = match who {
            Visibility::All => None,
            Visibility::Owner(u) => Some(i64::from(u)),
        };
        let node = self.node();
        let rows = read!(self, |conn| {
            Ok(sqlx::query(&sql)
                .bind(pending)
                .bind(uid)
                .bind(page.after)
                .bind(i64::from(page.limit))
                .bind(node)
                .fetch_all(conn)
                .await?)
        })?;
        rows.iter().map(request_of).collect()
    }
}

async fn insert_posts(
    conn: &mut PgConnection,
    key: i64,
    answerer: &str,
    posts: &[PlannedPost],
) -> Result<()> {
    if posts.is_empty() {
        return Ok(());
    }
    sqlx::query(
        "INSERT INTO posts (request_key, idx, answerer, slot, channel, guild, nonce) \
         SELECT $1, p.idx, $2, p.slot, p.channel, p.guild, p.nonce \
         FROM unnest($3::bigint[], $4::text[], $5::text[], $6::text[], $7::text[]) \
             AS p (idx, slot, channel, guild, nonce) \
         ON CONFLICT DO NOTHING",
    )
    .bind(key)
    .bind(answerer)
    .bind(posts.iter().map(|p| p.idx as i64).collect::<Vec<_>>())
    .bind(posts.iter().map(|p| p.slot.to_string()).collect::<Vec<_>>())
    .bind(posts.iter().map(|p| p.channel.clone()).collect::<Vec<_>>())
    .bind(posts.iter().map(|p| p.guild.clone()).collect::<Vec<_>>())
    .bind(posts.iter().map(|p| p.nonce.clone()).collect::<Vec<_>>())
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Appends `e` to the audit chain: the head is read and locked (`FOR UPDATE`: the appends of
/// every node of a cluster take their turn on it until their transaction ends), the row is
/// hashed after it and inserted; the trigger of migrations/postgres/0003 checks that it follows
/// the head and moves the head. Called last in its transaction, so that the lock is held for
/// as short a time as can be and is always taken after the request's.
async fn append_audit(conn: &mut PgConnection, e: &AuditEntry, at: i64) -> Result<()> {
    let (id, hash): (i64, String) =
        sqlx::query_as("SELECT id, hash FROM audit_head WHERE one = 1 FOR UPDATE")
            .fetch_one(&mut *conn)
            .await
            .context("cannot read the head of the audit chain")?;
    let row = ChainHead { id, hash }.next(&e.content(at));
    sqlx::query(
        "INSERT INTO audit (id, at, request_key, question_idx, source, actor, action, detail, \
         accepted, prev_hash, hash, request_id) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
    )
    .bind(row.row.id)
    .bind(row.row.at_ms)
    .bind(row.row.request_key)
    .bind(row.row.question_idx)
    .bind(&row.row.source)
    .bind(&row.row.actor)
    .bind(&row.row.action)
    .bind(&row.row.detail)
    .bind(row.row.accepted)
    .bind(&row.prev_hash)
    .bind(&row.hash)
    .bind(&row.request_id)
    .execute(&mut *conn)
    .await?;
    Ok(())
}
