//! The command line (docs/contract.md, "CLI"): `serve` runs the daemon; every other command is a client of its
//! socket, speaking the protocol's own types through [`crate::client`]. Each command returns its
//! process exit code. Everything an agent wrote is printed with its control characters escaped.

use crate::client::{Client, Target};
use crate::domain::text::Escaped;
use crate::domain::ErrorCode;
use crate::protocol::Event;
use anyhow::Result;
use clap::{Args, Parser, Subcommand};
use serde_json::{json, Map};
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use crate::domain::error::EXIT_UNREACHABLE;

/// `println!` for the client commands: a closed stdout ends the command quietly ([`out`]).
#[macro_export]
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::cli::out::line(format_args!($($arg)*))
    };
}

mod ask;
mod audit;
pub mod out;
mod views;

use ask::{answer, answer_all, ask, cancel};
use views::{export_history, health, history, pending};

const ASK_EXAMPLES: &str = "\
Exit codes:
  0  answered (the result JSON is on stdout)
  2  INVALID_REQUEST     3  DELEGATED_CALLER   4  NO_ANSWERER
  5  ABORTED             6  EXPIRED            7  the daemon cannot be reached
  1  anything else

Examples:
  echo '{\"questions\":[{\"id\":\"go\",\"question\":\"Deploy now?\",
    \"options\":[{\"label\":\"Yes (Recommended)\"},{\"label\":\"No\"}]}]}' \\
    | askrelay ask
  askrelay ask question.json --request-id deploy-42 --project infra-prod
  askrelay ask question.json --context 'Deploys 4.2' --context-file change.diff
Progress goes to stderr; only the result goes to stdout. Ctrl-C cancels the
request. Client commands read only socket_path and daemon_uid from --config
FILE.";

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
socket_path in --config FILE, else the one daemon listening at
$XDG_RUNTIME_DIR/askrelay.sock, /run/user/$UID/askrelay.sock or
/tmp/askrelay-$UID/askrelay.sock (more than one is refused)."
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
It reads the whole config file, then ASKRELAY_* variables. Logs go to stderr;
set ASKRELAY_LOG=debug (or RUST_LOG) for more. A second Ctrl-C stops without
waiting.")]
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
You see the requests you asked; operators (operator_uids, root) see all of them.
The table shortens long request ids to fit the width (ending in …); --json shows
them whole.")]
    Pending {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Answer one question of a pending request from the terminal.
    #[command(after_help = "\
Exits 0 only when this answer was the one that counted; 1 when the question was
already answered or the request has ended (it says who answered and when, or how
it ended); 2 for no such request or a bad question or option; 7 when the daemon
cannot be reached. Who answered is recorded from your login (uid and user name);
--as only adds a note.

With --all, each request is answered (or refused) on its own; the exit code is 0
when every one counted, 1 when any was refused. Without --yes it lists them and
asks to confirm on the terminal; with no terminal (stdin not a tty) it answers
nothing and exits 2, asking for --yes.

Examples:
  askrelay answer deploy-42 --select 'Yes, delete them (Recommended)'
  askrelay answer deploy-42 --select 2
  askrelay answer deploy-42 --question targets --select web --select db
  askrelay answer deploy-42 --question targets --select web --custom canary
  askrelay answer deploy-42 --question name --text 'call it v2'
  askrelay answer --all --route prod --select Deny     # asks to confirm first
  askrelay answer --all --route prod --select Deny --yes")]
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
  askrelay history --since 1h
  askrelay history --json --since 2026-11-01 > requests.jsonl
With --since, --json prints one request per line (JSON Lines), newest first:
every request asked since DATE (no limit unless --limit is given), fetched page
by page. The table shortens long request ids to fit the width (ending in …);
--json shows them whole.")]
    History {
        /// How many requests to show, newest first (default 20; no limit with --since).
        #[arg(long)]
        limit: Option<u32>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Only requests asked at or after DATE: YYYY-MM-DD (midnight UTC), an RFC 3339 time
        /// such as 2026-11-01T12:00:00Z or 2026-11-01T13:00:00+01:00, or how long ago: 30m,
        /// 1h, 7d, 2w.
        #[arg(long, value_name = "DATE")]
        since: Option<String>,
    },
    /// Ask the daemon whether it is healthy: its store, its Discord gateway, its backlog.
    #[command(
        after_help = "Exit codes: 0 healthy, 1 degraded (the failing part is named), 7 the daemon
cannot be reached. Suits a container HEALTHCHECK or a monitoring probe.

Examples:
  askrelay health
  askrelay health --json"
    )]
    Health {
        /// Print the daemon's JSON reply instead of lines.
        #[arg(long)]
        json: bool,
    },
    /// List the live grants ("Allow for 30 min"), or end one now.
    #[command(after_help = "Examples:
  askrelay grants
  askrelay grants --json
  askrelay grants --revoke g-0123456789ab
