//! `askrelay setup claude-code`, `askrelay setup codex` and `askrelay setup copilot`
//! ([`copilot`]): write askrelay's hook (and its MCP
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
//!
//! The files are edited the way a careful person would: JSON through jsonc-parser's syntax tree
//! (so everything outside askrelay's entries stays byte for byte: numbers as written, key
//! order, indentation, comments), a symbolic link keeps its link (its target is written), and
//! the new content goes through a temporary file that `tempfile` creates with `O_EXCL` (never a
//! name someone could plant a link at) and a rename.
//!
//! `--remove` gives a file back byte for byte when nothing else changed it since: setup keeps
//! each file's original bytes ([`record`]), and a file it created is deleted again. A file
//! changed since gets the structural removal above, which keeps those changes.
//! With `--stop`, both also register the hook on `Stop` (no matcher): the end of a turn is
//! posted, and a reply in chat keeps the agent working (docs/approvals.md, "Replies at the end
//! of a turn"). Its timeout is `--stop-wait` (the route's `stop_wait_secs`) plus a margin, so
//! the route's wait ends it, not the agent.
//!
//! The hooks fail closed: `setup codex` writes `askrelay hook codex --fail-closed` (unless
//! `--fail-open`), so a stopped daemon or another user's socket denies instead of leaving the
//! call to Codex's own policy; `setup claude-code --fail-closed` adds `"onFailure": "block"`
//! to its entries, so Claude Code blocks the call when the hook itself fails, on the versions
//! that know the field (2.1.295 and newer; checked, never assumed).

use clap::{Args, Subcommand, ValueEnum};
use jsonc_parser::cst::{CstArray, CstInputValue, CstNode, CstObject, CstRootNode};
use serde_json::{json, Value};
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::str::FromStr;

mod claude_code;
mod codex;
mod copilot;
pub use codex::CodexSetup;
pub use copilot::CopilotSetup;
mod record;
use record::{Record, Records};

pub const SETUP_EXAMPLES: &str = "\
Examples:
  # You, in every project (~/.claude/settings.json):
  askrelay setup claude-code
  # Everyone on this project (.claude/settings.json):
  askrelay setup claude-code --scope project
  # Always ask about Bash, Edit and Write:
  askrelay setup claude-code --event pre-tool-use
  # Show the change, write nothing; take askrelay out again:
  askrelay setup claude-code --dry-run
  askrelay setup claude-code --remove
  # Claude Code blocks the call if the hook itself fails (2.1.295 or newer):
  askrelay setup claude-code --fail-closed
  # Codex (~/.codex/hooks.json and config.toml), failing closed:
  askrelay setup codex
  # GitHub Copilot CLI (~/.copilot/settings.json and mcp-config.json):
  askrelay setup copilot
  # Also post the end of each turn, so a reply in chat keeps the agent working:
  askrelay setup claude-code --stop --stop-wait 300

It changes only askrelay's own entries; running it twice changes nothing the
second time.";

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
    /// GitHub Copilot CLI: the askrelay hooks (settings.json) and MCP server
    /// (mcp-config.json).
    #[command(after_help = SETUP_EXAMPLES)]
    Copilot(CopilotSetup),
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
    /// Only when the agent would ask you itself (recommended for Claude Code; Codex fires it
    /// only in its interactive UI).
    PermissionRequest,
    /// Before every matching tool call, even ones the agent would run without asking.
    PreToolUse,
}

#[derive(Debug, Args)]
pub struct Common {
    /// Show what would change, as a diff, and write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Take askrelay's entries out instead: a file still as setup wrote it gets its original
    /// bytes back (one setup created is deleted); one changed since loses only askrelay's
    /// entries.
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
    /// Also register the hook on Stop: the end of each turn is posted, and a reply in chat
    /// keeps the agent working (on routes with stop_replies).
    #[arg(long)]
    pub stop: bool,
    /// With --stop: the route's stop_wait_secs. The Stop hook's timeout is this plus
    /// STOP_MARGIN_SECS, so that the route's wait ends it, not the agent.
    #[arg(long, default_value_t = crate::config::STOP_WAIT_DEFAULT_SECS, value_name = "SECS",
          value_parser = clap::value_parser!(u64).range(
              crate::config::STOP_WAIT_MIN_SECS..=crate::config::STOP_WAIT_MAX_SECS))]
    pub stop_wait: u64,
}

