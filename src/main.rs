//! `askrelay`: parse the command line, start the logs, and hand over to the library.

use askrelay::cli::{self, Cli, Command};
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
    let config = match cli::load_config(config_file.as_deref()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("askrelay: {e:#}");
            return 2;
        }
    };
    match askrelay::daemon::run(config, shutdown_signal()).await {
        Ok(()) => 0,
        Err(e) => {
            tracing::error!("{e:#}");
            eprintln!("askrelay: {e:#}");
            1
        }
    }
}

async fn check_config(config_file: Option<std::path::PathBuf>) -> i32 {
    let config = match cli::load_config(config_file.as_deref()) {
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

/// Resolves on SIGINT or SIGTERM.
async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = match signal(SignalKind::terminate()) {
        Ok(s) => s,
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => tracing::info!("received SIGINT"),
        _ = term.recv() => tracing::info!("received SIGTERM"),
    }
}
