//! On-call approvals: expiry policies on every surface, reminders, escalation copies and DMs.
//! Deadlines are a second or two, and every test waits on the event that follows them.

use crate::harness::*;
use askrelay::config::{EscalationStep, ExpiryRule, OnExpire, Route, Snowflake};
use serde_json::{json, Value};
use std::collections::BTreeMap;

fn expire_after(secs: u64, on_expire: OnExpire) -> ExpiryRule {
    ExpiryRule {
        after_secs: Some(secs),
        on_expire,
        approve_unattended: false,
    }
}

fn route(name: &str, project: &str, channel: u64) -> Route {
    Route {
        matches: BTreeMap::from([("project".into(), project.into())]),
        ..Route::new(name, channel)
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
    let edit = shown_body(&app.edit_of(&msg).await);
    assert!(
        edit.contains("No answer within 1s: defaulted to “Yes, delete them (Recommended)”"),
        "{edit}"
    );
    // Recorded as answered by the policy, and audited.
    let req = app.hub().request("rec").await.unwrap();
    let a = req.answers[0].as_ref().unwrap();
    assert_eq!(a.actor.via, askrelay::domain::Via::Policy);
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
        askrelay::domain::Via::Terminal
    );
}

const COPIES: u64 = 555;
const LEAD: u64 = 7777;

fn lead() -> askrelay_testkit::fixtures::Clicker {
    askrelay_testkit::fixtures::Clicker::new(LEAD, "lead", &[])
}

/// The POSTs that created messages in `channel` (waits for `n` of them).
async fn posts_in(app: &App, channel: u64, n: usize) -> Vec<Value> {
    let path = format!("/channels/{channel}/messages");
    within(
        &format!("{n} message(s) in channel {channel}"),
        app.standin()
            .wait_for_requests(n, |r| r.method == "POST" && r.path.ends_with(&path)),
    )
    .await
    .into_iter()
    .map(|r| r.body.unwrap())
    .collect()
}

#[tokio::test]
async fn reminders_reply_with_the_mentions_are_counted_and_stop() {
    let app = App::discord_with(|c| {
        c.discord.mention_role_ids = vec![Snowflake(789)];
        c.discord.remind_after_secs = Some(1);
        c.discord.remind_every_secs = Some(1);
        c.discord.remind_max = Some(2);
    })
    .await;
    let (_c, _) = app.ask("remind", &yes_no("q")).await;
    let question = app.messages(CHANNEL).remove(0);
    let bodies = posts_in(&app, CHANNEL, 3).await;
    for (n, reminder) in bodies[1..].iter().enumerate() {
        let text = reminder["content"].as_str().unwrap();
        assert!(
            text.starts_with("**Reminder:** this question has waited"),
            "{reminder}"
        );
        assert!(text.ends_with("<@&789>"), "{reminder}");
        assert_eq!(
            reminder["allowed_mentions"]["roles"],
            json!(["789"]),
            "{reminder}"
        );
        assert_eq!(
            reminder["allowed_mentions"]["users"],
            json!([]),
            "{reminder}"
        );
        assert_eq!(
            reminder["message_reference"]["message_id"], question["id"],
            "reminder {n} replies to the question: {reminder}"
        );
        assert!(
            reminder.get("components").is_none_or(|c| c == &json!([])),
            "{reminder}"
        );
    }
    // Two sent, and nothing more is due: the count and the end are stored.
    let req = app.hub().request("remind").await.unwrap();
    let posts = app
        .store()
        .posts(&[req.key])
        .await
        .unwrap()
        .remove(&req.key)
        .unwrap();
    let notes: Vec<String> = posts
        .iter()
        .filter(|p| p.is_note())
        .map(|p| p.slot.to_string())
        .collect();
    assert_eq!(notes, ["note:r1", "note:r2"]);
    assert!(app.store().timers("discord").await.unwrap().is_empty());
    app.assert_payloads_valid();
}

