//! The only module that touches SQL.
//!
//! SQLite in WAL mode with foreign keys on; migrations from `migrations/` are embedded and run at
//! start-up. Every state change is one statement or one transaction, and first-wins is a single
//! conditional `UPDATE … WHERE answered_at IS NULL`, so two answerers racing on a question can
//! never both win, whichever process or task they run in.

use crate::core::answer::{AskResult, QuestionAnswer, Settlement};
use crate::core::error::{AskError, ErrorCode};
use crate::core::model::{Caller, Question, Scope};
use anyhow::{Context, Result};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Row, SqlitePool};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch, the unit of every timestamp in the database.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// The lifecycle of a request. Only `Pending` may change, and only once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Pending,
    Answered,
    Cancelled,
    Expired,
    /// Ended with an error before anyone could answer (e.g. `NO_ANSWERER`).
    Failed,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Answered => "answered",
            Status::Cancelled => "cancelled",
            Status::Expired => "expired",
            Status::Failed => "failed",
        }
    }

    fn parse(s: &str) -> Result<Status> {
        Ok(match s {
            "pending" => Status::Pending,
            "answered" => Status::Answered,
            "cancelled" => Status::Cancelled,
            "expired" => Status::Expired,
            "failed" => Status::Failed,
            other => anyhow::bail!("unknown request status {other:?} in the database"),
        })
    }
}

/// How a request ended: the exact final line's content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The §1 result JSON, stored once so that every re-attach gets the same bytes.
    Answered(String),
    Error(AskError),
}

/// A request to store.
#[derive(Debug, Clone)]
pub struct NewRequest {
    pub request_id: String,
    pub questions: Vec<Question>,
    pub caller: Caller,
    pub scope: Scope,
    pub peer_uid: Option<u32>,
    pub peer_pid: Option<i32>,
}

/// Who settled a question, through which answerer, and when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnsweredBy {
    pub by: String,
    pub via: String,
    pub at_ms: i64,
    pub settlement: Settlement,
}

/// A request as stored, with the state of each question.
#[derive(Debug, Clone)]
pub struct StoredRequest {
    pub key: i64,
    pub request_id: String,
    pub questions: Vec<Question>,
    pub caller: Caller,
    pub scope: Scope,
    pub status: Status,
    pub answerer: Option<String>,
    pub accepted: Option<serde_json::Map<String, serde_json::Value>>,
    pub peer_uid: Option<u32>,
    pub peer_pid: Option<i32>,
    pub created_at_ms: i64,
    pub ended_at_ms: Option<i64>,
    pub outcome: Option<Outcome>,
    /// One entry per question, in order; `None` while unanswered.
    pub answers: Vec<Option<AnsweredBy>>,
}

/// The result of trying to store a request under its id.
#[derive(Debug)]
pub enum Inserted {
    New(StoredRequest),
    Existing(StoredRequest),
}

/// The result of one attempt to settle a question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SettleOutcome {
    /// This settlement counted. `result` is set when it completed the request.
    Won { result: Option<String> },
    /// Someone else settled the question first.
    AlreadyAnswered(AnsweredBy),
    /// The request is no longer pending.
    Ended(Status),
    /// No such request or question.
    Unknown,
}

/// One row of the audit log.
#[derive(Debug, Clone, Default)]
pub struct AuditEntry {
    pub request_key: Option<i64>,
    pub question_idx: Option<i64>,
    pub source: &'static str,
    pub actor: Option<String>,
    pub action: &'static str,
    pub detail: Option<String>,
    pub accepted: bool,
}

/// A stored audit row, for `history --audit` and tests.
#[derive(Debug, Clone)]
pub struct AuditRow {
    pub id: i64,
    pub at_ms: i64,
    pub request_key: Option<i64>,
    pub question_idx: Option<i64>,
    pub source: String,
    pub actor: Option<String>,
    pub action: String,
    pub detail: Option<String>,
    pub accepted: bool,
}

/// Where one question is (to be) shown by an answerer: its outbox row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Post {
    pub idx: usize,
    pub channel: String,
    pub nonce: String,
    pub message: Option<String>,
    pub attempts: i64,
    pub last_error: Option<String>,
    pub edited: Option<String>,
}

