//! One-use grants on the socket (docs/protocol.md, "once_grant", "use_once_grant"): Claude
//! Code's auto mode denied a call, a person allowed it once, and the retried call may pass,
//! once.

use crate::harness::*;
use serde_json::{json, Value};

/// An ask as `askrelay hook claude-code` sends on PermissionDenied: Allow once or Deny, with
/// the session, the call's key and the tool as scope labels.
fn denied_ask(request_id: &str, session: &str, call: &str) -> Value {
    json!({"op": "ask", "request_id": request_id,
        "scope": {"session": session, "call": call, "tool": "Bash"},
        "questions": [{"id": "permission", "header": "Claude Code",
            "question": "Auto mode blocked Bash. Allow this call once?",
            "options": [{"label": "Allow once"}, {"label": "Deny"}],
            "multiSelect": false}]})
}

/// Asks, answers with `label` from the terminal, and waits for the answer.
async fn answered(app: &App, request_id: &str, session: &str, call: &str, label: &str) {
    let mut c = app.client().await;
    c.send_json(&denied_ask(request_id, session, call))
        .await
        .unwrap();
    expect_event(&mut c, "accepted").await;
    let r = app.answer(request_id, "permission", &[label]).await;
    assert_eq!(r["event"], "answer_accepted", "{r}");
    expect_event(&mut c, "answered").await;
}

async fn call(app: &App, op: Value) -> Value {
    app.client().await.call_json(&op).await.unwrap()
}

#[tokio::test]
async fn an_allow_once_mints_one_grant_that_one_call_uses_once() {
    let app = App::start().await;
    answered(&app, "denied-1", "s-1", "k-1", "Allow once").await;

    let minted = call(&app, json!({"op": "once_grant", "request_id": "denied-1"})).await;
    assert_eq!(minted["event"], "once_grant", "{minted}");
    let g = &minted["grant"];
    assert!(g["id"].as_str().unwrap().starts_with("og-"), "{g}");
    assert_eq!(
        (&g["session"], &g["call"], &g["tool"], &g["request_id"]),
        (
            &json!("s-1"),
            &json!("k-1"),
            &json!("Bash"),
            &json!("denied-1")
        )
    );
    assert!(
        g["approver"].as_str().unwrap().contains("via terminal"),
        "{g}"
    );
    let life = g["ends_at_ms"].as_i64().unwrap() - g["created_at_ms"].as_i64().unwrap();
    assert!((1..=600_000).contains(&life), "about ten minutes: {g}");
    // One grant per request.
    let again = call(&app, json!({"op": "once_grant", "request_id": "denied-1"})).await;
    assert_eq!(again["code"], "CONFLICT", "{again}");

    // Another call, another session: no grant, nothing used.
    for (session, key) in [("s-1", "k-2"), ("s-2", "k-1")] {
        let r = call(
            &app,
            json!({"op": "use_once_grant", "session": session, "call": key}),
        )
        .await;
        assert_eq!(r, json!({"event": "once_grant_used", "grant": null}));
    }
    // Its own call: once.
    let used = call(
        &app,
        json!({"op": "use_once_grant", "session": "s-1", "call": "k-1"}),
    )
    .await;
    assert_eq!(used["event"], "once_grant_used", "{used}");
    assert_eq!(used["grant"]["id"], g["id"], "{used}");
    assert!(used["grant"]["used_at_ms"].is_i64(), "{used}");
    let twice = call(
        &app,
        json!({"op": "use_once_grant", "session": "s-1", "call": "k-1"}),
    )
    .await;
    assert_eq!(twice["grant"], Value::Null, "{twice}");

    // Audited: the mint (who allowed it), the refused second mint, the use.
    let rows = app.store().audit_rows(None).await.unwrap();
    let ours: Vec<(&str, bool)> = rows
        .iter()
        .filter(|r| r.action.starts_with("once_grant"))
        .map(|r| (r.action.as_str(), r.accepted))
        .collect();
    assert_eq!(
        ours,
        [
            ("once_grant", true),
            ("once_grant", false),
            ("once_grant_used", true)
        ]
    );
    let mint = rows.iter().find(|r| r.action == "once_grant").unwrap();
    assert!(
        mint.actor.as_deref().unwrap_or("").contains("via terminal"),
        "{mint:?}"
    );
}

