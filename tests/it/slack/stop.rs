//! Replies at the end of a turn in Slack (`stop_replies`): a real `askrelay hook claude-code`
//! given a `Stop` event posts the agent's last message with Done and Reply…; Reply… opens a
//! form, and its text reaches the hook as the reason to keep working. A route without
//! `stop_replies` ends the turn at once.

use super::*;
use crate::approvals::{finish, start};
use askrelay::config::Route;
use askrelay_testkit::slack::ViewValues;
use serde_json::{json, Value};
use std::collections::BTreeMap;

fn stop_event() -> String {
    json!({
        "session_id": "sess-7",
        "transcript_path": "/nonexistent/sess-7.jsonl",
        "cwd": "/tmp",
        "permission_mode": "default",
        "hook_event_name": "Stop",
        "stop_hook_active": false,
        "last_assistant_message": "Migrated prod. Shall I also migrate the staging DB?"
    })
    .to_string()
}

/// Stop requests go to a Slack route; with `stop_replies` when `replies`.
fn turns(replies: bool) -> impl FnOnce(&mut Config) {
    move |c: &mut Config| {
        let mut r = Route::new("turns", 0);
        r.channel_id = None;
        r.matches = BTreeMap::from([("tool".into(), "Stop".into())]);
        r.slack_channel_id = Some(DEFAULT_CHANNEL.into());
        r.stop_replies = Some(replies);
        c.routes.push(r);
    }
}

async fn hook(t: &Slack) -> tokio::process::Child {
    let bin = Bin::new().env("ASKRELAY_SOCKET_PATH", t.app.socket().display());
    start(&bin, &["hook", "claude-code"], &stop_event()).await
}

#[tokio::test]
async fn a_reply_in_slack_keeps_the_agent_working() {
    let t = Slack::start_with(turns(true)).await;
    let child = hook(&t).await;
    let m = t.message(0).await;
    assert!(
        m.to_string().contains("staging DB"),
        "the last message: {m}"
    );
    let els = elements(&m);
    let labels: Vec<&str> = els
        .iter()
        .filter_map(|(_, e)| e["text"]["text"].as_str())
        .collect();
    assert_eq!(labels, ["Done", "Reply…"], "{m}");
    assert_eq!(els[1].1["style"], "primary", "{m}");
    let sent = t.press(&alice(), &m, "Reply…").await;
    within("the ack", t.s.wait_ack(sent.envelope_id())).await;
    let view = t.s.views().remove(0);
    assert!(
        view.value.to_string().contains("Your reply"),
        "{}",
        view.value
    );
    let values = ViewValues::new().text("answer", "text", Some("Yes, staging too, then stop"));
    let submitted = t.s.submit_view(&alice(), &view.id, &values).await;
    within("the form's ack", t.s.wait_ack(submitted.envelope_id())).await;
    let (code, out, err) = finish(child).await;
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(
        v,
        json!({"decision": "block", "reason": "Yes, staging too, then stop"})
    );
    t.outcome_of(&m).await;
    t.s.assert_no_violations();
}

#[tokio::test]
async fn a_route_without_stop_replies_ends_the_turn_at_once() {
    let t = Slack::start_with(turns(false)).await;
    let (code, out, err) = finish(hook(&t).await).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "", "nothing: the turn ends; {err}");
    assert!(t.s.calls("chat.postMessage").is_empty());
}
