//! Codex 0.171.0's interactive UI, on a pseudo-terminal (`script`, read through [`Tty`]):
//! where its `PermissionRequest` hook fires (`codex exec` never fires it). Codex asks when its
//! approval policy says so; here `approval_policy = "on-request"` with a read-only sandbox, and
//! the model asks to run its command outside the sandbox (`exec_command` with
//! `sandbox_permissions: "require_escalated"`, its justification, and optionally a
//! `prefix_rule`), which is what a model does for a command that writes.
//!
//! What 0.171.0 was seen to do (docs/approvals.md, "PermissionRequest: Codex's own prompt"):
//! it runs the PermissionRequest hooks first and shows its own prompt only when no hook
//! decided, never both at once; it kills a hook that runs past its `timeout`, and one still
//! running when the person presses Esc. Its hook input carries no prefix rule, even when the
//! model proposed one, and it refuses `updatedPermissions` in the output.

use super::tty::Tty;
use super::*;
use askrelay::config::Route;

/// The prompt Codex shows when no hook decided.
const CODEX_PROMPT: &str = "Would you like to run the following command?";
/// What Codex shows once the person allowed a command in its prompt.
const APPROVED: &str = "approved codex to run";
/// What Codex shows when a turn has ended.
const TURN_ENDED: &str = "Worked for";

/// A shell call the model asks to run outside the sandbox, so that Codex's approval policy
/// asks: `touch PATH`, with a justification (the hook's `description`).
fn escalated(path: &Path, prefix_rule: Option<&[&str]>) -> ToolCall {
    let mut input = json!({"cmd": format!("touch {}", path.display()),
        "sandbox_permissions": "require_escalated", "justification": "Create the marker"});
    if let Some(rule) = prefix_rule {
        input["prefix_rule"] = json!(rule);
    }
    ToolCall::new("exec_command", input)
}

/// A hooks.json whose PermissionRequest hook is `command`, which Codex kills after
/// `timeout` seconds.
fn permission_request_hook(command: &str, timeout: u64) -> Value {
    json!({"hooks": {"PermissionRequest": [{"matcher": ".*", "hooks": [
        {"type": "command", "command": command, "timeout": timeout}]}]}})
}

/// A running `codex` in its interactive UI, with a CODEX_HOME of its own whose model is the
/// fake.
struct CodexTui {
    /// Kept for its Drop.
    _home: tempfile::TempDir,
    work: tempfile::TempDir,
    llm: FakeLlm,
    child: Child,
    screen: Tty,
}

