//! `askrelay hook claude-code`: a Claude Code `PreToolUse` hook command that asks people
//! whether a tool call may run.
//!
//! It reads the hook event from stdin (`tool_name`, `tool_input`, `tool_use_id`, `cwd`,
//! `session_id`), asks "Allow <tool>?" with the options `Allow` and `Deny` and what the tool
//! would do as context (the command for Bash; the file and a diff for Edit, MultiEdit and
//! Write; the input as JSON for anything else), and prints the hook's JSON decision on stdout:
//! `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":…,
//! "permissionDecisionReason":…}}` (Claude Code's hooks reference,
//! <https://code.claude.com/docs/en/hooks>, "PreToolUse decision control"). Free text
//! (`Other…`) denies, and is the reason Claude sees. Whenever askrelay cannot get an answer
//! (the daemon is down, `NO_ANSWERER`, a bad event) it answers `ask`, which hands the decision
//! back to Claude Code's own prompt; it never allows by itself. It always exits 0, so that
//! Claude Code reads the decision.
//!
//! What it shows is what the tool would get: every text from the event (the command, the
//! description, the file path, the edited text, the file on disk) goes through one [`Reveal`],
//! so hidden characters show as escapes (`⟨U+202E⟩`) and the question is flagged. The file on
//! disk is read only through [`super::disk`]: a regular file, at most 1 MiB, within a few
//! seconds; otherwise the question says that it is not shown, and why.

use super::disk::{self, NotShown};
use super::{cap_bytes, decide, flagged, safe_name, text_or_file, Verdict};
use crate::client::Target;
use crate::core::model::{Question, QuestionOption, MAX_SCOPE_VALUE_CHARS};
use crate::core::text::{Layout, Reveal};
use crate::core::{Ask, Context, ContextFile, ErrorCode, Scope};
use clap::{Args, Subcommand, ValueEnum};
use serde::Deserialize;
use serde_json::{json, Value};
use std::io::Read;
use std::path::Path;
use std::time::Duration;

/// The option that allows the tool call.
pub const ALLOW: &str = "Allow";
/// The option that denies it (free text denies too, with a reason).
pub const DENY: &str = "Deny";

/// A file of the context (a diff, a long command) is cut to this, so that the whole ask stays
/// well inside the socket's default 1 MiB line.
const HOOK_FILE_MAX: usize = 256 * 1024;

pub const HOOK_EXAMPLES: &str = "\
Reads a Claude Code PreToolUse hook event on stdin and prints the hook's JSON decision on
stdout: allow, deny (with the reason the person typed under Other…), or ask (Claude Code's
own prompt) when askrelay cannot get an answer: the daemon is down, NO_ANSWERER, --timeout.
On EXPIRED it answers deny, or ask with --on-expire ask. It always exits 0.

