//! The command line (docs/contract.md, "CLI"): `serve` runs the daemon; every other command is a client of its
//! socket, speaking the protocol's own types through [`crate::client`]. Each command returns its
//! process exit code. Everything an agent wrote is printed with its control characters escaped.

use crate::client::{AskSession, AskUpdate, Client, Target};
use crate::core::model::{parse_ask, QuestionKind};
use crate::core::text::Escaped;
use crate::core::ErrorCode;
use crate::protocol::{Event, Op, RequestView};
use anyhow::Result;
use clap::{Args, Parser, Subcommand};
use serde_json::{json, Map, Value};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use crate::core::error::EXIT_UNREACHABLE;

const ASK_EXAMPLES: &str = "\
Exit codes:
  0  answered (the result JSON is on stdout)
  2  INVALID_REQUEST     3  DELEGATED_CALLER   4  NO_ANSWERER
  5  ABORTED             6  EXPIRED            7  the daemon cannot be reached
  1  anything else

Examples:
  echo '{\"questions\":[{\"id\":\"go\",\"question\":\"Deploy now?\",
    \"options\":[{\"label\":\"Yes (Recommended)\"},{\"label\":\"No\"}]}]}' | askrelay ask
  askrelay ask question.json --request-id deploy-42 --project infra-prod
  askrelay ask question.json --context 'Deploys 4.2 to prod' --context-file change.diff
Progress goes to stderr; only the result goes to stdout. Ctrl-C cancels the request.
Client commands read only socket_path and daemon_uid from --config FILE.";

#[derive(Debug, Parser)]
#[command(
    name = "askrelay",
    version,
    max_term_width = 100,
    about = "Lets AI agents ask people questions through Discord or the terminal",
    after_help = "Examples:
  askrelay serve --config /etc/askrelay/askrelay.toml
  askrelay ask question.json
  askrelay pending
  askrelay answer deploy-42 --select 'No, keep them'
  askrelay history --limit 5
  askrelay approve -- ./deploy.sh --env prod
  askrelay hook claude-code < pre-tool-use.json
  askrelay health

