//! `askrelay hook copilot`: the GitHub Copilot CLI's hooks (`preToolUse`, `permissionRequest`,
//! `agentStop`, and the lifecycle events that withdraw a question).
//!
//! Copilot's events are camelCase and name no event (`{sessionId, cwd, toolName, toolArgs}`
//! for `preToolUse`; `permissionRequest` adds `hookName` and calls the input `toolInput`;
//! `agentStop` has `stopReason`, `stop_hook_active` and `transcriptPath`), so the event is
//! `--event` (what `setup copilot` writes), else told from its fields. Each is turned into the
//! event the other hooks read (`bash` becomes `Bash`, so the command shows as a command), and
//! answered in Copilot's shape:
//!
//! - **`preToolUse`**: `{"permissionDecision":"allow"}`, or `"deny"` with
//!   `permissionDecisionReason` (Copilot shows the model "Denied by preToolUse hook: REASON").
//!   Without an answer: nothing (Copilot's own approval; in `-p` without `--allow-all-tools`
//!   nobody approves, so the call does not run), or with `--fail-closed` a deny.
//! - **`permissionRequest`** (when Copilot would ask): `{"behavior":"allow"}`, or
//!   `{"behavior":"deny","message":…}`. Without an answer: nothing, or with `--fail-closed` a
//!   deny.
//! - **`agentStop`**: as Claude Code's Stop (a reply on a route with `stop_replies` comes back
//!   as `{"decision":"block","reason":…}`); the agent's last message is read from Copilot's
//!   `events.jsonl` (`assistant.message`).
//! - **`postToolUse`, `postToolUseFailure`, `userPromptSubmitted`, `sessionEnd`**: withdraw the
//!   questions the agent no longer waits for; nothing printed.
//!
//! It always exits 0: Copilot treats a failing `preToolUse` hook as a deny.

use super::permission::tool_call;
use super::{Agent, CopilotArgs, HookEvent, Reply, Shapes, Verdict};
use crate::client::Target;
use crate::domain::text::Escaped;
use clap::ValueEnum;
use serde_json::{json, Map, Value};
use std::io::BufRead;
use std::path::Path;

/// The Copilot events the hook knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CopilotEvent {
    PreToolUse,
    PermissionRequest,
    AgentStop,
    PostToolUse,
    PostToolUseFailure,
    UserPromptSubmitted,
    SessionEnd,
}

impl CopilotEvent {
    /// The event, from its fields: `hookName` when given, else what only one event carries.
    fn sniff(v: &Value) -> Option<CopilotEvent> {
        if let Some(name) = v["hookName"].as_str() {
            // camelCase, as Copilot names its events.
            return CopilotEvent::value_variants()
                .iter()
                .find(|k| {
                    k.to_possible_value()
                        .is_some_and(|p| p.get_name().replace('-', "") == name.to_lowercase())
                })
                .copied();
        }
        if v.get("stopReason").is_some() || v.get("stop_hook_active").is_some() {
            Some(CopilotEvent::AgentStop)
        } else if v.get("toolResult").is_some() {
            Some(CopilotEvent::PostToolUse)
        } else if v.get("toolArgs").is_some() {
            Some(CopilotEvent::PreToolUse)
        } else if v.get("toolInput").is_some() {
            Some(CopilotEvent::PermissionRequest)
        } else if v.get("prompt").is_some() {
            Some(CopilotEvent::UserPromptSubmitted)
        } else {
            None
        }
    }

    /// The name the other hooks give the same event.
    fn claude_name(self) -> &'static str {
        match self {
            CopilotEvent::PreToolUse => "PreToolUse",
            CopilotEvent::PermissionRequest => "PermissionRequest",
            CopilotEvent::AgentStop => "Stop",
            CopilotEvent::PostToolUse => "PostToolUse",
            CopilotEvent::PostToolUseFailure => "PostToolUseFailure",
            CopilotEvent::UserPromptSubmitted => "UserPromptSubmit",
            CopilotEvent::SessionEnd => "SessionEnd",
        }
    }
}

impl Shapes for CopilotEvent {
    /// An allow in this event's shape.
    fn allow(self, by: &str) -> Reply {
        let note = format!("allowed by {by}");
        match self {
            CopilotEvent::PreToolUse => Reply::Line {
                line: json!({"permissionDecision": "allow"}),
                note,
            },
            CopilotEvent::PermissionRequest => Reply::Line {
                line: json!({"behavior": "allow"}),
                note,
            },
            _ => Reply::NoDecision(note),
        }
    }

    /// A deny in this event's shape.
    fn deny(self, message: String) -> Reply {
        match self {
            CopilotEvent::PreToolUse => Reply::Line {
                line: json!({"permissionDecision": "deny", "permissionDecisionReason": message}),
                note: message,
            },
            CopilotEvent::PermissionRequest => Reply::Line {
                line: json!({"behavior": "deny", "message": message}),
                note: message,
            },
            _ => Reply::NoDecision(message),
        }
    }

