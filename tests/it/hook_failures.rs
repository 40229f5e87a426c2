//! Every failure of `askrelay hook` answers in the event's own shape (issue 40, item 1): bad
//! --config, no socket, a daemon that is down, an event that is not JSON; with and without
//! --fail-closed.

use crate::harness::*;
use serde_json::{json, Value};
use std::process::Stdio;
use tokio::io::AsyncWriteExt;

/// How the hook fails.
#[derive(Debug, Clone, Copy)]
enum Failure {
    BadConfig,
    NoSocket,
    DaemonDown,
    BadJson,
}

const FAILURES: [Failure; 4] = [
    Failure::BadConfig,
    Failure::NoSocket,
    Failure::DaemonDown,
    Failure::BadJson,
];

fn event(name: &str, tool: &str) -> Value {
    let input = if tool == "AskUserQuestion" {
        json!({"questions": [{"question": "Which?", "header": "Pick",
            "options": [{"label": "a", "description": "A"}, {"label": "b", "description": "B"}],
            "multiSelect": false}]})
    } else {
        json!({"command": "ls"})
    };
    json!({"session_id": "s", "cwd": "/tmp", "permission_mode": "default",
        "hook_event_name": name, "tool_name": tool, "tool_input": input,
        "tool_use_id": "toolu_hf"})
}

/// Runs the hook for `agent` with `stdin`, failing as `failure` says; its stdout.
async fn run(agent: &str, fail_closed: bool, failure: Failure, ev: &Value) -> String {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("askrelay.sock");
    let mut stdin = ev.to_string();
    let mut args = vec![];
    let config = dir.path().join("bad.toml");
    match failure {
        Failure::BadConfig => {
            std::fs::write(&config, "this is [not toml").unwrap();
            args.push("--config".to_owned());
            args.push(config.display().to_string());
        }
        Failure::NoSocket => {}
        Failure::DaemonDown => {
            // A socket file nobody listens on: connection refused.
            drop(std::os::unix::net::UnixListener::bind(&socket).unwrap());
        }
        Failure::BadJson => {
            // The event's name is readable; the JSON is not.
            stdin.truncate(stdin.len() - 3);
        }
    }
    args.extend(["hook".to_owned(), agent.to_owned()]);
    if fail_closed {
        args.push("--fail-closed".to_owned());
    }
    let bin = Bin::new().env("ASKRELAY_SOCKET_PATH", socket.display());
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut child = bin.cmd(&refs).stdin(Stdio::piped()).spawn().unwrap();
    let mut pipe = child.stdin.take().unwrap();
    pipe.write_all(stdin.as_bytes()).await.unwrap();
    drop(pipe);
    let out = within("the hook to exit", child.wait_with_output())
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{failure:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// The one JSON line on stdout, or None when there is nothing.
fn answer(stdout: &str) -> Option<Value> {
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines.len() <= 1, "at most one line: {stdout:?}");
    lines.first().map(|l| serde_json::from_str(l).unwrap())
}

#[tokio::test]
async fn a_failing_pre_tool_use_call_asks_or_denies_as_pre_tool_use() {
    let ev = event("PreToolUse", "Bash");
    for failure in FAILURES {
        let out = answer(&run("claude-code", false, failure, &ev).await).expect("an answer");
        let d = &out["hookSpecificOutput"];
        assert_eq!(d["hookEventName"], "PreToolUse", "{failure:?}: {out}");
        assert_eq!(d["permissionDecision"], "ask", "{failure:?}: {out}");
        for agent in ["claude-code", "codex"] {
            let out = answer(&run(agent, true, failure, &ev).await).expect("an answer");
            let d = &out["hookSpecificOutput"];
            assert_eq!(
                d["hookEventName"], "PreToolUse",
                "{agent} {failure:?}: {out}"
            );
            assert_eq!(
                d["permissionDecision"], "deny",
                "{agent} {failure:?}: {out}"
            );
        }
        // Codex, open: nothing (Codex's own approval policy).
        assert_eq!(answer(&run("codex", false, failure, &ev).await), None);
    }
}

#[tokio::test]
async fn a_failing_permission_request_answers_nothing_or_denies_as_permission_request() {
    for tool in ["Bash", "AskUserQuestion"] {
        let ev = event("PermissionRequest", tool);
        for failure in FAILURES {
            let out = run("claude-code", false, failure, &ev).await;
            assert_eq!(answer(&out), None, "{tool} {failure:?}");
            let out = answer(&run("claude-code", true, failure, &ev).await).expect("an answer");
            let d = &out["hookSpecificOutput"];
            assert_eq!(
                d["hookEventName"], "PermissionRequest",
                "{failure:?}: {out}"
            );
            assert_eq!(d["decision"]["behavior"], "deny", "{failure:?}: {out}");
            assert!(d["decision"]["message"]
                .as_str()
                .unwrap()
                .contains("--fail-closed"));
            assert!(d.get("permissionDecision").is_none(), "{out}");
        }
    }
}

#[tokio::test]
async fn a_failing_pre_tool_use_question_answers_nothing_or_denies() {
    let ev = event("PreToolUse", "AskUserQuestion");
    for failure in FAILURES {
        assert_eq!(answer(&run("claude-code", false, failure, &ev).await), None);
        let out = answer(&run("claude-code", true, failure, &ev).await).expect("an answer");
        assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "deny");
    }
}

#[tokio::test]
async fn an_unreadable_or_unknown_event_gets_nothing_even_fail_closed() {
    for fail_closed in [false, true] {
        for agent in ["claude-code", "codex"] {
            let out = run(
                agent,
                fail_closed,
                Failure::NoSocket,
                &json!("not an event"),
            )
            .await;
            assert_eq!(answer(&out), None, "{agent} {fail_closed}");
            let ev = event("PostToolUse", "Bash");
            let out = run(agent, fail_closed, Failure::NoSocket, &ev).await;
            assert_eq!(answer(&out), None, "{agent} {fail_closed}");
        }
    }
}
