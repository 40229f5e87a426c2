//! The SQLite store: the embedded default, one file next to the daemon.
//!
//! WAL mode with foreign keys on; migrations from `migrations/` are embedded and run at
//! start-up. Every state change is one transaction, and first-wins is a single conditional
//! `UPDATE … WHERE answered_at IS NULL`, so two answerers racing on a question can never both
//! win, whichever task they run in.
//!
//! Every write runs on the store's one write connection ([`SqliteStore::writer`]), reads on the
//! pool's. If anything in a write fails (a full disk is the usual cause), the transaction is
//! rolled back and the connection is closed instead of going back to its pool: a connection left
//! inside a transaction would hold the write lock and turn later "commits" into savepoints that
//! never reach the file. A write that failed for want of space makes the store *full* until the
//! WAL could be checkpointed, and writes wait for that ([`full`]).

use super::sql::rows::{AnswerRow, PostRow, QuestionState, RequestRow, POST_COLUMNS};
use super::sql::select::REQUEST_COLUMNS;
use crate::domain::audit::{AuditPage, ChainHead, ChainStart, ChainedRow};
use crate::domain::error::AskError;
use crate::domain::request::{
    AuditEntry, AuditRow, Created, Draft, DuePost, EditState, NewPost, NewRequest, PlannedPost,
    Post, PostKey, Request, SessionPlace, SettleOutcome, Status, Timer, WithdrawReason,
};
use crate::domain::store::{Holder, NewAnswer, Page, Pruned, Store, Visibility};
use anyhow::{bail, Context, Result};
use async_trait::async_trait;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteRow, SqliteSynchronous,
};
use sqlx::{Connection, FromRow, Row, SqliteConnection, SqlitePool};
use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Seek, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Test hook: the page budget of every connection (`PRAGMA max_page_count`), so that a test can
/// fill the database up and free it again without a real full disk. 0 leaves SQLite's default.
pub type PageLimit = Arc<AtomicU64>;

/// Runs `$body` as one write transaction on a connection of its own (`$tx` is the
/// transaction); on any error the transaction is rolled back and the connection is closed
/// instead of going back to the pool (see the module comment), and the error is shown to
/// [`full::Full::noticed`]. `$body` ends in `anyhow::Ok(..)`.
macro_rules! write_tx {
    ($store:expr, |$tx:ident| $body:block) => {{
        let mut conn = $store.write_conn().await?;
        let result: anyhow::Result<_> = async {
            let mut $tx = conn.begin_with("BEGIN IMMEDIATE").await?;
            let value = async { $body }.await?;
            $tx.commit().await?;
            anyhow::Ok(value)
        }
        .await;
        if let Err(e) = &result {
            // Dropping the transaction queued a rollback; whatever state that left the
            // connection in, it is not reused.
            conn.close_on_drop();
            $store.full.noticed(e);
        }
        result
    }};
}

/// A connection that began a transaction by hand: unless [`TxConn::finished`] is called after
/// its `COMMIT`, it is closed when dropped (an error, or a future dropped half-way), never
/// returned to the pool inside the transaction.
struct TxConn {
    conn: sqlx::pool::PoolConnection<sqlx::Sqlite>,
    finished: bool,
}

impl TxConn {
    /// The store's write connection ([`SqliteStore::write_conn`]).
    async fn acquire(store: &SqliteStore) -> Result<TxConn> {
        Ok(TxConn {
            conn: store.write_conn().await?,
            finished: false,
        })
    }

    fn finished(&mut self) {
        self.finished = true;
    }
}

impl std::ops::Deref for TxConn {
    type Target = sqlx::pool::PoolConnection<sqlx::Sqlite>;
    fn deref(&self) -> &Self::Target {
        &self.conn
    }
}

impl std::ops::DerefMut for TxConn {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.conn
    }
}

impl Drop for TxConn {
    fn drop(&mut self) {
        if !self.finished {
            self.conn.close_on_drop();
        }
    }
}

