//! `askrelay setup claude-code` and `askrelay setup codex`, through the real binary, on
//! settings files that already hold other hooks, servers and keys: those stay as they are, a
//! second run changes nothing, `--dry-run` writes nothing, `--remove` takes out only askrelay's
//! entries, and a file that does not parse is refused and left alone.

use crate::harness::*;
use serde_json::{json, Value};
use std::path::Path;

/// Runs `askrelay setup ARGS` with HOME at `home`, in `cwd`. Its records (what `--remove`
/// gives back) are in HOME's default state directory, `~/.local/state/askrelay/setup/`.
async fn setup(home: &Path, cwd: &Path, args: &[&str]) -> (i32, String, String) {
    let bin = Bin::new();
    let mut all = vec!["setup"];
    all.extend_from_slice(args);
    let mut cmd = bin.cmd(&all);
    cmd.env("HOME", home)
        .env_remove("XDG_STATE_HOME")
        .current_dir(cwd);
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
    c.starts_with(BIN)
        && (c.contains(&format!(" hook {agent} --timeout 590"))
            || c.contains(&format!(" hook {agent} --fail-closed --timeout 590")))
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
    // Auto mode: PermissionDenied for every tool, and the one-use grants' PreToolUse check.
    let denied = commands(&s, "PermissionDenied");
    assert_eq!(denied.len(), 1, "{denied:?}");
    assert_eq!(denied[0].0, "*");
    assert!(ours(&denied[0].1, "claude-code"), "{denied:?}");
    assert!(
        pre.iter().any(|(m, c)| m == "*"
            && c.starts_with(BIN)
            && c.ends_with(" hook claude-code --once-grants-only")),
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
    assert_eq!(
        pre.iter()
            .filter(|(m, c)| m == "*" && c.ends_with("--once-grants-only"))
            .count(),
        1,
        "and the one-use grants' check, once: {pre:?}"
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
    // Written as people write it, on several lines. (A one-line array that askrelay appends
    // to comes back from a second run with its closing bracket on a line of its own: the same
    // JSON, other whitespace.)
    let their_text = serde_json::to_string_pretty(&their_hooks).unwrap();
    std::fs::write(codex.join("hooks.json"), &their_text).unwrap();

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
    // Their PostToolUse hook stays first; askrelay's withdrawing one comes after it.
    assert_eq!(
        hooks["hooks"]["PostToolUse"][0],
        their_hooks["hooks"]["PostToolUse"][0]
    );
    let post = commands(&hooks, "PostToolUse");
    assert_eq!(post.len(), 2, "{post:?}");
    assert!(post[1].1.contains(" hook codex --timeout 5"), "{post:?}");
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
    assert_eq!(
        std::fs::read_to_string(codex.join("hooks.json")).unwrap(),
        their_text
    );
}

/// Runs `askrelay setup ARGS` as [`setup`] does, with `PATH` set to `path` only.
async fn setup_with_path(
    home: &Path,
    cwd: &Path,
    path: &Path,
    args: &[&str],
) -> (i32, String, String) {
    let mut all = vec!["setup"];
    all.extend_from_slice(args);
    let mut cmd = Bin::new().cmd(&all);
    cmd.env("HOME", home)
        .env_remove("XDG_STATE_HOME")
        .env("PATH", path)
        .current_dir(cwd);
    let out = within("askrelay setup", cmd.output()).await.unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test]
async fn setup_keeps_numbers_and_formatting_byte_for_byte() {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let settings_path = home.path().join(".claude/settings.json");
    std::fs::create_dir_all(settings_path.parent().unwrap()).unwrap();
    // serde_json wrote these back as 1.2345678901234568e+29 and 1.1, re-indented to two
    // spaces, and spread the one-line arrays over lines. (Comments: the unit tests in setup.rs.)
    let settings = "{\n    \"zeta\": 123456789012345678901234567890,\n    \"ratio\": 1.10,\n    \
                    \"hooks\": {\n        \"Stop\": [{\"hooks\": \
                    [{\"type\": \"command\", \"command\": \"notify-me\"}]}]\n    },\n    \
                    \"alpha\": [1e3, 2.50]\n}\n";
    std::fs::write(&settings_path, settings).unwrap();
    let claude_json = home.path().join(".claude.json");
    // As Claude Code writes it (two spaces).
    let root = "{\n  \"numStartups\": 12,\n  \"firstStartTime\": 1.7000000000000000001e12,\n  \
                \"userID\": 98765432109876543210987654321,\n  \"mcpServers\": {\n    \
                \"github\": {\n      \"command\": \"gh-mcp\"\n    }\n  }\n}";
    std::fs::write(&claude_json, root).unwrap();

    let (code, _, err) = setup(home.path(), proj.path(), &["claude-code"]).await;
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(&settings_path).unwrap();
    for kept in [
        "\n    \"zeta\": 123456789012345678901234567890,\n",
        "\n    \"ratio\": 1.10,\n",
        "\n        \"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"notify-me\"}]}],\n",
        "\n    \"alpha\": [1e3, 2.50]\n}\n",
    ] {
        assert!(text.contains(kept), "lost {kept:?}:\n{text}");
    }
    assert!(text.contains("\"PermissionRequest\": ["), "{text}");
    let text = std::fs::read_to_string(&claude_json).unwrap();
    assert!(
        text.starts_with(
            "{\n  \"numStartups\": 12,\n  \"firstStartTime\": 1.7000000000000000001e12,\n  \
             \"userID\": 98765432109876543210987654321,\n  \"mcpServers\": {\n    \
             \"github\": {\n      \"command\": \"gh-mcp\"\n    },\n    \"askrelay\": {\n      \
             \"type\": \"stdio\",\n"
        ),
        "{text}"
    );

    // Again: nothing changes. Then --remove gives back the very bytes.
    let (code, out, _) = setup(home.path(), proj.path(), &["claude-code"]).await;
    assert_eq!(code, 0);
    assert_eq!(out.matches("already as wanted").count(), 2, "{out}");
    let (code, _, err) = setup(home.path(), proj.path(), &["claude-code", "--remove"]).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(std::fs::read_to_string(&settings_path).unwrap(), settings);
    assert_eq!(std::fs::read_to_string(&claude_json).unwrap(), root);
}

#[tokio::test]
async fn setup_writes_through_a_symlinked_settings_file_and_keeps_the_link() {
    use std::os::unix::fs::symlink;
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let dotfiles = home.path().join("dotfiles");
    std::fs::create_dir_all(&dotfiles).unwrap();
    std::fs::create_dir_all(home.path().join(".claude")).unwrap();
    let target = dotfiles.join("claude-settings.json");
    std::fs::write(&target, "{\"env\": {\"FOO\": \"bar\"}}\n").unwrap();
    let link = home.path().join(".claude/settings.json");
    symlink("../dotfiles/claude-settings.json", &link).unwrap();

    let (code, out, err) = setup(home.path(), proj.path(), &["claude-code", "--no-mcp"]).await;
    assert_eq!(code, 0, "{err}");
    let meta = std::fs::symlink_metadata(&link).unwrap();
    assert!(
        meta.file_type().is_symlink(),
        "the link was replaced by a file"
    );
    assert_eq!(
        std::fs::read_link(&link).unwrap(),
        Path::new("../dotfiles/claude-settings.json")
    );
    let s = read_json(&target);
    assert!(out.contains("a link to"), "{out}");
    assert_eq!(s["env"]["FOO"], "bar");
    assert_eq!(commands(&s, "PermissionRequest").len(), 1, "{s}");

    // A link that leads nowhere is refused, and stays as it is.
    std::fs::remove_file(&link).unwrap();
    symlink("../dotfiles/gone.json", &link).unwrap();
    let (code, _, err) = setup(home.path(), proj.path(), &["claude-code", "--no-mcp"]).await;
    assert_eq!(code, 1);
    assert!(
        err.contains("is a symbolic link that leads to no file") && err.contains("nothing was"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_link(&link).unwrap(),
        Path::new("../dotfiles/gone.json")
    );
    assert!(!dotfiles.join("gone.json").exists());
}

#[tokio::test]
async fn setup_never_follows_a_link_planted_at_a_temporary_name() {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let claude_dir = home.path().join(".claude");
    std::fs::create_dir_all(&claude_dir).unwrap();
    let victim = home.path().join("victim");
    std::fs::write(&victim, "precious\n").unwrap();
    // The shell plants links at the names the old code used (`<file>.askrelay-<pid>`), then
    // becomes askrelay with the same pid (exec).
    let script = format!(
        "ln -s {victim} {dir}/settings.json.askrelay-$$ && ln -s {victim} {home}/.claude.json.askrelay-$$ \
         && exec {bin} setup claude-code",
        victim = victim.display(),
        dir = claude_dir.display(),
        home = home.path().display(),
        bin = BIN
    );
    let out = within(
        "askrelay setup",
        tokio::process::Command::new("sh")
            .args(["-c", &script])
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", home.path())
            .current_dir(proj.path())
            .output(),
    )
    .await
    .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    for written in [
        claude_dir.join("settings.json"),
        home.path().join(".claude.json"),
    ] {
        let meta = std::fs::symlink_metadata(&written).unwrap();
        assert!(meta.is_file(), "{} is not a plain file", written.display());
        read_json(&written);
    }
    assert_eq!(
        commands(
            &read_json(&claude_dir.join("settings.json")),
            "PermissionRequest"
        )
        .len(),
        1
    );
}

#[tokio::test]
async fn codex_setup_fails_closed_unless_told_fail_open() {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let codex = home.path().join(".codex");
    std::fs::create_dir_all(&codex).unwrap();
    let config = "ratio = 1.10\ncount = 1_000\nmask = 0xDEAD_BEEF\ntiny = 6.626e-34\n\
                  [profiles.x]\nlimit = +17\n";
    std::fs::write(codex.join("config.toml"), config).unwrap();
    let hooks = "{\"version\": 1.10, \"hooks\": {}}";
    std::fs::write(codex.join("hooks.json"), hooks).unwrap();

    let (code, out, err) = setup(home.path(), proj.path(), &["codex"]).await;
    assert_eq!(code, 0, "{err}");
    let pre = commands(&read_json(&codex.join("hooks.json")), "PreToolUse");
    assert_eq!(pre.len(), 1, "{pre:?}");
    assert!(
        pre[0].1.starts_with(BIN) && pre[0].1.contains(" hook codex --fail-closed --timeout 590"),
        "{pre:?}"
    );
    let text = std::fs::read_to_string(codex.join("hooks.json")).unwrap();
    assert!(text.starts_with("{\"version\": 1.10, "), "{text}");
    assert!(out.contains("it denies (--fail-closed)"), "{out}");
    // Codex's TOML: numbers as written.
    let text = std::fs::read_to_string(codex.join("config.toml")).unwrap();
    for line in config.lines() {
        assert!(
            text.contains(&format!("{line}\n")),
            "lost {line:?}:\n{text}"
        );
    }

    let (code, out, err) = setup(home.path(), proj.path(), &["codex", "--fail-open"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("Codex's own policy decides (--fail-open)"),
        "{out}"
    );
    let pre = commands(&read_json(&codex.join("hooks.json")), "PreToolUse");
    assert_eq!(pre.len(), 1, "replaced, not added: {pre:?}");
    assert!(ours(&pre[0].1, "codex"), "{pre:?}");
    assert!(!pre[0].1.contains("--fail-closed"), "{pre:?}");

    let (code, _, err) = setup(home.path(), proj.path(), &["codex", "--remove"]).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        std::fs::read_to_string(codex.join("hooks.json")).unwrap(),
        hooks
    );
}

#[tokio::test]
async fn remove_gives_back_files_that_had_no_hooks_and_no_mcp_servers_byte_for_byte() {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join(".claude")).unwrap();
    let settings = home.path().join(".claude/settings.json");
    let claude_json = home.path().join(".claude.json");
    let settings_text = "{\n  \"model\": \"opus\",\n  \"env\": {\"A\": \"1\"}\n}\n";
    let claude_text = "{\n  \"numStartups\": 3,\n  \"theme\": \"dark\"\n}\n";
    std::fs::write(&settings, settings_text).unwrap();
    std::fs::write(&claude_json, claude_text).unwrap();

    let (code, _, err) = setup(home.path(), proj.path(), &["claude-code"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(read_json(&claude_json)["mcpServers"]["askrelay"].is_object());
    // The lifecycle events that withdraw answered questions, as async hooks.
    let written = read_json(&settings);
    for event in [
        "PostToolUse",
        "PostToolUseFailure",
        "UserPromptSubmit",
        "SessionEnd",
    ] {
        let cmds = commands(&written, event);
        assert_eq!(cmds.len(), 1, "{event}: {written}");
        assert!(cmds[0].1.contains(" hook claude-code"), "{cmds:?}");
        assert_eq!(
            written["hooks"][event][0]["hooks"][0]["async"], true,
            "{written}"
        );
    }
    let (code, _, err) = setup(home.path(), proj.path(), &["claude-code", "--remove"]).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), settings_text);
    assert_eq!(std::fs::read_to_string(&claude_json).unwrap(), claude_text);
    // Removing again changes nothing, and adds no empty "hooks" or "mcpServers".
    let (code, _, err) = setup(home.path(), proj.path(), &["claude-code", "--remove"]).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), settings_text);
    assert_eq!(std::fs::read_to_string(&claude_json).unwrap(), claude_text);
}