fn post_from_row(r: sqlx::sqlite::SqliteRow) -> Post {
    Post {
        idx: r.get::<i64, _>(0) as usize,
        channel: r.get(1),
        nonce: r.get(2),
        message: r.get(3),
        attempts: r.get(4),
        last_error: r.get(5),
        edited: r.get(6),
    }
}

/// A cloneable handle to the database.
#[derive(Debug, Clone)]
pub struct Store {
    pool: SqlitePool,
}

const REQUEST_COLUMNS: &str = "key, request_id, questions_json, caller_json, scope_json, status, \
     answerer, accepted_json, peer_uid, peer_pid, created_at, ended_at, result_json, error_code, \
     error_message";

impl Store {
    /// Opens (creating if missing) the database at `url` and applies the migrations.
    pub async fn open(url: &str) -> Result<Store> {
        if let Some(path) = sqlite_file_path(url) {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir).with_context(|| {
                    format!("cannot create the database directory {}", dir.display())
                })?;
            }
        }
        let options = SqliteConnectOptions::from_str(url)
            .with_context(|| format!("database_url {url:?} is not a valid SQLite URL"))?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .foreign_keys(true)
            .busy_timeout(Duration::from_secs(10));
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(options)
            .await
            .with_context(|| format!("cannot open the database {url}"))?;
        sqlx::migrate!("./migrations")
            .run(&pool)
            .await
            .context("cannot apply the database migrations")?;
        Ok(Store { pool })
    }

    pub async fn close(&self) {
        self.pool.close().await;
    }

    /// Stores a new request with its questions, or returns the one already stored under the id.
    pub async fn insert_request(&self, new: &NewRequest) -> Result<Inserted> {
        let questions_json = serde_json::to_string(&new.questions)?;
        let created_at = now_ms();
        let mut tx = self.pool.begin().await?;
        let inserted = sqlx::query(
            "INSERT INTO requests (request_id, questions_json, caller_json, scope_json, peer_uid, \
             peer_pid, created_at) VALUES (?, ?, ?, ?, ?, ?, ?) \
             ON CONFLICT (request_id) DO NOTHING RETURNING key",
        )
        .bind(&new.request_id)
        .bind(&questions_json)
        .bind(serde_json::to_string(&new.caller)?)
        .bind(serde_json::to_string(&new.scope)?)
        .bind(new.peer_uid.map(i64::from))
        .bind(new.peer_pid)
        .bind(created_at)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(row) = inserted else {
            tx.rollback().await?;
            let existing = self
                .request_by_id(&new.request_id)
                .await?
                .context("a conflicting request vanished")?;
            return Ok(Inserted::Existing(existing));
        };
        let key: i64 = row.get(0);
        for (i, q) in new.questions.iter().enumerate() {
            sqlx::query("INSERT INTO questions (request_key, idx, qid) VALUES (?, ?, ?)")
                .bind(key)
                .bind(i as i64)
                .bind(&q.id)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        // Built from what was just written, without reading it back (the ask path's latency).
        Ok(Inserted::New(StoredRequest {
            key,
            request_id: new.request_id.clone(),
            questions: new.questions.clone(),
            caller: new.caller.clone(),
            scope: new.scope.clone(),
            status: Status::Pending,
            answerer: None,
            accepted: None,
            peer_uid: new.peer_uid,
            peer_pid: new.peer_pid,
            created_at_ms: created_at,
            ended_at_ms: None,
            outcome: None,
            answers: vec![None; new.questions.len()],
        }))
    }

    /// Records which answerer took a pending request and what it reported.
    pub async fn set_accepted(
        &self,
        key: i64,
        answerer: &str,
        detail: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<()> {
        sqlx::query("UPDATE requests SET answerer = ?, accepted_json = ? WHERE key = ?")
            .bind(answerer)
            .bind(serde_json::to_string(detail)?)
            .bind(key)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    pub async fn request_by_id(&self, request_id: &str) -> Result<Option<StoredRequest>> {
        let row = sqlx::query(&format!(
            "SELECT {REQUEST_COLUMNS} FROM requests WHERE request_id = ?"
        ))
        .bind(request_id)
        .fetch_optional(&self.pool)
        .await?;
        match row {
            Some(row) => Ok(Some(self.hydrate(row).await?)),
            None => Ok(None),
        }
    }

    pub async fn request_by_key(&self, key: i64) -> Result<Option<StoredRequest>> {
        let row = sqlx::query(&format!(
            "SELECT {REQUEST_COLUMNS} FROM requests WHERE key = ?"
        ))
        .bind(key)
        .fetch_optional(&self.pool)
        .await?;
        match row {
            Some(row) => Ok(Some(self.hydrate(row).await?)),
            None => Ok(None),
        }
    }

    /// Every pending request, oldest first.
    pub async fn pending_requests(&self) -> Result<Vec<StoredRequest>> {
        let rows = sqlx::query(&format!(
            "SELECT {REQUEST_COLUMNS} FROM requests WHERE status = 'pending' ORDER BY key"
        ))
        .fetch_all(&self.pool)
        .await?;
        self.hydrate_all(rows).await
    }

    /// The newest `limit` requests, newest first.
    pub async fn history(&self, limit: u32) -> Result<Vec<StoredRequest>> {
        let rows = sqlx::query(&format!(
            "SELECT {REQUEST_COLUMNS} FROM requests ORDER BY key DESC LIMIT ?"
        ))
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        self.hydrate_all(rows).await
    }

    /// Settles one question if it is still open and its request still pending; the single
    /// conditional write that decides first-wins. When it completes the request, the request is
    /// marked answered with its §1 result in the same transaction.
    pub async fn settle(
        &self,
        key: i64,
        idx: usize,
        settlement: &Settlement,
        by: &str,
        via: &str,
    ) -> Result<SettleOutcome> {
        let now = now_ms();
        let mut tx = self.pool.begin().await?;
        let won = sqlx::query(
            "UPDATE questions SET answered_at = ?, answered_by = ?, answered_via = ?, \
             selected_json = ?, custom = ? \
             WHERE request_key = ? AND idx = ? AND answered_at IS NULL \
             AND (SELECT status FROM requests WHERE key = ?) = 'pending'",
        )
        .bind(now)
        .bind(by)
        .bind(via)
        .bind(serde_json::to_string(&settlement.selected)?)
        .bind(&settlement.custom)
        .bind(key)
        .bind(idx as i64)
        .bind(key)
        .execute(&mut *tx)
        .await?
        .rows_affected()
            == 1;
        if !won {
            tx.rollback().await?;
            return self.why_not_settled(key, idx).await;
        }
        let open: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM questions WHERE request_key = ? AND answered_at IS NULL",
        )
        .bind(key)
        .fetch_one(&mut *tx)
        .await?;
        let mut result = None;
        if open == 0 {
            let questions_json: String =
                sqlx::query_scalar("SELECT questions_json FROM requests WHERE key = ?")
                    .bind(key)
                    .fetch_one(&mut *tx)
                    .await?;
            let questions: Vec<Question> = serde_json::from_str(&questions_json)?;
            let rows = sqlx::query(
                "SELECT selected_json, custom FROM questions WHERE request_key = ? ORDER BY idx",
            )
            .bind(key)
            .fetch_all(&mut *tx)
            .await?;
            let mut answers = Vec::with_capacity(rows.len());
            for (q, row) in questions.iter().zip(rows) {
                let s = Settlement {
                    selected: serde_json::from_str(row.get::<&str, _>(0))?,
                    custom: row.get(1),
                };
                answers.push(QuestionAnswer::build(q, &s));
            }
            let json = AskResult { answers }.to_json();
            sqlx::query(
                "UPDATE requests SET status = 'answered', result_json = ?, ended_at = ? \
                 WHERE key = ? AND status = 'pending'",
            )
            .bind(&json)
            .bind(now)
            .bind(key)
            .execute(&mut *tx)
            .await?;
            result = Some(json);
        }
        tx.commit().await?;
        Ok(SettleOutcome::Won { result })
    }

    async fn why_not_settled(&self, key: i64, idx: usize) -> Result<SettleOutcome> {
        let Some(req) = self.request_by_key(key).await? else {
            return Ok(SettleOutcome::Unknown);
        };
        match req.answers.get(idx) {
            None => Ok(SettleOutcome::Unknown),
            Some(Some(a)) => Ok(SettleOutcome::AlreadyAnswered(a.clone())),
            Some(None) => Ok(SettleOutcome::Ended(req.status)),
        }
    }

    /// Ends a pending request with an error outcome. Returns false if it had already ended.
    pub async fn end_request(&self, key: i64, status: Status, error: &AskError) -> Result<bool> {
        let done = sqlx::query(
            "UPDATE requests SET status = ?, error_code = ?, error_message = ?, ended_at = ? \
             WHERE key = ? AND status = 'pending'",
        )
        .bind(status.as_str())
        .bind(error.code.as_str())
        .bind(&error.message)
        .bind(now_ms())
        .bind(key)
        .execute(&self.pool)
        .await?
        .rows_affected()
            == 1;
        Ok(done)
    }

    /// Puts a question in the outbox (before any platform call). Idempotent.
    pub async fn plan_post(
        &self,
        key: i64,
        idx: usize,
        answerer: &str,
        channel: &str,
        nonce: &str,
    ) -> Result<()> {
        sqlx::query(
            "INSERT INTO posts (request_key, idx, answerer, channel, nonce) VALUES (?, ?, ?, ?, ?) \
             ON CONFLICT (request_key, idx, answerer) DO NOTHING",
        )
        .bind(key)
        .bind(idx as i64)
        .bind(answerer)
        .bind(channel)
        .bind(nonce)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Records that question `idx` is posted as `message`.
    pub async fn record_post(
        &self,
        key: i64,
        idx: usize,
        answerer: &str,
        message: &str,
    ) -> Result<()> {
        sqlx::query(
            "UPDATE posts SET message = ?, posted_at = ?, attempts = attempts + 1, \
             last_error = NULL WHERE request_key = ? AND idx = ? AND answerer = ?",
        )
        .bind(message)
        .bind(now_ms())
        .bind(key)
        .bind(idx as i64)
        .bind(answerer)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Records a failed attempt to post question `idx`, and why.
    pub async fn record_post_failure(
        &self,
        key: i64,
        idx: usize,
        answerer: &str,
        error: &str,
    ) -> Result<()> {
        sqlx::query(
            "UPDATE posts SET attempts = attempts + 1, last_error = ? \
             WHERE request_key = ? AND idx = ? AND answerer = ?",
        )
        .bind(error)
        .bind(key)
        .bind(idx as i64)
        .bind(answerer)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Records the last edit the platform confirmed for question `idx` ("settled" or "ended").
    pub async fn record_edit(
        &self,
        key: i64,
        idx: usize,
        answerer: &str,
        edit: &str,
    ) -> Result<()> {
        sqlx::query(
            "UPDATE posts SET edited = ? WHERE request_key = ? AND idx = ? AND answerer = ?",
        )
        .bind(edit)
        .bind(key)
        .bind(idx as i64)
        .bind(answerer)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// The posts of a request by one answerer, in question order.
    pub async fn posts(&self, key: i64, answerer: &str) -> Result<Vec<Post>> {
        self.posts_where(key, Some(answerer)).await
    }

    /// Every post of any answerer, for the supervision views.
    pub async fn all_posts(&self, key: i64) -> Result<Vec<Post>> {
        self.posts_where(key, None).await
    }

    async fn posts_where(&self, key: i64, answerer: Option<&str>) -> Result<Vec<Post>> {
        let rows = sqlx::query(
            "SELECT idx, channel, nonce, message, attempts, last_error, edited FROM posts \
             WHERE request_key = ?1 AND (?2 IS NULL OR answerer = ?2) ORDER BY idx",
        )
        .bind(key)
        .bind(answerer)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().map(post_from_row).collect())
    }

    /// Keys of ended requests with a posted message whose final edit was never confirmed
    /// (a crash between the end and the edit).
    pub async fn ended_with_stale_posts(&self, answerer: &str) -> Result<Vec<i64>> {
        let keys = sqlx::query_scalar(
            "SELECT DISTINCT p.request_key FROM posts p JOIN requests r ON r.key = p.request_key \
             JOIN questions q ON q.request_key = p.request_key AND q.idx = p.idx \
             WHERE p.answerer = ? AND p.message IS NOT NULL AND r.status != 'pending' \
             AND ((q.answered_at IS NOT NULL AND p.edited IS NULL) \
                  OR (q.answered_at IS NULL AND (p.edited IS NULL OR p.edited != 'ended')))",
        )
        .bind(answerer)
        .fetch_all(&self.pool)
        .await?;
        Ok(keys)
    }

    /// Records a person's multi-select draft for a question.
    pub async fn save_draft(
        &self,
        key: i64,
        idx: usize,
        user_id: &str,
        selected: &[usize],
    ) -> Result<()> {
        sqlx::query(
            "INSERT INTO drafts (request_key, idx, user_id, selected_json, updated_at) \
             VALUES (?, ?, ?, ?, ?) ON CONFLICT (request_key, idx, user_id) \
             DO UPDATE SET selected_json = excluded.selected_json, updated_at = excluded.updated_at",
        )
        .bind(key)
        .bind(idx as i64)
        .bind(user_id)
        .bind(serde_json::to_string(selected)?)
        .bind(now_ms())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// A person's draft for a question; empty when they have not picked anything.
    pub async fn draft(&self, key: i64, idx: usize, user_id: &str) -> Result<Vec<usize>> {
        let json: Option<String> = sqlx::query_scalar(
            "SELECT selected_json FROM drafts WHERE request_key = ? AND idx = ? AND user_id = ?",
        )
        .bind(key)
        .bind(idx as i64)
        .bind(user_id)
        .fetch_optional(&self.pool)
        .await?;
        Ok(match json {
            Some(j) => serde_json::from_str(&j)?,
            None => Vec::new(),
        })
    }

    /// Appends one row to the audit log.
    pub async fn audit(&self, e: &AuditEntry) -> Result<()> {
        sqlx::query(
            "INSERT INTO audit (at, request_key, question_idx, source, actor, action, detail, \
             accepted) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(now_ms())
        .bind(e.request_key)
        .bind(e.question_idx)
        .bind(e.source)
        .bind(&e.actor)
        .bind(e.action)
        .bind(&e.detail)
        .bind(e.accepted)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Audit rows, oldest first; all of them, or those of one request.
    pub async fn audit_rows(&self, request_key: Option<i64>) -> Result<Vec<AuditRow>> {
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

    /// Builds requests from their rows, reading the questions of all of them in one query
    /// (start-up with thousands of pending requests depends on this).
    async fn hydrate_all(&self, rows: Vec<sqlx::sqlite::SqliteRow>) -> Result<Vec<StoredRequest>> {
        let keys: Vec<i64> = rows.iter().map(|r| r.get("key")).collect();
        let mut answers = self.answers_of(&keys).await?;
        rows.into_iter()
            .map(|row| {
                let key: i64 = row.get("key");
                request_from_row(row, answers.remove(&key).unwrap_or_default())
            })
            .collect()
    }

    async fn hydrate(&self, row: sqlx::sqlite::SqliteRow) -> Result<StoredRequest> {
        let key: i64 = row.get("key");
        let answers = self
            .answers_of(&[key])
            .await?
            .remove(&key)
            .unwrap_or_default();
        request_from_row(row, answers)
    }

    /// The answer state of every question of the given requests, in question order.
    async fn answers_of(
        &self,
        keys: &[i64],
    ) -> Result<std::collections::HashMap<i64, Vec<Option<AnsweredBy>>>> {
        let mut out: std::collections::HashMap<i64, Vec<Option<AnsweredBy>>> =
            std::collections::HashMap::with_capacity(keys.len());
        if keys.is_empty() {
            return Ok(out);
        }
        let qrows = sqlx::query(
            "SELECT request_key, answered_at, answered_by, answered_via, selected_json, custom \
             FROM questions WHERE request_key IN (SELECT value FROM json_each(?)) \
             ORDER BY request_key, idx",
        )
        .bind(serde_json::to_string(keys)?)
        .fetch_all(&self.pool)
        .await?;
        for q in qrows {
            let key: i64 = q.get(0);
            let at: Option<i64> = q.get(1);
            let answer = match at {
                None => None,
                Some(at_ms) => Some(AnsweredBy {
                    by: q.get::<Option<String>, _>(2).unwrap_or_default(),
                    via: q.get::<Option<String>, _>(3).unwrap_or_default(),
                    at_ms,
                    settlement: Settlement {
                        selected: serde_json::from_str(
                            q.get::<Option<&str>, _>(4).unwrap_or("[]"),
                        )?,
                        custom: q.get(5),
                    },
                }),
            };
            out.entry(key).or_default().push(answer);
        }
        Ok(out)
    }
}

fn request_from_row(
    row: sqlx::sqlite::SqliteRow,
    answers: Vec<Option<AnsweredBy>>,
) -> Result<StoredRequest> {
    let status = Status::parse(row.get("status"))?;
    let outcome = match status {
        Status::Pending => None,
        Status::Answered => Some(Outcome::Answered(row.get("result_json"))),
        _ => {
            let code: Option<String> = row.get("error_code");
            let code = code
                .as_deref()
                .and_then(ErrorCode::parse)
                .unwrap_or(ErrorCode::Internal);
            let message: Option<String> = row.get("error_message");
            Some(Outcome::Error(AskError::new(
                code,
                message.unwrap_or_default(),
            )))
        }
    };
    let accepted: Option<String> = row.get("accepted_json");
    let peer_uid: Option<i64> = row.get("peer_uid");
    Ok(StoredRequest {
        key: row.get("key"),
        request_id: row.get("request_id"),
        questions: serde_json::from_str(row.get("questions_json"))?,
        caller: serde_json::from_str(row.get("caller_json"))?,
        scope: serde_json::from_str(row.get("scope_json"))?,
        status,
        answerer: row.get("answerer"),
        accepted: accepted.map(|a| serde_json::from_str(&a)).transpose()?,
        peer_uid: peer_uid.and_then(|u| u32::try_from(u).ok()),
        peer_pid: row.get("peer_pid"),
        created_at_ms: row.get("created_at"),
        ended_at_ms: row.get("ended_at"),
        outcome,
        answers,
    })
}

/// The file behind a `sqlite://` URL, so that its directory can be created first.
fn sqlite_file_path(url: &str) -> Option<PathBuf> {
    let rest = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))?;
    let path = rest.split('?').next().unwrap_or(rest);
    if path.is_empty() || path == ":memory:" {
        return None;
    }
    Some(Path::new(path).to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::model::QuestionOption;

    fn new_request(id: &str) -> NewRequest {
        NewRequest {
            request_id: id.into(),
            questions: vec![Question {
                id: "q".into(),
                question: "Go?".into(),
                header: None,
                options: vec![
                    QuestionOption {
                        label: "Yes".into(),
                        description: None,
                    },
                    QuestionOption {
                        label: "No".into(),
                        description: None,
                    },
                ],
                multi_select: false,
            }],
            caller: Caller::default(),
            scope: Scope::new(),
            peer_uid: Some(1000),
            peer_pid: Some(42),
        }
    }

    #[tokio::test]
    async fn first_settlement_wins_and_completes_the_request() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("a/b.db").display());
        let store = Store::open(&url).await.unwrap();
        let Inserted::New(req) = store.insert_request(&new_request("r1")).await.unwrap() else {
            panic!("expected a new request")
        };
        assert_eq!(req.peer_uid, Some(1000));
        let won = store
            .settle(req.key, 0, &Settlement::choice(1), "alice", "terminal")
            .await
            .unwrap();
        assert_eq!(
            won,
            SettleOutcome::Won {
                result: Some(r#"{"answers":[{"id":"q","selected":["No"]}]}"#.into())
            }
        );
        let lost = store
            .settle(req.key, 0, &Settlement::choice(0), "bob", "terminal")
            .await
            .unwrap();
        assert!(matches!(lost, SettleOutcome::AlreadyAnswered(a) if a.by == "alice"));
        assert!(matches!(
            store.insert_request(&new_request("r1")).await.unwrap(),
            Inserted::Existing(r) if r.status == Status::Answered
        ));
    }

    #[tokio::test]
    async fn the_audit_log_is_append_only() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("x.db").display());
        let store = Store::open(&url).await.unwrap();
        store
            .audit(&AuditEntry {
                source: "socket",
                action: "ask",
                accepted: true,
                ..Default::default()
            })
            .await
            .unwrap();
        let err = sqlx::query("DELETE FROM audit")
            .execute(&store.pool)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("append-only"), "{err}");
        assert_eq!(store.audit_rows(None).await.unwrap().len(), 1);
    }
}
