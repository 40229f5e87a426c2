//! The agents people run, for real: the Claude Code and Codex CLIs from npm (pinned versions
//! that `tests/setup-clis.sh` installs under `<target>/agent-clis/`, and a newer Claude Code,
//! one that honours a hook's `onFailure`, under `<target>/agent-clis/newer/`; `<target>` is
//! where this test binary was built, see [`target_dir`]), driven offline by scripted
//! fakes of their model APIs (`fake_llm.rs`), with `askrelay hook` as their hook
//! and a real daemon (in-process, with the Discord stand-in) answering. What the model was shown
//! as the tool's result is what each test checks, with what the tool did.
//!
//! Where the CLIs could not be installed (no npm, no registry), each test says that it was
//! skipped, and why (`skip`); it never passes silently.

use crate::fake_llm::{self, FakeLlm, ToolCall};
use crate::harness::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};

const CLAUDE_CODE: &str = "2.1.197";
const CODEX: &str = "0.171.0";
/// The newer Claude Code (`setup claude-code --fail-closed`): setup-clis.sh falls back to the
/// registry's newest when this one is gone, so the tests check only that it is new enough.
const CLAUDE_CODE_NEWER: &str = "2.1.332";
/// The newest Claude Code: the second column of the matrix ([`claude_code_matrix!`]). It is the
/// one setup-clis.sh installs as "newer" (under `agent-clis/newer/`).
const CLAUDE_CODE_NEWEST: &str = CLAUDE_CODE_NEWER;

/// Any key: the fake takes it. (The interactive UI asks about a key in the environment unless
/// its last 20 characters are approved in `.claude.json`.)
const API_KEY: &str = "sk-test-offline";

/// The target directory: `CARGO_TARGET_DIR` when the tests run with it (relative: from the
/// package's root, where cargo and setup-clis.sh both take it from), else the one this test
/// binary is in (`<target>/debug/deps/it-…`). setup-clis.sh installs the CLIs there.
fn target_dir() -> PathBuf {
    target_dir_from(
        std::env::var_os("CARGO_TARGET_DIR"),
        std::env::current_exe().ok(),
    )
}

fn target_dir_from(env: Option<std::ffi::OsString>, exe: Option<PathBuf>) -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    if let Some(dir) = env.filter(|d| !d.is_empty()) {
        return manifest.join(dir);
    }
    exe.as_deref()
        .and_then(|e| e.ancestors().nth(3))
        .map(Path::to_path_buf)
        .unwrap_or_else(|| manifest.join("target"))
}

/// The installed CLI `name`, or why it is not there (naming where it looked).
fn cli(name: &str) -> Result<PathBuf, String> {
    cli_in(&target_dir().join("agent-clis"), name)
}

/// The newer Claude Code, or why it is not there.
fn newer_claude() -> Result<PathBuf, String> {
    cli_in(&target_dir().join("agent-clis/newer"), "claude")
}

fn cli_in(root: &Path, name: &str) -> Result<PathBuf, String> {
    let bin = root.join("node_modules/.bin").join(name);
    if bin.exists() {
        return Ok(bin);
    }
    let why = match std::fs::read_to_string(root.join("unavailable")) {
        Ok(s) => s.trim().to_owned(),
        Err(_) if root.exists() => format!(
            "tests/setup-clis.sh installed nothing under {} and left no reason",
            root.display()
        ),
        Err(_) => format!(
            "{} does not exist: tests/setup-clis.sh has not run for the target directory {}",
            root.display(),
            target_dir().display()
        ),
    };
    Err(format!("{name} is not at {}: {why}", bin.display()))
}

/// The hook command as an agent's settings name it.
fn hook_command(agent: &str) -> String {
    format!("{BIN} hook {agent} --timeout 50")
}

/// A hook entry of Claude Code's settings.
fn hooks(event: &str, matcher: &str) -> Value {
    json!({"hooks": {event: [{"matcher": matcher, "hooks": [
        {"type": "command", "command": hook_command("claude-code"), "timeout": 60}]}]}})
}

/// The hooks `askrelay setup claude-code` writes (its recommended set-up): PermissionRequest
/// for every tool, and PreToolUse for Claude Code's own questions.
fn recommended() -> Value {
    let entry = |matcher: &str| {
        json!([{"matcher": matcher, "hooks": [
            {"type": "command", "command": hook_command("claude-code"), "timeout": 60}]}])
    };
    json!({"hooks": {"PermissionRequest": entry("*"), "PreToolUse": entry("AskUserQuestion")}})
}

/// The settings Claude Code runs with.
enum Settings {
    /// A settings file with this content (`--settings`).
    Given(Value),
    /// Only what `askrelay setup claude-code ARGS` wrote in HOME (run with the `claude` under
    /// test first on `PATH`, for setup's version check).
    Setup(Vec<String>),
}

impl From<Value> for Settings {
    /// Null: what `askrelay setup claude-code` writes by default.
    fn from(v: Value) -> Settings {
        if v.is_null() {
            Settings::Setup(Vec::new())
        } else {
            Settings::Given(v)
        }
    }
}

/// How Claude Code is run.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// `-p PROMPT --output-format json`: tool calls and PreToolUse hooks.
    Print,
    /// `-p --input-format stream-json --output-format stream-json --verbose
    /// --permission-prompt-tool stdio`, with the SDK's `initialize` first and stdin kept open
    /// until the result: what AskUserQuestion and PermissionRequest need.
    Stream,
    /// The interactive terminal UI, on a pseudo-terminal (`script`), with onboarding, the API
    /// key and the workspace's trust accepted beforehand. Claude Code 2.1.197 honours a
    /// PermissionRequest's `interrupt` only here (in the stream-json mode it is a plain deny).
    Interactive,
    /// The interactive UI in auto mode, with these arguments: none on the newest Claude Code,
    /// whose interactive default is auto mode; `--permission-mode auto` on 2.1.197.
    Auto(&'static str),
}

impl Mode {
    /// The permission arguments of an interactive run; `None`: not interactive.
    fn interactive(self) -> Option<&'static str> {
        match self {
            // The newest Claude Code's interactive default is auto mode, where a classifier
            // decides; these cases are about the permission prompts.
            Mode::Interactive => Some("--permission-mode default"),
            Mode::Auto(args) => Some(args),
            Mode::Print | Mode::Stream => None,
        }
    }
}

/// A running `claude`.
struct Claude {
    child: Child,
    stdin: Option<ChildStdin>,
    /// HOME (its transcripts are under `.claude/projects/`); kept for its Drop.
    home: tempfile::TempDir,
}

impl Claude {
    async fn start(
        bin: &Path,
        llm: &FakeLlm,
        app: &App,
        settings: impl Into<Settings>,
        mode: Mode,
        work: &Path,
    ) -> Claude {
        Claude::start_with_env(bin, llm, app, settings, mode, work, &[]).await
    }

