//! `askrelay setup claude-code` and `askrelay setup codex`: write askrelay's hook (and its MCP
//! server) into an agent's own settings files, keeping everything else in them.
//!
//! - Claude Code: the hook goes into the settings file of the chosen scope (`user`:
//!   `~/.claude/settings.json`; `project`: `.claude/settings.json`; `local`:
//!   `.claude/settings.local.json`), on the `PermissionRequest` event for every tool (or, with
//!   `--event pre-tool-use`, on `PreToolUse` for the tools that change things), and on
//!   `PreToolUse` for Claude Code's own `AskUserQuestion`. The MCP server goes where
//!   `claude mcp add --scope …` puts it (`~/.claude.json`, or `.mcp.json` for `project`).
//! - Codex: the hook goes into `$CODEX_HOME/hooks.json` (`~/.codex/`), and `config.toml` gets
//!   `[features] hooks = true` and `[mcp_servers.askrelay]`, edited with `toml_edit`, which
//!   keeps comments and formatting.
//!
//! askrelay's entries are told apart by their command (the askrelay program followed by `hook`)
//! and by the MCP server's name, `askrelay`: a second run replaces them (so it changes nothing
//! when nothing changed), and `--remove` takes out only them. A file that does not parse is
//! refused, with the reason, and left as it is. `--dry-run` prints each change as a diff.

use clap::{Args, Subcommand, ValueEnum};
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};

pub const SETUP_EXAMPLES: &str = "\
Examples:
  askrelay setup claude-code                       # you, every project: ~/.claude/settings.json
  askrelay setup claude-code --scope project       # everyone on this project: .claude/settings.json
  askrelay setup claude-code --event pre-tool-use  # always ask about Bash, Edit and Write
  askrelay setup claude-code --dry-run             # show the change, write nothing
  askrelay setup claude-code --remove              # take askrelay out again
  askrelay setup codex                             # ~/.codex/hooks.json and config.toml
It changes only askrelay's own entries; running it twice changes nothing the second time.";

#[derive(Debug, Args)]
pub struct SetupArgs {
    #[command(subcommand)]
    pub agent: SetupAgent,
}

#[derive(Debug, Subcommand)]
pub enum SetupAgent {
    /// Claude Code: the askrelay hook (PermissionRequest, or PreToolUse) and MCP server.
    #[command(after_help = SETUP_EXAMPLES)]
    ClaudeCode(ClaudeCodeSetup),
    /// Codex: the askrelay hook (hooks.json) and MCP server (config.toml).
    #[command(after_help = SETUP_EXAMPLES)]
    Codex(CodexSetup),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Scope {
    /// You, in every project (~/.claude/settings.json, ~/.claude.json).
    User,
    /// Everyone who works on this project (.claude/settings.json, .mcp.json); commit them.
    Project,
    /// You, in this project only (.claude/settings.local.json, ~/.claude.json).
    Local,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Event {
    /// Only when Claude Code would ask you itself (recommended).
    PermissionRequest,
    /// Before every matching tool call, even ones Claude Code would run without asking.
    PreToolUse,
}

#[derive(Debug, Args)]
pub struct Common {
    /// Show what would change, as a diff, and write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Take askrelay's entries out instead.
    #[arg(long)]
    pub remove: bool,
    /// Leave the MCP server (`askrelay mcp`) out.
    #[arg(long)]
    pub no_mcp: bool,
    /// The askrelay program the agent runs (default: this one, by its full path).
    #[arg(long, value_name = "PATH")]
    pub program: Option<PathBuf>,
    /// Seconds the agent lets the hook run; askrelay's own --timeout is 10 s less.
    #[arg(long, default_value_t = 600, value_name = "SECS")]
    pub timeout: u64,
}

#[derive(Debug, Args)]
pub struct ClaudeCodeSetup {
    /// Whose settings: yours everywhere, the project's (shared), or yours in this project.
    #[arg(long, value_enum, default_value_t = Scope::User)]
    pub scope: Scope,
    /// Which event asks people about tool calls.
    #[arg(long, value_enum, default_value_t = Event::PermissionRequest)]
    pub event: Event,
    /// The tools to ask about with --event pre-tool-use (a Claude Code matcher).
    #[arg(long, default_value = "Bash|Edit|MultiEdit|Write|NotebookEdit")]
    pub matcher: String,
    #[command(flatten)]
    pub common: Common,
}

#[derive(Debug, Args)]
pub struct CodexSetup {
    /// Codex's home (default: $CODEX_HOME, else ~/.codex).
    #[arg(long, value_name = "DIR")]
    pub codex_home: Option<PathBuf>,
    #[command(flatten)]
    pub common: Common,
}

/// Runs `askrelay setup …`; the exit code.
pub fn run(args: SetupArgs) -> i32 {
    let result = match args.agent {
        SetupAgent::ClaudeCode(a) => claude_code(&a),
        SetupAgent::Codex(a) => codex(&a),
    };
    match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("askrelay setup: {e}");
            1
        }
    }
}

