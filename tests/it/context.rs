//! The ask's `context` (what exactly is being approved): validated with the field named, stored
//! with the request, shown with the first question in Discord (a short text in a code block in
//! the message content; a long text and every file as attachments, through a multipart create
//! whose `payload_json` and file parts the stand-in records), kept through the edits that
//! follow, and posted again with the same files after a crash.

use crate::harness::*;
use askrelay::client::Client;
use askrelay_testkit::standin::{Recorded, StandIn};
use serde_json::{json, Value};

/// `yes_no("q")` with a context.
fn with_context(context: Value) -> Value {
    let mut input = yes_no("q");
    input["context"] = context;
    input
}

/// The message creates the stand-in answered 200, in order.
fn creates(standin: &StandIn) -> Vec<Recorded> {
    standin
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST" && r.path.ends_with("/messages") && r.status == 200)
        .collect()
}

fn names_and_data(r: &Recorded) -> Vec<(String, String, String)> {
    r.files
        .iter()
        .map(|f| {
            (
                f.field.clone(),
                f.filename.clone().unwrap_or_default(),
                String::from_utf8(f.data.clone()).unwrap(),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_short_text_is_shown_inline_and_kept_through_the_winning_click() {
    let app = App::discord().await;
    let (mut c, _) = app
        .ask(
            "ctx-inline",
            &with_context(json!({"text": "rm -rf build/ ```oops``` <@123>"})),
        )
        .await;
    let create = creates(app.standin()).remove(0);
    assert!(create.files.is_empty(), "no upload for a short text");
    let body = create.body.clone().unwrap();
    // The text sits in a code block that nothing in it can close.
    assert_eq!(
        body["content"],
        "**Context**\n```\nrm -rf build/ `\u{200B}``oops`\u{200B}`` <@123>\n```"
    );
    assert_eq!(body["attachments"], json!([]));
    let m = app.messages(CHANNEL).remove(0);
    let cb = app.press(&m, &alice(), "No, keep them").await;
    let state = final_state(&cb);
    // The update leaves content and attachments as they are (no key, no change).
    assert!(state.get("content").is_none(), "{cb}");
    assert!(state.get("attachments").is_none(), "{cb}");
    let after = app.messages(CHANNEL).remove(0);
    assert_eq!(after["content"], body["content"]);
    assert_eq!(after["components"], json!([]));
    expect_event(&mut c, "answered").await;
    app.assert_payloads_valid();
}

#[tokio::test]
async fn a_long_text_and_files_go_as_attachments_of_the_first_question_only() {
    let app = App::discord().await;
    let long = "line of the plan\n".repeat(200);
    let mut input = with_context(json!({
        "text": long,
        "files": [
            {"name": "change.patch", "content": "--- a/x\n+++ b/x\n-old\n+new\n"},
            {"name": "plan.md", "content": "# Plan\n1. deploy\n"}
        ]
    }));
    input["questions"]
        .as_array_mut()
        .unwrap()
        .push(json!({"id": "why", "question": "Why?"}));
    let (mut c, _) = app.ask("ctx-files", &input).await;
    let posts = creates(app.standin());
    assert_eq!(posts.len(), 2);
    let first = &posts[0];
    assert!(
        first
            .header("content-type")
            .unwrap()
            .starts_with("multipart/form-data; boundary="),
        "{:?}",
        first.headers
    );
    assert_eq!(
        names_and_data(first),
        vec![
            ("files[0]".into(), "context.md".into(), long.clone()),
            (
                "files[1]".into(),
                "change.patch".into(),
                "--- a/x\n+++ b/x\n-old\n+new\n".into()
            ),
            (
                "files[2]".into(),
                "plan.md".into(),
                "# Plan\n1. deploy\n".into()
            ),
        ]
    );
    assert!(first
        .files
        .iter()
        .all(|f| f.content_type.as_deref() == Some("text/plain; charset=utf-8")));
    let payload = first.body.clone().unwrap();
    assert_eq!(
        payload["attachments"],
        json!([
            {"id": "0", "filename": "context.md"},
            {"id": "1", "filename": "change.patch"},
            {"id": "2", "filename": "plan.md"}
        ])
    );
    assert_eq!(
        payload["content"],
        "**Context**\nAttached: `context.md`, `change.patch`, `plan.md`"
    );
    assert!(
        payload["nonce"].is_string() && payload["enforce_nonce"] == true,
        "{payload}"
    );
    assert_eq!(payload["embeds"].as_array().unwrap().len(), 1);
    // The second question's message carries no context.
    assert!(posts[1].files.is_empty());
    assert!(posts[1].body.as_ref().unwrap().get("content").is_none());

    let msgs = app.messages(CHANNEL);
    let shown: Vec<(&str, u64)> = msgs[0]["attachments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["filename"].as_str().unwrap(), a["size"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        shown,
        vec![
            ("context.md", long.len() as u64),
            ("change.patch", 26),
            ("plan.md", 17)
        ]
    );
    assert_eq!(msgs[1]["attachments"], json!([]));

    // Answer the first question in Discord, then cancel: neither the update nor the edit
    // drops the context.
    let cb = app
        .press(&msgs[0], &alice(), "Yes, delete them (Recommended)")
        .await;
    assert!(final_state(&cb).get("attachments").is_none(), "{cb}");
    let reply = Client::connect(&app.socket())
        .await
        .unwrap()
        .call_json(&json!({"op": "cancel", "request_id": "ctx-files", "reason": "wrong plan"}))
        .await
        .unwrap();
    assert_eq!(reply["event"], "cancelled", "{reply}");
    let err = expect_event(&mut c, "error").await;
    assert_eq!(err["code"], "ABORTED");
    let edit = app.edit_of(&msgs[1]).await;
    assert!(
        edit.get("attachments").is_none() && edit.get("content").is_none(),
        "{edit}"
    );
    let after = app.messages(CHANNEL);
    assert_eq!(after[0]["attachments"].as_array().unwrap().len(), 3);
    assert_eq!(after[0]["content"], payload["content"]);
    app.assert_payloads_valid();
}

#[tokio::test]
async fn text_of_many_lines_goes_as_a_file_and_a_file_named_context_md_keeps_its_name() {
    let app = App::discord().await;
    let text = "x\n".repeat(41); // short, but taller than 40 lines
    let input = with_context(json!({
        "text": text,
        "files": [{"name": "context.md", "content": "mine"}]
    }));
    let (_c, _) = app.ask("ctx-lines", &input).await;
    let create = creates(app.standin()).remove(0);
    let names: Vec<String> = create
        .files
        .iter()
        .map(|f| f.filename.clone().unwrap())
        .collect();
    assert_eq!(names, ["context-2.md", "context.md"]);
    app.assert_payloads_valid();
}

#[tokio::test]
async fn context_errors_name_the_field() {
    // Lines long enough for a file one byte over its limit.
    let app = App::discord_with(|c| c.limits.max_line_bytes = 4 * 1024 * 1024).await;
    let file = |name: &str| json!({"name": name, "content": "x"});
    let cases = [
        (
            json!({"text": "a".repeat(16 * 1024 + 1)}),
            "context.text: at most 16384 bytes, got 16385",
        ),
        (
            json!({"files": [file("a"), file("")]}),
            "context.files[1].name: must not be empty",
        ),
        (
            json!({"files": [file("a.diff"), file("A.diff")]}),
            "context.files[1].name: \"A.diff\" is used twice",
        ),
        (
            json!({"files": (0..10).map(|i| file(&format!("f{i}"))).collect::<Vec<_>>()}),
            "context.files: at most 9 files, got 10",
        ),
        (
            json!({"files": [file("ok"), {"name": "big", "content": "x".repeat(1024 * 1024 + 1)}]}),
            "context.files[1].content: at most 1048576 bytes",
        ),
        (
            json!({"files": [file("../x")]}),
            "context.files[0].name: '/' is not allowed in a file name",
        ),
        (json!({"text": ["x"]}), "context.text: must be a string"),
    ];
    let mut c = app.client().await;
    for (i, (context, want)) in cases.iter().enumerate() {
        let line = ask_line(&format!("bad-{i}"), &with_context(context.clone()));
        let reply = c.call_json(&line).await.unwrap();
        assert_eq!(reply["code"], "INVALID_REQUEST", "{reply}");
        let msg = reply["message"].as_str().unwrap();
        assert!(msg.starts_with(want), "{msg:?} should start {want:?}");
    }
    assert!(app.messages(CHANNEL).is_empty(), "nothing was posted");
}

#[tokio::test]
async fn the_context_is_part_of_the_idempotency_check_and_survives_a_restart() {
    let mut app = App::discord().await;
    let a = with_context(json!({"text": "deploy v1"}));
    let b = with_context(json!({"text": "deploy v2"}));
    let (c1, _) = app.ask("ctx-idem", &a).await;
    // The same id and context re-attaches; another context is refused, naming the field.
    let (_c2, again) = app.ask("ctx-idem", &a).await;
    assert_eq!(again["event"], "accepted");
    let mut c3 = app.client().await;
    let reply = c3.call_json(&ask_line("ctx-idem", &b)).await.unwrap();
    assert_eq!(reply["code"], "INVALID_REQUEST", "{reply}");
    assert!(
        reply["message"]
            .as_str()
            .unwrap()
            .starts_with("context: request_id \"ctx-idem\" is already used with another context"),
        "{reply}"
    );
    let without = c3
        .call_json(&ask_line("ctx-idem", &yes_no("q")))
        .await
        .unwrap();
    assert_eq!(without["code"], "INVALID_REQUEST", "{without}");
    drop(c1);
    drop(_c2);
    // The stored context is what the restarted daemon compares with.
    app.restart().await;
    let (_c4, back) = app.ask("ctx-idem", &a).await;
    assert_eq!(back["event"], "accepted", "{back}");
    let mut c5 = app.client().await;
    let reply = c5.call_json(&ask_line("ctx-idem", &b)).await.unwrap();
    assert_eq!(reply["code"], "INVALID_REQUEST", "{reply}");
    let stored = app.store().by_id("ctx-idem").await.unwrap().unwrap();
    assert_eq!(
        stored.context.as_deref().and_then(|c| c.text.as_deref()),
        Some("deploy v1")
    );
}

/// A crash after Discord took the message but before its id was stored: the restarted daemon
/// posts again with the same nonce and the same files, and Discord (the stand-in) returns the
/// message it has instead of making a second one.
#[tokio::test]
async fn a_crash_after_posting_reposts_the_same_attachments() {
    let standin = StandIn::start().await;
    let bin = Bin::new().discord(&standin);
    let input = with_context(json!({
        "text": "step\n".repeat(100),
        "files": [{"name": "change.patch", "content": "+one line\n"}]
    }));
    let serve = |crash: Option<&'static str>| {
        let mut cmd = bin.cmd(&["serve"]);
        if let Some(p) = crash {
            cmd.env(askrelay::crash::ENV, p);
        }
        cmd
    };
    let identified = standin.identify_count();
    let crashing = bin.serve_cmd(serve(Some("posted"))).await;
    within(
        "a gateway session",
        standin.wait_identify_count(identified + 1),
    )
    .await;
    let mut c = Client::connect(&bin.socket()).await.unwrap();
    c.send_json(&ask_line("ctx-crash", &input)).await.unwrap();
    let (status, _) = crashing.finish().await;
    assert!(!status.success(), "the daemon aborts at the crash point");
    let identified = standin.identify_count();
    let _daemon = bin.serve_cmd(serve(None)).await.drain();
    within(
        "a gateway session",
        standin.wait_identify_count(identified + 1),
    )
    .await;
    let mut c = Client::connect(&bin.socket()).await.unwrap();
    c.send_json(&ask_line("ctx-crash", &input)).await.unwrap();
    expect_event(&mut c, "accepted").await;
    within("the repost", async {
        let mut seen = standin.subscribe();
        while creates(&standin).len() < 2 {
            seen.changed().await.unwrap();
        }
    })
    .await;
    // One post before the crash and at least one after (a start-up repair pass may post it
    // once more, as faults::crash_after_posting_before_recording_the_message_id allows): every
    // one the same files and the same payload_json, nonce included.
    let posts = creates(&standin);
    assert!(posts.len() >= 2, "{}", posts.len());
    assert_eq!(names_and_data(&posts[0]).len(), 2);
    for p in &posts[1..] {
        assert_eq!(names_and_data(&posts[0]), names_and_data(p));
        assert_eq!(posts[0].body, p.body);
    }
    let msgs = standin.messages_in(CHANNEL);
    assert_eq!(msgs.len(), 1, "de-duplicated by the nonce");
    assert_eq!(msgs[0]["attachments"].as_array().unwrap().len(), 2);
    assert_bodies_valid(&standin);
}

#[tokio::test]
async fn ask_flags_set_the_context() {
    let app = App::discord().await;
    let bin = Bin::new().env("ASKRELAY_SOCKET_PATH", app.socket().display());
    let diff = bin.dir().join("my change.diff");
    std::fs::write(&diff, "+x\n").unwrap();
    let question = bin.dir().join("q.json");
    std::fs::write(&question, yes_no("q").to_string()).unwrap();
    // A file that is not UTF-8 text is refused, named, before anything is sent.
    let blob = bin.dir().join("blob.bin");
    std::fs::write(&blob, [0xff, 0xfe, 0x00]).unwrap();
    let (code, _, err) = bin
        .run(&[
            "ask",
            question.to_str().unwrap(),
            "--context-file",
            blob.to_str().unwrap(),
        ])
        .await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("blob.bin: is not UTF-8 text"), "{err}");
    assert!(creates(app.standin()).is_empty());

    let asker = bin
        .ask(
            &[
                "--request-id",
                "ctx-cli",
                "--context",
                "Deploys 4.2",
                "--context-file",
                diff.to_str().unwrap(),
            ],
            &yes_no("q").to_string(),
        )
        .await;
    let create = within(
        "the question to be posted",
        app.standin().wait_for_request(|r| {
            r.method == "POST" && r.path.ends_with("/messages") && r.status == 200
        }),
    )
    .await;
    assert_eq!(
        create.body.as_ref().unwrap()["content"],
        "**Context**\n```\nDeploys 4.2\n```\n```diff\n+x\n```"
    );
    // A short diff is shown in the message, not attached.
    assert!(names_and_data(&create).is_empty());
    let m = app.messages(CHANNEL).remove(0);
    app.press(&m, &alice(), "No, keep them").await;
    let (code, out) = asker.finish().await;
    assert_eq!(code, 0);
    assert_eq!(
        out.trim(),
        r#"{"answers":[{"id":"q","selected":["No, keep them"]}]}"#
    );
    app.assert_payloads_valid();
}
