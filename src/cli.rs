//! The command line (SPEC §6): `serve` runs the daemon; every other command is a client of its
//! socket. Each command returns its process exit code.

use crate::client::Client;
use crate::config::{self, Config};
use crate::core::ErrorCode;
use crate::protocol::parse_code;
use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use serde_json::{json, Map, Value};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The exit code of a client command that cannot reach the daemon.
pub const EXIT_UNREACHABLE: i32 = 7;

const ASK_EXAMPLES: &str = "\
Exit codes:
  0  answered (the result JSON is on stdout)
  2  INVALID_REQUEST     3  DELEGATED_CALLER   4  NO_ANSWERER
  5  ABORTED             6  EXPIRED            7  the daemon cannot be reached
  1  anything else

Examples:
  echo '{\"questions\":[{\"id\":\"go\",\"question\":\"Deploy now?\",\"options\":[{\"label\":\"Yes (Recommended)\"},{\"label\":\"No\"}]}]}' | askrelay ask
  askrelay ask question.json --request-id deploy-42 --project infra-prod --agent ops-bot
Progress goes to stderr; only the result goes to stdout. Ctrl-C cancels the request.";

#[derive(Debug, Parser)]
#[command(
    name = "askrelay",
    version,
    about = "Lets AI agents ask people questions through Discord or the terminal",
    after_help = "Examples:
  askrelay serve --config /etc/askrelay/askrelay.toml
  askrelay ask question.json
  askrelay pending
  askrelay answer 3f6c… --question cleanup --select 'No, keep them'
  askrelay history --limit 5

Client commands find the socket from --config FILE, then ASKRELAY_SOCKET_PATH, then
$XDG_RUNTIME_DIR/askrelay.sock (or ./askrelay.sock)."
)]
pub struct Cli {
    /// The TOML config file (clients read only socket_path from it).
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
Logs go to stderr; set ASKRELAY_LOG=debug (or RUST_LOG) for more.")]
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
  askrelay pending --json | jq '.[].request_id'")]
    Pending {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Answer one question of a pending request from the terminal.
    #[command(
        after_help = "Exits 0 only when this answer was the one that counted; 1 when the question \
was already answered or the request has ended (it says who answered), 2 for a bad
request id, question id or label, 7 when the daemon cannot be reached.

Examples:
  askrelay answer 3f6c… --question cleanup --select 'Yes, delete them (Recommended)'
  askrelay answer 3f6c… --question targets --select web --select db
  askrelay answer 3f6c… --question name --custom 'call it v2'"
    )]
    Answer(AnswerArgs),
    /// Cancel a pending request; its agent gets ABORTED.
    #[command(after_help = "Examples:
  askrelay cancel 3f6c…
  askrelay cancel 3f6c… --reason 'asked the wrong team'")]
    Cancel {
        request_id: String,
        /// Why; the agent sees it.
        #[arg(long)]
        reason: Option<String>,
    },
    /// Show recent requests, answered or not.
    #[command(after_help = "Examples:
  askrelay history
  askrelay history --limit 100 --json")]
    History {
        #[arg(long, default_value_t = 20)]
        limit: u32,
        #[arg(long)]
        json: bool,
    },
    /// Serve ask_user_question over MCP on stdio, for Claude Code, Codex, Cursor and others.
    #[command(after_help = MCP_EXAMPLES)]
    Mcp(McpArgs),
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
}

#[derive(Debug, Args)]
pub struct AnswerArgs {
    pub request_id: String,
    /// The question's id.
    #[arg(long)]
    pub question: String,
    /// An option label, exactly; repeat for a multi-select question.
    #[arg(long = "select", value_name = "LABEL", conflicts_with = "custom")]
    pub select: Vec<String>,
    /// Free text instead of (or, for multi-select, with) options.
    #[arg(long, value_name = "TEXT")]
    pub custom: Option<String>,
    /// Who is answering, as shown in the history (default: $USER).
    #[arg(long = "as", value_name = "NAME")]
    pub by: Option<String>,
}