#[tokio::test]
async fn codex_setup_event_permission_request_moves_the_hook_and_remove_takes_it_out() {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let codex = home.path().join(".codex");
    std::fs::create_dir_all(&codex).unwrap();
    let hooks = "{\"hooks\": {}}";
    std::fs::write(codex.join("hooks.json"), hooks).unwrap();

    let (code, _, err) = setup(home.path(), proj.path(), &["codex"]).await;
    assert_eq!(code, 0, "{err}");
    let args = ["codex", "--event", "permission-request"];
    let (code, out, err) = setup(home.path(), proj.path(), &args).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("askrelay answers PermissionRequest"), "{out}");
    let json = read_json(&codex.join("hooks.json"));
    let asks = commands(&json, "PermissionRequest");
    assert_eq!(asks.len(), 1, "{asks:?}");
    assert!(
        asks[0].1.starts_with(BIN) && asks[0].1.contains(" hook codex --fail-closed"),
        "{asks:?}"
    );
    // Moved, not added: the PreToolUse hook of the first run is gone.
    assert!(commands(&json, "PreToolUse").is_empty(), "{json}");
    // The lifecycle events that withdraw a question Codex no longer waits for: async, once
    // each (a second run replaced them), and never failing closed (they decide nothing).
    for event in ["PostToolUse", "UserPromptSubmit", "SessionEnd"] {
        let cmds = commands(&json, event);
        assert_eq!(cmds.len(), 1, "{event}: {json}");
        assert!(
            cmds[0].1.starts_with(BIN) && cmds[0].1.ends_with(" hook codex --timeout 5"),
            "{cmds:?}"
        );
        let hook = &json["hooks"][event][0]["hooks"][0];
        assert_eq!(hook["async"], true, "{json}");
        assert_eq!(hook["timeout"], 10, "{json}");
    }
    // Codex has no PostToolUseFailure.
    assert!(json["hooks"].get("PostToolUseFailure").is_none(), "{json}");

    let (code, _, err) = setup(home.path(), proj.path(), &["codex", "--remove"]).await;
    assert_eq!(code, 0, "{err}");
    let json = read_json(&codex.join("hooks.json"));
    for event in [
        "PermissionRequest",
        "PostToolUse",
        "UserPromptSubmit",
        "SessionEnd",
    ] {
        assert!(commands(&json, event).is_empty(), "{event}: {json}");
    }
}

