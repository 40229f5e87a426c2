//! `askrelay hook claude-code`, `askrelay hook codex` and `askrelay hook copilot` (see
//! [`copilot`]): hook commands that put an agent's
//! questions and permission prompts in front of people.
//!
//! Each reads one hook event (JSON) on stdin and prints the agent's decision on stdout:
//!
//! - **Claude Code, `PreToolUse`** (<https://code.claude.com/docs/en/hooks>, "PreToolUse
//!   decision control"): for a tool call, "Allow <tool>?" with `Allow` and `Deny`, and what the
//!   tool would do as context (the command for Bash; the file and a diff for Edit, MultiEdit
//!   and Write; the input as JSON for anything else); it prints
//!   `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":…,
//!   "permissionDecisionReason":…}}`. Free text (`Other…`) denies, with the person's words as
//!   the reason. When askrelay cannot get an answer it answers `ask`, Claude Code's own prompt.
//! - **Claude Code's own questions** (its `AskUserQuestion` tool, on `PreToolUse` or
//!   `PermissionRequest`): the questions are asked as they are, and the answers go back as
//!   `updatedInput`: the tool's input with `answers`, a map from each question's text to the
//!   chosen label (several joined with ", "; free text as typed). Without an answer there is no
//!   decision, and Claude Code asks in its own terminal: never a made-up answer.
//! - **Claude Code, `PermissionRequest`** (only when Claude Code would ask): "Allow once", one
//!   option that keeps all of Claude Code's `permission_suggestions` ("Always allow: A + B + …",
//!   or "Allow for this session: …"), the rule alone where it is enough, "Deny", and "Deny and
//!   stop"; free text denies with the person's words.
//!   It prints `{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{…}}}`;
//!   without an answer, no decision (Claude Code's own dialog).
//! - **Claude Code's auto mode, `PermissionDenied`** ([`denied`]): "Allow once" mints a
//!   one-use grant for the denied call and answers `retry: true`; the retried call's
//!   `PreToolUse` (`--once-grants-only`) is allowed from the grant, once.
//! - **Codex, `PreToolUse`**: `Allow` and `Deny` as for Claude Code, in the shape Codex accepts:
//!   nothing on allow (Codex rejects `permissionDecision: "allow"`), and a `deny` with the
//!   reason; without an answer, nothing (Codex's own approval policy decides).
//!
//! It always exits 0, so that the agent reads what it printed. What it shows is what the tool
//! would get: every text from the event goes through one [`Reveal`], so hidden characters show
//! as escapes (`⟨U+202E⟩`) and the question is flagged. A file on disk is read only through
//! [`super::disk`]: a regular file, at most 1 MiB, within a few seconds.

use super::{follow, Ended, Verdict};
use crate::client::Target;
use crate::domain::model::MAX_SCOPE_VALUE_CHARS;
use crate::domain::text::{Escaped, Layout, Reveal};
use crate::domain::{Ask, ErrorCode, Scope};
use serde::Deserialize;
use serde_json::{json, Value};
use std::io::Read;
use std::path::Path;
use std::time::Duration;

mod args;
mod codex;
mod context;
mod copilot;
mod denied;
mod permission;
mod questions;
mod stop;

pub use args::{
    ClaudeCodeArgs, CodexArgs, CommonArgs, CopilotArgs, HookArgs, HookKind, OnExpire,
    CODEX_EXAMPLES, COPILOT_EXAMPLES, HOOK_EXAMPLES,
};
use codex::codex;
pub use context::unified_diff;
use copilot::copilot;
pub use copilot::CopilotEvent;
use permission::{permission_request, tool_call};
use questions::{questions, Shape};
pub mod withdraw;

pub use crate::domain::approval::{ALLOW, ALLOW_ONCE, DENY, DENY_AND_STOP};

/// A file of the context (a diff, a long command) is cut to this, so that the whole ask stays
/// well inside the socket's default 1 MiB line.
const HOOK_FILE_MAX: usize = 256 * 1024;

/// The agent that runs the hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agent {
    ClaudeCode,
    Codex,
    Copilot,
}

impl Agent {
    fn name(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "claude-code",
            Agent::Codex => "codex",
            Agent::Copilot => "copilot",
        }
    }

    fn title(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "Claude Code",
            Agent::Codex => "Codex",
            Agent::Copilot => "Copilot",
        }
    }
}