/// One statement as a transaction of its own, sent to the connection's worker thread in one
/// call: `BEGIN IMMEDIATE; <statement>; COMMIT` (see [`SqliteStore::commit_one`]).
macro_rules! committed {
    ($sql:expr) => {
        concat!("BEGIN IMMEDIATE; ", $sql, "; COMMIT")
    };
}

/// The start of the statement that appends one row to the audit chain. Its values come from a
/// `SELECT`, so that the statement can depend on the one before it in the same call: see
/// [`insert_audit!`] and [`insert_audit_outcome!`]. Macros, so that a write, its audit row and
/// the `COMMIT` are sent to the connection's worker thread as one string.
macro_rules! audit_into {
    () => {
        "INSERT INTO audit (id, at, request_key, question_idx, source, actor, action, detail, \
         accepted, prev_hash, hash, request_id) "
    };
}

/// Appends one row, hashed beforehand ([`bind_row`]). A `WHERE changes() > 0` after it appends
/// it only if the statement before it changed a row (`changes()` counts that statement's own
/// rows, not its triggers'; the `SELECT` is evaluated before this statement changes anything).
macro_rules! insert_audit {
    () => {
        concat!(audit_into!(), "SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?")
    };
}

/// Appends one of two rows hashed beforehand ([`bind_outcomes`]), which differ only in
/// `accepted` and `hash`: the accepted one if the statement before it changed a row (the
/// conditional write that decides), the refused one if not.
macro_rules! insert_audit_outcome {
    () => {
        concat!(
            audit_into!(),
            "SELECT ?, ?, ?, ?, ?, ?, ?, ?, changes() > 0, ?, \
             CASE WHEN changes() > 0 THEN ? ELSE ? END, ?"
        )
    };
}

mod checkpoint;
mod full;
mod operations;

pub struct SqliteStore {
    /// Reads.
    pool: SqlitePool,
    /// Writes: a pool of one connection. SQLite lets one writer in at a time anyway, and a
    /// connection drops its whole page cache whenever it finds that another connection has
    /// committed since its last transaction: with writes spread over the pool's connections,
    /// nearly every write read its tables' and indexes' pages back from the file first (the
    /// bulk of an ask's commit). One connection that makes every write keeps them cached, and
    /// writers wait their turn here instead of in SQLite's busy handler, which sleeps.
    writer: SqlitePool,
    path: Option<PathBuf>,
    lease: Mutex<Option<nix::fcntl::Flock<File>>>,
    /// Where the next audited write goes, as the last one committed it ([`Tip`]); `None` until
    /// it is read, and again after a write that failed or was dropped half-way. Locked for the
    /// whole of every write that appends to the audit chain, so those writes take their turn
    /// here rather than on SQLite's write lock (one writer at a time either way).
    tip: tokio::sync::Mutex<Option<Tip>>,
    /// Whether a write found the disk full, and the checkpoint that heals it ([`full`]).
    full: Arc<full::Full>,
    /// The WAL checkpoint, run on a connection of its own off the request path
    /// ([`checkpoint`]), and that connection.
    checkpoint: Arc<checkpoint::Checkpointer>,
    checkpoint_conn: SqlitePool,
}

/// The head of the audit chain and the key the next request takes. A store that knows them
/// hashes a write's audit row before sending the write, so that the write, the row and the
/// `COMMIT` go to the connection's worker thread in one call (a head read inside the
/// transaction would need a call of its own before the hash).
///
/// Only this store writes the database while it holds the lease, and its audited writes take
/// their turn on [`SqliteStore::tip`], so what it remembers is what is in the file. Were
/// something else to append a row, the trigger of migrations/0011 would refuse the next row
/// hashed after the old head (and a request inserted by something else would make the next
/// key collide): that write fails, and the one after it reads the tip again.
#[derive(Debug, Clone)]
struct Tip {
    head: ChainHead,
    /// What `AUTOINCREMENT` would give: the store gives it itself, as the audit row names it.
    next_key: i64,
}