/// A `claude` on `PATH` that prints `version` as Claude Code does.
fn fake_claude(dir: &Path, version: &str) {
    use std::os::unix::fs::PermissionsExt;
    let bin = dir.join("claude");
    std::fs::write(&bin, format!("#!/bin/sh\necho '{version} (Claude Code)'\n")).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[tokio::test]
async fn claude_code_fail_closed_needs_a_claude_code_that_knows_on_failure() {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let path = tempfile::tempdir().unwrap();
    let settings_path = home.path().join(".claude/settings.json");
    // The entries that ask people; auto mode's PermissionDenied and one-use-grant check
    // never fail closed (a failure leaves the denial, or Claude Code's own checks).
    let on_failure = |s: &Value| -> Vec<Value> {
        ["PermissionRequest", "PreToolUse"]
            .iter()
            .flat_map(|e| s["hooks"][e].as_array().cloned().unwrap_or_default())
            .flat_map(|g| g["hooks"].as_array().cloned().unwrap_or_default())
            .filter(|h| {
                !h["command"]
                    .as_str()
                    .unwrap_or("")
                    .ends_with("--once-grants-only")
            })
            .map(|h| h["onFailure"].clone())
            .collect()
    };

    // Too old, said or found: refused, nothing written.
    let (code, _, err) = setup_with_path(
        home.path(),
        proj.path(),
        path.path(),
        &[
            "claude-code",
            "--fail-closed",
            "--claude-version",
            "2.1.294",
        ],
    )
    .await;
    assert_eq!(code, 1);
    assert_eq!(
        err.trim(),
        "askrelay setup: Claude Code 2.1.294 does not support onFailure (needs 2.1.295 or \
         newer); upgrade it or leave out --fail-closed; nothing was changed"
    );
    fake_claude(path.path(), "2.1.197");
    let (code, _, err) = setup_with_path(
        home.path(),
        proj.path(),
        path.path(),
        &["claude-code", "--fail-closed"],
    )
    .await;
    assert_eq!(code, 1);
    assert!(
        err.contains("Claude Code 2.1.197 does not support onFailure"),
        "{err}"
    );
    assert!(!settings_path.exists() && !home.path().join(".claude.json").exists());

    // No claude to ask: refused, saying why.
    std::fs::remove_file(path.path().join("claude")).unwrap();
    let (code, _, err) = setup_with_path(
        home.path(),
        proj.path(),
        path.path(),
        &["claude-code", "--fail-closed"],
    )
    .await;
    assert_eq!(code, 1);
    assert!(
        err.contains("cannot tell which Claude Code this is for (cannot run `claude --version`")
            && err.contains("--claude-version"),
        "{err}"
    );
    assert!(!settings_path.exists());

    // New enough: every entry blocks on failure.
    let (code, out, err) = setup_with_path(
        home.path(),
        proj.path(),
        path.path(),
        &[
            "claude-code",
            "--fail-closed",
            "--claude-version",
            "2.1.295",
        ],
    )
    .await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("onFailure: block"), "{out}");
    let s = read_json(&settings_path);
    assert_eq!(on_failure(&s), [json!("block"), json!("block")], "{s}");
    let never: Vec<Value> = ["PermissionDenied", "PreToolUse"]
        .iter()
        .flat_map(|e| s["hooks"][e].as_array().cloned().unwrap_or_default())
        .flat_map(|g| g["hooks"].as_array().cloned().unwrap_or_default())
        .filter(|h| h["onFailure"].is_null())
        .map(|h| h["command"].clone())
        .collect();
    assert_eq!(never.len(), 2, "auto mode's two entries: {s}");
    assert!(std::fs::read_to_string(&settings_path)
        .unwrap()
        .contains("\"onFailure\": \"block\""));
    fake_claude(path.path(), "2.1.332");
    let (code, out, err) = setup_with_path(
        home.path(),
        proj.path(),
        path.path(),
        &["claude-code", "--fail-closed", "--event", "pre-tool-use"],
    )
    .await;
    assert_eq!(code, 0, "{err}{out}");
    assert_eq!(
        on_failure(&read_json(&settings_path)),
        [json!("block"), json!("block")]
    );

    // Without the flag again: the field goes.
    let (code, _, err) = setup(home.path(), proj.path(), &["claude-code"]).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        on_failure(&read_json(&settings_path)),
        [Value::Null, Value::Null]
    );
}

