//! `askrelay setup codex`: askrelay's hook in `$CODEX_HOME/hooks.json` (`~/.codex/`), and
//! `[features] hooks = true` with `[mcp_servers.askrelay]` in `config.toml`, edited with
//! `toml_edit`, which keeps comments and formatting.

use super::*;

#[derive(Debug, Args)]
pub struct CodexSetup {
    /// Codex's home (default: $CODEX_HOME, else ~/.codex).
    #[arg(long, value_name = "DIR")]
    pub codex_home: Option<PathBuf>,
    /// Write the hook without --fail-closed: when askrelay cannot get an answer (the daemon is
    /// stopped, another user's socket, a timeout), Codex's own approval policy decides, which
    /// can run the command unasked. A risk; see docs/approvals.md.
    #[arg(long)]
    pub fail_open: bool,
    /// Which Codex event asks people: pre-tool-use (before every tool call, also with
    /// `codex exec`) or permission-request (only when Codex's approval policy would ask, in
    /// its interactive UI).
    #[arg(long, value_enum, default_value_t = Event::PreToolUse)]
    pub event: Event,
    #[command(flatten)]
    pub common: Common,
}

/// Codex's: it has no PostToolUseFailure (0.171.0 fires PostToolUse for a command that
/// failed too).
const CODEX_WITHDRAWING_EVENTS: [&str; 3] = ["PostToolUse", "UserPromptSubmit", "SessionEnd"];

pub(super) fn codex(a: &CodexSetup) -> Result<(), String> {
    let changes = codex_changes(a, a.common.remove)?;
    let removal = match a.common.remove {
        true => None,
        false => Some(codex_changes(a, true)?),
    };
    apply(changes, removal, &a.common, &Records::new())
}