impl Tip {
    /// The tip after `row` was appended.
    fn after(&self, row: &ChainedRow) -> Tip {
        Tip {
            head: ChainHead {
                id: row.row.id,
                hash: row.hash.clone(),
            },
            next_key: self.next_key,
        }
    }
}

/// The tip, taken for one audited write, with [`SqliteStore::tip`] locked until the write is
/// done. Only [`TipTurn::done`], called after the write's checked `COMMIT`, puts a tip back:
/// after an error, or a future dropped half-way (whose `COMMIT` may or may not have reached
/// the file), the next write reads the tip again.
struct TipTurn<'a> {
    slot: tokio::sync::MutexGuard<'a, Option<Tip>>,
    tip: Tip,
}

impl TipTurn<'_> {
    fn done(mut self, tip: Tip) {
        *self.slot = Some(tip);
    }
}

impl SqliteStore {
    /// Opens (creating if missing, owner-only) the database at `url` and applies the
    /// migrations.
    pub async fn open(url: &str, page_limit: Option<PageLimit>) -> Result<SqliteStore> {
        let path = sqlite_file_path(url);
        if let Some(path) = &path {
            prepare_file(path)?;
        }
        let options = SqliteConnectOptions::from_str(url)
            .context("database_url is not a valid SQLite URL")?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .foreign_keys(true)
            .busy_timeout(Duration::from_secs(10))
            // Checkpoints run on a task of their own, not inside a write's COMMIT (checkpoint).
            .pragma("wal_autocheckpoint", "0");
        let cannot_open = || match &path {
            Some(p) => format!("cannot open the database {}", p.display()),
            None => "cannot open the database".to_owned(),
        };
        let pool = pool_options(4, page_limit.as_ref())
            .connect_with(options.clone())
            .await
            .with_context(cannot_open)?;
        sqlx::migrate!("./migrations")
            .run(&pool)
            .await
            .context("cannot apply the database migrations")?;
        // The write connection waits for its turn as long as SQLite's busy handler would, and
        // is not pinged before each write (it is a file handle in this process, not a network
        // peer that could have gone away).
        let writer = pool_options(1, page_limit.as_ref())
            .acquire_timeout(Duration::from_secs(10))
            .test_before_acquire(false)
            .connect_with(options.clone())
            .await
            .with_context(cannot_open)?;
        let checkpoint_conn = pool_options(1, page_limit.as_ref())
            .connect_with(options)
            .await
            .with_context(cannot_open)?;
        if let Some(path) = &path {
            restrict_sidecars(path);
        }
        Ok(SqliteStore {
            pool,
            checkpoint: checkpoint::Checkpointer::start(checkpoint_conn.clone(), writer.clone()),
            checkpoint_conn,
            full: full::Full::new(writer.clone(), path.clone()),
            writer,
            path,
            lease: Mutex::new(None),
            tip: tokio::sync::Mutex::new(None),
        })
    }

    /// The write connection, once the store is not full: after a write found the disk full,
    /// the WAL is checkpointed first, and the write refused while that cannot finish (see
    /// [`full`]). While the disk is fine this reads one flag.
    async fn write_conn(&self) -> Result<sqlx::pool::PoolConnection<sqlx::Sqlite>> {
        let mut conn = self.writer.acquire().await?;
        self.checkpoint.wrote();
        if self.full.is_set() {
            self.full.heal(&mut conn).await?;
        }
        Ok(conn)
    }

