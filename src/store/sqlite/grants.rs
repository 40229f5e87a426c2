//! Grants in SQLite (migrations/0013_grants.sql).

use super::*;
use crate::domain::grant::Grant;
use crate::store::rows::{GrantRow, GRANT_COLUMNS};

/// Stores `g`, inside the transaction of the answer that granted it.
pub(super) async fn insert_grant(tx: &mut SqliteConnection, g: &Grant) -> Result<()> {
    sqlx::query(&format!(
        "INSERT INTO grants ({GRANT_COLUMNS}) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
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
    .execute(&mut *tx)
    .await?;
    Ok(())
}

impl SqliteStore {
    /// The live grants on `route` for `uid`.
    pub(super) async fn grants_for(
        &self,
        route: &str,
        uid: u32,
        now_ms: i64,
    ) -> Result<Vec<Grant>> {
        let rows: Vec<GrantRow> = sqlx::query_as(&format!(
            "SELECT {GRANT_COLUMNS} FROM grants \
             WHERE route = ? AND uid = ? AND revoked_at IS NULL AND ends_at > ? \
             ORDER BY created_at DESC"
        ))
        .bind(route)
        .bind(i64::from(uid))
        .bind(now_ms)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().map(GrantRow::into_grant).collect())
    }

    /// Every live grant, the newest first.
    pub(super) async fn grants_live(&self, now_ms: i64, limit: u32) -> Result<Vec<Grant>> {
        let rows: Vec<GrantRow> = sqlx::query_as(&format!(
            "SELECT {GRANT_COLUMNS} FROM grants WHERE revoked_at IS NULL AND ends_at > ? \
             ORDER BY created_at DESC LIMIT ?"
        ))
        .bind(now_ms)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().map(GrantRow::into_grant).collect())
    }

    pub(super) async fn grant_by_id(&self, id: &str) -> Result<Option<Grant>> {
        let row: Option<GrantRow> =
            sqlx::query_as(&format!("SELECT {GRANT_COLUMNS} FROM grants WHERE id = ?"))
                .bind(id)
                .fetch_optional(&self.pool)
                .await?;
        Ok(row.map(GrantRow::into_grant))
    }

    pub(super) async fn end_grant(
        &self,
        id: &str,
        by: &str,
        at_ms: i64,
        audit: &AuditEntry,
    ) -> Result<bool> {
        // One call, as every audited write: the update, the audit row (accepted or refused
        // as the update decided, both hashed beforehand after the tip) and the COMMIT.
        let turn = self.tip().await?;
        let (won, lost) = outcomes(&turn.tip.head, audit, at_ms);
        let query = sqlx::query(concat!(
            "BEGIN IMMEDIATE; ",
            "UPDATE grants SET revoked_at = ?, revoked_by = ? \
             WHERE id = ? AND revoked_at IS NULL AND ends_at > ? RETURNING 1; ",
            insert_audit_outcome!(),
            "; COMMIT"
        ))
        .bind(at_ms)
        .bind(by)
        .bind(id)
        .bind(at_ms);
        let revoked = !self
            .commit_one(bind_outcomes(query, &won, &lost))
            .await?
            .is_empty();
        let tip = turn.tip.after(if revoked { &won } else { &lost });
        turn.done(tip);
        Ok(revoked)
    }
}