In .claude/settings.json (timeout is in seconds; keep --timeout below it):
  {\"hooks\": {\"PreToolUse\": [{\"matcher\": \"Bash|Edit|Write\",
    \"hooks\": [{\"type\": \"command\", \"command\": \"askrelay hook claude-code --timeout 590\",
                 \"timeout\": 600}]}]}}

Examples:
  askrelay hook claude-code < event.json
  askrelay hook claude-code --project infra-prod --on-expire ask";

#[derive(Debug, Args)]
pub struct HookArgs {
    #[command(subcommand)]
    pub kind: HookKind,
}

#[derive(Debug, Subcommand)]
pub enum HookKind {
    /// A Claude Code PreToolUse hook: ask people whether a tool call may run.
    #[command(after_help = HOOK_EXAMPLES)]
    ClaudeCode(ClaudeCodeArgs),
}

#[derive(Debug, Args)]
pub struct ClaudeCodeArgs {
    /// What to answer when the request expires (a route's expiry policy): deny, or ask
    /// (Claude Code's own prompt).
    #[arg(long, value_enum, default_value_t = OnExpire::Deny)]
    pub on_expire: OnExpire,
    /// Cancel the request and answer ask after SECS without an answer; set it below the
    /// hook's `timeout` in settings.json, which kills the hook.
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<u64>,
    /// scope.project (default: the last part of the event's cwd).
    #[arg(long, env = "ASKRELAY_SCOPE_PROJECT")]
    pub project: Option<String>,
    /// Another scope label, KEY=VALUE; repeatable.
    #[arg(long = "scope", value_name = "KEY=VALUE")]
    pub scope: Vec<String>,
    /// How long to keep trying to re-attach when the daemon goes away.
    #[arg(long, default_value_t = 300, value_name = "SECS")]
    pub reconnect_secs: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnExpire {
    Deny,
    Ask,
}

/// The fields of a PreToolUse event askrelay uses; the others are ignored.
#[derive(Debug, Deserialize)]
struct PreToolUse {
    #[serde(default)]
    hook_event_name: Option<String>,
    tool_name: String,
    #[serde(default)]
    tool_input: Value,
    #[serde(default)]
    tool_use_id: Option<String>,
    #[serde(default)]
    cwd: Option<String>,
    #[serde(default)]
    session_id: Option<String>,
}

/// Runs the hook and returns the exit code (always 0: the decision is on stdout).
pub async fn run(config_file: Option<&Path>, args: HookArgs) -> i32 {
    let HookKind::ClaudeCode(args) = args.kind;
    let decision = claude_code(config_file, &args).await;
    println!("{}", decision.to_line());
    0
}

/// The hook's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// `allow`, `deny` or `ask`.
    pub permission: &'static str,
    pub reason: String,
}

impl Decision {
    fn new(permission: &'static str, reason: impl Into<String>) -> Decision {
        Decision {
            permission,
            reason: reason.into(),
        }
    }

    /// The JSON line Claude Code reads.
    pub fn to_line(&self) -> String {
        json!({"hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": self.permission,
            "permissionDecisionReason": self.reason,
        }})
        .to_string()
    }
}

async fn claude_code(config_file: Option<&Path>, args: &ClaudeCodeArgs) -> Decision {
    let mut input = String::new();
    if let Err(e) = std::io::stdin().read_to_string(&mut input) {
        return Decision::new("ask", format!("askrelay: cannot read the hook event: {e}"));
    }
    let event: PreToolUse = match serde_json::from_str(&input) {
        Ok(e) => e,
        Err(e) => {
            return Decision::new(
                "ask",
                format!("askrelay: the hook event is not a PreToolUse event: {e}"),
            )
        }
    };
    if event
        .hook_event_name
        .as_deref()
        .is_some_and(|n| n != "PreToolUse")
    {
        return Decision::new(
            "ask",
            "askrelay: this hook only answers PreToolUse events; asking here",
        );
    }
    let target = match Target::from_config(config_file) {
        Ok(t) => t,
        Err(e) => return Decision::new("ask", format!("askrelay: {e:#}; asking here")),
    };
    let ask = match build_ask(&event, args) {
        Ok(a) => a,
        Err(e) => return Decision::new("ask", format!("askrelay: {e}; asking here")),
    };
    let request_id = ask.request_id.clone().unwrap_or_default();
    let verdict = decide(
        &target,
        ask,
        ALLOW,
        Duration::from_secs(args.reconnect_secs),
        args.timeout.map(Duration::from_secs),
        |answerer, _| {
            eprintln!(
                "askrelay: request {} is waiting for an answer via {}",
                crate::core::text::Escaped(&request_id),
                crate::core::text::Escaped(answerer)
            )
        },
    )
    .await;
    decision_for(verdict, args.on_expire)
}