impl CodexTui {
    /// Writes config.toml (the fake provider, `on-request` with a read-only sandbox, the work
    /// directory trusted, hooks on), lets `hooks` write hooks.json into CODEX_HOME, and starts
    /// `codex` on a pseudo-terminal with `script` as the model's calls, asking the daemon on
    /// `socket`. `script` gets the work directory.
    async fn start(
        bin: &Path,
        socket: &Path,
        script: impl FnOnce(&Path) -> Vec<ToolCall>,
        hooks: impl FnOnce(&Path),
    ) -> CodexTui {
        let home = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        let llm = FakeLlm::openai(script(work.path())).await;
        std::fs::write(
            home.path().join("config.toml"),
            format!(
                "model = \"gpt-test\"\nmodel_provider = \"fake\"\n\
                 approval_policy = \"on-request\"\nsandbox_mode = \"read-only\"\n\
                 [model_providers.fake]\nname = \"fake\"\nbase_url = \"{}/v1\"\n\
                 wire_api = \"responses\"\nenv_key = \"FAKE_KEY\"\n\
                 [features]\nhooks = true\n\
                 [projects.{:?}]\ntrust_level = \"trusted\"\n",
                llm.base_url,
                work.path().display().to_string()
            ),
        )
        .unwrap();
        hooks(home.path());
        let mut cmd = Command::new("script");
        // Hooks run without Codex's one-time trust prompt for a new hook, as in `codex exec`.
        cmd.arg("-qec")
            .arg(tty::script_command(&format!(
                "{} --dangerously-bypass-hook-trust 'Do the task.'",
                bin.display()
            )))
            .arg("/dev/null")
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", home.path())
            .env("CODEX_HOME", home.path())
            .env("FAKE_KEY", "test")
            .env("TERM", "xterm")
            .env("ASKRELAY_SOCKET_PATH", socket)
            .current_dir(work.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        let mut child = cmd.spawn().unwrap();
        let keys = child.stdin.take().unwrap();
        let screen = Tty::attach(&mut child, keys);
        CodexTui {
            _home: home,
            work,
            llm,
            child,
            screen,
        }
    }

    /// Starts Codex with `hooks` as its hooks.json.
    async fn with_hooks(
        bin: &Path,
        socket: &Path,
        script: impl FnOnce(&Path) -> Vec<ToolCall>,
        hooks: Value,
    ) -> CodexTui {
        Self::start(bin, socket, script, |home| {
            std::fs::write(home.join("hooks.json"), hooks.to_string()).unwrap()
        })
        .await
    }

    /// Waits for the end of the turn; returns the screen then.
    async fn turn_ended(&mut self) -> String {
        self.screen.wait_for(TURN_ENDED).await
    }

    fn marker(&self, name: &str) -> PathBuf {
        self.work.path().join(name)
    }

    async fn quit(mut self) {
        let _ = self.child.kill().await;
    }
}

/// Codex, or a skip saying why (no CLI, or no `script` for a pseudo-terminal).
macro_rules! need_codex_tui {
    ($test:expr) => {{
        if !Path::new("/usr/bin/script").exists() {
            return skip($test, "no script(1) (util-linux) for a pseudo-terminal");
        }
        need!("codex", $test)
    }};
}

#[tokio::test]
async fn codex_tui_permission_request_allow_runs_the_command() {
    let bin =
        need_codex_tui!("agents::codex_tui::codex_tui_permission_request_allow_runs_the_command");
    let app = daemon().await;
    let mut cx = CodexTui::with_hooks(
        &bin,
        &app.socket(),
        |w| vec![escalated(&w.join("allowed"), None)],
        permission_request_hook(&hook_command("codex"), 60),
    )
    .await;
    let (_, m) = first_question(&app).await;
    // What the person sees: the tool, the model's justification, the exact command.
    let text = shown_body(&m);
    assert!(text.contains("Allow Bash?"), "{text}");
    assert!(text.contains("Create the marker"), "{text}");
    let command = format!("touch {}", cx.marker("allowed").display());
    assert!(m["content"].as_str().unwrap().contains(&command), "{m}");
    final_state(&app.press(&m, &alice(), "Allow").await);
    // The turn ends with nobody at the terminal: Codex did not ask itself.
    let screen = cx.turn_ended().await;
    assert!(!screen.contains(CODEX_PROMPT), "{screen}");
    assert!(cx.marker("allowed").exists(), "{screen}");
    let results = cx.llm.tool_results();
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(!results[0].contains("Rejected"), "{results:?}");
    app.assert_payloads_valid();
    cx.quit().await;
}

#[tokio::test]
async fn codex_tui_permission_request_deny_blocks_the_command_and_the_model_sees_why() {
    let bin = need_codex_tui!(
        "agents::codex_tui::codex_tui_permission_request_deny_blocks_the_command_and_the_model_sees_why"
    );
    let app = daemon().await;
    let mut cx = CodexTui::with_hooks(
        &bin,
        &app.socket(),
        |w| vec![escalated(&w.join("denied"), None)],
        permission_request_hook(&hook_command("codex"), 60),
    )
    .await;
    let (_, m) = first_question(&app).await;
    let opened = app.press(&m, &alice(), "Other…").await;
    let modal = opened["data"]["custom_id"].as_str().unwrap().to_owned();
    final_state(
        &app.submit_modal(&m, &alice(), &modal, "use the staging box")
            .await,
    );
    let screen = cx.turn_ended().await;
    assert!(!cx.marker("denied").exists(), "{screen}");
    // The terminal says the hook blocked it, and why; Codex did not ask itself.
    assert!(screen.contains("Blocked by hook"), "{screen}");
    assert!(!screen.contains(CODEX_PROMPT), "{screen}");
    // The model is shown the message: 0.171.0 wraps it as a rejected process.
    let results = cx.llm.tool_results();
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(
        results[0].contains("Rejected")
            && results[0].contains("Denied by alice on Discord: use the staging box"),
        "{results:?}"
    );
    cx.quit().await;
}

#[tokio::test]
async fn codex_tui_permission_request_with_the_daemon_down_shows_codexs_own_prompt() {
    let bin = need_codex_tui!(
        "agents::codex_tui::codex_tui_permission_request_with_the_daemon_down_shows_codexs_own_prompt"
    );
    let mut app = daemon().await;
    app.stop().await;
    let mut cx = CodexTui::with_hooks(
        &bin,
        &app.socket(),
        |w| vec![escalated(&w.join("own-prompt"), None)],
        permission_request_hook(&hook_command("codex"), 60),
    )
    .await;
    // askrelay printed nothing: no decision, so Codex asks itself, and reports no hook failure.
    let screen = cx.screen.wait_for(CODEX_PROMPT).await;
    assert!(!screen.contains("Hook failed"), "{screen}");
    assert!(!cx.marker("own-prompt").exists());
    // The person at the terminal decides.
    cx.screen.press_until(b"y", APPROVED).await;
    cx.turn_ended().await;
    assert!(cx.marker("own-prompt").exists());
    cx.quit().await;
}

#[tokio::test]
async fn codex_tui_permission_request_fail_closed_denies_in_its_own_shape() {
    let bin = need_codex_tui!(
        "agents::codex_tui::codex_tui_permission_request_fail_closed_denies_in_its_own_shape"
    );
    let mut app = daemon().await;
    app.stop().await;
    let command = format!("{BIN} hook codex --fail-closed --timeout 50");
    let mut cx = CodexTui::with_hooks(
        &bin,
        &app.socket(),
        |w| vec![escalated(&w.join("closed"), None)],
        permission_request_hook(&command, 60),
    )
    .await;
    // Denied without asking anyone: Codex took the deny (a PreToolUse-shaped one would be
    // "invalid permission-request JSON output", and Codex would ask itself).
    let screen = cx.turn_ended().await;
    assert!(!screen.contains(CODEX_PROMPT), "{screen}");
    assert!(!screen.contains("invalid"), "{screen}");
    assert!(screen.contains("Blocked by hook"), "{screen}");
    assert!(!cx.marker("closed").exists());
    let results = cx.llm.tool_results();
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(
        results[0].contains("cannot reach the askrelay daemon")
            && results[0].contains("denied (--fail-closed)"),
        "{results:?}"
    );
    cx.quit().await;
}

#[tokio::test]
async fn codex_tui_permission_request_input_carries_no_prefix_rule_and_updated_permissions_are_refused(
) {
    let bin = need_codex_tui!(
        "agents::codex_tui::codex_tui_permission_request_input_carries_no_prefix_rule_and_updated_permissions_are_refused"
    );
    // No askrelay here: a hook that keeps its input and answers with the rule Codex proposed,
    // in Claude Code's shape for "always allow".
    let dir = tempfile::tempdir().unwrap();
    let seen = dir.path().join("input.json");
    let hook = dir.path().join("hook.sh");
    let answer = json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
        "decision": {"behavior": "allow", "updatedPermissions": [{"type": "addRules",
            "rules": [{"toolName": "Bash", "ruleContent": "touch"}],
            "behavior": "allow", "destination": "session"}]}}});
    std::fs::write(
        &hook,
        format!("#!/bin/sh\ncat > '{}'\necho '{answer}'\n", seen.display()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut cx = CodexTui::with_hooks(
        &bin,
        Path::new("/nonexistent/askrelay.sock"),
        |w| vec![escalated(&w.join("ruled"), Some(&["touch"]))],
        permission_request_hook(&hook.display().to_string(), 60),
    )
    .await;
    // The prompt is drawn in more than one write: wait for its prefix-rule option too.
    let screen = cx
        .screen
        .wait_until("Codex's prompt with its prefix rule", |s| {
            s.contains(CODEX_PROMPT) && s.contains("don't ask again for commands that start with")
        })
        .await;
    // Codex refused the rule, and asked itself; its own prompt offers the model's prefix rule.
    assert!(
        screen.contains("PermissionRequest hook returned unsupported updatedPermissions"),
        "{screen}"
    );
    assert!(
        screen.contains("don't ask again for commands that start with `touch`"),
        "{screen}"
    );
    // What the hook was given: the command and the justification, no rule and no suggestion.
    let input: Value = serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    let mut keys: Vec<&str> = input
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "cwd",
            "hook_event_name",
            "model",
            "permission_mode",
            "session_id",
            "tool_input",
            "tool_name",
            "transcript_path",
            "turn_id"
        ],
        "{input}"
    );
    assert_eq!(input["tool_name"], "Bash", "{input}");
    assert_eq!(
        input["tool_input"],
        json!({"command": format!("touch {}", cx.marker("ruled").display()),
               "description": "Create the marker"}),
        "{input}"
    );
    assert!(!input.to_string().contains("prefix"), "{input}");
    cx.quit().await;
}

