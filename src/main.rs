//! `askrelay`: parse the command line, start the logs, and hand over to the library.

use askrelay::cli::{self, Cli, Command};
use askrelay::config::Config;
use clap::Parser;
use tracing_subscriber::EnvFilter;

fn main() {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Runtime::new() {
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
            init_logs("askrelay=info,rmcp=warn");
            runtime.block_on(cli::run_mcp(cli.config.as_deref(), args))
        }
        Command::Hook(args) => {
            runtime.block_on(askrelay::front::hook::run(cli.config.as_deref(), args))
        }
        Command::Completions { shell } => cli::completions(shell),
        Command::Man => cli::man(),
        Command::Approve(args) => {
            runtime.block_on(askrelay::front::approve::run(cli.config.as_deref(), args))
        }
        _ => runtime.block_on(cli::run_client(cli)),
    };
    std::process::exit(code);
}

/// Logs go to stderr, filtered by ASKRELAY_LOG, then RUST_LOG, then `default`.
fn init_logs(default: &str) {
    let filter = std::env::var("ASKRELAY_LOG")
        .ok()
        .and_then(|f| EnvFilter::try_new(f).ok())
        .unwrap_or_else(|| {
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default))
        });
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
}

async fn serve(config_file: Option<std::path::PathBuf>) -> i32 {
    init_logs("info");
    let config = match Config::load(config_file.as_deref()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("askrelay: {e:#}");
            return 2;
        }
    };
    match askrelay::daemon::run(config, signals()).await {
        Ok(()) => 0,
        Err(e) => {
            // Once, to stderr (where the logs go too).
            eprintln!("askrelay: {e:#}");
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
    println!("config ok");
    if config.discord.token.is_none() {
        println!("discord: not configured (no discord.token); the terminal answers");
        return 0;
    }
    let problems = askrelay::answerer::discord::check(&config).await;
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
