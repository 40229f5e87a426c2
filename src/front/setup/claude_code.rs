//! `askrelay setup claude-code`: askrelay's hooks in the settings file of the chosen scope, and
//! its MCP server where `claude mcp add --scope …` puts it.

use super::*;

/// The Claude Code events whose hook withdraws questions the agent no longer waits for.
const WITHDRAWING_EVENTS: [&str; 4] = [
    "PostToolUse",
    "PostToolUseFailure",
    "UserPromptSubmit",
    "SessionEnd",
];

/// The Claude Code the settings are for: `--claude-version`, else what `claude --version`
/// prints first.
fn claude_version(a: &ClaudeCodeSetup) -> Result<ClaudeVersion, String> {
    if let Some(v) = a.claude_version {
        return Ok(v);
    }
    let unknown = |why: String| {
        format!(
            "cannot tell which Claude Code this is for ({why}); give it with --claude-version \
             X.Y.Z, or leave out --fail-closed; nothing was changed"
        )
    };
    let out = std::process::Command::new("claude")
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| unknown(format!("cannot run `claude --version`: {e}")))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let first = text.split_whitespace().next().unwrap_or("");
    if !out.status.success() {
        return Err(unknown(format!(
            "`claude --version` failed: {}",
            out.status
        )));
    }
    first
        .parse()
        .map_err(|e| unknown(format!("`claude --version` printed {first:?}: {e}")))
}

pub(super) fn claude_code(a: &ClaudeCodeSetup) -> Result<(), String> {
    let changes = claude_code_changes(a, a.common.remove)?;
    let removal = match a.common.remove {
        true => None,
        false => Some(claude_code_changes(a, true)?),
    };
    apply(changes, removal, &a.common, &Records::new())
}

/// The changes of `setup claude-code` (with `remove`: of `--remove`), not yet written.
fn claude_code_changes(a: &ClaudeCodeSetup, remove: bool) -> Result<Vec<Change>, String> {
    let home = home()?;
    let cwd =
        std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"))?;
    // Checked before anything is written: an `onFailure` that the installed Claude Code does
    // not know would be ignored, and the user would believe the hook fails closed.
    let fail_closed = a.fail_closed && !remove;
    if fail_closed {
        let v = claude_version(a)?;
        if v < ClaudeVersion::ON_FAILURE {
            return Err(format!(
                "Claude Code {v} does not support onFailure (needs {} or newer); upgrade it \
                 or leave out --fail-closed; nothing was changed",
                ClaudeVersion::ON_FAILURE
            ));
        }
    }
    let program = program(&a.common);
    let hook_timeout = a.common.timeout.max(20);
    let command = format!(
        "{} hook claude-code --timeout {}",
        shell_word(&program),
        hook_timeout - 10
    );
    let mut hook = json!({"type": "command", "command": command, "timeout": hook_timeout});
    if fail_closed {
        hook["onFailure"] = json!("block");
    }
    let settings_path = match a.scope {
        Scope::User => home.join(".claude/settings.json"),
        Scope::Project => cwd.join(".claude/settings.json"),
        Scope::Local => cwd.join(".claude/settings.local.json"),
    };
    let file = JsonFile::read(&settings_path)?;
    let settings = file.object();
    let had_key = settings.get("hooks").is_some();
    let hooks = hooks_of(&settings).map_err(|e| format!("{}: {e}", settings_path.display()))?;
    let had_hooks = !hooks.properties().is_empty();
    remove_our_hooks(&hooks);
    // A "hooks" that only askrelay's removal left empty goes too, as does one made here.
    let emptied = had_hooks && hooks.properties().is_empty();
    if !remove {
        match a.event {
            Event::PermissionRequest => add_hook(&hooks, "PermissionRequest", "*", &hook),
            Event::PreToolUse => add_hook(&hooks, "PreToolUse", &a.matcher, &hook),
        }
        add_hook(&hooks, "PreToolUse", "AskUserQuestion", &hook);
        // Auto mode (docs/approvals.md, "Auto mode"): a call its classifier denies is asked
        // about on PermissionDenied, and the retried call, allowed once, passes PreToolUse on
        // its one-use grant. That PreToolUse hook decides nothing else, so it never fails
        // closed: without it, Claude Code's own checks run.
        let mut denied = hook.clone();
        if let Some(o) = denied.as_object_mut() {
            o.remove("onFailure");
        }
        add_hook(&hooks, "PermissionDenied", "*", &denied);
        let grants = json!({"type": "command", "command": format!(
            "{} hook claude-code --once-grants-only", shell_word(&program)
        ), "timeout": 10});
        add_hook(&hooks, "PreToolUse", "*", &grants);
        // The lifecycle events that withdraw a question the agent no longer waits for
        // (docs/approvals.md, "Withdrawn when answered elsewhere"): async, so they never hold
        // the agent up.
        let lifecycle = json!({"type": "command", "command": format!(
            "{} hook claude-code --timeout 5", shell_word(&program)
        ), "timeout": 10, "async": true});
        for event in WITHDRAWING_EVENTS {
            add_hook(&hooks, event, "", &lifecycle);
        }
        if let Some(stop) = a.common.stop_hook(&program, "claude-code") {
            add_unmatched_hook(&hooks, "Stop", &stop);
        }
    }
    if hooks.properties().is_empty() && (emptied || !had_key || !file.had_content()) {
        if let Some(p) = settings.get("hooks") {
            p.remove();
        }
    }
    let mut what = if remove {
        "askrelay's hooks taken out".to_owned()
    } else {
        match a.event {
            Event::PermissionRequest => "askrelay answers PermissionRequest (every tool), \
                 AskUserQuestion and auto mode's PermissionDenied"
                .to_owned(),
            Event::PreToolUse => format!(
                "askrelay answers PreToolUse ({}), AskUserQuestion and auto mode's \
                 PermissionDenied",
                a.matcher
            ),
        }
    };
    if fail_closed {
        what.push_str("; Claude Code blocks the call if the hook fails (onFailure: block)");
    }
    if a.common.stop && !remove {
        what.push_str("; the end of each turn is posted (Stop)");
    }
    let mut changes = vec![file.change(what)];
    if !a.common.no_mcp {
        changes.push(claude_mcp(a, remove, &home, &cwd, &program)?);
    }
    Ok(changes)
}

