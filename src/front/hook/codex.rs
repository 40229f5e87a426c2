//! `askrelay hook codex`: Codex's `PreToolUse` and `PermissionRequest` hooks.
//!
//! - **`PreToolUse`**: nothing on allow (Codex rejects `permissionDecision: "allow"`), and a
//!   PreToolUse `deny` with the reason; without an answer, nothing (Codex's own approval
//!   policy decides), or with `--fail-closed` a deny.
//! - **`PermissionRequest`** (Codex 0.171's interactive UI fires it when its approval policy
//!   would ask; `codex exec` never does): its input is `tool_name` (`"Bash"`) and
//!   `tool_input {command, description}`, with no `tool_use_id` and no prefix rules. It prints
//!   `{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":
//!   "allow"}}}` or `{…"decision":{"behavior":"deny","message":…}}`. Codex refuses
//!   `updatedPermissions`, `updatedInput` and `interrupt` in this output, so there is no
//!   "always allow" to offer. Without an answer, nothing (Codex shows its own prompt), or with
//!   `--fail-closed` a deny in this shape: a PreToolUse-shaped deny is "invalid
//!   permission-request JSON output" to Codex, which then decides as if there were no hook.
//! - **PostToolUse, UserPromptSubmit, SessionEnd** (what `setup codex` registers, async):
//!   withdraw the question Codex no longer waits for; **Stop**: the end of the turn. Nothing
//!   is printed for them.
//! - **Any other event**: nothing, whatever the flags.
//!
//! The event's name is read before anything else can fail, so that every failure answers in
//! that event's own shape.

use super::permission::tool_call;
use super::{CodexArgs, EventKind, HookEvent, Reply, Shapes, Verdict};
use crate::client::Target;
use crate::domain::text::Escaped;
use serde_json::{json, Value};
use std::io::Read;
use std::path::Path;

/// The Codex events the hook answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum CodexEvent {
    PreToolUse,
    PermissionRequest,
    /// Any other event: the hook prints nothing.
    Other,
}

impl Shapes for CodexEvent {
    /// A deny in this event's shape.
    fn deny(self, message: String) -> Reply {
        match self {
            CodexEvent::PreToolUse => Reply::pre("deny", message),
            CodexEvent::PermissionRequest => Reply::PermissionRequest {
                decision: json!({"behavior": "deny", "message": message}),
                note: message,
            },
            CodexEvent::Other => Reply::NoDecision(message),
        }
    }

    /// An allow in this event's shape: nothing for PreToolUse (Codex refuses an explicit
    /// allow there, and no decision lets the call run).
    fn allow(self, by: &str) -> Reply {
        match self {
            CodexEvent::PermissionRequest => Reply::PermissionRequest {
                decision: json!({"behavior": "allow"}),
                note: format!("allowed by {by}"),
            },
            _ => Reply::NoDecision(format!("allowed by {by}")),
        }
    }

    /// What the hook prints when it has no answer: nothing, or with `--fail-closed` a deny in
    /// the event's shape (never for other events).
    fn fallback(self, why: String, fail_closed: bool) -> Reply {
        match self {
            CodexEvent::Other => Reply::NoDecision(format!("{why}; no decision")),
            _ if fail_closed => self.deny(format!("askrelay: {why}; denied (--fail-closed)")),
            CodexEvent::PreToolUse => {
                Reply::NoDecision(format!("{why}; no decision (Codex's own approval policy)"))
            }
            CodexEvent::PermissionRequest => {
                Reply::NoDecision(format!("{why}; no decision (Codex's own prompt)"))
            }
        }
    }
}

/// Reads the event: its kind first (from its JSON, or from the text of a bad one, as
/// [`EventKind::sniff`] reads it), then the fields askrelay uses.
pub(super) fn parse_event(input: &str) -> (CodexEvent, Result<HookEvent, String>) {
    let kind = match EventKind::sniff(input) {
        EventKind::PreToolUseCall | EventKind::PreToolUseQuestion => CodexEvent::PreToolUse,
        EventKind::PermissionRequest => CodexEvent::PermissionRequest,
        EventKind::PermissionDenied | EventKind::Other => CodexEvent::Other,
    };
    let event = serde_json::from_str::<Value>(input)
        .map_err(|e| format!("the hook event is not JSON: {e}"))
        .and_then(|value| {
            serde_json::from_value(value)
                .map_err(|e| format!("the hook event is not one it knows: {e}"))
        });
    (kind, event)
}