/// The fields of a hook event askrelay uses; the others are ignored.
#[derive(Debug, Deserialize)]
pub(super) struct HookEvent {
    #[serde(default)]
    hook_event_name: Option<String>,
    /// Absent on UserPromptSubmit, Stop and SessionEnd.
    #[serde(default)]
    tool_name: String,
    #[serde(default)]
    tool_input: Value,
    #[serde(default)]
    tool_use_id: Option<String>,
    #[serde(default)]
    cwd: Option<String>,
    #[serde(default)]
    session_id: Option<String>,
    /// PermissionRequest: what Claude Code would offer to remember ("always allow").
    #[serde(default)]
    permission_suggestions: Vec<Value>,
    /// PermissionDenied: why auto mode's classifier denied the call.
    #[serde(default)]
    reason: Option<String>,
    /// The session's permission mode (`default`, `auto`, …).
    #[serde(default)]
    permission_mode: Option<String>,
}

/// Runs the hook and returns the exit code (always 0: the decision is on stdout).
pub async fn run(config_file: Option<&Path>, args: HookArgs) -> i32 {
    let reply = match args.kind {
        HookKind::ClaudeCode(a) => claude_code(config_file, &a).await,
        HookKind::Codex(a) => codex(config_file, &a).await,
        HookKind::Copilot(a) => copilot(config_file, &a).await,
    };
    // The agent may be gone (its ends of stdout and stderr closed): nobody to tell, and no
    // panic over it.
    use std::io::Write;
    if let Some(line) = reply.to_line() {
        let _ = writeln!(std::io::stdout(), "{line}");
    }
    if let Some(note) = reply.note().filter(|n| !n.is_empty()) {
        let _ = writeln!(std::io::stderr(), "askrelay: {}", Escaped(note));
    }
    0
}

/// What the hook prints.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// Nothing on stdout: the agent decides as it would without the hook (its own prompt or
    /// policy). Why, on stderr.
    NoDecision(String),
    /// A PreToolUse decision: `allow`, `deny` or `ask`, with the input to run instead when
    /// given (Claude Code's questions with their answers).
    PreToolUse {
        permission: &'static str,
        reason: String,
        updated_input: Option<Value>,
    },
    /// A PermissionRequest decision: `{"behavior":"allow",…}` or `{"behavior":"deny",…}`.
    PermissionRequest { decision: Value, note: String },
    /// A line in the agent's own shape (Copilot's flat decisions).
    Line { line: Value, note: String },
    /// A Stop blocked with a person's reply (`{"decision":"block","reason":…}`): the agent
    /// carries on with the reply.
    Block { reason: String, note: String },
    /// A PermissionDenied event answered `retry: true`: the model may make the denied call
    /// again (a one-use grant lets it through).
    Retry { note: String },
}

impl Reply {
    fn pre(permission: &'static str, reason: impl Into<String>) -> Reply {
        Reply::PreToolUse {
            permission,
            reason: reason.into(),
            updated_input: None,
        }
    }

    /// The JSON line the agent reads, if any.
    pub fn to_line(&self) -> Option<String> {
        match self {
            Reply::NoDecision(_) => None,
            Reply::PreToolUse {
                permission,
                reason,
                updated_input,
            } => {
                let mut out = json!({
                    "hookEventName": "PreToolUse",
                    "permissionDecision": permission,
                    "permissionDecisionReason": reason,
                });
                if let Some(input) = updated_input {
                    out["updatedInput"] = input.clone();
                }
                Some(json!({ "hookSpecificOutput": out }).to_string())
            }
            Reply::PermissionRequest { decision, .. } => Some(
                json!({"hookSpecificOutput": {
                    "hookEventName": "PermissionRequest",
                    "decision": decision,
                }})
                .to_string(),
            ),
            Reply::Block { reason, .. } => {
                Some(json!({"decision": "block", "reason": reason}).to_string())
            }
            Reply::Line { line, .. } => Some(line.to_string()),
            Reply::Retry { .. } => Some(
                json!({"hookSpecificOutput": {
                    "hookEventName": "PermissionDenied",
                    "retry": true,
                }})
                .to_string(),
            ),
        }
    }