#[tokio::test]
async fn reminders_stop_when_the_request_is_answered() {
    let app = App::discord_with(|c| {
        c.discord.remind_after_secs = Some(1);
        c.discord.remind_max = Some(100);
    })
    .await;
    let (mut c, _) = app.ask("stop", &yes_no("q")).await;
    posts_in(&app, CHANNEL, 2).await;
    let timers = app.store().timers("discord").await.unwrap();
    assert_eq!(timers.len(), 1, "{timers:?}");
    assert!(
        timers[0].fired >= 1 && timers[0].due_at_ms.is_some(),
        "{timers:?}"
    );
    let question = app.messages(CHANNEL).remove(0);
    app.press(&question, &alice(), "No, keep them").await;
    expect_event(&mut c, "answered").await;
    // An ended request has no timer due: nothing is scheduled for it any more.
    assert!(app.store().timers("discord").await.unwrap().is_empty());
}

#[tokio::test]
async fn a_two_step_escalation_copies_to_a_channel_and_a_dm_and_any_copy_settles_all() {
    let app = App::discord_with(|c| {
        c.discord.allowed_user_ids = vec![Snowflake(4242)];
        c.discord.escalate = vec![
            EscalationStep {
                after_secs: 1,
                mention_user_ids: vec![Snowflake(4343)],
                channel_id: Some(Snowflake(COPIES)),
                ..step()
            },
            EscalationStep {
                after_secs: 2,
                dm_user_ids: vec![Snowflake(LEAD)],
                ..step()
            },
        ];
    })
    .await;
    let (mut c, _) = app.ask("esc", &yes_no("q")).await;
    let question = app.messages(CHANNEL).remove(0);
    // Step 1: a linked copy with the same controls in the second channel, mentioning bob.
    let copy_body = posts_in(&app, COPIES, 1).await.remove(0);
    let text = copy_body["content"].as_str().unwrap();
    assert!(text.starts_with("**Escalated:** no answer after"), "{text}");
    assert!(
        text.contains(&format!("/{CHANNEL}/{}", question["id"].as_str().unwrap())),
        "{text}"
    );
    assert!(text.ends_with("<@4343>"), "{text}");
    assert_eq!(copy_body["allowed_mentions"]["users"], json!(["4343"]));
    let copy = app.messages(COPIES).remove(0);
    assert_eq!(controls(&copy), controls(&question));
    // Bob is mentioned, not allowed: the step widens nothing for him.
    let refused = app.press(&copy, &bob(), "No, keep them").await;
    assert!(is_ephemeral(&refused), "{refused}");
    // Step 2: a DM to the lead, who may answer from then on.
    let dm = within("the DM channel", async {
        loop {
            if let Some(ch) = app.standin().dm_channel(LEAD) {
                if !app.messages(ch).is_empty() {
                    return ch;
                }
            }
            app.standin()
                .wait_for_request(|r| {
                    r.method == "POST"
                        && r.path.contains("/messages")
                        && !r.path.contains(&format!("/{CHANNEL}/"))
                        && !r.path.contains(&format!("/{COPIES}/"))
                })
                .await;
        }
    })
    .await;
    let dm_copy = app.messages(dm).remove(0);
    let cb = app.press(&dm_copy, &lead(), "No, keep them").await;
    assert_eq!(
        cb["type"], 7,
        "the winning click updates its own message: {cb}"
    );
    let ev = expect_event(&mut c, "answered").await;
    assert_eq!(
        ev["result"]["answers"][0]["selected"],
        json!(["No, keep them"])
    );
    // Every other copy is edited to the final state.
    for msg in [&question, &copy] {
        let edit = app.edit_of(msg).await;
        assert_eq!(edit["components"], json!([]), "{edit}");
        assert!(shown_body(&edit).contains("No, keep them"), "{edit}");
    }
    // A late click on any copy gets the usual note.
    let late = app
        .press(&copy, &alice(), "Yes, delete them (Recommended)")
        .await;
    assert!(ephemeral(&late).contains("Already answered"), "{late}");
    app.assert_payloads_valid();
}

