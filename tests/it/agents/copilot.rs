//! The GitHub Copilot CLI (issue 40, item 9), for real: `copilot -p` at the pinned version
//! (`tests/setup-clis.sh` installs it under `<target>/agent-clis/copilot/`), offline
//! (`COPILOT_OFFLINE`, its BYOK provider pointed at the fake Responses API), set up by
//! `askrelay setup copilot` in its own HOME, with a real daemon and the Discord stand-in.

use super::*;

const COPILOT: &str = "1.0.102";

fn copilot_root() -> PathBuf {
    target_dir().join("agent-clis/copilot")
}

macro_rules! need_copilot {
    ($test:expr) => {
        match cli_in(&copilot_root(), "copilot") {
            Ok(b) => b,
            Err(why) => return skip($test, &why),
        }
    };
}

/// A Copilot run: its HOME (set up by `askrelay setup copilot SETUP`), its project and the
/// fake model that runs `touch MARKER` once.
struct CopilotRun {
    home: tempfile::TempDir,
    work: tempfile::TempDir,
    marker: PathBuf,
    llm: FakeLlm,
}

impl CopilotRun {
    async fn new(setup: &[&str]) -> CopilotRun {
        let home = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        let marker = work.path().join("made");
        let out = askrelay_in(home.path())
            .args(["setup", "copilot", "--program", BIN])
            .args(setup)
            .env("HOME", home.path())
            .output()
            .await
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let llm = FakeLlm::openai(vec![ToolCall::new(
            "bash",
            json!({"command": format!("touch {}", marker.display()),
                "description": "Create the marker"}),
        )])
        .await;
        CopilotRun {
            home,
            work,
            marker,
            llm,
        }
    }

