//! The front doors for approvals, as real processes against the daemon with the Discord
//! stand-in: `askrelay hook claude-code` (a PreToolUse event on stdin, the hook's JSON decision
//! on stdout) and `askrelay approve -- CMD` (the command runs only when approved).

use crate::harness::*;
use crate::support::standin::{Recorded, StandIn};
use askrelay::config::Route;
use serde_json::{json, Value};
use std::process::Stdio;
use tokio::io::AsyncWriteExt;
use tokio::process::Child;

/// The binary, talking to `app`'s socket.
fn bin_for(app: &App) -> Bin {
    Bin::new().env("ASKRELAY_SOCKET_PATH", app.socket().display())
}

/// Starts `askrelay ARGS` with `stdin`.
async fn start(bin: &Bin, args: &[&str], stdin: &str) -> Child {
    let mut child = bin.cmd(args).stdin(Stdio::piped()).spawn().unwrap();
    let mut pipe = child.stdin.take().unwrap();
    pipe.write_all(stdin.as_bytes()).await.unwrap();
    drop(pipe);
    child
}

/// Exit code, stdout and stderr.
async fn finish(child: Child) -> (i32, String, String) {
    let out = within("the command to exit", child.wait_with_output())
        .await
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The first question message's create, once it is there.
async fn posted(standin: &StandIn) -> Recorded {
    within(
        "the question to be posted",
        standin.wait_for_request(|r| {
            r.method == "POST" && r.path.ends_with("/messages") && r.status == 200
        }),
    )
    .await
}

/// The `hookSpecificOutput` the hook printed, checking it is the only line on stdout.
fn decision(stdout: &str) -> Value {
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "one JSON line on stdout: {stdout:?}");
    let v: Value = serde_json::from_str(lines[0]).unwrap();
    let out = v["hookSpecificOutput"].clone();
    assert_eq!(out["hookEventName"], "PreToolUse", "{v}");
    assert_eq!(
        v.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["hookSpecificOutput"],
        "{v}"
    );
    out
}

fn pre_tool_use(tool: &str, input: Value, cwd: &str, id: &str) -> String {
    json!({
        "session_id": "sess-42",
        "transcript_path": "/home/dev/.claude/projects/x/sess-42.jsonl",
        "cwd": cwd,
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": input,
        "tool_use_id": id
    })
    .to_string()
}

const ALICE: &str = "alice (Discord user 4242)";

#[tokio::test]
async fn the_hook_allows_a_bash_command_when_allowed() {
    let app = App::discord().await;
    let bin = bin_for(&app);
    let event = pre_tool_use(
        "Bash",
        json!({"command": "rm -rf build/", "description": "Clean the build"}),
        "/work/shop",
        "toolu_01A",
    );
    let hook = start(&bin, &["hook", "claude-code"], &event).await;
    let create = posted(app.standin()).await;
    let body = create.body.unwrap();
    assert_eq!(body["content"], "**Context**\n```\nrm -rf build/\n```");
    assert_eq!(body["embeds"][0]["title"], "Claude Code");
    assert_eq!(
        shown(body["embeds"][0]["description"].as_str().unwrap()),
        "Allow Bash?\n\nClean the build"
    );
    let footer = body["embeds"][0]["footer"]["text"].as_str().unwrap();
    assert_eq!(
        footer,
        "request claude-code-toolu_01A · agent claude-code · cwd=/work/shop project=shop \
         session=sess-42 tool=Bash"
    );
    let m = app.messages(CHANNEL).remove(0);
    assert_eq!(
        controls(&m)
            .iter()
            .map(|(_, l)| l.as_str())
            .collect::<Vec<_>>(),
        ["Allow", "Deny", "Other…"]
    );
    final_state(&app.press(&m, &alice(), "Allow").await);
    let (code, out, _) = finish(hook).await;
    assert_eq!(code, 0);
    let d = decision(&out);
    assert_eq!(d["permissionDecision"], "allow");
    assert_eq!(
        d["permissionDecisionReason"],
        format!("Allowed by {ALICE} via askrelay")
    );
    app.assert_payloads_valid();
}

