//! Replies at the end of a turn with the real CLIs (docs/approvals.md, "Replies at the end of a
//! turn"): the model ends its turn with a question; `askrelay hook … ` on `Stop` posts it; a
//! reply in Discord comes back as `{"decision":"block","reason":REPLY}`, and the CLI carries on
//! with REPLY (the fake model API sees it in the next turn's request); Done lets the run end.

use super::*;
use askrelay::config::Route;
use std::collections::BTreeMap;

/// What the model says at the end of each of its turns.
const QUESTION: &str = "Migrated prod. Shall I also migrate the staging DB?";
/// What a person replies.
const REPLY: &str = "Yes, staging too, then stop";

/// A daemon whose Stop requests go to a route with `stop_replies` (or to the default route,
/// which takes none, with `replies` false).
async fn daemon_for_stops(replies: bool) -> App {
    App::discord_with(|c| {
        if replies {
            c.routes.push(Route {
                matches: BTreeMap::from([("tool".into(), "Stop".into())]),
                stop_replies: Some(true),
                ..Route::new("turns", CHANNEL)
            });
        }
    })
    .await
}

/// Claude Code's settings: `askrelay hook claude-code` on Stop (Stop takes no matcher).
fn stop_hook() -> Value {
    json!({"hooks": {"Stop": [{"hooks": [
        {"type": "command", "command": hook_command("claude-code"), "timeout": 60}]}]}})
}

/// The `n`th message posted in the channel (from 0), once it is.
async fn nth_message(app: &App, n: usize) -> Value {
    within(&format!("message {n} to be posted"), async {
        let mut rx = app.standin().subscribe();
        loop {
            if let Some(m) = app.messages(CHANNEL).into_iter().nth(n) {
                return m;
            }
            let _ = rx.changed().await;
        }
    })
    .await
}

/// Replies `text` to the end of a turn: Reply… opens a modal, the modal carries the text.
async fn reply(app: &App, m: &Value, text: &str) {
    let opened = app.press(m, &alice(), "Reply…").await;
    assert_eq!(opened["type"], 9, "Reply… opens a modal: {opened}");
    let modal = opened["data"]["custom_id"].as_str().unwrap().to_owned();
    final_state(&app.submit_modal(m, &alice(), &modal, text).await);
}

/// The user message (as JSON) among `messages` (Anthropic's `messages`, OpenAI's `input`)
/// that has `text`.
fn user_message_with(messages: &Value, text: &str) -> String {
    let found: Vec<String> = messages
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "user")
        .map(Value::to_string)
        .filter(|m| m.contains(text))
        .collect();
    assert_eq!(found.len(), 1, "one user message has {text:?}: {messages}");
    found[0].clone()
}

claude_code_matrix!(claude_code_stop_a_reply_in_discord_keeps_it_working);
async fn claude_code_stop_a_reply_in_discord_keeps_it_working(cc: Cc) {
    let app = daemon_for_stops(true).await;
    let work = tempfile::tempdir().unwrap();
    let llm = FakeLlm::anthropic_saying(Vec::new(), QUESTION).await;
    let run = Claude::start(&cc.bin, &llm, &app, stop_hook(), Mode::Print, work.path()).await;
    let first = nth_message(&app, 0).await;
    let shown = serde_json::to_string(&first).unwrap();
    assert!(shown.contains("staging DB"), "the last message: {shown}");
    assert_eq!(llm.turns_showing(REPLY), 0);
    reply(&app, &first, REPLY).await;
    // Claude Code carries on: the model is asked again, with the reply; it ends its turn
    // again, and the second Stop (stop_hook_active) is asked again.
    let second = nth_message(&app, 1).await;
    let shown = serde_json::to_string(&second).unwrap();
    assert!(shown.contains("finished its turn again"), "{shown}");
    assert_eq!(llm.turns_showing(REPLY), 1, "the next turn has the reply");
    // How each version hands the reply to the model (a user message):
    let said = user_message_with(&llm.turns()[1]["messages"], REPLY);
    assert!(
        said.contains(&format!("Stop hook feedback:\\n{REPLY}")),
        "{said}"
    );
    if cc.is_newest() {
        // 2.1.332 wraps it in a system reminder: relayed words, no approval of the user's.
        assert!(
            said.contains("<system-reminder>") && said.contains("is data"),
            "{said}"
        );
    } else {
        assert!(!said.contains("<system-reminder>"), "{said}");
    }
    final_state(&app.press(&second, &alice(), "Done").await);
    let (result, err) = run.finish().await;
    assert_eq!(result["is_error"], false, "{result} {err}");
    assert_eq!(llm.turns().len(), 2, "two turns, then the run ends");
    app.assert_payloads_valid();
}

