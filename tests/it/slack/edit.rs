//! Edit-then-approve on Slack (a route's `allow_edits`): Edit… on an approval whose command its
//! front door marked editable opens a form filled in with the command; the edited command is
//! approved, shown against the one asked, and reaches Claude Code's hook output as
//! `updatedInput`.

use super::*;
use askrelay::config::Route;
use askrelay_testkit::slack::ViewValues;
use serde_json::json;
use std::process::Stdio;
use tokio::io::AsyncWriteExt;

fn editable(confirm: bool) -> impl FnOnce(&mut Config) {
    move |c| {
        let mut r = Route::new("dev", 0);
        r.channel_id = None;
        r.slack_channel_id = Some(DEFAULT_CHANNEL.into());
        r.allow_edits = Some(true);
        if confirm {
            r.confirm_labels = Some(vec!["Allow".into()]);
            r.confirm_word = Some("yes-run-it".into());
        }
        c.routes.push(r);
    }
}

/// Claude Code's PreToolUse hook asking for `command`, running until it is answered.
fn hook(t: &Slack, command: &str) -> tokio::process::Child {
    let bin = Bin::new().env("ASKRELAY_SOCKET_PATH", t.app.socket().display());
    let event = json!({
        "session_id": "sess-7",
        "cwd": "/work/shop",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": command, "description": "Clean the build"},
        "tool_use_id": "toolu_e1"
    })
    .to_string();
    let mut child = bin
        .cmd(&["hook", "claude-code"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = child.stdin.take().unwrap();
    tokio::spawn(async move {
        pipe.write_all(event.as_bytes()).await.unwrap();
    });
    child
}

#[tokio::test]
async fn edit_opens_the_command_and_the_edited_one_is_approved_and_reaches_the_hook() {
    let t = Slack::start_with(editable(false)).await;
    let child = hook(&t, "rm -rf build/");
    let m = t.message(0).await;
    let texts: Vec<String> = elements(&m)
        .into_iter()
        .filter_map(|(_, e)| e["text"]["text"].as_str().map(str::to_owned))
        .collect();
    assert!(texts.contains(&"Edit…".to_owned()), "{texts:?}");
    let sent = t.press(&alice(), &m, "Edit…").await;
    within("the ack", t.s.wait_ack(sent.envelope_id())).await;
    let view = t.s.views().remove(0);
    let input = view.value["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["block_id"] == "answer")
        .cloned()
        .unwrap();
    assert_eq!(
        input["element"]["initial_value"], "rm -rf build/",
        "{input}"
    );
    let values = ViewValues::new().text("answer", "text", Some("rm -rf build/cache"));
    let submitted = t.s.submit_view(&alice(), &view.id, &values).await;
    let ack = within("the form's ack", t.s.wait_ack(submitted.envelope_id())).await;
    assert_eq!(ack.payload, None, "the form closes");
    // The message shows the edit against the command asked.
    let update = t.outcome_of(&m).await.params.to_string();
    assert!(
        update.contains("Edited, then approved")
            && update.contains("- rm -rf build/")
            && update.contains("+ rm -rf build/cache"),
        "{update}"
    );
    let out = within("the hook to exit", child.wait_with_output())
        .await
        .unwrap();
    let v: Value = serde_json::from_str(String::from_utf8_lossy(&out.stdout).trim()).unwrap();
    let d = &v["hookSpecificOutput"];
    assert_eq!(d["permissionDecision"], "allow", "{v}");
    assert_eq!(
        d["updatedInput"],
        json!({"command": "rm -rf build/cache", "description": "Clean the build"}),
        "{v}"
    );
    t.s.assert_no_violations();
}

#[tokio::test]
async fn an_edit_of_a_label_that_needs_the_word_asks_for_it_in_the_same_form() {
    let t = Slack::start_with(editable(true)).await;
    let child = hook(&t, "rm -rf build/");
    let m = t.message(0).await;
    let sent = t.press(&alice(), &m, "Edit…").await;
    within("the ack", t.s.wait_ack(sent.envelope_id())).await;
    let view = t.s.views().remove(0);
    let shown = view.value.to_string();
    assert!(shown.contains("Type yes-run-it to confirm"), "{shown}");
    // A wrong word: nothing is recorded, and the person is told.
    let wrong = ViewValues::new()
        .text("answer", "text", Some("rm -rf build/cache"))
        .text("word", "word", Some("yes"));
    t.s.submit_view(&alice(), &view.id, &wrong).await;
    t.told("U0ALICE01", "was not recorded").await;
    assert_eq!(t.app.hub().pending_count(), 1, "still pending");
    // The word: approved as edited.
    let sent = t.press(&alice(), &m, "Edit…").await;
    within("the ack", t.s.wait_ack(sent.envelope_id())).await;
    let view = t.s.views().pop().unwrap();
    let right = ViewValues::new()
        .text("answer", "text", Some("rm -rf build/cache"))
        .text("word", "word", Some("yes-run-it"));
    t.s.submit_view(&alice(), &view.id, &right).await;
    let out = within("the hook to exit", child.wait_with_output())
        .await
        .unwrap();
    let v: Value = serde_json::from_str(String::from_utf8_lossy(&out.stdout).trim()).unwrap();
    assert_eq!(
        v["hookSpecificOutput"]["updatedInput"]["command"], "rm -rf build/cache",
        "{v}"
    );
    t.s.assert_no_violations();
}