    /// What to say on stderr: why there is no decision, or what the decision was.
    fn note(&self) -> Option<&str> {
        match self {
            Reply::NoDecision(why) => Some(why),
            Reply::PreToolUse { .. } => None,
            Reply::PermissionRequest { note, .. } => Some(note),
            Reply::Block { note, .. } => Some(note),
            Reply::Line { note, .. } => Some(note),
            Reply::Retry { note } => Some(note),
        }
    }
}

/// The kind of event on stdin, as far as askrelay can tell: it decides the shape of every
/// answer, a failure's included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// A PreToolUse event for a tool call.
    PreToolUseCall,
    /// A PreToolUse event for Claude Code's AskUserQuestion.
    PreToolUseQuestion,
    /// A PermissionRequest event (a tool call's or AskUserQuestion's).
    PermissionRequest,
    /// A PermissionDenied event: auto mode's classifier denied a tool call.
    PermissionDenied,
    /// Another event, or one whose name cannot be read.
    Other,
}

impl EventKind {
    /// The kind of the raw event: from its JSON, or, when that is bad, from the text of its
    /// `hook_event_name` and `tool_name` fields. A JSON object without `hook_event_name` is a
    /// PreToolUse event (older agents); text that names no event is `Other`.
    pub fn sniff(raw: &str) -> EventKind {
        let (name, tool) = match serde_json::from_str::<Value>(raw) {
            Ok(Value::Object(o)) => (
                Some(
                    o.get("hook_event_name")
                        .and_then(Value::as_str)
                        .unwrap_or("PreToolUse")
                        .to_owned(),
                ),
                o.get("tool_name")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            ),
            Ok(_) => (None, None),
            Err(_) => (
                string_field(raw, "hook_event_name"),
                string_field(raw, "tool_name"),
            ),
        };
        match (name.as_deref(), tool.as_deref()) {
            (Some("PreToolUse"), Some("AskUserQuestion")) => EventKind::PreToolUseQuestion,
            (Some("PreToolUse"), _) => EventKind::PreToolUseCall,
            (Some("PermissionRequest"), _) => EventKind::PermissionRequest,
            (Some("PermissionDenied"), _) => EventKind::PermissionDenied,
            _ => EventKind::Other,
        }
    }
}

/// The value of `"key": "value"` in text that may not be JSON (no escapes).
fn string_field(raw: &str, key: &str) -> Option<String> {
    let at = raw.find(&format!("\"{key}\""))? + key.len() + 2;
    let rest = raw[at..].trim_start().strip_prefix(':')?.trim_start();
    let rest = rest.strip_prefix('"')?;
    let end = rest.find('"')?;
    Some(rest[..end].to_owned())
}

/// What the hook answers when askrelay cannot decide (`why`), in the event's own shape:
/// Claude Code's PreToolUse tool call gets `ask` (its own prompt); everything else gets
/// nothing (the agent decides as it would without the hook). `fail_closed` denies instead, in
/// the event's shape; an event of no known kind still gets nothing, and so does
/// PermissionDenied, whose "nothing" already is the deny (auto mode's denial stands).
pub fn no_decision(kind: EventKind, agent: Agent, fail_closed: bool, why: &str) -> Reply {
    if fail_closed {
        let message = format!("askrelay: {why}; denied (--fail-closed)");
        return match kind {
            EventKind::PreToolUseCall | EventKind::PreToolUseQuestion => {
                Reply::pre("deny", message)
            }
            EventKind::PermissionRequest => Reply::PermissionRequest {
                decision: json!({"behavior": "deny", "message": message}),
                note: message,
            },
            EventKind::PermissionDenied => {
                Reply::NoDecision(format!("{why}; auto mode's denial stands"))
            }
            EventKind::Other => Reply::NoDecision(format!(
                "{why}; no decision (not an event askrelay can answer)"
            )),
        };
    }
    match (kind, agent) {
        (EventKind::PreToolUseCall, Agent::ClaudeCode) => {
            Reply::pre("ask", format!("askrelay: {why}; asking here"))
        }
        (EventKind::PreToolUseCall, Agent::Codex) => {
            Reply::NoDecision(format!("{why}; no decision (Codex's own approval policy)"))
        }
        (EventKind::PreToolUseCall, Agent::Copilot) => {
            Reply::NoDecision(format!("{why}; no decision (Copilot's own approval)"))
        }
        (EventKind::PreToolUseQuestion, _) => Reply::NoDecision(format!(
            "{why}; no decision (Claude Code asks in its own terminal)"
        )),
        (EventKind::PermissionRequest, _) => {
            Reply::NoDecision(format!("{why}; no decision (Claude Code's own dialog)"))
        }
        (EventKind::PermissionDenied, _) => {
            Reply::NoDecision(format!("{why}; auto mode's denial stands"))
        }
        (EventKind::Other, _) => Reply::NoDecision(format!(
            "{why}; no decision (not an event askrelay can answer)"
        )),
    }
}

