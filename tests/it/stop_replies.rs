//! Replies at the end of a turn (docs/approvals.md, "Replies at the end of a turn"): a real
//! `askrelay hook claude-code` given a `Stop` event, against the daemon and the Discord
//! stand-in.

use crate::approvals::{finish, start};
use crate::harness::*;
use askrelay::config::Route;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use tokio::process::Child;

const LAST: &str = "Migrated prod. Shall I also migrate the staging DB?";

fn stop_event(active: bool) -> String {
    json!({
        "session_id": "sess-7",
        "transcript_path": "/nonexistent/sess-7.jsonl",
        "cwd": "/tmp",
        "permission_mode": "default",
        "hook_event_name": "Stop",
        "stop_hook_active": active,
        "last_assistant_message": LAST
    })
    .to_string()
}

/// A daemon whose Stop requests go to a route with `stop_replies`.
async fn app() -> App {
    App::discord_with(|c| {
        c.routes.push(Route {
            matches: BTreeMap::from([("tool".into(), "Stop".into())]),
            stop_replies: Some(true),
            ..Route::new("turns", CHANNEL)
        });
    })
    .await
}

async fn hook(app: &App, stdin: &str) -> Child {
    let bin = Bin::new().env("ASKRELAY_SOCKET_PATH", app.socket().display());
    start(&bin, &["hook", "claude-code"], stdin).await
}

async fn posted(app: &App) {
    within(
        "the end of the turn to be posted",
        app.standin().wait_for_request(|r| {
            r.method == "POST" && r.path.ends_with("/messages") && r.status == 200
        }),
    )
    .await;
}

#[tokio::test]
async fn a_reply_in_discord_blocks_the_stop_with_the_reply() {
    let app = app().await;
    let child = hook(&app, &stop_event(false)).await;
    posted(&app).await;
    let m = app.messages(CHANNEL).remove(0);
    let shown = serde_json::to_string(&m).unwrap();
    assert!(
        shown.contains("staging DB"),
        "the last message is shown: {shown}"
    );
    let cb = app.press(&m, &alice(), "Reply…").await;
    assert_eq!(cb["type"], 9, "a modal: {cb}");
    let modal = cb["data"]["custom_id"].as_str().unwrap().to_owned();
    final_state(
        &app.submit_modal(&m, &alice(), &modal, "Yes, staging too, then stop")
            .await,
    );
    let (code, out, err) = finish(child).await;
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(
        v,
        json!({"decision": "block", "reason": "Yes, staging too, then stop"})
    );
    app.assert_payloads_valid();
}

#[tokio::test]
async fn done_lets_the_turn_end() {
    let app = app().await;
    let child = hook(&app, &stop_event(true)).await;
    posted(&app).await;
    let m = app.messages(CHANNEL).remove(0);
    let shown = serde_json::to_string(&m).unwrap();
    assert!(shown.contains("finished its turn again"), "{shown}");
    final_state(&app.press(&m, &alice(), "Done").await);
    let (code, out, err) = finish(child).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "", "Done prints nothing: {err}");
}

#[tokio::test]
async fn a_route_without_stop_replies_ends_the_turn_at_once() {
    let app = App::discord().await;
    let (code, out, err) = finish(hook(&app, &stop_event(false)).await).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "", "nothing: the turn ends; {err}");
    assert_eq!(app.hub().pending_count(), 0);
}

/// The reply is an answer like any other: only the route's allowed people may give it, a
/// refusal is audited, and so is the reply, with its text and who gave it.
#[tokio::test]
async fn only_allowed_people_may_reply_and_the_reply_is_audited() {
    let app = App::discord_with(|c| {
        c.routes.push(Route {
            matches: BTreeMap::from([("tool".into(), "Stop".into())]),
            stop_replies: Some(true),
            allowed_user_ids: Some(vec![askrelay::config::Snowflake(alice().user_id)]),
            ..Route::new("turns", CHANNEL)
        });
    })
    .await;
    let child = hook(&app, &stop_event(false)).await;
    posted(&app).await;
    let m = app.messages(CHANNEL).remove(0);
    // bob is not on the route's allowlist: Reply… does not open the form for him.
    let cb = app.press(&m, &bob(), "Reply…").await;
    assert!(is_ephemeral(&cb), "refused, to bob alone: {cb}");
    assert_eq!(app.hub().pending_count(), 1, "still waiting");
    // Nor does a modal he submits anyway (a stale form, a forged interaction) count.
    let opened = app.press(&m, &alice(), "Reply…").await;
    let modal = opened["data"]["custom_id"].as_str().unwrap().to_owned();
    let cb = app.submit_modal(&m, &bob(), &modal, "rm -rf staging").await;
    assert!(is_ephemeral(&cb), "{cb}");
    assert_eq!(app.hub().pending_count(), 1, "still waiting");
    final_state(&app.submit_modal(&m, &alice(), &modal, "Staging too").await);
    let (code, out, err) = finish(child).await;
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["reason"], "Staging too");
    let audit = app.store().audit_rows(None).await.unwrap();
    let refused: Vec<_> = audit
        .iter()
        .filter(|r| !r.accepted && r.actor.as_deref().is_some_and(|a| a.contains("4343")))
        .collect();
    assert!(refused.len() >= 2, "bob's two tries are audited: {audit:?}");
    assert!(
        audit.iter().any(|r| r.accepted
            && r.actor.as_deref().is_some_and(|a| a.contains("4242"))
            && r.detail
                .as_deref()
                .is_some_and(|d| d.contains("Staging too"))),
        "alice's reply is audited with its text: {audit:?}"
    );
    assert!(
        !audit
            .iter()
            .any(|r| r.detail.as_deref().is_some_and(|d| d.contains("rm -rf")) && r.accepted),
        "{audit:?}"
    );
    app.assert_payloads_valid();
}