Client commands find the socket as the daemon does: ASKRELAY_SOCKET_PATH, else
socket_path in --config FILE, else $XDG_RUNTIME_DIR/askrelay.sock, else
/tmp/askrelay-$UID/askrelay.sock."
)]
pub struct Cli {
    /// The TOML config file (see config/askrelay.example.toml).
    #[arg(long, global = true, env = "ASKRELAY_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the daemon until SIGINT or SIGTERM.
    #[command(after_help = "Examples:
  askrelay serve
  askrelay serve --config config/askrelay.example.toml
  ASKRELAY_DISCORD__TOKEN=… ASKRELAY_DISCORD__CHANNEL_ID=123 askrelay serve
It reads the whole config file, then ASKRELAY_* variables. Logs go to stderr; set
ASKRELAY_LOG=debug (or RUST_LOG) for more. A second Ctrl-C stops without waiting.")]
    Serve,
    /// Verify the Discord token and channel access, then exit.
    #[command(after_help = "Examples:
  askrelay check-config --config /etc/askrelay/askrelay.toml
  ASKRELAY_DISCORD__TOKEN=… askrelay check-config
Prints one line per check; exits 0 when everything works, 1 otherwise.")]
    CheckConfig,
    /// Ask a question and wait for the answer (reads the ask_user_question input).
    #[command(after_help = ASK_EXAMPLES)]
    Ask(AskArgs),
    /// List pending requests and their questions.
    #[command(after_help = "Examples:
  askrelay pending
  askrelay pending --json | jq '.[].request_id'
You see the requests you asked; operators (operator_uids, root) see all of them.")]
    Pending {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Answer one question of a pending request from the terminal.
    #[command(after_help = "\
Exits 0 only when this answer was the one that counted; 1 when the question was already
answered or the request has ended (it says who answered), 2 for a bad request id, question
or option, 7 when the daemon cannot be reached. Who answered is recorded from your login
(uid and user name); --as only adds a note.

Examples:
  askrelay answer deploy-42 --select 'Yes, delete them (Recommended)'
  askrelay answer deploy-42 --select 2
  askrelay answer deploy-42 --question targets --select web --select db
  askrelay answer deploy-42 --question targets --select web --custom 'and canary'
  askrelay answer deploy-42 --question name --text 'call it v2'")]
    Answer(AnswerArgs),
    /// Cancel a pending request; its agent gets ABORTED.
    #[command(after_help = "Examples:
  askrelay cancel deploy-42
  askrelay cancel deploy-42 --reason 'asked the wrong team'
You may cancel the requests you asked; operators may cancel any.")]
    Cancel {
        /// The id of the request to cancel (see `askrelay pending`).
        request_id: String,
        /// Why; the agent sees it.
        #[arg(long)]
        reason: Option<String>,
    },
    /// Show recent requests, answered or not; or export them as JSON Lines.
    #[command(after_help = "Examples:
  askrelay history
  askrelay history --limit 100 --json
  askrelay history --json --since 2026-11-01 > requests.jsonl
With --since, --json prints one request per line (JSON Lines), newest first, every request
asked since DATE (no limit unless --limit is given), fetched page by page.")]
    History {
        /// How many requests to show, newest first (default 20; no limit with --since).
        #[arg(long)]
        limit: Option<u32>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Only requests asked at or after DATE (YYYY-MM-DD, or an RFC 3339 time such as
        /// 2026-11-01T12:00:00Z), in UTC.
        #[arg(long, value_name = "DATE")]
        since: Option<String>,
    },
    /// Ask the daemon whether it is healthy: its store, its Discord gateway, its backlog.
    #[command(
        after_help = "Exit codes: 0 healthy, 1 degraded (the failing part is named), 7 the
daemon cannot be reached. Suits a container HEALTHCHECK or a monitoring probe.

Examples:
  askrelay health
  askrelay health --json"
    )]
    Health {
        /// Print the daemon's JSON reply instead of lines.
        #[arg(long)]
        json: bool,
    },
    /// Serve ask_user_question over MCP on stdio, for Claude Code, Codex, Cursor and others.
    #[command(after_help = MCP_EXAMPLES)]
    Mcp(McpArgs),
    /// Hook commands for agents: Claude Code's and Codex's questions and permission prompts,
    /// answered by people.
    Hook(crate::front::hook::HookArgs),
    /// Write askrelay's hook and MCP server into Claude Code's or Codex's settings.
    Setup(crate::front::setup::SetupArgs),
    /// Ask whether to run a command, and run it only when a person approves.
    #[command(after_help = crate::front::approve::APPROVE_EXAMPLES)]
    Approve(crate::front::approve::ApproveArgs),
    /// Print a shell completion script.
    #[command(after_help = "Examples:
  askrelay completions bash > ~/.local/share/bash-completion/completions/askrelay
  askrelay completions zsh > \"${fpath[1]}/_askrelay\"
  askrelay completions fish > ~/.config/fish/completions/askrelay.fish")]
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff), for `man`.
    #[command(after_help = "Examples:
  askrelay man > /usr/local/share/man/man1/askrelay.1 && man askrelay
  askrelay man | man -l -")]
    Man,
}

/// `askrelay completions SHELL`: the script on stdout.
pub fn completions(shell: clap_complete::Shell) -> i32 {
    let mut cmd = <Cli as clap::CommandFactory>::command();
    clap_complete::generate(shell, &mut cmd, "askrelay", &mut std::io::stdout());
    0
}

/// `askrelay man`: the manual page of askrelay and each of its commands, on stdout.
pub fn man() -> i32 {
    let cmd = <Cli as clap::CommandFactory>::command();
    let mut out = std::io::stdout().lock();
    let mut render = |c: &clap::Command| clap_mangen::Man::new(c.clone()).render(&mut out);
    let mut result = render(&cmd);
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        result = result.and_then(|()| render(sub));
    }
    match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("askrelay: cannot write the manual page: {e}");
            1
        }
    }
}

const MCP_EXAMPLES: &str = "\
Speaks MCP (newline-delimited JSON-RPC) on stdin and stdout; logs go to stderr (ASKRELAY_LOG).
Each ask_user_question call is forwarded to the daemon, which must be running (askrelay serve).

Examples:
  claude mcp add askrelay -- askrelay mcp --project myproj
  codex mcp add askrelay -- askrelay mcp --project myproj
  askrelay mcp --project infra-prod --agent ops-bot --session \"$SESSION_ID\"
  ASKRELAY_SOCKET_PATH=/run/askrelay/askrelay.sock askrelay mcp";

