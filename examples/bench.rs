//! The askrelay benchmark (docs/performance.md):
//!
//! ```text
//! cargo run --release --example bench
//! cargo run --release --example bench -- --asks 500 --capacity 2000   # smaller
//! cargo run --release --example bench -- --no-postgres                # SQLite only
//! cargo run --release --example bench -- --stop-only                  # SIGTERM times alone
//! cargo run --release --example bench -- --paths-only --asks 1000     # items 1 and 2 alone
//! cargo run --example bench -- --quick   # about 20 s, SQLite only: what .ci/run prints
//! ```
//!
//! Runs the real daemon against the Discord stand-in of the tests (in this process for the ask,
//! answer and rate-limit items; as the `askrelay` binary for capacity and start-up, which it
//! builds first with `cargo build --bin askrelay` in the same profile) and prints a Markdown
//! table, then the store backends side by side: SQLite, PostgreSQL with 1 node and with 3 (a
//! scratch database on the test server, `ASKRELAY_TEST_POSTGRES`, by default
//! postgres://postgres@127.0.0.1:5432/test, for each; or `--postgres URL`). Progress goes to
//! stderr. Exits 1 when anything was lost.

use askrelay_testkit::bench::{self, BenchConfig, Postgres};
use clap::Parser;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Parser)]
#[command(about = "Benchmarks askrelay against the Discord stand-in")]
struct Args {
    /// Measured asks for the ask and answer paths (each is also answered).
    #[arg(long, default_value_t = 2_000)]
    asks: usize,
    /// Unmeasured asks before them.
    #[arg(long, default_value_t = 50)]
    warmup: usize,
    /// Pending asks held at once, each on its own connection.
    #[arg(long, default_value_t = 10_000)]
    capacity: usize,
    /// Pending rows in the database for the start-up measurement.
    #[arg(long, default_value_t = 10_000)]
    backlog: usize,
    /// Questions in the rate-limit burst.
    #[arg(long, default_value_t = 500)]
    burst: usize,
    /// Channels the burst is spread over.
    #[arg(long, default_value_t = 10)]
    channels: usize,
    /// Per-channel window of the stand-in's rate limit, in seconds (Discord: 5 messages per 5 s).
    #[arg(long, default_value_t = 5.0)]
    window_secs: f64,
    /// Rounds of answered questions for the memory measurement.
    #[arg(long, default_value_t = 100)]
    memory_rounds: usize,
    /// Questions per memory round.
    #[arg(long, default_value_t = 1_000)]
    memory_per_round: usize,
    /// The askrelay binary to run; by default target/<profile>/askrelay, built first.
    #[arg(long)]
    daemon: Option<PathBuf>,
    /// Pending questions answered by clicks for each backend's throughput.
    #[arg(long, default_value_t = 10_000)]
    answers: usize,
    /// The PostgreSQL database of the backend columns (its rows stay); by default a scratch
    /// database on the test server for each column, dropped after it.
    #[arg(long, value_name = "URL", conflicts_with = "no_postgres")]
    postgres: Option<String>,
    /// Leave out the PostgreSQL columns.
    #[arg(long)]
    no_postgres: bool,
    /// Only item 7: how long SIGTERM takes with the gateway up, down, and with edits pending.
    #[arg(long)]
    stop_only: bool,
    /// Only items 1 and 2 and their MCP rows, `--asks` of each: to profile the two paths, or
    /// to compare two builds in a few minutes.
    #[arg(long)]
    paths_only: bool,
    /// About 30 seconds at small sizes, SQLite only (the sizes above are ignored): the table
    /// CI prints on every landing, to compare, never asserted.
    #[arg(long)]
    quick: bool,
}

/// The MCP hop's floor, built beside the daemon by [`daemon_binary`].
fn echo_binary(daemon: &std::path::Path) -> Option<PathBuf> {
    let echo = daemon.parent()?.join("examples/mcp_echo");
    if echo.exists() {
        Some(echo)
    } else {
        eprintln!(
            "bench: no {} (cargo build --example mcp_echo); the MCP floor is left out",
            echo.display()
        );
        None
    }
}

fn daemon_binary() -> PathBuf {
    // target/<profile>/examples/bench → target/<profile>/askrelay
    let exe = std::env::current_exe().expect("bench: current_exe");
    let profile_dir = exe
        .parent()
        .and_then(|p| p.parent())
        .expect("bench: the example is not in target/<profile>/examples");
    let release = profile_dir.file_name().is_some_and(|n| n == "release");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut build = std::process::Command::new(cargo);
    // With this example, so that the daemon is built with the features the example (and the
    // tests) were: alone, `--bin askrelay` resolves without the dev-dependencies and rebuilds
    // some fifty crates.
    build.args([
        "build",
        "--bin",
        "askrelay",
        "--example",
        "bench",
        "--example",
        "mcp_echo",
    ]);
    if release {
        build.arg("--release");
    }
    eprintln!("bench: {build:?}");
    match build.status() {
        Ok(s) if s.success() => {}
        other => eprintln!("bench: building the daemon failed ({other:?}); using what is there"),
    }
    profile_dir.join("askrelay")
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    let daemon_bin = args.daemon.clone().unwrap_or_else(daemon_binary);
    if args.stop_only {
        print!("{}", bench::stop_times(&daemon_bin).await.table());
        return;
    }
    if args.quick {
        let mut cfg = BenchConfig::quick(daemon_bin);
        cfg.mcp_echo_bin = echo_binary(&cfg.daemon_bin);
        eprintln!("bench: --quick {cfg:?}");
        report(bench::run(&cfg).await, "quick, ");
        return;
    }
    let mut cfg = BenchConfig::full(daemon_bin);
    cfg.mcp_echo_bin = echo_binary(&cfg.daemon_bin);
    cfg.asks = args.asks;
    cfg.warmup = args.warmup;
    cfg.capacity = args.capacity;
    cfg.backlog = args.backlog;
    cfg.burst = args.burst;
    cfg.burst_channels = args.channels;
    cfg.rate_limits.channel_window = Duration::from_secs_f64(args.window_secs);
    cfg.memory_rounds = args.memory_rounds;
    cfg.memory_per_round = args.memory_per_round;
    cfg.answers = args.answers;
    cfg.postgres = match (args.no_postgres, args.postgres) {
        (true, _) => None,
        (false, Some(url)) => Some(Postgres::Url(url)),
        (false, None) => Some(Postgres::Scratch),
    };
    eprintln!("bench: {cfg:?}");
    if args.paths_only {
        print!("{}", bench::paths_only(&cfg).await);
        return;
    }
    report(bench::run(&cfg).await, "");
}

/// Prints the tables under the machine they were measured on; exits 1 when anything was lost.
fn report(report: bench::BenchReport, kind: &str) {
    let profile = if cfg!(debug_assertions) {
        "debug build"
    } else {
        "release build"
    };
    println!(
        "askrelay {} benchmark ({kind}{profile}): {}\n",
        env!("CARGO_PKG_VERSION"),
        report.machine.line()
    );
    report.print();
    if report.lost() > 0 {
        eprintln!("bench: {} lost", report.lost());
        std::process::exit(1);
    }
}