    /// No answer: nothing (Copilot's own approval), or with `--fail-closed` a deny.
    fn fallback(self, why: String, fail_closed: bool) -> Reply {
        match self {
            CopilotEvent::PreToolUse | CopilotEvent::PermissionRequest if fail_closed => {
                self.deny(format!("askrelay: {why}; denied (--fail-closed)"))
            }
            CopilotEvent::PreToolUse | CopilotEvent::PermissionRequest => {
                Reply::NoDecision(format!("{why}; no decision (Copilot's own approval)"))
            }
            _ => Reply::NoDecision(format!("{why}; no decision")),
        }
    }
}

/// Copilot's tool names as the other agents name the same tools, so that the question shows
/// what the call does (a command as a command).
fn tool_name(copilot: &str) -> String {
    match copilot {
        "bash" => "Bash".to_owned(),
        other => other.to_owned(),
    }
}

/// Copilot's event as the event the other hooks read (`hook_event_name`, snake_case fields).
fn translate(kind: CopilotEvent, v: &Value) -> Value {
    let mut out = Map::new();
    out.insert("hook_event_name".into(), json!(kind.claude_name()));
    for (from, to) in [
        ("sessionId", "session_id"),
        ("cwd", "cwd"),
        ("transcriptPath", "transcript_path"),
        ("stop_hook_active", "stop_hook_active"),
    ] {
        if let Some(x) = v.get(from).filter(|x| !x.is_null()) {
            out.insert(to.into(), x.clone());
        }
    }
    if let Some(name) = v["toolName"].as_str() {
        out.insert("tool_name".into(), json!(tool_name(name)));
    }
    if let Some(input) = v.get("toolArgs").or_else(|| v.get("toolInput")) {
        // Copilot hands some tools' arguments over as a JSON string.
        let input = match input.as_str().map(serde_json::from_str::<Value>) {
            Some(Ok(parsed)) => parsed,
            _ => input.clone(),
        };
        out.insert("tool_input".into(), input);
    }
    if kind == CopilotEvent::AgentStop {
        if let Some(last) = v["transcriptPath"].as_str().and_then(last_message) {
            out.insert("last_assistant_message".into(), json!(last));
        }
    }
    Value::Object(out)
}

/// The last assistant text in Copilot's `events.jsonl`.
fn last_message(path: &str) -> Option<String> {
    let file = std::fs::File::open(path).ok()?;
    let mut last = None;
    for line in std::io::BufReader::new(file).lines().map_while(Result::ok) {
        let Ok(v) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if v["type"] != "assistant.message" {
            continue;
        }
        if let Some(text) = v["data"]["content"]
            .as_str()
            .filter(|t| !t.trim().is_empty())
        {
            last = Some(text.to_owned());
        }
    }
    last
}

pub(in crate::front) async fn copilot(config_file: Option<&Path>, args: &CopilotArgs) -> Reply {
    let raw = match super::read_stdin() {
        Ok(r) => r,
        Err(e) => {
            return args
                .event
                .unwrap_or(CopilotEvent::PreToolUse)
                .fallback(e, args.fail_closed)
        }
    };
    let value = serde_json::from_str::<Value>(&raw);
    let kind = match (args.event, &value) {
        (Some(k), _) => k,
        (None, Ok(v)) => match CopilotEvent::sniff(v) {
            Some(k) => k,
            None => {
                return Reply::NoDecision(
                    "cannot tell which Copilot event this is (give --event); no decision".into(),
                )
            }
        },
        (None, Err(e)) => {
            return Reply::NoDecision(format!("the hook event is not JSON: {e}; no decision"))
        }
    };
    let value = match value {
        Ok(v) => v,
        Err(e) => {
            return kind.fallback(format!("the hook event is not JSON: {e}"), args.fail_closed)
        }
    };
    let event = translate(kind, &value);
    let translated = event.to_string();
    match kind {
        CopilotEvent::AgentStop => {
            return super::end_of_turn(config_file, &translated, &args.common, Agent::Copilot).await
        }
        CopilotEvent::PreToolUse | CopilotEvent::PermissionRequest => {}
        _ => return super::lifecycle(config_file, &translated, "copilot").await,
    }
    let event: HookEvent = match serde_json::from_value(event) {
        Ok(e) => e,
        Err(e) => {
            return kind.fallback(
                format!("the hook event is not one it knows: {e}"),
                args.fail_closed,
            )
        }
    };
    if event.tool_name.is_empty() {
        return kind.fallback(
            format!("the {} event names no tool", Escaped(kind.claude_name())),
            args.fail_closed,
        );
    }
    let target = match Target::from_config(config_file).await {
        Ok(t) => t,
        Err(e) => return kind.fallback(format!("{e:#}"), args.fail_closed),
    };
    let verdict = tool_call(&target, &event, &args.common, Agent::Copilot).await;
    answer(kind, verdict, args.fail_closed)
}