/// A file's new content, when it changes.
struct Change {
    path: PathBuf,
    old: Option<String>,
    new: String,
    what: String,
}

impl Change {
    /// Writes it (or, for a dry run, prints its diff), and says what was done.
    fn apply(&self, dry_run: bool) -> Result<(), String> {
        let old = self.old.as_deref().unwrap_or("");
        if self.old.as_deref() == Some(self.new.as_str()) {
            crate::outln!("{}: already as wanted ({})", self.path.display(), self.what);
            return Ok(());
        }
        if dry_run {
            let from = if self.old.is_some() {
                self.path.display().to_string()
            } else {
                "/dev/null".to_owned()
            };
            let diff = similar::TextDiff::from_lines(old, &self.new);
            print!(
                "{}",
                diff.unified_diff()
                    .context_radius(3)
                    .header(&from, &self.path.display().to_string())
            );
            crate::outln!(
                "(dry run: {} not written; {})",
                self.path.display(),
                self.what
            );
            return Ok(());
        }
        write_atomically(&self.path, &self.new)?;
        crate::outln!("{}: {}", self.path.display(), self.what);
        Ok(())
    }
}

/// Writes `content` to `path` through a temporary file beside it and a rename, keeping the
/// file's permissions (a new file: owner-only for what is under the home directory).
fn write_atomically(path: &Path, content: &str) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    if let Some(d) = dir {
        std::fs::create_dir_all(d).map_err(|e| format!("cannot create {}: {e}", d.display()))?;
    }
    let mode = std::fs::metadata(path)
        .map(|m| m.permissions().mode() & 0o7777)
        .unwrap_or(0o600);
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".askrelay-{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, content).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    let _ = std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(mode));
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("cannot replace {}: {e}", path.display())
    })
}

fn home() -> Result<PathBuf, String> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .ok_or_else(|| "HOME is not set".to_owned())
}

/// The askrelay program the agent should run, by its full path when it can be told.
fn program(common: &Common) -> String {
    common
        .program
        .clone()
        .or_else(|| std::env::current_exe().ok())
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "askrelay".to_owned())
}

/// Quotes a word for a POSIX shell when it needs it (the agents run hook commands with one).
fn shell_word(w: &str) -> String {
    shell_words::quote(w).into_owned()
}

/// Whether a hook command is askrelay's: a program named askrelay, then `hook`.
fn is_ours(command: &str) -> bool {
    let Ok(words) = shell_words::split(command) else {
        return false;
    };
    let name = words
        .first()
        .and_then(|p| Path::new(p).file_name())
        .and_then(|n| n.to_str())
        .unwrap_or("");
    name == "askrelay" && words.get(1).map(String::as_str) == Some("hook")
}

/// Reads a JSON object file (missing: empty), refusing what does not parse or is not an object.
fn read_json(path: &Path) -> Result<(Option<String>, Map<String, Value>), String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((None, Map::new())),
        Err(e) => {
            return Err(format!(
                "cannot read {}: {e}; nothing was changed",
                path.display()
            ))
        }
    };
    if text.trim().is_empty() {
        return Ok((Some(text), Map::new()));
    }
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(o)) => Ok((Some(text), o)),
        Ok(_) => Err(format!(
            "{} is not a JSON object; nothing was changed",
            path.display()
        )),
        Err(e) => Err(format!(
            "cannot parse {} as JSON ({e}); fix it or move it away, nothing was changed",
            path.display()
        )),
    }
}

fn to_json_text(o: &Map<String, Value>) -> String {
    let mut s = serde_json::to_string_pretty(o).unwrap_or_default();
    s.push('\n');
    s
}

