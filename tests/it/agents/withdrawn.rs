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
    // The dialog is drawn in more than one write: wait for its last option, then check them all.
    let options = dialog_options(&cc);
    let dialog = screen
        .wait_until("the dialog and its options", |s| {
            s.contains("Do you want to proceed?") && s.contains(options[options.len() - 1])
        })
        .await;
    for option in options {
        assert!(dialog.contains(option), "{} shows:\n{dialog}", cc.version);
    }
    // The person at the terminal answers it: Enter on "1. Yes" (again if the dialog is still
    // up a second later: an Enter that comes as it is drawn may not be taken, and a person
    // would press it again).
    screen
        .press_until_gone(b"\r", "Do you want to proceed?")
        .await;
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

/// What the Discord message of a question that Claude Code went on without shows, once
/// edited, and the request as stored: withdrawn for `reason`, told by `told`.
async fn withdrawn_as(app: &App, id: &str, m: &Value, reason: WithdrawReason, told: &str) {
    app.wait_ended(id).await;
    let req = app.store().by_id(id).await.unwrap().unwrap();
    assert_eq!(req.withdrawn, Some(reason), "{req:?}");
    let message = &req.error().unwrap().message;
    assert!(message.ends_with(told), "{message}");
    let edit = app.edit_of(m).await;
    assert_eq!(edit["components"], json!([]), "{edit}");
    let shown = shown_body(&edit);
    assert!(shown.contains(reason.status()), "{shown}");
    assert_eq!(app.hub().pending_count(), 0);
}

claude_code_matrix!(claude_code_dialog_rejected_in_the_terminal_withdraws_the_question);
async fn claude_code_dialog_rejected_in_the_terminal_withdraws_the_question(cc: Cc) {
    if !Path::new("/usr/bin/script").exists() {
        return skip(
            "agents::claude_code_dialog_rejected_in_the_terminal_withdraws_the_question",
            "no script(1) (util-linux) for a pseudo-terminal",
        );
    }
    let app = daemon().await;
    let work = tempfile::tempdir().unwrap();
    let marker = work.path().join("rejected-here");
    let llm = FakeLlm::anthropic(vec![touch(&marker)]).await;
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
    let (id, m) = first_question(&app).await;
    screen.wait_for("Do you want to proceed?").await;
    // The person at the terminal rejects it: Escape. Claude Code stops the turn and stops the
    // waiting hook with SIGTERM (both versions), which withdraws the question.
    screen.send(b"\x1b").await;
    screen
        .wait_for("Interrupted · What should Claude do instead?")
        .await;
    withdrawn_as(&app, &id, &m, WithdrawReason::HookKilled, "(SIGTERM)").await;
    assert!(!marker.exists());
    assert!(llm.tool_results().is_empty(), "{:?}", llm.tool_results());
    let _ = run.child.kill().await;
    drop(screen);
    app.assert_payloads_valid();
}

/// The processes whose parent is `pid`, from /proc.
fn children_of(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid …: the comm may hold spaces, so read after its ')'.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(pid) {
            out.push(child);
        }
    }
    out
}

claude_code_matrix!(claude_code_killed_while_its_hook_waits_withdraws_the_question);
async fn claude_code_killed_while_its_hook_waits_withdraws_the_question(cc: Cc) {
    if !Path::new("/usr/bin/script").exists() {
        return skip(
            "agents::claude_code_killed_while_its_hook_waits_withdraws_the_question",
            "no script(1) (util-linux) for a pseudo-terminal",
        );
    }
    let app = daemon().await;
    let work = tempfile::tempdir().unwrap();
    let marker = work.path().join("never");
    let llm = FakeLlm::anthropic(vec![touch(&marker)]).await;
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
    let (id, m) = first_question(&app).await;
    screen.wait_for("Do you want to proceed?").await;
    // What the waiting hook's stdout is (Claude Code's end of it is what closes).
    let hook = app
        .store()
        .by_id(&id)
        .await
        .unwrap()
        .unwrap()
        .peer
        .pid
        .unwrap();
    let stdout = std::fs::read_link(format!("/proc/{hook}/fd/1")).unwrap();
    eprintln!("{}: the hook's stdout is {}", cc.version, stdout.display());
    // Claude Code dies (SIGKILL: no SessionEnd, no cleanup). Its hook runs in a process group
    // of its own and lives on; what tells it is its stdout, closed with Claude Code.
    let claude = children_of(run.child.id().unwrap());
    assert_eq!(claude.len(), 1, "script runs one process: {claude:?}");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(claude[0] as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    withdrawn_as(
        &app,
        &id,
        &m,
        WithdrawReason::HookKilled,
        "(its agent closed the hook's stdout)",
    )
    .await;
    assert!(!marker.exists());
    let _ = run.child.kill().await;
    drop(screen);
    app.assert_payloads_valid();
}
