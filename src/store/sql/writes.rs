//! The steps of a write transaction that are the same on both backends: storing a grant,
//! moving a timer or a schedule, cutting the audit chain's prefix, and binding an outbox row's
//! key. A backend opens the transaction (and takes its locks or its fence) and commits it.

use super::rows::GRANT_COLUMNS;
use super::{Dialect, Driver};
use crate::domain::answer::Settlement;
use crate::domain::grant::Grant;
use crate::domain::request::{PostKey, Timer};
use anyhow::Result;
use sqlx::query::Query;
use sqlx::Database;

/// The steps, on a connection (a `SqliteConnection` or a `PgConnection`) inside its
/// transaction.
pub(in crate::store) struct Tx<'a, C>(pub(in crate::store) &'a mut C);

impl<C, DB> Tx<'_, C>
where
    C: sqlx::Connection<Database = DB>,
    DB: Driver,
    for<'c> &'c mut C: sqlx::Executor<'c, Database = DB>,
    for<'q> DB::Arguments<'q>: sqlx::IntoArguments<'q, DB>,
    for<'q> i64: sqlx::Encode<'q, DB> + sqlx::Decode<'q, DB> + sqlx::Type<DB>,
    for<'q> bool: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    for<'q> String: sqlx::Encode<'q, DB> + sqlx::Decode<'q, DB> + sqlx::Type<DB>,
    for<'q> &'q str: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    for<'q> Option<i64>: sqlx::Encode<'q, DB>,
    for<'q> Option<String>: sqlx::Encode<'q, DB>,
    usize: sqlx::ColumnIndex<DB::Row>,
{
    /// What was chosen on each question of request `key`, in question order: what the result
    /// of a request is built from when its last answer is settled.
    pub(in crate::store) async fn settlements(&mut self, key: i64) -> Result<Vec<Settlement>> {
        let rows: Vec<(Option<String>, Option<String>)> = sqlx::query_as(
            "SELECT selected_json, custom FROM questions WHERE request_key = $1 ORDER BY idx",
        )
        .bind(key)
        .fetch_all(&mut *self.0)
        .await?;
        let mut all = Vec::with_capacity(rows.len());
        for (selected, custom) in rows {
            all.push(Settlement {
                selected: serde_json::from_str(selected.as_deref().unwrap_or("[]"))?,
                custom,
                terms: None,
            });
        }
        Ok(all)
    }

    /// Marks request `key` answered at `at_ms` with `result`, if it is still pending.
    pub(in crate::store) async fn answer_request(
        &mut self,
        key: i64,
        result: &str,
        at_ms: i64,
    ) -> Result<()> {
        sqlx::query(
            "UPDATE requests SET status = 'answered', result_json = $1, ended_at = $2 \
             WHERE key = $3 AND status = 'pending'",
        )
        .bind(result)
        .bind(at_ms)
        .bind(key)
        .execute(&mut *self.0)
        .await?;
        Ok(())
    }

    /// Stores `g`, inside the transaction of the answer that granted it.
    pub(in crate::store) async fn insert_grant(&mut self, g: &Grant) -> Result<()> {
        sqlx::query(&format!(
            "INSERT INTO grants ({GRANT_COLUMNS}) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)"
        ))
        .bind(&g.id)
        .bind(&g.route)
        .bind(&g.tool)
        .bind(&g.pattern)
        .bind(g.exact)
        .bind(i64::from(g.uid))
        .bind(&g.host)
        .bind(&g.session)
        .bind(&g.label)
        .bind(&g.approver)
        .bind(&g.approver_via)
        .bind(&g.approver_id)
        .bind(g.request_key)
        .bind(g.created_at_ms)
        .bind(g.ends_at_ms)
        .bind(g.revoked_at_ms)
        .bind(&g.revoked_by)
        .execute(&mut *self.0)
        .await?;
        Ok(())
    }

    /// Moves the timer `to.name` of `answerer` on request `key` from its `from`th firing to
    /// `to` (`None`: creates it); how many rows moved (0: another writer moved it first).
    pub(in crate::store) async fn move_timer(
        &mut self,
        key: i64,
        answerer: &str,
        from: Option<u32>,
        to: &Timer,
    ) -> Result<u64> {
        let moved = match from {
            None => sqlx::query(
                "INSERT INTO timers (request_key, answerer, name, fired, due_at) \
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
            )
            .bind(key)
            .bind(answerer)
            .bind(&to.name)
            .bind(i64::from(to.fired))
            .bind(to.due_at_ms),
            Some(fired) => sqlx::query(
                "UPDATE timers SET fired = $1, due_at = $2 \
                 WHERE request_key = $3 AND answerer = $4 AND name = $5 AND fired = $6",
            )
            .bind(i64::from(to.fired))
            .bind(to.due_at_ms)
            .bind(key)
            .bind(answerer)
            .bind(&to.name)
            .bind(i64::from(fired)),
        }
        .execute(&mut *self.0)
        .await?;
        Ok(DB::rows_affected(&moved))
    }

    /// Moves the schedule `name` from `from` to `to` (`None`: creates it); how many rows moved.
    pub(in crate::store) async fn move_schedule(
        &mut self,
        name: &str,
        from: Option<i64>,
        to: i64,
    ) -> Result<u64> {
        let moved = match from {
            None => sqlx::query(
                "INSERT INTO schedules (name, due_at) VALUES ($1, $2) ON CONFLICT DO NOTHING",
            )
            .bind(name)
            .bind(to),
            Some(from) => {
                sqlx::query("UPDATE schedules SET due_at = $1 WHERE name = $2 AND due_at = $3")
                    .bind(to)
                    .bind(name)
                    .bind(from)
            }
        }
        .execute(&mut *self.0)
        .await?;
        Ok(DB::rows_affected(&moved))
    }

    /// Deletes the prefix of the audit chain written before `before`, through the one way past
    /// the audit log's DELETE trigger (SQLite: a row of `settings`, migrations/0010; PostgreSQL:
    /// a setting local to the transaction, migrations/postgres), and keeps a checkpoint of the
    /// last row's id and hash (migrations/0011); how many rows went.
    ///
    /// What goes is the rows before the first one written at or after the cutoff (a row's time
    /// is taken before its turn in the chain, so times may be out of order by a little). A row
    /// appended meanwhile has a larger id than any this transaction sees, so it is never in the
    /// prefix.
    pub(in crate::store) async fn prune_audit(&mut self, before: i64) -> Result<u64> {
        let last: Option<(i64, Option<String>)> = sqlx::query_as(
            "SELECT id, hash FROM audit WHERE id < COALESCE( \
                 (SELECT MIN(id) FROM audit WHERE at >= $1), \
                 (SELECT id + 1 FROM audit_head)) \
             ORDER BY id DESC LIMIT 1",
        )
        .bind(before)
        .fetch_optional(&mut *self.0)
        .await?;
        let Some((last, hash)) = last else {
            return Ok(0);
        };
        match DB::DIALECT {
            Dialect::Sqlite => sqlx::query(
                "INSERT INTO settings (name, value) VALUES ('audit_prune_before', $1) \
                 ON CONFLICT (name) DO UPDATE SET value = excluded.value",
            )
            .bind(before),
            Dialect::Postgres => {
                sqlx::query("SELECT set_config('askrelay.audit_prune_before', $1, true)")
                    .bind(before.to_string())
            }
        }
        .execute(&mut *self.0)
        .await?;
        let gone = sqlx::query("DELETE FROM audit WHERE id <= $1")
            .bind(last)
            .execute(&mut *self.0)
            .await?;
        if DB::DIALECT == Dialect::Sqlite {
            sqlx::query("DELETE FROM settings WHERE name = 'audit_prune_before'")
                .execute(&mut *self.0)
                .await?;
        }
        // A row from before the chain has no hash: the upgrade's checkpoint stays the start.
        if let Some(hash) = hash {
            sqlx::query(
                "INSERT INTO audit_checkpoints (after, hash, reason, at) \
                 VALUES ($1, $2, 'pruned', $3) ON CONFLICT (after) DO NOTHING",
            )
            .bind(last)
            .bind(hash)
            .bind(crate::domain::clock::now_ms())
            .execute(&mut *self.0)
            .await?;
        }
        Ok(DB::rows_affected(&gone))
    }
}

/// `query`, a statement on one outbox row (the statements of [`super`] that end in its key),
/// with the row's key bound after the values the statement bound before it.
pub(in crate::store) fn bind_post<'q, DB>(
    query: Query<'q, DB, DB::Arguments<'q>>,
    post: &PostKey<'q>,
) -> Query<'q, DB, DB::Arguments<'q>>
where
    DB: Database,
    i64: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    &'q str: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    String: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
{
    query
        .bind(post.key)
        .bind(post.idx as i64)
        .bind(post.answerer)
        .bind(post.slot.to_string())
}