    /// Waits for the turn of an audited write and gives the tip, read from the database if
    /// the last write did not leave one.
    async fn tip(&self) -> Result<TipTurn<'_>> {
        let mut slot = self.tip.lock().await;
        let tip = match slot.take() {
            Some(tip) => tip,
            None => {
                let (id, hash, next_key): (i64, String, i64) = sqlx::query_as(
                    "SELECT id, hash, \
                     MAX(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'requests'), 0), \
                         COALESCE((SELECT MAX(key) FROM requests), 0)) + 1 \
                     FROM audit_head WHERE one = 1",
                )
                .fetch_one(&self.pool)
                .await
                .context("cannot read the head of the audit chain")?;
                Tip {
                    head: ChainHead { id, hash },
                    next_key,
                }
            }
        };
        Ok(TipTurn { slot, tip })
    }

    /// Runs a [`committed!`] statement to its end on a connection of its own and returns the
    /// rows of its `RETURNING`: the result is the `COMMIT`'s, so nothing comes back for a
    /// write that did not reach the file. One call to the worker thread instead of three
    /// (`BEGIN`, the statement, `COMMIT`). On any error the connection is closed, never reused
    /// inside the transaction its `BEGIN` opened (see the module comment).
    async fn commit_one<'q>(
        &self,
        query: sqlx::query::Query<'q, sqlx::Sqlite, sqlx::sqlite::SqliteArguments<'q>>,
    ) -> Result<Vec<SqliteRow>> {
        let mut conn = TxConn::acquire(self).await?;
        let rows = query
            .fetch_all(&mut **conn)
            .await
            .map_err(anyhow::Error::from)
            .inspect_err(|e| self.full.noticed(e))?;
        conn.finished();
        Ok(rows)
    }

    /// The pool, for tests that need to reach past the store (the audit log's triggers).
    #[cfg(test)]
    pub(crate) fn raw_pool(&self) -> &SqlitePool {
        &self.pool
    }

    async fn hydrate_all(&self, rows: Vec<SqliteRow>) -> Result<Vec<Request>> {
        let rows = rows
            .iter()
            .map(RequestRow::from_row)
            .collect::<Result<Vec<_>, _>>()?;
        let keys: Vec<i64> = rows.iter().map(RequestRow::key).collect();
        let mut answers = answers_of(&self.pool, &keys).await?;
        rows.into_iter()
            .map(|row| {
                let key = row.key();
                row.into_request(answers.remove(&key).unwrap_or_default())
            })
            .collect()
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
        let sql = format!(
            "SELECT {REQUEST_COLUMNS}, context_json FROM requests \
             WHERE (?1 = 0 OR status = 'pending') \
             AND (?2 IS NULL OR peer_uid = ?2) AND (?3 IS NULL OR key {cmp} ?3) \
             ORDER BY key {order} LIMIT ?4"
        );
        let uid = match who {
            Visibility::All => None,
            Visibility::Owner(u) => Some(i64::from(u)),
        };
        let rows = sqlx::query(&sql)
            .bind(pending)
            .bind(uid)
            .bind(page.after)
            .bind(i64::from(page.limit))
            .fetch_all(&self.pool)
            .await?;
        self.hydrate_all(rows).await
    }
}

/// What the settling transaction decided.
enum Settled {
    /// The answer counted; with the request's result when it completed the request.
    Won(Option<String>),
    /// It did not count (audited as such).
    Lost,
}

/// The options of a pool of at most `max` connections, with the test hook of [`PageLimit`]
/// when it is given.
fn pool_options(max: u32, page_limit: Option<&PageLimit>) -> SqlitePoolOptions {
    let pool = SqlitePoolOptions::new().max_connections(max);
    let Some(limit) = page_limit else {
        return pool;
    };
    // Applied to every new connection and on every checkout, so that a change reaches
    // connections already open.
    let on_connect = limit.clone();
    let on_acquire = limit.clone();
    pool.after_connect(move |conn, _meta| {
        let pages = on_connect.load(Ordering::SeqCst);
        Box::pin(async move { apply_page_limit(conn, pages).await })
    })
    .before_acquire(move |conn, _meta| {
        let pages = on_acquire.load(Ordering::SeqCst);
        Box::pin(async move { apply_page_limit(conn, pages).await.map(|()| true) })
    })
}

/// The test hook of [`PageLimit`]: 0 leaves the connection as it is.
async fn apply_page_limit(conn: &mut SqliteConnection, pages: u64) -> Result<(), sqlx::Error> {
    if pages > 0 {
        sqlx::query(&format!("PRAGMA max_page_count = {pages}"))
            .execute(&mut *conn)
            .await?;
    }
    Ok(())
}