Operators see every grant; anyone else the grants for their own uid, or that
they approved from this terminal. Only a grant's approver or an operator may
revoke it.")]
    Grants {
        /// End this grant now; matching requests go to people again.
        #[arg(long, value_name = "GRANT")]
        revoke: Option<String>,
        /// Print the daemon's JSON reply instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Export the audit log with its hash chain, or verify that chain.
    #[command(subcommand)]
    Audit(AuditCommand),
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
  askrelay completions bash \\
    > ~/.local/share/bash-completion/completions/askrelay
  askrelay completions zsh > \"${fpath[1]}/_askrelay\"
  askrelay completions fish > ~/.config/fish/completions/askrelay.fish")]
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff), for `man`; with --dir, write it and a page per command
    /// (askrelay-ask.1, askrelay-audit-export.1 and so on, which the main page refers to).
    #[command(after_help = "Examples:
  askrelay man | man -l -
  askrelay man --dir /usr/local/share/man/man1 && man askrelay-ask")]
    Man {
        /// Write askrelay.1 and askrelay-COMMAND.1 into DIR (created when missing) instead of
        /// askrelay.1 on stdout.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
}

/// `askrelay audit …`: the audit chain (docs/security.md, "The audit chain").
#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Write the audit log as JSON Lines, with each row's hash and the hash of the row before
    /// it (operators only).
    #[command(after_help = "Examples:
  askrelay audit export > audit.jsonl
  askrelay audit export --since 2026-11-01 > audit-november.jsonl
  askrelay audit export --since 7d > audit-last-week.jsonl
  askrelay audit export | tail -n 1 | jq -r .hash  # the head, to keep elsewhere