/// What the Stop hook's timeout adds to the wait: time to post the end of the turn before the
/// wait starts, and to answer after it ends. The hook's own `--timeout` is half of it less.
pub const STOP_MARGIN_SECS: u64 = 60;

impl Common {
    /// The Stop hook entry for `agent`, with --stop (and not --remove).
    fn stop_hook(&self, program: &str, agent: &str) -> Option<Value> {
        (self.stop && !self.remove).then(|| {
            json!({"type": "command", "command": format!(
                "{} hook {agent} --timeout {}",
                shell_word(program),
                self.stop_wait + STOP_MARGIN_SECS / 2
            ), "timeout": self.stop_wait + STOP_MARGIN_SECS})
        })
    }
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
    /// Have Claude Code block the tool call when the hook itself fails (askrelay cannot start,
    /// crashes, or runs past the hook's timeout): `"onFailure": "block"` on askrelay's entries.
    /// Needs Claude Code 2.1.295 or newer, which is checked.
    #[arg(long)]
    pub fail_closed: bool,
    /// The Claude Code version to write for, with --fail-closed (default: what `claude
    /// --version` says).
    #[arg(long, value_name = "X.Y.Z")]
    pub claude_version: Option<ClaudeVersion>,
    #[command(flatten)]
    pub common: Common,
}

/// A Claude Code version, `X.Y.Z` (what `claude --version` prints first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ClaudeVersion(u64, u64, u64);

impl ClaudeVersion {
    /// The first Claude Code whose hook entries take `onFailure`: 2.1.294's settings schema
    /// has no such field on hooks, 2.1.295's has it on command hooks.
    const ON_FAILURE: ClaudeVersion = ClaudeVersion(2, 1, 295);
}

impl FromStr for ClaudeVersion {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("{s:?} is not a version like 2.1.295");
        let mut parts = s.trim().splitn(3, '.');
        let mut next = |whole: bool| -> Result<u64, String> {
            let p = parts.next().ok_or_else(bad)?;
            // A pre-release or build suffix (2.1.300-beta.1) is not part of the number.
            let digits = if whole {
                p
            } else {
                p.split(|c: char| !c.is_ascii_digit()).next().unwrap_or("")
            };
            digits.parse().map_err(|_| bad())
        };
        Ok(ClaudeVersion(next(true)?, next(true)?, next(false)?))
    }
}

impl fmt::Display for ClaudeVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.0, self.1, self.2)
    }
}

