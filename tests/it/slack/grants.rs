//! Grants on Slack: an approval on a route with `grant_durations` offers "Allow for …" after its
//! options; the press allows it, the message says what was granted and until when, and the
//! same requester's same command is then answered at once. A grant label in `confirm_labels`
//! asks for the word first.

use super::*;
use askrelay::config::Route;
use askrelay_testkit::slack::ViewValues;
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
fn approval(command: &str, session: &str) -> Value {
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
