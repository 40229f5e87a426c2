//! Withdrawing the questions an agent no longer waits for: it was answered in the terminal,
//! the agent moved on, or the hook process waiting for it was killed (docs/approvals.md,
//! "Withdrawn when answered elsewhere").

use super::queries::visibility;
use super::Hub;
use crate::domain::access::LocalUser;
use crate::domain::error::AskError;
use crate::domain::request::Status;
use crate::domain::store::Page;

/// Why a request is withdrawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WithdrawReason {
    AnsweredInTerminal,
    AgentMovedOn,
    HookKilled,
}

impl WithdrawReason {
    pub fn parse(s: &str) -> Option<WithdrawReason> {
        match s {
            "answered_in_terminal" => Some(WithdrawReason::AnsweredInTerminal),
            "agent_moved_on" => Some(WithdrawReason::AgentMovedOn),
            "hook_killed" => Some(WithdrawReason::HookKilled),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            WithdrawReason::AnsweredInTerminal => "answered_in_terminal",
            WithdrawReason::AgentMovedOn => "agent_moved_on",
            WithdrawReason::HookKilled => "hook_killed",
        }
    }

    /// What the copies of the question say once withdrawn.
    pub fn headline(self) -> &'static str {
        match self {
            WithdrawReason::AnsweredInTerminal => "answered in the terminal",
            WithdrawReason::AgentMovedOn => "the agent moved on",
            WithdrawReason::HookKilled => "the waiting hook was stopped",
        }
    }
}

/// Which pending requests a withdrawal ends.
#[derive(Debug, Clone, Default)]
pub struct WithdrawMatch {
    /// The agent session (the `session` scope label).
    pub session: String,
    /// One call of that session (the `call` scope label), or every request of the session.
    pub call: Option<String>,
    /// One request.
    pub request_id: Option<String>,
    /// The lifecycle event that told, for the audit ("PostToolUse").
    pub event: Option<String>,
}

impl Hub {
    /// Ends the local user's pending requests that match as `cancelled`; their waiting clients
    /// get `ABORTED` with "withdrawn: …". Returns the request ids it ended. The terminal (the
    /// socket's peer) is the decider the audit names.
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
            for req in page {
                if req.status != Status::Pending
                    || req.scope.get("session") != Some(&m.session)
                    || m.call
                        .as_ref()
                        .is_some_and(|c| req.scope.get("call") != Some(c))
                    || m.request_id.as_ref().is_some_and(|r| &req.request_id != r)
                {
                    continue;
                }
                let detail = match &m.event {
                    Some(ev) => format!("withdrawn: {} ({ev})", reason.headline()),
                    None => format!("withdrawn: {}", reason.headline()),
                };
                if self.cancel_for(&req, &detail, who).await {
                    ended.push(req.request_id.clone());
                }
            }
            if !full {
                break;
            }
        }
        Ok(ended)
    }
}