/// Reads the event on stdin, as text.
pub(super) fn read_stdin() -> Result<String, String> {
    let mut input = String::new();
    std::io::stdin()
        .read_to_string(&mut input)
        .map_err(|e| format!("cannot read the hook event: {e}"))?;
    Ok(input)
}

/// Parses an event.
pub(super) fn parse_event(raw: &str) -> Result<HookEvent, String> {
    serde_json::from_str(raw).map_err(|e| format!("the hook event is not one it knows: {e}"))
}

/// A lifecycle event (PostToolUse, Stop, …): withdraws the questions it ends. It decides
/// nothing, so every failure is nothing too, whatever the flags.
pub(super) async fn lifecycle(config_file: Option<&Path>, raw: &str, agent: &str) -> Reply {
    let event = match parse_event(raw) {
        Ok(e) => e,
        Err(e) => return Reply::NoDecision(e),
    };
    match Target::from_config(config_file).await {
        Ok(target) => withdraw::lifecycle(&target, &event, agent).await,
        Err(e) => Reply::NoDecision(format!("{e:#}; nothing withdrawn")),
    }
}

/// A Stop: withdraws the session's questions the agent no longer waits for, then, on a route
/// with `stop_replies`, asks for a reply that keeps the agent working. Every failure lets the
/// turn end (nothing on stdout).
pub(super) async fn end_of_turn(
    config_file: Option<&Path>,
    raw: &str,
    common: &CommonArgs,
    agent: Agent,
) -> Reply {
    if let Some(note) = lifecycle(config_file, raw, agent.name()).await.note() {
        eprintln!("askrelay: {note}");
    }
    let event: stop::StopEvent = match serde_json::from_str(raw) {
        Ok(e) => e,
        Err(e) => {
            return Reply::NoDecision(format!(
                "the Stop event is not one it knows: {e}; no decision (the turn ends)"
            ))
        }
    };
    match Target::from_config(config_file).await {
        Ok(t) => stop::stop(&t, &event, common, agent).await,
        Err(e) => Reply::NoDecision(format!("{e:#}; no decision (the turn ends)")),
    }
}

pub(super) async fn claude_code(config_file: Option<&Path>, args: &ClaudeCodeArgs) -> Reply {
    let agent = Agent::ClaudeCode;
    let raw = match read_stdin() {
        Ok(r) => r,
        Err(e) => return no_decision(EventKind::Other, agent, args.fail_closed, &e),
    };
    let kind = EventKind::sniff(&raw);
    if args.once_grants_only {
        return once_grant_only(config_file, &raw, kind).await;
    }
    let fail = |why: String| no_decision(kind, agent, args.fail_closed, &why);
    if kind == EventKind::Other {
        let name = string_field(&raw, "hook_event_name").unwrap_or_else(|| "(none)".into());
        if name == "Stop" {
            return end_of_turn(config_file, &raw, &args.common, agent).await;
        }
        if withdraw::reason_of(&name).is_some() {
            return lifecycle(config_file, &raw, "claude-code").await;
        }
        return Reply::NoDecision(format!(
            "hook claude-code answers PreToolUse and PermissionRequest events, not {}; \
             no decision (Claude Code decides as it would without this hook)",
            Escaped(&name)
        ));
    }
    let event = match parse_event(&raw) {
        Ok(e) => e,
        Err(e) => return fail(e),
    };
    let target = match Target::from_config(config_file).await {
        Ok(t) => t,
        Err(e) => return fail(format!("{e:#}")),
    };
    let reply = match kind {
        EventKind::PreToolUseQuestion => {
            questions(&target, &event, &args.common, agent, Shape::PreToolUse).await
        }
        EventKind::PermissionRequest if event.tool_name == "AskUserQuestion" => {
            questions(&target, &event, &args.common, agent, Shape::Permission).await
        }
        EventKind::PermissionRequest => permission_request(&target, &event, &args.common).await,
        EventKind::PermissionDenied => {
            denied::permission_denied(&target, &event, &args.common).await
        }
        _ => {
            let verdict = tool_call(&target, &event, &args.common, agent).await;
            match verdict {
                // The approver edited the command: Claude Code runs the edited one.
                Verdict::Allowed {
                    by,
                    edited: Some(command),
                } => match permission::edited_input(&event, &command) {
                    Some(input) => Reply::PreToolUse {
                        permission: "allow",
                        reason: format!("Allowed by {by}, edited to: {command}"),
                        updated_input: Some(input),
                    },
                    None => Reply::pre("deny", permission::edit_not_applied(&by)),
                },
                Verdict::Unreachable(why) => fail(format!("{why}; start it with `askrelay serve`")),
                Verdict::TimedOut(after) => {
                    fail(format!("nobody answered within {} s", after.as_secs()))
                }
                Verdict::Failed(e)
                    if e.code != ErrorCode::Expired && e.code != ErrorCode::Aborted =>
                {
                    fail(format!("{}: {}", e.code, e.message))
                }
                verdict => decision_for(verdict, args.on_expire),
            }
        }
    };
    // Questions and permission requests answer nothing when they fail; closed, that is a deny.
    match reply {
        Reply::NoDecision(why) if args.fail_closed => fail(why),
        reply => reply,
    }
}

