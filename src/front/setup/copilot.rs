//! `askrelay setup copilot`: askrelay's hooks in the GitHub Copilot CLI's user settings
//! (`$COPILOT_HOME/settings.json`, `~/.copilot/`) and its MCP server in `mcp-config.json` beside
//! them.
//!
//! Copilot's hooks are flat lists per event (`{"type":"command","bash":CMD,"timeoutSec":N}`,
//! no matcher groups); askrelay's are told apart by their `bash` command, as for the other
//! agents.

use super::{
    apply, cst_value, home, is_ours, program, shell_word, Change, Common, Event, JsonFile, Records,
};
use clap::Args;
use jsonc_parser::cst::CstObject;
use serde_json::json;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct CopilotSetup {
    /// Copilot's home (default: $COPILOT_HOME, else ~/.copilot).
    #[arg(long, value_name = "DIR")]
    pub copilot_home: Option<PathBuf>,
    /// Which Copilot event asks people: permission-request (only when Copilot would ask) or
    /// pre-tool-use (before every tool call).
    #[arg(long, value_enum, default_value_t = Event::PermissionRequest)]
    pub event: Event,
    /// Deny when askrelay cannot get an answer (the daemon is down, a timeout), instead of
    /// leaving the call to Copilot's own approval.
    #[arg(long)]
    pub fail_closed: bool,
    /// (`--stop`, shared with the other agents: also answer agentStop; on a route with
    /// `stop_replies`, the agent's last message is posted and a reply keeps it working,
    /// docs/approvals.md, "Replies at the end of a turn". Its hook waits `--stop-wait` plus a
    /// margin.)
    #[command(flatten)]
    pub common: Common,
}

/// The Copilot events whose hook withdraws the questions the agent no longer waits for.
const WITHDRAWING_EVENTS: [(&str, &str); 3] = [
    ("postToolUse", "post-tool-use"),
    ("userPromptSubmitted", "user-prompt-submitted"),
    ("sessionEnd", "session-end"),
];

/// Takes askrelay's entries out of Copilot's `hooks` object, and every event list left empty
/// by that alone.
fn remove_our_hooks(hooks: &CstObject) {
    for event in hooks.properties() {
        let Some(list) = event.array_value() else {
            continue;
        };
        let entries = list.elements();
        let before = entries.len();
        let mut removed = 0;
        for h in entries {
            let command = h
                .as_object()
                .and_then(|o| o.get("bash"))
                .and_then(|p| p.value())
                .and_then(|v| v.as_string_lit())
                .and_then(|s| s.decoded_value().ok());
            if command.is_some_and(|c| is_ours(&c)) {
                h.remove();
                removed += 1;
            }
        }
        if removed > 0 && removed == before {
            event.remove();
        }
    }
}

pub(super) fn copilot(a: &CopilotSetup) -> Result<(), String> {
    let changes = copilot_changes(a, a.common.remove)?;
    let removal = match a.common.remove {
        true => None,
        false => Some(copilot_changes(a, true)?),
    };
    apply(changes, removal, &a.common, &Records::new())
}

/// The changes of `setup copilot` (with `remove`: of `--remove`), not yet written.
fn copilot_changes(a: &CopilotSetup, remove: bool) -> Result<Vec<Change>, String> {
    let copilot_home = match &a.copilot_home {
        Some(d) => d.clone(),
        None => match std::env::var_os("COPILOT_HOME").filter(|h| !h.is_empty()) {
            Some(h) => PathBuf::from(h),
            None => home()?.join(".copilot"),
        },
    };
    let program = program(&a.common);
    let hook_timeout = a.common.timeout.max(20);
    let (event, flag) = match a.event {
        Event::PermissionRequest => ("permissionRequest", "permission-request"),
        Event::PreToolUse => ("preToolUse", "pre-tool-use"),
    };
    let command = format!(
        "{} hook copilot --event {flag}{} --timeout {}",
        shell_word(&program),
        if a.fail_closed { " --fail-closed" } else { "" },
        hook_timeout - 10
    );
    // settings.json
    let path = copilot_home.join("settings.json");
    let file = JsonFile::read(&path)?;
    let settings = file.object();
    let had_key = settings.get("hooks").is_some();
    let hooks = settings.object_value_or_create("hooks").ok_or_else(|| {
        format!(
            "{}: its \"hooks\" is not an object; nothing was changed",
            path.display()
        )
    })?;
    let had_hooks = !hooks.properties().is_empty();
    remove_our_hooks(&hooks);
    let emptied = had_hooks && hooks.properties().is_empty();
    if !remove {
        hooks
            .array_value_or_set(event)
            .append(cst_value(&json!({"type": "command", "bash": command,
                "timeoutSec": hook_timeout})));
        if a.common.stop {
            let command = format!(
                "{} hook copilot --event agent-stop --timeout {}",
                shell_word(&program),
                a.common.stop_wait + super::STOP_MARGIN_SECS / 2
            );
            hooks
                .array_value_or_set("agentStop")
                .append(cst_value(&json!({"type": "command", "bash": command,
                    "timeoutSec": a.common.stop_wait + super::STOP_MARGIN_SECS})));
        }
        for (event, flag) in WITHDRAWING_EVENTS {
            let command = format!(
                "{} hook copilot --event {flag} --timeout 5",
                shell_word(&program)
            );
            hooks
                .array_value_or_set(event)
                .append(cst_value(&json!({"type": "command", "bash": command,
                    "timeoutSec": 10})));
        }
    }
    if hooks.properties().is_empty() && (emptied || !had_key || !file.had_content()) {
        if let Some(p) = settings.get("hooks") {
            p.remove();
        }
    }
    let mut what = if remove {
        "askrelay's hooks taken out".to_owned()
    } else if a.fail_closed {
        format!("askrelay answers {event}; without an answer it denies (--fail-closed)")
    } else {
        format!("askrelay answers {event}; without an answer Copilot's own approval decides")
    };
    if a.common.stop && !remove {
        what.push_str("; agentStop asks for a reply (--stop)");
    }
    // --remove never makes a file that was not there.
    let mut changes = Vec::new();
    if file.old.is_some() || !remove {
        changes.push(file.change(what));
    }
    // mcp-config.json, as `copilot mcp add askrelay -- askrelay mcp` writes it.
    if !a.common.no_mcp || remove {
        let path = copilot_home.join("mcp-config.json");
        let file = JsonFile::read(&path)?;
        let root = file.object();
        let what = if remove {
            if let Some(servers) = root.object_value("mcpServers") {
                if let Some(p) = servers.get("askrelay") {
                    p.remove();
                    if servers.properties().is_empty() {
                        if let Some(key) = root.get("mcpServers") {
                            key.remove();
                        }
                    }
                }
            }
            "the askrelay MCP server taken out".to_owned()
        } else {
            let servers = root.object_value_or_create("mcpServers").ok_or_else(|| {
                format!(
                    "{}: \"mcpServers\" is not an object; nothing was changed",
                    path.display()
                )
            })?;
            let server = cst_value(&json!({"type": "local", "command": program,
                "args": ["mcp"], "tools": ["*"]}));
            match servers.get("askrelay") {
                Some(p) => p.set_value(server),
                None => {
                    servers.append("askrelay", server);
                }
            }
            "the askrelay MCP server (`askrelay mcp`)".to_owned()
        };
        if file.old.is_some() || !remove {
            changes.push(file.change(what));
        }
    }
    Ok(changes)
}
