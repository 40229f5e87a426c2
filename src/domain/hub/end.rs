//! Ending a request without an answer: a cancel, an error outcome, and telling its waiting
//! clients and every answerer that shows it.

use super::{Hub, Phase};
use crate::domain::access::LocalUser;
use crate::domain::clock::now_ms;
use crate::domain::error::AskError;
use crate::domain::request::{
    AuditAction, AuditEntry, Outcome, Request, Source, Status, WithdrawReason,
};
use crate::domain::text::Escaped;

impl Hub {
    /// Cancels a pending request for a local user; its waiting clients get `ABORTED`. The
    /// owner or an operator may cancel.
    pub async fn cancel(
        &self,
        request_id: &str,
        reason: Option<String>,
        who: &LocalUser,
    ) -> Result<(), AskError> {
        let req = self.request_for(request_id, who).await?;
        if req.status != Status::Pending {
            return Err(AskError::invalid(format!(
                "request {:?} has already ended ({})",
                Escaped(request_id),
                req.status.as_str()
            )));
        }
        let reason = reason.unwrap_or_else(|| format!("cancelled by {}", who.describe()));
        if self.cancel_for(&req, &reason, who).await {
            Ok(())
        } else {
            Err(AskError::invalid(format!(
                "request {:?} has already ended",
                Escaped(request_id)
            )))
        }
    }

    /// Ends `req` as `cancelled` by a local user (the socket), audited with them as the actor;
    /// its waiting clients get `ABORTED` "the request was cancelled: REASON". False if it had
    /// already ended.
    pub(super) async fn cancel_for(&self, req: &Request, reason: &str, who: &LocalUser) -> bool {
        let err = AskError::aborted(format!("the request was cancelled: {reason}"));
        let audit = AuditEntry {
            source: Source::Socket,
            actor: Some(who.audit()),
            action: AuditAction::Cancelled,
            detail: Some(err.to_string()),
            ..AuditEntry::about(req)
        };
        self.end_with(req, Status::Cancelled, err, None, audit)
            .await
    }

    /// Ends a pending request with an error outcome on behalf of `source`; false if it had
    /// already ended.
    pub(super) async fn end_by(
        &self,
        req: &Request,
        status: Status,
        err: AskError,
        source: Source,
    ) -> bool {
        let audit = AuditEntry {
            source,
            actor: Some(match source {
                Source::Policy => crate::domain::audit::actor("policy", "expiry", None, None),
                other => crate::domain::audit::actor(other.as_str(), "askrelay", None, None),
            }),
            action: AuditAction::ended(status),
            detail: Some(err.to_string()),
            ..AuditEntry::about(req)
        };
        self.end_with(req, status, err, None, audit).await
    }

    /// Ends a pending request with an error outcome (`withdrawn`: why, for a withdrawal) and
    /// `audit`, then tells its waiting clients and every answerer that shows it; false if it
    /// had already ended.
    pub(super) async fn end_with(
        &self,
        req: &Request,
        status: Status,
        err: AskError,
        withdrawn: Option<WithdrawReason>,
        audit: AuditEntry,
    ) -> bool {
        let ended = match self
            .inner
            .store
            .end(req.key, status, &err, withdrawn, &audit)
            .await
        {
            Ok(ended) => ended,
            Err(e) => {
                tracing::error!(request_id = %Escaped(&req.request_id), error = %format!("{e:#}"), "cannot end the request");
                return false;
            }
        };
        if ended {
            self.inner.settings.recorder.failed(err.code);
            let outcome = Outcome::Error(err);
            self.publish_end(&req.request_id, outcome.clone());
            let mut ended_req = req.clone();
            ended_req.status = status;
            ended_req.ended_at_ms = Some(now_ms());
            ended_req.outcome = Some(outcome);
            ended_req.withdrawn = withdrawn;
            for a in self.answerers_for(&ended_req) {
                a.ended(&self.context(a.name()), &ended_req).await;
            }
        }
        ended
    }

    /// Publishes the final line to waiting clients and forgets the live entry.
    pub(super) fn publish_end(&self, request_id: &str, outcome: Outcome) {
        let entry = self.inner.live.lock().unwrap().remove(request_id);
        if let Some(entry) = entry {
            if let Some((at, key)) = entry.expires {
                self.inner.deadlines.remove(at, &key);
            }
            entry.phase.send_replace(Phase::Ended(outcome));
        }
    }
}