/// What the hook answers for a verdict.
pub fn decision_for(verdict: Verdict, on_expire: OnExpire) -> Decision {
    match verdict {
        Verdict::Allowed { by } => Decision::new("allow", format!("Allowed by {by} via askrelay")),
        Verdict::Denied {
            reason: Some(reason),
            ..
        } => Decision::new("deny", reason),
        Verdict::Denied { by, reason: None } => {
            Decision::new("deny", format!("Denied by {by} via askrelay"))
        }
        Verdict::Failed(e) if e.code == ErrorCode::Expired => {
            let reason = format!("askrelay: nobody answered in time ({})", e.message);
            match on_expire {
                OnExpire::Deny => Decision::new("deny", reason),
                OnExpire::Ask => Decision::new("ask", reason),
            }
        }
        Verdict::Failed(e) if e.code == ErrorCode::Aborted => Decision::new(
            "deny",
            format!("askrelay: the request was cancelled ({})", e.message),
        ),
        Verdict::Failed(e) => Decision::new(
            "ask",
            format!("askrelay: {}: {}; asking here", e.code, e.message),
        ),
        Verdict::Unreachable(why) => Decision::new(
            "ask",
            format!("askrelay: {why}; start it with `askrelay serve`; asking here"),
        ),
        Verdict::TimedOut(after) => Decision::new(
            "ask",
            format!(
                "askrelay: nobody answered within {} s; asking here",
                after.as_secs()
            ),
        ),
    }
}

/// The ask for a tool call.
fn build_ask(event: &PreToolUse, args: &ClaudeCodeArgs) -> Result<Ask, String> {
    // Every text from the event goes through this one value, so that the question is flagged
    // when any of them hid something.
    let mut reveal = Reveal::default();
    let tool = one_line(&event.tool_name, 80, &mut reveal);
    if tool.is_empty() {
        return Err("the hook event has no tool_name".into());
    }
    let input = &event.tool_input;
    let str_field = |k: &str| input.get(k).and_then(Value::as_str);
    let cwd = event.cwd.as_deref().map(Path::new);
    let (context, not_shown) = tool_context(&event.tool_name, input, cwd, &mut reveal);
    let mut question = format!("Allow {tool}?");
    if let Some(why) = &not_shown {
        question.push_str(&format!("\n⚠ File on disk not shown: {why}"));
    }
    if let Some(d) = str_field("description").filter(|d| !d.trim().is_empty()) {
        question.push_str("\n\n");
        question.push_str(&reveal.text(d, Layout::Lines));
    }

    let mut scope = Scope::new();
    let project = args.project.clone().or_else(|| {
        cwd.and_then(Path::file_name)
            .map(|n| n.to_string_lossy().into_owned())
    });
    let labels = [
        ("tool", Some(event.tool_name.as_str())),
        ("project", project.as_deref()),
        ("session", event.session_id.as_deref()),
        ("cwd", event.cwd.as_deref()),
    ];
    for (k, v) in labels {
        // The end of a path says most; cut before revealing, and again after.
        let v = v.map(|v| {
            tail(
                &one_line(&tail(v, MAX_SCOPE_VALUE_CHARS), usize::MAX, &mut reveal),
                MAX_SCOPE_VALUE_CHARS,
            )
        });
        if let Some(v) = v.filter(|v| !v.is_empty()) {
            scope.insert(k.to_owned(), v);
        }
    }
    for kv in &args.scope {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| format!("--scope {kv:?}: expected KEY=VALUE"))?;
        scope.insert(k.to_owned(), reveal.text(v, Layout::Line));
    }
    // One tool call, one request: a hook run again for it re-attaches. The id shows in the
    // message's footer.
    let request_id = event
        .tool_use_id
        .as_deref()
        .map(|id| format!("claude-code-{}", reveal.text(id, Layout::Line)))
        .filter(|id| crate::core::model::parse_request_id(&json!(id)).is_ok())
        .unwrap_or_else(|| format!("claude-code-{}", uuid::Uuid::new_v4()));
    let question = flagged(question, &reveal);
    let ask = Ask {
        request_id: Some(request_id),
        // The session's main agent: hooks run for Claude Code itself, not for a sub-agent.
        caller: crate::core::Caller {
            agent_id: Some("claude-code".into()),
            owner_agent_id: None,
        },
        scope,
        questions: vec![Question {
            id: "permission".into(),
            question,
            header: Some("Claude Code".into()),
            options: vec![
                QuestionOption {
                    label: ALLOW.into(),
                    description: Some(format!("Let Claude Code use {tool} as shown")),
                },
                QuestionOption {
                    label: DENY.into(),
                    description: Some("Block it; use Other… to tell Claude why".into()),
                },
            ],
            multi_select: false,
        }],
        context: (!context.is_empty()).then_some(context),
    };
    // The daemon's own rules, so that a problem shows here, named, instead of as a refusal.
    let line = serde_json::to_value(&ask).map_err(|e| e.to_string())?;
    let obj = line.as_object().cloned().unwrap_or_default();
    crate::core::model::parse_ask(&obj, usize::MAX).map_err(|e| e.message)
}