/// `--once-grants-only`: a PreToolUse tool call that a one-use grant covers is allowed (the
/// grant is used up); anything else, and every failure, is no decision, whatever the other
/// flags say: this hook only ever lets auto mode's retried call through.
async fn once_grant_only(config_file: Option<&Path>, raw: &str, kind: EventKind) -> Reply {
    if kind != EventKind::PreToolUseCall {
        return Reply::NoDecision(
            "--once-grants-only answers only PreToolUse tool calls; no decision".into(),
        );
    }
    let event = match parse_event(raw) {
        Ok(e) => e,
        Err(e) => return Reply::NoDecision(format!("{e}; no decision")),
    };
    // A grant comes from auto mode's denial, and its retry follows at once in the same mode.
    if event
        .permission_mode
        .as_deref()
        .is_some_and(|m| m != "auto")
    {
        return Reply::NoDecision(String::new());
    }
    let target = match Target::from_config(config_file).await {
        Ok(t) => t,
        Err(e) => return Reply::NoDecision(format!("{e:#}; no one-use grant looked for")),
    };
    match denied::use_grant(&target, &event).await {
        Ok(Some(grant)) => denied::allowed_by(&grant),
        Ok(None) => Reply::NoDecision(String::new()),
        Err(e) => Reply::NoDecision(format!("{e}; no one-use grant looked for")),
    }
}

/// An agent event's own shapes of an allow, a deny and no answer (Codex's and Copilot's hooks).
pub(super) trait Shapes: Copy {
    fn allow(self, by: &str) -> Reply;
    fn deny(self, message: String) -> Reply;
    /// No answer: nothing, or with `--fail-closed` a deny, where the event decides anything.
    fn fallback(self, why: String, fail_closed: bool) -> Reply;
}

/// What a hook whose agent has its own shapes (Codex, Copilot) answers for a verdict.
pub(super) fn answer_in(kind: impl Shapes, verdict: Verdict, fail_closed: bool) -> Reply {
    match verdict {
        Verdict::Allowed { by, edited: None } => kind.allow(&by),
        // Codex is never offered Edit…; an edit it cannot run is not the command asked.
        Verdict::Allowed {
            by,
            edited: Some(_),
        } => kind.deny(permission::edit_not_applied(&by)),
        Verdict::Denied { by, reason } => kind.deny(denied_by(&by, reason.as_deref())),
        Verdict::Failed(e) if e.code == ErrorCode::Expired => {
            kind.deny(format!("askrelay: nobody answered in time ({})", e.message))
        }
        Verdict::Failed(e) if e.code == ErrorCode::Aborted => kind.deny(format!(
            "askrelay: the request was cancelled ({})",
            e.message
        )),
        Verdict::Failed(e) => kind.fallback(format!("{}: {}", e.code, e.message), fail_closed),
        Verdict::Unreachable(why) => kind.fallback(
            format!("{why}; start it with `askrelay serve`"),
            fail_closed,
        ),
        Verdict::TimedOut(after) => kind.fallback(
            format!("nobody answered within {} s", after.as_secs()),
            fail_closed,
        ),
    }
}