/// Runs `askrelay setup …`; the exit code.
pub fn run(args: SetupArgs) -> i32 {
    let result = match args.agent {
        SetupAgent::ClaudeCode(a) => claude_code::claude_code(&a),
        SetupAgent::Codex(a) => codex::codex(&a),
        SetupAgent::Copilot(a) => copilot::copilot(&a),
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
    /// `None`: the file is deleted (`--remove` of a file setup created).
    new: Option<String>,
    what: String,
}

impl Change {
    /// Writes it (or, for a dry run, prints its diff), and says what was done.
    fn apply(&self, dry_run: bool) -> Result<(), String> {
        if self.old == self.new {
            crate::outln!("{}: already as wanted ({})", self.path.display(), self.what);
            return Ok(());
        }
        let name = |text: &Option<String>| match text {
            Some(_) => self.path.display().to_string(),
            None => "/dev/null".to_owned(),
        };
        if dry_run {
            let (old, new) = (
                self.old.as_deref().unwrap_or(""),
                self.new.as_deref().unwrap_or(""),
            );
            let diff = similar::TextDiff::from_lines(old, new);
            print!(
                "{}",
                diff.unified_diff()
                    .context_radius(3)
                    .header(&name(&self.old), &name(&self.new))
            );
            crate::outln!(
                "(dry run: {} not written; {})",
                self.path.display(),
                self.what
            );
            return Ok(());
        }
        let Some(new) = &self.new else {
            std::fs::remove_file(&self.path)
                .map_err(|e| format!("cannot delete {}: {e}", self.path.display()))?;
            crate::outln!("{}: {}", self.path.display(), self.what);
            return Ok(());
        };
        let written = write_atomically(&self.path, new)?;
        if written == self.path {
            crate::outln!("{}: {}", self.path.display(), self.what);
        } else {
            crate::outln!(
                "{} (a link to {}, written there): {}",
                self.path.display(),
                written.display(),
                self.what
            );
        }
        Ok(())
    }
}

/// The file that writing `path` should change: `path` itself, or, where it is a symbolic link,
/// the file it leads to (so that the link, say into a dotfiles repository, stays a link).
/// Refuses a link that leads nowhere, and anything but a regular file.
fn write_target(path: &Path) -> Result<PathBuf, String> {
    let is_link = std::fs::symlink_metadata(path)
        .map(|m| m.file_type().is_symlink())
        .unwrap_or(false);
    let target = if is_link {
        std::fs::canonicalize(path).map_err(|e| {
            format!(
                "{} is a symbolic link that leads to no file ({e}); nothing was changed",
                path.display()
            )
        })?
    } else {
        path.to_owned()
    };
    match std::fs::metadata(&target) {
        Ok(m) if !m.is_file() => Err(format!(
            "{} is not a regular file; nothing was changed",
            target.display()
        )),
        _ => Ok(target),
    }
}

/// Writes `content` to `path` (through a symbolic link to its target, see [`write_target`])
/// by a temporary file beside it and a rename, keeping the file's permissions (a new file:
/// owner-only); returns the file written. The temporary file gets a random name and is
/// created with `O_CREAT|O_EXCL` (`tempfile`), so a link planted in the directory is never
/// followed; it is on disk (fsync) before the rename.
fn write_atomically(path: &Path, content: &str) -> Result<PathBuf, String> {
    use std::os::unix::fs::PermissionsExt;
    let target = write_target(path)?;
    let dir = match target.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(d) => d.to_owned(),
        None => PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let mode = std::fs::metadata(&target)
        .map(|m| m.permissions().mode() & 0o7777)
        .unwrap_or(0o600);
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let cannot = |e: std::io::Error| format!("cannot write {}: {e}", target.display());
    // Dropped (and so removed) on any error below.
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}.askrelay-"))
        .tempfile_in(&dir)
        .map_err(cannot)?;
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(mode))
        .map_err(cannot)?;
    tmp.write_all(content.as_bytes()).map_err(cannot)?;
    tmp.as_file().sync_all().map_err(cannot)?;
    tmp.persist(&target)
        .map_err(|e| format!("cannot replace {}: {}", target.display(), e.error))?;
    // The rename reaches the disk with its directory; the file is already in place either way.
    if let Ok(d) = std::fs::File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(target)
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

/// A JSON settings file, as read: its text (none when missing) and its syntax tree, which is
/// edited in place, so that what askrelay does not change is written back byte for byte.
struct JsonFile {
    path: PathBuf,
    old: Option<String>,
    root: CstRootNode,
}