    /// The same, with these variables in Claude Code's environment too.
    async fn start_with_env(
        bin: &Path,
        llm: &FakeLlm,
        app: &App,
        settings: impl Into<Settings>,
        mode: Mode,
        work: &Path,
        env: &[(&str, &str)],
    ) -> Claude {
        let home = tempfile::tempdir().unwrap();
        let file = home.path().join("settings.json");
        match settings.into() {
            Settings::Setup(args) => {
                // The user's own settings, as `askrelay setup claude-code` writes them.
                let path =
                    std::env::join_paths(bin.parent().into_iter().map(Path::to_path_buf).chain(
                        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
                    ))
                    .unwrap();
                let mut setup = askrelay_in(home.path());
                let out = setup
                    .as_std_mut()
                    .args(["setup", "claude-code"])
                    .args(&args)
                    .env("HOME", home.path())
                    .env("PATH", path)
                    .current_dir(work)
                    .output()
                    .unwrap();
                assert!(out.status.success(), "{out:?}");
                std::fs::write(&file, "{}").unwrap();
            }
            Settings::Given(v) => std::fs::write(&file, v.to_string()).unwrap(),
        }
        let mut cmd = if let Some(permission) = mode.interactive() {
            std::fs::write(
                home.path().join(".claude.json"),
                json!({"hasCompletedOnboarding": true, "theme": "dark",
                    "customApiKeyResponses": {"approved": [API_KEY], "rejected": []},
                    "projects": {work.display().to_string():
                        {"hasTrustDialogAccepted": true, "hasCompletedProjectOnboarding": true}}})
                .to_string(),
            )
            .unwrap();
            let mut c = Command::new("script");
            c.arg("-qec")
                .arg(tty::script_command(&format!(
                    "{} {permission} --settings {} 'Do the task.'",
                    bin.display(),
                    file.display()
                )))
                .arg("/dev/null");
            c
        } else {
            Command::new(bin)
        };
        cmd.env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", home.path())
            .env("ANTHROPIC_BASE_URL", &llm.base_url)
            .env("ANTHROPIC_API_KEY", API_KEY)
            .env("TERM", "xterm")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("DISABLE_TELEMETRY", "1")
            .env("DISABLE_AUTOUPDATER", "1")
            .env("DISABLE_ERROR_REPORTING", "1")
            // Auto mode's classifier through the model API (the fake), not a server of its own.
            .env("CLAUDE_CODE_AUTO_MODE_SERVER", "0")
            .env("ASKRELAY_SOCKET_PATH", app.socket())
            .envs(env.iter().copied())
            .current_dir(work)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        match mode {
            Mode::Print => {
                cmd.args([
                    "-p",
                    "Do the task.",
                    "--output-format",
                    "json",
                    "--settings",
                ])
                .arg(&file)
                .stdin(Stdio::null());
            }
            Mode::Interactive | Mode::Auto(_) => {
                cmd.stdin(Stdio::piped());
            }
            Mode::Stream => {
                cmd.args([
                    "-p",
                    "--input-format",
                    "stream-json",
                    "--output-format",
                    "stream-json",
                    "--verbose",
                    "--permission-prompt-tool",
                    "stdio",
                    "--settings",
                ])
                .arg(&file)
                .stdin(Stdio::piped());
            }
        }
        let mut child = cmd.spawn().unwrap();
        let mut stdin = child.stdin.take();
        if let Some(s) = stdin.as_mut().filter(|_| mode == Mode::Stream) {
            let lines = [
                json!({"type": "control_request", "request_id": "init",
                       "request": {"subtype": "initialize"}}),
                json!({"type": "user", "message": {"role": "user", "content": "Do the task."}}),
            ];
            for l in lines {
                s.write_all(format!("{l}\n").as_bytes()).await.unwrap();
            }
            s.flush().await.unwrap();
        }
        Claude { child, stdin, home }
    }

    /// The interactive UI's screen and keyboard (`Mode::Interactive` only).
    fn tty(&mut self) -> tty::Tty {
        let keys = self.stdin.take().expect("the interactive UI's stdin");
        tty::Tty::attach(&mut self.child, keys)
    }

    /// Waits for the run's result (the last line of stdout, a `result` object), then for the
    /// process to exit; returns the result and stderr.
    async fn finish(mut self) -> (Value, String) {
        let out = self.child.stdout.take().unwrap();
        let mut lines = BufReader::new(out).lines();
        let mut seen = Vec::new();
        let found = tokio::time::timeout(WAIT, async {
            while let Some(l) = lines.next_line().await.unwrap() {
                if let Ok(v) = serde_json::from_str::<Value>(&l) {
                    if v["type"] == "result" {
                        return Some(v);
                    }
                }
                seen.push(l);
            }
            None
        })
        .await;
        let result = match found {
            Ok(Some(v)) => v,
            Ok(None) => panic!("Claude Code ended without a result:\n{}", seen.join("\n")),
            Err(_) => panic!(
                "no result from Claude Code within {} s; it printed:\n{}",
                WAIT.as_secs(),
                seen.join("\n")
            ),
        };
        drop(self.stdin.take());
        let mut err = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            use tokio::io::AsyncReadExt;
            let _ = within("Claude Code's stderr", e.read_to_string(&mut err)).await;
        }
        let _ = within("Claude Code to exit", self.child.wait()).await;
        (result, err)
    }
}

/// The first question posted in the channel, once it is, with its request's id.
async fn first_question(app: &App) -> (String, Value) {
    let m = within("a question to be posted", async {
        let mut rx = app.standin().subscribe();
        loop {
            if let Some(m) = app.messages(CHANNEL).into_iter().next() {
                return m;
            }
            let _ = rx.changed().await;
        }
    })
    .await;
    let pending = app
        .store()
        .pending(
            askrelay::domain::store::Visibility::All,
            askrelay::domain::store::Page {
                limit: 10,
                after: None,
            },
        )
        .await
        .unwrap();
    assert_eq!(pending.len(), 1, "one request is waiting");
    (pending[0].request_id.clone(), m)
}

/// A daemon with Discord (the stand-in) whose requests the terminal may answer too.
async fn daemon() -> App {
    App::discord_with(|c| c.discord.terminal_answers = true).await
}

macro_rules! need {
    ($name:expr, $test:expr) => {
        match cli($name) {
            Ok(b) => b,
            Err(why) => return skip($test, &why),
        }
    };
}

/// Which Claude Code a case runs on: its binary and its version. Expectations that differ
/// between the versions are keyed on [`Cc::is_newest`].
#[derive(Clone, Debug)]
struct Cc {
    bin: PathBuf,
    version: &'static str,
}

impl Cc {
    /// The pinned Claude Code (the oldest askrelay supports), or why it is not installed.
    fn pinned() -> Result<Cc, String> {
        cli("claude").map(|bin| Cc {
            bin,
            version: CLAUDE_CODE,
        })
    }