#[tokio::test]
async fn codex_tui_a_grant_answers_the_next_identical_command() {
    let bin =
        need_codex_tui!("agents::codex_tui::codex_tui_a_grant_answers_the_next_identical_command");
    // askrelay's own "don't ask again": a route that offers grants.
    let app = App::discord_with(|c| {
        c.discord.terminal_answers = true;
        let mut r = Route::new("dev", CHANNEL);
        r.grant_durations = Some(vec!["30m".into()]);
        r.exclude_requester = Some(false);
        c.routes.push(r);
    })
    .await;
    let mut cx = CodexTui::with_hooks(
        &bin,
        &app.socket(),
        |w| {
            let call = escalated(&w.join("granted"), None);
            vec![call.clone(), call]
        },
        permission_request_hook(&hook_command("codex"), 60),
    )
    .await;
    let (_, m) = first_question(&app).await;
    final_state(&app.press(&m, &alice(), "Allow for 30 min").await);
    let screen = cx.turn_ended().await;
    assert!(!screen.contains(CODEX_PROMPT), "{screen}");
    // Both calls ran; the second was answered by the grant, asked of nobody, and announced.
    let results = cx.llm.tool_results();
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(
        results.iter().all(|r| !r.contains("Rejected")),
        "{results:?}"
    );
    let shown: Vec<String> = app.messages(CHANNEL).iter().map(shown_body).collect();
    assert_eq!(
        shown.iter().filter(|t| t.contains("Allow Bash?")).count(),
        1,
        "{shown:#?}"
    );
    assert_eq!(
        shown
            .iter()
            .filter(|t| t.contains("Allowed by grant"))
            .count(),
        1,
        "{shown:#?}"
    );
    app.assert_payloads_valid();
    cx.quit().await;
}

