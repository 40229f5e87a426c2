//! `askrelay mcp` with the real Claude Code as its MCP client (issue 40, item 8), on both
//! Claude Codes of the matrix: the health check of `claude mcp list`, which starts the server
//! over stdio and lists its tools. What the client sent and what askrelay answered are read from
//! a wrapper that copies both directions. Then `claude -p` with a model that calls the tool:
//! the call is answered from Discord with progress on the client's token, and the client's own
//! tool timeout cancels it (`notifications/cancelled`), which ends the question. The newest
//! defers MCP tools behind ToolSearch, so its model loads the tool's schema first.

use super::*;

/// Runs `claude mcp list` with `askrelay mcp` as its one server; returns its stdout, the
/// messages the client sent and the ones askrelay answered.
async fn mcp_list(cc: &Cc) -> (String, Vec<Value>, Vec<Value>) {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let wrapper = mcp_wrapper(h, &h.join("askrelay.sock"));
    std::fs::write(
        h.join(".claude.json"),
        json!({"hasCompletedOnboarding": true, "mcpServers": {"askrelay":
            {"type": "stdio", "command": wrapper, "args": []}}})
        .to_string(),
    )
    .unwrap();
    let out = within(
        "claude mcp list",
        Command::new(&cc.bin)
            .args(["mcp", "list"])
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", h)
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("DISABLE_TELEMETRY", "1")
            .env("DISABLE_AUTOUPDATER", "1")
            .current_dir(h)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        jsonl(&h.join("sent.jsonl")),
        jsonl(&h.join("answered.jsonl")),
    )
}

