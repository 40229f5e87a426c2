//! Grants on Slack: an approval on a route with `grant_durations` offers "Allow for …" after its
//! options; the press allows it, the message says what was granted and until when, and the
//! same requester's same command is then answered at once. A grant label in `confirm_labels`
//! asks for the word first. "Allow matching…" opens a form for a pattern and its length (and
//! the word, when the allow label needs it); a pattern the chat layer takes pushes its preview
//! over the form, whose "Save grant" saves it; one it refuses keeps the form open saying why.

use super::*;
use askrelay::config::Route;
use askrelay_testkit::slack::fixtures::{block_actions_on_message, button_action};
use askrelay_testkit::slack::{Ack, EnvelopeType, SelectedOption, StoredView, ViewValues};
use serde_json::json;

fn granting(confirm: bool) -> impl FnOnce(&mut Config) {
    move |c| {
        let mut r = Route::new("dev", 0);
        r.channel_id = None;
        r.slack_channel_id = Some(DEFAULT_CHANNEL.into());
        r.grant_durations = Some(vec!["30m".into(), "8h".into()]);
        r.exclude_requester = Some(false);
        if confirm {
            r.confirm_labels = Some(vec!["Allow".into()]);
            r.confirm_word = Some("granted".into());
        }
        c.routes.push(r);
    }
}

/// A Bash approval as the hook asks it, for `command` in session `session`.
pub(super) fn approval(command: &str, session: &str) -> Value {
    json!({"questions": [{
        "id": "permission",
        "question": "Allow Bash?",
        "header": "Claude Code",
        "options": [{"label": "Allow"}, {"label": "Deny"}],
        "multiSelect": false
    }],
    "context": {"text": command, "approval": {"tool": "Bash", "command": command, "session": session}}})
}