The first line says where the chain starts:
{\"kind\":\"start\",\"after\":N,\"hash\":…,\"reason\":…}, where reason is genesis,
upgrade (rows older than the chain are left out), pruned (retention deleted the
rows up to N; hash is the last one's) or since. Then one row per line, oldest
first: {\"kind\":\"row\",\"id\":…,…,\"prev_hash\":…,\"hash\":…}.
Only operators (operator_uids, root, the daemon's own uid) may export: the rows
name people.")]
    Export {
        /// Start at the first row written at or after DATE: YYYY-MM-DD (midnight UTC), an
        /// RFC 3339 time such as 2026-11-01T12:00:00Z, or how long ago: 30m, 1h, 7d, 2w.
        #[arg(long, value_name = "DATE")]
        since: Option<String>,
    },
    /// Check an export's hash chain (offline), or the daemon's log when no FILE is given.
    #[command(after_help = "Examples:
  askrelay audit verify audit.jsonl
  askrelay audit export | askrelay audit verify -
  askrelay audit verify                  # exports from the daemon and checks it
Prints \"ok: N rows, chain intact from <start> to <last hash>\" and exits 0; names
the first broken row and exits 1 (\"broken at row ID (line N): …\"); exits 2 when
FILE is not an export. An intact chain proves that no row was changed, removed
or reordered after it was written, up to its last hash: compare that hash with
one you kept elsewhere.")]
    Verify {
        /// An export (`askrelay audit export`); - reads standard input.
        #[arg(value_name = "FILE")]
        file: Option<PathBuf>,
    },
}

/// `askrelay completions SHELL`: the script on stdout.
pub fn completions(shell: clap_complete::Shell) -> i32 {
    let mut cmd = <Cli as clap::CommandFactory>::command();
    clap_complete::generate(shell, &mut cmd, "askrelay", &mut out::Stdout);
    0
}

/// `askrelay man`: the manual page of askrelay on stdout; with `dir` (created when missing),
/// that page and one per command at every depth (`askrelay-ask.1`, `askrelay-audit-export.1`),
/// each titled as its parent's page names it. No page for clap's `help`: it has no options of
/// its own, and a page that lists none would only be noise under `man -k`.
pub fn man(dir: Option<&Path>) -> i32 {
    let mut cmd = without_help(<Cli as clap::CommandFactory>::command());
    // Built once here, so every subcommand carries its display name (`askrelay-audit-export`,
    // the page's title) and its bin name (`askrelay audit export`, the synopsis).
    cmd.build();
    let page = |c: &clap::Command| -> std::io::Result<Vec<u8>> {
        let mut roff = Vec::new();
        // The footer names the version on every page, not only the top one (clap_mangen takes
        // it from the command, and only the top command has one).
        clap_mangen::Man::new(c.clone())
            .source(format!("askrelay {}", env!("CARGO_PKG_VERSION")))
            .manual("askrelay manual")
            .render(&mut roff)?;
        Ok(tidy_roff(&String::from_utf8_lossy(&roff)).into_bytes())
    };
    let result = match dir {
        None => page(&cmd).and_then(|p| std::io::Write::write_all(&mut out::Stdout, &p)),
        Some(dir) => {
            let mut commands = Vec::new();
            every_command(&cmd, &mut commands);
            let mut written = Vec::new();
            std::fs::create_dir_all(dir)
                .and_then(|()| {
                    commands.into_iter().try_for_each(|c| {
                        let title = c.get_display_name().unwrap_or_else(|| c.get_name());
                        let path = dir.join(format!("{title}.1"));
                        std::fs::write(&path, page(c)?)?;
                        written.push(path);
                        Ok(())
                    })
                })
                .map(|()| {
                    // Listed once every page is written, so a reader that stops early (`| head`)
                    // cannot cut the set short.
                    for path in &written {
                        outln!("{}", path.display());
                    }
                })
        }
    };
    match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("askrelay: cannot write the manual page: {e}");
            1
        }
    }
}

/// `cmd` without clap's `help` subcommand, at every depth (`--help` stays).
fn without_help(cmd: clap::Command) -> clap::Command {
    cmd.disable_help_subcommand(true)
        .mut_subcommands(without_help)
}

/// `cmd` and every command under it that is not hidden, parents first.
fn every_command<'a>(cmd: &'a clap::Command, all: &mut Vec<&'a clap::Command>) {
    all.push(cmd);
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        every_command(sub, all);
    }
}

/// What clap's roff needs before groff reads it cleanly: every character outside ASCII as a
/// groff escape (`\[u2026]`; groff warns on raw UTF-8), and the indented example lines of a
/// help text set apart, unfilled, with a paragraph break before the prose that follows them.
fn tidy_roff(roff: &str) -> String {
    let mut out = String::with_capacity(roff.len());
    let mut in_example = false;
    for line in roff.lines() {
        let example = line.starts_with("  ");
        if example && !in_example {
            out.push_str(".nf\n");
        } else if !example && in_example {
            out.push_str(".fi\n");
            if !line.starts_with('.') {
                out.push_str(".PP\n");
            }
        }
        in_example = example;
        for c in line.chars() {
            if c.is_ascii() {
                out.push(c);
            } else {
                out.push_str(&format!("\\[u{:04X}]", u32::from(c)));
            }
        }
        out.push('\n');
    }
    if in_example {
        out.push_str(".fi\n");
    }
    out
}