    /// The newest Claude Code, or why it is not installed.
    fn newest() -> Result<Cc, String> {
        newer_claude().map(|bin| Cc {
            bin,
            version: CLAUDE_CODE_NEWEST,
        })
    }

    /// Whether this is the newest Claude Code (2.1.332), whose behaviour differs from 2.1.197's
    /// in the deny wording, `interrupt` and where "always allow" rules are kept.
    fn is_newest(&self) -> bool {
        self.version == CLAUDE_CODE_NEWEST
    }
}

/// Runs the Claude Code case `async fn NAME(cc: Cc)` on every Claude Code of the matrix: as
/// the tests `NAME::v2_1_197` and `NAME::newest`. A version that is not installed is skipped,
/// saying why.
macro_rules! claude_code_matrix {
    ($name:ident) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            #[tokio::test]
            async fn v2_1_197() {
                // Its name as cargo prints it (also in a module under agents/).
                let test = concat!(module_path!(), "::v2_1_197");
                let test = test.strip_prefix("it::").unwrap_or(test);
                match Cc::pinned() {
                    Ok(cc) => super::$name(cc).await,
                    Err(why) => skip(test, &why),
                }
            }

            #[tokio::test]
            async fn newest() {
                // Its name as cargo prints it (also in a module under agents/).
                let test = concat!(module_path!(), "::newest");
                let test = test.strip_prefix("it::").unwrap_or(test);
                match Cc::newest() {
                    Ok(cc) => super::$name(cc).await,
                    Err(why) => skip(test, &why),
                }
            }
        }
    };
}

#[test]
fn the_clis_are_looked_for_in_the_target_directory_the_tests_run_from() {
    let exe = PathBuf::from("/build/out/debug/deps/it-0123abcd");
    assert_eq!(
        target_dir_from(None, Some(exe.clone())),
        Path::new("/build/out")
    );
    assert_eq!(
        target_dir_from(Some("/elsewhere/t".into()), Some(exe.clone())),
        Path::new("/elsewhere/t")
    );
    assert_eq!(
        target_dir_from(Some("t2".into()), Some(exe.clone())),
        Path::new(env!("CARGO_MANIFEST_DIR")).join("t2")
    );
    assert_eq!(
        target_dir_from(Some("".into()), Some(exe)),
        Path::new("/build/out")
    );
    // This binary: in the directory found, and so are the CLIs setup-clis.sh installs.
    let here = std::env::current_exe().unwrap();
    if std::env::var_os("CARGO_TARGET_DIR").is_none() {
        assert!(here.starts_with(target_dir()), "{}", here.display());
    }
    let missing = tempfile::tempdir().unwrap();
    let why = cli_in(&missing.path().join("agent-clis"), "claude").unwrap_err();
    assert!(
        why.contains(
            &missing
                .path()
                .join("agent-clis/node_modules/.bin/claude")
                .display()
                .to_string()
        ) && why.contains("tests/setup-clis.sh has not run"),
        "{why}"
    );
    std::fs::create_dir_all(missing.path().join("agent-clis")).unwrap();
    std::fs::write(
        missing.path().join("agent-clis/unavailable"),
        "npm is not installed\n",
    )
    .unwrap();
    let why = cli_in(&missing.path().join("agent-clis"), "claude").unwrap_err();
    assert!(why.ends_with(": npm is not installed"), "{why}");
}

// --- Claude Code, PreToolUse -------------------------------------------------------------------

/// Runs Claude Code with a PreToolUse hook on Bash that touches `marker`, and answers the
/// question with `answer` (a button's label, or free text under Other…).
async fn pre_tool_use_bash(
    bin: &Path,
    answer: Option<&str>,
    typed: Option<&str>,
) -> (App, FakeLlm, Value) {
    let app = daemon().await;
    let work = tempfile::tempdir().unwrap();
    let marker = work.path().join("marker");
    let llm = FakeLlm::anthropic(vec![ToolCall::new(
        "Bash",
        json!({"command": format!("touch {}", marker.display()), "description": "Create the marker"}),
    )])
    .await;
    let run = Claude::start(
        bin,
        &llm,
        &app,
        hooks("PreToolUse", "Bash"),
        Mode::Print,
        work.path(),
    )
    .await;
    let (_, m) = first_question(&app).await;
    match (answer, typed) {
        (Some(label), _) => {
            final_state(&app.press(&m, &alice(), label).await);
        }
        (None, Some(text)) => {
            let opened = app.press(&m, &alice(), "Other…").await;
            let modal = opened["data"]["custom_id"].as_str().unwrap().to_owned();
            final_state(&app.submit_modal(&m, &alice(), &modal, text).await);
        }
        (None, None) => unreachable!(),
    }
    let (result, _) = run.finish().await;
    let made = marker.exists();
    (app, llm, json!({"result": result, "made": made}))
}

claude_code_matrix!(claude_code_pre_tool_use_allow_runs_the_command);
async fn claude_code_pre_tool_use_allow_runs_the_command(cc: Cc) {
    let bin = cc.bin.clone();
    let (app, llm, out) = pre_tool_use_bash(&bin, Some("Allow"), None).await;
    assert_eq!(out["made"], true, "{out}");
    assert_eq!(llm.tool_results().len(), 1, "{:?}", llm.tool_results());
    app.assert_payloads_valid();
}

claude_code_matrix!(claude_code_pre_tool_use_deny_blocks_the_command_and_names_who);
async fn claude_code_pre_tool_use_deny_blocks_the_command_and_names_who(cc: Cc) {
    let bin = cc.bin.clone();
    let (_app, llm, out) = pre_tool_use_bash(&bin, Some("Deny"), None).await;
    assert_eq!(out["made"], false, "{out}");
    let results = llm.tool_results();
    // What the model is shown: 2.1.332 wraps a deliberate deny as a hook error.
    let shown = if cc.is_newest() {
        "PreToolUse:Bash hook error: Denied by alice on Discord"
    } else {
        "Denied by alice on Discord"
    };
    assert_eq!(results, [shown], "{}", cc.version);
}

claude_code_matrix!(claude_code_pre_tool_use_other_denies_with_what_was_typed);
async fn claude_code_pre_tool_use_other_denies_with_what_was_typed(cc: Cc) {
    let bin = cc.bin.clone();
    let (_app, llm, out) = pre_tool_use_bash(&bin, None, Some("use the staging db")).await;
    assert_eq!(out["made"], false, "{out}");
    let results = llm.tool_results();
    assert!(
        results[0].contains("Denied by alice on Discord: use the staging db"),
        "{results:?}"
    );
}