/// Takes askrelay's hook entries out of `hooks` (an agent's `hooks` object): every hook whose
/// command is ours, and then every matcher group and event left empty by that alone.
fn remove_our_hooks(hooks: &mut Map<String, Value>) {
    let events: Vec<String> = hooks.keys().cloned().collect();
    for event in events {
        let Some(Value::Array(groups)) = hooks.get_mut(&event) else {
            continue;
        };
        let mut changed = false;
        groups.retain_mut(|g| {
            let Some(Value::Array(list)) = g.get_mut("hooks") else {
                return true;
            };
            let before = list.len();
            list.retain(|h| !h["command"].as_str().is_some_and(is_ours));
            changed |= list.len() != before;
            !(list.is_empty() && before > 0)
        });
        if changed && groups.is_empty() {
            hooks.shift_remove(&event);
        }
    }
}

/// Adds a matcher group with askrelay's hook to `event`.
fn add_hook(
    hooks: &mut Map<String, Value>,
    event: &str,
    matcher: &str,
    command: &str,
    timeout: u64,
) {
    let groups = hooks
        .entry(event.to_owned())
        .or_insert_with(|| Value::Array(Vec::new()));
    if !groups.is_array() {
        *groups = Value::Array(Vec::new());
    }
    groups.as_array_mut().unwrap().push(json!({
        "matcher": matcher,
        "hooks": [{"type": "command", "command": command, "timeout": timeout}],
    }));
}

/// The `hooks` object of a settings object, created when missing.
fn hooks_of(settings: &mut Map<String, Value>) -> Result<&mut Map<String, Value>, String> {
    let hooks = settings
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()));
    hooks
        .as_object_mut()
        .ok_or_else(|| "its \"hooks\" is not an object; nothing was changed".to_owned())
}

fn claude_code(a: &ClaudeCodeSetup) -> Result<(), String> {
    let home = home()?;
    let cwd =
        std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"))?;
    let program = program(&a.common);
    let hook_timeout = a.common.timeout.max(20);
    let command = format!(
        "{} hook claude-code --timeout {}",
        shell_word(&program),
        hook_timeout - 10
    );
    let settings_path = match a.scope {
        Scope::User => home.join(".claude/settings.json"),
        Scope::Project => cwd.join(".claude/settings.json"),
        Scope::Local => cwd.join(".claude/settings.local.json"),
    };
    let (old, mut settings) = read_json(&settings_path)?;
    {
        let hooks =
            hooks_of(&mut settings).map_err(|e| format!("{}: {e}", settings_path.display()))?;
        remove_our_hooks(hooks);
        if !a.common.remove {
            match a.event {
                Event::PermissionRequest => {
                    add_hook(hooks, "PermissionRequest", "*", &command, hook_timeout)
                }
                Event::PreToolUse => {
                    add_hook(hooks, "PreToolUse", &a.matcher, &command, hook_timeout)
                }
            }
            add_hook(
                hooks,
                "PreToolUse",
                "AskUserQuestion",
                &command,
                hook_timeout,
            );
        }
    }
    if settings
        .get("hooks")
        .is_some_and(|h| h.as_object().is_some_and(Map::is_empty))
        && old.is_none()
    {
        settings.shift_remove("hooks");
    }
    let what = if a.common.remove {
        "askrelay's hooks taken out".to_owned()
    } else {
        match a.event {
            Event::PermissionRequest => {
                "askrelay answers PermissionRequest (every tool) and AskUserQuestion".to_owned()
            }
            Event::PreToolUse => format!(
                "askrelay answers PreToolUse ({}) and AskUserQuestion",
                a.matcher
            ),
        }
    };
    let mut changes = vec![Change {
        path: settings_path,
        new: to_json_text(&settings),
        old,
        what,
    }];
    if !a.common.no_mcp {
        changes.push(claude_mcp(a, &home, &cwd, &program)?);
    }
    for c in &changes {
        c.apply(a.common.dry_run)?;
    }
    Ok(())
}

