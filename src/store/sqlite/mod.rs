//! The SQLite store: the embedded default, one file next to the daemon.
//!
//! WAL mode with foreign keys on; migrations from `migrations/` are embedded and run at
//! start-up. Every state change is one transaction, and first-wins is a single conditional
//! `UPDATE … WHERE answered_at IS NULL`, so two answerers racing on a question can never both
//! win, whichever task they run in.
//!
//! Every write runs on a connection of its own from the pool. If anything in it fails (a full
//! disk is the usual cause), the transaction is rolled back and the connection is closed instead
//! of going back to the pool: a connection left inside a transaction would hold the write lock
//! and turn later "commits" into savepoints that never reach the file.

use super::rows::{
    answers_from_json, posts_from_json, AnswerRow, PostRow, QuestionState, RequestRow, POST_COLUMNS,
};
use crate::domain::answer::Settlement;
use crate::domain::audit::{ChainHead, ChainStart, ChainedRow, StartReason};
use crate::domain::error::AskError;
use crate::domain::request::{
    AuditEntry, AuditRow, Created, DuePost, EditState, NewRequest, PlannedPost, Post, PostKey,
    Request, SettleOutcome, Status, Timer,
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
/// instead of going back to the pool (see the module comment). `$body` ends in `anyhow::Ok(..)`.
macro_rules! write_tx {
    ($store:expr, |$tx:ident| $body:block) => {{
        let mut conn = $store.pool.acquire().await?;
        let result: anyhow::Result<_> = async {
            let mut $tx = conn.begin_with("BEGIN IMMEDIATE").await?;
            let value = async { $body }.await?;
            $tx.commit().await?;
            anyhow::Ok(value)
        }
        .await;
        if result.is_err() {
            // Dropping the transaction queued a rollback; whatever state that left the
            // connection in, it is not reused.
            conn.close_on_drop();
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
    async fn acquire(pool: &SqlitePool) -> Result<TxConn> {
        Ok(TxConn {
            conn: pool.acquire().await?,
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

/// The statement that appends one row to the audit chain, to bind with [`bind_row`]. A macro,
/// so that it can be sent in one call with the statement after it (`…; COMMIT`).
macro_rules! insert_audit {
    () => {
        "INSERT INTO audit (id, at, request_key, question_idx, source, actor, action, detail, \
         accepted, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    };
}

mod grants;
mod operations;

pub struct SqliteStore {
    pool: SqlitePool,
    path: Option<PathBuf>,
    lease: Mutex<Option<nix::fcntl::Flock<File>>>,
}

/// The columns every read of a request takes, its context included (what answerers and
/// listings show).
const REQUEST_COLUMNS_WITH_CONTEXT: &str =
    "key, request_id, token, questions_json, caller_json, scope_json, status, answerer, route, \
     peer_uid, peer_pid, created_at, ended_at, result_json, error_code, error_message, \
     expire_at, on_expire, context_json";

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
            .busy_timeout(Duration::from_secs(10));
        let mut pool = SqlitePoolOptions::new().max_connections(4);
        if let Some(limit) = page_limit {
            // Applied to every new connection and on every checkout, so that a change reaches
            // connections already open.
            let on_connect = limit.clone();
            pool = pool
                .after_connect(move |conn, _meta| {
                    let pages = on_connect.load(Ordering::SeqCst);
                    Box::pin(async move { apply_page_limit(conn, pages).await })
                })
                .before_acquire(move |conn, _meta| {
                    let pages = limit.load(Ordering::SeqCst);
                    Box::pin(async move { apply_page_limit(conn, pages).await.map(|()| true) })
                });
        }
        let pool = pool
            .connect_with(options)
            .await
            .with_context(|| match &path {
                Some(p) => format!("cannot open the database {}", p.display()),
                None => "cannot open the database".to_owned(),
            })?;
        sqlx::migrate!("./migrations")
            .run(&pool)
            .await
            .context("cannot apply the database migrations")?;
        if let Some(path) = &path {
            restrict_sidecars(path);
        }
        Ok(SqliteStore {
            pool,
            path,
            lease: Mutex::new(None),
        })
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
        let mut conn = TxConn::acquire(&self.pool).await?;
        let rows = query.fetch_all(&mut **conn).await?;
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

    /// One request with the state of its questions and its outbox rows, in one query (each
    /// query is a round trip to the connection's worker thread, and a click needs this one).
    async fn one(&self, clause: &str, bind: Bind<'_>) -> Result<Option<(Request, Vec<Post>)>> {
        let sql = format!(
            "SELECT {REQUEST_COLUMNS_WITH_CONTEXT}, \
             (SELECT json_group_array(json_array(idx, answered_at, answered_by, answered_via, \
                answered_id, answered_note, selected_json, custom, votes_json, terms_json)) \
              FROM questions WHERE request_key = requests.key) AS answers_json, \
             (SELECT json_group_array(json_array({POST_COLUMNS})) \
              FROM posts WHERE request_key = requests.key) AS posts_json \
             FROM requests WHERE {clause}"
        );
        let q = sqlx::query(&sql);
        let q = match bind {
            Bind::Text(s) => q.bind(s),
            Bind::Int(i) => q.bind(i),
        };
        let Some(row) = q.fetch_optional(&self.pool).await? else {
            return Ok(None);
        };
        let answers = answers_from_json(row.get("answers_json"))?;
        let posts = posts_from_json(row.get("posts_json"))?;
        Ok(Some((
            RequestRow::from_row(&row)?.into_request(answers)?,
            posts,
        )))
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
            "SELECT {REQUEST_COLUMNS_WITH_CONTEXT} FROM requests \
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

enum Bind<'a> {
    Text(&'a str),
    Int(i64),
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

/// The head of the audit chain, read inside the transaction that appends after it (SQLite has
/// one writer at a time: `BEGIN IMMEDIATE` holds the write lock from the start).
async fn chain_head(tx: &mut SqliteConnection) -> Result<ChainHead> {
    let (id, hash): (i64, String) = sqlx::query_as("SELECT id, hash FROM audit_head WHERE one = 1")
        .fetch_one(&mut *tx)
        .await
        .context("cannot read the head of the audit chain")?;
    Ok(ChainHead { id, hash })
}

/// Binds the values of [`insert_audit!`].
fn bind_row<'q>(
    q: sqlx::query::Query<'q, sqlx::Sqlite, sqlx::sqlite::SqliteArguments<'q>>,
    row: &'q ChainedRow,
) -> sqlx::query::Query<'q, sqlx::Sqlite, sqlx::sqlite::SqliteArguments<'q>> {
    q.bind(row.id)
        .bind(row.at)
        .bind(row.request_key)
        .bind(row.question_idx)
        .bind(&row.source)
        .bind(&row.actor)
        .bind(&row.action)
        .bind(&row.detail)
        .bind(row.accepted)
        .bind(&row.prev_hash)
        .bind(&row.hash)
}

/// Appends `e` to the audit chain, after the head read in the same transaction; the trigger of
/// migrations/0011 checks that it follows the head and moves the head.
async fn append_audit(tx: &mut SqliteConnection, e: &AuditEntry, at: i64) -> Result<()> {
    let row = chain_head(tx).await?.next(&e.content(at));
    bind_row(sqlx::query(insert_audit!()), &row)
        .execute(&mut *tx)
        .await?;
    Ok(())
}

/// Reads the head that a statement's `RETURNING …, (SELECT id FROM audit_head),
/// (SELECT hash FROM audit_head)` gave back from columns `at` and `at + 1`.
fn head_of(row: &SqliteRow, at: usize) -> ChainHead {
    ChainHead {
        id: row.get(at),
        hash: row.get(at + 1),
    }
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

/// Fails when the file system holding `db` has less than [`MIN_FREE_BYTES`] free for this
/// process (`f_bavail`: what an unprivileged writer may use).
fn disk_room(db: &Path) -> Result<()> {
    let dir = match db.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let st = nix::sys::statvfs::statvfs(dir)
        .with_context(|| format!("cannot read the free space of {}", dir.display()))?;
    let free = st.blocks_available() as u64 * st.fragment_size() as u64;
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
}