/// Waits until the channel's question message shows that it was withdrawn; returns its text.
async fn withdrawn_message(app: &App) -> String {
    within("the question's message to say it was withdrawn", async {
        let mut rx = app.standin().subscribe();
        loop {
            if let Some(text) = app
                .messages(CHANNEL)
                .iter()
                .map(shown_body)
                .find(|t| t.contains("withdrawn:"))
            {
                return text;
            }
            let _ = rx.changed().await;
        }
    })
    .await
}

/// The reasons a question of a hook Codex killed can end with before its re-attach grace
/// (set to an hour here) is over: the lifecycle event's withdrawal, or the daemon seeing the
/// killed hook go.
fn ended_by(text: &str, event_reason: &str) -> bool {
    text.contains(event_reason) || text.contains("waiting hook was stopped")
}

#[tokio::test]
async fn codex_tui_answered_in_the_terminal_withdraws_the_question() {
    let bin = need_codex_tui!(
        "agents::codex_tui::codex_tui_answered_in_the_terminal_withdraws_the_question"
    );
    let app = App::discord_with(|c| {
        c.discord.terminal_answers = true;
        c.cancel_grace_secs = 3600;
    })
    .await;
    let mut cx = CodexTui::start(
        &bin,
        &app.socket(),
        |w| vec![escalated(&w.join("terminal"), None)],
        |home| {
            // What `askrelay setup codex` writes, lifecycle hooks and all, but with a Codex
            // timeout shorter than askrelay's own: Codex kills the waiting hook and asks.
            let mut setup = askrelay_in(home);
            let out = setup
                .as_std_mut()
                .args(["setup", "codex", "--no-mcp", "--fail-open"])
                .args(["--event", "permission-request", "--codex-home"])
                .arg(home)
                .output()
                .unwrap();
            assert!(out.status.success(), "{out:?}");
            let path = home.join("hooks.json");
            let mut hooks: Value =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            hooks["hooks"]["PermissionRequest"][0]["hooks"][0]["timeout"] = json!(10);
            std::fs::write(&path, hooks.to_string()).unwrap();
        },
    )
    .await;
    let (id, _) = first_question(&app).await;
    // Codex gives up on the hook and asks in its terminal; the person answers there.
    cx.screen.wait_for("hook timed out").await;
    cx.screen.wait_for(CODEX_PROMPT).await;
    cx.screen.press_until(b"y", APPROVED).await;
    cx.turn_ended().await;
    assert!(cx.marker("terminal").exists());
    // PostToolUse withdrew the question: Discord's message says so, and nobody can answer it.
    let text = withdrawn_message(&app).await;
    assert!(
        ended_by(&text, "answered in the terminal (PostToolUse)"),
        "{text}"
    );
    app.wait_ended(&id).await;
    app.assert_payloads_valid();
    cx.quit().await;
}