/// Runs a client command and returns the exit code.
pub async fn run_client(cli: Cli) -> i32 {
    let socket = match config::client_socket_path(cli.config.as_deref()) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("askrelay: {e:#}");
            return 2;
        }
    };
    let result = match cli.command {
        Command::Serve | Command::CheckConfig | Command::Mcp(_) => {
            unreachable!("not a client command")
        }
        Command::Ask(args) => ask(&socket, args).await,
        Command::Pending { json } => pending(&socket, json).await,
        Command::Answer(args) => answer(&socket, args).await,
        Command::Cancel { request_id, reason } => cancel(&socket, request_id, reason).await,
        Command::History { limit, json } => history(&socket, limit, json).await,
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("askrelay: {e:#}");
            1
        }
    }
}

async fn connect(socket: &Path) -> Result<Client, i32> {
    Client::connect(socket).await.map_err(|e| {
        eprintln!(
            "askrelay: cannot reach the daemon at {}: {e}; start it with `askrelay serve`",
            socket.display()
        );
        EXIT_UNREACHABLE
    })
}

/// Prints an `error` event and returns its exit code.
fn report_error(event: &Value) -> i32 {
    let code = parse_code(event["code"].as_str().unwrap_or("INTERNAL"));
    eprintln!(
        "askrelay: {}: {}",
        code,
        event["message"].as_str().unwrap_or("(no message)")
    );
    code.exit_code()
}

fn build_ask(args: &AskArgs) -> Result<Value> {
    let text = if args.input == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .context("cannot read the question from stdin")?;
        s
    } else {
        std::fs::read_to_string(&args.input)
            .with_context(|| format!("cannot read {}", args.input))?
    };
    let mut obj: Map<String, Value> = match serde_json::from_str(&text) {
        Ok(Value::Object(o)) => o,
        Ok(_) => bail!("the input must be a JSON object like {{\"questions\":[...]}}"),
        Err(e) => bail!("the input is not valid JSON: {e}"),
    };
    obj.insert("op".into(), json!("ask"));
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
            .with_context(|| format!("--scope {kv:?}: expected KEY=VALUE"))?;
        scope.insert(k.into(), json!(v));
    }
    if !scope.is_empty() {
        obj.insert("scope".into(), Value::Object(scope));
    }
    Ok(Value::Object(obj))
}

async fn ask(socket: &Path, args: AskArgs) -> Result<i32> {
    let line = match build_ask(&args) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("askrelay: INVALID_REQUEST: {e:#}");
            return Ok(ErrorCode::InvalidRequest.exit_code());
        }
    };
    let request_id = line["request_id"].as_str().unwrap_or_default().to_owned();
    let mut client = match connect(socket).await {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    client.send(&line).await?;
    let mut cancelling = false;
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    loop {
        let event = tokio::select! {
            r = &mut ctrl_c, if !cancelling => {
                r?;
                eprintln!("askrelay: cancelling request {request_id}… (Ctrl-C again to quit now)");
                cancelling = true;
                client.send(&json!({"op": "cancel", "request_id": request_id, "reason": "the asker pressed Ctrl-C"})).await?;
                continue;
            }
            _ = tokio::signal::ctrl_c(), if cancelling => return Ok(130),
            e = client.recv() => e,
        };
        let event = match event {
            Ok(Some(ev)) => ev,
            Ok(None) | Err(_) => {
                eprintln!(
                    "askrelay: lost the daemon at {}; reconnecting to re-attach request {request_id} (for up to {} s)…",
                    socket.display(),
                    args.reconnect_secs
                );
                match reconnect(socket, &line, Duration::from_secs(args.reconnect_secs)).await {
                    Some(c) => {
                        client = c;
                        continue;
                    }
                    None => {
                        eprintln!("askrelay: the daemon did not come back; request {request_id} may still be pending (re-run with --request-id {request_id})");
                        return Ok(EXIT_UNREACHABLE);
                    }
                }
            }
        };
        if event["request_id"].as_str() != Some(request_id.as_str()) && event["event"] != "error" {
            continue;
        }
        match event["event"].as_str() {
            Some("accepted") => {
                let answerer = event["answerer"].as_str().unwrap_or("?");
                let mut msg = format!(
                    "askrelay: request {request_id} is waiting for an answer via {answerer}"
                );
                if let Some(link) = event["message_links"]
                    .as_array()
                    .and_then(|l| l.first())
                    .and_then(Value::as_str)
                {
                    msg.push_str(&format!(" ({link})"));
                }
                eprintln!("{msg}");
                if let Some(hint) = event["hint"].as_str() {
                    eprintln!("askrelay: {hint}");
                }
                if let Some(posting) = event["posting"].as_str() {
                    eprintln!("askrelay: not posted yet: {posting}");
                }
                if let Some(secs) = event["expires_in_secs"].as_u64() {
                    eprintln!("askrelay: the request expires if nobody answers within {secs} s");
                }
            }
            Some("answered") => {
                // The result, byte for byte: re-serialize nothing, cut it out of the line.
                println!("{}", serde_json::to_string(&event["result"])?);
                return Ok(0);
            }
            Some("cancelled") => {}
            Some("error")
                if event["request_id"].is_null() || event["request_id"] == request_id.as_str() =>
            {
                return Ok(report_error(&event));
            }
            _ => {}
        }
    }
}