#[tokio::test]
async fn the_hook_denies_an_edit_with_the_reason_typed_under_other() {
    let app = App::discord().await;
    let bin = bin_for(&app);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("notes.txt");
    std::fs::write(&file, "one\ntwo\nthree\n").unwrap();
    let event = pre_tool_use(
        "Edit",
        json!({"file_path": file.display().to_string(), "old_string": "two", "new_string": "TWO"}),
        &dir.path().display().to_string(),
        "toolu_02B",
    );
    let hook = start(&bin, &["hook", "claude-code"], &event).await;
    let create = posted(app.standin()).await;
    // The file and the diff, with the line number the fragment has in the file.
    assert_eq!(
        create.body.as_ref().unwrap()["content"],
        "**Context**\n```\nnotes.txt\n```\nAttached: `notes.txt.diff`"
    );
    assert_eq!(create.files.len(), 1);
    assert_eq!(create.files[0].filename.as_deref(), Some("notes.txt.diff"));
    assert_eq!(
        String::from_utf8(create.files[0].data.clone()).unwrap(),
        "--- notes.txt\n+++ notes.txt\n@@ -2,1 +2,1 @@\n-two\n+TWO\n"
    );
    let m = app.messages(CHANNEL).remove(0);
    let cb = app.press(&m, &alice(), "Other…").await;
    assert_eq!(cb["type"], 9, "{cb}");
    let modal = cb["data"]["custom_id"].as_str().unwrap().to_owned();
    final_state(
        &app.submit_modal(&m, &alice(), &modal, "Keep it lower case, it is a key")
            .await,
    );
    let (code, out, _) = finish(hook).await;
    assert_eq!(code, 0);
    let d = decision(&out);
    assert_eq!(d["permissionDecision"], "deny");
    assert_eq!(
        d["permissionDecisionReason"],
        "Keep it lower case, it is a key"
    );
    app.assert_payloads_valid();
}

#[tokio::test]
async fn the_hook_shows_a_new_file_as_a_diff_and_denies_with_the_deny_button() {
    let app = App::discord().await;
    let bin = bin_for(&app);
    let dir = tempfile::tempdir().unwrap();
    let event = pre_tool_use(
        "Write",
        json!({"file_path": dir.path().join("src/new.rs").display().to_string(), "content": "fn main() {}\n"}),
        &dir.path().display().to_string(),
        "toolu_03C",
    );
    let hook = start(&bin, &["hook", "claude-code"], &event).await;
    let create = posted(app.standin()).await;
    assert_eq!(
        create.body.as_ref().unwrap()["content"],
        "**Context**\n```\nsrc/new.rs\n(a new file)\n```\nAttached: `new.rs.diff`"
    );
    assert_eq!(
        String::from_utf8(create.files[0].data.clone()).unwrap(),
        "--- /dev/null\n+++ src/new.rs\n@@ -0,0 +1,1 @@\n+fn main() {}\n"
    );
    let m = app.messages(CHANNEL).remove(0);
    final_state(&app.press(&m, &alice(), "Deny").await);
    let (code, out, _) = finish(hook).await;
    assert_eq!(code, 0);
    let d = decision(&out);
    assert_eq!(d["permissionDecision"], "deny");
    assert_eq!(
        d["permissionDecisionReason"],
        format!("Denied by {ALICE} via askrelay")
    );
    app.assert_payloads_valid();
}

#[tokio::test]
async fn the_hook_falls_back_to_ask_when_the_daemon_is_down() {
    let bin = Bin::new(); // its socket path has no daemon
    let event = pre_tool_use("Bash", json!({"command": "ls"}), "/tmp", "toolu_04D");
    let (code, out, _) = finish(start(&bin, &["hook", "claude-code"], &event).await).await;
    assert_eq!(code, 0);
    let d = decision(&out);
    assert_eq!(d["permissionDecision"], "ask");
    let reason = d["permissionDecisionReason"].as_str().unwrap();
    assert!(
        reason.contains("cannot reach the askrelay daemon"),
        "{reason}"
    );
    // Not even a PreToolUse event: still a decision, and it is ask.
    let (code, out, _) = finish(start(&bin, &["hook", "claude-code"], "not json").await).await;
    assert_eq!(code, 0);
    assert_eq!(decision(&out)["permissionDecision"], "ask");
}

#[tokio::test]
async fn the_hook_falls_back_to_ask_on_no_answerer() {
    let app = App::start_with(|c| c.terminal.enabled = Some(false)).await;
    let bin = bin_for(&app);
    let event = pre_tool_use("Bash", json!({"command": "ls"}), "/tmp", "toolu_05E");
    let (code, out, _) = finish(start(&bin, &["hook", "claude-code"], &event).await).await;
    assert_eq!(code, 0);
    let d = decision(&out);
    assert_eq!(d["permissionDecision"], "ask");
    let reason = d["permissionDecisionReason"].as_str().unwrap();
    assert!(reason.starts_with("askrelay: NO_ANSWERER: "), "{reason}");
}

#[tokio::test]
async fn the_hook_denies_on_expiry_unless_told_to_ask() {
    let app = App::discord_with(|c| {
        let route: Route = serde_json::from_value(json!({
            "name": "hurry", "match": {"project": "urgent"}, "channel_id": CHANNEL.to_string(),
            "expire_after_secs": 1
        }))
        .unwrap();
        c.routes.push(route);
    })
    .await;
    let bin = bin_for(&app);
    let args = ["hook", "claude-code", "--project", "urgent"];
    let deny = start(
        &bin,
        &args,
        &pre_tool_use("Bash", json!({"command": "ls"}), "/tmp", "toolu_06F"),
    )
    .await;
    let ask = start(
        &bin,
        &[&args[..], &["--on-expire", "ask"]].concat(),
        &pre_tool_use("Bash", json!({"command": "ls"}), "/tmp", "toolu_06G"),
    )
    .await;
    let (_, out, _) = finish(deny).await;
    let d = decision(&out);
    assert_eq!(d["permissionDecision"], "deny", "{d}");
    assert!(d["permissionDecisionReason"]
        .as_str()
        .unwrap()
        .starts_with("askrelay: nobody answered in time"));
    let (_, out, _) = finish(ask).await;
    assert_eq!(decision(&out)["permissionDecision"], "ask");
    app.assert_payloads_valid();
}

