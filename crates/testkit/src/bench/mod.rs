//! The benchmark behind docs/performance.md, as a library so that `examples/bench.rs` runs it at
//! full size and `tests/bench_smoke.rs` runs a tiny version that checks only that it completes
//! and loses nothing.
//!
//! 1. Ask path: a client writes an `ask` line → the stand-in receives the create-message POST.
//!    Floor: a Unix-socket round trip plus one SQLite WAL commit of a similar row.
//! 2. Answer path: the stand-in sends INTERACTION_CREATE → the client reads `answered`.
//!    Floor: one WebSocket frame, one SQLite WAL commit, one line over a Unix socket.
//! 3. Capacity: the daemon binary (terminal answerer) holding N pending asks, each on its own
//!    connection: its RSS, then answering all of them through the socket `answer` operation.
//! 4. Start-up with N pending rows: spawn → first reply on the socket.
//! 5. Rate limits: a burst across channels through serenity's own rate limiter (REST over TLS
//!    to the stand-in, which enforces Discord-like limits).
//!
//! Then the store backends side by side: the ask path and the answer path (as in 1 and 2) and
//! the throughput of answering N pending questions by clicks, on SQLite, on PostgreSQL with one
//! node, and on PostgreSQL with three nodes (asked on a follower; the leader posts and takes the
//! clicks, and the follower's client reads `answered`).
//!
//! Items 1, 2 and 5 and the backends run the daemons in this process ([`Daemon::start_with`]);
//! 3 and 4 run the real binary so that its RSS is its own. Every wait is bounded and panics with
//! what it waited for, so a broken run never hangs.
//!
//! The files, an item each: the config and [`run`] here; `floors.rs`, `paths.rs` (items 1 and
//! 2), `mcp.rs` (the same through `askrelay mcp`, and the MCP hop's floor), `binary.rs` (items 3 and 4), `rate.rs` (item 5), `stop.rs` (item 7, `stop_times`),
//! `backends.rs`; `helpers.rs` is what they share, `report.rs` the figures and their tables.
//!
//! [`Daemon::start_with`]: askrelay::daemon::Daemon::start_with

mod backends;
mod binary;
mod floors;
mod helpers;
mod mcp;
mod paths;
mod rate;
mod report;
mod slack;
mod stop;

pub use report::{
    BackendReport, BenchReport, CapacityReport, Latency, Machine, MemoryReport, RateReport,
    StartupReport, StopReport, Throughput,
};
pub use slack::SlackPaths;
pub use stop::stop_times;

use crate::standin::RateLimits;
use backends::backends;
use binary::{capacity, startup};
use paths::{ask_and_answer_paths, memory_rounds};
use rate::rate_limits;
use std::path::PathBuf;
use std::time::Duration;

/// The channel of items 1 and 2.
const CHANNEL: u64 = 1_000;
/// The first channel of item 5; the others follow.
const BURST_CHANNEL: u64 = 2_000;
/// The longest any single step may take before the benchmark gives up.
const STEP_LIMIT: Duration = Duration::from_secs(60);

/// What to run, and how big.
#[derive(Clone, Debug)]
pub struct BenchConfig {
    /// Items 1 and 2: measured asks (each also answered by a click), after `warmup` unmeasured.
    pub asks: usize,
    pub warmup: usize,
    /// Item 3: pending asks held at once, each on its own connection.
    pub capacity: usize,
    /// Item 4: pending rows in the database at start-up.
    pub backlog: usize,
    /// Item 5: questions in the burst, spread evenly over `burst_channels` channels.
    pub burst: usize,
    pub burst_channels: usize,
    /// The limits the stand-in enforces in item 5.
    pub rate_limits: RateLimits,
    /// Item 6: rounds of `memory_per_round` questions answered through Discord.
    pub memory_rounds: usize,
    pub memory_per_round: usize,
    /// The `askrelay` binary for items 3, 4 and 6 and the MCP front end of items 1 and 2.
    pub daemon_bin: PathBuf,
    /// The floor of the MCP hop: a minimal rmcp server on stdio (`examples/mcp_echo.rs`);
    /// `None` leaves its row out.
    pub mcp_echo_bin: Option<PathBuf>,
    /// The backends: pending questions answered by clicks for the throughput.
    pub answers: usize,
    /// Where the PostgreSQL columns run; `None` leaves them out.
    pub postgres: Option<Postgres>,
}