claude_code_matrix!(claude_code_stop_done_ends_the_run);
async fn claude_code_stop_done_ends_the_run(cc: Cc) {
    let app = daemon_for_stops(true).await;
    let work = tempfile::tempdir().unwrap();
    let llm = FakeLlm::anthropic_saying(Vec::new(), QUESTION).await;
    // As `askrelay setup claude-code --stop` set it up.
    let setup = Settings::Setup(vec!["--no-mcp".into(), "--stop".into()]);
    let run = Claude::start(&cc.bin, &llm, &app, setup, Mode::Print, work.path()).await;
    let first = nth_message(&app, 0).await;
    final_state(&app.press(&first, &alice(), "Done").await);
    let (result, err) = run.finish().await;
    assert_eq!(result["is_error"], false, "{result} {err}");
    assert_eq!(llm.turns().len(), 1, "one turn: Done ends the run");
    assert_eq!(app.messages(CHANNEL).len(), 1);
}

claude_code_matrix!(claude_code_stop_without_stop_replies_ends_at_once);
async fn claude_code_stop_without_stop_replies_ends_at_once(cc: Cc) {
    let app = daemon_for_stops(false).await;
    let work = tempfile::tempdir().unwrap();
    let llm = FakeLlm::anthropic_saying(Vec::new(), QUESTION).await;
    let run = Claude::start(&cc.bin, &llm, &app, stop_hook(), Mode::Print, work.path()).await;
    let (result, err) = run.finish().await;
    assert_eq!(result["is_error"], false, "{result} {err}");
    assert_eq!(llm.turns().len(), 1);
    assert!(app.messages(CHANNEL).is_empty(), "nothing posted");
    assert_eq!(app.hub().pending_count(), 0);
}