    /// `copilot -p` against `socket`, running while `during` does; its stdout.
    async fn run(
        &self,
        bin: &Path,
        socket: &Path,
        during: impl std::future::Future<Output = ()>,
    ) -> String {
        let child = Command::new(bin)
            .args(["-p", "Do the task.", "--model", "gpt-5"])
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.home.path())
            .env("XDG_CACHE_HOME", copilot_root().join("cache"))
            .env("COPILOT_OFFLINE", "true")
            .env("COPILOT_AUTO_UPDATE", "false")
            .env(
                "COPILOT_PROVIDER_BASE_URL",
                format!("{}/v1", self.llm.base_url),
            )
            .env("COPILOT_PROVIDER_WIRE_API", "responses")
            .env("COPILOT_PROVIDER_API_KEY", API_KEY)
            .env("COPILOT_MODEL", "gpt-5")
            .env("ASKRELAY_SOCKET_PATH", socket)
            .current_dir(self.work.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let (out, ()) = within("copilot -p", async {
            tokio::join!(child.wait_with_output(), during)
        })
        .await;
        let out = out.unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

#[test]
fn the_pinned_copilot_is_the_one_setup_installs() {
    let script = std::fs::read_to_string("tests/setup-clis.sh").unwrap();
    assert!(script.contains(&format!("COPILOT={COPILOT}\n")));
}

/// Runs Copilot set up with `setup`, a person pressing `answer`; whether the command ran,
/// the tool results the model saw, and what the question showed.
async fn answered(bin: &Path, setup: &[&str], answer: &str) -> (bool, Vec<String>, Value) {
    let app = daemon().await;
    let run = CopilotRun::new(setup).await;
    let mut shown = Value::Null;
    run.run(bin, &app.socket(), async {
        let (_, m) = first_question(&app).await;
        final_state(&app.press(&m, &alice(), answer).await);
        shown = m;
    })
    .await;
    app.assert_payloads_valid();
    (run.marker.exists(), run.llm.tool_results(), shown)
}

#[tokio::test]
async fn copilot_permission_request_allow_runs_the_command() {
    let bin = need_copilot!("agents::copilot::copilot_permission_request_allow_runs_the_command");
    let (made, results, shown) = answered(&bin, &[], "Allow").await;
    assert!(made, "{results:?}");
    // The question shows the command as a command.
    assert!(shown.to_string().contains("touch "), "{shown}");
}

#[tokio::test]
async fn copilot_permission_request_deny_blocks_the_command_and_names_who() {
    let bin = need_copilot!(
        "agents::copilot::copilot_permission_request_deny_blocks_the_command_and_names_who"
    );
    let (made, results, _) = answered(&bin, &[], "Deny").await;
    assert!(!made);
    assert_eq!(
        results,
        vec!["Permission denied by a PermissionRequest hook: Denied by alice on Discord"]
    );
}

#[tokio::test]
async fn copilot_pre_tool_use_allow_and_deny() {
    let bin = need_copilot!("agents::copilot::copilot_pre_tool_use_allow_and_deny");
    let (made, results, _) = answered(&bin, &["--event", "pre-tool-use"], "Allow").await;
    assert!(made, "{results:?}");
    let (made, results, _) = answered(&bin, &["--event", "pre-tool-use"], "Deny").await;
    assert!(!made);
    assert_eq!(
        results,
        vec!["Denied by preToolUse hook: Denied by alice on Discord"]
    );
}

/// With the daemon stopped: whether the command ran and what the model saw.
async fn daemon_down(bin: &Path, setup: &[&str]) -> (bool, Vec<String>) {
    let mut app = daemon().await;
    let socket = app.socket();
    app.stop().await;
    let run = CopilotRun::new(setup).await;
    run.run(bin, &socket, async {}).await;
    (run.marker.exists(), run.llm.tool_results())
}

#[tokio::test]
async fn copilot_with_the_daemon_down_leaves_it_to_copilot_or_fails_closed() {
    let bin = need_copilot!(
        "agents::copilot::copilot_with_the_daemon_down_leaves_it_to_copilot_or_fails_closed"
    );
    // No decision: Copilot's own approval, which in -p has nobody to ask.
    let (made, results) = daemon_down(&bin, &[]).await;
    assert!(!made);
    assert!(
        results[0].contains("no interactive user response was available"),
        "{results:?}"
    );
    // --fail-closed: askrelay's own deny, in the event's shape.
    let (made, results) = daemon_down(&bin, &["--fail-closed"]).await;
    assert!(!made);
    assert!(
        results[0].starts_with("Permission denied by a PermissionRequest hook: askrelay:")
            && results[0].contains("--fail-closed"),
        "{results:?}"
    );
}

#[tokio::test]
async fn copilot_agent_stop_reply_keeps_it_working() {
    let bin = need_copilot!("agents::copilot::copilot_agent_stop_reply_keeps_it_working");
    let app = App::discord_with(|c| {
        c.routes.push(askrelay::config::Route {
            matches: std::collections::BTreeMap::from([("tool".into(), "Stop".into())]),
            stop_replies: Some(true),
            ..askrelay::config::Route::new("turns", CHANNEL)
        });
    })
    .await;
    let run = CopilotRun::new(&["--event", "pre-tool-use", "--stop"]).await;
    run.run(&bin, &app.socket(), async {
        // The tool call first.
        let (_, m) = first_question(&app).await;
        final_state(&app.press(&m, &alice(), "Allow").await);
        // Then the end of the turn, with the model's last words; a reply keeps it working.
        let turn_end = |n: usize| {
            let app = &app;
            async move {
                within("the end of the turn to be posted", async {
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
        };
        let m = turn_end(1).await;
        // 1.0.102 writes its events.jsonl only after the turn, so the model's last words
        // cannot be shown yet: the question says whose turn ended.
        assert!(
            m["embeds"][0]["description"]
                .as_str()
                .is_some_and(|d| d.contains("Copilot finished its turn")),
            "{m}"
        );
        let cb = app.press(&m, &alice(), "Reply…").await;
        let modal = cb["data"]["custom_id"].as_str().unwrap().to_owned();
        final_state(
            &app.submit_modal(&m, &alice(), &modal, "Also tidy up, then stop")
                .await,
        );
        // It carried on with the reply and ended its turn again: Done ends it.
        let m = turn_end(2).await;
        final_state(&app.press(&m, &alice(), "Done").await);
    })
    .await;
    assert!(run.marker.exists());
    let asked = run.llm.requests();
    assert!(
        asked
            .iter()
            .any(|r| r.to_string().contains("Also tidy up, then stop")),
        "the model was given the reply"
    );
    app.assert_payloads_valid();
}

#[tokio::test]
async fn setup_copilot_writes_its_hooks_and_remove_takes_them_out() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join(".copilot");
    std::fs::create_dir_all(&dir).unwrap();
    let theirs = "{\n  \"theme\": \"dark\",\n  \"hooks\": {\n    \"preToolUse\": [{\"type\": \"command\", \"bash\": \"./mine.sh\"}]\n  }\n}\n";
    std::fs::write(dir.join("settings.json"), theirs).unwrap();
    let setup = |args: &[&str]| {
        let mut c = askrelay_in(home.path());
        c.args(["setup", "copilot", "--program", "/opt/bin/askrelay"])
            .args(args)
            .env("HOME", home.path());
        c
    };
    let out = setup(&[]).output().await.unwrap();
    assert!(out.status.success(), "{out:?}");
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("settings.json")).unwrap()).unwrap();
    assert_eq!(v["theme"], "dark");
    assert_eq!(v["hooks"]["preToolUse"][0]["bash"], "./mine.sh");
    assert_eq!(
        v["hooks"]["permissionRequest"],
        json!([{"type": "command",
            "bash": "/opt/bin/askrelay hook copilot --event permission-request --timeout 590",
            "timeoutSec": 600}])
    );
    for event in ["postToolUse", "userPromptSubmitted", "sessionEnd"] {
        assert!(
            v["hooks"][event][0]["bash"]
                .as_str()
                .is_some_and(|c| c.contains("hook copilot --event")),
            "{v}"
        );
    }
    let mcp: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("mcp-config.json")).unwrap())
            .unwrap();
    assert_eq!(
        mcp["mcpServers"]["askrelay"],
        json!({"type": "local", "command": "/opt/bin/askrelay", "args": ["mcp"], "tools": ["*"]})
    );
    // A second run changes nothing.
    let before = std::fs::read_to_string(dir.join("settings.json")).unwrap();
    assert!(setup(&[]).status().await.unwrap().success());
    assert_eq!(
        std::fs::read_to_string(dir.join("settings.json")).unwrap(),
        before
    );
    // --remove gives back what was theirs.
    assert!(setup(&["--remove"]).status().await.unwrap().success());
    assert_eq!(
        std::fs::read_to_string(dir.join("settings.json")).unwrap(),
        theirs
    );
    // mcp-config.json was setup's own: it goes (as every file setup made, byte for byte).
    assert!(!dir.join("mcp-config.json").exists());
}