pub(in crate::front) async fn codex(config_file: Option<&Path>, args: &CodexArgs) -> Reply {
    let mut input = String::new();
    if let Err(e) = std::io::stdin().read_to_string(&mut input) {
        return CodexEvent::PreToolUse
            .fallback(format!("cannot read the hook event: {e}"), args.fail_closed);
    }
    let (kind, event) = parse_event(&input);
    if let (CodexEvent::Other, Err(e)) = (kind, &event) {
        return Reply::NoDecision(format!("{e}; no decision"));
    }
    if kind == CodexEvent::Other {
        let name = serde_json::from_str::<Value>(&input)
            .ok()
            .and_then(|v| v.get("hook_event_name")?.as_str().map(str::to_owned))
            .unwrap_or_default();
        if name == "Stop" {
            return super::end_of_turn(config_file, &input, &args.common, super::Agent::Codex)
                .await;
        }
        if super::withdraw::reason_of(&name).is_some() {
            return super::lifecycle(config_file, &input, "codex").await;
        }
        return Reply::NoDecision(format!(
            "hook codex answers PreToolUse and PermissionRequest events, not {}; no decision",
            Escaped(&name)
        ));
    }
    let event = match event {
        Ok(e) => e,
        Err(e) => return kind.fallback(e, args.fail_closed),
    };
    let target = match Target::from_config(config_file).await {
        Ok(t) => t,
        Err(e) => return kind.fallback(format!("{e:#}"), args.fail_closed),
    };
    let verdict = tool_call(&target, &event, &args.common, super::Agent::Codex).await;
    answer(kind, verdict, args.fail_closed)
}

/// What the hook answers for a verdict, in the event's shape.
pub(super) fn answer(kind: CodexEvent, verdict: Verdict, fail_closed: bool) -> Reply {
    super::answer_in(kind, verdict, fail_closed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(r: &Reply) -> Option<Value> {
        r.to_line().map(|l| serde_json::from_str(&l).unwrap())
    }

    #[test]
    fn the_event_name_is_read_before_the_fields() {
        let (kind, event) = parse_event(r#"{"hook_event_name":"PermissionRequest"}"#);
        assert_eq!(kind, CodexEvent::PermissionRequest);
        // tool_name may be absent (lifecycle events have none): it reads as empty.
        assert_eq!(event.unwrap().tool_name, "");
        let (kind, event) = parse_event("not json");
        assert_eq!(
            kind,
            CodexEvent::Other,
            "bad JSON naming no event gets nothing"
        );
        assert!(event.is_err());
        let (kind, _) = parse_event(r#"{"hook_event_name":"Stop"}"#);
        assert_eq!(kind, CodexEvent::Other);
        let (kind, event) = parse_event(
            r#"{"hook_event_name":"PermissionRequest","tool_name":"Bash",
                "tool_input":{"command":"touch a","description":"make a"},
                "session_id":"s","cwd":"/tmp/p"}"#,
        );
        assert_eq!(kind, CodexEvent::PermissionRequest);
        assert_eq!(event.unwrap().tool_name, "Bash");
    }

    #[test]
    fn permission_request_answers_in_codexs_shape() {
        let allow = CodexEvent::PermissionRequest.allow("alice on Discord");
        assert_eq!(
            line(&allow),
            Some(
                json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
                "decision": {"behavior": "allow"}}})
            )
        );
        let deny = answer(
            CodexEvent::PermissionRequest,
            Verdict::Denied {
                by: "bob on Discord".into(),
                reason: Some("not on prod".into()),
            },
            false,
        );
        assert_eq!(
            line(&deny),
            Some(
                json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
                "decision": {"behavior": "deny",
                    "message": "Denied by bob on Discord: not on prod"}}})
            )
        );
    }

    #[test]
    fn no_answer_is_nothing_or_a_deny_in_the_events_shape() {
        let down = || Verdict::Unreachable("no daemon".into());
        // Without --fail-closed: nothing, for both events.
        for kind in [CodexEvent::PreToolUse, CodexEvent::PermissionRequest] {
            assert_eq!(line(&answer(kind, down(), false)), None);
        }
        // --fail-closed: PermissionRequest's own deny, never a PreToolUse one.
        let v = line(&answer(CodexEvent::PermissionRequest, down(), true)).unwrap();
        assert_eq!(
            v["hookSpecificOutput"]["hookEventName"],
            "PermissionRequest"
        );
        assert_eq!(v["hookSpecificOutput"]["decision"]["behavior"], "deny");
        assert!(v["hookSpecificOutput"]["decision"]["message"]
            .as_str()
            .unwrap()
            .contains("--fail-closed"));
        assert!(v["hookSpecificOutput"].get("permissionDecision").is_none());
        // PreToolUse keeps today's deny.
        let v = line(&answer(CodexEvent::PreToolUse, down(), true)).unwrap();
        assert_eq!(v["hookSpecificOutput"]["hookEventName"], "PreToolUse");
        assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny");
        // Other events: nothing, even failing closed.
        assert_eq!(line(&CodexEvent::Other.fallback("x".into(), true)), None);
    }

    #[test]
    fn pre_tool_use_allow_is_still_nothing() {
        let r = answer(
            CodexEvent::PreToolUse,
            Verdict::Allowed {
                by: "alice".into(),
                edited: None,
            },
            true,
        );
        assert_eq!(line(&r), None);
    }
}