/// The changes of `setup codex` (with `remove`: of `--remove`), not yet written.
fn codex_changes(a: &CodexSetup, remove: bool) -> Result<Vec<Change>, String> {
    let codex_home = match &a.codex_home {
        Some(d) => d.clone(),
        None => match std::env::var_os("CODEX_HOME").filter(|h| !h.is_empty()) {
            Some(h) => PathBuf::from(h),
            None => home()?.join(".codex"),
        },
    };
    let program = program(&a.common);
    let hook_timeout = a.common.timeout.max(20);
    // Fail closed: without an answer (a stopped daemon, a socket planted by another user, a
    // timeout) the hook denies; without the flag it prints nothing and Codex may run the call.
    let command = format!(
        "{} hook codex{} --timeout {}",
        shell_word(&program),
        if a.fail_open { "" } else { " --fail-closed" },
        hook_timeout - 10
    );
    // hooks.json
    let hooks_path = codex_home.join("hooks.json");
    let file = JsonFile::read(&hooks_path)?;
    let root = file.object();
    let had_key = root.get("hooks").is_some();
    let hooks = hooks_of(&root).map_err(|e| format!("{}: {e}", hooks_path.display()))?;
    let had_hooks = !hooks.properties().is_empty();
    remove_our_hooks(&hooks);
    // As for Claude Code: a "hooks" that only askrelay's removal left empty goes too.
    let emptied = had_hooks && hooks.properties().is_empty();
    if !remove {
        let hook = json!({"type": "command", "command": command, "timeout": hook_timeout});
        match a.event {
            Event::PreToolUse => add_hook(&hooks, "PreToolUse", ".*", &hook),
            Event::PermissionRequest => add_hook(&hooks, "PermissionRequest", ".*", &hook),
        }
        // The lifecycle events that withdraw a question Codex no longer waits for (it ran the
        // call, or went on to another prompt, or ended): async (0.171.0 runs `"async": true`
        // hooks without waiting), and never --fail-closed, since they decide nothing.
        let lifecycle = json!({"type": "command", "command": format!(
            "{} hook codex --timeout 5", shell_word(&program)
        ), "timeout": 10, "async": true});
        for event in CODEX_WITHDRAWING_EVENTS {
            add_hook(&hooks, event, "", &lifecycle);
        }
        // A Stop never fails closed: without an answer the turn ends.
        if let Some(stop) = a.common.stop_hook(&program, "codex") {
            add_unmatched_hook(&hooks, "Stop", &stop);
        }
    }
    if hooks.properties().is_empty() && (emptied || !had_key || !file.had_content()) {
        if let Some(p) = root.get("hooks") {
            p.remove();
        }
    }
    let answers = match a.event {
        Event::PreToolUse => "askrelay answers PreToolUse (every tool)",
        Event::PermissionRequest => {
            "askrelay answers PermissionRequest (when Codex would ask; no \"always allow\")"
        }
    };
    let stop = if a.common.stop && !remove {
        "; the end of each turn is posted (Stop)"
    } else {
        ""
    };
    let hooks_change = file.change(if remove {
        "askrelay's hook taken out".to_owned()
    } else if a.fail_open {
        format!("{answers}; without an answer Codex's own policy decides (--fail-open){stop}")
    } else {
        format!("{answers}; without an answer it denies (--fail-closed){stop}")
    });
    // config.toml
    let config_path = codex_home.join("config.toml");
    let old = match std::fs::read_to_string(&config_path) {
        Ok(t) => Some(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            return Err(format!(
                "cannot read {}: {e}; nothing was changed",
                config_path.display()
            ))
        }
    };
    let mut doc: toml_edit::DocumentMut = old.as_deref().unwrap_or("").parse().map_err(|e| {
        format!(
            "cannot parse {} as TOML ({e}); fix it or move it away, nothing was changed",
            config_path.display()
        )
    })?;
    // Only a file askrelay's removal changed is written again (toml_edit would add a final
    // newline to one it did not).
    let mut unchanged = false;
    let what = if remove {
        unchanged = doc
            .get_mut("mcp_servers")
            .and_then(|s| s.as_table_like_mut())
            .and_then(|servers| servers.remove("askrelay"))
            .is_none();
        "the askrelay MCP server taken out ([features] hooks is left as it is)".to_owned()
    } else {
        let features = doc
            .entry("features")
            .or_insert_with(|| toml_edit::Item::Table(toml_edit::Table::new()))
            .as_table_like_mut()
            .ok_or_else(|| {
                format!(
                    "{}: [features] is not a table; nothing was changed",
                    config_path.display()
                )
            })?;
        features.insert("hooks", toml_edit::value(true));
        if !a.common.no_mcp {
            let servers = doc
                .entry("mcp_servers")
                .or_insert_with(|| {
                    let mut t = toml_edit::Table::new();
                    t.set_implicit(true);
                    toml_edit::Item::Table(t)
                })
                .as_table_like_mut()
                .ok_or_else(|| {
                    format!(
                        "{}: [mcp_servers] is not a table; nothing was changed",
                        config_path.display()
                    )
                })?;
            let mut server = toml_edit::Table::new();
            server.insert("command", toml_edit::value(program.clone()));
            let mut args = toml_edit::Array::new();
            args.push("mcp");
            server.insert("args", toml_edit::value(args));
            // Codex hands servers only a few variables; these find the socket.
            let mut vars = toml_edit::Array::new();
            vars.push("XDG_RUNTIME_DIR");
            vars.push("ASKRELAY_SOCKET_PATH");
            vars.push("ASKRELAY_DAEMON_UID");
            server.insert("env_vars", toml_edit::value(vars));
            // People take longer than Codex's 60 s default.
            server.insert("tool_timeout_sec", toml_edit::value(86400));
            servers.insert("askrelay", toml_edit::Item::Table(server));
        }
        "[features] hooks = true and the askrelay MCP server".to_owned()
    };
    let config_change = Change {
        path: config_path,
        new: match unchanged {
            true => old.clone(),
            false => Some(doc.to_string()),
        },
        old,
        what,
    };
    Ok(vec![hooks_change, config_change])
}