/// What the tool call would do, as a context: Bash's command; the file and a diff for Edit,
/// MultiEdit and Write; the input as JSON for any other tool. Every text in it is revealed
/// (once: an escape revealed again would change). With it, why the file on disk is not shown,
/// when it is not.
fn tool_context(
    tool: &str,
    input: &Value,
    cwd: Option<&Path>,
    reveal: &mut Reveal,
) -> (Context, Option<NotShown>) {
    let mut context = Context::default();
    let mut not_shown = None;
    let str_field = |k: &str| input.get(k).and_then(Value::as_str);
    let file = str_field("file_path").map(|p| shown_path(p, cwd, reveal));
    match (tool, str_field("command"), str_field("file_path")) {
        ("Bash", Some(command), _) => text_or_file(
            reveal.text(command, Layout::Lines),
            "command.sh",
            &mut context,
        ),
        ("Edit", _, Some(path)) => {
            let old = str_field("old_string").unwrap_or_default();
            let new = str_field("new_string").unwrap_or_default();
            let all = input.get("replace_all").and_then(Value::as_bool) == Some(true);
            // The file is read only for the line numbers of the fragment.
            let offset = match disk::read_text(Path::new(path)) {
                Ok(f) => f
                    .find(old)
                    .map(|at| f[..at].matches('\n').count())
                    .unwrap_or(0),
                Err(why) => {
                    not_shown = Some(why);
                    0
                }
            };
            let shown = file.clone().unwrap_or_default();
            let mut text = shown.clone();
            if all {
                text.push_str("\n(every occurrence is replaced)");
            }
            if let Some(why) = &not_shown {
                text.push_str(&format!(
                    "\n(the file on disk is not shown: {why}; the diff has the edited text \
                     alone, and its line numbers count from the edit)"
                ));
            }
            context.text = Some(text);
            let (old, new) = (
                reveal.text(old, Layout::Lines),
                reveal.text(new, Layout::Lines),
            );
            push_diff(
                &mut context,
                path,
                &unified_diff(&old, &new, &shown, &shown, offset),
            );
        }
        ("MultiEdit", _, Some(path)) => {
            let shown = file.clone().unwrap_or_default();
            let mut diff = String::new();
            for e in input
                .get("edits")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let old = e.get("old_string").and_then(Value::as_str).unwrap_or("");
                let new = e.get("new_string").and_then(Value::as_str).unwrap_or("");
                let (old, new) = (
                    reveal.text(old, Layout::Lines),
                    reveal.text(new, Layout::Lines),
                );
                let d = unified_diff(&old, &new, &shown, &shown, 0);
                if diff.is_empty() {
                    diff = d;
                } else {
                    // One header; the hunks of every edit after it.
                    diff.push_str(d.split_once("\n+++ ").map_or("", |(_, r)| {
                        r.split_once('\n').map_or("", |(_, hunks)| hunks)
                    }));
                }
            }
            context.text = Some(shown);
            push_diff(&mut context, path, &diff);
        }
        ("Write", _, Some(path)) => {
            let new = reveal.text(str_field("content").unwrap_or_default(), Layout::Lines);
            let shown = file.clone().unwrap_or_default();
            let (old, from, note) = match disk::read_text(Path::new(path)) {
                Ok(old) => (
                    reveal.text(&old, Layout::Lines),
                    shown.clone(),
                    "(replaces the file)".to_owned(),
                ),
                Err(NotShown::Missing) => (
                    String::new(),
                    "/dev/null".to_owned(),
                    "(a new file)".to_owned(),
                ),
                Err(why) => {
                    let note = format!("(replaces the file; the file on disk is not shown: {why})");
                    not_shown = Some(why);
                    (String::new(), format!("{shown} (on disk, not shown)"), note)
                }
            };
            context.text = Some(format!("{shown}\n{note}"));
            push_diff(
                &mut context,
                path,
                &unified_diff(&old, &new, &from, &shown, 0),
            );
        }
        _ => {
            let json = serde_json::to_string_pretty(input).unwrap_or_default();
            if json != "null" && json != "{}" {
                text_or_file(
                    reveal.text(&json, Layout::Lines),
                    "tool_input.json",
                    &mut context,
                );
            }
        }
    }
    (context, not_shown)
}