claude_code_matrix!(claude_code_pre_tool_use_with_the_daemon_down_falls_back_to_its_own_prompt);
async fn claude_code_pre_tool_use_with_the_daemon_down_falls_back_to_its_own_prompt(cc: Cc) {
    let bin = cc.bin.clone();
    let mut app = daemon().await;
    app.stop().await;
    let work = tempfile::tempdir().unwrap();
    let marker = work.path().join("marker");
    let llm = FakeLlm::anthropic(vec![ToolCall::new(
        "Bash",
        json!({"command": format!("touch {}", marker.display())}),
    )])
    .await;
    let run = Claude::start(
        &bin,
        &llm,
        &app,
        hooks("PreToolUse", "Bash"),
        Mode::Print,
        work.path(),
    )
    .await;
    let (result, _) = run.finish().await;
    // Claude Code's own prompt: in -p mode nobody can grant it, so the command does not run.
    assert!(!marker.exists(), "{result}");
    let results = llm.tool_results();
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(!results[0].contains("Allowed"), "{results:?}");
}

// --- Claude Code, AskUserQuestion --------------------------------------------------------------

fn ask_user_question(questions: Value) -> ToolCall {
    ToolCall::new("AskUserQuestion", json!({ "questions": questions }))
}

/// Runs Claude Code asking `questions`; `answer` answers them through the daemon; returns what
/// the model was shown.
async fn claude_asks(
    bin: &Path,
    questions: Value,
    answer: impl AsyncFnOnce(&App, &str, &Value),
) -> String {
    let app = daemon().await;
    let work = tempfile::tempdir().unwrap();
    let llm = FakeLlm::anthropic(vec![ask_user_question(questions)]).await;
    let run = Claude::start(bin, &llm, &app, recommended(), Mode::Stream, work.path()).await;
    let (id, m) = first_question(&app).await;
    answer(&app, &id, &m).await;
    let (result, err) = run.finish().await;
    let results = llm.tool_results();
    assert_eq!(results.len(), 1, "{result} {err}");
    // Asked once: the PermissionRequest hook did not ask about the questions again.
    let asked = app
        .store()
        .history(
            askrelay::domain::store::Visibility::All,
            askrelay::domain::store::Page {
                limit: 10,
                after: None,
            },
        )
        .await
        .unwrap();
    assert_eq!(asked.len(), 1, "the questions were asked more than once");
    app.assert_payloads_valid();
    results[0].clone()
}