async fn insert_posts(
    tx: &mut SqliteConnection,
    key: i64,
    answerer: &str,
    posts: &[PlannedPost],
) -> Result<()> {
    for p in posts {
        sqlx::query(
            "INSERT INTO posts (request_key, idx, answerer, slot, channel, guild, nonce) \
             VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
        )
        .bind(key)
        .bind(p.idx as i64)
        .bind(answerer)
        .bind(p.slot.to_string())
        .bind(&p.channel)
        .bind(&p.guild)
        .bind(&p.nonce)
        .execute(&mut *tx)
        .await?;
    }
    Ok(())
}

/// Binds the values of [`insert_audit!`].
fn bind_row<'q>(
    q: sqlx::query::Query<'q, sqlx::Sqlite, sqlx::sqlite::SqliteArguments<'q>>,
    row: &'q ChainedRow,
) -> sqlx::query::Query<'q, sqlx::Sqlite, sqlx::sqlite::SqliteArguments<'q>> {
    let (r, c) = (&row.row, row);
    q.bind(r.id)
        .bind(r.at_ms)
        .bind(r.request_key)
        .bind(r.question_idx)
        .bind(&r.source)
        .bind(&r.actor)
        .bind(&r.action)
        .bind(&r.detail)
        .bind(r.accepted)
        .bind(&c.prev_hash)
        .bind(&c.hash)
        .bind(&c.request_id)
}

/// Binds the values of [`insert_audit_outcome!`]: the two rows that the same entry gives,
/// accepted and refused.
fn bind_outcomes<'q>(
    q: sqlx::query::Query<'q, sqlx::Sqlite, sqlx::sqlite::SqliteArguments<'q>>,
    accepted: &'q ChainedRow,
    refused: &'q ChainedRow,
) -> sqlx::query::Query<'q, sqlx::Sqlite, sqlx::sqlite::SqliteArguments<'q>> {
    debug_assert_eq!(
        (accepted.row.id, &accepted.prev_hash, &accepted.row.detail),
        (refused.row.id, &refused.prev_hash, &refused.row.detail)
    );
    let r = &accepted.row;
    q.bind(r.id)
        .bind(r.at_ms)
        .bind(r.request_key)
        .bind(r.question_idx)
        .bind(&r.source)
        .bind(&r.actor)
        .bind(&r.action)
        .bind(&r.detail)
        .bind(&accepted.prev_hash)
        .bind(&accepted.hash)
        .bind(&refused.hash)
        .bind(&accepted.request_id)
}

/// The rows that `entry`, written at `at`, gives after `head`: accepted, then refused.
fn outcomes(head: &ChainHead, entry: &AuditEntry, at: i64) -> (ChainedRow, ChainedRow) {
    let mut entry = entry.clone();
    entry.accepted = true;
    let accepted = head.next(&entry.content(at));
    entry.accepted = false;
    let refused = head.next(&entry.content(at));
    (accepted, refused)
}

/// The answer state of every question of the given requests, in question order.
async fn answers_of(pool: &SqlitePool, keys: &[i64]) -> Result<HashMap<i64, Vec<QuestionState>>> {
    let mut out: HashMap<i64, Vec<QuestionState>> = HashMap::with_capacity(keys.len());
    if keys.is_empty() {
        return Ok(out);
    }
    let cols = "request_key, answered_at, answered_by, answered_via, answered_id, answered_note, \
                selected_json, custom, votes_json, terms_json";
    let rows: Vec<AnswerRow> = if keys.len() == 1 {
        sqlx::query_as(&format!(
            "SELECT {cols} FROM questions WHERE request_key = ? ORDER BY idx"
        ))
        .bind(keys[0])
        .fetch_all(pool)
        .await?
    } else {
        sqlx::query_as(&format!(
            "SELECT {cols} FROM questions WHERE request_key IN \
             (SELECT value FROM json_each(?)) ORDER BY request_key, idx"
        ))
        .bind(serde_json::to_string(keys)?)
        .fetch_all(pool)
        .await?
    };
    for q in rows {
        let key = q.request_key;
        out.entry(key).or_default().push(q.into_state()?);
    }
    Ok(out)
}

