//! Presses through Socket Mode: a button settles and the message is updated; a select past 25
//! options; multi-select and Submit; Other… and its form; refusals, late presses and forged
//! controls get an ephemeral reply, change nothing, and are audited.

use super::*;
use askrelay_testkit::slack::fixtures::{block_actions_on_message, button_action};
use askrelay_testkit::slack::{EnvelopeType, SlackFailure, ViewValues};
use serde_json::json;

const NO: &str = r#"{"answers":[{"id":"cleanup","selected":["No, keep them"]}]}"#;

#[tokio::test]
async fn a_press_settles_updates_the_message_and_is_acked_after_the_commit() {
    let t = Slack::start().await;
    let (mut c, accepted) = t.ask("press", &yes_no("cleanup")).await;
    assert_eq!(accepted["answerer"], "slack");
    assert_eq!(accepted["channel_id"], DEFAULT_CHANNEL);
    let m = t.message(0).await;
    let link = accepted["message_links"][0].as_str().unwrap();
    assert!(
        link.contains(DEFAULT_CHANNEL) && link.ends_with(&ts(&m).replace('.', "")),
        "{link}"
    );
    // The posted message: the header, the question, a button per option and Other….
    assert_eq!(m["blocks"][0]["type"], "header");
    assert_eq!(m["blocks"][0]["text"]["text"], "Confirm");
    let buttons: Vec<Value> = elements(&m).into_iter().map(|(_, e)| e).collect();
    let texts: Vec<&str> = buttons
        .iter()
        .map(|b| b["text"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        texts,
        ["Yes, delete them (Recommended)", "No, keep them", "Other…"]
    );
    assert_eq!(buttons[0]["style"], "primary");
    let post = &t.s.calls("chat.postMessage")[0];
    assert!(
        post.param_str("client_msg_id").is_some(),
        "{:?}",
        post.params
    );

    let sent = t.press(&alice(), &m, "No, keep them").await;
    let ack = within("the ack", t.s.wait_ack(sent.envelope_id())).await;
    assert_eq!(ack.payload, None);
    // The ack came after the commit: once Slack has it, the answer is stored.
    let req = t.app.store().by_id("press").await.unwrap().unwrap();
    let answered = req.answers[0].as_ref().expect("stored before the ack");
    assert_eq!(answered.actor.id, "U0ALICE01");
    assert_eq!(
        c.recv_line().await.unwrap().unwrap(),
        format!(r#"{{"event":"answered","request_id":"press","result":{NO}}}"#)
    );
    // The message shows who answered, where and what, without its controls.
    let update = t.outcome_of(&m).await;
    let shown = update.params.to_string();
    assert!(shown.contains("by <@U0ALICE01> in Slack"), "{shown}");
    assert!(shown.contains("No, keep them"), "{shown}");
    assert!(elements(&t.now(&m)).is_empty());
    let audit = t.app.store().audit_rows(None).await.unwrap();
    assert!(audit
        .iter()
        .any(|r| r.source == "slack" && r.action == "answer" && r.accepted));
    t.s.assert_no_violations();
}

#[tokio::test]
async fn past_25_options_a_select_settles_with_the_option_picked() {
    let t = Slack::start().await;
    let input = json!({"questions": [{"id": "pick", "question": "Which one?", "header": "Pick",
        "options": options(25), "multiSelect": false}]});
    let (mut c, _) = t.ask("select", &input).await;
    let m = t.message(0).await;
    let (block, action) = element(&m, "static_select");
    let select = elements(&m)
        .into_iter()
        .find(|(_, e)| e["type"] == "static_select")
        .unwrap()
        .1;
    assert_eq!(select["options"].as_array().unwrap().len(), 25);
    assert!(elements(&m)
        .iter()
        .any(|(_, e)| e["type"] == "button" && e["text"]["text"] == "Other…"));
    t.act(&alice(), &m, Action::static_select(&block, &action, "24"))
        .await;
    let ev = expect_event(&mut c, "answered").await;
    assert_eq!(ev["result"]["answers"][0]["selected"][0], "Option 24");
    t.outcome_of(&m).await;
    t.s.assert_no_violations();
}

#[tokio::test]
async fn multi_select_keeps_the_draft_until_submit() {
    let t = Slack::start().await;
    let input = json!({"questions": [{"id": "many", "question": "Which ones?", "header": "Pick",
        "options": options(3), "multiSelect": true}]});
    let (mut c, _) = t.ask("multi", &input).await;
    let m = t.message(0).await;
    let (block, action) = element(&m, "multi_static_select");
    t.act(
        &alice(),
        &m,
        Action::multi_static_select(&block, &action, &["0", "2"]),
    )
    .await;
    // A draft settles nothing; it is audited as one.
    let req = t.app.store().by_id("multi").await.unwrap().unwrap();
    assert!(req.answers[0].is_none());
    let audit = t.app.store().audit_rows(None).await.unwrap();
    assert!(audit
        .iter()
        .any(|r| r.source == "slack" && r.action == "draft"));
    t.press(&alice(), &m, "Submit").await;
    let ev = expect_event(&mut c, "answered").await;
    assert_eq!(
        ev["result"]["answers"][0]["selected"],
        json!(["Option 0", "Option 2"])
    );
    t.s.assert_no_violations();
}

#[tokio::test]
async fn other_opens_a_form_at_once_and_its_text_settles() {
    let t = Slack::start().await;
    let (mut c, _) = t.ask("other", &yes_no("cleanup")).await;
    let m = t.message(0).await;
    let sent = t.press(&alice(), &m, "Other…").await;
    within("the ack", t.s.wait_ack(sent.envelope_id())).await;
    // views.open with the press's trigger_id, before the ack.
    let open = &t.s.calls("views.open")[0];
    assert!(open.ok(), "{:?}", open.reply);
    assert_eq!(open.param_str("trigger_id"), sent.trigger_id.as_deref());
    let view = t.s.views().remove(0);
    assert_eq!(view.user.as_deref(), Some("U0ALICE01"));
    let values = ViewValues::new().text("answer", "text", Some("Archive them <!channel>"));
    let submitted = t.s.submit_view(&alice(), &view.id, &values).await;
    let ack = within("the form's ack", t.s.wait_ack(submitted.envelope_id())).await;
    assert_eq!(ack.payload, None, "the form closes");
    let ev = expect_event(&mut c, "answered").await;
    assert_eq!(
        ev["result"]["answers"][0]["custom"],
        "Archive them <!channel>"
    );
    // The outcome shows the text, inert.
    let update = t.outcome_of(&m).await.params.to_string();
    assert!(update.contains("Archive them &lt;!channel&gt;"), "{update}");
    t.s.assert_no_violations();
}

#[tokio::test]
async fn a_refused_user_gets_an_ephemeral_and_nothing_settles() {
    let t = Slack::start_with(|c| c.slack.allowed_user_ids = vec!["U0ALICE01".into()]).await;
    let (mut c, _) = t.ask("refused", &yes_no("cleanup")).await;
    let m = t.message(0).await;
    let sent = t.press(&bob(), &m, "No, keep them").await;
    within("the ack", t.s.wait_ack(sent.envelope_id())).await;
    let told = t.told("U0BOB0001", "You are not allowed to answer").await;
    assert_eq!(told.via, "response_url");
    let req = t.app.store().by_id("refused").await.unwrap().unwrap();
    assert!(req.answers[0].is_none(), "nothing settled");
    assert!(t.s.calls("chat.update").is_empty());
    let audit = t.app.store().audit_rows(None).await.unwrap();
    let row = audit
        .iter()
        .find(|r| r.action == "denied")
        .expect("the refusal is audited");
    assert_eq!(row.source, "slack");
    assert!(!row.accepted);
    assert!(row.actor.as_deref().unwrap().starts_with("slack:U0BOB0001"));
    // Alice may.
    t.press(&alice(), &m, "No, keep them").await;
    expect_event(&mut c, "answered").await;
    t.s.assert_no_violations();
}

#[tokio::test]
async fn a_user_groups_member_may_answer() {
    let t = Slack::start_with(|c| c.slack.allowed_usergroup_ids = vec!["S0ONCALL1".into()]).await;
    t.s.set_usergroup("S0ONCALL1", &["U0BOB0001"]);
    let (mut c, _) = t.ask("group", &yes_no("cleanup")).await;
    let m = t.message(0).await;
    t.press(&alice(), &m, "No, keep them").await;
    t.told("U0ALICE01", "You are not allowed").await;
    t.press(&bob(), &m, "No, keep them").await;
    let ev = expect_event(&mut c, "answered").await;
    assert_eq!(ev["result"].to_string(), NO);
    assert!(!t.s.calls("usergroups.users.list").is_empty());
}

#[tokio::test]
async fn a_late_press_is_told_who_answered_and_where() {
    let t = Slack::start_with(|c| c.slack.terminal_answers = true).await;
    let (mut c, _) = t.ask("late", &yes_no("cleanup")).await;
    let m = t.message(0).await;
    // The message keeps its buttons a while (its edit fails), as a copy someone still has open.
    t.s.fail_next(
        "chat.update",
        SlackFailure::Error("internal_error".into()),
        100,
    );
    let reply = t.app.answer("late", "cleanup", &["No, keep them"]).await;
    assert_eq!(reply["event"], "answer_accepted", "{reply}");
    expect_event(&mut c, "answered").await;
    let sent = t.press(&bob(), &m, "Yes, delete them (Recommended)").await;
    within("the ack", t.s.wait_ack(sent.envelope_id())).await;
    let told = t.told("U0BOB0001", "Already answered by").await;
    let text = told.text.unwrap();
    assert!(
        text.contains("in the terminal") && text.contains("No, keep them"),
        "{text}"
    );
    let audit = t.app.store().audit_rows(None).await.unwrap();
    let late = audit.iter().find(|r| r.action == "late").expect("audited");
    assert_eq!(late.source, "slack");
    let req = t.app.store().by_id("late").await.unwrap().unwrap();
    assert_eq!(
        req.answers[0].as_ref().unwrap().actor.via,
        askrelay::domain::request::Via::Terminal
    );
    t.s.clear_failures();
}

#[tokio::test]
async fn a_forged_control_and_another_message_are_refused() {
    let t = Slack::start().await;
    t.ask("first", &yes_no("cleanup")).await;
    t.ask("second", &yes_no("cleanup")).await;
    let first = t.message(0).await;
    let second = t.message(1).await;
    let forge = |m: &Value, block: String, action: String| {
        block_actions_on_message(
            &alice(),
            DEFAULT_CHANNEL,
            "askrelay",
            ts(m),
            Some(m),
            vec![button_action(&block, &action, "No", Some("1"), "1.0")],
            &t.s.new_trigger_id(&alice()),
            &format!("{}/response/none", t.s.base_url()),
        )
    };
    // The first question's control, sent from the second message; and a made-up control.
    let stale = forge(
        &second,
        button_block(&first, "No, keep them"),
        button_id(&first, "No, keep them"),
    );
    let made_up = forge(&first, "b".into(), "ar:not-a-token:0:b:1".into());
    let option = forge(
        &first,
        button_block(&first, "No, keep them"),
        button_id(&first, "No, keep them").replace(":b:1", ":b:7"),
    );
    for payload in [stale, made_up, option] {
        let sent =
            t.s.send_envelope(EnvelopeType::Interactive, payload, false)
                .await;
        within("the ack", t.s.wait_ack(&sent.envelope_id)).await;
    }
    let audit = t.app.store().audit_rows(None).await.unwrap();
    let refused: Vec<&str> = audit
        .iter()
        .filter(|r| r.source == "slack" && !r.accepted)
        .map(|r| r.action.as_str())
        .collect();
    assert_eq!(refused, ["stale", "forged", "forged"], "{audit:?}");
    for id in ["first", "second"] {
        let req = t.app.store().by_id(id).await.unwrap().unwrap();
        assert!(req.answers[0].is_none(), "{id} settled");
    }
}

/// The block and action ids of the button with this text.
fn button_block(m: &Value, text: &str) -> String {
    match button(m, text) {
        Action::Button { block_id, .. } => block_id,
        _ => unreachable!(),
    }
}

fn button_id(m: &Value, text: &str) -> String {
    match button(m, text) {
        Action::Button { action_id, .. } => action_id,
        _ => unreachable!(),
    }
}

/// The store stalls (another connection holds SQLite's write lock): the envelope is
/// acknowledged within Slack's 3 s anyway, before anything is stored, and the press is settled
/// once the store answers.
#[tokio::test]
async fn a_press_behind_a_stalled_store_is_acked_in_time_then_settled() {
    if askrelay_testkit::scratch::on_postgres() {
        // The lock below is SQLite's.
        return;
    }
    use sqlx::{Connection, Executor};
    let t = Slack::start().await;
    let (mut c, _) = t.ask("stalled", &yes_no("cleanup")).await;
    let m = t.message(0).await;
    let mut other = sqlx::SqliteConnection::connect(&t.app.config.database_url)
        .await
        .unwrap();
    other.execute("BEGIN IMMEDIATE").await.unwrap();
    let sent = t.press(&alice(), &m, "No, keep them").await;
    let ack = within("the ack", t.s.wait_ack(sent.envelope_id())).await;
    assert!(
        ack.latency().unwrap() < std::time::Duration::from_secs(3),
        "acked after {:?}",
        ack.latency()
    );
    let req = t.app.store().by_id("stalled").await.unwrap().unwrap();
    assert!(req.answers[0].is_none(), "nothing stored yet");
    other.execute("ROLLBACK").await.unwrap();
    let ev = expect_event(&mut c, "answered").await;
    assert_eq!(ev["result"].to_string(), NO);
    t.outcome_of(&m).await;
}