/// The MCP server entry, where `claude mcp add --scope …` keeps it.
fn claude_mcp(
    a: &ClaudeCodeSetup,
    home: &Path,
    cwd: &Path,
    program: &str,
) -> Result<Change, String> {
    let path = match a.scope {
        Scope::Project => cwd.join(".mcp.json"),
        Scope::User | Scope::Local => home.join(".claude.json"),
    };
    let (old, mut root) = read_json(&path)?;
    let servers = match a.scope {
        Scope::Project | Scope::User => root
            .entry("mcpServers")
            .or_insert_with(|| Value::Object(Map::new())),
        Scope::Local => {
            let projects = root
                .entry("projects")
                .or_insert_with(|| Value::Object(Map::new()));
            let project = projects
                .as_object_mut()
                .ok_or_else(|| {
                    format!(
                        "{}: \"projects\" is not an object; nothing was changed",
                        path.display()
                    )
                })?
                .entry(cwd.display().to_string())
                .or_insert_with(|| Value::Object(Map::new()));
            project
                .as_object_mut()
                .ok_or_else(|| {
                    format!(
                        "{}: this project's entry is not an object; nothing was changed",
                        path.display()
                    )
                })?
                .entry("mcpServers")
                .or_insert_with(|| Value::Object(Map::new()))
        }
    };
    let servers = servers.as_object_mut().ok_or_else(|| {
        format!(
            "{}: \"mcpServers\" is not an object; nothing was changed",
            path.display()
        )
    })?;
    let what = if a.common.remove {
        servers.shift_remove("askrelay");
        "the askrelay MCP server taken out".to_owned()
    } else {
        servers.insert(
            "askrelay".to_owned(),
            json!({"type": "stdio", "command": program, "args": ["mcp"], "env": {}}),
        );
        "the askrelay MCP server (`askrelay mcp`)".to_owned()
    };
    Ok(Change {
        path,
        new: to_json_text(&root),
        old,
        what,
    })
}

fn codex(a: &CodexSetup) -> Result<(), String> {
    let codex_home = match &a.codex_home {
        Some(d) => d.clone(),
        None => match std::env::var_os("CODEX_HOME").filter(|h| !h.is_empty()) {
            Some(h) => PathBuf::from(h),
            None => home()?.join(".codex"),
        },
    };
    let program = program(&a.common);
    let hook_timeout = a.common.timeout.max(20);
    let command = format!(
        "{} hook codex --timeout {}",
        shell_word(&program),
        hook_timeout - 10
    );
    // hooks.json
    let hooks_path = codex_home.join("hooks.json");
    let (old, mut root) = read_json(&hooks_path)?;
    {
        let hooks = hooks_of(&mut root).map_err(|e| format!("{}: {e}", hooks_path.display()))?;
        remove_our_hooks(hooks);
        if !a.common.remove {
            add_hook(hooks, "PreToolUse", ".*", &command, hook_timeout);
        }
    }
    let hooks_change = Change {
        path: hooks_path,
        new: to_json_text(&root),
        old,
        what: if a.common.remove {
            "askrelay's hook taken out".to_owned()
        } else {
            "askrelay answers PreToolUse (every tool)".to_owned()
        },
    };
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
    let what = if a.common.remove {
        if let Some(servers) = doc
            .get_mut("mcp_servers")
            .and_then(|s| s.as_table_like_mut())
        {
            servers.remove("askrelay");
        }
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
        new: doc.to_string(),
        old,
        what,
    };
    for c in [&hooks_change, &config_change] {
        c.apply(a.common.dry_run)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_hooks_are_told_by_their_program() {
        assert!(is_ours(
            "/usr/local/bin/askrelay hook claude-code --timeout 590"
        ));
        assert!(is_ours("askrelay hook codex"));
        assert!(is_ours("'/opt/my tools/askrelay' hook claude-code"));
        assert!(!is_ours("askrelay-wrapper hook claude-code"));
        assert!(!is_ours("/usr/bin/other hook"));
        assert!(!is_ours("askrelay mcp"));
    }

    #[test]
    fn only_our_hooks_are_taken_out() {
        let mut hooks = json!({
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [
                    {"type": "command", "command": "lint-guard"},
                    {"type": "command", "command": "askrelay hook claude-code"}]},
                {"matcher": "AskUserQuestion", "hooks": [
                    {"type": "command", "command": "askrelay hook claude-code"}]}],
            "Stop": [{"hooks": [{"type": "command", "command": "notify-me"}]}],
            "PermissionRequest": [{"matcher": "*", "hooks": [
                {"type": "command", "command": "/x/askrelay hook claude-code"}]}]
        });
        remove_our_hooks(hooks.as_object_mut().unwrap());
        assert_eq!(
            hooks,
            json!({
                "PreToolUse": [{"matcher": "Bash", "hooks": [
                    {"type": "command", "command": "lint-guard"}]}],
                "Stop": [{"hooks": [{"type": "command", "command": "notify-me"}]}]
            })
        );
    }

    #[test]
    fn words_are_quoted_for_the_shell_when_needed() {
        assert_eq!(shell_word("/usr/bin/askrelay"), "/usr/bin/askrelay");
        assert_eq!(
            shell_word("/opt/my tools/askrelay"),
            "'/opt/my tools/askrelay'"
        );
        assert_eq!(shell_words::split(&shell_word("it's")).unwrap(), ["it's"]);
    }
}