#[derive(Debug, Args)]
pub struct McpArgs {
    /// scope.project of every question; routes match on it.
    #[arg(long, env = "ASKRELAY_SCOPE_PROJECT")]
    pub project: Option<String>,
    /// scope.agent of every question.
    #[arg(long, env = "ASKRELAY_SCOPE_AGENT")]
    pub agent: Option<String>,
    /// scope.session of every question.
    #[arg(long, env = "ASKRELAY_SCOPE_SESSION")]
    pub session: Option<String>,
    /// Another scope label, KEY=VALUE; repeatable.
    #[arg(long = "scope", value_name = "KEY=VALUE")]
    pub scope: Vec<String>,
    /// How long a waiting call keeps trying to re-attach when the daemon goes away.
    #[arg(long, default_value_t = 300, value_name = "SECS")]
    pub reconnect_secs: u64,
    /// How often a waiting call sends a progress notification, when the client asked for
    /// progress (0: only when something changes).
    #[arg(long, default_value_t = 30, value_name = "SECS")]
    pub progress_secs: u64,
}

#[derive(Debug, Args)]
pub struct AskArgs {
    /// A file holding {"questions":[...]}, or - for stdin (the default).
    #[arg(value_name = "FILE|-", default_value = "-")]
    pub input: String,
    /// Idempotency key; re-running with it re-attaches to the same request.
    #[arg(long)]
    pub request_id: Option<String>,
    /// caller.agent_id.
    #[arg(long)]
    pub agent_id: Option<String>,
    /// caller.owner_agent_id: set only for a sub-agent owned by another live agent.
    #[arg(long)]
    pub owner_agent_id: Option<String>,
    /// scope.project.
    #[arg(long, env = "ASKRELAY_SCOPE_PROJECT")]
    pub project: Option<String>,
    /// scope.agent.
    #[arg(long, env = "ASKRELAY_SCOPE_AGENT")]
    pub agent: Option<String>,
    /// scope.session.
    #[arg(long, env = "ASKRELAY_SCOPE_SESSION")]
    pub session: Option<String>,
    /// Another scope label, KEY=VALUE; repeatable.
    #[arg(long = "scope", value_name = "KEY=VALUE")]
    pub scope: Vec<String>,
    /// How long to keep trying to re-attach when the daemon goes away.
    #[arg(long, default_value_t = 300, value_name = "SECS")]
    pub reconnect_secs: u64,
    /// context.text: what is being approved, shown with the question (markdown, up to 16 KiB).
    #[arg(long = "context", value_name = "TEXT")]
    pub context: Option<String>,
    /// A text file for context.files (a diff, a plan); repeatable, up to 9, 1 MiB each.
    #[arg(long = "context-file", value_name = "PATH")]
    pub context_files: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub struct AnswerArgs {
    /// The id of the request to answer (see `askrelay pending`).
    pub request_id: String,
    /// The question's id; may be left out when the request has one question.
    #[arg(long)]
    pub question: Option<String>,
    /// An option, by its exact label or its number (1, 2, …); repeat for a multi-select
    /// question.
    #[arg(long = "select", value_name = "LABEL|N")]
    pub select: Vec<String>,
    /// Free text: the answer to a free-text question, instead of the options of a
    /// single-select question, or a note with the options of a multi-select question.
    #[arg(long, visible_alias = "text", value_name = "TEXT")]
    pub custom: Option<String>,
    /// A note shown with your answer (who you are is taken from your login, not from this).
    #[arg(long = "as", value_name = "NOTE")]
    pub note: Option<String>,
}

/// Runs a client command and returns the exit code.
pub async fn run_client(cli: Cli) -> i32 {
    let target = match Target::from_config(cli.config.as_deref()) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("askrelay: {e:#}");
            return 2;
        }
    };
    let result = match cli.command {
        Command::Serve
        | Command::CheckConfig
        | Command::Mcp(_)
        | Command::Hook(_)
        | Command::Setup(_)
        | Command::Approve(_)
        | Command::Completions { .. }
        | Command::Man => {
            unreachable!("run by main on its own")
        }
        Command::Ask(args) => ask(&target, args).await,
        Command::Pending { json } => pending(&target, json).await,
        Command::Answer(args) => answer(&target, args).await,
        Command::Cancel { request_id, reason } => cancel(&target, request_id, reason).await,
        Command::History { limit, json, since } => match since {
            Some(since) => export_history(&target, &since, limit, json).await,
            None => history(&target, limit.unwrap_or(20), json).await,
        },
        Command::Health { json } => health(&target, json).await,
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("askrelay: {}", Escaped(&format!("{e:#}")));
            1
        }
    }
}

fn unreachable_daemon(target: &Target, e: &std::io::Error) -> i32 {
    eprintln!(
        "askrelay: cannot reach the daemon at {}: {e}; start it with `askrelay serve`",
        target.socket.display()
    );
    EXIT_UNREACHABLE
}

async fn connect(target: &Target) -> Result<Client, i32> {
    Client::connect_to(target)
        .await
        .map_err(|e| unreachable_daemon(target, &e))
}