/// "Denied by alice on Discord", with what they typed.
pub(super) fn denied_by(by: &str, reason: Option<&str>) -> String {
    match reason {
        Some(r) => format!("Denied by {by}: {r}"),
        None => format!("Denied by {by}"),
    }
}

/// Asks and follows the request to its end, saying on stderr where it waits.
pub(super) async fn ask_and_follow(target: &Target, ask: Ask, args: &CommonArgs) -> Ended {
    let request_id = ask.request_id.clone().unwrap_or_default();
    follow(
        target,
        ask,
        Duration::from_secs(args.reconnect_secs),
        args.timeout.map(Duration::from_secs),
        |answerer, _| waiting(&request_id, answerer),
    )
    .await
}

pub(super) fn waiting(request_id: &str, answerer: &str) {
    eprintln!(
        "askrelay: request {} is waiting for an answer via {}",
        Escaped(request_id),
        Escaped(answerer)
    )
}

/// What the PreToolUse hook answers for a verdict.
pub fn decision_for(verdict: Verdict, on_expire: OnExpire) -> Reply {
    match verdict {
        Verdict::Allowed { by, edited: None } => Reply::pre("allow", format!("Allowed by {by}")),
        Verdict::Allowed {
            by,
            edited: Some(_),
        } => Reply::pre("deny", permission::edit_not_applied(&by)),
        Verdict::Denied { by, reason } => Reply::pre("deny", denied_by(&by, reason.as_deref())),
        Verdict::Failed(e) if e.code == ErrorCode::Expired => {
            let reason = format!("askrelay: nobody answered in time ({})", e.message);
            match on_expire {
                OnExpire::Deny => Reply::pre("deny", reason),
                OnExpire::Ask => Reply::pre("ask", reason),
            }
        }
        Verdict::Failed(e) if e.code == ErrorCode::Aborted => Reply::pre(
            "deny",
            format!("askrelay: the request was cancelled ({})", e.message),
        ),
        Verdict::Failed(e) => Reply::pre(
            "ask",
            format!("askrelay: {}: {}; asking here", e.code, e.message),
        ),
        Verdict::Unreachable(why) => Reply::pre(
            "ask",
            format!("askrelay: {why}; start it with `askrelay serve`; asking here"),
        ),
        Verdict::TimedOut(after) => Reply::pre(
            "ask",
            format!(
                "askrelay: nobody answered within {} s; asking here",
                after.as_secs()
            ),
        ),
    }
}

/// Why a request got no answer, for stderr.
pub(super) fn no_answer(ended: &Ended, fallback: &str) -> String {
    let why = match ended {
        Ended::Answered { .. } => "answered".to_owned(),
        Ended::Failed(e) => format!("{}: {}", e.code, e.message),
        Ended::Unreachable(why) => format!("{why}; start it with `askrelay serve`"),
        Ended::TimedOut(after) => format!("nobody answered within {} s", after.as_secs()),
    };
    format!("{why}; no decision ({fallback})")
}

/// The first question's answer in a result (docs/contract.md, "Result JSON").
pub(super) struct FirstAnswer {
    selected: Vec<String>,
    custom: Option<String>,
}

