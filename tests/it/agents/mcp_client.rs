//! `askrelay mcp` with the real Claude Code as its MCP client (issue 40, item 8), on both
//! Claude Codes of the matrix: the health check of `claude mcp list`, which starts the server
//! over stdio and lists its tools. What the client sent and what askrelay answered are read from
//! a wrapper that copies both directions. (The call, its progress and its cancel through the
//! model are not driven here yet: the newest defers MCP tools behind ToolSearch.)

use super::*;

/// Runs `claude mcp list` with `askrelay mcp` as its one server; returns its stdout, the
/// messages the client sent and the ones askrelay answered.
async fn mcp_list(cc: &Cc) -> (String, Vec<Value>, Vec<Value>) {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let wrapper = h.join("askrelay-mcp.sh");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\ntee -a {sent} | env -i PATH=\"$PATH\" HOME={home} \
             ASKRELAY_SOCKET_PATH={home}/askrelay.sock {BIN} mcp 2>>{home}/err.log \
             | tee -a {answered}\n",
            sent = h.join("sent.jsonl").display(),
            answered = h.join("answered.jsonl").display(),
            home = h.display(),
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
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
    let lines = |name: &str| -> Vec<Value> {
        std::fs::read_to_string(h.join(name))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    };
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        lines("sent.jsonl"),
        lines("answered.jsonl"),
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
