//! `withdraw` on the socket (docs/protocol.md, "withdraw"): the agent went on without
//! askrelay's answer, so its pending requests end as cancelled, "withdrawn: …".

use crate::harness::*;
use serde_json::{json, Value};

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