/// `codex exec` with `askrelay hook codex` on Stop, the model ending its turn with
/// [`QUESTION`].
/// `set_up`: with what `askrelay setup codex --stop` writes, rather than a hooks.json of
/// the test's own.
async fn codex_stop_run(bin: &Path, replies: bool, set_up: bool) -> (App, Child, CodexRun) {
    let app = daemon_for_stops(replies).await;
    let llm = FakeLlm::openai_saying(Vec::new(), QUESTION).await;
    let run = CodexRun::with(llm, tempfile::tempdir().unwrap(), !set_up);
    if set_up {
        let out = askrelay_in(run.home.path())
            .as_std_mut()
            .args(["setup", "codex", "--no-mcp", "--stop", "--codex-home"])
            .arg(run.home.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    } else {
        std::fs::write(
            run.home.path().join("hooks.json"),
            json!({"hooks": {"Stop": [{"hooks": [
                {"type": "command", "command": hook_command("codex"), "timeout": 60}]}]}})
            .to_string(),
        )
        .unwrap();
    }
    let child = run.command(bin, &app.socket()).spawn().unwrap();
    (app, child, run)
}

async fn codex_done(child: Child) -> String {
    let out = within("codex to finish", child.wait_with_output())
        .await
        .unwrap();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{all}");
    all
}

#[tokio::test]
async fn codex_stop_a_reply_in_discord_keeps_it_working() {
    let bin = need!(
        "codex",
        "agents::stop::codex_stop_a_reply_in_discord_keeps_it_working"
    );
    let (app, child, run) = codex_stop_run(&bin, true, false).await;
    let llm = &run.llm;
    let first = nth_message(&app, 0).await;
    let shown = serde_json::to_string(&first).unwrap();
    assert!(shown.contains("staging DB"), "the last message: {shown}");
    reply(&app, &first, REPLY).await;
    let second = nth_message(&app, 1).await;
    assert!(
        serde_json::to_string(&second)
            .unwrap()
            .contains("finished its turn again"),
        "{second}"
    );
    assert_eq!(llm.turns_showing(REPLY), 1, "the next turn has the reply");
    // Codex 0.171.0 hands it to the model as a user message of its own.
    let said = user_message_with(&llm.turns()[1]["input"], REPLY);
    assert!(
        said.contains("<hook_prompt") && said.contains(&format!(">{REPLY}</hook_prompt>")),
        "{said}"
    );
    final_state(&app.press(&second, &alice(), "Done").await);
    codex_done(child).await;
    assert_eq!(llm.turns().len(), 2, "two turns, then the run ends");
    app.assert_payloads_valid();
}

#[tokio::test]
async fn codex_stop_done_ends_the_run() {
    let bin = need!("codex", "agents::stop::codex_stop_done_ends_the_run");
    // As `askrelay setup codex --stop` set it up.
    let (app, child, run) = codex_stop_run(&bin, true, true).await;
    let llm = &run.llm;
    let first = nth_message(&app, 0).await;
    final_state(&app.press(&first, &alice(), "Done").await);
    codex_done(child).await;
    assert_eq!(llm.turns().len(), 1, "one turn: Done ends the run");
}

#[tokio::test]
async fn codex_stop_without_stop_replies_ends_at_once() {
    let bin = need!(
        "codex",
        "agents::stop::codex_stop_without_stop_replies_ends_at_once"
    );
    let (app, child, run) = codex_stop_run(&bin, false, false).await;
    let llm = &run.llm;
    codex_done(child).await;
    assert_eq!(llm.turns().len(), 1);
    assert!(app.messages(CHANNEL).is_empty(), "nothing posted");
}

claude_code_matrix!(claude_code_stop_replies_stop_at_the_cap_on_blocks_in_a_row);
/// With `CLAUDE_CODE_STOP_HOOK_BLOCK_CAP=2`, Claude Code carries on after two replies in a row
/// and would end the turn whatever a third said ("A hook blocked the turn from ending 3
/// consecutive times — overriding and ending turn"). So askrelay asks twice, not a third time.
async fn claude_code_stop_replies_stop_at_the_cap_on_blocks_in_a_row(cc: Cc) {
    let app = daemon_for_stops(true).await;
    let work = tempfile::tempdir().unwrap();
    // Each turn ends in words of its own, as a model's do: the hook tells from them that
    // Claude Code's transcript has caught up with the turn.
    let llm = FakeLlm::anthropic_saying(Vec::new(), "Shall I go on? (turn {turn})").await;
    let run = Claude::start_with_env(
        &cc.bin,
        &llm,
        &app,
        stop_hook(),
        Mode::Print,
        work.path(),
        &[("CLAUDE_CODE_STOP_HOOK_BLOCK_CAP", "2")],
    )
    .await;
    for n in 0..2 {
        let m = nth_message(&app, n).await;
        reply(&app, &m, &format!("reply {n}")).await;
    }
    let (result, err) = run.finish().await;
    assert_eq!(result["is_error"], false, "{result} {err}");
    assert_eq!(
        llm.turns_showing("reply 1"),
        1,
        "both replies reached the model"
    );
    assert_eq!(llm.turns().len(), 3, "the first turn and one per reply");
    assert_eq!(
        app.messages(CHANNEL).len(),
        2,
        "the third end of the turn is not posted: a reply would be thrown away"
    );
    assert_eq!(app.hub().pending_count(), 0);
}

claude_code_matrix!(claude_code_stop_a_tool_call_after_a_reply_starts_the_count_again);
/// Claude Code counts blocks in a row only until the model calls a tool. With the cap at 1, a
/// reply that has the agent run a command is followed by another end of the turn that is
/// asked again (Claude Code would take a second reply).
async fn claude_code_stop_a_tool_call_after_a_reply_starts_the_count_again(cc: Cc) {
    let app = daemon_for_stops(true).await;
    let work = tempfile::tempdir().unwrap();
    let marker = work.path().join("migrated");
    let llm = FakeLlm::anthropic_saying(
        vec![ToolCall::new(
            "Bash",
            json!({"command": format!("touch {}", marker.display()), "description": "Migrate"}),
        )
        .after_reply()],
        "Shall I go on? (turn {turn})",
    )
    .await;
    // Bash runs unasked: the case is about the Stop hook.
    let settings = json!({"permissions": {"allow": ["Bash"]},
        "hooks": stop_hook()["hooks"].clone()});
    let run = Claude::start_with_env(
        &cc.bin,
        &llm,
        &app,
        settings,
        Mode::Print,
        work.path(),
        &[("CLAUDE_CODE_STOP_HOOK_BLOCK_CAP", "1")],
    )
    .await;
    let first = nth_message(&app, 0).await;
    reply(&app, &first, "Yes, migrate staging").await;
    // The model runs the command, then ends its turn again: asked, though one reply was given
    // and the cap is 1.
    let second = nth_message(&app, 1).await;
    assert!(marker.exists(), "the command ran");
    assert!(
        serde_json::to_string(&second)
            .unwrap()
            .contains("finished its turn again"),
        "{second}"
    );
    final_state(&app.press(&second, &alice(), "Done").await);
    let (result, err) = run.finish().await;
    assert_eq!(result["is_error"], false, "{result} {err}");
    assert_eq!(app.messages(CHANNEL).len(), 2);
}

/// Codex 0.171.0 has no cap on Stop blocks in a row that askrelay found: each reply starts
/// another turn, with `stop_hook_active` set, until Done.
#[tokio::test]
async fn codex_stop_replies_in_a_row_each_start_a_turn() {
    let bin = need!(
        "codex",
        "agents::stop::codex_stop_replies_in_a_row_each_start_a_turn"
    );
    let (app, child, run) = codex_stop_run(&bin, true, false).await;
    let llm = &run.llm;
    for n in 0..4 {
        let m = nth_message(&app, n).await;
        reply(&app, &m, &format!("reply {n}")).await;
    }
    let last = nth_message(&app, 4).await;
    assert!(
        serde_json::to_string(&last)
            .unwrap()
            .contains("finished its turn again"),
        "{last}"
    );
    final_state(&app.press(&last, &alice(), "Done").await);
    codex_done(child).await;
    assert_eq!(llm.turns().len(), 5, "one turn, and one per reply");
    assert_eq!(llm.turns_showing("reply 3"), 1);
}