impl JsonFile {
    /// Reads it (missing or blank: an empty object), refusing what does not parse or is not
    /// an object. Comments and trailing commas are kept as they are; the looser JSON5 forms
    /// (bare keys, single quotes) are refused, as the agents would.
    fn read(path: &Path) -> Result<JsonFile, String> {
        let old = match std::fs::read_to_string(path) {
            Ok(t) => Some(t),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                return Err(format!(
                    "cannot read {}: {e}; nothing was changed",
                    path.display()
                ))
            }
        };
        let text = old
            .as_deref()
            .filter(|t| !t.trim().is_empty())
            .unwrap_or("");
        let options = jsonc_parser::ParseOptions {
            allow_comments: true,
            allow_trailing_commas: true,
            allow_loose_object_property_names: false,
            allow_missing_commas: false,
            allow_single_quoted_strings: false,
            allow_hexadecimal_numbers: false,
            allow_unary_plus_numbers: false,
            allow_bare_decimal_point_numbers: false,
            allow_non_finite_numbers: false,
            allow_extended_string_escapes: false,
        };
        let root = CstRootNode::parse(text, &options).map_err(|e| {
            format!(
                "cannot parse {} as JSON ({e}); fix it or move it away, nothing was changed",
                path.display()
            )
        })?;
        if root.value().is_some() && root.object_value().is_none() {
            return Err(format!(
                "{} is not a JSON object; nothing was changed",
                path.display()
            ));
        }
        Ok(JsonFile {
            path: path.to_owned(),
            old,
            root,
        })
    }

    /// Whether the file had content (not missing, not blank).
    fn had_content(&self) -> bool {
        self.old.as_deref().is_some_and(|t| !t.trim().is_empty())
    }

    /// The top-level object (created in a new file).
    fn object(&self) -> CstObject {
        self.root.object_value_or_set()
    }

    /// The change to write: the edited text, as it was outside the edits.
    fn change(self, what: String) -> Change {
        let mut new = self.root.to_string();
        if !self.had_content() && !new.ends_with('\n') {
            new.push('\n');
        }
        Change {
            path: self.path,
            old: self.old,
            new: Some(new),
            what,
        }
    }
}

/// Applies `changes` (or, for a dry run, prints them), keeping the records that let
/// `--remove` give each file back byte for byte ([`record`]).
///
/// - `--remove`: a file still exactly as setup last wrote it gets its original bytes back, or
///   is deleted when setup created it (with the directories setup created for it, when empty);
///   any other file gets `changes` (the structural removal). The record goes.
/// - Otherwise, before a file is written, its original is recorded: the one already on record
///   while the file is still what setup last wrote, else the file as it is now, when it holds
///   nothing of askrelay's (`removal`, the `--remove` of the same files, would change nothing)
///   or does not exist. A file that holds askrelay's entries without a record gets none: its
///   original is not known, and `--remove` takes the entries out.
///
/// A record that cannot be kept is said on stderr; the setup goes on (the structural removal
/// still works).
fn apply(
    mut changes: Vec<Change>,
    removal: Option<Vec<Change>>,
    common: &Common,
    records: &Records,
) -> Result<(), String> {
    let dry_run = common.dry_run;
    if common.remove {
        // The directories setup created, removed after every file (one may hold two).
        let mut created_dirs: Vec<PathBuf> = Vec::new();
        for c in &mut changes {
            if c.old.is_none() {
                // Nothing of askrelay's in a file that is not there: nothing to write.
                c.new = None;
            }
            if let Some(r) = records.unchanged(&c.path, c.old.as_deref()) {
                c.what = match &r.original {
                    Some(_) => "given back byte for byte as it was before askrelay setup",
                    None => "deleted: askrelay setup had created it",
                }
                .to_owned();
                c.new = r.original;
                if c.new.is_none() {
                    created_dirs.extend(r.created_dirs);
                }
            }
            c.apply(dry_run)?;
            if !dry_run {
                records.forget(&c.path);
            }
        }
        if !dry_run {
            // Deepest first; only an empty one goes.
            created_dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
            for d in created_dirs {
                let _ = std::fs::remove_dir(d);
            }
        }
        return Ok(());
    }
    for c in &changes {
        if !dry_run && c.old != c.new {
            let clean = c.old.as_deref().is_none_or(|t| t.trim().is_empty())
                || removal
                    .iter()
                    .flatten()
                    .any(|u| u.path == c.path && u.old == u.new);
            let kept = match records.unchanged(&c.path, c.old.as_deref()) {
                Some(r) => Some((r.original, r.created_dirs)),
                None if clean => Some((c.old.clone(), record::missing_dirs(&c.path))),
                None => None,
            };
            match (kept, &c.new) {
                (Some((original, created_dirs)), Some(new)) => {
                    let r = Record {
                        path: c.path.clone(),
                        original,
                        created_dirs,
                        written: record::digest(new),
                    };
                    if let Err(e) = records.put(&r) {
                        eprintln!(
                            "askrelay setup: {e}; --remove will take out only askrelay's entries"
                        );
                    }
                }
                _ => records.forget(&c.path),
            }
        }
        c.apply(dry_run)?;
    }
    Ok(())
}

