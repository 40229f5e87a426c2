//! Listing and revoking grants (docs/approvals.md, "Grants"), for every surface: who may see a
//! grant and who may end it early.

use super::{storage_error, Hub};
use crate::domain::clock::now_ms;
use crate::domain::error::{AskError, ErrorCode};
use crate::domain::grant::{self, Grant, GRANTS_LISTED};
use crate::domain::request::{Actor, AuditAction, AuditEntry};
use crate::domain::text::Escaped;

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
