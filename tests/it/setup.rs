//! `askrelay setup claude-code` and `askrelay setup codex`, through the real binary, on
//! settings files that already hold other hooks, servers and keys: those stay as they are, a
//! second run changes nothing, `--dry-run` writes nothing, `--remove` takes out only askrelay's
//! entries, and a file that does not parse is refused and left alone.

use crate::harness::*;
use serde_json::{json, Value};
use std::path::Path;

/// Runs `askrelay setup ARGS` with HOME at `home`, in `cwd`.
async fn setup(home: &Path, cwd: &Path, args: &[&str]) -> (i32, String, String) {
    let bin = Bin::new();
    let mut all = vec!["setup"];
    all.extend_from_slice(args);
    let mut cmd = bin.cmd(&all);
    cmd.env("HOME", home).current_dir(cwd);
    let out = within("askrelay setup", cmd.output()).await.unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn read_json(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// The commands of every hook of `event` in a settings object.
fn commands(settings: &Value, event: &str) -> Vec<(String, String)> {
    settings["hooks"][event]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|g| {
            let matcher = g["matcher"].as_str().unwrap_or("").to_owned();
            g["hooks"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .map(move |h| {
                    (
                        matcher.clone(),
                        h["command"].as_str().unwrap_or("").to_owned(),
                    )
                })
        })
        .collect()
}

fn ours(c: &str, agent: &str) -> bool {
    c.starts_with(BIN) && c.contains(&format!(" hook {agent} --timeout 590"))
}

#[tokio::test]
async fn claude_code_setup_merges_keeps_the_rest_and_is_idempotent() {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let settings_path = home.path().join(".claude/settings.json");
    std::fs::create_dir_all(settings_path.parent().unwrap()).unwrap();
    let theirs = json!({
        "permissions": {"allow": ["Bash(npm test)"]},
        "env": {"FOO": "bar"},
        "hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [
                {"type": "command", "command": "lint-guard --strict"}]}],
            "Stop": [{"hooks": [{"type": "command", "command": "notify-me"}]}]
        }
    });
    std::fs::write(
        &settings_path,
        serde_json::to_string_pretty(&theirs).unwrap(),
    )
    .unwrap();
    let claude_json = home.path().join(".claude.json");
    let their_root = json!({
        "numStartups": 12,
        "mcpServers": {"github": {"type": "stdio", "command": "gh-mcp", "args": []}},
        "projects": {"/elsewhere": {"allowedTools": []}}
    });
    std::fs::write(&claude_json, their_root.to_string()).unwrap();

    // --dry-run: a diff, nothing written.
    let before = std::fs::read_to_string(&settings_path).unwrap();
    let (code, out, err) = setup(home.path(), proj.path(), &["claude-code", "--dry-run"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("+++ ") && out.contains("+            \"command\": \""),
        "{out}"
    );
    assert!(out.contains("dry run"), "{out}");
    assert_eq!(std::fs::read_to_string(&settings_path).unwrap(), before);

    let (code, out, err) = setup(home.path(), proj.path(), &["claude-code"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("PermissionRequest"), "{out}");
    let s = read_json(&settings_path);
    // Theirs is all still there.
    assert_eq!(s["permissions"], theirs["permissions"]);
    assert_eq!(s["env"], theirs["env"]);
    assert_eq!(s["hooks"]["Stop"], theirs["hooks"]["Stop"]);
    let pre = commands(&s, "PreToolUse");
    assert!(
        pre.contains(&("Bash".into(), "lint-guard --strict".into())),
        "{pre:?}"
    );
    // Ours: PermissionRequest for every tool, PreToolUse for AskUserQuestion.
    let perm = commands(&s, "PermissionRequest");
    assert_eq!(perm.len(), 1, "{perm:?}");
    assert_eq!(perm[0].0, "*");
    assert!(ours(&perm[0].1, "claude-code"), "{perm:?}");
    assert!(
        pre.iter()
            .any(|(m, c)| m == "AskUserQuestion" && ours(c, "claude-code")),
        "{pre:?}"
    );
    let root = read_json(&claude_json);
    assert_eq!(root["numStartups"], 12);
    assert_eq!(root["projects"], their_root["projects"]);
    assert_eq!(
        root["mcpServers"]["github"],
        their_root["mcpServers"]["github"]
    );
    assert_eq!(root["mcpServers"]["askrelay"]["command"], BIN);
    assert_eq!(root["mcpServers"]["askrelay"]["args"], json!(["mcp"]));

    // Again: nothing changes.
    let (settings_text, root_text) = (
        std::fs::read_to_string(&settings_path).unwrap(),
        std::fs::read_to_string(&claude_json).unwrap(),
    );
    let (code, out, _) = setup(home.path(), proj.path(), &["claude-code"]).await;
    assert_eq!(code, 0);
    assert_eq!(out.matches("already as wanted").count(), 2, "{out}");
    assert_eq!(
        std::fs::read_to_string(&settings_path).unwrap(),
        settings_text
    );
    assert_eq!(std::fs::read_to_string(&claude_json).unwrap(), root_text);

    // PreToolUse instead: replaces, never duplicates.
    let (code, _, err) = setup(
        home.path(),
        proj.path(),
        &["claude-code", "--event", "pre-tool-use"],
    )
    .await;
    assert_eq!(code, 0, "{err}");
    let s = read_json(&settings_path);
    assert!(s["hooks"].get("PermissionRequest").is_none(), "{s}");
    let pre = commands(&s, "PreToolUse");
    assert_eq!(
        pre.iter().filter(|(_, c)| ours(c, "claude-code")).count(),
        2,
        "one for the tools, one for AskUserQuestion: {pre:?}"
    );
    assert!(pre
        .iter()
        .any(|(m, c)| m == "Bash|Edit|MultiEdit|Write|NotebookEdit" && ours(c, "claude-code")));

    // --remove: theirs, exactly.
    let (code, _, err) = setup(home.path(), proj.path(), &["claude-code", "--remove"]).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(read_json(&settings_path), theirs);
    assert_eq!(read_json(&claude_json), their_root);
}

#[tokio::test]
async fn claude_code_setup_scopes_write_where_claude_code_reads() {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let (code, _, err) = setup(
        home.path(),
        proj.path(),
        &["claude-code", "--scope", "project"],
    )
    .await;
    assert_eq!(code, 0, "{err}");
    let s = read_json(&proj.path().join(".claude/settings.json"));
    assert_eq!(commands(&s, "PermissionRequest").len(), 1);
    assert_eq!(
        read_json(&proj.path().join(".mcp.json"))["mcpServers"]["askrelay"]["command"],
        BIN
    );
    assert!(!home.path().join(".claude/settings.json").exists());

    let (code, _, err) = setup(
        home.path(),
        proj.path(),
        &["claude-code", "--scope", "local"],
    )
    .await;
    assert_eq!(code, 0, "{err}");
    let s = read_json(&proj.path().join(".claude/settings.local.json"));
    assert_eq!(commands(&s, "PermissionRequest").len(), 1);
    let root = read_json(&home.path().join(".claude.json"));
    let key = proj.path().display().to_string();
    assert_eq!(
        root["projects"][&key]["mcpServers"]["askrelay"]["args"],
        json!(["mcp"])
    );
}

#[tokio::test]
async fn setup_refuses_a_file_it_cannot_parse_and_changes_nothing() {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let path = home.path().join(".claude/settings.json");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, "{ \"hooks\": { oops").unwrap();
    let (code, _, err) = setup(home.path(), proj.path(), &["claude-code"]).await;
    assert_eq!(code, 1);
    assert!(
        err.contains(&format!("cannot parse {} as JSON", path.display()))
            && err.contains("nothing was changed"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "{ \"hooks\": { oops"
    );
    assert!(
        !home.path().join(".claude.json").exists(),
        "nothing else written either"
    );

    let codex = home.path().join(".codex");
    std::fs::create_dir_all(&codex).unwrap();
    std::fs::write(codex.join("config.toml"), "model = [unclosed\n").unwrap();
    let (code, _, err) = setup(home.path(), proj.path(), &["codex"]).await;
    assert_eq!(code, 1);
    assert!(
        err.contains("as TOML") && err.contains("nothing was changed"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(codex.join("config.toml")).unwrap(),
        "model = [unclosed\n"
    );
}

#[tokio::test]
async fn codex_setup_keeps_comments_and_other_servers_and_is_idempotent() {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let codex = home.path().join(".codex");
    std::fs::create_dir_all(&codex).unwrap();
    let config = "# my Codex settings\nmodel = \"o3\"   # the one I like\n\n\
                  [mcp_servers.github]\ncommand = \"gh-mcp\"   # keep me\nargs = []\n";
    std::fs::write(codex.join("config.toml"), config).unwrap();
    let their_hooks = json!({"hooks": {"PostToolUse": [{"matcher": ".*", "hooks": [
        {"type": "command", "command": "audit-log"}]}]}});
    std::fs::write(codex.join("hooks.json"), their_hooks.to_string()).unwrap();

    let (code, out, err) = setup(home.path(), proj.path(), &["codex"]).await;
    assert_eq!(code, 0, "{err}{out}");
    let text = std::fs::read_to_string(codex.join("config.toml")).unwrap();
    for line in config.lines() {
        assert!(text.contains(line), "lost {line:?}:\n{text}");
    }
    let doc: toml_edit::DocumentMut = text.parse().unwrap();
    assert_eq!(doc["features"]["hooks"].as_bool(), Some(true));
    assert_eq!(
        doc["mcp_servers"]["askrelay"]["command"].as_str(),
        Some(BIN)
    );
    assert_eq!(
        doc["mcp_servers"]["askrelay"]["tool_timeout_sec"].as_integer(),
        Some(86400)
    );
    let hooks = read_json(&codex.join("hooks.json"));
    assert_eq!(
        hooks["hooks"]["PostToolUse"],
        their_hooks["hooks"]["PostToolUse"]
    );
    let pre = commands(&hooks, "PreToolUse");
    assert_eq!(pre.len(), 1);
    assert!(ours(&pre[0].1, "codex"), "{pre:?}");

    let (code, out, _) = setup(home.path(), proj.path(), &["codex"]).await;
    assert_eq!(code, 0);
    assert_eq!(out.matches("already as wanted").count(), 2, "{out}");
    assert_eq!(
        std::fs::read_to_string(codex.join("config.toml")).unwrap(),
        text
    );

    let (code, _, err) = setup(home.path(), proj.path(), &["codex", "--remove"]).await;
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(codex.join("config.toml")).unwrap();
    assert!(!text.contains("askrelay"), "{text}");
    for line in config.lines() {
        assert!(text.contains(line), "lost {line:?}:\n{text}");
    }
    assert_eq!(read_json(&codex.join("hooks.json")), their_hooks);
}