fn texts(m: &Value) -> Vec<String> {
    elements(m)
        .into_iter()
        .filter_map(|(_, e)| e["text"]["text"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn allow_for_30_min_allows_and_answers_the_same_command_at_once() {
    let t = Slack::start_with(granting(false)).await;
    let (mut c, _) = t.ask("g-1", &approval("cargo test", "s1")).await;
    let m = t.message(0).await;
    assert_eq!(
        texts(&m),
        [
            "Allow",
            "Deny",
            "Allow for 30 min",
            "Allow for 8 h",
            "Allow matching…",
            "Other…"
        ]
    );
    t.press(&alice(), &m, "Allow for 30 min").await;
    let answered = expect_event(&mut c, "answered").await;
    // The result is the contract's: the grant is not in it.
    assert_eq!(
        answered["result"].to_string(),
        r#"{"answers":[{"id":"permission","selected":["Allow"]}]}"#
    );
    let update = t.outcome_of(&m).await.params.to_string();
    assert!(
        update.contains("Granted for 30 min") && update.contains("this exact command"),
        "{update}"
    );
    // The same command from the same session: answered at once.
    let mut again = t.app.client().await;
    again
        .send_json(&ask_line("g-2", &approval("cargo test", "s1")))
        .await
        .unwrap();
    let ev = loop {
        let ev = recv(&mut again, "the second ask's events").await;
        if ev["event"] != "accepted" {
            break ev;
        }
    };
    assert_eq!(ev["event"], "answered", "{ev}");
    assert_eq!(ev["result"]["answers"][0]["selected"], json!(["Allow"]));
    // Announced in the channel, without controls: who allowed it, and by which grant.
    let announced = t.message(1).await;
    let shown = announced.to_string();
    assert!(
        shown.contains("Allowed by grant") && shown.contains("approved by alice"),
        "{shown}"
    );
    assert!(elements(&announced).is_empty(), "{announced}");
    let audit = t.app.store().audit_rows(None).await.unwrap();
    assert!(
        audit
            .iter()
            .any(|r| r.source == "slack" && r.action == "answer" && r.accepted),
        "{audit:?}"
    );
    t.s.assert_no_violations();
}

#[tokio::test]
async fn a_grant_whose_allow_label_needs_the_word_asks_for_it_first() {
    let t = Slack::start_with(granting(true)).await;
    let (mut c, _) = t.ask("g-w", &approval("cargo build", "s1")).await;
    let m = t.message(0).await;
    let sent = t.press(&alice(), &m, "Allow for 8 h").await;
    within("the ack", t.s.wait_ack(sent.envelope_id())).await;
    let view = t.s.views().remove(0);
    let shown = view.value.to_string();
    assert!(
        shown.contains("Allow for 8 h") && shown.contains("Type `granted` to confirm"),
        "{shown}"
    );
    let right = ViewValues::new().text("answer", "text", Some("granted"));
    t.s.submit_view(&alice(), &view.id, &right).await;
    expect_event(&mut c, "answered").await;
    let update = t.outcome_of(&m).await.params.to_string();
    assert!(update.contains("Granted for 8 h"), "{update}");
    t.s.assert_no_violations();
}

/// The grants in force, as the socket lists them.
async fn live_grants(t: &Slack) -> Vec<Value> {
    let reply = t
        .app
        .client()
        .await
        .call_json(&json!({"op": "grants"}))
        .await
        .unwrap();
    reply["grants"].as_array().cloned().unwrap_or_default()
}

/// Alice presses "Allow matching…" on `m`: the form it opened (one).
pub(super) async fn open_pattern_form(s: &SlackStandIn, m: &Value) -> StoredView {
    let sent = s
        .click(
            &alice(),
            DEFAULT_CHANNEL,
            ts(m),
            button(m, "Allow matching…"),
        )
        .await;
    within("the ack", s.wait_ack(sent.envelope_id())).await;
    let form = form_opened_by(s, &sent).await;
    let opened = s
        .calls("views.open")
        .into_iter()
        .filter(|r| r.param_str("trigger_id") == sent.trigger_id.as_deref())
        .count();
    assert_eq!(opened, 1, "one form");
    form
}

/// Alice sends the pattern form `view` with `pattern`, `length` (`30m`, `8h`) and `word`; the
/// ack's payload (what Slack does with the form).
pub(super) async fn send_pattern(
    s: &SlackStandIn,
    view: &StoredView,
    pattern: Option<&str>,
    length: &str,
    word: Option<&str>,
) -> Value {
    let text = match length {
        "8h" => "8 h",
        _ => "30 min",
    };
    let mut values = ViewValues::new()
        .text("answer", "text", pattern)
        .static_select("length", "length", Some(&SelectedOption::new(length, text)));
    if word.is_some() {
        values = values.text("word", "word", word);
    }
    let sent = s.submit_view(&alice(), &view.id, &values).await;
    let ack: Ack = within("the form's ack", s.wait_ack(sent.envelope_id())).await;
    ack.payload.unwrap_or(Value::Null)
}

/// The preview pushed over the form: the newest view, open.
pub(super) fn preview(s: &SlackStandIn) -> StoredView {
    let view = s.views().pop().unwrap();
    assert!(!view.closed, "{view:?}");
    view
}

/// "Save grant" on the preview: the ack's payload.
pub(super) async fn save(s: &SlackStandIn, preview: &StoredView) -> Value {
    let sent = s
        .submit_view(&alice(), &preview.id, &ViewValues::new())
        .await;
    let ack = within("the preview's ack", s.wait_ack(sent.envelope_id())).await;
    ack.payload.unwrap_or(Value::Null)
}

#[tokio::test]
async fn allow_matching_previews_the_pattern_and_saved_it_answers_a_matching_command_at_once() {
    let t = Slack::start_with(granting(false)).await;
    let (mut c, _) = t.ask("p-1", &approval("cargo test -p core", "s1")).await;
    let m = t.message(0).await;
    // The form, filled in as on Discord: the command asked, the route's first length.
    let form = open_pattern_form(&t.s, &m).await;
    let blocks = &form.value["blocks"];
    assert_eq!(blocks[1]["element"]["initial_value"], "cargo test -p core");
    assert_eq!(blocks[2]["element"]["initial_option"]["value"], "30m");
    assert_eq!(blocks[2]["element"]["options"][1]["value"], "8h");
    assert!(!form.value.to_string().contains("to confirm"), "no word");

    // Sent: the preview is pushed over the form; nothing is saved yet.
    let pushed = send_pattern(&t.s, &form, Some("cargo test *"), "8h", None).await;
    assert_eq!(pushed["response_action"], "push", "{pushed}");
    let shown = preview(&t.s);
    let text = shown.value.to_string();
    assert!(
        text.contains("`cargo test *`") && text.contains("(prefix)") && text.contains("8 h"),
        "{text}"
    );
    assert!(
        text.contains("uid ") && text.contains("session s1"),
        "{text}"
    );
    assert_eq!(shown.value["submit"]["text"], "Save grant");
    assert_eq!(shown.value["close"]["text"], "Back");
    assert!(live_grants(&t).await.is_empty(), "shown, not saved");
    assert!(t.app.store().by_id("p-1").await.unwrap().unwrap().answers[0].is_none());

    // Save grant: both views close, the request is allowed, the message says what was granted.
    let cleared = save(&t.s, &shown).await;
    assert_eq!(cleared["response_action"], "clear", "{cleared}");
    assert!(t.s.views().iter().all(|v| v.closed));
    let answered = expect_event(&mut c, "answered").await;
    assert_eq!(
        answered["result"]["answers"][0]["selected"],
        json!(["Allow"])
    );
    let update = t.outcome_of(&m).await.params.to_string();
    assert!(
        update.contains("Granted for 8 h") && update.contains("`cargo test *`"),
        "{update}"
    );
    t.told("U0ALICE01", "Saved: the grant is live").await;
    let g = live_grants(&t).await;
    assert_eq!(g.len(), 1, "{g:?}");
    assert_eq!(
        (g[0]["pattern"].as_str(), g[0]["exact"].as_bool()),
        (Some("cargo test *"), Some(false))
    );

    // Another command the pattern covers, from the same session: answered at once, announced.
    let mut again = t.app.client().await;
    again
        .send_json(&ask_line("p-2", &approval("cargo test --all", "s1")))
        .await
        .unwrap();
    let ev = loop {
        let ev = recv(&mut again, "the second ask's events").await;
        if ev["event"] != "accepted" {
            break ev;
        }
    };
    assert_eq!(ev["event"], "answered", "{ev}");
    let announced = t.message(1).await.to_string();
    assert!(announced.contains("Allowed by grant"), "{announced}");
    let audit = t.app.store().audit_rows(None).await.unwrap();
    assert!(
        audit
            .iter()
            .any(|r| r.source == "slack" && r.action == "draft" && r.accepted),
        "the preview is audited: {audit:?}"
    );
    t.s.assert_no_violations();
}

#[tokio::test]
async fn a_pattern_the_chat_layer_refuses_keeps_the_form_open_saying_why() {
    let t = Slack::start_with(granting(false)).await;
    let (_c, _) = t
        .ask("p-bad", &approval("git clean -n --dry-run", "s1"))
        .await;
    let m = t.message(0).await;
    let form = open_pattern_form(&t.s, &m).await;
    for (pattern, why) in [
        (Some("cargo build *"), "must match"),
        (Some("*"), "must start with the command"),
        (Some("git * --dry-run # x"), "comment"),
        (None, "Write the pattern first"),
    ] {
        let kept = send_pattern(&t.s, &form, pattern, "30m", None).await;
        assert_eq!(kept["response_action"], "errors", "{pattern:?}: {kept}");
        let error = kept["errors"]["answer"].as_str().unwrap_or_default();
        assert!(error.contains(why), "{pattern:?}: {kept}");
        assert!(!t.s.view(&form.id).unwrap().closed, "the form stays open");
        assert_eq!(t.s.views().len(), 1, "no preview");
    }
    assert!(live_grants(&t).await.is_empty());
    let req = t.app.store().by_id("p-bad").await.unwrap().unwrap();
    assert!(req.answers[0].is_none(), "nothing settles");
    let audit = t.app.store().audit_rows(Some(req.key)).await.unwrap();
    assert!(
        audit
            .iter()
            .any(|r| r.source == "slack" && r.action == "forbidden" && !r.accepted),
        "{audit:?}"
    );
    // A pattern it takes: the preview warns that git runs other programs.
    let pushed = send_pattern(&t.s, &form, Some("git * --dry-run"), "30m", None).await;
    assert_eq!(pushed["response_action"], "push", "{pushed}");
    let text = preview(&t.s).value.to_string();
    assert!(
        text.contains("(pattern)") && text.contains("can run other programs"),
        "{text}"
    );
    t.s.assert_no_violations();
}

#[tokio::test]
async fn allow_matching_takes_the_word_beside_the_pattern_when_the_allow_label_needs_it() {
    let t = Slack::start_with(granting(true)).await;
    let (mut c, _) = t.ask("p-w", &approval("cargo build --release", "s1")).await;
    let m = t.message(0).await;
    let form = open_pattern_form(&t.s, &m).await;
    assert_eq!(
        form.value["blocks"][3]["block_id"], "word",
        "{}",
        form.value
    );
    assert!(form.value.to_string().contains("Type granted to confirm"));
    // A wrong word: the form stays open with the error under the word; audited, nothing kept.
    let kept = send_pattern(&t.s, &form, Some("cargo build *"), "30m", Some("Granted")).await;
    assert_eq!(kept["response_action"], "errors", "{kept}");
    let error = kept["errors"]["word"].as_str().unwrap();
    assert!(error.contains("type granted exactly"), "{error}");
    let req = t.app.store().by_id("p-w").await.unwrap().unwrap();
    let audit = t.app.store().audit_rows(Some(req.key)).await.unwrap();
    assert!(
        audit
            .iter()
            .any(|r| r.source == "slack" && r.action == "forbidden" && !r.accepted),
        "{audit:?}"
    );
    // The word: previewed, then saved with it (the core checks it again).
    let pushed = send_pattern(&t.s, &form, Some("cargo build *"), "30m", Some(" granted ")).await;
    assert_eq!(pushed["response_action"], "push", "{pushed}");
    let cleared = save(&t.s, &preview(&t.s)).await;
    assert_eq!(cleared["response_action"], "clear", "{cleared}");
    expect_event(&mut c, "answered").await;
    let update = t.outcome_of(&m).await.params.to_string();
    assert!(
        update.contains("Granted for 30 min") && update.contains("`cargo build *`"),
        "{update}"
    );
    t.s.assert_no_violations();
}

#[tokio::test]
async fn back_returns_to_the_form_and_the_pattern_sent_last_is_the_one_saved() {
    let t = Slack::start_with(granting(false)).await;
    let (mut c, _) = t.ask("p-b", &approval("cargo test -p core", "s1")).await;
    let m = t.message(0).await;
    let form = open_pattern_form(&t.s, &m).await;
    let pushed = send_pattern(&t.s, &form, Some("cargo *"), "30m", None).await;
    assert_eq!(pushed["response_action"], "push", "{pushed}");
    // Back: the preview closes (Slack tells askrelay nothing), the form is there as it was.
    let first = preview(&t.s);
    assert!(t.s.close_view(&alice(), &first.id).await.is_none());
    assert!(!t.s.view(&form.id).unwrap().closed);
    let pushed = send_pattern(&t.s, &form, Some("cargo test *"), "8h", None).await;
    assert_eq!(pushed["response_action"], "push", "{pushed}");
    let second = preview(&t.s);
    assert_ne!(second.id, first.id);
    // "Save grant" as a control on the message (Discord's way, never Slack's): refused as
    // forged, and the preview still waits.
    let Action::Button {
        block_id,
        action_id,
        ..
    } = button(&m, "Allow matching…")
    else {
        unreachable!()
    };
    let save_id = action_id.replace(":P", ":V:1");
    let forged = block_actions_on_message(
        &alice(),
        DEFAULT_CHANNEL,
        "askrelay",
        ts(&m),
        Some(&m),
        vec![button_action(
            &block_id,
            &save_id,
            "Save grant",
            None,
            "1.0",
        )],
        &t.s.new_trigger_id(&alice()),
        &format!("{}/response/none", t.s.base_url()),
    );
    let sent =
        t.s.send_envelope(EnvelopeType::Interactive, forged, false)
            .await;
    within("the ack", t.s.wait_ack(&sent.envelope_id)).await;
    let req = t.app.store().by_id("p-b").await.unwrap().unwrap();
    let audit = t.app.store().audit_rows(Some(req.key)).await.unwrap();
    assert!(
        audit
            .iter()
            .any(|r| r.source == "slack" && r.action == "forged" && !r.accepted),
        "{audit:?}"
    );
    assert!(req.answers[0].is_none(), "nothing settles");
    // The preview waiting is the last one sent: its pattern and its length are saved.
    save(&t.s, &second).await;
    expect_event(&mut c, "answered").await;
    let g = live_grants(&t).await;
    assert_eq!(g.len(), 1, "{g:?}");
    assert_eq!(g[0]["pattern"], "cargo test *");
    let update = t.outcome_of(&m).await.params.to_string();
    assert!(update.contains("Granted for 8 h"), "{update}");
    t.s.assert_no_violations();
}
