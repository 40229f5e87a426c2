//! Claude Code's auto mode (docs/approvals.md, "Auto mode"). There a classifier decides each
//! tool call, and a call it blocks reaches a person only through the `PermissionDenied` hook:
//! askrelay asks whether to let that call through ("Auto mode blocked Bash. Allow this call
//! once?", with the classifier's reason and the command). "Allow once" mints a one-use grant
//! for that exact call (the session, the tool and its input) and answers `retry: true`;
//! Claude Code then tells the model it may make the call again, and the retried call passes
//! the `PreToolUse` hook, which allows it from the grant ([`use_grant`]), once: an allow
//! there skips the classifier. A deny, free text or no answer leaves the denial as it is
//! (nothing on stdout).

use super::super::Ended;
use super::permission::permission_ask;
use super::{
    ask_and_follow, denied_by, first_answer, no_answer, request_id, withdraw, Agent, CommonArgs,
    HookEvent, Reply, ALLOW_ONCE, DENY,
};
use crate::client::{Client, Target};
use crate::domain::model::QuestionOption;
use crate::domain::once_grant::OnceGrant;
use crate::domain::text::Reveal;
use crate::protocol::{Event, Op};
use std::time::Duration;

/// How long minting or using a grant may take before the hook gives up on it.
const GRANT_CAP: Duration = Duration::from_secs(5);

/// What auto mode's denial stands on when askrelay decides nothing.
const STANDS: &str = "auto mode's denial stands";

/// A `PermissionDenied` event: asks, and on "Allow once" mints the grant and answers retry.
pub(super) async fn permission_denied(
    target: &Target,
    event: &HookEvent,
    args: &CommonArgs,
) -> Reply {
    if event.session_id.is_none() {
        return Reply::NoDecision(format!(
            "the PermissionDenied event has no session_id, so no grant can be bound to it; {STANDS}"
        ));
    }
    let options = vec![
        QuestionOption {
            label: ALLOW_ONCE.into(),
            description: Some("Let Claude Code make this exact call once more".into()),
        },
        QuestionOption {
            label: DENY.into(),
            description: Some("Keep auto mode's denial".into()),
        },
    ];
    let reason = event
        .reason
        .as_deref()
        .filter(|r| !r.trim().is_empty())
        .unwrap_or("(no reason given)");
    let mut ask = match permission_ask(event, args, Agent::ClaudeCode, options, Some(reason)) {
        Ok(a) => a,
        Err(e) => return Reply::NoDecision(format!("{e}; {STANDS}")),
    };
    // Its own id: the call's PreToolUse or PermissionRequest question (`claude-code-<id>`) is
    // another request.
    let id = request_id(event, Agent::ClaudeCode, &mut Reveal::default());
    ask.request_id = Some(id.replacen("claude-code-", "claude-code-denied-", 1))
        .filter(|id| crate::domain::model::check_request_id(id).is_ok())
        .or(ask.request_id);
    let request_id = ask.request_id.clone().unwrap_or_default();
    let (result, by) = match ask_and_follow(target, ask, args).await {
        Ended::Answered { result, by, .. } => (result, by),
        other => return Reply::NoDecision(no_answer(&other, STANDS)),
    };
    let answer = first_answer(&result);
    if answer.custom.is_some() || answer.selected != [ALLOW_ONCE] {
        return Reply::NoDecision(format!(
            "{}; {STANDS}",
            denied_by(&by, answer.custom.as_deref())
        ));
    }
    match call(target, &Op::OnceGrant { request_id }).await {
        Ok(Event::OnceGrant { grant }) => Reply::Retry {
            note: format!(
                "allowed once by {by}: one-use grant {} for the retried call",
                grant.id
            ),
        },
        Ok(Event::Error { code, message, .. }) => Reply::NoDecision(format!(
            "allowed once by {by}, but no grant was given ({code}: {message}); {STANDS}"
        )),
        Ok(other) => Reply::NoDecision(format!(
            "allowed once by {by}, but once_grant answered {}; {STANDS}",
            other.to_line()
        )),
        Err(e) => Reply::NoDecision(format!(
            "allowed once by {by}, but no grant was given ({e}); {STANDS}"
        )),
    }
}

/// The caller's one-use grant for this call (the session, the tool and its input), used up
/// now; `None` when there is none.
pub(super) async fn use_grant(
    target: &Target,
    event: &HookEvent,
) -> Result<Option<OnceGrant>, String> {
    let Some(session) = event.session_id.clone() else {
        return Ok(None);
    };
    let call_key = withdraw::call_key(&session, &event.tool_name, &event.tool_input);
    match call(
        target,
        &Op::UseOnceGrant {
            session,
            call: call_key,
        },
    )
    .await?
    {
        Event::OnceGrantUsed { grant } => Ok(grant),
        Event::Error { code, message, .. } => Err(format!("{code}: {message}")),
        other => Err(format!("use_once_grant answered {}", other.to_line())),
    }
}

/// What the PreToolUse hook answers with a grant used.
pub(super) fn allowed_by(grant: &OnceGrant) -> Reply {
    Reply::PreToolUse {
        permission: "allow",
        reason: format!(
            "Allowed once by {} after auto mode's denial (one-use grant {})",
            grant.approver, grant.id
        ),
        updated_input: None,
    }
}

async fn call(target: &Target, op: &Op) -> Result<Event, String> {
    let sent = tokio::time::timeout(GRANT_CAP, async {
        let mut c = Client::connect_to(target).await?;
        c.call(op).await.map_err(std::io::Error::other)
    })
    .await;
    match sent {
        Ok(Ok(event)) => Ok(event),
        Ok(Err(e)) => Err(format!(
            "cannot reach the askrelay daemon at {}: {e}",
            target.socket.display()
        )),
        Err(_) => Err(format!("no reply within {} s", GRANT_CAP.as_secs())),
    }
}