/// serde_json's value as jsonc-parser's input (askrelay's own entries; numbers as serde_json
/// writes them).
fn cst_value(v: &Value) -> CstInputValue {
    match v {
        Value::Null => CstInputValue::Null,
        Value::Bool(b) => CstInputValue::Bool(*b),
        Value::Number(n) => CstInputValue::Number(n.to_string()),
        Value::String(s) => CstInputValue::String(s.clone()),
        Value::Array(a) => CstInputValue::Array(a.iter().map(cst_value).collect()),
        Value::Object(o) => {
            CstInputValue::Object(o.iter().map(|(k, v)| (k.clone(), cst_value(v))).collect())
        }
    }
}

/// A hook entry's `command`, when it is a string.
fn command_of(hook: &CstNode) -> Option<String> {
    hook.as_object()?
        .get("command")?
        .value()?
        .as_string_lit()?
        .decoded_value()
        .ok()
}

/// Takes askrelay's hook entries out of `hooks` (an agent's `hooks` object): every hook whose
/// command is ours, and then every matcher group and event left empty by that alone.
fn remove_our_hooks(hooks: &CstObject) {
    for event in hooks.properties() {
        let Some(groups) = event.array_value() else {
            continue;
        };
        let mut changed = false;
        for group in groups.elements() {
            let Some(list) = group.as_object().and_then(|g| g.array_value("hooks")) else {
                continue;
            };
            let entries = list.elements();
            let before = entries.len();
            let mut removed = 0;
            for h in entries {
                if command_of(&h).is_some_and(|c| is_ours(&c)) {
                    h.remove();
                    removed += 1;
                }
            }
            if removed > 0 {
                changed = true;
                if removed == before {
                    group.remove();
                }
            }
        }
        if changed && groups.elements().is_empty() {
            event.remove();
        }
    }
}

/// Adds a matcher group with askrelay's hook to `event` (a non-array there is replaced).
fn add_hook(hooks: &CstObject, event: &str, matcher: &str, hook: &Value) {
    let groups: CstArray = hooks.array_value_or_set(event);
    groups.append(cst_value(&json!({"matcher": matcher, "hooks": [hook]})));
}

/// Adds a group with askrelay's hook to `event` without a matcher (Stop takes none).
fn add_unmatched_hook(hooks: &CstObject, event: &str, hook: &Value) {
    let groups: CstArray = hooks.array_value_or_set(event);
    groups.append(cst_value(&json!({"hooks": [hook]})));
}