/// What the hook answers for a verdict, in the event's shape.
fn answer(kind: CopilotEvent, verdict: Verdict, fail_closed: bool) -> Reply {
    super::answer_in(kind, verdict, fail_closed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(r: &Reply) -> Option<Value> {
        r.to_line().map(|l| serde_json::from_str(&l).unwrap())
    }

    #[test]
    fn the_event_is_told_from_its_fields() {
        let pre = json!({"sessionId": "s", "timestamp": 1, "cwd": "/w", "toolName": "bash",
            "toolArgs": {"command": "touch a", "description": "make a"}});
        assert_eq!(CopilotEvent::sniff(&pre), Some(CopilotEvent::PreToolUse));
        let pr = json!({"hookName": "permissionRequest", "sessionId": "s", "cwd": "/w",
            "toolName": "bash", "toolInput": {"command": "touch a"}, "permissionSuggestions": []});
        assert_eq!(
            CopilotEvent::sniff(&pr),
            Some(CopilotEvent::PermissionRequest)
        );
        let stop = json!({"sessionId": "s", "cwd": "/w", "transcriptPath": "/t",
            "stopReason": "end_turn", "stop_hook_active": false});
        assert_eq!(CopilotEvent::sniff(&stop), Some(CopilotEvent::AgentStop));
        assert_eq!(CopilotEvent::sniff(&json!({"sessionId": "s"})), None);
    }

    #[test]
    fn the_event_reads_as_the_other_hooks_read_it() {
        let pre = json!({"sessionId": "s1", "cwd": "/w/p", "toolName": "bash",
            "toolArgs": {"command": "touch a", "description": "make a"}});
        let t = translate(CopilotEvent::PreToolUse, &pre);
        assert_eq!(
            t,
            json!({"hook_event_name": "PreToolUse", "session_id": "s1", "cwd": "/w/p",
                "tool_name": "Bash", "tool_input": {"command": "touch a", "description": "make a"}})
        );
        // Arguments given as a JSON string are read as JSON.
        let edit = json!({"toolName": "edit", "toolArgs": "{\"path\":\"a\"}"});
        assert_eq!(
            translate(CopilotEvent::PreToolUse, &edit)["tool_input"],
            json!({"path": "a"})
        );
    }

    #[test]
    fn answers_are_in_copilots_shape() {
        let allowed = || Verdict::Allowed {
            by: "alice on Discord".into(),
            edited: None,
        };
        let denied = || Verdict::Denied {
            by: "bob on Discord".into(),
            reason: None,
        };
        assert_eq!(
            line(&answer(CopilotEvent::PreToolUse, allowed(), false)),
            Some(json!({"permissionDecision": "allow"}))
        );
        assert_eq!(
            line(&answer(CopilotEvent::PreToolUse, denied(), false)),
            Some(json!({"permissionDecision": "deny",
                "permissionDecisionReason": "Denied by bob on Discord"}))
        );
        assert_eq!(
            line(&answer(CopilotEvent::PermissionRequest, allowed(), false)),
            Some(json!({"behavior": "allow"}))
        );
        assert_eq!(
            line(&answer(CopilotEvent::PermissionRequest, denied(), false)),
            Some(json!({"behavior": "deny", "message": "Denied by bob on Discord"}))
        );
    }

    #[test]
    fn no_answer_is_nothing_or_a_deny_in_the_events_shape() {
        let down = || Verdict::Unreachable("no daemon".into());
        for kind in [CopilotEvent::PreToolUse, CopilotEvent::PermissionRequest] {
            assert_eq!(line(&answer(kind, down(), false)), None);
        }
        let v = line(&answer(CopilotEvent::PreToolUse, down(), true)).unwrap();
        assert_eq!(v["permissionDecision"], "deny");
        assert!(v["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .contains("--fail-closed"));
        let v = line(&answer(CopilotEvent::PermissionRequest, down(), true)).unwrap();
        assert_eq!(v["behavior"], "deny");
        assert_eq!(
            line(&CopilotEvent::AgentStop.fallback("x".into(), true)),
            None
        );
    }

    #[test]
    fn the_last_message_is_read_from_copilots_events() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        std::fs::write(
            &path,
            [
                json!({"type": "user.message", "data": {"content": "Do it"}}).to_string(),
                json!({"type": "assistant.message", "data": {"content": "First"}}).to_string(),
                "not json".to_owned(),
                json!({"type": "assistant.message", "data": {"content": "Shall I go on?"}})
                    .to_string(),
                json!({"type": "assistant.message", "data": {"content": ""}}).to_string(),
            ]
            .join("\n"),
        )
        .unwrap();
        assert_eq!(
            last_message(path.to_str().unwrap()).as_deref(),
            Some("Shall I go on?")
        );
    }
}
