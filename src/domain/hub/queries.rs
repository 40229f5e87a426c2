//! Read-only queries for the supervision operations (`pending`, `history`), the health
//! check and the gauges, and the audit writes of refusals.

use super::Hub;
use crate::domain::access::LocalUser;
use crate::domain::audit::{AuditPage, ChainStart};
use crate::domain::clock::now_ms;
use crate::domain::error::{AskError, ErrorCode};
use crate::domain::request::{AuditAction, AuditEntry, Post, Request, Source};
use crate::domain::store::{Page, Visibility};
use crate::domain::text::Escaped;
use std::time::Duration;
use tokio::sync::watch;

pub(super) fn visibility(who: &LocalUser) -> Visibility {
    match (who.operator, who.peer.uid) {
        (true, _) => Visibility::All,
        (false, Some(uid)) => Visibility::Owner(uid),
        // No credentials: nothing is provably theirs.
        (false, None) => Visibility::Owner(u32::MAX),
    }
}

impl Hub {
    pub fn answerer_names(&self) -> Vec<&'static str> {
        self.inner.answerers.iter().map(|a| a.name()).collect()
    }

    /// The platform connections of the answerers that keep one (Discord's gateway): each
    /// answerer's name and whether it is connected now.
    pub fn connections(&self) -> Vec<(&'static str, watch::Receiver<bool>)> {
        self.inner
            .answerers
            .iter()
            .filter_map(|a| a.connection().map(|c| (a.name(), c)))
            .collect()
    }

    /// A request by id for a local user: `INVALID_REQUEST` when unknown, `FORBIDDEN` when it is
    /// not theirs to touch.
    pub async fn request_for(
        &self,
        request_id: &str,
        who: &LocalUser,
    ) -> Result<Request, AskError> {
        let req = self.request(request_id).await?;
        if !(who.operator || who.owns(&req) && self.owned_here(&req)) {
            return Err(self.foreign(request_id, who.peer).await);
        }
        Ok(req)
    }

    /// A request by id, or `INVALID_REQUEST` naming it.
    pub async fn request(&self, request_id: &str) -> Result<Request, AskError> {
        self.inner
            .store
            .by_id(request_id)
            .await
            .map_err(|e| AskError::internal(&e))?
            .ok_or_else(|| {
                AskError::invalid(format!("unknown request_id {:?}", Escaped(request_id)))
            })
    }

    /// One page of the pending requests a local user may see, with where they are shown.
    pub async fn pending(
        &self,
        who: &LocalUser,
        page: Page,
    ) -> Result<Vec<(Request, Vec<Post>)>, AskError> {
        let reqs = self
            .inner
            .store
            .pending(visibility(who), page)
            .await
            .map_err(|e| AskError::internal(&e))?;
        self.with_posts(reqs).await
    }

    /// One page of the requests (of any status) a local user may see, newest first.
    pub async fn history(
        &self,
        who: &LocalUser,
        page: Page,
    ) -> Result<Vec<(Request, Vec<Post>)>, AskError> {
        let reqs = self
            .inner
            .store
            .history(visibility(who), page)
            .await
            .map_err(|e| AskError::internal(&e))?;
        self.with_posts(reqs).await
    }

    /// Where a request is shown (its outbox rows).
    pub async fn posts_of(&self, req: &Request) -> Result<Vec<Post>, AskError> {
        let mut all = self
            .inner
            .store
            .posts(&[req.key])
            .await
            .map_err(|e| AskError::internal(&e))?;
        Ok(all.remove(&req.key).unwrap_or_default())
    }

    pub(super) async fn with_posts(
        &self,
        reqs: Vec<Request>,
    ) -> Result<Vec<(Request, Vec<Post>)>, AskError> {
        self.inner
            .store
            .with_posts(reqs)
            .await
            .map_err(|e| AskError::internal(&e))
    }

    /// How long each piece of outbox work (a post or an edit not yet made) has been due, in ms.
    async fn outbox_ages(&self) -> Result<Vec<i64>, AskError> {
        let due = self
            .inner
            .store
            .outbox_due(None)
            .await
            .map_err(|e| AskError::internal(&e))?;
        let now = now_ms();
        Ok(due.iter().map(|d| (now - d.due_since_ms).max(0)).collect())
    }

    /// Outbox work due for more than `overdue_after`: how many items, and how long the oldest
    /// has been due.
    pub async fn outbox_overdue(&self) -> Result<(usize, Duration), AskError> {
        let after = self.inner.settings.overdue_after.as_millis() as i64;
        let late: Vec<i64> = self
            .outbox_ages()
            .await?
            .into_iter()
            .filter(|age| *age > after)
            .collect();
        let oldest = late.iter().copied().max().unwrap_or(0) as u64;
        Ok((late.len(), Duration::from_millis(oldest)))
    }

    /// How long the oldest outbox work has been due; zero when none is (`/metrics`).
    pub async fn outbox_oldest_due(&self) -> Result<Duration, AskError> {
        let oldest = self.outbox_ages().await?.into_iter().max().unwrap_or(0);
        Ok(Duration::from_millis(oldest as u64))
    }

    /// Whether the store takes a write now (the health check).
    pub async fn store_writable(&self) -> Result<(), String> {
        self.inner
            .store
            .writable()
            .await
            .map_err(|e| format!("{e:#}"))
    }

    /// A page of the audit chain for `audit_export`: where it starts on the first page (no
    /// `after`), then up to `limit` rows. Operators only: the rows name people and what they
    /// answered.
    pub async fn audit_export(
        &self,
        who: &LocalUser,
        since_ms: Option<i64>,
        after: Option<i64>,
        limit: u32,
    ) -> Result<(Option<ChainStart>, AuditPage), AskError> {
        if !who.operator {
            self.audit(AuditEntry {
                source: Source::Socket,
                actor: Some(who.describe()),
                action: AuditAction::Forbidden,
                detail: Some("audit_export refused: not an operator".into()),
                accepted: false,
                ..Default::default()
            })
            .await;
            return Err(AskError::new(
                ErrorCode::Forbidden,
                "the audit log is for operators (operator_uids, root, or the daemon's own uid)",
            ));
        }
        let store = &self.inner.store;
        let (start, after) = match after {
            Some(after) => (None, after),
            None => {
                let start = store
                    .audit_start(since_ms)
                    .await
                    .map_err(|e| AskError::internal(&e))?;
                let after = start.after;
                (Some(start), after)
            }
        };
        let page = store
            .audit_chain(after, limit)
            .await
            .map_err(|e| AskError::internal(&e))?;
        Ok((start, page))
    }

    /// Writes an audit row; a failure is logged, never swallowed silently.
    pub async fn audit(&self, entry: AuditEntry) {
        if let Err(e) = self.inner.store.audit(&entry).await {
            tracing::error!(error = %format!("{e:#}"), action = entry.action.as_str(), "cannot write the audit log");
        }
    }
}