/// The MCP server entry, where `claude mcp add --scope …` keeps it.
fn claude_mcp(
    a: &ClaudeCodeSetup,
    remove: bool,
    home: &Path,
    cwd: &Path,
    program: &str,
) -> Result<Change, String> {
    let path = match a.scope {
        Scope::Project => cwd.join(".mcp.json"),
        Scope::User | Scope::Local => home.join(".claude.json"),
    };
    let file = JsonFile::read(&path)?;
    let root = file.object();
    let not_object = |what: &str| {
        format!(
            "{}: {what} is not an object; nothing was changed",
            path.display()
        )
    };
    let project = cwd.display().to_string();
    let what = if remove {
        // Only askrelay's entry, and the "mcpServers" it leaves empty: a file that had no
        // such key gets none back (and no "projects" entry is made for it).
        let holder = match a.scope {
            Scope::Project | Scope::User => Some(root),
            Scope::Local => root
                .object_value("projects")
                .and_then(|p| p.object_value(&project)),
        };
        if let Some(holder) = holder {
            if let Some(servers) = holder.object_value("mcpServers") {
                if let Some(p) = servers.get("askrelay") {
                    p.remove();
                    if servers.properties().is_empty() {
                        if let Some(key) = holder.get("mcpServers") {
                            key.remove();
                        }
                    }
                }
            }
        }
        "the askrelay MCP server taken out".to_owned()
    } else {
        let holder = match a.scope {
            Scope::Project | Scope::User => root,
            Scope::Local => root
                .object_value_or_create("projects")
                .ok_or_else(|| not_object("\"projects\""))?
                .object_value_or_create(&project)
                .ok_or_else(|| not_object("this project's entry"))?,
        };
        let servers = holder
            .object_value_or_create("mcpServers")
            .ok_or_else(|| not_object("\"mcpServers\""))?;
        let server =
            cst_value(&json!({"type": "stdio", "command": program, "args": ["mcp"], "env": {}}));
        match servers.get("askrelay") {
            Some(p) => p.set_value(server),
            None => {
                servers.append("askrelay", server);
            }
        }
        "the askrelay MCP server (`askrelay mcp`)".to_owned()
    };
    Ok(file.change(what))
}