/// The files of a home and a project, by path, with their bytes (`None`: missing).
fn snapshot(paths: &[std::path::PathBuf]) -> Vec<(String, Option<String>)> {
    paths
        .iter()
        .map(|p| (p.display().to_string(), std::fs::read_to_string(p).ok()))
        .collect()
}

/// Every file `setup` may write, for `home` and the project `proj`.
fn every_setup_file(home: &Path, proj: &Path) -> Vec<std::path::PathBuf> {
    vec![
        home.join(".claude/settings.json"),
        home.join(".claude.json"),
        proj.join(".claude/settings.json"),
        proj.join(".claude/settings.local.json"),
        proj.join(".mcp.json"),
        home.join(".codex/hooks.json"),
        home.join(".codex/config.toml"),
        home.join(".copilot/settings.json"),
        home.join(".copilot/mcp-config.json"),
    ]
}

#[tokio::test]
async fn remove_gives_back_every_file_kind_byte_for_byte() {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let (h, p) = (home.path(), proj.path());
    for d in [
        h.join(".claude"),
        p.join(".claude"),
        h.join(".codex"),
        h.join(".copilot"),
    ] {
        std::fs::create_dir_all(d).unwrap();
    }
    // Odd formatting everywhere: four spaces or tabs, no final newline, keys in no order,
    // hooks of the user's own on the very events askrelay uses, written on one line.
    let files = [
        (
            h.join(".claude/settings.json"),
            "{\n    \"zeta\": 1,\n    \"hooks\": {\"PermissionRequest\": [{\"matcher\": \"Bash\", \"hooks\": [{\"type\": \"command\", \"command\": \"audit-me\"}]}]},\n    \"alpha\": [1,2]\n}",
        ),
        (
            h.join(".claude.json"),
            "{\"projects\": {\"/elsewhere\": {\"allowedTools\": []}},\n\t\"numStartups\": 12,\n\t\"mcpServers\": {\"db\": {\"command\": \"db-mcp\"}}}",
        ),
        (
            p.join(".claude/settings.json"),
            "{\n      \"permissions\": { \"allow\": [ \"Bash(npm test)\" ] },\n      \"hooks\": { }\n}\n\n",
        ),
        (
            p.join(".claude/settings.local.json"),
            "{ \"env\" : { \"B\" : \"2\" } , \"hooks\" : { \"PreToolUse\" : [ ] } }",
        ),
        (p.join(".mcp.json"), "{\"mcpServers\":{}}"),
        (
            h.join(".codex/hooks.json"),
            "{\n    \"hooks\": {\"PreToolUse\": [{\"matcher\": \"shell\", \"hooks\": [{\"type\": \"command\", \"command\": \"guard\"}]}]}\n}",
        ),
        (
            h.join(".codex/config.toml"),
            "model   =   \"o3\"   # mine\n\n[features]\nweb_search = true\n\n[mcp_servers.db]\ncommand = \"db-mcp\"",
        ),
        (
            h.join(".copilot/settings.json"),
            "{\"hooks\": {\"preToolUse\": [{\"type\": \"command\", \"bash\": \"guard\"}]},\n  \"theme\": \"dim\"}",
        ),
        (
            h.join(".copilot/mcp-config.json"),
            "{\n\t\"mcpServers\": {\n\t\t\"db\": {\"type\": \"local\", \"command\": \"db-mcp\"}\n\t}\n}",
        ),
    ];
    for (path, text) in &files {
        std::fs::write(path, text).unwrap();
    }
    let before = snapshot(&every_setup_file(h, p));
    let runs: [&[&str]; 5] = [
        &["claude-code"],
        &["claude-code", "--scope", "project"],
        &["claude-code", "--scope", "local", "--event", "pre-tool-use"],
        &["codex"],
        &["copilot", "--stop"],
    ];
    for args in runs {
        let (code, _, err) = setup(h, p, args).await;
        assert_eq!(code, 0, "{args:?}: {err}");
    }
    // Every file was changed.
    for (path, text) in &files {
        assert_ne!(
            &std::fs::read_to_string(path).unwrap(),
            text,
            "{}",
            path.display()
        );
    }
    // A second run with other flags keeps the first original.
    let (code, _, err) = setup(h, p, &["claude-code", "--event", "pre-tool-use"]).await;
    assert_eq!(code, 0, "{err}");
    for args in runs {
        let mut remove = args.to_vec();
        remove.push("--remove");
        let (code, out, err) = setup(h, p, &remove).await;
        assert_eq!(code, 0, "{remove:?}: {err}");
        assert!(out.contains("given back byte for byte"), "{out}");
    }
    assert_eq!(snapshot(&every_setup_file(h, p)), before);
    // The records went with the removal.
    let records = h.join(".local/state/askrelay/setup");
    assert_eq!(std::fs::read_dir(&records).unwrap().count(), 0);
}

