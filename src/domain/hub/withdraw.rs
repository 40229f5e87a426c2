//! Withdrawing the questions an agent no longer waits for: it was answered in the terminal,
//! the agent moved on, or the hook process waiting for it was killed (docs/approvals.md,
//! "Withdrawn when answered elsewhere").

use super::queries::visibility;
use super::Hub;
use crate::domain::access::LocalUser;
use crate::domain::audit::actor;
use crate::domain::error::AskError;
use crate::domain::request::{
    AuditAction, AuditEntry, Peer, Request, Source, Status, WithdrawReason,
};
use crate::domain::store::Page;
use crate::domain::text::Escaped;

/// Which pending requests a withdrawal ends.
#[derive(Debug, Clone, Default)]
pub struct WithdrawMatch {
    /// The agent session (the `session` scope label); `None` only with `request_id`.
    pub session: Option<String>,
    /// One call of that session (the `call` scope label), or every request of the session.
    pub call: Option<String>,
    /// One request.
    pub request_id: Option<String>,
    /// The agent whose hook tells (`claude-code`), for the audit: a withdrawal because the
    /// agent's own dialog was answered names its terminal as the decider.
    pub agent: Option<String>,
    /// The lifecycle event that told, for the audit ("PostToolUse").
    pub event: Option<String>,
}

impl WithdrawMatch {
    fn matches(&self, req: &Request) -> bool {
        req.status == Status::Pending
            && self
                .session
                .as_ref()
                .is_none_or(|s| req.scope.get("session") == Some(s))
            && self
                .call
                .as_ref()
                .is_none_or(|c| req.scope.get("call") == Some(c))
            && self
                .request_id
                .as_ref()
                .is_none_or(|r| &req.request_id == r)
    }
}

/// Who ended a withdrawn request, as its audit row names them.
struct Decider {
    source: Source,
    actor: String,
}

impl Hub {
    /// Ends the local user's pending requests that match as `cancelled`, withdrawn for
    /// `reason`; their waiting clients get `ABORTED` with "withdrawn: …". Returns the request
    /// ids it ended. The audit names the decider: for `answered_in_terminal`, the agent's own
    /// terminal (`terminal:claude-code name=alice pid=4242`), where the person answered;
    /// otherwise the socket's peer.
    pub async fn withdraw(
        &self,
        reason: WithdrawReason,
        m: &WithdrawMatch,
        who: &LocalUser,
    ) -> Result<Vec<String>, AskError> {
        // Only the peer's own requests, even for an operator: withdrawing says "my agent has
        // gone on", which only its owner can say.
        let mut owner = who.clone();
        owner.operator = false;
        let decider = match reason {
            WithdrawReason::AnsweredInTerminal => Decider {
                source: Source::Terminal,
                actor: actor(
                    "terminal",
                    m.agent.as_deref().unwrap_or("?"),
                    who.name.as_deref(),
                    who.peer.pid,
                ),
            },
            _ => Decider {
                source: Source::Socket,
                actor: who.audit(),
            },
        };
        let mut ended = Vec::new();
        let mut after = None;
        loop {
            let page = self
                .inner
                .store
                .pending(
                    visibility(&owner),
                    Page {
                        limit: crate::protocol::PAGE_MAX,
                        after,
                    },
                )
                .await
                .map_err(|e| AskError::internal(&e))?;
            let Some(last) = page.last() else { break };
            after = Some(last.key);
            let full = page.len() as u32 >= crate::protocol::PAGE_MAX;
            for req in page.iter().filter(|r| m.matches(r)) {
                if self
                    .end_withdrawn(req, reason, m.event.as_deref(), &decider)
                    .await
                {
                    ended.push(req.request_id.clone());
                }
            }
            if !full {
                break;
            }
        }
        Ok(ended)
    }

    /// A request whose last client marked itself as never coming back (`on_disconnect:
    /// withdraw`, an agent's hook) went away without an answer: it is withdrawn now
    /// (`hook_killed`), not after `cancel_grace_secs`. The audit names that client.
    pub(super) async fn withdraw_abandoned(&self, request_id: &str, peer: Peer) {
        let req = match self.inner.store.by_id(request_id).await {
            Ok(Some(r)) if r.status == Status::Pending => r,
            _ => return,
        };
        tracing::info!(request_id = %Escaped(request_id), "withdrawing a request whose hook went away");
        let decider = Decider {
            source: Source::Socket,
            actor: peer.audit(None),
        };
        self.end_withdrawn(
            &req,
            WithdrawReason::HookKilled,
            Some("its connection closed"),
            &decider,
        )
        .await;
    }

    /// Ends `req` as `cancelled`, withdrawn for `reason` (told by `event`); false if it had
    /// already ended.
    async fn end_withdrawn(
        &self,
        req: &Request,
        reason: WithdrawReason,
        event: Option<&str>,
        decider: &Decider,
    ) -> bool {
        let detail = match event {
            Some(ev) => format!("withdrawn: {} ({ev})", reason.headline()),
            None => format!("withdrawn: {}", reason.headline()),
        };
        let err = AskError::aborted(format!("the request was cancelled: {detail}"));
        let audit = AuditEntry {
            source: decider.source,
            actor: Some(decider.actor.clone()),
            action: AuditAction::Withdrawn,
            detail: Some(err.to_string()),
            ..AuditEntry::about(req)
        };
        self.end_with(req, Status::Cancelled, err, Some(reason), audit)
            .await
    }
}