claude_code_matrix!(claude_code_mcp_client_connects_and_lists_the_tool);
async fn claude_code_mcp_client_connects_and_lists_the_tool(cc: Cc) {
    let (stdout, sent, answered) = mcp_list(&cc).await;
    assert!(
        stdout.contains("askrelay: ") && stdout.contains("Connected"),
        "{stdout}"
    );
    let methods: Vec<&str> = sent.iter().filter_map(|m| m["method"].as_str()).collect();
    if cc.is_newest() {
        // The stateless 2026-07-28 protocol: server/discover, never initialize; the version
        // rides in every request's _meta.
        assert_eq!(methods.first(), Some(&"server/discover"), "{sent:?}");
        assert!(!methods.contains(&"initialize"), "{methods:?}");
        assert_eq!(
            sent[0]["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"], "2026-07-28",
            "{sent:?}"
        );
        let discovered = answered
            .iter()
            .find(|m| m["id"] == sent[0]["id"])
            .unwrap_or_else(|| panic!("no answer to server/discover: {answered:?}"));
        assert!(
            discovered["result"]["supportedVersions"]
                .as_array()
                .is_some_and(|v| v.contains(&json!("2026-07-28"))),
            "{discovered}"
        );
    } else {
        assert_eq!(methods.first(), Some(&"initialize"), "{sent:?}");
    }
    // Both list the tools, and askrelay answers with its one tool.
    assert!(methods.contains(&"tools/list"), "{methods:?}");
    assert!(
        answered.iter().any(|m| m["result"]["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["name"] == "ask_user_question"))),
        "{answered:?}"
    );
}

/// Writes a wrapper around `askrelay mcp` (for the daemon at `socket`) that copies what the
/// client sent and what askrelay answered to `sent.jsonl` and `answered.jsonl` in `dir`.
fn mcp_wrapper(dir: &Path, socket: &Path) -> PathBuf {
    let wrapper = dir.join("askrelay-mcp.sh");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\ntee -a {sent} | env -i PATH=\"$PATH\" HOME={home} \
             ASKRELAY_SOCKET_PATH={socket} {BIN} mcp 2>>{home}/err.log \
             | tee -a {answered}\n",
            sent = dir.join("sent.jsonl").display(),
            answered = dir.join("answered.jsonl").display(),
            home = dir.display(),
            socket = socket.display(),
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    wrapper
}

/// An MCP config (`--mcp-config`) with [`mcp_wrapper`] as its one server; returns its path.
fn mcp_config(dir: &Path, socket: &Path) -> PathBuf {
    let wrapper = mcp_wrapper(dir, socket);
    let config = dir.join("mcp.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"askrelay": {"type": "stdio", "command": wrapper, "args": []}}})
            .to_string(),
    )
    .unwrap();
    config
}

fn jsonl(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Runs `claude -p` with `askrelay mcp` (for `app`'s daemon) as its MCP server and a model
/// that calls its tool once (the newest first loads the deferred tool's schema through
/// ToolSearch, as a model does); `during` runs while it does. Returns the tool results the model
/// saw, what the client sent and what askrelay answered.
async fn mcp_call(
    cc: &Cc,
    app: &App,
    env: &[(&str, &str)],
    during: impl std::future::Future<Output = ()>,
) -> (Vec<String>, Vec<Value>, Vec<Value>) {
    let dir = tempfile::tempdir().unwrap();
    let config = mcp_config(dir.path(), &app.socket());
    let ask = ToolCall::new(
        "mcp__askrelay__ask_user_question",
        json!({"questions": [{"id": "deploy", "question": "Deploy now?",
            "options": [{"label": "Yes"}, {"label": "No"}]}]}),
    );
    let script = if cc.is_newest() {
        vec![
            ToolCall::new(
                "ToolSearch",
                json!({"query": "select:mcp__askrelay__ask_user_question", "max_results": 1}),
            ),
            ask,
        ]
    } else {
        vec![ask]
    };
    let llm = FakeLlm::anthropic(script).await;
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join(".claude.json"),
        json!({"hasCompletedOnboarding": true}).to_string(),
    )
    .unwrap();
    let mut cmd = Command::new(&cc.bin);
    cmd.args([
        "-p",
        "Do the task.",
        "--output-format",
        "json",
        "--mcp-config",
    ])
    .arg(&config)
    .args(["--allowedTools", "mcp__askrelay__ask_user_question"])
    .env_clear()
    .env("PATH", std::env::var("PATH").unwrap_or_default())
    .env("HOME", home.path())
    .env("ANTHROPIC_BASE_URL", &llm.base_url)
    .env("ANTHROPIC_API_KEY", API_KEY)
    .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
    .env("DISABLE_TELEMETRY", "1")
    .env("DISABLE_AUTOUPDATER", "1")
    .envs(env.iter().copied())
    .current_dir(dir.path())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .kill_on_drop(true);
    let child = cmd.spawn().unwrap();
    let (out, ()) = within("claude -p with askrelay mcp", async {
        tokio::join!(child.wait_with_output(), during)
    })
    .await;
    let out = out.unwrap();
    assert!(out.status.success(), "{out:?}");
    (
        llm.tool_results(),
        jsonl(&dir.path().join("sent.jsonl")),
        jsonl(&dir.path().join("answered.jsonl")),
    )
}

claude_code_matrix!(claude_code_mcp_tool_call_is_answered_from_discord_with_progress);
async fn claude_code_mcp_tool_call_is_answered_from_discord_with_progress(cc: Cc) {
    let app = daemon().await;
    let (results, sent, answered) = mcp_call(&cc, &app, &[], async {
        let (_, m) = first_question(&app).await;
        final_state(&app.press(&m, &alice(), "Yes").await);
    })
    .await;
    // The model saw askrelay's compact answer as the tool's result.
    assert_eq!(
        results.last().map(String::as_str),
        Some(r#"{"answers":[{"id":"deploy","selected":["Yes"]}]}"#),
        "{results:?}"
    );
    // The client asked for progress, and askrelay reported it on the client's token.
    let call = sent
        .iter()
        .find(|m| m["method"] == "tools/call")
        .unwrap_or_else(|| panic!("no tools/call: {sent:?}"));
    let token = &call["params"]["_meta"]["progressToken"];
    assert!(!token.is_null(), "{call}");
    assert!(
        answered
            .iter()
            .any(|m| m["method"] == "notifications/progress"
                && &m["params"]["progressToken"] == token),
        "{answered:?}"
    );
    app.assert_payloads_valid();
}

claude_code_matrix!(claude_code_mcp_timeout_cancels_the_question);
async fn claude_code_mcp_timeout_cancels_the_question(cc: Cc) {
    let app = daemon().await;
    // Nobody answers; the client's own tool timeout (MCP_TOOL_TIMEOUT, 3 s) gives up.
    let (results, sent, _) = mcp_call(&cc, &app, &[("MCP_TOOL_TIMEOUT", "3000")], async {}).await;
    assert!(
        results.last().is_some_and(|r| r.contains("timed out")),
        "{results:?}"
    );
    // It cancelled the call, and askrelay ended the question: nothing is pending, and the
    // message in the channel says it was cancelled.
    let cancel = sent
        .iter()
        .find(|m| m["method"] == "notifications/cancelled")
        .unwrap_or_else(|| panic!("no notifications/cancelled: {sent:?}"));
    assert!(!cancel["params"]["requestId"].is_null(), "{cancel}");
    within("the question to end", async {
        let mut rx = app.standin().subscribe();
        loop {
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
            if pending.is_empty() {
                return;
            }
            let _ = rx.changed().await;
        }
    })
    .await;
    let m = app.messages(CHANNEL).into_iter().next().unwrap();
    let fields = m["embeds"][0]["fields"].to_string();
    assert!(
        fields.contains("Cancelled") && fields.contains("the MCP client cancelled the tool call"),
        "{m}"
    );
    assert_eq!(m["components"], json!([]), "{m}");
    app.assert_payloads_valid();
}
