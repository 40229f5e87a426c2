//! On-call approvals: expiry policies on every surface, reminders, escalation copies and DMs.
//! Deadlines are a second or two, and every test waits on the event that follows them.

use crate::harness::*;
use askrelay::config::{ExpiryRule, OnExpire, Route, Snowflake};
use serde_json::{json, Value};
use std::collections::BTreeMap;

fn expire_after(secs: u64, on_expire: OnExpire) -> ExpiryRule {
    ExpiryRule {
        after_secs: Some(secs),
        on_expire,
    }
}

fn route(name: &str, project: &str, channel: u64) -> Route {
    Route {
        name: name.into(),
        matches: BTreeMap::from([("project".into(), project.into())]),
        channel_id: Snowflake(channel),
        allowed_user_ids: None,
        allowed_role_ids: None,
        mention_role_ids: None,
        mention_user_ids: None,
        expiry: None,
        expire_after_secs: None,
        on_expire: None,
        terminal_answers: None,
    }
}

/// The `answered` result's labels of the first question.
fn selected(ev: &Value) -> Vec<String> {
    ev["result"]["answers"][0]["selected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn the_default_channel_expires_with_fail() {
    let app = App::discord_with(|c| c.expiry = expire_after(1, OnExpire::Fail)).await;
    let (mut c, acc) = app.ask("fail", &yes_no("q")).await;
    assert_eq!(acc["expires_in_secs"], 1, "{acc}");
    assert_eq!(acc["on_expire"], "fail", "{acc}");
    let ev = recv(&mut c, "the request to expire").await;
    assert_eq!(ev["code"], "EXPIRED", "{ev}");
    assert!(
        ev["message"]
            .as_str()
            .unwrap()
            .contains("nobody answered within 1s"),
        "{ev}"
    );
    let msg = app.messages(CHANNEL).remove(0);
    let edit = app.edit_of(&msg).await;
    assert!(edit.to_string().contains("Expired"), "{edit}");
    assert_eq!(edit["components"], json!([]));
    let audit = app.store().audit_rows(None).await.unwrap();
    assert!(
        audit
            .iter()
            .any(|r| r.action == "expired" && r.source == "policy" && r.accepted),
        "{audit:?}"
    );
    app.assert_payloads_valid();
}

#[tokio::test]
async fn recommended_answers_with_the_recommended_option_as_the_policy() {
    let app = App::discord_with(|c| c.expiry = expire_after(1, OnExpire::Recommended)).await;
    let (mut c, _) = app.ask("rec", &yes_no("q")).await;
    let ev = recv(&mut c, "the policy's answer").await;
    assert_eq!(ev["event"], "answered", "{ev}");
    assert_eq!(
        ev["result"].to_string(),
        r#"{"answers":[{"id":"q","selected":["Yes, delete them (Recommended)"]}]}"#
    );
    // The message says the policy chose, and what.
    let msg = app.messages(CHANNEL).remove(0);
    let edit = app.edit_of(&msg).await.to_string();
    assert!(
        edit.contains("No answer within 1s: defaulted to “Yes, delete them (Recommended)”"),
        "{edit}"
    );
    // Recorded as answered by the policy, and audited.
    let req = app.hub().request("rec").await.unwrap();
    let a = req.answers[0].as_ref().unwrap();
    assert_eq!(a.actor.via, askrelay::core::Via::Policy);
    let audit = app.store().audit_rows(Some(req.key)).await.unwrap();
    assert!(
        audit
            .iter()
            .any(|r| r.action == "answer" && r.source == "policy" && r.accepted),
        "{audit:?}"
    );
    app.assert_payloads_valid();
}

#[tokio::test]
async fn a_route_selects_its_label_and_falls_back_to_fail_without_it() {
    let app = App::discord_with(|c| {
        let mut r = route("deny", "infra", CHANNEL);
        r.expiry = Some(expire_after(1, OnExpire::Select("No, keep them".into())));
        c.routes.push(r);
    })
    .await;
    let mut line = ask_line("sel", &yes_no("q"));
    line["scope"] = json!({"project": "infra"});
    let mut c = app.client().await;
    c.send_json(&line).await.unwrap();
    expect_event(&mut c, "accepted").await;
    let ev = recv(&mut c, "the policy's answer").await;
    assert_eq!(ev["event"], "answered", "{ev}");
    assert_eq!(selected(&ev), ["No, keep them"]);

    // A question without that label: the agent gets EXPIRED, and the message says why.
    let mut other = ask_line(
        "nolabel",
        &json!({"questions": [{
            "id": "q", "question": "Which?", "options": [{"label": "A"}, {"label": "B"}]
        }]}),
    );
    other["scope"] = json!({"project": "infra"});
    let mut c2 = app.client().await;
    c2.send_json(&other).await.unwrap();
    expect_event(&mut c2, "accepted").await;
    let ev = recv(&mut c2, "the request to expire").await;
    assert_eq!(ev["code"], "EXPIRED", "{ev}");
    assert!(
        ev["message"]
            .as_str()
            .unwrap()
            .contains("select \"No, keep them\""),
        "{ev}"
    );
    app.assert_payloads_valid();
}

#[tokio::test]
async fn the_terminal_expires_too() {
    let app = App::start_with(|c| c.expiry = expire_after(1, OnExpire::Recommended)).await;
    let (mut c, acc) = app.ask("term", &yes_no("q")).await;
    assert_eq!(acc["answerer"], "terminal");
    assert_eq!(acc["expires_in_secs"], 1, "{acc}");
    let ev = recv(&mut c, "the policy's answer").await;
    assert_eq!(selected(&ev), ["Yes, delete them (Recommended)"]);

    // A free-text question has nothing to default to.
    let (mut c, _) = app
        .ask(
            "free",
            &json!({"questions": [{"id": "why", "question": "Why?"}]}),
        )
        .await;
    let ev = recv(&mut c, "the request to expire").await;
    assert_eq!(ev["code"], "EXPIRED", "{ev}");
}

#[tokio::test]
async fn an_expiry_survives_a_restart_and_a_config_change() {
    let mut app = App::start_with(|c| c.expiry = expire_after(2, OnExpire::Recommended)).await;
    let (c, _) = app.ask("restart", &yes_no("q")).await;
    drop(c);
    // The deadline is stored with the request: a config without [expiry] does not move it.
    app.config.expiry = ExpiryRule::default();
    app.restart().await;
    let mut c = app.client().await;
    c.send_json(&ask_line("restart", &yes_no("q")))
        .await
        .unwrap();
    let mut ev = recv(&mut c, "the re-attach").await;
    if ev["event"] == "accepted" {
        ev = recv(&mut c, "the policy's answer").await;
    }
    assert_eq!(ev["event"], "answered", "{ev}");
    assert_eq!(selected(&ev), ["Yes, delete them (Recommended)"]);
}

#[tokio::test]
async fn a_person_who_answers_first_beats_the_policy() {
    let app = App::start_with(|c| c.expiry = expire_after(2, OnExpire::Recommended)).await;
    let (mut c, _) = app.ask("race", &yes_no("q")).await;
    let reply = app.answer("race", "q", &["No, keep them"]).await;
    assert_eq!(reply["event"], "answer_accepted", "{reply}");
    let ev = recv(&mut c, "the person's answer").await;
    assert_eq!(selected(&ev), ["No, keep them"]);
    // The deadline left the queue with the request: nothing is settled after it.
    let req = app.hub().request("race").await.unwrap();
    assert_eq!(
        req.answers[0].as_ref().unwrap().actor.via,
        askrelay::core::Via::Terminal
    );
}
