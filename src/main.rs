//! `askrelay`: parse the command line, start the logs, and hand over to the library.

use askrelay::cli::{self, Cli, Command};
use askrelay::config::{Config, LogFormat};
use clap::Parser;
use tracing_subscriber::EnvFilter;

fn main() {
    let cli = Cli::parse();
    // The daemon serves many clients at once, on every core. A client follows a few
    // connections: one thread does, and an `askrelay mcp` (one per agent session) then keeps
    // no idle worker thread per core.
    let runtime = match cli.command {
        Command::Serve => {
            askrelay::memory::use_one_arena();
            tokio::runtime::Runtime::new()
        }
        _ => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build(),
    };
    let runtime = match runtime {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("askrelay: cannot start the runtime: {e}");
            std::process::exit(1);
        }
    };
    let code = match cli.command {
        Command::Serve => runtime.block_on(serve(cli.config)),
        Command::CheckConfig => runtime.block_on(check_config(cli.config)),
        Command::Mcp(args) => {
            // stdout carries the protocol: logs go to stderr, quiet by default.
            init_logs("askrelay=info,rmcp=warn", LogFormat::Text);
            runtime.block_on(cli::run_mcp(cli.config.as_deref(), args))
        }
        Command::Hook(args) => {
            runtime.block_on(askrelay::front::hook::run(cli.config.as_deref(), args))
        }
        Command::Setup(args) => askrelay::front::setup::run(args),
        Command::Completions { shell } => cli::completions(shell),
        Command::Man { dir } => cli::man(dir.as_deref()),
        Command::Approve(args) => {
            runtime.block_on(askrelay::front::approve::run(cli.config.as_deref(), args))
        }
        _ => runtime.block_on(cli::run_client(cli)),
    };
    std::process::exit(code);
}

/// The daemon's default filter: serenity logs every failed reconnect attempt, so only its
/// errors pass; the gateway watcher says once that the gateway dropped and once that it is
/// back. `ASKRELAY_LOG=debug` shows everything.
const SERVE_LOGS: &str = "info,serenity=error";

/// Logs go to stderr, filtered by ASKRELAY_LOG, then RUST_LOG, then `default`; as text (in
/// colour on a terminal, unless NO_COLOR is set) or as one JSON object per line. Beside them,
/// the Discord answerer reads serenity's own warnings about the gateway whatever the filter
/// (it logs their causes itself).
fn init_logs(default: &str, format: LogFormat) {
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    use tracing_subscriber::Layer as _;
    let filter = std::env::var("ASKRELAY_LOG")
        .ok()
        .and_then(|f| EnvFilter::try_new(f).ok())
        .unwrap_or_else(|| {
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default))
        });
    // https://no-color.org: set and not empty means no colour.
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let output = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    let output = match format {
        LogFormat::Text => output
            .with_ansi(!no_color && std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .boxed(),
        LogFormat::Json => output.json().with_ansi(false).boxed(),
    };
    tracing_subscriber::registry()
        .with(output.with_filter(filter))
        .with(askrelay::answerer::discord::GatewayCauses::layer())
        .init();
}

async fn serve(config_file: Option<std::path::PathBuf>) -> i32 {
    // The config says how to log, so it is read first; its errors go to stderr as they are.
    let config = match Config::load(config_file.as_deref()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("askrelay: {e:#}");
            return 2;
        }
    };
    // A token that cannot be one would only fail later, at the gateway, as a warning.
    if let Some(token) = &config.discord.token {
        if let Err(why) = askrelay::answerer::discord::token_shape(token.expose()) {
            eprintln!("askrelay: discord.token does not look like a bot token: {why}");
            return 2;
        }
    }
    let format = config.log_format;
    init_logs(SERVE_LOGS, format);
    match askrelay::daemon::run(config, signals()).await {
        Ok(()) => 0,
        Err(e) => {
            // Said once: as a log line in JSON (so a collector sees it), else on stderr.
            match format {
                LogFormat::Json => tracing::error!(error = %format!("{e:#}"), "askrelay stopped"),
                LogFormat::Text => eprintln!("askrelay: {e:#}"),
            }
            1
        }
    }
}

async fn check_config(config_file: Option<std::path::PathBuf>) -> i32 {
    let config = match Config::load(config_file.as_deref()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("askrelay: {e:#}");
            return 2;
        }
    };
    askrelay::outln!("config ok");
    let mut problems = Vec::new();
    if config.discord.token.is_none() && !config.slack.enabled() {
        askrelay::outln!("discord: not configured (no discord.token); the terminal answers");
    } else if config.discord.token.is_none() {
        askrelay::outln!("discord: not configured (no discord.token)");
    } else {
        problems.extend(askrelay::answerer::discord::check(&config).await);
    }
    if config.slack.enabled() {
        problems.extend(askrelay::answerer::slack::check(&config).await);
    }
    for p in &problems {
        eprintln!("askrelay: {p}");
    }
    i32::from(!problems.is_empty())
}

/// Every SIGINT and SIGTERM, by name: the first starts a graceful shutdown, a second one
/// stops at once.
fn signals() -> tokio::sync::mpsc::UnboundedReceiver<&'static str> {
    use tokio::signal::unix::{signal, SignalKind};
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    for (kind, name) in [
        (SignalKind::interrupt(), "SIGINT"),
        (SignalKind::terminate(), "SIGTERM"),
    ] {
        let tx = tx.clone();
        match signal(kind) {
            Ok(mut s) => {
                tokio::spawn(async move {
                    while s.recv().await.is_some() {
                        tracing::info!("received {name}");
                        if tx.send(name).is_err() {
                            break;
                        }
                    }
                });
            }
            Err(e) => tracing::warn!(error = %e, "cannot listen for {name}"),
        }
    }
    rx
}