fn push_diff(context: &mut Context, path: &str, diff: &str) {
    let base = Path::new(path)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    context.files.push(ContextFile {
        name: safe_name(&format!("{base}.diff")),
        content: cap_bytes(diff, HOOK_FILE_MAX),
    });
}

/// A path as shown: relative to the session's cwd when it is inside it, revealed as one line.
fn shown_path(path: &str, cwd: Option<&Path>, reveal: &mut Reveal) -> String {
    let relative = cwd
        .and_then(|c| Path::new(path).strip_prefix(c).ok())
        .filter(|r| !r.as_os_str().is_empty());
    match relative {
        Some(r) => reveal.os(r.as_os_str(), Layout::Line),
        None => reveal.text(path, Layout::Line),
    }
}

/// One line of at most `max` characters, revealed (a control character or a line break shows
/// as an escape, not as a space), without spaces around it.
fn one_line(s: &str, max: usize, reveal: &mut Reveal) -> String {
    reveal
        .text(s, Layout::Line)
        .trim_matches(' ')
        .chars()
        .take(max)
        .collect()
}

/// The last `max` characters of `s` (the end of a path says most).
fn tail(s: &str, max: usize) -> String {
    let n = s.chars().count();
    s.chars().skip(n.saturating_sub(max)).collect()
}