/// Below this much free space where the database lives, the store reports itself failing: a
/// request with its context takes up to a few hundred KiB, and SQLite needs room for the WAL
/// frames of a transaction before it can commit.
pub const MIN_FREE_BYTES: u64 = 256 * 1024;

/// The directory holding `db` and the bytes free there for this process (`f_bavail`: what an
/// unprivileged writer may use).
fn free_space(db: &Path) -> Result<(&Path, u64)> {
    let dir = match db.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let st = nix::sys::statvfs::statvfs(dir)
        .with_context(|| format!("cannot read the free space of {}", dir.display()))?;
    Ok((
        dir,
        st.blocks_available() as u64 * st.fragment_size() as u64,
    ))
}

/// Fails when the file system holding `db` has less than [`MIN_FREE_BYTES`] free for this
/// process.
fn disk_room(db: &Path) -> Result<()> {
    let (dir, free) = free_space(db)?;
    if free < MIN_FREE_BYTES {
        bail!(
            "the disk holding the database is full: {} KiB free in {} (writes need at least {} KiB)",
            free / 1024,
            dir.display(),
            MIN_FREE_BYTES / 1024
        );
    }
    Ok(())
}

/// The file behind a `sqlite://` URL, if it is one.
pub fn sqlite_file_path(url: &str) -> Option<PathBuf> {
    let rest = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))?;
    let path = rest.split('?').next().unwrap_or(rest);
    if path.is_empty() || path == ":memory:" {
        return None;
    }
    Some(Path::new(path).to_path_buf())
}

/// The lock file that marks which daemon holds the database.
fn lock_path(db: &Path) -> PathBuf {
    let mut name = db.file_name().unwrap_or_default().to_os_string();
    name.push(".lock");
    db.with_file_name(name)
}

/// Creates the directory and an owner-only database file before SQLite does, so that the file
/// and the `-wal` and `-shm` files SQLite creates beside it (which copy its mode) are 0600.
fn prepare_file(path: &Path) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if !dir.exists() {
            std::fs::create_dir_all(dir).with_context(|| {
                format!("cannot create the database directory {}", dir.display())
            })?;
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
        }
    }
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e).with_context(|| format!("cannot create the database {}", path.display())),
    }
}