/// The `hooks` object of a settings object, created when missing.
fn hooks_of(settings: &CstObject) -> Result<CstObject, String> {
    settings
        .object_value_or_create("hooks")
        .ok_or_else(|| "its \"hooks\" is not an object; nothing was changed".to_owned())
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

    /// A settings file's text, edited by `edit` on its hooks object as setup does.
    fn edited(text: &str, edit: impl FnOnce(&CstObject)) -> String {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        std::fs::write(&path, text).unwrap();
        let file = JsonFile::read(&path).unwrap();
        edit(&hooks_of(&file.object()).unwrap());
        file.change(String::new()).new.unwrap()
    }

    #[test]
    fn only_our_hooks_are_taken_out() {
        let text = json!({"hooks": {
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [
                    {"type": "command", "command": "lint-guard"},
                    {"type": "command", "command": "askrelay hook claude-code"}]},
                {"matcher": "AskUserQuestion", "hooks": [
                    {"type": "command", "command": "askrelay hook claude-code"}]}],
            "Stop": [{"hooks": [{"type": "command", "command": "notify-me"}]}],
            "PermissionRequest": [{"matcher": "*", "hooks": [
                {"type": "command", "command": "/x/askrelay hook claude-code"}]}]
        }});
        let out = edited(&serde_json::to_string_pretty(&text).unwrap(), |h| {
            remove_our_hooks(h)
        });
        assert_eq!(
            serde_json::from_str::<Value>(&out).unwrap(),
            json!({"hooks": {
                "PreToolUse": [{"matcher": "Bash", "hooks": [
                    {"type": "command", "command": "lint-guard"}]}],
                "Stop": [{"hooks": [{"type": "command", "command": "notify-me"}]}]
            }})
        );
    }

    #[test]
    fn what_is_not_ours_stays_byte_for_byte() {
        // Numbers as written (serde_json made 1.2345678901234568e+29 and 1.1 of them), four
        // spaces, a comment, a trailing comma, keys in the user's order.
        let theirs = "{\n    \"zeta\": 123456789012345678901234567890,\n    \"ratio\": 1.10,\n    \
                      // mine\n    \"hooks\": {\n        \"Stop\": [{\"hooks\": [{\"type\": \
                      \"command\", \"command\": \"notify-me\"}]}]\n    },\n    \"alpha\": [1e3, -0.0,],\n}\n";
        let hook = json!({"type": "command", "command": "askrelay hook claude-code"});
        let added = edited(theirs, |h| {
            remove_our_hooks(h);
            add_hook(h, "PermissionRequest", "*", &hook);
        });
        for kept in [
            "\"zeta\": 123456789012345678901234567890,",
            "\"ratio\": 1.10,",
            "// mine",
            "\"alpha\": [1e3, -0.0,],",
        ] {
            assert!(added.contains(kept), "lost {kept:?}:\n{added}");
        }
        assert!(
            added.contains("\"PermissionRequest\": [")
                && added.contains("askrelay hook claude-code"),
            "{added}"
        );
        // Taking ours out again gives back the very bytes.
        assert_eq!(edited(&added, remove_our_hooks), theirs);
    }

    #[test]
    fn a_new_file_is_pretty_printed_with_a_final_newline() {
        let hook = json!({"type": "command", "command": "askrelay hook codex", "timeout": 600});
        let out = edited("", |h| add_hook(h, "PreToolUse", ".*", &hook));
        assert!(out.ends_with("}\n"), "{out}");
        assert_eq!(
            serde_json::from_str::<Value>(&out).unwrap(),
            json!({"hooks": {"PreToolUse": [{"matcher": ".*", "hooks": [hook]}]}})
        );
        assert!(out.contains("\n  \"hooks\": {\n"), "{out}");
    }

    #[test]
    fn claude_versions_compare_as_numbers() {
        let v = |s: &str| s.parse::<ClaudeVersion>().unwrap();
        assert!(v("2.1.294") < ClaudeVersion::ON_FAILURE);
        assert!(v("2.1.295") >= ClaudeVersion::ON_FAILURE);
        assert!(v("2.1.1000") > ClaudeVersion::ON_FAILURE);
        assert!(v("2.2.0") > ClaudeVersion::ON_FAILURE);
        assert!(v("10.0.0") > ClaudeVersion::ON_FAILURE);
        assert_eq!(v("2.1.300-beta.1"), ClaudeVersion(2, 1, 300));
        assert_eq!(v("2.1.295").to_string(), "2.1.295");
        for bad in ["", "2.1", "v2.1.295", "2.x.295", "(Claude", "2.1.-1"] {
            assert!(bad.parse::<ClaudeVersion>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_temporary_file_never_follows_a_planted_link() {
        use std::os::unix::fs::symlink;
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let path = dir.path().join("settings.json");
        // Links at every name of the old scheme this process could have used, and at the
        // prefix of the new one.
        symlink(
            &victim,
            dir.path()
                .join(format!("settings.json.askrelay-{}", std::process::id())),
        )
        .unwrap();
        symlink(&victim, dir.path().join(".settings.json.askrelay-")).unwrap();
        assert_eq!(write_atomically(&path, "{}\n").unwrap(), path);
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        assert!(!std::fs::symlink_metadata(&path)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{}\n");
        // Nothing else was left in the directory.
        let mut names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                ".settings.json.askrelay-".to_owned(),
                "settings.json".to_owned(),
                format!("settings.json.askrelay-{}", std::process::id()),
                "victim".to_owned()
            ]
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
