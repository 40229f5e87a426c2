//! The confirm word on Slack (`confirm_labels`, `confirm_word` on a route): a press of such a
//! label opens a form asking for the word instead of settling; a wrong word keeps the form open
//! with Slack's error under the input, records nothing and is audited; the exact word settles.

use super::*;
use askrelay::config::Route;
use askrelay_testkit::slack::ViewValues;

/// A Slack-only route on the stand-in's channel whose "Yes, delete them (Recommended)" needs `{scope.project}`
/// typed.
fn confirm_route(c: &mut Config) {
    let mut r = Route::new("danger", 0);
    r.channel_id = None;
    r.slack_channel_id = Some(DEFAULT_CHANNEL.into());
    r.confirm_labels = Some(vec!["Yes, delete them (Recommended)".into()]);
    r.confirm_word = Some("{scope.project}".into());
    c.routes.push(r);
}

#[tokio::test]
async fn a_confirm_label_asks_for_the_word_in_a_form_and_only_the_word_settles() {
    let t = Slack::start_with(confirm_route).await;
    let mut input = yes_no("cleanup");
    input["scope"] = serde_json::json!({"project": "billing"});
    let (mut c, _) = t.ask("confirm", &input).await;
    let m = t.message(0).await;
    // The press opens the form with its trigger_id, before the ack, and settles nothing.
    let sent = t
        .press(&alice(), &m, "Yes, delete them (Recommended)")
        .await;
    within("the ack", t.s.wait_ack(sent.envelope_id())).await;
    let open = &t.s.calls("views.open")[0];
    assert!(open.ok(), "{:?}", open.reply);
    assert_eq!(open.param_str("trigger_id"), sent.trigger_id.as_deref());
    let view = t.s.views().remove(0);
    let shown = view.value.to_string();
    assert!(shown.contains("Type `billing` to confirm"), "{shown}");
    let req = t.app.store().by_id("confirm").await.unwrap().unwrap();
    assert!(req.answers[0].is_none(), "the press alone settles nothing");

    // A wrong word: the form stays open with the error under the input; nothing is recorded,
    // and the attempt is audited.
    let wrong = ViewValues::new().text("answer", "text", Some("Billing"));
    let sent = t.s.submit_view(&alice(), &view.id, &wrong).await;
    let ack = within("the form's ack", t.s.wait_ack(sent.envelope_id())).await;
    let payload = ack.payload.expect("the ack keeps the form open");
    assert_eq!(payload["response_action"], "errors", "{payload}");
    let error = payload["errors"]["answer"].as_str().unwrap();
    assert!(error.contains("type billing exactly"), "{error}");
    let req = t.app.store().by_id("confirm").await.unwrap().unwrap();
    assert!(req.answers[0].is_none(), "a wrong word settles nothing");
    let audit = t.app.store().audit_rows(Some(req.key)).await.unwrap();
    assert!(
        audit
            .iter()
            .any(|r| r.source == "slack" && r.action == "forbidden" && !r.accepted),
        "{audit:?}"
    );

    // The word, as the scope says it: settled, and the message shows the outcome.
    let right = ViewValues::new().text("answer", "text", Some(" billing "));
    let sent = t.s.submit_view(&alice(), &view.id, &right).await;
    let ack = within("the form's ack", t.s.wait_ack(sent.envelope_id())).await;
    assert_eq!(ack.payload, None, "the form closes");
    let ev = expect_event(&mut c, "answered").await;
    let selected = ev["result"]["answers"][0]["selected"][0].as_str().unwrap();
    assert!(selected.starts_with("Yes, delete them"), "{ev}");
    let update = t.outcome_of(&m).await.params.to_string();
    assert!(update.contains("by <@U0ALICE01> in Slack"), "{update}");
    t.s.assert_no_violations();
}

#[tokio::test]
async fn a_label_without_confirmation_settles_at_once() {
    let t = Slack::start_with(confirm_route).await;
    let mut input = yes_no("cleanup");
    input["scope"] = serde_json::json!({"project": "billing"});
    let (mut c, _) = t.ask("no-word", &input).await;
    let m = t.message(0).await;
    t.press(&alice(), &m, "No, keep them").await;
    let ev = expect_event(&mut c, "answered").await;
    assert_eq!(ev["result"]["answers"][0]["selected"][0], "No, keep them");
    assert!(t.s.calls("views.open").is_empty(), "no form for this label");
    t.s.assert_no_violations();
}
