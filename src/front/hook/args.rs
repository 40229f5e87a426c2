//! The hooks' command lines (`askrelay hook claude-code|codex|copilot`): their flags, and the
//! help text with the settings each agent needs.

use super::CopilotEvent;
use clap::{Args, Subcommand, ValueEnum};

pub const HOOK_EXAMPLES: &str = "\
Reads a Claude Code hook event on stdin and prints Claude Code's decision on
stdout. It answers three kinds of event:
  PermissionRequest (recommended): fires only when Claude Code would ask you.
    The choices are Allow once, one option that keeps everything Claude Code
    suggests (Always allow: A + B …, or Allow for this session: …), the rule
    alone where that is enough, Deny, Deny and stop, and Other… (denies with
    your words). Without an answer: no decision, and
    Claude Code shows its own dialog.
  PreToolUse: asks before every matching tool call, even ones Claude Code would
    run without asking (\"always ask about X\"): allow, deny (with what was
    typed under Other…), or ask (Claude Code's own prompt) when askrelay cannot
    get an answer. On EXPIRED it denies, or asks with --on-expire ask.
  AskUserQuestion (Claude Code's own questions, on either event): asked as they
    are; the answers go back to Claude. Without an answer: no decision (Claude
    Code asks itself).
  PermissionDenied (auto mode's classifier denied a call): Allow once or Deny.
    Allow once mints a one-use grant for that exact call and answers retry;
    anything else leaves the denial. With --once-grants-only, a PreToolUse hook
    allows the retried call from its grant, once, and otherwise decides nothing.
It always exits 0. `askrelay setup claude-code` writes the settings for you.

In .claude/settings.json (timeout is in seconds; keep --timeout below it):
  {\"hooks\": {
    \"PermissionRequest\": [{\"matcher\": \"*\", \"hooks\": [{\"type\": \"command\",
      \"command\": \"askrelay hook claude-code --timeout 590\", \"timeout\": 600}]}],
    \"PreToolUse\": [{\"matcher\": \"AskUserQuestion\", \"hooks\": [{\"type\": \"command\",
      \"command\": \"askrelay hook claude-code --timeout 590\", \"timeout\": 600}]}]}}

Examples:
  askrelay hook claude-code < event.json
  askrelay hook claude-code --project infra-prod --on-expire ask";

pub const CODEX_EXAMPLES: &str = "\
Reads a Codex PreToolUse hook event on stdin (Codex runs hooks with
`[features] hooks = true` in config.toml) and prints Codex's decision: nothing
when a person allows (Codex refuses an explicit allow), a deny with the reason
otherwise (what was typed under Other…). Without an answer (the daemon is down,
NO_ANSWERER, --timeout) it prints nothing and Codex's own approval policy
decides; --fail-closed denies instead. It always exits 0.
`askrelay setup codex` writes the settings for you.

In $CODEX_HOME/hooks.json:
  {\"hooks\": {\"PreToolUse\": [{\"matcher\": \".*\", \"hooks\": [{\"type\": \"command\",
    \"command\": \"askrelay hook codex --fail-closed --timeout 590\",
    \"timeout\": 600}]}]}}

Examples:
  askrelay hook codex < event.json
  askrelay hook codex --fail-closed --project infra-prod";

pub const COPILOT_EXAMPLES: &str = "\
Reads a GitHub Copilot CLI hook event on stdin and prints Copilot's decision:
  preToolUse: {\"permissionDecision\":\"allow\"} or \"deny\" with the reason.
  permissionRequest (only when Copilot would ask): {\"behavior\":\"allow\"} or
    {\"behavior\":\"deny\",\"message\":…}.
  agentStop: a reply from chat ({\"decision\":\"block\",\"reason\":…}) on a route
    with stop_replies; otherwise the turn ends.
  postToolUse, userPromptSubmitted, sessionEnd: withdraw the questions the agent
    no longer waits for.
Without an answer it prints nothing (Copilot's own approval); --fail-closed
denies instead. It always exits 0. `askrelay setup copilot` writes the settings.

In $COPILOT_HOME/settings.json (~/.copilot/settings.json):
  {\"hooks\": {\"preToolUse\": [{\"type\": \"command\",
    \"bash\": \"askrelay hook copilot --event pre-tool-use --timeout 590\",
    \"timeoutSec\": 600}]}}

Examples:
  askrelay hook copilot --event pre-tool-use < event.json
  askrelay hook copilot --event permission-request --fail-closed";

#[derive(Debug, Args)]
pub struct HookArgs {
    #[command(subcommand)]
    pub kind: HookKind,
}

#[derive(Debug, Subcommand)]
pub enum HookKind {
    /// A Claude Code hook: PermissionRequest and PreToolUse events, and Claude Code's own
    /// AskUserQuestion, answered by people.
    #[command(after_help = HOOK_EXAMPLES)]
    ClaudeCode(ClaudeCodeArgs),
    /// A Codex PreToolUse hook: ask people whether a tool call may run.
    #[command(after_help = CODEX_EXAMPLES)]
    Codex(CodexArgs),
    /// A GitHub Copilot CLI hook: preToolUse, permissionRequest and agentStop.
    #[command(after_help = COPILOT_EXAMPLES)]
    Copilot(CopilotArgs),
}

#[derive(Debug, Args)]
pub struct ClaudeCodeArgs {
    /// Deny, in the event's own shape, when askrelay cannot get an answer (bad config, the
    /// daemon is down, an unreadable event, NO_ANSWERER, --timeout), instead of leaving it to
    /// Claude Code's own prompt.
    #[arg(long)]
    pub fail_closed: bool,
    /// What to answer when the request expires (a route's expiry policy): deny, or ask
    /// (Claude Code's own prompt).
    #[arg(long, value_enum, default_value_t = OnExpire::Deny)]
    pub on_expire: OnExpire,
    /// On PreToolUse, only allow a call that a one-use grant covers (auto mode's retried call,
    /// allowed once by a person) and otherwise decide nothing: ask nobody, never deny.
    #[arg(long)]
    pub once_grants_only: bool,
    #[command(flatten)]
    pub common: CommonArgs,
}

#[derive(Debug, Args)]
pub struct CodexArgs {
    /// Deny the tool call when askrelay cannot get an answer (the daemon is down,
    /// NO_ANSWERER, --timeout, expiry), instead of leaving it to Codex's own approval policy.
    #[arg(long)]
    pub fail_closed: bool,
    #[command(flatten)]
    pub common: CommonArgs,
}

#[derive(Debug, Args)]
pub struct CopilotArgs {
    /// The Copilot event this hook is registered on (default: told from the event's fields).
    #[arg(long, value_enum)]
    pub event: Option<CopilotEvent>,
    /// Deny the tool call when askrelay cannot get an answer (the daemon is down,
    /// NO_ANSWERER, --timeout), instead of leaving it to Copilot's own approval.
    #[arg(long)]
    pub fail_closed: bool,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// What every hook takes.
#[derive(Debug, Args)]
pub struct CommonArgs {
    /// Cancel the request after SECS without an answer; set it below the hook's `timeout` in
    /// the agent's settings, which kills the hook.
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