/// The PostgreSQL database of the backend columns.
#[derive(Clone, Debug)]
pub enum Postgres {
    /// A scratch database on the test server for each column (`ASKRELAY_TEST_POSTGRES`),
    /// dropped after it.
    Scratch,
    /// This database, for both columns; its rows stay (request ids carry a run tag, so runs do
    /// not collide).
    Url(String),
}

impl BenchConfig {
    /// The sizes the issue asks for.
    pub fn full(daemon_bin: PathBuf) -> BenchConfig {
        BenchConfig {
            asks: 2_000,
            warmup: 50,
            capacity: 10_000,
            backlog: 10_000,
            burst: 500,
            burst_channels: 10,
            rate_limits: RateLimits::default(),
            memory_rounds: 100,
            memory_per_round: 1_000,
            daemon_bin,
            mcp_echo_bin: None,
            answers: 10_000,
            postgres: Some(Postgres::Scratch),
        }
    }

    /// About 30 seconds, SQLite only, for CI to print the table on every landing (figures to
    /// compare between landings, never asserted; in CI's debug build they are slower than in
    /// release).
    pub fn quick(daemon_bin: PathBuf) -> BenchConfig {
        BenchConfig {
            asks: 300,
            warmup: 30,
            capacity: 500,
            backlog: 500,
            burst: 40,
            burst_channels: 4,
            rate_limits: RateLimits::default(),
            memory_rounds: 2,
            memory_per_round: 100,
            daemon_bin,
            mcp_echo_bin: None,
            answers: 300,
            postgres: None,
        }
    }
}

/// Items 1 and 2 alone, with their MCP rows and the MCP floor (`bench --paths-only`): to
/// profile the two paths, or to compare two builds in a few minutes. Returns their table.
pub async fn paths_only(cfg: &BenchConfig) -> String {
    paths(cfg).await.table()
}

/// Items 1 and 2 with their MCP rows, as `cfg` sizes them.
async fn paths(cfg: &BenchConfig) -> paths::Paths {
    eprintln!(
        "bench: ask and answer paths ({} asks), each sample beside one of its floor",
        cfg.asks
    );
    let paths = ask_and_answer_paths(
        cfg.asks,
        cfg.warmup,
        &cfg.daemon_bin,
        cfg.mcp_echo_bin.as_deref(),
    )
    .await;
    paths
}

/// Runs every item and returns the figures. Prints progress to stderr.
pub async fn run(cfg: &BenchConfig) -> BenchReport {
    if let Err(e) = rlimit::increase_nofile_limit(u64::MAX) {
        eprintln!("bench: cannot raise the open-file limit: {e}");
    }
    let load_before = Machine::load();
    let paths = paths(cfg).await;
    eprintln!(
        "bench: the same on Slack ({} asks), each sample beside one of the same floors",
        cfg.asks
    );
    let slack = slack::slack_paths(cfg.asks, cfg.warmup).await;
    // Right after items 1 and 2, whose figures are the SQLite column's paths: the columns are
    // measured under the same conditions.
    let backends = backends(cfg, paths.ask, paths.answer).await;
    eprintln!("bench: capacity ({} pending)", cfg.capacity);
    let capacity = capacity(&cfg.daemon_bin, cfg.capacity).await;
    eprintln!("bench: start-up with {} pending rows", cfg.backlog);
    let startup = startup(&cfg.daemon_bin, cfg.backlog).await;
    eprintln!(
        "bench: rate limits ({} questions over {} channels)",
        cfg.burst, cfg.burst_channels
    );
    let rate = rate_limits(cfg.burst, cfg.burst_channels, &cfg.rate_limits).await;
    eprintln!(
        "bench: memory ({} rounds of {} questions answered through Discord)",
        cfg.memory_rounds, cfg.memory_per_round
    );
    let memory = memory_rounds(&cfg.daemon_bin, cfg.memory_rounds, cfg.memory_per_round).await;
    eprintln!("bench: stop times");
    let stop = stop_times(&cfg.daemon_bin).await;
    BenchReport {
        machine: Machine::now(load_before),
        slack,
        stop,
        ask: paths.ask,
        ask_floor: paths.ask_floor,
        ask_http: paths.http,
        answer: paths.answer,
        ask_mcp: paths.mcp.ask,
        answer_mcp: paths.mcp.answer,
        mcp_echo: paths.mcp.echo,
        memory,
        answer_floor: paths.answer_floor,
        capacity,
        startup,
        rate,
        backends,
    }
}