#[tokio::test]
async fn remove_deletes_the_files_and_directories_setup_created() {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let (h, p) = (home.path(), proj.path());
    let runs: [&[&str]; 4] = [
        &["claude-code"],
        &["claude-code", "--scope", "project"],
        &["codex"],
        &["copilot"],
    ];
    for args in runs {
        let (code, _, err) = setup(h, p, args).await;
        assert_eq!(code, 0, "{args:?}: {err}");
    }
    let made = every_setup_file(h, p)
        .into_iter()
        .filter(|f| f.exists())
        .count();
    assert_eq!(made, 8, "{:?}", snapshot(&every_setup_file(h, p)));
    // The records are owner-only.
    use std::os::unix::fs::PermissionsExt;
    let records = h.join(".local/state/askrelay/setup");
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&records), 0o700);
    let kept: Vec<_> = std::fs::read_dir(&records)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(kept.len(), 8);
    for r in &kept {
        assert_eq!(mode(r), 0o600, "{}", r.display());
    }
    // A dry run says so and deletes nothing.
    let (code, out, _) = setup(h, p, &["codex", "--remove", "--dry-run"]).await;
    assert_eq!(code, 0);
    assert!(out.contains("+++ /dev/null"), "{out}");
    assert!(h.join(".codex/hooks.json").exists());
    for args in runs {
        let mut remove = args.to_vec();
        remove.push("--remove");
        let (code, out, err) = setup(h, p, &remove).await;
        assert_eq!(code, 0, "{remove:?}: {err}");
        assert!(
            out.contains("deleted: askrelay setup had created it"),
            "{out}"
        );
    }
    // Nothing is left, not even `{}` or the directories setup made for them.
    assert!(
        every_setup_file(h, p).iter().all(|f| !f.exists()),
        "{:?}",
        snapshot(&every_setup_file(h, p))
    );
    for d in [
        h.join(".claude"),
        h.join(".codex"),
        h.join(".copilot"),
        p.join(".claude"),
    ] {
        assert!(!d.exists(), "{}", d.display());
    }
}