#[tokio::test]
async fn a_restart_between_steps_resumes_the_schedule_without_repeating_a_step() {
    let mut app = App::discord_with(|c| {
        c.discord.escalate = vec![
            EscalationStep {
                after_secs: 1,
                mention_role_ids: vec![Snowflake(789)],
                ..step()
            },
            EscalationStep {
                after_secs: 3,
                channel_id: Some(Snowflake(COPIES)),
                ..step()
            },
        ];
    })
    .await;
    let (c, _) = app.ask("resume", &yes_no("q")).await;
    let question = app.messages(CHANNEL).remove(0);
    let note = posts_in(&app, CHANNEL, 2).await.remove(1);
    assert!(
        note["content"].as_str().unwrap().ends_with("<@&789>"),
        "{note}"
    );
    assert_eq!(note["message_reference"]["message_id"], question["id"]);
    drop(c);
    app.restart().await;
    let mut c = app.client().await;
    c.send_json(&ask_line("resume", &yes_no("q")))
        .await
        .unwrap();
    expect_event(&mut c, "accepted").await;
    // Step 2 comes after the restart, and step 1 is not taken again.
    posts_in(&app, COPIES, 1).await;
    let in_channel = app
        .standin()
        .requests()
        .into_iter()
        .filter(|r| {
            r.method == "POST" && r.path.ends_with(&format!("/channels/{CHANNEL}/messages"))
        })
        .count();
    assert_eq!(in_channel, 2, "the question and one escalation note");
    let copy = app.messages(COPIES).remove(0);
    let cb = app
        .press(&copy, &alice(), "Yes, delete them (Recommended)")
        .await;
    assert_eq!(
        cb["type"], 7,
        "a copy clicked as soon as it shows counts: {cb}"
    );
    expect_event(&mut c, "answered").await;
    app.assert_payloads_valid();
}

#[tokio::test]
async fn a_route_posts_to_dms_and_a_dm_answer_settles_the_channel_message() {
    let app = App::discord_with(|c| {
        c.discord.allowed_role_ids = vec![Snowflake(1)];
        c.discord.dm_user_ids = vec![Snowflake(LEAD)];
    })
    .await;
    let (mut c, acc) = app.ask("dm", &yes_no("q")).await;
    // The agent's links are the channel's message; the DM is a copy.
    assert_eq!(acc["message_links"].as_array().unwrap().len(), 1, "{acc}");
    let question = app.messages(CHANNEL).remove(0);
    let dm = within("the DM", async {
        loop {
            if let Some(ch) = app.standin().dm_channel(LEAD) {
                if !app.messages(ch).is_empty() {
                    return ch;
                }
            }
            app.standin()
                .wait_for_request(|r| r.method == "POST" && r.path.ends_with("/users/@me/channels"))
                .await;
        }
    })
    .await;
    let dm_msg = app.messages(dm).remove(0);
    assert_eq!(controls(&dm_msg), controls(&question));
    // The DM went out with the nonce stored for its row: a post again after a lost record
    // (by a repair pass, or the next leader) is de-duplicated by Discord, not a second DM.
    let create = format!("/channels/{dm}/messages");
    let sent = app
        .standin()
        .requests()
        .into_iter()
        .find(|r| r.method == "POST" && r.path.ends_with(&create))
        .unwrap();
    let req = app.store().by_id("dm").await.unwrap().unwrap();
    let rows = app.store().posts(&[req.key]).await.unwrap();
    let row = rows[&req.key]
        .iter()
        .find(|p| p.slot.to_string().starts_with("dm:"))
        .unwrap();
    assert_eq!(sent.body.unwrap()["nonce"], json!(row.nonce));
    // In a DM there is no member and no roles: the lead answers as a DM recipient.
    let cb = app
        .press(&dm_msg, &lead(), "Yes, delete them (Recommended)")
        .await;
    assert_eq!(cb["type"], 7, "{cb}");
    expect_event(&mut c, "answered").await;
    let edit = app.edit_of(&question).await;
    assert_eq!(edit["components"], json!([]));
    // Someone else in the DM channel (a forged payload) is refused.
    let late = app.press(&dm_msg, &bob(), "No, keep them").await;
    assert!(is_ephemeral(&late), "{late}");
    app.assert_payloads_valid();
}

fn step() -> EscalationStep {
    EscalationStep {
        after_secs: 1,
        mention_role_ids: vec![],
        mention_user_ids: vec![],
        channel_id: None,
        dm_user_ids: vec![],
        allowed_role_ids: vec![],
        allowed_user_ids: vec![],
    }
}