const MCP_EXAMPLES: &str = "\
Speaks MCP (newline-delimited JSON-RPC) on stdin and stdout; logs go to stderr
(ASKRELAY_LOG). Each ask_user_question call is forwarded to the daemon, which
must be running (askrelay serve).

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

#[derive(Debug, Clone, Args)]
pub struct AnswerArgs {
    /// The id of the request to answer (see `askrelay pending`).
    #[arg(required_unless_present = "all", conflicts_with = "all")]
    pub request_id: Option<String>,
    /// Answer every pending request you may answer (on --route, when given) with the same
    /// choice, each on its own, through the same checks as one answer.
    #[arg(long, requires = "select")]
    pub all: bool,
    /// With --all: only the requests of this route.
    #[arg(long, requires = "all", value_name = "ROUTE")]
    pub route: Option<String>,
    /// With --all: do not ask for confirmation.
    #[arg(long, short = 'y', requires = "all")]
    pub yes: bool,
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
    /// The word that confirms a label of the route's confirm_labels (the error of an answer
    /// without it names the word); with --all, checked for each request.
    #[arg(long, value_name = "WORD")]
    pub confirm: Option<String>,
}

/// Runs a client command and returns the exit code.
pub async fn run_client(cli: Cli) -> i32 {
    // A file is verified without a daemon, or a config.
    if let Command::Audit(AuditCommand::Verify { file: Some(file) }) = &cli.command {
        return audit::verify_file(file);
    }
    let target = match Target::from_config(cli.config.as_deref()).await {
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
        | Command::Man { .. } => {
            unreachable!("run by main on its own")
        }
        Command::Ask(args) => ask(&target, args).await,
        Command::Pending { json } => pending(&target, json).await,
        Command::Answer(args) if args.all => answer_all(&target, args).await,
        Command::Answer(args) => answer(&target, args).await,
        Command::Cancel { request_id, reason } => cancel(&target, request_id, reason).await,
        Command::History { limit, json, since } => match since {
            Some(since) => export_history(&target, &since, limit, json).await,
            None => history(&target, limit.unwrap_or(20), json).await,
        },
        Command::Health { json } => health(&target, json).await,
        Command::Grants { revoke, json } => views::grants(&target, revoke, json).await,
        Command::Audit(AuditCommand::Export { since }) => {
            audit::export(&target, since.as_deref()).await
        }
        Command::Audit(AuditCommand::Verify { .. }) => audit::verify_daemon(&target).await,
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("askrelay: {}", Escaped(&format!("{e:#}")));
            1
        }
    }
}

pub(super) fn unreachable_daemon(target: &Target, e: &std::io::Error) -> i32 {
    eprintln!(
        "askrelay: cannot reach the daemon at {}: {e}; start it with `askrelay serve`",
        target.socket.display()
    );
    EXIT_UNREACHABLE
}

pub(super) async fn connect(target: &Target) -> Result<Client, i32> {
    Client::connect_to(target)
        .await
        .map_err(|e| unreachable_daemon(target, &e))
}

/// Prints an error and returns its exit code.
pub(super) fn report_error(code: ErrorCode, message: &str) -> i32 {
    eprintln!("askrelay: {code}: {}", Escaped(message));
    code.exit_code()
}

/// Prints an unexpected reply and returns 1.
pub(super) fn unexpected(event: &Event) -> i32 {
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

/// Runs `askrelay mcp` until the MCP client closes stdin, and returns the exit code.
pub async fn run_mcp(config_file: Option<&Path>, args: McpArgs) -> i32 {
    // A socket that cannot be chosen (two daemons at default places, a config that does not
    // load) is not an exit: MCP clients would show only "Connection closed". The server starts,
    // and each call says why in a tool error (crate::mcp::McpOptions::target).
    let target = Target::from_config(config_file)
        .await
        .map_err(|e| format!("{e:#}"));
    // Said once at start-up, where MCP clients keep a server's stderr: which daemon is asked.
    if let Ok(target) = &target {
        tracing::info!(socket = %target.socket.display(), "askrelay mcp: asking the daemon at this socket");
    }
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