pub(super) fn first_answer(result: &str) -> FirstAnswer {
    let parsed: Value = serde_json::from_str(result).unwrap_or_default();
    let a = &parsed["answers"][0];
    FirstAnswer {
        selected: a["selected"]
            .as_array()
            .map(|v| {
                v.iter()
                    .filter_map(|s| s.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default(),
        custom: a["custom"].as_str().map(str::to_owned),
    }
}

/// The daemon's own rules, so that a problem shows here, named, instead of as a refusal.
pub(super) fn validated(ask: Ask) -> Result<Ask, String> {
    ask.validate(&crate::domain::model::Limits::NONE)
        .map_err(|e| e.message)?;
    Ok(ask)
}

/// The tool as named in a question: one line, revealed, at most 80 characters.
pub(super) fn tool_label(tool: &str) -> String {
    one_line(tool, 80, &mut Reveal::default())
}

/// One request per tool call: a hook run again for the same call re-attaches. Claude Code's
/// PermissionRequest carries no tool_use_id: each is a request of its own.
pub(super) fn request_id(event: &HookEvent, agent: Agent, reveal: &mut Reveal) -> String {
    event
        .tool_use_id
        .as_deref()
        .map(|id| format!("{}-{}", agent.name(), reveal.text(id, Layout::Line)))
        .filter(|id| crate::domain::model::check_request_id(id).is_ok())
        .unwrap_or_else(|| format!("{}-{}", agent.name(), uuid::Uuid::new_v4()))
}

/// The scope labels of a hook's request: the tool, the project, the session and the cwd, and
/// `--scope` labels.
pub(super) fn scope_of(
    event: &HookEvent,
    args: &CommonArgs,
    reveal: &mut Reveal,
) -> Result<Scope, String> {
    let cwd = event.cwd.as_deref().map(Path::new);
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
                &one_line(&tail(v, MAX_SCOPE_VALUE_CHARS), usize::MAX, reveal),
                MAX_SCOPE_VALUE_CHARS,
            )
        });
        if let Some(v) = v.filter(|v| !v.is_empty()) {
            scope.insert(k.to_owned(), v);
        }
    }
    if let Some(session) = event.session_id.as_deref() {
        scope.insert(
            "call".to_owned(),
            withdraw::call_key(session, &event.tool_name, &event.tool_input),
        );
    }
    for kv in &args.scope {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| format!("--scope {kv:?}: expected KEY=VALUE"))?;
        scope.insert(k.to_owned(), reveal.text(v, Layout::Line));
    }
    Ok(scope)
}

/// One line of at most `max` characters, revealed (a control character or a line break shows
/// as an escape, not as a space), without spaces around it.
pub(super) fn one_line(s: &str, max: usize, reveal: &mut Reveal) -> String {
    reveal
        .text(s, Layout::Line)
        .trim_matches(' ')
        .chars()
        .take(max)
        .collect()
}

