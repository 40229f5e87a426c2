//! Grants (docs/approvals.md, "Grants"): a new request answered at once by a live grant, the
//! grant a settlement's terms give, and, for every surface, who may see a grant and who may
//! end it early.

use super::{storage_error, Hub};
use crate::domain::answer::Settlement;
use crate::domain::clock::now_ms;
use crate::domain::error::{AskError, ErrorCode};
use crate::domain::grant::{self, Grant, GRANTS_LISTED};
use crate::domain::request::{Actor, AuditAction, AuditEntry, Request, Via};
use crate::domain::text::Escaped;
use crate::domain::vote::Vote;

impl Hub {
    /// The live grants, the newest first.
    pub async fn live_grants(&self) -> Result<Vec<Grant>, AskError> {
        self.inner
            .store
            .grants(now_ms(), GRANTS_LISTED)
            .await
            .map_err(|e| storage_error("the grants", &e))
    }

    /// Ends grant `id` now. Only its approver (the same surface and id, or one of the quorum
    /// that gave it) or an operator may; every try is audited.
    pub async fn revoke_grant(
        &self,
        id: &str,
        actor: &Actor,
        operator: bool,
    ) -> Result<Grant, AskError> {
        let audit = |accepted: bool, detail: String| AuditEntry {
            source: actor.via.into(),
            actor: Some(actor.describe()),
            action: AuditAction::Revoke,
            detail: Some(detail),
            accepted,
            ..Default::default()
        };
        let found = if grant::is_id(id) {
            self.inner
                .store
                .grant(id)
                .await
                .map_err(|e| storage_error("the grant", &e))?
        } else {
            None
        };
        let Some(g) = found else {
            self.audit(audit(false, format!("no grant {:?}", Escaped(id))))
                .await;
            return Err(AskError::invalid(format!(
                "no grant {:?} is known; `askrelay grants` lists them",
                Escaped(id)
            )));
        };
        let approver = g.approved_by(actor.via.as_str(), &actor.id);
        if !(operator || approver) {
            self.audit(audit(
                false,
                format!("revoking {} refused: not its approver or an operator", g.id),
            ))
            .await;
            return Err(AskError::new(
                ErrorCode::Forbidden,
                format!(
                    "only the grant's approver ({}) or an operator may revoke {}",
                    Escaped(&g.approver),
                    g.id
                ),
            ));
        }
        let at = now_ms();
        let revoked = self
            .inner
            .store
            .revoke_grant(
                &g.id,
                &actor.describe(),
                at,
                &audit(true, format!("revoked {}", g.id)),
            )
            .await
            .map_err(|e| storage_error("the revocation", &e))?;
        if !revoked {
            return Err(AskError::new(
                ErrorCode::Conflict,
                format!("grant {} has already ended", g.id),
            ));
        }
        tracing::info!(grant = %g.id, by = %Escaped(&actor.describe()), "grant revoked");
        Ok(Grant {
            revoked_at_ms: Some(at),
            revoked_by: Some(actor.describe()),
            ..g
        })
    }
}

impl Hub {
    /// Answers a new request at once when a live grant covers it (docs/approvals.md,
    /// "Grants"): the same route (whose grants are still on), tool, requester and session,
    /// and a command the grant matches. Returns the request as it then stands.
    pub(super) async fn answer_by_grant(&self, req: Request) -> Request {
        let (Some(route), Some(uid)) = (req.route.as_deref(), req.peer.uid) else {
            return req;
        };
        if req
            .context
            .as_deref()
            .and_then(|c| c.approval.as_ref())
            .is_none()
            || self.policy_of(&req).grant_secs.is_empty()
        {
            return req;
        }
        let now = now_ms();
        let grants = match self.inner.store.live_grants(route, uid, now).await {
            Ok(g) => g,
            Err(e) => {
                // The people are asked instead.
                tracing::warn!(error = %format!("{e:#}"), "cannot read the grants; asking people");
                return req;
            }
        };
        let Some((g, option)) = grants
            .iter()
            .find_map(|g| g.answers(&req, route, now).map(|i| (g, i)))
        else {
            return req;
        };
        let actor = Actor {
            via: Via::Grant,
            id: g.id.clone(),
            name: g.approver.clone(),
            note: None,
        };
        match self
            .settle_now(&req, 0, Settlement::choice(option), actor, &[])
            .await
        {
            Ok(settled) => {
                tracing::info!(
                    request_id = %Escaped(&req.request_id),
                    grant = %g.id,
                    "answered by a grant"
                );
                settled.request
            }
            Err(e) => {
                tracing::warn!(error = %e.message, "cannot answer by a grant; asking people");
                req
            }
        }
    }

    /// The grant that settling question `idx` of `req` with `settlement` gives, when its
    /// terms ask for one; its approver is the person who settled it, or the quorum's voters.
    pub(super) fn grant_of(
        &self,
        req: &Request,
        idx: usize,
        settlement: &Settlement,
        actor: &Actor,
        voters: &[Vote],
        at_ms: i64,
    ) -> Result<Option<Grant>, AskError> {
        let Some(terms) = settlement.terms.as_ref().and_then(|t| t.grant.as_ref()) else {
            return Ok(None);
        };
        let approval = req.context.as_deref().and_then(|c| c.approval.as_ref());
        let label = settlement
            .selected
            .first()
            .and_then(|&i| req.questions[idx].options.get(i))
            .map(|o| o.label.as_str());
        let (Some(approval), Some(label)) = (approval, label) else {
            return Err(AskError::invalid(
                "terms.grant: this request is not an approval",
            ));
        };
        let mut g = grant::from_terms(
            req,
            approval,
            terms.pattern.as_deref(),
            label,
            terms.secs,
            actor,
            at_ms,
        )
        .ok_or_else(|| {
            AskError::invalid(
                "terms.grant: only a request of a local account on a route can be granted",
            )
        })?;
        if !voters.is_empty() {
            g.set_quorum(voters);
        }
        Ok(Some(g))
    }
}