claude_code_matrix!(claude_code_ask_user_question_single_is_answered_from_discord);
async fn claude_code_ask_user_question_single_is_answered_from_discord(cc: Cc) {
    let bin = cc.bin.clone();
    let seen = claude_asks(
        &bin,
        json!([{"question": "Which database should the migration target?", "header": "Database",
            "options": [{"label": "Staging", "description": "The safe one"},
                        {"label": "Production", "description": "Live data"}],
            "multiSelect": false}]),
        async |app: &App, _: &str, m: &Value| {
            final_state(&app.press(m, &alice(), "Staging").await);
        },
    )
    .await;
    assert!(
        seen.contains(r#""Which database should the migration target?"="Staging""#),
        "{seen}"
    );
}

claude_code_matrix!(claude_code_ask_user_question_multi_select_joins_the_labels);
async fn claude_code_ask_user_question_multi_select_joins_the_labels(cc: Cc) {
    let bin = cc.bin.clone();
    let seen = claude_asks(
        &bin,
        json!([
            {"question": "Which database should the migration target?", "header": "Database",
             "options": [{"label": "Staging", "description": "safe"},
                         {"label": "Production", "description": "live"}], "multiSelect": false},
            {"question": "Which regions should be deployed?", "header": "Regions",
             "options": [{"label": "eu", "description": "Europe"}, {"label": "us", "description": "US"},
                         {"label": "ap", "description": "Asia"}], "multiSelect": true}]),
        async |app: &App, id: &str, _: &Value| {
            // From the terminal, both questions.
            let r = app.answer(id, "q1", &["Staging"]).await;
            assert_eq!(r["event"], "answer_accepted", "{r}");
            let r = app.answer(id, "q2", &["eu", "us"]).await;
            assert_eq!(r["event"], "answer_accepted", "{r}");
        },
    )
    .await;
    assert!(
        seen.contains(
            r#""Which database should the migration target?"="Staging", "Which regions should be deployed?"="eu, us""#
        ),
        "{seen}"
    );
}

claude_code_matrix!(claude_code_ask_user_question_free_text_is_the_answer);
async fn claude_code_ask_user_question_free_text_is_the_answer(cc: Cc) {
    let bin = cc.bin.clone();
    let seen = claude_asks(
        &bin,
        json!([{"question": "What should the release be called?", "header": "Name",
            "options": [{"label": "4.2", "description": "Next minor"},
                        {"label": "5.0", "description": "Next major"}], "multiSelect": false}]),
        async |app: &App, _: &str, m: &Value| {
            let opened = app.press(m, &alice(), "Other…").await;
            let modal = opened["data"]["custom_id"].as_str().unwrap().to_owned();
            final_state(&app.submit_modal(m, &alice(), &modal, "4.2-lts").await);
        },
    )
    .await;
    assert!(
        seen.contains(r#""What should the release be called?"="4.2-lts""#),
        "{seen}"
    );
}

// --- Claude Code, PermissionRequest ------------------------------------------------------------

/// Runs Claude Code with a PermissionRequest hook and `script` as the model's tool calls;
/// `answer` answers each request as it comes. Returns the daemon, the fake and the result.
async fn permission_run(
    bin: &Path,
    script: Vec<ToolCall>,
    work: &Path,
    answer: impl AsyncFnOnce(&App),
) -> (App, FakeLlm, Value) {
    permission_run_with(bin, recommended(), script, work, answer).await
}

/// [`permission_run`] with `settings` (null: what `askrelay setup claude-code` writes).
async fn permission_run_with(
    bin: &Path,
    settings: Value,
    script: Vec<ToolCall>,
    work: &Path,
    answer: impl AsyncFnOnce(&App),
) -> (App, FakeLlm, Value) {
    let app = daemon().await;
    let llm = FakeLlm::anthropic(script).await;
    let run = Claude::start(bin, &llm, &app, settings, Mode::Stream, work).await;
    answer(&app).await;
    let (result, _) = run.finish().await;
    app.assert_payloads_valid();
    (app, llm, result)
}

fn touch(path: &Path) -> ToolCall {
    ToolCall::new(
        "Bash",
        json!({"command": format!("touch {}", path.display()), "description": "Create the marker"}),
    )
}

claude_code_matrix!(claude_code_permission_request_allow_once);
async fn claude_code_permission_request_allow_once(cc: Cc) {
    let bin = cc.bin.clone();
    let work = tempfile::tempdir().unwrap();
    let marker = work.path().join("once");
    let (_app, llm, result) = permission_run(
        &bin,
        vec![touch(&marker)],
        work.path(),
        async |app: &App| {
            let (_, m) = first_question(app).await;
            // What the person sees: the tool, the exact command, Claude Code's description.
            let text = shown_body(&m);
            assert!(text.contains("Allow Bash?"), "{text}");
            assert!(text.contains("Create the marker"), "{text}");
            assert!(
                m["content"]
                    .as_str()
                    .unwrap()
                    .contains(&format!("touch {}", marker.display())),
                "{m}"
            );
            final_state(&app.press(&m, &alice(), "Allow once").await);
        },
    )
    .await;
    assert!(marker.exists(), "{result} {:?}", llm.tool_results());
}

/// Alice picks the first question's rule alone, "Always allow: Bash(touch …)" (offered for a
/// call inside the project, after the option with every suggestion).
async fn always_allow(app: &App) {
    let (_, m) = first_question(app).await;
    let label = controls(&m)
        .into_iter()
        .map(|(_, l)| l)
        .find(|l| l.starts_with("Always allow: Bash(touch") && l.ends_with(')'))
        .unwrap_or_else(|| panic!("the rule alone: {:?}", controls(&m)));
    final_state(&app.press(&m, &alice(), &label).await);
}

claude_code_matrix!(claude_code_permission_request_always_allow_reaches_claude_code);
async fn claude_code_permission_request_always_allow_reaches_claude_code(cc: Cc) {
    let bin = cc.bin.clone();
    let work = tempfile::tempdir().unwrap();
    let marker = work.path().join("again");
    // The same command twice: the second runs on the rule the first answer added.
    let script = vec![touch(&marker), touch(&marker)];
    let (app, llm, result) = permission_run(&bin, script, work.path(), always_allow).await;
    let results = llm.tool_results();
    assert_eq!(results.len(), 2, "{result} {results:?}");
    assert!(marker.exists());
    // One question only: the second call did not ask.
    let asked = app
        .standin()
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST" && r.path.ends_with("/messages"))
        .count();
    assert_eq!(asked, 1, "the second identical command asked again");
}

claude_code_matrix!(claude_code_permission_request_always_allow_is_kept_where_the_version_keeps_it);
async fn claude_code_permission_request_always_allow_is_kept_where_the_version_keeps_it(cc: Cc) {
    // A project in git, and Claude Code started in a directory below its root.
    let repo = tempfile::tempdir().unwrap();
    let git = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(repo.path())
        .status()
        .unwrap();
    assert!(git.success());
    let work = repo.path().join("sub");
    std::fs::create_dir_all(&work).unwrap();
    let marker = work.join("kept");
    let (_app, llm, result) =
        permission_run(&cc.bin, vec![touch(&marker)], &work, always_allow).await;
    assert!(marker.exists(), "{result} {:?}", llm.tool_results());
    // 2.1.332 keeps the rule at the git root; 2.1.197 in the directory it was started in.
    let at_root = repo.path().join(".claude/settings.local.json");
    let in_cwd = work.join(".claude/settings.local.json");
    let (kept, not) = if cc.is_newest() {
        (at_root, in_cwd)
    } else {
        (in_cwd, at_root)
    };
    let rules: Value = serde_json::from_str(
        &std::fs::read_to_string(&kept)
            .unwrap_or_else(|e| panic!("{} on {}: {e}", kept.display(), cc.version)),
    )
    .unwrap();
    assert_eq!(
        rules["permissions"]["allow"],
        json!([format!("Bash(touch {})", marker.display())]),
        "{rules}"
    );
    assert!(!not.exists(), "{} on {}", not.display(), cc.version);
}

claude_code_matrix!(claude_code_permission_request_deny_names_who);
async fn claude_code_permission_request_deny_names_who(cc: Cc) {
    let bin = cc.bin.clone();
    let work = tempfile::tempdir().unwrap();
    let marker = work.path().join("denied");
    let (_app, llm, _) = permission_run(
        &bin,
        vec![touch(&marker)],
        work.path(),
        async |app: &App| {
            let (id, _) = first_question(app).await;
            let r = app.answer(&id, "permission", &["Deny"]).await;
            assert_eq!(r["event"], "answer_accepted", "{r}");
        },
    )
    .await;
    assert!(!marker.exists());
    let results = llm.tool_results();
    assert!(
        results[0].contains("Denied by") && results[0].contains("in the terminal"),
        "{results:?}"
    );
}

claude_code_matrix!(claude_code_permission_request_deny_and_stop_ends_the_turn);
async fn claude_code_permission_request_deny_and_stop_ends_the_turn(cc: Cc) {
    let bin = cc.bin.clone();
    if !Path::new("/usr/bin/script").exists() {
        return skip(
            "agents::claude_code_permission_request_deny_and_stop_ends_the_turn",
            "no script(1) (util-linux) for a pseudo-terminal",
        );
    }
    let app = daemon().await;
    let work = tempfile::tempdir().unwrap();
    let marker = work.path().join("stopped");
    // Two steps: after a plain deny the model would go on to the second.
    let llm = FakeLlm::anthropic(vec![touch(&marker), touch(&marker)]).await;
    let mut run = Claude::start(
        &bin,
        &llm,
        &app,
        hooks("PermissionRequest", "*"),
        Mode::Interactive,
        work.path(),
    )
    .await;
    // Its screen is read as it comes, so that the terminal never blocks.
    let mut screen = run.tty();
    let (_, m) = first_question(&app).await;
    final_state(&app.press(&m, &alice(), "Deny and stop").await);
    // The session's transcript says the turn was interrupted.
    let transcripts = run.home.path().join(".claude/projects");
    let interrupted = within("the transcript to say the turn was interrupted", async {
        loop {
            if let Some(line) = transcript_lines(&transcripts)
                .into_iter()
                .find(|l| l.contains("[Request interrupted by user"))
            {
                return line;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(interrupted.contains("interrupted"));
    // And the terminal shows it, as a person at it would see.
    screen
        .wait_for("Interrupted · What should Claude do instead?")
        .await;
    let _ = run.child.kill().await;
    drop(screen);
    assert!(!marker.exists());
    // The model was never asked to go on: no request carried the denial back to it.
    assert!(llm.tool_results().is_empty(), "{:?}", llm.tool_results());
    app.assert_payloads_valid();
}

/// Every line of every session transcript under `dir`.
fn transcript_lines(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for project in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        for f in std::fs::read_dir(project.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            if f.path().extension().is_some_and(|e| e == "jsonl") {
                if let Ok(text) = std::fs::read_to_string(f.path()) {
                    out.extend(text.lines().map(str::to_owned));
                }
            }
        }
    }
    out
}

claude_code_matrix!(claude_code_set_up_by_askrelay_setup_asks_through_askrelay);
async fn claude_code_set_up_by_askrelay_setup_asks_through_askrelay(cc: Cc) {
    let bin = cc.bin.clone();
    let work = tempfile::tempdir().unwrap();
    let marker = work.path().join("set-up");
    // No settings of the test's own: only what `askrelay setup claude-code` wrote in HOME.
    let (_app, _llm, result) = permission_run_with(
        &bin,
        Value::Null,
        vec![touch(&marker)],
        work.path(),
        async |app: &App| {
            let (_, m) = first_question(app).await;
            final_state(&app.press(&m, &alice(), "Allow once").await);
        },
    )
    .await;
    assert!(marker.exists(), "{result}");
}

// --- Claude Code, auto mode (PermissionDenied, one-use grants) ---------------------------------

/// The arguments that put a Claude Code's interactive UI in auto mode: none on the newest
/// (auto mode is its interactive default, which the tests check on screen), an explicit
/// `--permission-mode auto` on 2.1.197 (whose default is `default`).
fn auto_mode(cc: &Cc) -> Mode {
    if cc.is_newest() {
        Mode::Auto("")
    } else {
        Mode::Auto("--permission-mode auto")
    }
}

/// A Claude Code in auto mode, set up by `askrelay setup claude-code`, on a pseudo-terminal;
/// the fake classifier blocks every action that touches a file in `outside` (a directory
/// outside the project, so that the classifier is asked at all).
struct AutoRun {
    app: App,
    llm: FakeLlm,
    run: Claude,
    screen: tty::Tty,
    marker: PathBuf,
    _dirs: (tempfile::TempDir, tempfile::TempDir),
}

impl AutoRun {
    async fn start(cc: &Cc, script: impl FnOnce(&Path) -> Vec<ToolCall>) -> AutoRun {
        let app = daemon().await;
        let work = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let marker = outside.path().join("auto");
        let llm =
            FakeLlm::anthropic_auto(script(&marker), &format!("touch {}", marker.display())).await;
        let mut run =
            Claude::start(&cc.bin, &llm, &app, Value::Null, auto_mode(cc), work.path()).await;
        let mut screen = run.tty();
        screen.wait_for("auto mode on").await;
        AutoRun {
            app,
            llm,
            run,
            screen,
            marker,
            _dirs: (work, outside),
        }
    }

    /// The `n`th message posted in the channel (from 1), once it is.
    async fn question(&self, n: usize) -> Value {
        let app = &self.app;
        within("a question to be posted", async {
            let mut rx = app.standin().subscribe();
            loop {
                if let Some(m) = app.messages(CHANNEL).into_iter().nth(n - 1) {
                    return m;
                }
                let _ = rx.changed().await;
            }
        })
        .await
    }

    async fn stop(mut self) -> (App, FakeLlm) {
        let _ = self.run.child.kill().await;
        drop(self.screen);
        (self.app, self.llm)
    }
}

/// What a PermissionDenied question shows: auto mode's reason (as this version words it), the
/// command, Allow once and Deny.
fn assert_denied_question(cc: &Cc, m: &Value, marker: &Path) {
    let text = shown_body(m);
    assert!(
        text.contains("Auto mode blocked Bash. Allow this call once?"),
        "{text}"
    );
    // 2.1.332 gives the rule's name alone; 2.1.197 the classifier's <reason>.
    let reason = if cc.is_newest() {
        format!("Auto mode's reason: [{}]", fake_llm::BLOCK_RULE)
    } else {
        format!(
            "Auto mode's reason: [{}] the test classifier blocks this command",
            fake_llm::BLOCK_RULE
        )
    };
    assert!(text.contains(&reason), "{} on {text}", cc.version);
    assert!(
        m["content"]
            .as_str()
            .unwrap()
            .contains(&format!("touch {}", marker.display())),
        "{m}"
    );
    let labels: Vec<String> = controls(m).into_iter().map(|(_, l)| l).collect();
    assert!(
        labels.contains(&"Allow once".to_owned()) && labels.contains(&"Deny".to_owned()),
        "{labels:?}"
    );
}

/// Whether the last message of `request` (to the model) tells it that it may retry.
fn says_retry(request: &Value) -> bool {
    let last = request["messages"]
        .as_array()
        .and_then(|m| m.last())
        .map(Value::to_string)
        .unwrap_or_default();
    fake_llm::RETRY_ALLOWED.iter().any(|t| last.contains(t))
}

/// The first request to the model that carries `n` tool results.
fn with_results(llm: &FakeLlm, n: usize) -> Option<Value> {
    llm.requests().into_iter().find(|r| {
        r["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
            .filter(|c| c["type"] == "tool_result")
            .count()
            == n
    })
}

const AUTO_DENIED: &str =
    "Permission for this action was denied by the Claude Code auto mode classifier";

claude_code_matrix!(claude_code_auto_mode_denial_allowed_once_runs_the_retried_call_once);
async fn claude_code_auto_mode_denial_allowed_once_runs_the_retried_call_once(cc: Cc) {
    if !Path::new("/usr/bin/script").exists() {
        return skip(
            "agents::claude_code_auto_mode_denial_allowed_once_runs_the_retried_call_once",
            "no script(1) (util-linux) for a pseudo-terminal",
        );
    }
    // The call, its retry (made only if Claude Code says it may), then the same call again.
    let auto = AutoRun::start(&cc, |m| {
        let t = touch(m);
        vec![t.clone(), t.retry(), t]
    })
    .await;
    let first = auto.question(1).await;
    assert_denied_question(&cc, &first, &auto.marker);
    assert!(!auto.marker.exists());
    // The classifier's requests for the first call (its stages).
    let per_call = auto.llm.classified().len();
    assert!(per_call >= 1, "the classifier was asked");
    final_state(&auto.app.press(&first, &alice(), "Allow once").await);

    // The same call again, a third time: not covered by the used grant, so the classifier
    // blocks it and a second question comes.
    let second = auto.question(2).await;
    assert_denied_question(&cc, &second, &auto.marker);
    // The retried call ran before it.
    assert!(auto.marker.exists(), "the retried call did not run");
    final_state(&auto.app.press(&second, &alice(), "Deny").await);
    auto.llm
        .wait_for("the model to be shown the third result", |l| {
            l.tool_results().len() == 3
        })
        .await;
    let results = auto.llm.tool_results();
    assert!(results[0].contains(AUTO_DENIED), "{results:?}");
    assert!(!results[1].contains(AUTO_DENIED), "{results:?}");
    assert!(results[2].contains(AUTO_DENIED), "{results:?}");
    // The model was told it may retry after the first denial, not after the second.
    assert!(says_retry(&with_results(&auto.llm, 1).unwrap()));
    assert!(!says_retry(&with_results(&auto.llm, 3).unwrap()));
    // The retried call passed on its grant, without the classifier; the third was classified.
    assert_eq!(auto.llm.classified().len(), 2 * per_call, "{}", cc.version);
    let (app, _llm) = auto.stop().await;
    let audit = app.store().audit_rows(None).await.unwrap();
    let grant_rows: Vec<(&str, bool)> = audit
        .iter()
        .filter(|r| r.action.starts_with("once_grant"))
        .map(|r| (r.action.as_str(), r.accepted))
        .collect();
    assert_eq!(
        grant_rows,
        [("once_grant", true), ("once_grant_used", true)],
        "{audit:?}"
    );
    let minted = audit.iter().find(|r| r.action == "once_grant").unwrap();
    assert!(
        minted.actor.as_deref().unwrap_or("").contains("alice"),
        "{minted:?}"
    );
    app.assert_payloads_valid();
}

claude_code_matrix!(claude_code_auto_mode_denial_denied_stands);
async fn claude_code_auto_mode_denial_denied_stands(cc: Cc) {
    if !Path::new("/usr/bin/script").exists() {
        return skip(
            "agents::claude_code_auto_mode_denial_denied_stands",
            "no script(1) (util-linux) for a pseudo-terminal",
        );
    }
    let auto = AutoRun::start(&cc, |m| vec![touch(m), touch(m).retry()]).await;
    let m = auto.question(1).await;
    assert_denied_question(&cc, &m, &auto.marker);
    final_state(&auto.app.press(&m, &alice(), "Deny").await);
    auto.llm
        .wait_for("the model to be shown the denial", |l| {
            l.tool_results().len() == 1
        })
        .await;
    // The denial stands: the model is not told it may retry, so it does not.
    let shown = with_results(&auto.llm, 1).unwrap();
    assert!(!says_retry(&shown), "{shown}");
    assert!(auto.llm.tool_results()[0].contains(AUTO_DENIED));
    assert!(!auto.marker.exists());
    let (app, _llm) = auto.stop().await;
    assert_eq!(app.messages(CHANNEL).len(), 1, "one question");
    let audit = app.store().audit_rows(None).await.unwrap();
    assert!(
        !audit.iter().any(|r| r.action.starts_with("once_grant")),
        "{audit:?}"
    );
    // Who denied it is in the audit.
    assert!(
        audit.iter().any(|r| r.action == "answer"
            && r.accepted
            && r.actor.as_deref().unwrap_or("").contains("alice")),
        "{audit:?}"
    );
    app.assert_payloads_valid();
}

// --- Claude Code, fail closed (`setup claude-code --fail-closed`, onFailure) -------------------

/// The newer Claude Code, or a skip saying why not.
macro_rules! need_newer {
    ($test:expr) => {
        match newer_claude() {
            Ok(b) => b,
            Err(why) => return skip($test, &why),
        }
    };
}

/// Runs the newer Claude Code (`-p`) on settings that `askrelay setup claude-code SETUP` wrote,
/// the model running `touch MARKER`, with `allow` as the project's permission rules and the
/// daemon stopped. Returns whether the command ran, the tool results, and the settings setup
/// wrote.
async fn fail_closed_run(bin: &Path, setup: &[&str], allow: Value) -> (bool, Vec<String>, Value) {
    let mut app = daemon().await;
    app.stop().await;
    let work = tempfile::tempdir().unwrap();
    let marker = work.path().join("marker");
    std::fs::create_dir_all(work.path().join(".claude")).unwrap();
    std::fs::write(
        work.path().join(".claude/settings.local.json"),
        json!({"permissions": {"allow": allow}}).to_string(),
    )
    .unwrap();
    let llm = FakeLlm::anthropic(vec![touch(&marker)]).await;
    let setup: Vec<String> = setup.iter().map(|a| a.to_string()).collect();
    let run = Claude::start(
        bin,
        &llm,
        &app,
        Settings::Setup(setup),
        Mode::Print,
        work.path(),
    )
    .await;
    let written: Value = serde_json::from_str(
        &std::fs::read_to_string(run.home.path().join(".claude/settings.json")).unwrap(),
    )
    .unwrap();
    run.finish().await;
    (marker.exists(), llm.tool_results(), written)
}

/// The `onFailure` of every hook entry in `settings` that asks people (not async, not auto
/// mode's).
fn on_failure(settings: &Value) -> Vec<Value> {
    let hooks = settings["hooks"].as_object().cloned().unwrap_or_default();
    hooks
        .iter()
        // Auto mode's hooks never fail closed: a failed PermissionDenied hook leaves the
        // denial as it is, a failed once-grant check lets Claude Code's own checks run.
        .filter(|(event, _)| *event != "PermissionDenied")
        .flat_map(|(_, groups)| groups.as_array().cloned().unwrap_or_default())
        .flat_map(|g| g["hooks"].as_array().cloned().unwrap_or_default())
        .filter(|h| {
            !h["command"]
                .as_str()
                .is_some_and(|c| c.contains("--once-grants-only"))
        })
        // The async lifecycle hooks decide nothing, so they never fail closed.
        .filter(|h| h["async"] != true)
        .map(|h| h["onFailure"].clone())
        .collect()
}

#[tokio::test]
async fn claude_code_fail_closed_with_the_daemon_unreachable_does_not_run_the_call() {
    let test = "agents::claude_code_fail_closed_with_the_daemon_unreachable_does_not_run_the_call";
    let bin = need_newer!(test);
    let (ran, results, written) =
        fail_closed_run(&bin, &["--fail-closed", "--no-mcp"], json!([])).await;
    // setup asked this claude its version, and wrote the field.
    assert_eq!(
        on_failure(&written),
        [json!("block"), json!("block")],
        "{written}"
    );
    // No answer from askrelay: Claude Code's own prompt, which nobody can grant in -p.
    assert!(!ran, "{results:?}");
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(results[0].contains("needs approval"), "{results:?}");

    // Asked before every Bash call, one the project allows: askrelay's `ask` still stops it.
    let (ran, results, written) = fail_closed_run(
        &bin,
        &["--fail-closed", "--no-mcp", "--event", "pre-tool-use"],
        json!(["Bash(touch:*)"]),
    )
    .await;
    assert_eq!(
        on_failure(&written),
        [json!("block"), json!("block")],
        "{written}"
    );
    assert!(!ran, "{results:?}");
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(
        results[0].contains("cannot reach the askrelay daemon")
            && results[0].contains("asking here"),
        "{results:?}"
    );
}

#[tokio::test]
async fn claude_code_fail_closed_blocks_the_call_when_the_hook_cannot_run() {
    let test = "agents::claude_code_fail_closed_blocks_the_call_when_the_hook_cannot_run";
    let bin = need_newer!(test);
    // askrelay gone from where the settings say (uninstalled, moved): the hook cannot start.
    let gone = tempfile::tempdir().unwrap();
    let program = gone.path().join("askrelay").display().to_string();
    let allow = json!(["Bash(touch:*)"]);
    let setup = ["--event", "pre-tool-use", "--no-mcp", "--program", &program];
    // Without --fail-closed the failure lets the call through (the project allows it).
    let (ran, results, _) = fail_closed_run(&bin, &setup, allow.clone()).await;
    assert!(ran, "without onFailure the call runs: {results:?}");
    let mut closed = vec!["--fail-closed"];
    closed.extend_from_slice(&setup);
    let (ran, results, written) = fail_closed_run(&bin, &closed, allow).await;
    assert_eq!(
        on_failure(&written),
        [json!("block"), json!("block")],
        "{written}"
    );
    assert!(!ran, "onFailure: block, and yet it ran: {results:?}");
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(
        results[0].contains("blocking because onFailure is \"block\""),
        "{results:?}"
    );
}

// --- Codex -------------------------------------------------------------------------------------

/// A `codex exec` of its own: a CODEX_HOME whose provider is the fake model, which runs
/// `touch MARKER` in a work directory.
struct CodexRun {
    home: tempfile::TempDir,
    work: tempfile::TempDir,
    llm: FakeLlm,
}

impl CodexRun {
    /// `features_hooks`: whether config.toml turns hooks on itself (`askrelay setup codex`
    /// does it otherwise).
    async fn new(features_hooks: bool) -> CodexRun {
        let work = tempfile::tempdir().unwrap();
        let marker = work.path().join("codex-marker");
        let llm = FakeLlm::openai(vec![ToolCall::new(
            "exec_command",
            json!({"cmd": format!("touch {}", marker.display())}),
        )])
        .await;
        CodexRun::with(llm, work, features_hooks)
    }

    /// The same, with the model `llm`, in `work`.
    fn with(llm: FakeLlm, work: tempfile::TempDir, features_hooks: bool) -> CodexRun {
        let home = tempfile::tempdir().unwrap();
        let features = if features_hooks {
            "[features]\nhooks = true\n"
        } else {
            ""
        };
        std::fs::write(
            home.path().join("config.toml"),
            format!(
                "model = \"gpt-test\"\nmodel_provider = \"fake\"\n\
                 [model_providers.fake]\nname = \"fake\"\nbase_url = \"{}/v1\"\n\
                 wire_api = \"responses\"\nenv_key = \"FAKE_KEY\"\n{features}",
                llm.base_url
            ),
        )
        .unwrap();
        CodexRun { home, work, llm }
    }

    /// `codex exec`, asking the daemon on `socket`.
    fn command(&self, bin: &Path, socket: &Path) -> Command {
        let mut cmd = Command::new(bin);
        cmd.args([
            "exec",
            "--dangerously-bypass-hook-trust",
            "--skip-git-repo-check",
            "--sandbox",
            "danger-full-access",
            "Do the task.",
        ])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", self.home.path())
        .env("CODEX_HOME", self.home.path())
        .env("FAKE_KEY", "test")
        .env("ASKRELAY_SOCKET_PATH", socket)
        .current_dir(self.work.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
        cmd
    }

    /// Whether the command ran, and what the model was shown as each tool's result.
    fn outcome(&self) -> (bool, Vec<String>) {
        (
            self.work.path().join("codex-marker").exists(),
            self.llm.tool_results(),
        )
    }
}

/// Runs `codex exec` with a PreToolUse hook, the model running `touch MARKER`.
async fn codex_run(bin: &Path, answer: &str) -> (bool, Vec<String>) {
    let app = daemon().await;
    let run = CodexRun::new(true).await;
    std::fs::write(
        run.home.path().join("hooks.json"),
        json!({"hooks": {"PreToolUse": [{"matcher": ".*", "hooks": [
            {"type": "command", "command": hook_command("codex"), "timeout": 60}]}]}})
        .to_string(),
    )
    .unwrap();
    let child = run.command(bin, &app.socket()).spawn().unwrap();
    let (_, m) = first_question(&app).await;
    final_state(&app.press(&m, &alice(), answer).await);
    let out = within("codex to finish", child.wait_with_output())
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    app.assert_payloads_valid();
    run.outcome()
}

#[tokio::test]
async fn codex_allow_runs_the_command() {
    let bin = need!("codex", "agents::codex_allow_runs_the_command");
    let (made, results) = codex_run(&bin, "Allow").await;
    assert!(made, "{results:?}");
    assert!(!results[0].contains("blocked"), "{results:?}");
}

#[tokio::test]
async fn codex_deny_blocks_the_command_and_names_who() {
    let bin = need!(
        "codex",
        "agents::codex_deny_blocks_the_command_and_names_who"
    );
    let (made, results) = codex_run(&bin, "Deny").await;
    assert!(!made, "{results:?}");
    assert!(
        results[0].contains("Command blocked by PreToolUse hook: Denied by alice on Discord"),
        "{results:?}"
    );
}

/// Runs `codex exec` with what `askrelay setup codex SETUP` wrote (and a provider for the
/// fake), the model running `touch MARKER`, the daemon stopped. Returns whether the command
/// ran, and the tool results.
async fn codex_set_up_daemon_down(bin: &Path, setup: &[&str]) -> (bool, Vec<String>) {
    let mut app = daemon().await;
    app.stop().await;
    let run = CodexRun::new(false).await;
    let mut setup_cmd = askrelay_in(run.home.path());
    let out = setup_cmd
        .as_std_mut()
        .args(["setup", "codex", "--no-mcp", "--codex-home"])
        .arg(run.home.path())
        .args(setup)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let out = within("codex to finish", run.command(bin, &app.socket()).output())
        .await
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    run.outcome()
}

#[tokio::test]
async fn codex_set_up_by_askrelay_setup_denies_with_the_daemon_unreachable() {
    let bin = need!(
        "codex",
        "agents::codex_set_up_by_askrelay_setup_denies_with_the_daemon_unreachable"
    );
    let (made, results) = codex_set_up_daemon_down(&bin, &[]).await;
    assert!(!made, "{results:?}");
    assert!(
        results[0].contains("Command blocked by PreToolUse hook: askrelay: ")
            && results[0].contains("denied (--fail-closed)"),
        "{results:?}"
    );
    // What --fail-open risks: the same call runs, asked of nobody.
    let (made, results) = codex_set_up_daemon_down(&bin, &["--fail-open"]).await;
    assert!(made, "{results:?}");
}

#[test]
fn the_pinned_versions_are_the_ones_setup_installs() {
    let script =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/setup-clis.sh"))
            .unwrap();
    assert!(script.contains(&format!("CLAUDE_CODE={CLAUDE_CODE}\n")));
    assert!(script.contains(&format!("CODEX={CODEX}\n")));
    assert!(script.contains(&format!("CLAUDE_CODE_NEWER={CLAUDE_CODE_NEWER}\n")));
}

mod allow;
mod codex_tui;
mod copilot;
mod mcp_client;
mod stop;
mod tty;
mod withdrawn;
