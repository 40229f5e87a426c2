//! `/askrelay` on Slack, through Socket Mode: `pending` lists this channel's questions to those
//! who may answer here, `cancel` is for operators (`slack.operator_user_ids`) and ends the
//! request with its reason, `history` says who answered what; the reply is ephemeral, in the
//! envelope's ack, and every use is audited.

use super::*;
use serde_json::json;

/// Alice may answer; Bob is an operator only.
fn roles(c: &mut Config) {
    c.slack.allowed_user_ids = vec!["U0ALICE01".into()];
    c.slack.operator_user_ids = vec!["U0BOB0001".into()];
}

/// `who` runs `/askrelay text` in the default channel; the reply in the ack.
async fn slash(t: &Slack, who: &Person, text: &str) -> String {
    let sent =
        t.s.slash_command(who, DEFAULT_CHANNEL, "/askrelay", text)
            .await;
    let ack = within("the command's ack", t.s.wait_ack(sent.envelope_id())).await;
    let payload = ack.payload.expect("the reply is in the ack");
    assert_eq!(payload["response_type"], "ephemeral", "{payload}");
    payload["text"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn pending_lists_this_channels_questions_to_those_who_may_answer_here() {
    let t = Slack::start_with(roles).await;
    let mut input = yes_no("cleanup");
    input["questions"][0]["question"] = json!("Drop <!channel> the `cache`?");
    let (_c, _) = t.ask("listed-1", &input).await;
    let m = t.message(0).await;
    let listed = slash(&t, &alice(), "pending").await;
    assert!(
        listed.starts_with("*Pending questions (this channel)*"),
        "{listed}"
    );
    assert!(listed.contains("`listed-1`"), "{listed}");
    // Agent text is inert; the line links to the message.
    assert!(listed.contains("&lt;!channel&gt;"), "{listed}");
    assert!(!listed.contains("<!channel>"), "{listed}");
    assert!(listed.contains(&ts(&m).replace('.', "")), "{listed}");
    // Someone who may not answer here sees nothing.
    let carol = Person::new("U0CAROL01", "carol");
    let refused = slash(&t, &carol, "pending").await;
    assert!(refused.contains("not allowed to answer"), "{refused}");
    // An unknown use says how to use it.
    let usage = slash(&t, &alice(), "frobnicate").await;
    assert!(usage.starts_with("Use `/askrelay pending"), "{usage}");
    let audit = t.app.store().audit_rows(None).await.unwrap();
    let uses: Vec<_> = audit.iter().filter(|r| r.action == "command").collect();
    assert_eq!(uses.len(), 3, "{uses:?}");
    assert!(uses.iter().all(|r| r.source == "slack"), "{uses:?}");
    assert_eq!(
        uses.iter().map(|r| r.accepted).collect::<Vec<_>>(),
        [true, false, false]
    );
    t.s.assert_no_violations();
}

#[tokio::test]
async fn cancel_is_for_operators_and_ends_the_request_with_the_reason() {
    let t = Slack::start_with(roles).await;
    let (mut c, _) = t.ask("stuck", &yes_no("cleanup")).await;
    let m = t.message(0).await;
    // Allowed to answer is not allowed to cancel.
    let refused = slash(&t, &alice(), "cancel stuck the deploy window closed").await;
    assert!(refused.contains("Only askrelay operators"), "{refused}");
    let done = slash(&t, &bob(), "cancel stuck the deploy window closed").await;
    assert!(done.starts_with("Cancelled `stuck`"), "{done}");
    let ev = recv(&mut c, "the cancellation").await;
    assert_eq!(ev["code"], "ABORTED", "{ev}");
    assert!(
        ev["message"]
            .as_str()
            .unwrap()
            .contains("the deploy window closed"),
        "{ev}"
    );
    let update = t.outcome_of(&m).await.params.to_string();
    assert!(update.contains("Cancelled"), "{update}");
    // Again: it has ended.
    let again = slash(&t, &bob(), "cancel stuck").await;
    assert!(again.contains("already ended"), "{again}");
    let audit = t.app.store().audit_rows(None).await.unwrap();
    assert!(
        audit.iter().any(|r| r.action == "cancelled"
            && r.source == "slack"
            && r.actor.as_deref().unwrap().contains("U0BOB0001")),
        "{audit:?}"
    );
    t.s.assert_no_violations();
}

#[tokio::test]
async fn history_says_who_answered_what() {
    let t = Slack::start_with(roles).await;
    let (mut c, _) = t.ask("done-1", &yes_no("cleanup")).await;
    let m = t.message(0).await;
    t.press(&alice(), &m, "No, keep them").await;
    expect_event(&mut c, "answered").await;
    let history = slash(&t, &alice(), "history 5").await;
    assert!(history.starts_with("*Recent requests*"), "{history}");
    assert!(
        history.contains("`done-1`") && history.contains("No, keep them, by <@U0ALICE01>"),
        "{history}"
    );
    t.s.assert_no_violations();
}