/// Prints an error and returns its exit code.
fn report_error(code: ErrorCode, message: &str) -> i32 {
    eprintln!("askrelay: {code}: {}", Escaped(message));
    code.exit_code()
}

/// Prints an unexpected reply and returns 1.
fn unexpected(event: &Event) -> i32 {
    match event {
        Event::Error { code, message, .. } => report_error(*code, message),
        other => {
            eprintln!(
                "askrelay: unexpected reply from the daemon: {}",
                Escaped(&other.to_line())
            );
            1
        }
    }
}

/// The ask to send: the input file's `{"questions":[...]}` with the flags merged in, checked
/// with the daemon's own rules (the daemon checks again, with its limits).
fn build_ask(args: &AskArgs) -> Result<crate::core::Ask, String> {
    let text = if args.input == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .map_err(|e| format!("cannot read the question from stdin: {e}"))?;
        s
    } else {
        std::fs::read_to_string(&args.input)
            .map_err(|e| format!("cannot read {}: {e}", args.input))?
    };
    let mut obj: Map<String, Value> = match serde_json::from_str(&text) {
        Ok(Value::Object(o)) => o,
        Ok(_) => return Err("the input must be a JSON object like {\"questions\":[...]}".into()),
        Err(e) => return Err(format!("the input is not valid JSON: {e}")),
    };
    let request_id = args
        .request_id
        .clone()
        .or_else(|| {
            obj.get("request_id")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    obj.insert("request_id".into(), json!(request_id));
    if args.agent_id.is_some() || args.owner_agent_id.is_some() {
        obj.insert(
            "caller".into(),
            json!({"agent_id": args.agent_id, "owner_agent_id": args.owner_agent_id}),
        );
    }
    let mut scope = match obj.remove("scope") {
        Some(Value::Object(s)) => s,
        _ => Map::new(),
    };
    for (k, v) in [
        ("project", &args.project),
        ("agent", &args.agent),
        ("session", &args.session),
    ] {
        if let Some(v) = v {
            scope.insert(k.into(), json!(v));
        }
    }
    for kv in &args.scope {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| format!("--scope {kv:?}: expected KEY=VALUE"))?;
        scope.insert(k.into(), json!(v));
    }
    if !scope.is_empty() {
        obj.insert("scope".into(), Value::Object(scope));
    }
    // The flags' context replaces the input's text and adds to its files.
    if let Some(flags) =
        crate::front::context_from_flags(args.context.clone(), &args.context_files)?
    {
        let mut context = match obj.remove("context") {
            Some(Value::Object(c)) => c,
            _ => Map::new(),
        };
        if let Some(text) = flags.text {
            context.insert("text".into(), json!(text));
        }
        let mut files = match context.remove("files") {
            Some(Value::Array(f)) => f,
            _ => Vec::new(),
        };
        files.extend(
            flags
                .files
                .iter()
                .map(|f| json!({"name": f.name, "content": f.content})),
        );
        if !files.is_empty() {
            context.insert("files".into(), Value::Array(files));
        }
        obj.insert("context".into(), Value::Object(context));
    }
    parse_ask(&obj, usize::MAX).map_err(|e| e.message)
}

async fn ask(target: &Target, args: AskArgs) -> Result<i32> {
    let ask = match build_ask(&args) {
        Ok(a) => a,
        Err(e) => return Ok(report_error(ErrorCode::InvalidRequest, &e)),
    };
    let request_id = ask.request_id.clone().unwrap_or_default();
    let shown_id = Escaped(&request_id).to_string();
    let mut session = match AskSession::start(
        target.clone(),
        ask,
        Duration::from_secs(args.reconnect_secs),
    )
    .await
    {
        Ok(s) => s,
        Err(e) => return Ok(unreachable_daemon(target, &e)),
    };
    let mut cancelling = false;
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    loop {
        let update = tokio::select! {
            r = &mut ctrl_c, if !cancelling => {
                r?;
                eprintln!("askrelay: cancelling request {shown_id}… (Ctrl-C again to quit now)");
                cancelling = true;
                if let Err(e) = session.cancel("the asker pressed Ctrl-C").await {
                    eprintln!("askrelay: could not cancel: {e:#}");
                }
                continue;
            }
            _ = tokio::signal::ctrl_c(), if cancelling => return Ok(130),
            u = session.next() => u,
        };
        match update {
            AskUpdate::Accepted { answerer, detail } => {
                let mut msg = format!(
                    "askrelay: request {shown_id} is waiting for an answer via {}",
                    Escaped(&answerer)
                );
                if let Some(link) = detail.first_link() {
                    msg.push_str(&format!(" ({})", Escaped(link)));
                }
                eprintln!("{msg}");
                if let Some(hint) = &detail.hint {
                    eprintln!("askrelay: {}", Escaped(hint));
                }
                if let Some(posting) = &detail.posting {
                    eprintln!("askrelay: not posted yet: {}", Escaped(posting));
                }
                if let Some(secs) = detail.expires_in_secs {
                    eprintln!("askrelay: the request expires if nobody answers within {secs} s");
                }
            }
            AskUpdate::Lost { window } => eprintln!(
                "askrelay: lost the daemon at {}; reconnecting to re-attach request {shown_id} (for up to {} s)…",
                target.socket.display(),
                window.as_secs()
            ),
            AskUpdate::Reattached => eprintln!("askrelay: reconnected; re-attached"),
            AskUpdate::Answered(result) => {
                // The result, byte for byte as the daemon sent it.
                println!("{}", result.get());
                return Ok(0);
            }
            AskUpdate::Failed(e) if e.code == ErrorCode::Internal && e.message.starts_with("lost the askrelay daemon") => {
                eprintln!("askrelay: {}", Escaped(&e.message));
                return Ok(EXIT_UNREACHABLE);
            }
            AskUpdate::Failed(e) => return Ok(report_error(e.code, &e.message)),
        }
    }
}

