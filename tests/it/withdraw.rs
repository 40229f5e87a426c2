//! `withdraw` on the socket (docs/protocol.md, "withdraw"): the agent went on without
//! askrelay's answer, so its pending requests end as cancelled, "withdrawn: …".

use crate::harness::*;
use serde_json::{json, Value};
use tokio::io::AsyncBufReadExt;

fn scoped(request_id: &str, session: &str, call: &str) -> Value {
    let mut line = ask_line(request_id, &yes_no("q"));
    line["scope"] = json!({"session": session, "call": call});
    line
}

#[tokio::test]
async fn withdraw_by_call_ends_only_that_call_and_names_the_terminal() {
    let app = App::start().await;
    let mut a = app.client().await;
    a.send_json(&scoped("call-a", "s1", "k1")).await.unwrap();
    expect_event(&mut a, "accepted").await;
    let mut b = app.client().await;
    b.send_json(&scoped("call-b", "s1", "k2")).await.unwrap();
    expect_event(&mut b, "accepted").await;

    let mut other = app.client().await;
    let reply = other
        .call_json(&json!({"op": "withdraw", "reason": "answered_in_terminal",
                           "session": "s1", "call": "k1", "event": "PostToolUse"}))
        .await
        .unwrap();
    assert_eq!(reply["event"], "withdrawn", "{reply}");
    assert_eq!(reply["ended"], 1, "{reply}");
    assert_eq!(reply["request_ids"], json!(["call-a"]));

    let ev = expect_event(&mut a, "error").await;
    assert_eq!(ev["code"], "ABORTED", "{ev}");
    assert_eq!(
        ev["message"],
        "the request was cancelled: withdrawn: answered in the terminal (PostToolUse)"
    );
    // A late answer decides nothing, and is audited as refused.
    let reply = other
        .call_json(
            &json!({"op": "answer", "request_id": "call-a", "question": "q",
                           "select": ["No, keep them"]}),
        )
        .await
        .unwrap();
    assert_eq!(reply["code"], "CONFLICT", "{reply}");
    let audit = app.store().audit_rows(None).await.unwrap();
    let cancel = audit
        .iter()
        .find(|r| {
            r.detail
                .as_deref()
                .is_some_and(|d| d.contains("answered in the terminal"))
        })
        .unwrap_or_else(|| panic!("{audit:?}"));
    assert!(
        cancel.actor.as_deref().unwrap_or("").starts_with("uid:"),
        "{cancel:?}"
    );
    assert!(audit.iter().any(|r| r.action == "answer" && !r.accepted));

    // The other call is still pending; a session-wide withdrawal ends it.
    let reply = other
        .call_json(
            &json!({"op": "withdraw", "reason": "agent_moved_on", "session": "s1",
                           "event": "Stop"}),
        )
        .await
        .unwrap();
    assert_eq!(reply["request_ids"], json!(["call-b"]), "{reply}");
    let ev = expect_event(&mut b, "error").await;
    assert_eq!(
        ev["message"],
        "the request was cancelled: withdrawn: the agent moved on (Stop)"
    );
}

#[tokio::test]
async fn withdraw_of_another_session_or_an_unknown_reason_ends_nothing() {
    let app = App::start().await;
    let mut a = app.client().await;
    a.send_json(&scoped("keep", "s1", "k1")).await.unwrap();
    expect_event(&mut a, "accepted").await;
    let mut other = app.client().await;
    let reply = other
        .call_json(&json!({"op": "withdraw", "reason": "hook_killed", "session": "s2"}))
        .await
        .unwrap();
    assert_eq!(reply["ended"], 0, "{reply}");
    let reply = other
        .call_json(&json!({"op": "withdraw", "reason": "bored", "session": "s1"}))
        .await
        .unwrap();
    assert_eq!(reply["event"], "error", "{reply}");
    let reply = other
        .call_json(&json!({"op": "pending", "request_id": "keep"}))
        .await
        .unwrap();
    assert_eq!(reply["requests"][0]["request_id"], "keep", "{reply}");
}

/// What Codex 0.171.0 sends for one shell call that its approval policy asks about, as seen in
/// its interactive UI (`agents::codex_tui`): the PermissionRequest carries the model's
/// justification as `description`; the PostToolUse after the person allowed it in the terminal
/// carries the command alone.
fn codex_event(event: &str, tool_input: Value) -> String {
    json!({"session_id": "01a24918-b1d2-7da1-b44d-4de21f342f15",
           "turn_id": "01a24918-b220-7ec0-b7f3-595f50a6e1cd",
           "transcript_path": "/home/dev/.codex/sessions/rollout.jsonl",
           "cwd": "/home/dev/proj", "hook_event_name": event, "model": "gpt-test",
           "permission_mode": "default", "tool_name": "Bash", "tool_input": tool_input})
    .to_string()
}

#[tokio::test]
async fn codexs_post_tool_use_withdraws_the_question_of_its_permission_request() {
    // A client that goes away is cancelled only after the grace: longer than any wait here.
    let app = App::start_with(|c| c.cancel_grace_secs = 3600).await;
    let bin = Bin::new().env("ASKRELAY_SOCKET_PATH", app.socket().display());
    let asked = codex_event(
        "PermissionRequest",
        json!({"command": "touch /home/dev/proj/marker", "description": "Create the marker"}),
    );
    let mut hook = crate::approvals::start(&bin, &["hook", "codex"], &asked).await;
    let mut err = tokio::io::BufReader::new(hook.stderr.take().unwrap()).lines();
    within("the hook to ask", async {
        while let Some(line) = err.next_line().await.unwrap() {
            if line.contains("is waiting for an answer") {
                return;
            }
        }
        panic!("the hook ended without asking");
    })
    .await;
    let reply = app
        .client()
        .await
        .call_json(&json!({"op": "pending"}))
        .await
        .unwrap();
    let id = reply["requests"][0]["request_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{reply}"))
        .to_owned();
    // Another call of the session ends nothing.
    let other = codex_event("PostToolUse", json!({"command": "ls"}));
    let (code, out, _) =
        crate::approvals::finish(crate::approvals::start(&bin, &["hook", "codex"], &other).await)
            .await;
    assert_eq!((code, out.as_str()), (0, ""));
    assert!(app.hub().is_pending(&id));
    // The same call, run: withdrawn, though its input has no description.
    let ran = codex_event(
        "PostToolUse",
        json!({"command": "touch /home/dev/proj/marker"}),
    );
    let (code, out, err) =
        crate::approvals::finish(crate::approvals::start(&bin, &["hook", "codex"], &ran).await)
            .await;
    assert_eq!((code, out.as_str()), (0, ""), "{err}");
    assert!(err.contains("withdrew 1 request"), "{err}");
    app.wait_ended(&id).await;
    let status = within("the asking hook to exit", hook.wait())
        .await
        .unwrap();
    assert!(status.success(), "{status}");
    let audit = app.store().audit_rows(None).await.unwrap();
    assert!(
        audit.iter().any(|r| r
            .detail
            .as_deref()
            .is_some_and(|d| d.contains("withdrawn: answered in the terminal (PostToolUse)"))),
        "{audit:?}"
    );
}