#[tokio::test]
async fn remove_keeps_what_the_user_changed_since_setup() {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let (h, p) = (home.path(), proj.path());
    std::fs::create_dir_all(h.join(".claude")).unwrap();
    let settings = h.join(".claude/settings.json");
    let claude_json = h.join(".claude.json");
    let original = "{\n    \"model\": \"opus\"\n}";
    std::fs::write(&settings, original).unwrap();
    let (code, _, err) = setup(h, p, &["claude-code"]).await;
    assert_eq!(code, 0, "{err}");
    // The user adds a key to the settings, and a server to the file setup created.
    let mut edited: Value = read_json(&settings);
    edited["env"] = json!({"MINE": "1"});
    std::fs::write(&settings, serde_json::to_string_pretty(&edited).unwrap()).unwrap();
    let mut theirs: Value = read_json(&claude_json);
    theirs["mcpServers"]["db"] = json!({"command": "db-mcp"});
    std::fs::write(&claude_json, serde_json::to_string(&theirs).unwrap()).unwrap();

    let (code, out, err) = setup(h, p, &["claude-code", "--remove"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains("given back"), "{out}");
    // askrelay's entries are gone; the user's edits stay.
    assert_eq!(
        read_json(&settings),
        json!({"model": "opus", "env": {"MINE": "1"}})
    );
    assert_eq!(
        read_json(&claude_json),
        json!({"mcpServers": {"db": {"command": "db-mcp"}}})
    );
    // And no record is left to give back an old original later.
    let records = h.join(".local/state/askrelay/setup");
    assert_eq!(std::fs::read_dir(&records).unwrap().count(), 0);
    // Set up again on the user's file (no askrelay entries in it): that file is the original.
    let now = std::fs::read_to_string(&settings).unwrap();
    let (code, _, err) = setup(h, p, &["claude-code", "--no-mcp"]).await;
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = setup(h, p, &["claude-code", "--no-mcp", "--remove"]).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), now);
}

