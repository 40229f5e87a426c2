//! Withdrawn when answered elsewhere (docs/approvals.md), on the real Claude Code's interactive
//! UI: the person answers Claude Code's own permission dialog at the terminal while askrelay's
//! PermissionRequest hook waits, and the lifecycle hooks that `askrelay setup claude-code`
//! writes withdraw the question askrelay posted.

use super::*;
use askrelay::domain::request::WithdrawReason;

/// What Claude Code's dialog offers for `touch` in the work directory, by version: 2.1.332
/// adds "switch to auto mode". Enter takes the first, "Yes", in both.
fn dialog_options(cc: &Cc) -> &'static [&'static str] {
    if cc.is_newest() {
        &[
            "1. Yes",
            "2. Yes, and always allow access to",
            "3. Yes, and switch to auto mode",
            "4. No",
        ]
    } else {
        &["1. Yes", "2. Yes, and always allow access to", "3. No"]
    }
}

claude_code_matrix!(claude_code_dialog_answered_in_the_terminal_withdraws_the_question);
async fn claude_code_dialog_answered_in_the_terminal_withdraws_the_question(cc: Cc) {
    if !Path::new("/usr/bin/script").exists() {
        return skip(
            "agents::claude_code_dialog_answered_in_the_terminal_withdraws_the_question",
            "no script(1) (util-linux) for a pseudo-terminal",
        );
    }
    let app = daemon().await;
    let work = tempfile::tempdir().unwrap();
    let marker = work.path().join("answered-here");
    let llm = FakeLlm::anthropic(vec![touch(&marker)]).await;
    // Only what `askrelay setup claude-code` writes: PermissionRequest, and the async
    // lifecycle hooks that withdraw.
    let mut run = Claude::start(
        &cc.bin,
        &llm,
        &app,
        Settings::Setup(vec!["--no-mcp".into()]),
        Mode::Interactive,
        work.path(),
    )
    .await;
    let mut screen = run.tty();
    // askrelay's question is in Discord, and Claude Code shows its own dialog meanwhile.
    let (id, m) = first_question(&app).await;
    let dialog = screen.wait_for("Do you want to proceed?").await;
    for option in dialog_options(&cc) {
        assert!(dialog.contains(option), "{} shows:\n{dialog}", cc.version);
    }
    // The person at the terminal answers it: Enter on "1. Yes".
    screen.send(b"\r").await;
    app.wait_ended(&id).await;
    // The command ran, and the model was told its result, not a denial.
    screen.wait_for("● done").await;
    assert!(marker.exists(), "{}", cc.version);
    assert_eq!(llm.tool_results().len(), 1, "{:?}", llm.tool_results());
    assert!(
        !llm.tool_results()[0].contains("Denied"),
        "{:?}",
        llm.tool_results()
    );
    // Discord's message says where it was answered; nothing is pending any more.
    let edit = app.edit_of(&m).await;
    assert_eq!(edit["components"], json!([]), "{edit}");
    let shown = shown_body(&edit);
    assert!(shown.contains("Answered in the terminal"), "{shown}");
    assert!(shown.contains("(PostToolUse)"), "{shown}");
    assert_eq!(app.hub().pending_count(), 0);
    // Withdrawn by PostToolUse, not by the hook being stopped: Claude Code let the waiting
    // hook run on after its own dialog was answered (both versions).
    let req = app.store().by_id(&id).await.unwrap().unwrap();
    assert_eq!(
        req.withdrawn,
        Some(WithdrawReason::AnsweredInTerminal),
        "{} {req:?}",
        cc.version
    );
    // The audit names the real decider: Claude Code's terminal.
    let audit = app.store().audit_rows(Some(req.key)).await.unwrap();
    let decided = audit
        .iter()
        .find(|r| r.action == "withdrawn")
        .unwrap_or_else(|| panic!("{audit:?}"));
    assert_eq!(decided.source, "terminal", "{decided:?}");
    assert!(
        decided
            .actor
            .as_deref()
            .unwrap_or("")
            .starts_with("terminal:claude-code "),
        "{decided:?}"
    );
    // A click that comes late is told, and decides nothing.
    let late = app.press(&m, &alice(), "Allow once").await;
    assert!(
        ephemeral(&late).starts_with("Already answered in the terminal"),
        "{late}"
    );
    let _ = run.child.kill().await;
    drop(screen);
    app.assert_payloads_valid();
}
