//! The agent's lifecycle events that withdraw a question it no longer waits for
//! (docs/approvals.md, "Withdrawn when answered elsewhere"): PostToolUse and PostToolUseFailure
//! withdraw the request of the same call; UserPromptSubmit, Stop and SessionEnd every pending
//! request of the session. The hook prints nothing: these hooks decide nothing.

use super::{HookEvent, Reply};
use crate::client::{Client, Target};
use crate::protocol::{Event, Op};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::time::Duration;

/// How long a withdrawal may take before the hook gives up on it.
const WITHDRAW_CAP: Duration = Duration::from_secs(3);

/// The lifecycle events that withdraw, with the reason each gives.
pub(super) fn reason_of(event_name: &str) -> Option<&'static str> {
    match event_name {
        "PostToolUse" | "PostToolUseFailure" => Some("answered_in_terminal"),
        "UserPromptSubmit" | "Stop" | "SessionEnd" => Some("agent_moved_on"),
        _ => None,
    }
}

/// The key of one tool call: sha256(session_id + tool_name + tool_input with its keys
/// sorted), the first 32 hex digits. The asking hook puts it in the `call` scope label; the
/// PostToolUse hook of the same call finds the request with it.
///
/// Bash's `description` is left out: Codex 0.171.0's PermissionRequest carries one (the
/// model's justification) that its PostToolUse for the same call does not, so the key is the
/// command's alone. (Claude Code sends the same description to both, so leaving it out changes
/// nothing there.)
pub fn call_key(session: &str, tool_name: &str, tool_input: &Value) -> String {
    let mut input = canonical(tool_input);
    if tool_name == "Bash" {
        if let Value::Object(m) = &mut input {
            m.remove("description");
        }
    }
    let mut h = Sha256::new();
    h.update(session.as_bytes());
    h.update(tool_name.as_bytes());
    h.update(input.to_string().as_bytes());
    let hex: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    hex[..32].to_owned()
}

fn canonical(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), canonical(&m[k])))
                    .collect(),
            )
        }
        Value::Array(a) => Value::Array(a.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

/// Sends `withdraw` for a lifecycle event; what happened goes to stderr only.
pub(super) async fn lifecycle(target: &Target, event: &HookEvent, agent: &str) -> Reply {
    let name = event.hook_event_name.as_deref().unwrap_or_default();
    let Some(reason) = reason_of(name) else {
        return Reply::NoDecision(format!("{name}: nothing to withdraw"));
    };
    let Some(session) = event.session_id.clone() else {
        return Reply::NoDecision(format!("{name} without a session_id: nothing to withdraw"));
    };
    let call = matches!(name, "PostToolUse" | "PostToolUseFailure")
        .then(|| call_key(&session, &event.tool_name, &event.tool_input));
    let op = Op::Withdraw {
        reason: reason.to_owned(),
        session: Some(session),
        call,
        request_id: None,
        agent: Some(agent.to_owned()),
        event: Some(name.to_owned()),
    };
    let sent = tokio::time::timeout(WITHDRAW_CAP, async {
        let mut c = Client::connect_to(target).await?;
        c.call(&op).await.map_err(std::io::Error::other)
    })
    .await;
    Reply::NoDecision(match sent {
        Ok(Ok(Event::Withdrawn { ended, .. })) => format!("{name}: withdrew {ended} request(s)"),
        Ok(Ok(other)) => format!("{name}: withdraw answered {}", other.to_line()),
        Ok(Err(e)) => format!("{name}: cannot withdraw: {e}"),
        Err(_) => format!("{name}: withdraw took over {} s", WITHDRAW_CAP.as_secs()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn codexs_permission_request_and_post_tool_use_of_one_call_share_the_key() {
        // What Codex 0.171.0 sent for one call (tests/it/agents/codex_tui.rs).
        let asked = json!({"command": "touch /w/marker", "description": "Create the marker"});
        let ran = json!({"command": "touch /w/marker"});
        assert_eq!(call_key("s", "Bash", &asked), call_key("s", "Bash", &ran));
        // Another command, session or tool is another call.
        let other = json!({"command": "touch /w/other"});
        assert_ne!(call_key("s", "Bash", &ran), call_key("s", "Bash", &other));
        assert_ne!(call_key("s", "Bash", &ran), call_key("t", "Bash", &ran));
        // Only Bash's description is left out; another tool's input is kept whole.
        let a = json!({"description": "one", "prompt": "p"});
        let b = json!({"description": "two", "prompt": "p"});
        assert_ne!(call_key("s", "Task", &a), call_key("s", "Task", &b));
        // Key order does not matter.
        let c = json!({"timeout": 5, "command": "ls"});
        let d = json!({"command": "ls", "timeout": 5});
        assert_eq!(call_key("s", "Bash", &c), call_key("s", "Bash", &d));
    }
}