async fn reconnect(socket: &Path, line: &Value, window: Duration) -> Option<Client> {
    let deadline = tokio::time::Instant::now() + window;
    let mut delay = Duration::from_millis(100);
    while tokio::time::Instant::now() < deadline {
        if let Ok(mut c) = Client::connect(socket).await {
            if c.send(line).await.is_ok() {
                eprintln!("askrelay: reconnected; re-attached");
                return Some(c);
            }
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_secs(2));
    }
    None
}

async fn pending(socket: &Path, as_json: bool) -> Result<i32> {
    let mut client = match connect(socket).await {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    let reply = client.call(&json!({"op": "pending"})).await?;
    if reply["event"] == "error" {
        return Ok(report_error(&reply));
    }
    let requests = reply["requests"].as_array().cloned().unwrap_or_default();
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
    for r in &requests {
        let id = r["request_id"].as_str().unwrap_or("?");
        let answerer = r["answerer"].as_str().unwrap_or("(not yet)");
        let questions = r["questions"].as_array().cloned().unwrap_or_default();
        let n = questions.len();
        for (i, q) in questions.iter().enumerate() {
            let unposted = q["post"].is_object() && q["post"]["posted"] == false;
            let state = if !q["answered"].is_null() {
                "answered"
            } else if unposted {
                "unposted"
            } else {
                "open"
            };
            let kind = if q["options"].as_array().is_none_or(|o| o.is_empty()) {
                "free text"
            } else if q["multiSelect"] == true {
                "pick any"
            } else {
                "pick one"
            };
            let header = q["header"]
                .as_str()
                .map(|h| format!("[{h}] "))
                .unwrap_or_default();
            println!(
                "{:<38} {:<16} {:<10} {:<8} {}{} ({}{})",
                if i == 0 { id } else { "" },
                q["id"].as_str().unwrap_or("?"),
                if i == 0 { answerer } else { "" },
                state,
                header,
                one_line(q["question"].as_str().unwrap_or("")),
                kind,
                if n > 1 {
                    format!(", {} of {n}", i + 1)
                } else {
                    String::new()
                },
            );
            for o in q["options"].as_array().into_iter().flatten() {
                println!("{:>76}- {}", "", o.as_str().unwrap_or(""));
            }
            if unposted {
                println!(
                    "{:>76}not posted yet to channel {} after {} attempt(s): {}",
                    "",
                    q["post"]["channel"].as_str().unwrap_or("?"),
                    q["post"]["attempts"],
                    q["post"]["last_error"]
                        .as_str()
                        .unwrap_or("waiting for the first attempt")
                );
            }
            if !q["answered"].is_null() {
                println!(
                    "{:>76}answered by {} via {}",
                    "",
                    q["answered"]["by"].as_str().unwrap_or("?"),
                    q["answered"]["via"].as_str().unwrap_or("?")
                );
            }
        }
        let scope = r["scope"].as_object().filter(|s| !s.is_empty());
        if let Some(scope) = scope {
            let labels: Vec<String> = scope
                .iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
                .collect();
            println!("{:>76}scope: {}", "", labels.join(" "));
        }
    }
    Ok(0)
}

fn one_line(s: &str) -> String {
    let flat: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > 80 {
        let cut: String = flat.chars().take(79).collect();
        format!("{cut}…")
    } else {
        flat
    }
}

async fn answer(socket: &Path, args: AnswerArgs) -> Result<i32> {
    if args.select.is_empty() && args.custom.is_none() {
        eprintln!("askrelay: give --select LABEL (repeatable) or --custom TEXT");
        return Ok(2);
    }
    let mut client = match connect(socket).await {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    let by = args
        .by
        .clone()
        .or_else(|| std::env::var("USER").ok())
        .unwrap_or_else(|| "terminal".into());
    let reply = client
        .call(&json!({
            "op": "answer",
            "request_id": args.request_id,
            "question": args.question,
            "select": args.select,
            "custom": args.custom,
            "by": by,
        }))
        .await?;
    match reply["event"].as_str() {
        Some("answer_accepted") => {
            if reply["request_answered"] == true {
                println!(
                    "Answer recorded; request {} is now answered and its agent has the result.",
                    args.request_id
                );
            } else {
                println!(
                    "Answer recorded for question {:?}; the request still has open questions.",
                    args.question
                );
            }
            Ok(0)
        }
        _ => {
            let code = parse_code(reply["code"].as_str().unwrap_or("INTERNAL"));
            eprintln!(
                "askrelay: your answer did not count: {}",
                reply["message"].as_str().unwrap_or("(no message)")
            );
            Ok(if code == ErrorCode::Conflict {
                1
            } else {
                code.exit_code()
            })
        }
    }
}

async fn cancel(socket: &Path, request_id: String, reason: Option<String>) -> Result<i32> {
    let mut client = match connect(socket).await {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    let reply = client
        .call(&json!({"op": "cancel", "request_id": request_id, "reason": reason}))
        .await?;
    if reply["event"] == "cancelled" {
        println!("Cancelled request {request_id}; its agent gets ABORTED.");
        Ok(0)
    } else {
        Ok(report_error(&reply))
    }
}

async fn history(socket: &Path, limit: u32, as_json: bool) -> Result<i32> {
    let mut client = match connect(socket).await {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    let reply = client
        .call(&json!({"op": "history", "limit": limit}))
        .await?;
    if reply["event"] == "error" {
        return Ok(report_error(&reply));
    }
    let requests = reply["requests"].as_array().cloned().unwrap_or_default();
    if as_json {
        println!("{}", serde_json::to_string_pretty(&requests)?);
        return Ok(0);
    }
    if requests.is_empty() {
        println!("No requests yet.");
        return Ok(0);
    }
    println!("{:<38} {:<10} {:<21} OUTCOME", "REQUEST", "STATUS", "ASKED");
    for r in &requests {
        let outcome = if !r["result"].is_null() {
            serde_json::to_string(&r["result"])?
        } else if !r["error"].is_null() {
            format!(
                "{}: {}",
                r["error"]["code"].as_str().unwrap_or("?"),
                r["error"]["message"].as_str().unwrap_or("")
            )
        } else {
            let open = r["questions"]
                .as_array()
                .map(|q| q.iter().filter(|q| q["answered"].is_null()).count())
                .unwrap_or(0);
            format!("{open} question(s) open")
        };
        println!(
            "{:<38} {:<10} {:<21} {}",
            r["request_id"].as_str().unwrap_or("?"),
            r["status"].as_str().unwrap_or("?"),
            r["created_at"].as_str().unwrap_or("?"),
            outcome
        );
        for q in r["questions"].as_array().into_iter().flatten() {
            if let Some(a) = q["answered"].as_object() {
                println!(
                    "{:<38}   {} answered by {} via {} at {}",
                    "",
                    q["id"].as_str().unwrap_or("?"),
                    a["by"].as_str().unwrap_or("?"),
                    a["via"].as_str().unwrap_or("?"),
                    a["at"].as_str().unwrap_or("?")
                );
            }
        }
    }
    Ok(0)
}

/// Runs `askrelay mcp` until the MCP client closes stdin, and returns the exit code.
pub async fn run_mcp(config_file: Option<&Path>, args: McpArgs) -> i32 {
    let socket = match config::client_socket_path(config_file) {
        Ok(p) => p,
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
        socket,
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

/// Loads the daemon's config for `serve`.
pub fn load_config(file: Option<&Path>) -> Result<Config> {
    Config::load(file)
}