/// The hooks of `event` in a settings object: the whole hook entries, with their group's
/// matcher (None when the group has none).
fn entries(settings: &Value, event: &str) -> Vec<(Option<String>, Value)> {
    settings["hooks"][event]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|g| {
            let matcher = g["matcher"].as_str().map(str::to_owned);
            g["hooks"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .map(move |h| (matcher.clone(), h))
        })
        .collect()
}

#[tokio::test]
async fn claude_code_setup_stop_registers_the_stop_hook_with_the_wait_and_a_margin() {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let path = home.path().join(".claude/settings.json");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let theirs =
        json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-me"}]}]}});
    let text = serde_json::to_string_pretty(&theirs).unwrap();
    std::fs::write(&path, &text).unwrap();

    // Without --stop: no Stop hook of askrelay's.
    let (code, _, err) = setup(home.path(), proj.path(), &["claude-code", "--no-mcp"]).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(entries(&read_json(&path), "Stop").len(), 1);

    let args = ["claude-code", "--no-mcp", "--stop", "--stop-wait", "900"];
    let (code, out, err) = setup(home.path(), proj.path(), &args).await;
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("the end of each turn is posted (Stop)"),
        "{out}"
    );
    let s = read_json(&path);
    let stop = entries(&s, "Stop");
    assert_eq!(stop.len(), 2, "theirs and ours: {stop:?}");
    assert_eq!(stop[0].1["command"], "notify-me");
    let (matcher, ours) = &stop[1];
    assert_eq!(matcher, &None, "Stop takes no matcher: {ours}");
    assert_eq!(
        ours["command"],
        format!("{BIN} hook claude-code --timeout 930"),
        "the hook's own timeout is past the wait"
    );
    assert_eq!(ours["timeout"], 960, "the agent's is past the hook's");
    assert!(
        ours.get("async").is_none(),
        "the agent waits for it: {ours}"
    );
    // The other hooks are there as ever.
    assert_eq!(entries(&s, "PermissionRequest").len(), 1);

    // Again: nothing changes.
    let before = std::fs::read_to_string(&path).unwrap();
    let (code, _, err) = setup(home.path(), proj.path(), &args).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), before);

    // A wait outside the routes' bounds is refused, and nothing is written.
    let (code, _, err) = setup(
        home.path(),
        proj.path(),
        &["claude-code", "--no-mcp", "--stop", "--stop-wait", "5"],
    )
    .await;
    assert_ne!(code, 0);
    assert!(err.contains("--stop-wait"), "{err}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), before);

    // --remove: theirs back, byte for byte.
    let (code, _, err) = setup(
        home.path(),
        proj.path(),
        &["claude-code", "--no-mcp", "--remove"],
    )
    .await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
}

