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
    answers_from_json, posts_from_json, AnswerRow, PostRow, RequestRow, POST_COLUMNS,
};
use crate::core::answer::Settlement;
use crate::core::error::AskError;
use crate::core::request::{
    Answered, AuditEntry, AuditRow, Created, DuePost, EditState, NewRequest, PlannedPost, Post,
    PostKey, Request, SettleOutcome, Status, Timer,
};
use crate::core::store::{Holder, NewAnswer, Page, Pruned, Store, Visibility};
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
                answered_id, answered_note, selected_json, custom)) \
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

#[async_trait]
impl Store for SqliteStore {
    async fn acquire_lease(&self, me: &Holder) -> Result<()> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        let lock_path = lock_path(path);
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&lock_path)
            .with_context(|| format!("cannot open the lock file {}", lock_path.display()))?;
        let mut file =
            match nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock) {
                Ok(f) => f,
                Err((mut file, _)) => {
                    let mut holder = String::new();
                    let _ = file.read_to_string(&mut holder);
                    let holder = holder.trim();
                    bail!(
                        "the database {} is in use by another askrelay daemon ({}); stop it \
                         first, or give this daemon its own database_url",
                        path.display(),
                        if holder.is_empty() {
                            "its pid and host are unknown".to_owned()
                        } else {
                            holder.to_owned()
                        }
                    );
                }
            };
        file.set_len(0)?;
        file.rewind()?;
        writeln!(file, "pid {} on host {}", me.pid, me.host)?;
        file.flush()?;
        *self.lease.lock().unwrap() = Some(file);
        Ok(())
    }

    async fn create(
        &self,
        new: &NewRequest,
        posts: &[PlannedPost],
        audit: &AuditEntry,
    ) -> Result<Created> {
        let questions_json = serde_json::to_string(&*new.questions)?;
        let caller_json = serde_json::to_string(&new.caller)?;
        let scope_json = serde_json::to_string(&new.scope)?;
        let context_json = match &new.context {
            Some(c) => Some(serde_json::to_string(&**c)?),
            None => None,
        };
        let planned: Vec<serde_json::Value> = posts
            .iter()
            .map(|p| {
                serde_json::json!({"idx": p.idx, "slot": p.slot.to_string(), "channel": p.channel,
                                   "guild": p.guild, "nonce": p.nonce})
            })
            .collect();
        // One statement: the trigger `requests_created` writes the questions, the outbox rows
        // and the audit row from the same row (see migrations/0004_one_statement.sql). It runs
        // in a transaction whose COMMIT is checked: in auto-commit the row RETURNING gives back
        // comes before the statement's own commit, whose failure (a full disk) went unseen.
        let planned_json = serde_json::to_string(&planned)?;
        let audit_json = audit_json(audit, new.created_at_ms);
        let on_expire = new
            .expiry
            .as_ref()
            .map(|e| serde_json::to_string(&e.on_expire))
            .transpose()?;
        let rows = self
            .commit_one(
                sqlx::query(committed!(
                    "INSERT INTO requests (request_id, token, questions_json, caller_json, \
                     scope_json, answerer, route, peer_uid, peer_pid, created_at, planned_json, \
                     audit_json, expire_at, on_expire, context_json) \
                     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) \
                     ON CONFLICT (request_id) DO NOTHING RETURNING key"
                ))
                .bind(&new.request_id)
                .bind(&new.token)
                .bind(&questions_json)
                .bind(&caller_json)
                .bind(&scope_json)
                .bind(&new.answerer)
                .bind(&new.route)
                .bind(new.peer.uid.map(i64::from))
                .bind(new.peer.pid)
                .bind(new.created_at_ms)
                .bind(&planned_json)
                .bind(&audit_json)
                .bind(new.expiry.as_ref().map(|e| e.at_ms))
                .bind(&on_expire)
                .bind(&context_json),
            )
            .await?;
        let inserted: Option<i64> = rows.first().map(|r| r.get(0));
        match inserted {
            Some(key) => Ok(Created::New(Request::created(key, new))),
            None => {
                let existing = self
                    .by_id(&new.request_id)
                    .await?
                    .context("a conflicting request vanished")?;
                Ok(Created::Existing(existing))
            }
        }
    }

    async fn by_id(&self, request_id: &str) -> Result<Option<Request>> {
        Ok(self
            .one("request_id = ?", Bind::Text(request_id))
            .await?
            .map(|(r, _)| r))
    }

    async fn by_key(&self, key: i64) -> Result<Option<Request>> {
        Ok(self.one("key = ?", Bind::Int(key)).await?.map(|(r, _)| r))
    }

    async fn by_token(&self, token: &str) -> Result<Option<(Request, Vec<Post>)>> {
        self.one("token = ?", Bind::Text(token)).await
    }

    async fn all_pending(&self) -> Result<Vec<(Request, Vec<Post>)>> {
        let rows = sqlx::query(&format!(
            "SELECT {REQUEST_COLUMNS_WITH_CONTEXT} FROM requests WHERE status = 'pending' \
             ORDER BY key"
        ))
        .fetch_all(&self.pool)
        .await?;
        let reqs = self.hydrate_all(rows).await?;
        self.with_posts(reqs).await
    }

    async fn pending(&self, who: Visibility, page: Page) -> Result<Vec<Request>> {
        self.listing(who, page, true, false).await
    }

    async fn history(&self, who: Visibility, page: Page) -> Result<Vec<Request>> {
        self.listing(who, page, false, true).await
    }

    async fn settle(&self, answer: NewAnswer<'_>) -> Result<SettleOutcome> {
        let NewAnswer {
            key,
            idx,
            settlement,
            actor,
            at_ms,
            audit,
            result_if_last,
            finish,
        } = answer;
        let selected_json = serde_json::to_string(&settlement.selected)?;
        let audit_json = audit_json(audit, at_ms);
        // One transaction, whose COMMIT is checked before anyone is told: the conditional
        // UPDATE decides first-wins, and its trigger writes the audit row and, when
        // `result_if_last` is given and no question is left open, the request's final result.
        // Usually two calls to the connection's worker thread: BEGIN with the UPDATE, then
        // COMMIT.
        let mut tx = TxConn::acquire(&self.pool).await?;
        let settled = {
            let open_after: Vec<i64> = sqlx::query_scalar(concat!(
                "BEGIN IMMEDIATE; ",
                "UPDATE questions SET answered_at = ?, answered_by = ?, answered_via = ?, \
                 answered_id = ?, answered_note = ?, selected_json = ?, custom = ?, \
                 audit_json = ?, result_if_last = ? \
                 WHERE request_key = ? AND idx = ? AND answered_at IS NULL \
                 AND (SELECT status FROM requests WHERE key = ?) = 'pending' \
                 RETURNING (SELECT count(*) FROM questions q \
                            WHERE q.request_key = questions.request_key \
                            AND q.answered_at IS NULL)"
            ))
            .bind(at_ms)
            .bind(&actor.name)
            .bind(actor.via.as_str())
            .bind(&actor.id)
            .bind(&actor.note)
            .bind(&selected_json)
            .bind(&settlement.custom)
            .bind(&audit_json)
            .bind(&result_if_last)
            .bind(key)
            .bind(idx as i64)
            .bind(key)
            .fetch_all(&mut **tx)
            .await?;
            let settled = match (open_after.first(), &result_if_last) {
                (Some(0), Some(result)) => Settled::Won(Some(result.clone())),
                (Some(0), None) => {
                    // The other questions were answered since the caller read the request:
                    // finish it here. Only the last winner sees no open question.
                    let rows = sqlx::query(
                        "SELECT selected_json, custom FROM questions WHERE request_key = ? \
                         ORDER BY idx",
                    )
                    .bind(key)
                    .fetch_all(&mut **tx)
                    .await?;
                    let mut all = Vec::with_capacity(rows.len());
                    for r in &rows {
                        all.push(Settlement {
                            selected: serde_json::from_str(
                                r.get::<Option<&str>, _>(0).unwrap_or("[]"),
                            )?,
                            custom: r.get(1),
                        });
                    }
                    let result = finish(&all);
                    sqlx::query(
                        "UPDATE requests SET status = 'answered', result_json = ?, ended_at = ? \
                         WHERE key = ? AND status = 'pending'",
                    )
                    .bind(&result)
                    .bind(at_ms)
                    .bind(key)
                    .execute(&mut **tx)
                    .await?;
                    Settled::Won(Some(result))
                }
                (Some(_), _) => Settled::Won(None),
                (None, _) => {
                    // It did not count: audit that (the rare path).
                    let mut lost = audit.clone();
                    lost.accepted = false;
                    insert_audit(&mut tx, &lost, at_ms).await?;
                    Settled::Lost
                }
            };
            sqlx::query("COMMIT").execute(&mut **tx).await?;
            tx.finished();
            settled
        };
        // Back to the pool before anything else is read: holding it while waiting for another
        // connection could wait for ever once every connection is held so.
        drop(tx);
        match settled {
            Settled::Won(result) => Ok(SettleOutcome::Won { result }),
            Settled::Lost => {
                // Say why it did not count.
                let Some(req) = self.by_key(key).await? else {
                    return Ok(SettleOutcome::Unknown);
                };
                Ok(match req.answers.get(idx) {
                    None => SettleOutcome::Unknown,
                    Some(Some(a)) => SettleOutcome::AlreadyAnswered(a.clone()),
                    Some(None) => SettleOutcome::Ended(req.status),
                })
            }
        }
    }

    async fn end(
        &self,
        key: i64,
        status: Status,
        error: &AskError,
        audit: &AuditEntry,
    ) -> Result<bool> {
        let at = crate::core::request::now_ms();
        write_tx!(self, |tx| {
            let ended = sqlx::query(
                "UPDATE requests SET status = ?, error_code = ?, error_message = ?, \
                     ended_at = ? WHERE key = ? AND status = 'pending'",
            )
            .bind(status.as_str())
            .bind(error.code.as_str())
            .bind(&error.message)
            .bind(at)
            .bind(key)
            .execute(&mut *tx)
            .await?
            .rows_affected()
                == 1;
            let mut audit = audit.clone();
            audit.accepted = ended;
            insert_audit(&mut tx, &audit, at).await?;
            anyhow::Ok(ended)
        })
    }

    async fn audit(&self, entry: &AuditEntry) -> Result<()> {
        let at = crate::core::request::now_ms();
        self.commit_one(
            sqlx::query(committed!(
                "INSERT INTO audit (at, request_key, question_idx, source, actor, action, \
                 detail, accepted) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
            ))
            .bind(at)
            .bind(entry.request_key)
            .bind(entry.question_idx.map(|i| i as i64))
            .bind(entry.source.as_str())
            .bind(&entry.actor)
            .bind(entry.action.as_str())
            .bind(&entry.detail)
            .bind(entry.accepted),
        )
        .await
        .map(drop)
    }

    async fn audit_rows(&self, request_key: Option<i64>) -> Result<Vec<AuditRow>> {
        let rows = sqlx::query(
            "SELECT id, at, request_key, question_idx, source, actor, action, detail, accepted \
             FROM audit WHERE (?1 IS NULL OR request_key = ?1) ORDER BY id",
        )
        .bind(request_key)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .into_iter()
            .map(|r| AuditRow {
                id: r.get(0),
                at_ms: r.get(1),
                request_key: r.get(2),
                question_idx: r.get(3),
                source: r.get(4),
                actor: r.get(5),
                action: r.get(6),
                detail: r.get(7),
                accepted: r.get(8),
            })
            .collect())
    }

    async fn posts(&self, keys: &[i64]) -> Result<HashMap<i64, Vec<Post>>> {
        let mut out: HashMap<i64, Vec<Post>> = HashMap::new();
        if keys.is_empty() {
            return Ok(out);
        }
        let sql = if keys.len() == 1 {
            format!("SELECT {POST_COLUMNS} FROM posts WHERE request_key = ?1 ORDER BY idx, slot")
        } else {
            format!(
                "SELECT {POST_COLUMNS} FROM posts WHERE request_key IN \
                 (SELECT value FROM json_each(?1)) ORDER BY request_key, idx, slot"
            )
        };
        let q = sqlx::query(&sql);
        let q = if keys.len() == 1 {
            q.bind(keys[0].to_string())
        } else {
            q.bind(serde_json::to_string(keys)?)
        };
        for r in q.fetch_all(&self.pool).await? {
            let r = PostRow::from_row(&r)?;
            out.entry(r.request_key).or_default().push(r.into_post());
        }
        Ok(out)
    }

    async fn plan_posts(&self, key: i64, answerer: &str, posts: &[PlannedPost]) -> Result<()> {
        write_tx!(self, |tx| {
            insert_posts(&mut tx, key, answerer, posts).await
        })
    }

    async fn record_post(
        &self,
        post: &PostKey<'_>,
        message: &str,
        channel: Option<&str>,
        guild: Option<&str>,
    ) -> Result<()> {
        let at = crate::core::request::now_ms();
        self.commit_one(
            sqlx::query(committed!(
                "UPDATE posts SET message = ?, posted_at = ?, attempts = attempts + 1, \
                     last_error = NULL, guild = COALESCE(?, guild), channel = COALESCE(?, channel) \
                     WHERE request_key = ? AND idx = ? AND answerer = ? AND slot = ?"
            ))
            .bind(message)
            .bind(at)
            .bind(guild)
            .bind(channel)
            .bind(post.key)
            .bind(post.idx as i64)
            .bind(post.answerer)
            .bind(post.slot.to_string()),
        )
        .await
        .map(drop)
    }

    async fn record_post_failure(&self, post: &PostKey<'_>, error: &str) -> Result<()> {
        self.commit_one(
            sqlx::query(committed!(
                "UPDATE posts SET attempts = attempts + 1, last_error = ? \
                     WHERE request_key = ? AND idx = ? AND answerer = ? AND slot = ?"
            ))
            .bind(error)
            .bind(post.key)
            .bind(post.idx as i64)
            .bind(post.answerer)
            .bind(post.slot.to_string()),
        )
        .await
        .map(drop)
    }

    async fn record_edit(&self, post: &PostKey<'_>, edit: EditState) -> Result<()> {
        self.commit_one(
            sqlx::query(committed!(
                "UPDATE posts SET edited = ? \
                 WHERE request_key = ? AND idx = ? AND answerer = ? AND slot = ?"
            ))
            .bind(edit.as_str())
            .bind(post.key)
            .bind(post.idx as i64)
            .bind(post.answerer)
            .bind(post.slot.to_string()),
        )
        .await
        .map(drop)
    }

    async fn outbox_due(&self, answerer: Option<&str>) -> Result<Vec<DuePost>> {
        let rows = sqlx::query(
            "SELECT p.request_key, p.idx, p.answerer, p.message IS NULL AS unposted, \
             CASE WHEN p.message IS NULL THEN r.created_at \
                  WHEN q.answered_at IS NOT NULL THEN q.answered_at \
                  ELSE r.ended_at END AS due_since \
             FROM posts p \
             JOIN requests r ON r.key = p.request_key \
             JOIN questions q ON q.request_key = p.request_key AND q.idx = p.idx \
             WHERE p.edited IS NULL AND (?1 IS NULL OR p.answerer = ?1) \
             AND ((p.message IS NULL AND r.status = 'pending') \
               OR (p.message IS NOT NULL AND p.slot NOT LIKE 'note:%' \
                   AND (q.answered_at IS NOT NULL OR r.status != 'pending'))) \
             ORDER BY due_since",
        )
        .bind(answerer)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .into_iter()
            .map(|r| DuePost {
                request_key: r.get(0),
                idx: r.get::<i64, _>(1) as usize,
                answerer: r.get(2),
                unposted: r.get(3),
                due_since_ms: r.get::<Option<i64>, _>(4).unwrap_or(0),
            })
            .collect())
    }

    async fn timers(&self, answerer: &str) -> Result<Vec<Timer>> {
        let rows = sqlx::query(
            "SELECT t.request_key, t.name, t.fired, t.due_at FROM timers t \
             JOIN requests r ON r.key = t.request_key \
             WHERE t.answerer = ? AND t.due_at IS NOT NULL AND r.status = 'pending'",
        )
        .bind(answerer)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .into_iter()
            .map(|r| Timer {
                request_key: r.get(0),
                name: r.get(1),
                fired: r.get::<i64, _>(2) as u32,
                due_at_ms: r.get(3),
            })
            .collect())
    }

    async fn advance_timer(
        &self,
        key: i64,
        answerer: &str,
        from: Option<u32>,
        to: &Timer,
        posts: &[PlannedPost],
    ) -> Result<bool> {
        write_tx!(self, |tx| {
            let pending: Option<i64> =
                sqlx::query_scalar("SELECT 1 FROM requests WHERE key = ? AND status = 'pending'")
                    .bind(key)
                    .fetch_optional(&mut *tx)
                    .await?;
            if pending.is_none() {
                return anyhow::Ok(false);
            }
            let moved = match from {
                None => sqlx::query(
                    "INSERT INTO timers (request_key, answerer, name, fired, due_at) \
                     VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                )
                .bind(key)
                .bind(answerer)
                .bind(&to.name)
                .bind(i64::from(to.fired))
                .bind(to.due_at_ms)
                .execute(&mut *tx)
                .await?
                .rows_affected(),
                Some(fired) => sqlx::query(
                    "UPDATE timers SET fired = ?, due_at = ? \
                     WHERE request_key = ? AND answerer = ? AND name = ? AND fired = ?",
                )
                .bind(i64::from(to.fired))
                .bind(to.due_at_ms)
                .bind(key)
                .bind(answerer)
                .bind(&to.name)
                .bind(i64::from(fired))
                .execute(&mut *tx)
                .await?
                .rows_affected(),
            };
            if moved == 0 {
                return anyhow::Ok(false);
            }
            insert_posts(&mut tx, key, answerer, posts).await?;
            anyhow::Ok(true)
        })
    }

    async fn with_posts_by_key(&self, key: i64) -> Result<Option<(Request, Vec<Post>)>> {
        self.one("key = ?", Bind::Int(key)).await
    }

    async fn save_draft(&self, key: i64, idx: usize, user: &str, selected: &[usize]) -> Result<()> {
        let selected = serde_json::to_string(selected)?;
        let at = crate::core::request::now_ms();
        self.commit_one(
            sqlx::query(committed!(
                "INSERT INTO drafts (request_key, idx, user_id, selected_json, updated_at) \
                     VALUES (?, ?, ?, ?, ?) ON CONFLICT (request_key, idx, user_id) \
                     DO UPDATE SET selected_json = excluded.selected_json, \
                     updated_at = excluded.updated_at"
            ))
            .bind(key)
            .bind(idx as i64)
            .bind(user)
            .bind(&selected)
            .bind(at),
        )
        .await
        .map(drop)
    }

    async fn draft(&self, key: i64, idx: usize, user: &str) -> Result<Vec<usize>> {
        let json: Option<String> = sqlx::query_scalar(
            "SELECT selected_json FROM drafts WHERE request_key = ? AND idx = ? AND user_id = ?",
        )
        .bind(key)
        .bind(idx as i64)
        .bind(user)
        .fetch_optional(&self.pool)
        .await?;
        Ok(match json {
            Some(j) => serde_json::from_str(&j)?,
            None => Vec::new(),
        })
    }

    async fn schedule_due(&self, name: &str) -> Result<Option<i64>> {
        Ok(
            sqlx::query_scalar("SELECT due_at FROM schedules WHERE name = ?")
                .bind(name)
                .fetch_optional(&self.pool)
                .await?,
        )
    }

    async fn advance_schedule(&self, name: &str, from: Option<i64>, to: i64) -> Result<bool> {
        let moved = write_tx!(self, |tx| {
            let moved = match from {
                None => sqlx::query(
                    "INSERT INTO schedules (name, due_at) VALUES (?, ?) ON CONFLICT DO NOTHING",
                )
                .bind(name)
                .bind(to),
                Some(from) => {
                    sqlx::query("UPDATE schedules SET due_at = ? WHERE name = ? AND due_at = ?")
                        .bind(to)
                        .bind(name)
                        .bind(from)
                }
            }
            .execute(&mut *tx)
            .await?
            .rows_affected();
            anyhow::Ok(moved)
        })?;
        Ok(moved == 1)
    }

    async fn writable(&self) -> Result<()> {
        // Two checks, as neither is enough alone. A committed write that needs a page fails on
        // a full disk while the WAL has to grow; but once a checkpoint has reset the WAL, writes
        // reuse its space and the probe passes, so the free space is read too.
        if let Some(path) = &self.path {
            disk_room(path)?;
        }
        self.commit_one(
            sqlx::query(committed!(
                "INSERT INTO settings (name, value) VALUES ('health_probe', ?) \
                 ON CONFLICT (name) DO UPDATE SET value = excluded.value"
            ))
            .bind(crate::core::request::now_ms()),
        )
        .await
        .map(drop)
    }

    async fn prune(
        &self,
        ended_before_ms: Option<i64>,
        audit_before_ms: Option<i64>,
    ) -> Result<Pruned> {
        let mut pruned = Pruned::default();
        if let Some(before) = ended_before_ms {
            pruned.requests = write_tx!(self, |tx| {
                // Children first (foreign keys); the requests last, by the same condition.
                let ended = "SELECT key FROM requests WHERE status != 'pending' AND ended_at < ?";
                for table in ["drafts", "timers", "posts", "questions"] {
                    sqlx::query(&format!(
                        "DELETE FROM {table} WHERE request_key IN ({ended})"
                    ))
                    .bind(before)
                    .execute(&mut *tx)
                    .await?;
                }
                let gone =
                    sqlx::query("DELETE FROM requests WHERE status != 'pending' AND ended_at < ?")
                        .bind(before)
                        .execute(&mut *tx)
                        .await?
                        .rows_affected();
                anyhow::Ok(gone)
            })?;
        }
        if let Some(before) = audit_before_ms {
            // The one way past the audit log's DELETE trigger (migrations/0010_retention.sql):
            // the cutoff exists only inside this transaction.
            pruned.audit = write_tx!(self, |tx| {
                sqlx::query(
                    "INSERT INTO settings (name, value) VALUES ('audit_prune_before', ?) \
                     ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                )
                .bind(before)
                .execute(&mut *tx)
                .await?;
                let gone = sqlx::query("DELETE FROM audit WHERE at < ?")
                    .bind(before)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
                sqlx::query("DELETE FROM settings WHERE name = 'audit_prune_before'")
                    .execute(&mut *tx)
                    .await?;
                anyhow::Ok(gone)
            })?;
        }
        Ok(pruned)
    }

    async fn close(&self) {
        self.pool.close().await;
        self.lease.lock().unwrap().take();
    }
}

/// An audit entry as the JSON the triggers of migrations/0004 read.
fn audit_json(e: &AuditEntry, at: i64) -> String {
    serde_json::json!({
        "at": at,
        "question_idx": e.question_idx,
        "source": e.source.as_str(),
        "actor": e.actor,
        "action": e.action.as_str(),
        "detail": e.detail,
        "accepted": e.accepted,
    })
    .to_string()
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

async fn insert_audit(tx: &mut SqliteConnection, e: &AuditEntry, at: i64) -> Result<()> {
    sqlx::query(
        "INSERT INTO audit (at, request_key, question_idx, source, actor, action, detail, \
         accepted) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(at)
    .bind(e.request_key)
    .bind(e.question_idx.map(|i| i as i64))
    .bind(e.source.as_str())
    .bind(&e.actor)
    .bind(e.action.as_str())
    .bind(&e.detail)
    .bind(e.accepted)
    .execute(&mut *tx)
    .await?;
    Ok(())
}

/// The answer state of every question of the given requests, in question order.
async fn answers_of(
    pool: &SqlitePool,
    keys: &[i64],
) -> Result<HashMap<i64, Vec<Option<Answered>>>> {
    let mut out: HashMap<i64, Vec<Option<Answered>>> = HashMap::with_capacity(keys.len());
    if keys.is_empty() {
        return Ok(out);
    }
    let cols = "request_key, answered_at, answered_by, answered_via, answered_id, answered_note, \
                selected_json, custom";
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
        out.entry(key).or_default().push(q.into_answer()?);
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
