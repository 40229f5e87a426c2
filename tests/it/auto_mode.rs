//! Claude Code's auto mode through the real `askrelay hook claude-code` process, the daemon and
//! the Discord stand-in (docs/approvals.md, "Auto mode"): a `PermissionDenied` event is asked
//! about; "Allow once" answers `retry: true` and mints a one-use grant that the retried call's
//! `PreToolUse` (`--once-grants-only`) uses, once. The same with the real CLIs:
//! `agents::claude_code_auto_mode_*`.

use crate::approvals::{finish, start};
use crate::harness::*;
use serde_json::{json, Value};

fn bin_for(app: &App) -> Bin {
    Bin::new().env("ASKRELAY_SOCKET_PATH", app.socket().display())
}

const COMMAND: &str = "touch /srv/shared/marker";

fn event(name: &str, id: &str, command: &str, mode: &str) -> String {
    json!({
        "session_id": "sess-42",
        "transcript_path": "/home/dev/.claude/projects/x/sess-42.jsonl",
        "cwd": "/work/shop",
        "permission_mode": mode,
        "hook_event_name": name,
        "tool_name": "Bash",
        "tool_input": {"command": command, "description": "Create the marker"},
        "tool_use_id": id,
        "reason": "[Modify Shared Resources]"
    })
    .to_string()
}

fn denied(id: &str) -> String {
    event("PermissionDenied", id, COMMAND, "auto")
}

/// Runs the one-use-grant check on a retried call; returns stdout.
async fn retried(bin: &Bin, id: &str, command: &str, mode: &str) -> String {
    let hook = start(
        bin,
        &["hook", "claude-code", "--once-grants-only"],
        &event("PreToolUse", id, command, mode),
    )
    .await;
    let (code, out, _) = finish(hook).await;
    assert_eq!(code, 0);
    out
}

#[tokio::test]
async fn allow_once_answers_retry_and_the_retried_call_passes_once() {
    let app = App::discord().await;
    let bin = bin_for(&app);
    let hook = start(&bin, &["hook", "claude-code"], &denied("toolu_01A")).await;
    let m = within("the question to be posted", async {
        let mut rx = app.standin().subscribe();
        loop {
            if let Some(m) = app.messages(CHANNEL).into_iter().next() {
                return m;
            }
            let _ = rx.changed().await;
        }
    })
    .await;
    let embed = &m["embeds"][0];
    assert_eq!(
        shown(embed["description"].as_str().unwrap()),
        "Auto mode blocked Bash. Allow this call once?\nAuto mode's reason: [Modify Shared \
         Resources]\n\nCreate the marker"
    );
    assert!(
        embed["footer"]["text"]
            .as_str()
            .unwrap()
            .starts_with("request claude-code-denied-toolu_01A "),
        "{embed}"
    );
    assert_eq!(m["content"], format!("**Context**\n```\n{COMMAND}\n```"));
    let labels: Vec<String> = controls(&m).into_iter().map(|(_, l)| l).collect();
    assert_eq!(labels, ["Allow once", "Deny", "Other…"]);

    // Nothing is granted while the person has not answered.
    assert_eq!(retried(&bin, "toolu_early", COMMAND, "auto").await, "");
    final_state(&app.press(&m, &alice(), "Allow once").await);
    let (code, out, err) = finish(hook).await;
    assert_eq!(code, 0);
    assert_eq!(
        out.trim_end(),
        r#"{"hookSpecificOutput":{"hookEventName":"PermissionDenied","retry":true}}"#,
        "{err}"
    );
    assert!(err.contains("allowed once by alice on Discord"), "{err}");

    // Another command of the session: not this grant.
    assert_eq!(
        retried(&bin, "toolu_01B", "touch /srv/shared/other", "auto").await,
        ""
    );
    // The retried call (a new tool_use_id, the same input): allowed, once.
    let out = retried(&bin, "toolu_01C", COMMAND, "auto").await;
    let v: Value = serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    let d = &v["hookSpecificOutput"];
    assert_eq!(
        (&d["hookEventName"], &d["permissionDecision"]),
        (&json!("PreToolUse"), &json!("allow")),
        "{v}"
    );
    let reason = d["permissionDecisionReason"].as_str().unwrap();
    assert!(
        reason.starts_with("Allowed once by alice (Discord user ")
            && reason.contains("after auto mode's denial (one-use grant og-"),
        "{reason}"
    );
    assert_eq!(retried(&bin, "toolu_01D", COMMAND, "auto").await, "");
    app.assert_payloads_valid();
}

#[tokio::test]
async fn a_deny_prints_nothing_and_grants_nothing() {
    let app = App::discord().await;
    let bin = bin_for(&app);
    let hook = start(&bin, &["hook", "claude-code"], &denied("toolu_02A")).await;
    let m = within("the question to be posted", async {
        let mut rx = app.standin().subscribe();
        loop {
            if let Some(m) = app.messages(CHANNEL).into_iter().next() {
                return m;
            }
            let _ = rx.changed().await;
        }
    })
    .await;
    final_state(&app.press(&m, &alice(), "Deny").await);
    let (code, out, err) = finish(hook).await;
    assert_eq!((code, out.as_str()), (0, ""), "{err}");
    assert!(
        err.contains("Denied by alice on Discord; auto mode's denial stands"),
        "{err}"
    );
    assert_eq!(retried(&bin, "toolu_02B", COMMAND, "auto").await, "");
}

#[tokio::test]
async fn without_the_daemon_the_denial_stands_and_no_call_is_blocked() {
    let mut app = App::discord().await;
    app.stop().await;
    let bin = bin_for(&app);
    // Failing closed changes nothing here: printing nothing already is the deny.
    for args in [
        &["hook", "claude-code"][..],
        &["hook", "claude-code", "--fail-closed"][..],
    ] {
        let (code, out, err) = finish(start(&bin, args, &denied("toolu_03A")).await).await;
        assert_eq!((code, out.as_str()), (0, ""), "{args:?}: {err}");
        assert!(err.contains("auto mode's denial stands"), "{err}");
    }
    // The grant check never blocks a call, and asks nobody: no decision.
    assert_eq!(retried(&bin, "toolu_03B", COMMAND, "auto").await, "");
    let hook = start(
        &bin,
        &["hook", "claude-code", "--once-grants-only", "--fail-closed"],
        &event("PreToolUse", "toolu_03C", COMMAND, "auto"),
    )
    .await;
    let (code, out, err) = finish(hook).await;
    assert_eq!((code, out.as_str()), (0, ""), "{err}");
    // Out of auto mode it does not even look: no grant can be waiting there.
    let (_, out, err) = finish(
        start(
            &bin,
            &["hook", "claude-code", "--once-grants-only"],
            &event("PreToolUse", "toolu_03D", COMMAND, "default"),
        )
        .await,
    )
    .await;
    assert_eq!((out.as_str(), err.as_str()), ("", ""));
}