#[tokio::test]
async fn no_grant_without_an_allow_once() {
    let app = App::start().await;
    // Denied: the denial stands, and the audit says who denied.
    answered(&app, "denied-no", "s-1", "k-1", "Deny").await;
    let r = call(&app, json!({"op": "once_grant", "request_id": "denied-no"})).await;
    assert_eq!(r["code"], "CONFLICT", "{r}");
    assert!(
        r["message"]
            .as_str()
            .unwrap()
            .contains("was not answered \"Allow once\""),
        "{r}"
    );
    let rows = app.store().audit_rows(None).await.unwrap();
    assert!(
        rows.iter()
            .any(|r| r.action == "answer" && r.accepted && r.actor.is_some()),
        "{rows:?}"
    );
    assert!(
        rows.iter().any(|r| r.action == "once_grant" && !r.accepted),
        "{rows:?}"
    );

    // Still waiting for an answer: no grant either.
    let mut c = app.client().await;
    c.send_json(&denied_ask("denied-open", "s-1", "k-3"))
        .await
        .unwrap();
    expect_event(&mut c, "accepted").await;
    let r = call(
        &app,
        json!({"op": "once_grant", "request_id": "denied-open"}),
    )
    .await;
    assert_eq!(r["code"], "CONFLICT", "{r}");
    assert!(r["message"].as_str().unwrap().contains("is pending"), "{r}");

    // Without the session and call labels, there is nothing to bind a grant to.
    let mut c = app.client().await;
    let mut line = denied_ask("denied-bare", "s", "k");
    line["scope"] = json!({});
    c.send_json(&line).await.unwrap();
    expect_event(&mut c, "accepted").await;
    app.answer("denied-bare", "permission", &["Allow once"])
        .await;
    expect_event(&mut c, "answered").await;
    let r = call(
        &app,
        json!({"op": "once_grant", "request_id": "denied-bare"}),
    )
    .await;
    assert_eq!(r["code"], "CONFLICT", "{r}");

    // Nothing was minted, so nothing is used.
    let r = call(
        &app,
        json!({"op": "use_once_grant", "session": "s-1", "call": "k-1"}),
    )
    .await;
    assert_eq!(r["grant"], Value::Null, "{r}");
}

#[tokio::test]
async fn the_ops_say_what_is_missing() {
    let app = App::start().await;
    let r = call(&app, json!({"op": "once_grant"})).await;
    assert_eq!(
        (r["code"].as_str(), r["message"].as_str()),
        (Some("INVALID_REQUEST"), Some("request_id: is required"))
    );
    let r = call(&app, json!({"op": "once_grant", "request_id": "nope"})).await;
    assert_eq!(r["code"], "INVALID_REQUEST", "{r}");
    let r = call(&app, json!({"op": "use_once_grant", "session": "s"})).await;
    assert_eq!(r["message"], "call: is required (the call's key)", "{r}");
    let r = call(
        &app,
        json!({"op": "use_once_grant", "session": "s", "call": "k", "tool": "Bash"}),
    )
    .await;
    assert!(
        r["message"]
            .as_str()
            .unwrap()
            .starts_with("tool: unknown field"),
        "{r}"
    );
}

#[tokio::test]
async fn only_the_asker_mints_or_uses_a_grant_even_against_an_operator() {
    use askrelay::domain::{LocalUser, Peer};
    let app = App::start().await;
    answered(&app, "denied-mine", "s-1", "k-1", "Allow once").await;
    let me = app
        .store()
        .by_id("denied-mine")
        .await
        .unwrap()
        .unwrap()
        .peer;
    let other = LocalUser {
        peer: Peer {
            uid: Some(me.uid.unwrap() + 4242),
            pid: None,
        },
        name: Some("mallory".into()),
        operator: true,
    };
    let e = app
        .hub()
        .mint_once_grant("denied-mine", &other)
        .await
        .unwrap_err();
    assert_eq!(e.code, askrelay::domain::ErrorCode::Forbidden, "{e:?}");
    // Minted by its asker, it is still not another uid's to use.
    let minted = call(
        &app,
        json!({"op": "once_grant", "request_id": "denied-mine"}),
    )
    .await;
    assert_eq!(minted["event"], "once_grant", "{minted}");
    assert_eq!(
        app.hub()
            .use_once_grant("s-1", "k-1", &other)
            .await
            .unwrap(),
        None
    );
    let used = call(
        &app,
        json!({"op": "use_once_grant", "session": "s-1", "call": "k-1"}),
    )
    .await;
    assert_eq!(used["grant"]["id"], minted["grant"]["id"], "{used}");
    let refused = app
        .store()
        .audit_rows(None)
        .await
        .unwrap()
        .into_iter()
        .find(|r| r.action == "once_grant" && !r.accepted)
        .expect("the refused mint is audited");
    assert!(
        refused
            .detail
            .as_deref()
            .unwrap_or("")
            .contains("not asked by this user"),
        "{refused:?}"
    );
}