#[tokio::test]
async fn codex_setup_stop_registers_the_stop_hook_and_remove_takes_it_out() {
    let home = tempfile::tempdir().unwrap();
    let codex_home = home.path().join("codex");
    let hooks = codex_home.join("hooks.json");
    let base = ["codex", "--no-mcp", "--codex-home"];
    let dir = codex_home.to_str().unwrap();
    let run = |extra: &'static [&'static str]| {
        let mut a: Vec<&str> = base.to_vec();
        a.push(dir);
        a.extend_from_slice(extra);
        a
    };
    let (code, out, err) = setup(home.path(), home.path(), &run(&["--stop"])).await;
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("the end of each turn is posted (Stop)"),
        "{out}"
    );
    let s = read_json(&hooks);
    let stop = entries(&s, "Stop");
    assert_eq!(stop.len(), 1, "{s}");
    assert_eq!(stop[0].0, None);
    assert_eq!(
        stop[0].1["command"],
        format!("{BIN} hook codex --timeout 330"),
        "the default wait (300 s) and no --fail-closed: a Stop never fails closed"
    );
    assert_eq!(stop[0].1["timeout"], 360);
    assert_eq!(entries(&s, "PreToolUse").len(), 1);
    let (code, _, err) = setup(home.path(), home.path(), &run(&["--remove"])).await;
    assert_eq!(code, 0, "{err}");
    // hooks.json was setup's own: --remove takes it away whole.
    assert!(!hooks.exists());
}
