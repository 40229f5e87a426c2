//! The reads that are the same on both backends: the audit chain, the outbox's due rows, the
//! timers and schedules, drafts and grants. Each runs on a connection the backend lends it: a
//! pooled one, which PostgreSQL's store holds within its deadline (`store/postgres/deadline.rs`).

use super::rows::{
    audit_page, ChainRow, GrantRow, OnceGrantRow, RequestRow, GRANT_COLUMNS, ONCE_GRANT_COLUMNS,
};
use super::select::{request_of, select, with_posts_of, With, CONTEXT, FULL};
use super::Driver;
use crate::domain::audit::{AuditPage, ChainStart, StartReason};
use crate::domain::grant::Grant;
use crate::domain::once_grant::OnceGrant;
use crate::domain::request::{AuditRow, Draft, DuePost, Post, Request, SettleOutcome, Timer};
use anyhow::{Context, Result};
use sqlx::{Database, Row};

/// What a read of one request is picked by: the value of its `$1`.
pub(in crate::store) enum Bind<'a> {
    Text(&'a str),
    Int(i64),
}

/// The shared reads, on a connection of the backend's read pool.
pub(in crate::store) struct Reads<'a, DB: Database>(pub(in crate::store) &'a mut DB::Connection);

impl<DB> Reads<'_, DB>
where
    DB: Driver,
    for<'c> &'c mut DB::Connection: sqlx::Executor<'c, Database = DB>,
    for<'q> DB::Arguments<'q>: sqlx::IntoArguments<'q, DB>,
    for<'q> i64: sqlx::Encode<'q, DB> + sqlx::Decode<'q, DB> + sqlx::Type<DB>,
    for<'q> bool: sqlx::Decode<'q, DB> + sqlx::Type<DB>,
    for<'q> String: sqlx::Decode<'q, DB> + sqlx::Type<DB>,
    for<'q> &'q str: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    for<'q> Option<i64>: sqlx::Encode<'q, DB>,
    for<'q> Option<&'q str>: sqlx::Encode<'q, DB>,
    usize: sqlx::ColumnIndex<DB::Row>,
    for<'r> ChainRow: sqlx::FromRow<'r, DB::Row>,
    for<'r> GrantRow: sqlx::FromRow<'r, DB::Row>,
    for<'r> OnceGrantRow: sqlx::FromRow<'r, DB::Row>,
    for<'r> RequestRow: sqlx::FromRow<'r, DB::Row>,
    for<'r> &'r str: sqlx::Decode<'r, DB>,
    &'static str: sqlx::ColumnIndex<DB::Row>,
{
    /// The one request `clause` (a condition on `$1`, which `bind` gives) picks, with its
    /// answers and its context.
    pub(in crate::store) async fn request(
        &mut self,
        clause: &str,
        bind: Bind<'_>,
    ) -> Result<Option<Request>> {
        self.one(CONTEXT, clause, bind)
            .await?
            .as_ref()
            .map(request_of)
            .transpose()
    }

    /// [`Reads::request`] with the request's outbox rows, in one query (each query is a round
    /// trip, and a click needs this one).
    pub(in crate::store) async fn with_posts(
        &mut self,
        clause: &str,
        bind: Bind<'_>,
    ) -> Result<Option<(Request, Vec<Post>)>> {
        self.one(FULL, clause, bind)
            .await?
            .as_ref()
            .map(with_posts_of)
            .transpose()
    }

    /// Why an answer to question `idx` of request `key` did not count, read after its
    /// transaction: it was answered already, the request ended, or there is no such question.
    pub(in crate::store) async fn why_lost(
        &mut self,
        key: i64,
        idx: usize,
    ) -> Result<SettleOutcome> {
        let Some(req) = self.request("key = $1", Bind::Int(key)).await? else {
            return Ok(SettleOutcome::Unknown);
        };
        Ok(match req.answers.get(idx) {
            None => SettleOutcome::Unknown,
            Some(Some(a)) => SettleOutcome::AlreadyAnswered(a.clone()),
            Some(None) => SettleOutcome::Ended(req.status),
        })
    }

    async fn one(&mut self, with: With, clause: &str, bind: Bind<'_>) -> Result<Option<DB::Row>> {
        let sql = select(DB::DIALECT, with, &format!("WHERE {clause}"));
        let q = sqlx::query(&sql);
        let q = match bind {
            Bind::Text(s) => q.bind(s),
            Bind::Int(i) => q.bind(i),
        };
        Ok(q.fetch_optional(&mut *self.0).await?)
    }

    /// `Store::audit_start`.
    pub(in crate::store) async fn audit_start(
        &mut self,
        since_ms: Option<i64>,
    ) -> Result<ChainStart> {
        let (after, hash, reason): (i64, String, String) = sqlx::query_as(
            "SELECT after, hash, reason FROM audit_checkpoints ORDER BY after DESC LIMIT 1",
        )
        .fetch_one(&mut *self.0)
        .await
        .context("the audit chain has no checkpoint")?;
        let checkpoint = ChainStart {
            after,
            hash,
            reason: reason.parse().map_err(anyhow::Error::msg)?,
        };
        let Some(since) = since_ms else {
            return Ok(checkpoint);
        };
        // The rows after the checkpoint are numbered without gaps (the chain gives the ids),
        // so the row before the first one wanted is `first - 1`.
        let first: Option<i64> =
            sqlx::query_scalar("SELECT MIN(id) FROM audit WHERE at >= $1 AND id > $2")
                .bind(since)
                .bind(checkpoint.after)
                .fetch_one(&mut *self.0)
                .await?;
        let before: (i64, String) = match first {
            Some(first) if first - 1 == checkpoint.after => return Ok(checkpoint),
            Some(first) => sqlx::query_as("SELECT id, hash FROM audit WHERE id = $1")
                .bind(first - 1)
                .fetch_one(&mut *self.0)
                .await
                .context("the audit chain has a gap")?,
            None => {
                sqlx::query_as("SELECT id, hash FROM audit_head")
                    .fetch_one(&mut *self.0)
                    .await?
            }
        };
        if before.0 == checkpoint.after {
            return Ok(checkpoint);
        }
        Ok(ChainStart {
            after: before.0,
            hash: before.1,
            reason: StartReason::Since,
        })
    }

    /// `Store::audit_chain`.
    pub(in crate::store) async fn audit_chain(
        &mut self,
        after: i64,
        limit: u32,
    ) -> Result<AuditPage> {
        // One statement, so one snapshot: the head is the one these rows lead to (a row
        // appended meanwhile is in neither).
        let rows: Vec<ChainRow> = sqlx::query_as(
            "WITH h AS (SELECT id, hash FROM audit_head), \
             r AS (SELECT id, at, request_key, question_idx, source, actor, action, detail, \
             accepted, prev_hash, hash, request_id FROM audit WHERE id > $1 AND hash IS NOT NULL \
             ORDER BY id LIMIT $2) \
             SELECT h.id AS head_id, h.hash AS head_hash, r.id, r.at, r.request_key, \
             r.question_idx, r.source, r.actor, r.action, r.detail, r.accepted, r.prev_hash, \
             r.hash, r.request_id \
             FROM h LEFT JOIN r ON 1 = 1 \
             ORDER BY r.id",
        )
        .bind(after)
        .bind(i64::from(limit))
        .fetch_all(&mut *self.0)
        .await?;
        audit_page(rows)
    }

    /// `Store::audit_rows`.
    pub(in crate::store) async fn audit_rows(
        &mut self,
        request_key: Option<i64>,
    ) -> Result<Vec<AuditRow>> {
        let rows = sqlx::query(
            "SELECT id, at, request_key, question_idx, source, actor, action, detail, accepted \
             FROM audit WHERE (CAST($1 AS BIGINT) IS NULL OR request_key = $1) ORDER BY id",
        )
        .bind(request_key)
        .fetch_all(&mut *self.0)
        .await?;
        rows.into_iter()
            .map(|r| {
                Ok(AuditRow {
                    id: r.try_get(0)?,
                    at_ms: r.try_get(1)?,
                    request_key: r.try_get(2)?,
                    question_idx: r.try_get(3)?,
                    source: r.try_get(4)?,
                    actor: r.try_get(5)?,
                    action: r.try_get(6)?,
                    detail: r.try_get(7)?,
                    accepted: r.try_get(8)?,
                })
            })
            .collect()
    }

    /// `Store::outbox_due`.
    pub(in crate::store) async fn outbox_due(
        &mut self,
        answerer: Option<&str>,
    ) -> Result<Vec<DuePost>> {
        let rows: Vec<(i64, i64, String, bool, Option<i64>)> = sqlx::query_as(
            "SELECT p.request_key, p.idx, p.answerer, p.message IS NULL AS unposted, \
             CASE WHEN p.message IS NULL THEN r.created_at \
                  WHEN q.answered_at IS NOT NULL THEN q.answered_at \
                  ELSE r.ended_at END AS due_since \
             FROM posts p \
             JOIN requests r ON r.key = p.request_key \
             JOIN questions q ON q.request_key = p.request_key AND q.idx = p.idx \
             WHERE p.edited IS NULL AND (CAST($1 AS TEXT) IS NULL OR p.answerer = $1) \
             AND ((p.message IS NULL AND (r.status = 'pending' \
                    OR (p.slot = '' AND q.answered_via = 'grant'))) \
               OR (p.message IS NOT NULL AND p.slot NOT LIKE 'note:%' \
                   AND (q.answered_at IS NOT NULL OR r.status <> 'pending')) \
               OR (p.message IS NOT NULL AND p.slot LIKE 'note:%' \
                   AND r.withdrawn IS NOT NULL)) \
             ORDER BY due_since NULLS FIRST",
        )
        .bind(answerer)
        .fetch_all(&mut *self.0)
        .await?;
        Ok(rows
            .into_iter()
            .map(
                |(request_key, idx, answerer, unposted, due_since)| DuePost {
                    request_key,
                    idx: idx as usize,
                    answerer,
                    unposted,
                    due_since_ms: due_since.unwrap_or(0),
                },
            )
            .collect())
    }

    /// `Store::timers`.
    pub(in crate::store) async fn timers(&mut self, answerer: &str) -> Result<Vec<Timer>> {
        let rows: Vec<(i64, String, i64, Option<i64>)> = sqlx::query_as(
            "SELECT t.request_key, t.name, t.fired, t.due_at FROM timers t \
             JOIN requests r ON r.key = t.request_key \
             WHERE t.answerer = $1 AND t.due_at IS NOT NULL AND r.status = 'pending'",
        )
        .bind(answerer)
        .fetch_all(&mut *self.0)
        .await?;
        Ok(rows
            .into_iter()
            .map(|(request_key, name, fired, due_at_ms)| Timer {
                request_key,
                name,
                fired: fired as u32,
                due_at_ms,
            })
            .collect())
    }

    /// `Store::session_thread`.
    pub(in crate::store) async fn session_thread(
        &mut self,
        at: &crate::domain::request::SessionPlace<'_>,
    ) -> Result<Option<String>> {
        Ok(sqlx::query_scalar(
            "SELECT thread FROM session_threads \
             WHERE answerer = $1 AND channel = $2 AND agent = $3 AND session = $4",
        )
        .bind(at.answerer)
        .bind(at.channel)
        .bind(at.agent)
        .bind(at.session)
        .fetch_optional(&mut *self.0)
        .await?)
    }

    /// `Store::draft`.
    pub(in crate::store) async fn draft(
        &mut self,
        key: i64,
        idx: usize,
        user: &str,
    ) -> Result<Option<Draft>> {
        let row: Option<(String, i64)> = sqlx::query_as(
            "SELECT selected_json, updated_at FROM drafts \
             WHERE request_key = $1 AND idx = $2 AND user_id = $3",
        )
        .bind(key)
        .bind(idx as i64)
        .bind(user)
        .fetch_optional(&mut *self.0)
        .await?;
        row.map(|(json, saved_at_ms)| {
            Ok(Draft {
                selected: serde_json::from_str(&json)?,
                saved_at_ms,
            })
        })
        .transpose()
    }

    /// `Store::schedule_due`.
    pub(in crate::store) async fn schedule_due(&mut self, name: &str) -> Result<Option<i64>> {
        Ok(
            sqlx::query_scalar("SELECT due_at FROM schedules WHERE name = $1")
                .bind(name)
                .fetch_optional(&mut *self.0)
                .await?,
        )
    }

    /// `Store::voted_pending`.
    pub(in crate::store) async fn voted_pending(&mut self) -> Result<Vec<i64>> {
        Ok(sqlx::query_scalar(super::VOTED_PENDING)
            .fetch_all(&mut *self.0)
            .await?)
    }

    /// `Store::live_grants`: the live grants on `route` for `uid`.
    pub(in crate::store) async fn grants_for(
        &mut self,
        route: &str,
        uid: u32,
        now_ms: i64,
    ) -> Result<Vec<Grant>> {
        let rows: Vec<GrantRow> = sqlx::query_as(&format!(
            "SELECT {GRANT_COLUMNS} FROM grants \
             WHERE route = $1 AND uid = $2 AND revoked_at IS NULL AND ends_at > $3 \
             ORDER BY created_at DESC"
        ))
        .bind(route)
        .bind(i64::from(uid))
        .bind(now_ms)
        .fetch_all(&mut *self.0)
        .await?;
        Ok(rows.into_iter().map(GrantRow::into_grant).collect())
    }

    /// `Store::grants`: every live grant, the newest first.
    pub(in crate::store) async fn grants_live(
        &mut self,
        now_ms: i64,
        limit: u32,
    ) -> Result<Vec<Grant>> {
        let rows: Vec<GrantRow> = sqlx::query_as(&format!(
            "SELECT {GRANT_COLUMNS} FROM grants WHERE revoked_at IS NULL AND ends_at > $1 \
             ORDER BY created_at DESC LIMIT $2"
        ))
        .bind(now_ms)
        .bind(i64::from(limit))
        .fetch_all(&mut *self.0)
        .await?;
        Ok(rows.into_iter().map(GrantRow::into_grant).collect())
    }

    /// `Store::grant`.
    pub(in crate::store) async fn grant_by_id(&mut self, id: &str) -> Result<Option<Grant>> {
        let row: Option<GrantRow> =
            sqlx::query_as(&format!("SELECT {GRANT_COLUMNS} FROM grants WHERE id = $1"))
                .bind(id)
                .fetch_optional(&mut *self.0)
                .await?;
        Ok(row.map(GrantRow::into_grant))
    }

    /// The oldest live, unused one-use grant of `uid` for `call` of `session`: the one
    /// `Store::use_once_grant` then marks used.
    pub(in crate::store) async fn once_grant_live(
        &mut self,
        uid: u32,
        session: &str,
        call: &str,
        now_ms: i64,
    ) -> Result<Option<OnceGrant>> {
        let row: Option<OnceGrantRow> = sqlx::query_as(&format!(
            "SELECT {ONCE_GRANT_COLUMNS} FROM once_grants \
             WHERE uid = $1 AND session = $2 AND call = $3 AND used_at IS NULL AND ends_at > $4 \
             ORDER BY created_at LIMIT 1"
        ))
        .bind(i64::from(uid))
        .bind(session)
        .bind(call)
        .bind(now_ms)
        .fetch_optional(&mut *self.0)
        .await?;
        Ok(row.map(OnceGrantRow::into_once_grant))
    }

    /// A one-use grant by the request it was minted from.
    pub(in crate::store) async fn once_grant_of(
        &mut self,
        request_key: i64,
    ) -> Result<Option<OnceGrant>> {
        let row: Option<OnceGrantRow> = sqlx::query_as(&format!(
            "SELECT {ONCE_GRANT_COLUMNS} FROM once_grants WHERE request_key = $1"
        ))
        .bind(request_key)
        .fetch_optional(&mut *self.0)
        .await?;
        Ok(row.map(OnceGrantRow::into_once_grant))
    }
}