/// Makes the database and its sidecar files owner-only, for files created by an older
/// version or by hand.
fn restrict_sidecars(path: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let mut p = path.as_os_str().to_os_string();
        p.push(suffix);
        let p = PathBuf::from(p);
        if let Ok(meta) = std::fs::metadata(&p) {
            if meta.permissions().mode() & 0o077 != 0 {
                tracing::warn!(path = %p.display(), "the database file was readable by others; making it owner-only (0600)");
                let _ = std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    //! The SQLite-only part of the store's tests; the contract is checked for every backend in
    //! `store/tests.rs`.
    use super::*;

    #[tokio::test]
    async fn files_are_owner_only_and_a_second_holder_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("s/askrelay.db");
        let url = format!("sqlite://{}", db.display());
        let store = SqliteStore::open(&url, None).await.unwrap();
        let me = Holder {
            pid: 11,
            host: "here".into(),
            node: "here".into(),
        };
        store.acquire_lease(&me).await.unwrap();
        store.writable().await.unwrap();
        for suffix in ["", "-wal", "-shm"] {
            let p = format!("{}{suffix}", db.display());
            let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "{p}");
        }
        let other = SqliteStore::open(&url, None).await.unwrap();
        let err = other.acquire_lease(&me).await.unwrap_err().to_string();
        assert!(err.contains("pid 11 on host here"), "{err}");
        store.close().await;
        other.acquire_lease(&me).await.unwrap();
    }

    /// The WAL is checkpointed by the store's own task ([`checkpoint`]), not in a write's
    /// `COMMIT` (`wal_autocheckpoint` is off): after [`checkpoint::EVERY_WRITES`] writes it
    /// copies the WAL into the database, and the next write starts the WAL over.
    #[tokio::test]
    async fn the_wal_is_checkpointed_by_the_stores_task_and_starts_over() {
        use crate::store::tests::ask;
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("c.db").display());
        let store = SqliteStore::open(&url, None).await.unwrap();
        let (auto,): (i64,) = sqlx::query_as("PRAGMA wal_autocheckpoint")
            .fetch_one(&mut *store.writer.acquire().await.unwrap())
            .await
            .unwrap();
        assert_eq!(auto, 0, "the write connection checkpoints by itself");
        for _ in 0..checkpoint::EVERY_WRITES {
            store.audit(&ask()).await.unwrap();
        }
        tokio::time::timeout(Duration::from_secs(30), store.checkpoint.checkpoints(1))
            .await
            .expect("no checkpoint after EVERY_WRITES writes");
        store.audit(&ask()).await.unwrap();
        // The WAL's length in frames before this checkpoint: the one write since.
        let (_, frames, _): (i64, i64, i64) = sqlx::query_as("PRAGMA wal_checkpoint(PASSIVE)")
            .fetch_one(&store.pool)
            .await
            .unwrap();
        assert!(
            (1..10).contains(&frames),
            "{frames} frames in the WAL after one write"
        );
        store.close().await;
    }

    /// The store remembers the audit chain's tip between writes ([`Tip`]): a row appended by
    /// something else makes its next audited write fail on the trigger, and the one after reads
    /// the tip again. The key it gives is the one `AUTOINCREMENT` would, even after the newest
    /// request was pruned and the store opened again; the chain verifies throughout.
    #[tokio::test]
    async fn the_tip_is_read_again_after_a_write_the_store_did_not_make() {
        use crate::domain::audit::{verify, ChainEnd, ExportLine, Verdict};
        use crate::store::tests::{ask, create, new_request};
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("t.db").display());
        let store = SqliteStore::open(&url, None).await.unwrap();
        let a = create(&store, &new_request("a")).await;
        let b = create(&store, &new_request("b")).await;
        assert_eq!((a.key, b.key), (1, 2));

        let (id, hash): (i64, String) = sqlx::query_as("SELECT id, hash FROM audit_head")
            .fetch_one(store.raw_pool())
            .await
            .unwrap();
        let outside = ChainHead { id, hash }.next(&ask().content(3));
        bind_row(sqlx::query(insert_audit!()), &outside)
            .execute(store.raw_pool())
            .await
            .unwrap();
        let err = store.audit(&ask()).await.unwrap_err();
        assert!(
            format!("{err:#}").contains("head of the audit chain"),
            "{err:#}"
        );
        store.audit(&ask()).await.unwrap();

        let gone = AskError::aborted("gone");
        assert!(store
            .end(b.key, Status::Cancelled, &gone, None, &ask())
            .await
            .unwrap());
        assert_eq!(store.prune(Some(i64::MAX), None).await.unwrap().requests, 1);
        store.close().await;
        let store = SqliteStore::open(&url, None).await.unwrap();
        assert_eq!(create(&store, &new_request("c")).await.key, 3);

        let start = store.audit_start(None).await.unwrap();
        let mut lines = vec![serde_json::to_string(&ExportLine::Start(start.clone())).unwrap()];
        let page = store.audit_chain(0, 100).await.unwrap();
        let last = page.rows.last().unwrap().hash.clone();
        let rows = page.rows.len() as u64;
        for row in page.rows {
            lines.push(serde_json::to_string(&ExportLine::Row(row)).unwrap());
        }
        let end = ChainEnd::new(&start, rows, &last, page.head);
        lines.push(serde_json::to_string(&ExportLine::End(end)).unwrap());
        match verify(lines.iter().map(String::as_str)) {
            Verdict::Intact { rows: 6, .. } => {}
            v => panic!("{v}"),
        }
    }
}