/// Every page of the pending list, and the outbox backlog the first page reported.
async fn all_pending(
    client: &mut Client,
) -> Result<Result<(Vec<RequestView>, Option<crate::protocol::OutboxBacklog>), Event>> {
    let mut out = Vec::new();
    let mut backlog = None;
    let mut after = None;
    loop {
        let op = Op::Pending {
            request_id: None,
            limit: None,
            after: after.take(),
        };
        match client.call(&op).await? {
            Event::Pending {
                requests,
                next,
                outbox,
            } => {
                out.extend(requests);
                backlog = backlog.or(outbox);
                match next {
                    Some(n) => after = Some(n),
                    None => return Ok(Ok((out, backlog))),
                }
            }
            other => return Ok(Err(other)),
        }
    }
}

async fn pending(target: &Target, as_json: bool) -> Result<i32> {
    let mut client = match connect(target).await {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    let (requests, backlog) = match all_pending(&mut client).await? {
        Ok(r) => r,
        Err(other) => return Ok(unexpected(&other)),
    };
    if let Some(b) = backlog.filter(|b| b.overdue > 0) {
        eprintln!(
            "askrelay: {} outbox item(s) overdue, the oldest for {} s: questions not posted or \
             messages not edited yet (is Discord down?); they are retried",
            b.overdue, b.oldest_secs
        );
    }
    if as_json {
        println!("{}", serde_json::to_string_pretty(&requests)?);
        return Ok(0);
    }
    if requests.is_empty() {
        println!("No pending requests.");
        return Ok(0);
    }
    println!(
        "{:<38} {:<16} {:<10} {:<8} QUESTION",
        "REQUEST", "QUESTION ID", "ANSWERER", "STATE"
    );
    let pad = "";
    for r in &requests {
        let id = Escaped(&r.request_id).to_string();
        if let Some(node) = &r.node {
            println!("{id} (node {})", Escaped(node));
        }
        let answerer = r.answerer.as_deref().unwrap_or("(not yet)");
        let n = r.questions.len();
        for (i, q) in r.questions.iter().enumerate() {
            let unposted = q.post.as_ref().is_some_and(|p| !p.posted);
            let state = if q.answered.is_some() {
                "answered"
            } else if unposted {
                "unposted"
            } else {
                "open"
            };
            let kind = if q.options.is_empty() {
                "free text"
            } else if q.multi_select {
                "pick any"
            } else {
                "pick one"
            };
            let header = q
                .header
                .as_deref()
                .map(|h| format!("[{}] ", Escaped(h)))
                .unwrap_or_default();
            println!(
                "{:<38} {:<16} {:<10} {:<8} {}{} ({}{})",
                if i == 0 { id.as_str() } else { "" },
                Escaped(&q.id).to_string(),
                if i == 0 { answerer } else { "" },
                state,
                header,
                one_line(&q.question),
                kind,
                if n > 1 {
                    format!(", {} of {n}", i + 1)
                } else {
                    String::new()
                },
            );
            for (j, o) in q.options.iter().enumerate() {
                println!("{pad:>76}{}. {}", j + 1, Escaped(o));
            }
            if let Some(post) = q.post.as_ref().filter(|_| unposted) {
                println!(
                    "{pad:>76}not posted yet to channel {} after {} attempt(s): {}",
                    Escaped(&post.channel),
                    post.attempts,
                    Escaped(
                        post.last_error
                            .as_deref()
                            .unwrap_or("waiting for the first attempt")
                    )
                );
            }
            if let Some(a) = &q.answered {
                println!("{pad:>76}answered by {}", answered_by(a));
            }
        }
        if !r.scope.is_empty() {
            let labels: Vec<String> = r
                .scope
                .iter()
                .map(|(k, v)| format!("{}={}", Escaped(k), Escaped(v)))
                .collect();
            println!("{pad:>76}scope: {}", labels.join(" "));
        }
        if let Some(c) = &r.context {
            print_context(c);
        }
    }
    Ok(0)
}

/// What is being approved, as Discord shows it with the question: the context's text and
/// each of its files (a command, a diff), line by line, every line escaped for the terminal.
fn print_context(c: &crate::protocol::ContextView) {
    let block = |title: &str, t: &crate::protocol::ContextText| {
        let size = if t.truncated {
            format!(" (the first {} of {} bytes)", t.content.len(), t.bytes)
        } else {
            String::new()
        };
        println!("    ── {title}{size} ──");
        for line in t.content.lines() {
            println!("    │ {}", Escaped(line));
        }
    };
    if let Some(t) = &c.text {
        block("context", t);
    }
    for f in &c.files {
        block(&Escaped(&f.name).to_string(), &f.text);
    }
}

fn answered_by(a: &crate::protocol::AnsweredView) -> String {
    let mut s = match a.via.as_str() {
        "terminal" => format!("{} (uid {}) via terminal", Escaped(&a.by), Escaped(&a.id)),
        "policy" => "the expiry policy".to_owned(),
        via => format!("{} via {}", Escaped(&a.by), Escaped(via)),
    };
    if let Some(n) = &a.note {
        s.push_str(&format!(", note “{}”", Escaped(n)));
    }
    s
}

fn one_line(s: &str) -> String {
    let flat: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    let flat = Escaped(&flat).to_string();
    if flat.chars().count() > 80 {
        let cut: String = flat.chars().take(79).collect();
        format!("{cut}…")
    } else {
        flat
    }
}

/// The answer to send: the question (the only one when `--question` is left out) and the
/// labels for `--select` values given as numbers, checked against the request when it can be
/// seen. When it cannot (ended, not yours), the daemon's reply says why.
fn resolve_answer(
    args: &AnswerArgs,
    req: Option<&RequestView>,
) -> Result<(String, Vec<String>), String> {
    let Some(req) = req else {
        let question = args.question.clone().ok_or_else(|| {
            "give --question ID (the request is not pending, or not visible to you)".to_owned()
        })?;
        return Ok((question, args.select.clone()));
    };
    let q = match &args.question {
        Some(id) => req.questions.iter().find(|q| &q.id == id).ok_or_else(|| {
            let ids: Vec<String> = req
                .questions
                .iter()
                .map(|q| Escaped(&q.id).to_string())
                .collect();
            format!(
                "request {} has no question {}; its questions are: {}",
                Escaped(&req.request_id),
                Escaped(id),
                ids.join(", ")
            )
        })?,
        None if req.questions.len() == 1 => &req.questions[0],
        None => {
            let ids: Vec<String> = req
                .questions
                .iter()
                .map(|q| Escaped(&q.id).to_string())
                .collect();
            return Err(format!(
                "request {} has {} questions; say which with --question ({})",
                Escaped(&req.request_id),
                req.questions.len(),
                ids.join(", ")
            ));
        }
    };
    let q = crate::core::Question {
        id: q.id.clone(),
        question: q.question.clone(),
        header: q.header.clone(),
        options: q
            .options
            .iter()
            .map(|label| crate::core::QuestionOption {
                label: label.clone(),
                description: None,
            })
            .collect(),
        multi_select: q.multi_select,
    };
    let kind = q.kind();
    if kind == QuestionKind::FreeText && !args.select.is_empty() {
        return Err(format!(
            "question {} has no options and takes free text: use --text TEXT",
            Escaped(&q.id)
        ));
    }
    if kind == QuestionKind::Single && !args.select.is_empty() && args.custom.is_some() {
        return Err(format!(
            "question {} is single-select: free text would replace the selection, so pass \
             --select or --custom, not both",
            Escaped(&q.id)
        ));
    }
    let labels = q
        .resolve(&args.select, true)
        .map_err(|e| e.message)?
        .into_iter()
        .map(|i| q.options[i].label.clone())
        .collect();
    Ok((q.id.clone(), labels))
}

async fn answer(target: &Target, args: AnswerArgs) -> Result<i32> {
    if args.select.is_empty() && args.custom.is_none() {
        eprintln!("askrelay: give --select LABEL|N (repeatable) or --text TEXT");
        return Ok(2);
    }
    let mut client = match connect(target).await {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    let lookup = client
        .call(&Op::Pending {
            request_id: Some(args.request_id.clone()),
            limit: None,
            after: None,
        })
        .await?;
    let req = match &lookup {
        Event::Pending { requests, .. } => requests.first(),
        _ => None,
    };
    let (question, select) = match resolve_answer(&args, req) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("askrelay: {e}");
            return Ok(2);
        }
    };
    let reply = client
        .call(&Op::Answer {
            request_id: args.request_id.clone(),
            question: question.clone(),
            select,
            custom: args.custom.clone(),
            by: args.note.clone(),
        })
        .await?;
    match reply {
        Event::AnswerAccepted {
            request_answered, ..
        } => {
            if request_answered {
                println!(
                    "Answer recorded; request {} is now answered and its agent has the result.",
                    Escaped(&args.request_id)
                );
            } else {
                println!(
                    "Answer recorded for question {}; the request still has open questions.",
                    Escaped(&question)
                );
            }
            Ok(0)
        }
        Event::Error { code, message, .. } => {
            eprintln!("askrelay: your answer did not count: {}", Escaped(&message));
            Ok(if code == ErrorCode::Conflict {
                1
            } else {
                code.exit_code()
            })
        }
        other => Ok(unexpected(&other)),
    }
}

