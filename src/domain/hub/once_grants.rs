//! One-use grants (docs/approvals.md, "Auto mode"): minted from a request a person allowed
//! once, used by the retried call. Only the uid that asked may mint or use one, even an
//! operator: the grant speaks for that agent's own call.

use super::{storage_error, Hub};
use crate::domain::access::LocalUser;
use crate::domain::approval::ALLOW_ONCE;
use crate::domain::clock::now_ms;
use crate::domain::error::{AskError, ErrorCode};
use crate::domain::once_grant::{self, OnceGrant, LIFE_MS};
use crate::domain::request::{AuditAction, AuditEntry, Source, Status};
use crate::domain::text::Escaped;

impl Hub {
    /// Mints the one-use grant of request `request_id`: the caller asked it, it was answered
    /// "Allow once" (no free text) less than [`LIFE_MS`] ago, and its scope names the agent
    /// session and the call. At most one per request; every try is audited.
    pub async fn mint_once_grant(
        &self,
        request_id: &str,
        who: &LocalUser,
    ) -> Result<OnceGrant, AskError> {
        let req = self.request(request_id).await?;
        let refuse = |code: ErrorCode, why: String| {
            let entry = AuditEntry {
                source: Source::Socket,
                actor: Some(who.peer.to_string()),
                action: AuditAction::OnceGrant,
                detail: Some(format!("refused: {why}")),
                accepted: false,
                ..AuditEntry::about(&req)
            };
            (entry, AskError::new(code, why))
        };
        let (entry, error) = if !who.owns(&req) || !self.owned_here(&req) {
            refuse(
                ErrorCode::Forbidden,
                format!(
                    "request {:?} was not asked by this user; only its asker may mint its \
                     one-use grant",
                    Escaped(request_id)
                ),
            )
        } else {
            match grant_of(&req, now_ms()) {
                Ok(g) => return self.store_once_grant(&req, g, who).await,
                Err(why) => refuse(ErrorCode::Conflict, why),
            }
        };
        self.audit(entry).await;
        Err(error)
    }

    async fn store_once_grant(
        &self,
        req: &crate::domain::Request,
        g: OnceGrant,
        who: &LocalUser,
    ) -> Result<OnceGrant, AskError> {
        let entry = AuditEntry {
            source: Source::Socket,
            actor: Some(g.approver.clone()),
            action: AuditAction::OnceGrant,
            detail: Some(format!(
                "one-use grant {} for {} (call {}, session {}), minted for {}, until {}",
                g.id,
                Escaped(&g.tool),
                g.call,
                Escaped(&g.session),
                who.peer,
                g.ends_at_ms
            )),
            accepted: true,
            ..AuditEntry::about(req)
        };
        let minted = self
            .inner
            .store
            .mint_once_grant(&g, &entry)
            .await
            .map_err(|e| storage_error("the one-use grant", &e))?;
        if !minted {
            return Err(AskError::new(
                ErrorCode::Conflict,
                format!(
                    "request {:?} has had its one-use grant already",
                    Escaped(&req.request_id)
                ),
            ));
        }
        tracing::info!(grant = %g.id, request_id = %Escaped(&req.request_id), "one-use grant minted");
        Ok(g)
    }

    /// Uses the caller's live one-use grant for `call` of `session`, if there is one: it is
    /// then used up. `None` when there is none (nothing is written).
    pub async fn use_once_grant(
        &self,
        session: &str,
        call: &str,
        who: &LocalUser,
    ) -> Result<Option<OnceGrant>, AskError> {
        let Some(uid) = who.peer.uid else {
            return Ok(None);
        };
        let audit = |g: &OnceGrant| AuditEntry {
            request_key: Some(g.request_key),
            request_id: Some(g.request_id.clone()),
            source: Source::Socket,
            actor: Some(who.peer.to_string()),
            action: AuditAction::OnceGrantUsed,
            detail: Some(format!(
                "one-use grant {} (allowed by {}) used for {} (call {})",
                g.id,
                g.approver,
                Escaped(&g.tool),
                g.call
            )),
            accepted: true,
            ..Default::default()
        };
        let used = self
            .inner
            .store
            .use_once_grant(uid, session, call, now_ms(), &audit)
            .await
            .map_err(|e| storage_error("the use of a one-use grant", &e))?;
        if let Some(g) = &used {
            tracing::info!(grant = %g.id, "one-use grant used");
        }
        Ok(used)
    }
}

/// The grant an answered request gives, or why it gives none.
fn grant_of(req: &crate::domain::Request, now: i64) -> Result<OnceGrant, String> {
    let id = Escaped(&req.request_id);
    if req.status != Status::Answered {
        return Err(format!(
            "request {id:?} is {}, not answered",
            req.status.as_str()
        ));
    }
    let Some(answer) = req.answers.first().and_then(Option::as_ref) else {
        return Err(format!("request {id:?} has no answer"));
    };
    let labels: Vec<&str> = answer
        .settlement
        .selected
        .iter()
        .filter_map(|&i| req.questions.first()?.options.get(i))
        .map(|o| o.label.as_str())
        .collect();
    if labels != [ALLOW_ONCE] || answer.settlement.custom.is_some() {
        return Err(format!(
            "request {id:?} was not answered {ALLOW_ONCE:?}; no grant"
        ));
    }
    let (Some(session), Some(call), Some(uid)) = (
        req.scope.get("session"),
        req.scope.get("call"),
        req.peer.uid,
    ) else {
        return Err(format!(
            "request {id:?} names no agent session and call (scope labels session and call)"
        ));
    };
    let ends = answer.at_ms + LIFE_MS;
    if ends <= now {
        return Err(format!(
            "request {id:?} was answered more than {} minutes ago",
            LIFE_MS / 60_000
        ));
    }
    Ok(OnceGrant {
        id: once_grant::new_id(),
        session: session.clone(),
        call: call.clone(),
        tool: req.scope.get("tool").cloned().unwrap_or_default(),
        uid,
        approver: answer.actor.describe(),
        request_key: req.key,
        request_id: req.request_id.clone(),
        created_at_ms: now,
        ends_at_ms: ends,
        used_at_ms: None,
    })
}