#[tokio::test]
async fn codex_tui_a_new_prompt_after_esc_withdraws_the_question() {
    let bin = need_codex_tui!(
        "agents::codex_tui::codex_tui_a_new_prompt_after_esc_withdraws_the_question"
    );
    let app = App::discord_with(|c| {
        c.discord.terminal_answers = true;
        c.cancel_grace_secs = 3600;
    })
    .await;
    let mut cx = CodexTui::start(
        &bin,
        &app.socket(),
        |w| vec![escalated(&w.join("interrupted"), None)],
        |home| {
            let mut setup = askrelay_in(home);
            let out = setup
                .as_std_mut()
                .args([
                    "setup",
                    "codex",
                    "--no-mcp",
                    "--event",
                    "permission-request",
                ])
                .arg("--codex-home")
                .arg(home)
                .output()
                .unwrap();
            assert!(out.status.success(), "{out:?}");
        },
    )
    .await;
    let (id, _) = first_question(&app).await;
    // The person stops the turn while askrelay asks (Codex kills the hook), then asks for
    // something else.
    cx.screen.send(b"\x1b").await;
    cx.screen.wait_for("Conversation interrupted").await;
    cx.screen.send(b"never mind").await;
    cx.screen.wait_for("never mind").await;
    // Enter right after the text is taken as part of its burst; again, it sends the prompt.
    // The model sees the call aborted and ends the new turn.
    cx.screen.press_until(b"\r", TURN_ENDED).await;
    let text = withdrawn_message(&app).await;
    assert!(
        ended_by(&text, "the agent moved on (UserPromptSubmit)"),
        "{text}"
    );
    app.wait_ended(&id).await;
    assert!(!cx.marker("interrupted").exists());
    cx.quit().await;
}