async fn cancel(target: &Target, request_id: String, reason: Option<String>) -> Result<i32> {
    let mut client = match connect(target).await {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    let reply = client
        .call(&Op::Cancel {
            request_id: request_id.clone(),
            reason,
        })
        .await?;
    match reply {
        Event::Cancelled { .. } => {
            println!(
                "Cancelled request {}; its agent gets ABORTED.",
                Escaped(&request_id)
            );
            Ok(0)
        }
        other => Ok(unexpected(&other)),
    }
}

async fn history(target: &Target, limit: u32, as_json: bool) -> Result<i32> {
    let mut client = match connect(target).await {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    let mut requests = Vec::new();
    let mut before = None;
    // Pages of at most the protocol's maximum, until `limit` requests or the oldest.
    while requests.len() < limit as usize {
        let want = (limit as usize - requests.len()).min(crate::protocol::PAGE_MAX as usize);
        match client
            .call(&Op::History {
                limit: Some(want as u32),
                before: before.take(),
            })
            .await?
        {
            Event::History {
                requests: page,
                next,
            } => {
                requests.extend(page);
                match next {
                    Some(n) => before = Some(n),
                    None => break,
                }
            }
            other => return Ok(unexpected(&other)),
        }
    }
    if as_json {
        println!("{}", serde_json::to_string_pretty(&requests)?);
        return Ok(0);
    }
    print_history(&requests)?;
    Ok(0)
}

/// The history table.
fn print_history(requests: &[RequestView]) -> Result<()> {
    if requests.is_empty() {
        println!("No requests yet.");
        return Ok(());
    }
    println!("{:<38} {:<10} {:<21} OUTCOME", "REQUEST", "STATUS", "ASKED");
    for r in requests {
        let outcome = if let Some(result) = &r.result {
            Escaped(&serde_json::to_string(result)?).to_string()
        } else if let Some(e) = &r.error {
            format!("{}: {}", e.code, Escaped(&e.message))
        } else {
            let open = r.questions.iter().filter(|q| q.answered.is_none()).count();
            format!("{open} question(s) open")
        };
        println!(
            "{:<38} {:<10} {:<21} {}",
            Escaped(&r.request_id).to_string(),
            r.status,
            r.created_at,
            outcome
        );
        if let Some(node) = &r.node {
            println!("{:<38}   on node {}", "", Escaped(node));
        }
        for q in &r.questions {
            println!("{:<38}   {}: {}", "", Escaped(&q.id), one_line(&q.question));
            if let Some(a) = &q.answered {
                println!(
                    "{:<38}   {} answered by {} at {}",
                    "",
                    Escaped(&q.id),
                    answered_by(a),
                    a.at
                );
            }
        }
        if let Some(c) = &r.context {
            print_context(c);
        }
    }
    Ok(())
}

/// `askrelay health`: the daemon's `health` reply as lines (or JSON); 0 when healthy, 1 when
/// degraded, 7 when the daemon cannot be reached.
async fn health(target: &Target, as_json: bool) -> Result<i32> {
    let mut client = match connect(target).await {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    let h = match client.call(&Op::Health).await {
        Ok(Event::Health(h)) => h,
        Ok(other) => return Ok(unexpected(&other)),
        Err(e) => {
            eprintln!(
                "askrelay: cannot reach the daemon at {}: {e:#}",
                target.socket.display()
            );
            return Ok(EXIT_UNREACHABLE);
        }
    };
    if as_json {
        println!("{}", serde_json::to_string(&h)?);
    } else {
        println!("status: {}", h.status.as_str());
        println!("store: {}", Escaped(&h.store.to_string()));
        println!("gateway: {}", h.gateway.as_str());
        println!("answerers: {}", h.answerers.join(", "));
        println!("pending: {}", h.pending);
        if let Some(c) = &h.cluster {
            println!(
                "cluster: node {} is {}; leader: {}",
                Escaped(&c.node),
                c.role,
                c.leader
                    .as_deref()
                    .map_or("none yet".into(), |l| Escaped(l).to_string())
            );
        }
        println!(
            "outbox overdue: {} (oldest {} s)",
            h.outbox.overdue, h.outbox.oldest_secs
        );
        println!("version: {}", h.version);
    }
    if h.failing.is_empty() {
        Ok(0)
    } else {
        let parts: Vec<&str> = h.failing.iter().map(|p| p.as_str()).collect();
        eprintln!("askrelay: degraded: {} failing", parts.join(", "));
        Ok(1)
    }
}

/// The start of `DATE` (`YYYY-MM-DD`, or RFC 3339), UTC.
fn parse_since(date: &str) -> Result<std::time::SystemTime, String> {
    let d = date.trim();
    let full = if d.len() == 10 {
        format!("{d}T00:00:00Z")
    } else {
        d.to_owned()
    };
    humantime::parse_rfc3339_weak(full.trim_end_matches('Z')).map_err(|_| {
        format!("--since {d:?}: expected a date like 2026-11-01 or 2026-11-01T12:00:00Z (UTC)")
    })
}

/// `askrelay history --since DATE`: every request asked since DATE, newest first, page by page;
/// with `--json` one JSON object per line (JSON Lines), for backups and analysis.
async fn export_history(
    target: &Target,
    since: &str,
    limit: Option<u32>,
    as_json: bool,
) -> Result<i32> {
    let since = match parse_since(since) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("askrelay: {e}");
            return Ok(2);
        }
    };
    let mut client = match connect(target).await {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    let limit = limit.map_or(usize::MAX, |l| l as usize);
    let mut shown = 0usize;
    let mut before = None;
    let mut table = Vec::new();
    'pages: loop {
        let page = match client
            .call(&Op::History {
                limit: Some(crate::protocol::PAGE_MAX),
                before: before.take(),
            })
            .await?
        {
            Event::History { requests, next } => (requests, next),
            other => return Ok(unexpected(&other)),
        };
        for r in page.0 {
            // Newest first: the first one older than DATE ends the export.
            let asked = humantime::parse_rfc3339_weak(r.created_at.trim_end_matches('Z'))
                .unwrap_or(std::time::UNIX_EPOCH);
            if asked < since || shown >= limit {
                break 'pages;
            }
            shown += 1;
            if as_json {
                println!("{}", serde_json::to_string(&r)?);
            } else {
                table.push(r);
            }
        }
        match page.1 {
            Some(n) => before = Some(n),
            None => break,
        }
    }
    if !as_json {
        print_history(&table)?;
    }
    Ok(0)
}

/// Runs `askrelay mcp` until the MCP client closes stdin, and returns the exit code.
pub async fn run_mcp(config_file: Option<&Path>, args: McpArgs) -> i32 {
    let target = match Target::from_config(config_file) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("askrelay: {e:#}");
            return 2;
        }
    };
    let mut scope = Map::new();
    for (k, v) in [
        ("project", args.project),
        ("agent", args.agent),
        ("session", args.session),
    ] {
        if let Some(v) = v.filter(|v| !v.is_empty()) {
            scope.insert(k.into(), json!(v));
        }
    }
    for kv in &args.scope {
        let Some((k, v)) = kv.split_once('=') else {
            eprintln!("askrelay: --scope {kv:?}: expected KEY=VALUE");
            return 2;
        };
        scope.insert(k.into(), json!(v));
    }
    let options = crate::mcp::McpOptions {
        target,
        scope,
        reconnect: Duration::from_secs(args.reconnect_secs),
        heartbeat: Duration::from_secs(args.progress_secs),
    };
    match crate::mcp::serve_stdio(options).await {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("askrelay: {e:#}");
            1
        }
    }
}