/// The last `max` characters of `s` (the end of a path says most).
pub(super) fn tail(s: &str, max: usize) -> String {
    let n = s.chars().count();
    s.chars().skip(n.saturating_sub(max)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::AskError;

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
    fn a_one_line_change_in_a_long_file_is_one_short_hunk() {
        let old: String = (1..=2100).map(|i| format!("line {i}\n")).collect();
        let new = old.replace("line 1050\n", "line 1050, changed\n");
        let diff = unified_diff(&old, &new, "big.txt", "big.txt", 0);
        assert_eq!(diff.matches("\n@@ ").count(), 1, "{diff}");
        assert!(
            diff.contains("@@ -1047,7 +1047,7 @@\n line 1047\n line 1048\n line 1049\n-line 1050\n+line 1050, changed\n line 1051\n"),
            "{diff}"
        );
        assert!(diff.len() < 300, "{} bytes: {diff}", diff.len());
        // Two changes far apart: two hunks, each with its own context.
        let two = new.replace("line 10\n", "line ten\n");
        let diff = unified_diff(&old, &two, "big.txt", "big.txt", 0);
        assert_eq!(diff.matches("\n@@ ").count(), 2, "{diff}");
    }

    fn permission(r: &Reply) -> &'static str {
        match r {
            Reply::PreToolUse { permission, .. } => permission,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn verdicts_become_decisions() {
        let d = |v: Verdict| decision_for(v, OnExpire::Deny);
        assert_eq!(
            d(Verdict::Allowed {
                edited: None,
                by: "alice on Discord".into()
            }),
            Reply::pre("allow", "Allowed by alice on Discord")
        );
        assert_eq!(
            d(Verdict::Denied {
                by: "alice on Discord".into(),
                reason: Some("use the staging db".into())
            }),
            Reply::pre("deny", "Denied by alice on Discord: use the staging db")
        );
        let expired = || Verdict::Failed(AskError::new(ErrorCode::Expired, "route ran out"));
        assert_eq!(permission(&d(expired())), "deny");
        assert_eq!(permission(&decision_for(expired(), OnExpire::Ask)), "ask");
        let none = Verdict::Failed(AskError::new(ErrorCode::NoAnswerer, "nothing"));
        assert_eq!(permission(&d(none)), "ask");
        assert_eq!(permission(&d(Verdict::Unreachable("down".into()))), "ask");
        assert_eq!(
            Reply::pre("deny", "no").to_line().unwrap(),
            r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no"}}"#
        );
        assert_eq!(Reply::NoDecision("down".into()).to_line(), None);
    }

    #[test]
    fn an_allowed_denial_answers_retry_in_permission_denieds_shape() {
        let line = Reply::Retry {
            note: "allowed once".into(),
        }
        .to_line()
        .unwrap();
        assert_eq!(
            line,
            r#"{"hookSpecificOutput":{"hookEventName":"PermissionDenied","retry":true}}"#
        );
        let grant = crate::domain::once_grant::OnceGrant {
            id: "og-0123456789ab".into(),
            session: "s".into(),
            call: "c".into(),
            tool: "Bash".into(),
            uid: 1000,
            approver: "alice (Discord user 1)".into(),
            request_key: 1,
            request_id: "claude-code-denied-toolu_00".into(),
            created_at_ms: 0,
            ends_at_ms: 1,
            used_at_ms: Some(1),
        };
        assert_eq!(
            denied::allowed_by(&grant),
            Reply::pre(
                "allow",
                "Allowed once by alice (Discord user 1) after auto mode's denial (one-use grant \
                 og-0123456789ab)"
            )
        );
    }

    #[test]
    fn the_event_kind_is_sniffed_even_from_bad_json() {
        use EventKind::*;
        let sniff = EventKind::sniff;
        assert_eq!(
            sniff(r#"{"hook_event_name":"PreToolUse","tool_name":"Bash"}"#),
            PreToolUseCall
        );
        assert_eq!(sniff(r#"{"tool_name":"Bash"}"#), PreToolUseCall);
        assert_eq!(
            sniff(r#"{"hook_event_name": "PreToolUse", "tool_name": "AskUserQuestion"}"#),
            PreToolUseQuestion
        );
        assert_eq!(
            sniff(r#"{"hook_event_name" : "PermissionRequest", "tool_name": "Ba"#),
            PermissionRequest
        );
        assert_eq!(
            sniff(r#"{"tool_name": "AskUserQuestion", "hook_event_name": "PreToolUse""#),
            PreToolUseQuestion
        );
        assert_eq!(
            sniff(r#"{"hook_event_name":"PermissionDenied","tool_name":"Bash"}"#),
            PermissionDenied
        );
        assert_eq!(sniff(r#"{"hook_event_name":"PostToolUse"}"#), Other);
        assert_eq!(sniff("not json"), Other);
        assert_eq!(sniff("[1]"), Other);
        assert_eq!(sniff(""), Other);
    }

    #[test]
    fn no_decision_answers_in_the_events_shape() {
        use EventKind::*;
        let line = |k, a, closed| no_decision(k, a, closed, "why").to_line();
        let pre = |l: Option<String>| -> Value {
            serde_json::from_str::<Value>(&l.unwrap()).unwrap()["hookSpecificOutput"].clone()
        };
        let d = pre(line(PreToolUseCall, Agent::ClaudeCode, false));
        assert_eq!(
            (
                d["hookEventName"].as_str(),
                d["permissionDecision"].as_str()
            ),
            (Some("PreToolUse"), Some("ask"))
        );
        assert_eq!(line(PreToolUseCall, Agent::Codex, false), None);
        assert_eq!(line(PreToolUseQuestion, Agent::ClaudeCode, false), None);
        assert_eq!(line(PermissionRequest, Agent::ClaudeCode, false), None);
        assert_eq!(line(Other, Agent::ClaudeCode, false), None);
        assert_eq!(line(Other, Agent::ClaudeCode, true), None);
        // Auto mode's denial stands: nothing, closed or not (no `retry`).
        assert_eq!(line(PermissionDenied, Agent::ClaudeCode, false), None);
        assert_eq!(line(PermissionDenied, Agent::ClaudeCode, true), None);
        for k in [PreToolUseCall, PreToolUseQuestion] {
            assert_eq!(
                pre(line(k, Agent::ClaudeCode, true))["permissionDecision"],
                "deny"
            );
        }
        let d = pre(line(PermissionRequest, Agent::ClaudeCode, true));
        assert_eq!(d["hookEventName"], "PermissionRequest");
        assert_eq!(d["decision"]["behavior"], "deny");
        assert_eq!(
            d["decision"]["message"],
            "askrelay: why; denied (--fail-closed)"
        );
        assert!(d.get("permissionDecision").is_none());
    }
}