#[tokio::test]
async fn approve_runs_the_command_when_approved_and_exits_with_its_status() {
    let app = App::discord().await;
    let bin = bin_for(&app);
    let plan = bin.dir().join("plan.md");
    std::fs::write(&plan, "1. drain\n2. deploy\n").unwrap();
    let child = start(
        &bin,
        &[
            "approve",
            "--context-file",
            plan.to_str().unwrap(),
            "--route-scope",
            "project=shop",
            "--",
            "sh",
            "-c",
            "echo ran; exit 3",
        ],
        "",
    )
    .await;
    let create = posted(app.standin()).await;
    let body = create.body.unwrap();
    let content = body["content"].as_str().unwrap();
    assert!(
        content.starts_with("**Context**\n```\n$ sh -c 'echo ran; exit 3'\n(in "),
        "{content}"
    );
    assert!(content.ends_with("\n```\nAttached: `plan.md`"), "{content}");
    assert_eq!(
        shown(body["embeds"][0]["description"].as_str().unwrap()),
        "Run this command?\n$ sh -c 'echo ran; exit 3'"
    );
    assert!(body["embeds"][0]["footer"]["text"]
        .as_str()
        .unwrap()
        .ends_with("project=shop"));
    assert_eq!(
        String::from_utf8(create.files[0].data.clone()).unwrap(),
        "1. drain\n2. deploy\n"
    );
    let m = app.messages(CHANNEL).remove(0);
    final_state(&app.press(&m, &alice(), "Run").await);
    let (code, out, err) = finish(child).await;
    assert_eq!(code, 3, "the command's own status: {err}");
    assert_eq!(out, "ran\n");
    assert!(
        err.contains(&format!(
            "askrelay: approved by {ALICE}; running sh -c 'echo ran; exit 3'"
        )),
        "{err}"
    );
    app.assert_payloads_valid();
}

#[tokio::test]
async fn approve_does_not_run_a_denied_or_cancelled_command() {
    let app = App::discord().await;
    let bin = bin_for(&app);
    let marker = bin.dir().join("ran");
    let touch = ["--", "touch", marker.to_str().unwrap()];

    // Denied with a reason.
    let child = start(
        &bin,
        &[&["approve", "--request-id", "ap-deny"][..], &touch].concat(),
        "",
    )
    .await;
    posted(app.standin()).await;
    let m = app.messages(CHANNEL).remove(0);
    let cb = app.press(&m, &alice(), "Other…").await;
    let modal = cb["data"]["custom_id"].as_str().unwrap().to_owned();
    final_state(
        &app.submit_modal(&m, &alice(), &modal, "not during the freeze")
            .await,
    );
    let (code, out, err) = finish(child).await;
    assert_eq!(code, 5, "{err}");
    assert_eq!(out, "");
    assert!(
        err.contains(&format!(
            "askrelay: denied by {ALICE}: not during the freeze"
        )),
        "{err}"
    );

    // Denied with the button.
    let child = start(
        &bin,
        &[&["approve", "--request-id", "ap-button"][..], &touch].concat(),
        "",
    )
    .await;
    let m = within("the second question", async {
        let mut seen = app.standin().subscribe();
        loop {
            if let Some(m) = app.messages(CHANNEL).get(1).cloned() {
                return m;
            }
            seen.changed().await.unwrap();
        }
    })
    .await;
    final_state(&app.press(&m, &alice(), "Do not run").await);
    let (code, _, err) = finish(child).await;
    assert_eq!(code, 5, "{err}");
    assert!(
        err.contains(&format!("askrelay: denied by {ALICE}\n")),
        "{err}"
    );

    // Cancelled by someone else.
    let child = start(
        &bin,
        &[&["approve", "--request-id", "ap-cancel"][..], &touch].concat(),
        "",
    )
    .await;
    within("the third question", async {
        let mut seen = app.standin().subscribe();
        while app.messages(CHANNEL).len() < 3 {
            seen.changed().await.unwrap();
        }
    })
    .await;
    let reply = app
        .client()
        .await
        .call_json(&json!({"op": "cancel", "request_id": "ap-cancel", "reason": "changed plans"}))
        .await
        .unwrap();
    assert_eq!(reply["event"], "cancelled", "{reply}");
    let (code, _, err) = finish(child).await;
    assert_eq!(code, 5, "{err}");
    assert!(err.contains("ABORTED"), "{err}");

    // The daemon is not there.
    let down = Bin::new();
    let (code, _, err) = finish(start(&down, &[&["approve"][..], &touch].concat(), "").await).await;
    assert_eq!(code, 7, "{err}");

    assert!(!marker.exists(), "the command never ran");
    app.assert_payloads_valid();
}