/// A unified diff of `old` → `new` (whole lines), with three lines of context; line numbers
/// start after `offset` lines (where an edit's fragment sits in its file).
pub fn unified_diff(old: &str, new: &str, from: &str, to: &str, offset: usize) -> String {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let ops = diff_lines(&a, &b);
    let mut out = format!("--- {from}\n+++ {to}\n");
    const CONTEXT: usize = 3;
    let mut hunks: Vec<(usize, usize)> = Vec::new();
    for (i, _) in ops.iter().enumerate().filter(|(_, (k, _))| *k != ' ') {
        let (start, end) = (i.saturating_sub(CONTEXT), (i + CONTEXT + 1).min(ops.len()));
        match hunks.last_mut() {
            Some(h) if start <= h.1 => h.1 = h.1.max(end),
            _ => hunks.push((start, end)),
        }
    }
    if hunks.is_empty() {
        out.push_str("(no change)\n");
        return out;
    }
    // The old and new line number before each op.
    let mut old_no = vec![offset; ops.len() + 1];
    let mut new_no = vec![offset; ops.len() + 1];
    for (i, (k, _)) in ops.iter().enumerate() {
        old_no[i + 1] = old_no[i] + usize::from(*k != '+');
        new_no[i + 1] = new_no[i] + usize::from(*k != '-');
    }
    for (s, e) in hunks {
        let (old_len, new_len) = (old_no[e] - old_no[s], new_no[e] - new_no[s]);
        let start = |no: usize, len: usize| if len == 0 { no } else { no + 1 };
        out.push_str(&format!(
            "@@ -{},{old_len} +{},{new_len} @@\n",
            start(old_no[s], old_len),
            start(new_no[s], new_len)
        ));
        for (k, line) in &ops[s..e] {
            out.push(*k);
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// The line operations (' ' kept, '-' removed, '+' added) of a longest common subsequence;
/// past a size where that costs too much, every old line removed and every new one added.
fn diff_lines<'a>(a: &[&'a str], b: &[&'a str]) -> Vec<(char, &'a str)> {
    let (n, m) = (a.len(), b.len());
    if n.saturating_mul(m) > 4_000_000 {
        return a
            .iter()
            .map(|l| ('-', *l))
            .chain(b.iter().map(|l| ('+', *l)))
            .collect();
    }
    let w = m + 1;
    let mut lcs = vec![0u32; (n + 1) * w];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i * w + j] = if a[i] == b[j] {
                lcs[(i + 1) * w + j + 1] + 1
            } else {
                lcs[(i + 1) * w + j].max(lcs[i * w + j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::with_capacity(n + m);
    while i < n && j < m {
        if a[i] == b[j] {
            out.push((' ', a[i]));
            i += 1;
            j += 1;
        } else if lcs[(i + 1) * w + j] >= lcs[i * w + j + 1] {
            out.push(('-', a[i]));
            i += 1;
        } else {
            out.push(('+', b[j]));
            j += 1;
        }
    }
    out.extend(a[i..].iter().map(|l| ('-', *l)));
    out.extend(b[j..].iter().map(|l| ('+', *l)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::AskError;

    #[test]
    fn a_diff_has_hunks_with_context_and_line_numbers() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n";
        let new = "a\nb\nc\nd\nE\nf\ng\nh\ni\nj\nk\n";
        assert_eq!(
            unified_diff(old, new, "x.rs", "x.rs", 0),
            "--- x.rs\n+++ x.rs\n@@ -2,9 +2,10 @@\n b\n c\n d\n-e\n+E\n f\n g\n h\n i\n j\n+k\n"
        );
        assert_eq!(
            unified_diff("", "new\n", "/dev/null", "n.txt", 0),
            "--- /dev/null\n+++ n.txt\n@@ -0,0 +1,1 @@\n+new\n"
        );
        assert_eq!(
            unified_diff("x", "y", "f", "f", 41),
            "--- f\n+++ f\n@@ -42,1 +42,1 @@\n-x\n+y\n"
        );
        assert!(unified_diff("same", "same", "f", "f", 0).ends_with("(no change)\n"));
    }

    #[test]
    fn verdicts_become_decisions() {
        let d = |v: Verdict| decision_for(v, OnExpire::Deny);
        assert_eq!(
            d(Verdict::Allowed { by: "alice".into() }),
            Decision::new("allow", "Allowed by alice via askrelay")
        );
        assert_eq!(
            d(Verdict::Denied {
                by: "alice".into(),
                reason: Some("use the staging db".into())
            }),
            Decision::new("deny", "use the staging db")
        );
        let expired = || Verdict::Failed(AskError::new(ErrorCode::Expired, "route ran out"));
        assert_eq!(d(expired()).permission, "deny");
        assert_eq!(decision_for(expired(), OnExpire::Ask).permission, "ask");
        let none = Verdict::Failed(AskError::new(ErrorCode::NoAnswerer, "nothing"));
        assert_eq!(d(none).permission, "ask");
        assert_eq!(d(Verdict::Unreachable("down".into())).permission, "ask");
        assert_eq!(
            Decision::new("deny", "no").to_line(),
            r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no"}}"#
        );
    }
}
