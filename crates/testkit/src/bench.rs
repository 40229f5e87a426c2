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

use super::fixtures::{self, Clicker};
use super::standin::{RateLimitCounts, RateLimits, Stall, StandIn, StandInOptions};
use crate::scratch::ScratchDb;
use askrelay::client::Client;
use askrelay::config::{Config, Route, Secret, Snowflake};
use askrelay::daemon::{Daemon, DaemonHooks};
use askrelay::domain::cluster::Role;
use askrelay::store::redact_url;
use serde_json::{json, Value};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::str::FromStr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};

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
            answers: 10_000,
            postgres: Some(Postgres::Scratch),
        }
    }
}

/// p50 and p99 of a set of samples.
#[derive(Clone, Copy, Debug)]
pub struct Latency {
    pub n: usize,
    pub p50: Duration,
    pub p99: Duration,
}

impl Latency {
    fn of(mut samples: Vec<Duration>) -> Latency {
        assert!(!samples.is_empty(), "bench: no samples");
        samples.sort();
        let n = samples.len();
        let at = |q: f64| samples[((n as f64 * q).ceil() as usize).clamp(1, n) - 1];
        Latency {
            n,
            p50: at(0.50),
            p99: at(0.99),
        }
    }
}

#[derive(Clone, Debug)]
pub struct CapacityReport {
    pub pending: usize,
    /// The daemon's RSS before the first ask, and with every ask pending.
    pub rss_idle_kib: u64,
    pub rss_kib: u64,
    /// Time to answer all of them (first `answer` sent → last `answered` read).
    pub answer_time: Duration,
    /// Asks whose client never read the right `answered` line.
    pub lost: usize,
}

#[derive(Clone, Debug)]
pub struct StartupReport {
    pub backlog: usize,
    /// Spawn → first successful `connect()` (the socket is bound and listening).
    pub to_connect: Duration,
    /// Spawn → first reply (`health`) on the socket: the daemon serves.
    pub to_serve: Duration,
    /// What `health` said was pending (must equal `backlog`).
    pub pending_reported: usize,
}

#[derive(Clone, Debug)]
pub struct RateReport {
    pub questions: usize,
    pub channels: usize,
    pub limits: RateLimits,
    /// Burst start → the last successful create.
    pub makespan: Duration,
    /// The shortest makespan the per-channel limit allows.
    pub ideal_makespan: Duration,
    /// Successful creates, and every REST request the stand-in saw during the burst.
    pub posted: usize,
    pub requests: usize,
    pub limited: RateLimitCounts,
    pub lost: usize,
}

impl RateReport {
    /// Messages per second allowed by the per-channel limits of all channels together.
    pub fn allowed_rate(&self) -> f64 {
        self.channels as f64 * f64::from(self.limits.channel_messages)
            / self.limits.channel_window.as_secs_f64()
    }

    /// Posts per second counted over whole windows: a burst that uses every window to the full
    /// posts `limit` messages per channel in each of them.
    pub fn achieved_rate(&self) -> f64 {
        self.posted as f64 / (self.makespan + self.limits.channel_window).as_secs_f64()
    }

    pub fn fraction(&self) -> f64 {
        self.achieved_rate() / self.allowed_rate()
    }

    pub fn limited_total(&self) -> usize {
        self.limited.channel + self.limited.global
    }
}

/// Item 6: the daemon's RSS after each round of answered questions.
#[derive(Clone, Debug)]
pub struct MemoryReport {
    pub per_round: usize,
    /// VmRSS in KiB after each round.
    pub series: Vec<u64>,
    pub lost: usize,
}

impl MemoryReport {
    /// The round whose RSS is the reference: the 10th (or the first of a short run).
    fn reference(&self) -> usize {
        if self.series.len() >= 10 {
            9
        } else {
            0
        }
    }

    /// The last round's RSS over the reference round's.
    pub fn growth(&self) -> f64 {
        let r = self.series[self.reference()] as f64;
        *self.series.last().unwrap() as f64 / r.max(1.0)
    }
}

/// Pending questions answered by clicks, a bounded number in flight.
#[derive(Clone, Debug)]
pub struct Throughput {
    pub answers: usize,
    /// Clicks sent and not yet answered, at most.
    pub in_flight: usize,
    /// The first click → the last `answered` line read.
    pub time: Duration,
    /// Questions whose client did not read the right `answered` line.
    pub lost: usize,
}

impl Throughput {
    pub fn per_second(&self) -> f64 {
        self.answers as f64 / self.time.as_secs_f64().max(1e-9)
    }
}

/// One store backend's column.
#[derive(Clone, Debug)]
pub struct BackendReport {
    /// "SQLite", "PostgreSQL, 1 node", "PostgreSQL, 3 nodes".
    pub name: String,
    pub ask: Latency,
    pub answer: Latency,
    pub throughput: Throughput,
}

#[derive(Clone, Debug)]
pub struct BenchReport {
    pub ask: Latency,
    /// Item 1 through `askrelay mcp`: `tools/call` written → the create POST.
    pub ask_mcp: Latency,
    /// Item 2 through `askrelay mcp`: INTERACTION_CREATE → the tool result read.
    pub answer_mcp: Latency,
    pub memory: MemoryReport,
    pub ask_floor: Latency,
    /// For reference: the create-message POST alone, serenity's `send_message` → the stand-in
    /// has it (the same body, the same client settings as the daemon's).
    pub ask_http: Latency,
    pub answer: Latency,
    pub answer_floor: Latency,
    pub capacity: CapacityReport,
    pub startup: StartupReport,
    pub rate: RateReport,
    /// SQLite first (its paths are items 1 and 2), then PostgreSQL with 1 and 3 nodes.
    pub backends: Vec<BackendReport>,
    pub stop: StopReport,
}

/// Item 7: SIGTERM → exit, with the gateway up, with it down (every connection refused), and
/// with message edits still to send.
#[derive(Clone, Debug)]
pub struct StopReport {
    pub gateway_up: Duration,
    pub gateway_down: Duration,
    pub pending_edits: Duration,
    /// The edits queued when SIGTERM was sent in the last case, and how many reached Discord.
    pub edits: usize,
    pub edits_sent: usize,
}

impl BenchReport {
    /// Everything that must be zero: questions or answers lost, or a wrong pending count.
    pub fn lost(&self) -> usize {
        self.capacity.lost
            + self.rate.lost
            + self.memory.lost
            + self.startup.backlog.abs_diff(self.startup.pending_reported)
            + self
                .backends
                .iter()
                .map(|b| b.throughput.lost)
                .sum::<usize>()
    }

    /// The tables of docs/performance.md, in Markdown.
    pub fn print(&self) {
        println!("{}", self.table());
        println!("{}", self.backends_table());
    }

    /// The store backends side by side.
    pub fn backends_table(&self) -> String {
        let Some(first) = self.backends.first() else {
            return String::new();
        };
        let mut out = String::from("| measure |");
        for b in &self.backends {
            out.push_str(&format!(" {} |", b.name));
        }
        out.push_str("\n|---|");
        out.push_str(&"---|".repeat(self.backends.len()));
        out.push('\n');
        let mut row = |what: String, cell: &dyn Fn(&BackendReport) -> String| {
            out.push_str(&format!("| {what} |"));
            for b in &self.backends {
                out.push_str(&format!(" {} |", cell(b)));
            }
            out.push('\n');
        };
        row(
            format!(
                "ask path: write `ask` → create POST, p50 (n = {})",
                first.ask.n
            ),
            &|b| fmt_dur(b.ask.p50),
        );
        row("ask path, p99".into(), &|b| fmt_dur(b.ask.p99));
        row(
            format!(
                "answer path: INTERACTION_CREATE → `answered` read, p50 (n = {})",
                first.answer.n
            ),
            &|b| fmt_dur(b.answer.p50),
        );
        row("answer path, p99".into(), &|b| fmt_dur(b.answer.p99));
        row(
            format!(
                "answering {} pending questions by clicks ({} in flight)",
                first.throughput.answers, first.throughput.in_flight
            ),
            &|b| {
                format!(
                    "{:.0} answers/s ({} lost, in {})",
                    b.throughput.per_second(),
                    b.throughput.lost,
                    fmt_dur(b.throughput.time)
                )
            },
        );
        if self.backends.len() > 1 {
            out.push_str(
                "\nEvery column runs its daemons in the benchmark's process. With 3 nodes \
                 every question is asked on a follower; the leader posts it and takes the \
                 click, and the follower's client reads `answered`.\n",
            );
        }
        out
    }

    pub fn table(&self) -> String {
        let mut rows: Vec<[String; 5]> = Vec::new();
        let ratio = |a: Duration, f: Duration| a.as_secs_f64() / f.as_secs_f64().max(1e-9);
        for (what, l, f) in [
            (
                "1. ask path: write `ask` → create POST",
                &self.ask,
                &self.ask_floor,
            ),
            (
                "2. answer path: INTERACTION_CREATE → `answered` read",
                &self.answer,
                &self.answer_floor,
            ),
        ] {
            let r50 = ratio(l.p50, f.p50);
            rows.push([
                format!("{what}, p50 (n = {})", l.n),
                fmt_dur(l.p50),
                format!("floor {}, ratio {r50:.1}×", fmt_dur(f.p50)),
                "p50 ≤ 3× floor".into(),
                yes(r50 <= 3.0),
            ]);
            rows.push([
                format!("{what}, p99"),
                fmt_dur(l.p99),
                format!(
                    "floor {}, ratio {:.1}×",
                    fmt_dur(f.p99),
                    ratio(l.p99, f.p99)
                ),
                "–".into(),
                "–".into(),
            ]);
            let (mcp, name) = if what.starts_with("1.") {
                (&self.ask_mcp, "1. through MCP: `tools/call` → create POST")
            } else {
                (
                    &self.answer_mcp,
                    "2. through MCP: INTERACTION_CREATE → tool result",
                )
            };
            let hop = mcp.p50.as_secs_f64() - l.p50.as_secs_f64();
            rows.push([
                format!("{name}, p50 (n = {})", mcp.n),
                fmt_dur(mcp.p50),
                format!(
                    "the MCP hop adds {:.0} µs at p50 (p99 {})",
                    hop * 1e6,
                    fmt_dur(mcp.p99)
                ),
                "hop ≤ 150 µs".into(),
                yes(hop <= 150e-6),
            ]);
            if what.starts_with("1.") {
                let h = &self.ask_http;
                rows.push([
                    "1. for reference: the create POST alone (serenity → stand-in)".into(),
                    format!("p50 {}", fmt_dur(h.p50)),
                    format!(
                        "p99 {}; part of the ask path, not of its floor",
                        fmt_dur(h.p99)
                    ),
                    "–".into(),
                    "–".into(),
                ]);
            }
        }
        let c = &self.capacity;
        let rss_mib = c.rss_kib as f64 / 1024.0;
        let per_req =
            (c.rss_kib.saturating_sub(c.rss_idle_kib)) as f64 * 1024.0 / c.pending.max(1) as f64;
        rows.push([
            format!(
                "3. daemon RSS, {} pending asks on open connections",
                c.pending
            ),
            format!("{rss_mib:.1} MiB"),
            format!(
                "{:.1} MiB idle; {:.1} KiB per pending ask",
                c.rss_idle_kib as f64 / 1024.0,
                per_req / 1024.0
            ),
            "≤ 64 MiB".into(),
            yes(rss_mib <= 64.0),
        ]);
        rows.push([
            format!("3. answering all {} (socket `answer`)", c.pending),
            format!(
                "{:.0} answers/s",
                c.pending as f64 / c.answer_time.as_secs_f64().max(1e-9)
            ),
            format!("{} lost, in {}", c.lost, fmt_dur(c.answer_time)),
            "0 lost".into(),
            yes(c.lost == 0),
        ]);
        let s = &self.startup;
        rows.push([
            format!("4. start-up with {} pending rows", s.backlog),
            fmt_dur(s.to_serve),
            format!(
                "spawn → first reply; connect() worked at {}; {} pending reported",
                fmt_dur(s.to_connect),
                s.pending_reported
            ),
            "< 1 s".into(),
            yes(s.to_serve < Duration::from_secs(1) && s.pending_reported == s.backlog),
        ]);
        let r = &self.rate;
        rows.push([
            format!(
                "5. post rate, {} questions over {} channels ({}/{} s per channel, {}/s global)",
                r.questions,
                r.channels,
                r.limits.channel_messages,
                r.limits.channel_window.as_secs_f64(),
                r.limits.global_per_second
            ),
            format!("{:.1}%", r.fraction() * 100.0),
            format!(
                "{:.2} of {:.2} msg/s; last post after {} (ideal {})",
                r.achieved_rate(),
                r.allowed_rate(),
                fmt_dur(r.makespan),
                fmt_dur(r.ideal_makespan)
            ),
            "≥ 90%".into(),
            yes(r.fraction() >= 0.9),
        ]);
        let pct = r.limited_total() as f64 * 100.0 / r.requests.max(1) as f64;
        rows.push([
            "5. 429s received".into(),
            format!("{} ({pct:.2}%)", r.limited_total()),
            format!(
                "of {} requests; {} per-channel, {} global",
                r.requests, r.limited.channel, r.limited.global
            ),
            "≤ 1%".into(),
            yes(pct <= 1.0),
        ]);
        rows.push([
            "5. questions lost".into(),
            r.lost.to_string(),
            format!("{} posted", r.posted),
            "0".into(),
            yes(r.lost == 0),
        ]);
        let m = &self.memory;
        let series: Vec<String> = m
            .series
            .iter()
            .enumerate()
            .filter(|(i, _)| (i + 1) % 10 == 0 || *i == 0 || *i + 1 == m.series.len())
            .map(|(i, kib)| format!("{}: {:.1}", i + 1, *kib as f64 / 1024.0))
            .collect();
        rows.push([
            format!(
                "6. RSS after {} answered questions (rounds of {}) vs. after round {}",
                m.per_round * m.series.len(),
                m.per_round,
                m.reference() + 1
            ),
            format!("{:+.1}%", (m.growth() - 1.0) * 100.0),
            format!("MiB after round {}; {} lost", series.join(", "), m.lost),
            "within 10%".into(),
            yes(m.growth() <= 1.10 && m.lost == 0),
        ]);
        rows.extend(self.stop.rows());
        markdown(rows)
    }
}

fn markdown(rows: Vec<[String; 5]>) -> String {
    let mut out = String::new();
    out.push_str("| measure | askrelay | detail | target | met |\n");
    out.push_str("|---|---|---|---|---|\n");
    for row in rows {
        out.push_str(&format!("| {} |\n", row.join(" | ")));
    }
    out
}

impl StopReport {
    fn rows(&self) -> Vec<[String; 5]> {
        [
            (
                "gateway up",
                self.gateway_up,
                String::from("the session closed"),
            ),
            (
                "gateway down",
                self.gateway_down,
                String::from("every connection refused"),
            ),
            (
                "edits pending",
                self.pending_edits,
                format!("{} of {} edits sent first", self.edits_sent, self.edits),
            ),
        ]
        .into_iter()
        .map(|(what, took, detail)| {
            [
                format!("7. SIGTERM → exit, {what}"),
                fmt_dur(took),
                detail,
                "< shutdown_timeout_secs (10 s)".into(),
                yes(took < Duration::from_secs(10)),
            ]
        })
        .collect()
    }

    /// Item 7 alone, as a Markdown table.
    pub fn table(&self) -> String {
        markdown(self.rows())
    }
}

fn yes(ok: bool) -> String {
    if ok { "yes" } else { "**no**" }.into()
}

fn fmt_dur(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us < 1_000.0 {
        format!("{us:.0} µs")
    } else if us < 1_000_000.0 {
        format!("{:.2} ms", us / 1_000.0)
    } else {
        format!("{:.2} s", us / 1_000_000.0)
    }
}

/// Runs every item and returns the figures. Prints progress to stderr.
pub async fn run(cfg: &BenchConfig) -> BenchReport {
    if let Err(e) = rlimit::increase_nofile_limit(u64::MAX) {
        eprintln!("bench: cannot raise the open-file limit: {e}");
    }
    eprintln!("bench: floors ({} samples each)", cfg.asks);
    let ask_floor = ask_floor(cfg.asks, cfg.warmup).await;
    let answer_floor = answer_floor(cfg.asks, cfg.warmup).await;
    eprintln!("bench: ask and answer paths ({} asks)", cfg.asks);
    let paths = ask_and_answer_paths(cfg.asks, cfg.warmup, &cfg.daemon_bin).await;
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
        stop,
        ask: paths.ask,
        ask_floor,
        ask_http: paths.http,
        answer: paths.answer,
        ask_mcp: paths.ask_mcp,
        answer_mcp: paths.answer_mcp,
        memory,
        answer_floor,
        capacity,
        startup,
        rate,
        backends,
    }
}

// ---------------------------------------------------------------------------------------------
// Shared helpers

/// A one-question yes/no ask, like an agent's.
fn ask_line(request_id: &str, project: Option<&str>) -> Value {
    let mut v = json!({
        "op": "ask",
        "request_id": request_id,
        "caller": {"agent_id": "bench-agent", "owner_agent_id": null},
        "questions": [{
            "id": "go",
            "question": format!("Proceed with the destructive cleanup for {request_id}?"),
            "header": "Confirm",
            "options": [
                {"label": "Yes, delete them (Recommended)", "description": "Removes the three stale files."},
                {"label": "No, keep them", "description": "Aborts the cleanup."}
            ],
            "multiSelect": false
        }]
    });
    if let Some(p) = project {
        v["scope"] = json!({ "project": p });
    }
    v
}

fn answer_line(request_id: &str) -> Value {
    json!({"op": "answer", "request_id": request_id, "question": "go",
           "select": ["No, keep them"], "by": "bench"})
}

async fn bounded<T>(what: &str, limit: Duration, fut: impl std::future::Future<Output = T>) -> T {
    match tokio::time::timeout(limit, fut).await {
        Ok(v) => v,
        Err(_) => panic!(
            "bench: gave up after {} s waiting for {what}",
            limit.as_secs()
        ),
    }
}

/// Reads events until `name`; panics on an error event, EOF or after `STEP_LIMIT`.
async fn expect_event(c: &mut Client, name: &str) -> Value {
    bounded(&format!("a {name:?} event"), STEP_LIMIT, async {
        loop {
            let ev = c
                .recv_json()
                .await
                .unwrap_or_else(|e| panic!("bench: reading while waiting for {name}: {e:#}"))
                .unwrap_or_else(|| panic!("bench: the daemon closed while waiting for {name}"));
            if ev["event"] == name {
                return ev;
            }
            if ev["event"] == "error" {
                panic!("bench: expected {name}, got {ev}");
            }
        }
    })
    .await
}

/// Connects, retrying while the socket is missing or its backlog is full.
async fn connect(path: &Path) -> Client {
    let deadline = Instant::now() + STEP_LIMIT;
    loop {
        match Client::connect(path).await {
            Ok(c) => return c,
            Err(_) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            Err(e) => panic!("bench: cannot connect to {}: {e}", path.display()),
        }
    }
}

/// The pool settings of src/store.rs: WAL, synchronous NORMAL.
async fn open_pool(path: &Path) -> sqlx::SqlitePool {
    let options = SqliteConnectOptions::from_str(&format!("sqlite://{}", path.display()))
        .unwrap()
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal)
        .foreign_keys(true)
        .busy_timeout(Duration::from_secs(10));
    SqlitePoolOptions::new()
        .max_connections(4)
        .connect_with(options)
        .await
        .expect("bench: open the floor database")
}

async fn floor_table(pool: &sqlx::SqlitePool) {
    sqlx::query(
        "CREATE TABLE requests (key INTEGER PRIMARY KEY AUTOINCREMENT, request_id TEXT NOT NULL \
         UNIQUE, questions_json TEXT NOT NULL, status TEXT NOT NULL DEFAULT 'pending', \
         created_at INTEGER NOT NULL, answered_at INTEGER, result_json TEXT)",
    )
    .execute(pool)
    .await
    .expect("bench: floor table");
}

fn now_ms() -> i64 {
    askrelay::domain::clock::now_ms()
}

// ---------------------------------------------------------------------------------------------
// Floors

/// Floor of the ask path: the client writes the same `ask` line the daemon gets; a minimal
/// server reads the line, INSERTs a row like the daemon's request row (one WAL commit), and
/// writes a one-line reply that the client reads. Timed from the write to the read.
async fn ask_floor(n: usize, warmup: usize) -> Latency {
    let dir = tempfile::tempdir().unwrap();
    let pool = open_pool(&dir.path().join("floor.db")).await;
    floor_table(&pool).await;
    let sock = dir.path().join("floor.sock");
    let listener = UnixListener::bind(&sock).unwrap();
    let server_pool = pool.clone();
    let server = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let (rd, mut wr) = stream.into_split();
        let mut rd = BufReader::new(rd);
        let mut line = String::new();
        while rd.read_line(&mut line).await.unwrap_or(0) > 0 {
            let v: Value = serde_json::from_str(&line).unwrap();
            sqlx::query(
                "INSERT INTO requests (request_id, questions_json, created_at) VALUES (?, ?, ?)",
            )
            .bind(v["request_id"].as_str().unwrap_or_default())
            .bind(v["questions"].to_string())
            .bind(now_ms())
            .execute(&server_pool)
            .await
            .unwrap();
            wr.write_all(b"{\"event\":\"stored\"}\n").await.unwrap();
            line.clear();
        }
    });
    let stream = UnixStream::connect(&sock).await.unwrap();
    let (rd, mut wr) = stream.into_split();
    let mut rd = BufReader::new(rd);
    let mut samples = Vec::with_capacity(n);
    let mut reply = String::new();
    for i in 0..warmup + n {
        let mut line = ask_line(&format!("floor-{i}"), None).to_string();
        line.push('\n');
        let t0 = Instant::now();
        wr.write_all(line.as_bytes()).await.unwrap();
        reply.clear();
        bounded("the floor reply", STEP_LIMIT, rd.read_line(&mut reply))
            .await
            .unwrap();
        if i >= warmup {
            samples.push(t0.elapsed());
        }
    }
    drop(wr);
    let _ = server.await;
    pool.close().await;
    Latency::of(samples)
}

/// Floor of the answer path: a WebSocket server sends the same INTERACTION_CREATE frame the
/// stand-in sends; a minimal client reads it, UPDATEs one row (one WAL commit) and writes one
/// line to a Unix socket, which the timing side reads. Timed from the frame's send to the read.
async fn answer_floor(n: usize, warmup: usize) -> Latency {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;
    let dir = tempfile::tempdir().unwrap();
    let pool = open_pool(&dir.path().join("floor.db")).await;
    floor_table(&pool).await;
    for i in 0..(warmup + n) {
        sqlx::query(
            "INSERT INTO requests (request_id, questions_json, created_at) VALUES (?, ?, ?)",
        )
        .bind(format!("floor-{i}"))
        .bind(ask_line("x", None)["questions"].to_string())
        .bind(now_ms())
        .execute(&pool)
        .await
        .unwrap();
    }
    let sock = dir.path().join("floor.sock");
    let unix = UnixListener::bind(&sock).unwrap();
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = tcp.local_addr().unwrap();
    // The "daemon": a WebSocket client that commits and tells its agent.
    let client_pool = pool.clone();
    let daemon = tokio::spawn(async move {
        let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (mut ws, _) = tokio_tungstenite::client_async(format!("ws://{addr}/"), stream)
            .await
            .unwrap();
        let mut agent = UnixStream::connect(&sock).await.unwrap();
        while let Some(Ok(msg)) = ws.next().await {
            let Message::Text(text) = msg else { continue };
            let v: Value = serde_json::from_str(text.as_str()).unwrap();
            let id = v["d"]["data"]["custom_id"].as_str().unwrap_or_default();
            sqlx::query("UPDATE requests SET status = 'answered', answered_at = ?, result_json = ? WHERE request_id = ? AND status = 'pending'")
                .bind(now_ms())
                .bind(r#"{"answers":[{"id":"go","selected":["No, keep them"],"custom":null}]}"#)
                .bind(id)
                .execute(&client_pool)
                .await
                .unwrap();
            let mut line = json!({"event": "answered", "request_id": id,
                "result": {"answers": [{"id": "go", "selected": ["No, keep them"], "custom": null}]}})
                .to_string();
            line.push('\n');
            agent.write_all(line.as_bytes()).await.unwrap();
        }
    });
    let (ws_stream, _) = tcp.accept().await.unwrap();
    let mut ws = tokio_tungstenite::accept_async(ws_stream).await.unwrap();
    let (agent, _) = unix.accept().await.unwrap();
    let mut agent = BufReader::new(agent);
    let clicker = Clicker::new(42, "bench", &[]);
    let mut samples = Vec::with_capacity(n);
    let mut line = String::new();
    for i in 0..warmup + n {
        let at = fixtures::At {
            application_id: 1,
            guild_id: Some(2),
            channel_id: CHANNEL,
            message_id: 3,
        };
        let mut payload =
            fixtures::component_click(7_000_000 + i as u64, &at, &clicker, &format!("floor-{i}"));
        payload["message"]["content"] = json!("x".repeat(600));
        let frame = json!({"op": 0, "t": "INTERACTION_CREATE", "s": i + 2, "d": payload});
        let t0 = Instant::now();
        ws.send(Message::Text(frame.to_string().into()))
            .await
            .unwrap();
        line.clear();
        bounded(
            "the floor's answered line",
            STEP_LIMIT,
            agent.read_line(&mut line),
        )
        .await
        .unwrap();
        if i >= warmup {
            samples.push(t0.elapsed());
        }
    }
    drop(ws);
    daemon.abort();
    let _ = daemon.await;
    pool.close().await;
    Latency::of(samples)
}

// ---------------------------------------------------------------------------------------------
// Items 1 and 2: the real daemon in this process, Discord through the stand-in

fn discord_config(dir: &Path) -> Config {
    let mut config = Config {
        socket_path: dir.join("askrelay.sock"),
        database_url: format!("sqlite://{}", dir.join("state/askrelay.db").display()),
        ..Config::default()
    };
    config.terminal.enabled = Some(false);
    config.discord.token = Some(Secret::new(
        "MTE4MDAwMDAwMDAwMDAwMDAwMQ.Gx1234.bench-bot-token",
    ));
    config
}

/// The message of the question asked as `request_id`, whose `accepted` line is `accepted`:
/// the first link, or, when `accepted` has none, the message the stand-in gets within `limit`.
/// An ask that lands while a repair pass is under way (the one the gateway's READY starts,
/// say) is posted by that pass, in the background, and its `accepted` says so without a link.
async fn posted_message(
    standin: &StandIn,
    accepted: &Value,
    request_id: &str,
    limit: Duration,
) -> Option<(u64, Value)> {
    if let Some(link) = accepted["message_links"][0].as_str() {
        let mid = message_id_of_link(link);
        return standin.message(mid).map(|m| (mid, m));
    }
    let want = question_of(request_id);
    tokio::time::timeout(
        limit,
        standin.wait_for_request(|r| {
            r.method == "POST"
                && r.status == 200
                && r.body.as_ref().is_some_and(|b| shows(b, &want))
        }),
    )
    .await
    .ok()?;
    let message = standin
        .created_messages_from(0)
        .into_iter()
        .rev()
        .find(|m| shows(m, &want))?;
    let mid = message["id"].as_str()?.parse().ok()?;
    Some((mid, message))
}

fn message_id_of_link(link: &str) -> u64 {
    link.rsplit('/')
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("bench: not a message link: {link}"))
}

/// The figures of items 1 and 2.
struct Paths {
    ask: Latency,
    answer: Latency,
    http: Latency,
    ask_mcp: Latency,
    answer_mcp: Latency,
}

/// Each iteration asks on a fresh connection (timed: write → the stand-in has the create
/// POST), waits for `accepted`, clicks the first button (timed: INTERACTION_CREATE sent →
/// `answered` read), then waits for the interaction callback, which carries the message's final
/// state (type 7, update message), so that the next iteration starts quiet. Then the same
/// through `askrelay mcp` (the `bin` given) on the same daemon.
async fn ask_and_answer_paths(n: usize, warmup: usize, bin: &Path) -> Paths {
    let standin = StandIn::start().await;
    let dir = tempfile::tempdir().unwrap();
    let mut config = discord_config(dir.path());
    config.discord.api_base = standin.base_url.clone();
    config.discord.channel_id = Some(Snowflake(CHANNEL));
    let daemon = Daemon::start(config.clone()).await.unwrap();
    bounded("the gateway session", STEP_LIMIT, standin.wait_ready()).await;
    let clicker = Clicker::new(4242, "bench-person", &[]);
    let mut ask_samples = Vec::with_capacity(n);
    let mut answer_samples = Vec::with_capacity(n);
    for i in 0..warmup + n {
        // The stand-in keeps only this iteration's records, so that its bookkeeping (which
        // shares this process's 2 CPUs with the daemon) does not grow with the run.
        standin.forget_history();
        let request_id = format!("path-{i}");
        let mut c = connect(&config.socket_path).await;
        let mut line = ask_line(&request_id, None).to_string();
        line.push('\n');
        let t0 = Instant::now();
        c.send_raw(line.as_bytes()).await.unwrap();
        let accepted = expect_event(&mut c, "accepted").await;
        let (mid, message) = posted_message(&standin, &accepted, &request_id, STEP_LIMIT)
            .await
            .unwrap_or_else(|| panic!("bench: no message for {accepted}"));
        let nonce = message["nonce"].as_str().unwrap_or_default().to_owned();
        let post = standin
            .wait_for_request(|r| {
                r.method == "POST"
                    && r.status == 200
                    && r.body
                        .as_ref()
                        .and_then(|b| b.get("nonce"))
                        .and_then(Value::as_str)
                        == Some(nonce.as_str())
            })
            .await;
        let ask_time = post.at.saturating_duration_since(t0);
        click_first_button(&standin, &message, mid, 8_000_000 + i as u64, &clicker).await;
        let answered = expect_event(&mut c, "answered").await;
        let answer_time = dispatched(&standin).elapsed();
        assert_eq!(answered["request_id"], request_id.as_str());
        wait_callback(&standin, 8_000_000 + i as u64).await;
        if i >= warmup {
            ask_samples.push(ask_time);
            answer_samples.push(answer_time);
        }
    }
    eprintln!("bench: the same through askrelay mcp");
    let (ask_mcp, answer_mcp) =
        mcp_paths(&standin, &config.socket_path, bin, n, warmup, &clicker).await;
    daemon.shutdown().await;
    let http = http_alone(&standin, n, warmup).await;
    Paths {
        ask: Latency::of(ask_samples),
        answer: Latency::of(answer_samples),
        http,
        ask_mcp,
        answer_mcp,
    }
}

/// When the stand-in wrote the last INTERACTION_CREATE to the gateway socket: where the answer
/// path's clock starts (its own bookkeeping before that is not the daemon's time).
fn dispatched(standin: &StandIn) -> Instant {
    standin
        .last_dispatch_at()
        .expect("bench: the stand-in dispatched the interaction")
}

/// Sends a click on the message's first button; returns when it was sent.
async fn click_first_button(
    standin: &StandIn,
    message: &Value,
    mid: u64,
    iid: u64,
    clicker: &Clicker,
) -> Instant {
    let custom_id = message["components"][0]["components"][0]["custom_id"]
        .as_str()
        .unwrap_or_else(|| panic!("bench: no button in {message}"))
        .to_owned();
    let at = fixtures::At {
        application_id: standin.application_id(),
        guild_id: Some(standin.guild_id()),
        channel_id: message["channel_id"]
            .as_str()
            .and_then(|c| c.parse().ok())
            .unwrap_or(CHANNEL),
        message_id: mid,
    };
    let payload = fixtures::component_click(iid, &at, clicker, &custom_id);
    let t = Instant::now();
    standin.send_interaction(payload).await;
    t
}

/// Waits for the callback of interaction `iid`, which must update the message (type 7).
async fn wait_callback(standin: &StandIn, iid: u64) {
    let callback = format!("/interactions/{iid}/");
    let cb = bounded(
        "an interaction callback",
        STEP_LIMIT,
        standin.wait_for_request(|r| r.path.contains(&callback)),
    )
    .await;
    let kind = cb.body.as_ref().and_then(|b| b["type"].as_u64());
    assert_eq!(
        kind,
        Some(7),
        "bench: the winning click updates the message"
    );
}

/// Items 1 and 2 through `askrelay mcp`: a `tools/call` written to its stdin → the create
/// POST; the click → the tool result read from its stdout.
async fn mcp_paths(
    standin: &StandIn,
    socket: &Path,
    bin: &Path,
    n: usize,
    warmup: usize,
    clicker: &Clicker,
) -> (Latency, Latency) {
    use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};
    let mut child = tokio::process::Command::new(bin)
        .arg("mcp")
        .env_clear()
        .env("ASKRELAY_SOCKET_PATH", socket)
        .env("ASKRELAY_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("bench: cannot start {} mcp: {e}", bin.display()));
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut rpc_id = 0u64;
    let line = |v: Value| {
        let mut l = v.to_string();
        l.push('\n');
        l
    };
    let init = line(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"}}}),
    );
    stdin.write_all(init.as_bytes()).await.unwrap();
    bounded("the MCP initialize reply", STEP_LIMIT, stdout.next_line())
        .await
        .unwrap();
    let note = line(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    stdin.write_all(note.as_bytes()).await.unwrap();
    let mut asks = Vec::with_capacity(n);
    let mut answers = Vec::with_capacity(n);
    for i in 0..warmup + n {
        standin.forget_history();
        rpc_id += 1;
        let marker = format!("mcp-{i}");
        let call = line(
            json!({"jsonrpc": "2.0", "id": rpc_id, "method": "tools/call", "params": {
            "name": "ask_user_question", "arguments": {"questions": [{
                "id": "go", "question": format!("Proceed for {marker}?"), "header": "Confirm",
                "options": [{"label": "Yes, delete them (Recommended)"}, {"label": "No, keep them"}]
            }]}}}),
        );
        let t0 = Instant::now();
        stdin.write_all(call.as_bytes()).await.unwrap();
        let want = format!("Proceed for {marker}?");
        let post = bounded(
            "the create POST of an MCP call",
            STEP_LIMIT,
            standin.wait_for_request(|r| {
                r.method == "POST"
                    && r.status == 200
                    && r.body.as_ref().is_some_and(|b| shows(b, &want))
            }),
        )
        .await;
        let ask_time = post.at.saturating_duration_since(t0);
        let message = standin
            .created_messages_from(0)
            .into_iter()
            .rev()
            .find(|m| shows(m, &want))
            .expect("bench: the MCP call's message");
        let mid: u64 = message["id"].as_str().unwrap().parse().unwrap();
        let iid = 9_000_000 + i as u64;
        click_first_button(standin, &message, mid, iid, clicker).await;
        let result = bounded("the MCP tool result", STEP_LIMIT, async {
            loop {
                let line = stdout
                    .next_line()
                    .await
                    .unwrap()
                    .expect("bench: askrelay mcp exited");
                let v: Value = serde_json::from_str(&line).unwrap();
                if v["id"] == rpc_id {
                    return v;
                }
            }
        })
        .await;
        let answer_time = dispatched(standin).elapsed();
        assert_eq!(result["result"]["isError"], false, "bench: {result}");
        wait_callback(standin, iid).await;
        if i >= warmup {
            asks.push(ask_time);
            answers.push(answer_time);
        }
    }
    drop(stdin);
    let _ = child.wait().await;
    (Latency::of(asks), Latency::of(answers))
}

/// Item 6: the `askrelay` binary answers `rounds` × `per_round` questions through Discord
/// (the stand-in, in this process): each round asks `per_round` questions pipelined over 10
/// connections, clicks every message, and reads every `answered`; the daemon's RSS is read
/// after each round. The stand-in forgets each round's messages so that it stays small.
async fn memory_rounds(bin: &Path, rounds: usize, per_round: usize) -> MemoryReport {
    let standin = StandIn::start().await;
    let dir = tempfile::tempdir().unwrap();
    let mut daemon = DaemonProc::spawn_with(
        bin,
        dir.path(),
        &[
            ("ASKRELAY_TERMINAL__ENABLED", "false".into()),
            (
                "ASKRELAY_DISCORD__TOKEN",
                "MTE4MDAwMDAwMDAwMDAwMDAwMQ.Gx1234.bench-token".into(),
            ),
            ("ASKRELAY_DISCORD__API_BASE", standin.base_url.clone()),
            ("ASKRELAY_DISCORD__CHANNEL_ID", CHANNEL.to_string()),
        ],
    );
    daemon.wait_serving().await;
    bounded("the gateway session", STEP_LIMIT, standin.wait_ready()).await;
    let clicker = Clicker::new(4242, "bench-person", &[]);
    let connections = 10;
    let mut series = Vec::with_capacity(rounds);
    let mut lost = 0;
    let mut iid = 10_000_000u64;
    for round in 0..rounds {
        let mut conns = Vec::with_capacity(connections);
        for _ in 0..connections {
            conns.push(connect(&daemon.socket).await);
        }
        let mut ids: Vec<Vec<String>> = vec![Vec::new(); connections];
        for k in 0..per_round {
            let id = format!("mem-{round}-{k}");
            conns[k % connections]
                .send_json(&ask_line(&id, None))
                .await
                .unwrap();
            ids[k % connections].push(id);
        }
        let mut messages = Vec::with_capacity(per_round);
        for (c, ids) in conns.iter_mut().zip(&ids) {
            for _ in ids {
                let ev = expect_event(c, "accepted").await;
                let id = ev["request_id"].as_str().unwrap_or_default();
                messages.push(
                    posted_message(&standin, &ev, id, STEP_LIMIT)
                        .await
                        .unwrap_or_else(|| panic!("bench: no message for {ev}")),
                );
            }
        }
        for (mid, message) in &messages {
            click_first_button(&standin, message, *mid, iid, &clicker).await;
            iid += 1;
        }
        for (c, ids) in conns.iter_mut().zip(&ids) {
            for _ in ids {
                let ev = expect_event(c, "answered").await;
                if ev["result"]["answers"][0]["selected"][0] != "Yes, delete them (Recommended)" {
                    lost += 1;
                }
            }
        }
        bounded(
            "every callback of the round",
            STEP_LIMIT,
            standin.wait_for_requests(per_round, |r| r.path.contains("/interactions/")),
        )
        .await;
        drop(conns);
        standin.forget_history();
        let rss = daemon.rss_kib();
        series.push(rss);
        if (round + 1) % 10 == 0 || round == 0 {
            eprintln!(
                "bench: round {} of {rounds}: daemon RSS {:.1} MiB",
                round + 1,
                rss as f64 / 1024.0
            );
        }
    }
    daemon.terminate().await;
    MemoryReport {
        per_round,
        series,
        lost,
    }
}

/// The create-message POST on its own: the body the daemon last sent, with a new nonce each
/// time, through a serenity `Http` built like the daemon's (`build_http`, proxy mode). Timed
/// from the call to the stand-in having the request.
async fn http_alone(standin: &StandIn, n: usize, warmup: usize) -> Latency {
    let last = standin
        .wait_for_requests(1, |r| r.method == "POST" && r.path.ends_with("/messages"))
        .await
        .pop()
        .and_then(|r| r.body)
        .expect("bench: a create body to replay");
    let mut config = discord_config(Path::new("/nonexistent"));
    config.discord.api_base = standin.base_url.clone();
    let http = askrelay::answerer::discord::build_http(&config).unwrap();
    let channel = serenity::all::ChannelId::new(CHANNEL);
    let mut samples = Vec::with_capacity(n);
    for i in 0..warmup + n {
        standin.forget_history();
        let nonce = format!("http-{i}");
        let mut body = last.clone();
        body["nonce"] = json!(nonce);
        let t0 = Instant::now();
        bounded(
            "a create POST",
            STEP_LIMIT,
            http.send_message(channel, Vec::new(), &body),
        )
        .await
        .expect("bench: the create POST");
        let rec = standin
            .wait_for_request(|r| {
                r.method == "POST"
                    && r.body
                        .as_ref()
                        .and_then(|b| b.get("nonce"))
                        .and_then(Value::as_str)
                        == Some(nonce.as_str())
            })
            .await;
        if i >= warmup {
            samples.push(rec.at.saturating_duration_since(t0));
        }
    }
    Latency::of(samples)
}

// ---------------------------------------------------------------------------------------------
// Items 3 and 4: the daemon binary

/// A daemon process (terminal answerer, no Discord) on `dir`; killed when dropped.
struct DaemonProc {
    child: Child,
    socket: PathBuf,
}

impl DaemonProc {
    fn spawn(bin: &Path, dir: &Path) -> DaemonProc {
        Self::spawn_with(bin, dir, &[])
    }

    /// With more environment (or some replaced).
    fn spawn_with(bin: &Path, dir: &Path, extra: &[(&str, String)]) -> DaemonProc {
        assert!(
            bin.exists(),
            "bench: the daemon binary {} does not exist (cargo build --release --bin askrelay)",
            bin.display()
        );
        let socket = dir.join("askrelay.sock");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("daemon.log"))
            .unwrap();
        let child = Command::new(bin)
            .arg("serve")
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("ASKRELAY_SOCKET_PATH", &socket)
            .env(
                "ASKRELAY_DATABASE_URL",
                format!("sqlite://{}", dir.join("state/askrelay.db").display()),
            )
            .env("ASKRELAY_TERMINAL__ENABLED", "true")
            .env("ASKRELAY_CANCEL_GRACE_SECS", "3600")
            .env("ASKRELAY_RESTART_GRACE_SECS", "3600")
            .env("ASKRELAY_LOG", "warn")
            // One local user asks everything here.
            .env("ASKRELAY_LIMITS__MAX_PENDING_PER_UID", "1000000")
            .envs(extra.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("bench: cannot start {}: {e}", bin.display()));
        DaemonProc { child, socket }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits until the daemon answers `health`; returns the number of pending requests.
    async fn wait_serving(&mut self) -> usize {
        let deadline = Instant::now() + STEP_LIMIT;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("bench: the daemon exited early: {status} (see its daemon.log)");
            }
            if let Ok(mut c) = Client::connect(&self.socket).await {
                if let Ok(Ok(v)) =
                    tokio::time::timeout(STEP_LIMIT, c.call_json(&json!({"op": "health"}))).await
                {
                    return v["pending"].as_u64().unwrap_or(0) as usize;
                }
            }
            assert!(
                Instant::now() < deadline,
                "bench: the daemon did not serve within {} s",
                STEP_LIMIT.as_secs()
            );
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()))
            .expect("bench: read /proc/PID/status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("bench: VmRSS in /proc/PID/status")
    }

    /// SIGKILL: a crash.
    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM and a bounded wait for the graceful shutdown, then SIGKILL.
    async fn terminate(&mut self) {
        let sent = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status()
            .is_ok_and(|s| s.success());
        if !sent {
            self.kill();
            return;
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.kill();
    }
}

impl Drop for DaemonProc {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Item 3: `n` clients each ask on their own connection and wait; the daemon's RSS with all of
/// them pending; then 16 connections answer them all through `answer`, and every client must
/// read its `answered` line.
async fn capacity(bin: &Path, n: usize) -> CapacityReport {
    let dir = tempfile::tempdir().unwrap();
    let mut daemon = DaemonProc::spawn(bin, dir.path());
    daemon.wait_serving().await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let rss_idle_kib = daemon.rss_kib();
    let socket = daemon.socket.clone();
    let accepted = Arc::new(AtomicUsize::new(0));
    let accepted_note = Arc::new(tokio::sync::Notify::new());
    let connecting = Arc::new(tokio::sync::Semaphore::new(256));
    let mut clients = tokio::task::JoinSet::new();
    for i in 0..n {
        let (socket, accepted, note, connecting) = (
            socket.clone(),
            accepted.clone(),
            accepted_note.clone(),
            connecting.clone(),
        );
        clients.spawn(async move {
            let request_id = format!("cap-{i}");
            let mut c = {
                let _permit = connecting.acquire().await.unwrap();
                let mut c = connect(&socket).await;
                c.send_json(&ask_line(&request_id, None)).await.unwrap();
                expect_event(&mut c, "accepted").await;
                c
            };
            accepted.fetch_add(1, Ordering::SeqCst);
            note.notify_one();
            // Hold the connection until the answer comes.
            let ev = bounded("an answered line", Duration::from_secs(600), c.recv_json()).await;
            let ok = matches!(&ev, Ok(Some(v)) if v["event"] == "answered"
                && v["request_id"] == request_id.as_str()
                && v["result"]["answers"][0]["selected"][0] == "No, keep them");
            (ok, Instant::now())
        });
    }
    bounded(
        "every capacity ask to be accepted",
        Duration::from_secs(600),
        async {
            while accepted.load(Ordering::SeqCst) < n {
                accepted_note.notified().await;
            }
        },
    )
    .await;
    // Let the daemon settle, then take the larger of two readings.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut rss_kib = daemon.rss_kib();
    tokio::time::sleep(Duration::from_millis(500)).await;
    rss_kib = rss_kib.max(daemon.rss_kib());
    eprintln!(
        "bench: {n} pending, daemon RSS {:.1} MiB",
        rss_kib as f64 / 1024.0
    );

    let t0 = Instant::now();
    let next = Arc::new(AtomicUsize::new(0));
    let mut answerers = tokio::task::JoinSet::new();
    for _ in 0..16 {
        let (socket, next) = (socket.clone(), next.clone());
        answerers.spawn(async move {
            let mut c = connect(&socket).await;
            let mut failed = 0usize;
            loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                if i >= n {
                    return failed;
                }
                let reply = bounded(
                    "an answer reply",
                    STEP_LIMIT,
                    c.call_json(&answer_line(&format!("cap-{i}"))),
                )
                .await;
                match reply {
                    Ok(v) if v["event"] == "answer_accepted" => {}
                    other => {
                        eprintln!("bench: answering cap-{i} failed: {other:?}");
                        failed += 1;
                    }
                }
            }
        });
    }
    while let Some(r) = answerers.join_next().await {
        let _ = r.expect("bench: an answering task panicked");
    }
    let mut delivered = 0;
    let mut last = t0;
    while let Some(r) = clients.join_next().await {
        let (ok, at) = r.expect("bench: a capacity client panicked");
        if ok {
            delivered += 1;
            last = last.max(at);
        }
    }
    daemon.terminate().await;
    CapacityReport {
        pending: n,
        rss_idle_kib,
        rss_kib,
        answer_time: last.saturating_duration_since(t0),
        lost: n - delivered,
    }
}

/// Item 4: a first daemon takes `n` asks (pipelined over 10 connections) and is SIGKILLed with
/// all of them pending; a second one is timed from spawn to its first reply.
async fn startup(bin: &Path, n: usize) -> StartupReport {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut first = DaemonProc::spawn(bin, dir.path());
        first.wait_serving().await;
        let lanes = 10.min(n.max(1));
        let mut fill = tokio::task::JoinSet::new();
        for lane in 0..lanes {
            let socket = first.socket.clone();
            let ids: Vec<usize> = (lane..n).step_by(lanes).collect();
            fill.spawn(async move {
                let mut c = connect(&socket).await;
                for i in &ids {
                    c.send_json(&ask_line(&format!("backlog-{i}"), None))
                        .await
                        .unwrap();
                }
                for _ in &ids {
                    expect_event(&mut c, "accepted").await;
                }
                c
            });
        }
        let mut held = Vec::new();
        while let Some(c) = fill.join_next().await {
            held.push(c.expect("bench: a backlog client panicked"));
        }
        first.kill();
    }
    let t0 = Instant::now();
    let mut second = DaemonProc::spawn(bin, dir.path());
    let socket = second.socket.clone();
    let deadline = t0 + STEP_LIMIT;
    let (to_connect, mut c) = loop {
        // A stale socket file from the killed daemon refuses connections until the new one
        // replaces it.
        if let Ok(c) = Client::connect(&socket).await {
            break (t0.elapsed(), c);
        }
        assert!(
            Instant::now() < deadline,
            "bench: the daemon did not listen within {} s",
            STEP_LIMIT.as_secs()
        );
        if let Ok(Some(status)) = second.child.try_wait() {
            panic!("bench: the daemon exited early: {status}");
        }
        tokio::task::yield_now().await;
    };
    let health = bounded(
        "the first health reply",
        STEP_LIMIT,
        c.call_json(&json!({"op": "health"})),
    )
    .await
    .expect("bench: health");
    let to_serve = t0.elapsed();
    let pending_reported = health["pending"].as_u64().unwrap_or(0) as usize;
    second.terminate().await;
    StartupReport {
        backlog: n,
        to_connect,
        to_serve,
        pending_reported,
    }
}

// ---------------------------------------------------------------------------------------------
// Item 7: how long SIGTERM takes

#[derive(Clone, Copy, PartialEq)]
enum StopCase {
    GatewayUp,
    GatewayDown,
    PendingEdits,
}

/// The edits queued before SIGTERM in the last case.
const STOP_EDITS: usize = 20;

/// Item 7 (also run alone: `bench --stop-only`).
pub async fn stop_times(bin: &Path) -> StopReport {
    let (gateway_up, _) = stop_once(bin, StopCase::GatewayUp).await;
    let (gateway_down, _) = stop_once(bin, StopCase::GatewayDown).await;
    let (pending_edits, edits_sent) = stop_once(bin, StopCase::PendingEdits).await;
    StopReport {
        gateway_up,
        gateway_down,
        pending_edits,
        edits: STOP_EDITS,
        edits_sent,
    }
}

/// One daemon on the stand-in, stopped with SIGTERM: the time to its exit, and the message
/// edits the stand-in got.
async fn stop_once(bin: &Path, case: StopCase) -> (Duration, usize) {
    let standin = StandIn::start().await;
    let dir = tempfile::tempdir().unwrap();
    if case == StopCase::GatewayDown {
        standin.set_gateway_down(true);
    }
    let mut daemon = DaemonProc::spawn_with(
        bin,
        dir.path(),
        &[
            (
                "ASKRELAY_DISCORD__TOKEN",
                "MTE4MDAwMDAwMDAwMDAwMDAwMQ.Gx1234.bench-bot-token".into(),
            ),
            ("ASKRELAY_DISCORD__API_BASE", standin.base_url.clone()),
            ("ASKRELAY_DISCORD__CHANNEL_ID", CHANNEL.to_string()),
            ("ASKRELAY_DISCORD__TERMINAL_ANSWERS", "true".into()),
        ],
    );
    daemon.wait_serving().await;
    match case {
        StopCase::GatewayDown => {
            bounded(
                "the gateway to refuse a connection",
                STEP_LIMIT,
                standin.wait_refused_upgrades(1),
            )
            .await
        }
        _ => {
            bounded(
                "the gateway session",
                STEP_LIMIT,
                standin.wait_identify_count(1),
            )
            .await
        }
    }
    let edits = |standin: &StandIn| {
        standin
            .requests()
            .iter()
            .filter(|r| r.method == "PATCH" && r.path.contains("/messages/"))
            .count()
    };
    if case == StopCase::PendingEdits {
        let mut c = connect(&daemon.socket).await;
        for i in 0..STOP_EDITS {
            c.send_json(&ask_line(&format!("stop-{i}"), None))
                .await
                .unwrap();
            expect_event(&mut c, "accepted").await;
        }
        bounded(
            "the questions to be posted",
            STEP_LIMIT,
            standin.wait_for_requests(STOP_EDITS, |r| r.method == "POST" && r.status == 200),
        )
        .await;
        // Each edit is held a little, so that most are still to send when SIGTERM comes.
        standin.stall_next(
            "PATCH",
            "/messages/",
            Stall::For(Duration::from_millis(50)),
            STOP_EDITS,
        );
        let mut a = connect(&daemon.socket).await;
        for i in 0..STOP_EDITS {
            a.send_json(&answer_line(&format!("stop-{i}")))
                .await
                .unwrap();
            expect_event(&mut a, "answer_accepted").await;
        }
    }
    let t0 = Instant::now();
    daemon.terminate().await;
    (t0.elapsed(), edits(&standin))
}

// ---------------------------------------------------------------------------------------------
// Item 5: serenity's own rate limiter against a rate-limited stand-in over TLS

async fn rate_limits(n: usize, channels: usize, limits: &RateLimits) -> RateReport {
    let standin = StandIn::start_with(StandInOptions {
        tls: true,
        rate_limits: Some(limits.clone()),
    })
    .await;
    let client = standin.tls_client();
    let dir = tempfile::tempdir().unwrap();
    let mut config = discord_config(dir.path());
    for c in 0..channels {
        let route: Route = serde_json::from_value(json!({
            "name": format!("bench-{c}"),
            "match": {"project": format!("p{c}")},
            "channel_id": BURST_CHANNEL + c as u64,
        }))
        .unwrap();
        config.routes.push(route);
    }
    let daemon = Daemon::start_with(
        config.clone(),
        DaemonHooks {
            discord_client: Some(client),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    bounded("the gateway session", STEP_LIMIT, standin.wait_ready()).await;
    let before = standin.requests().len();

    // Connect every agent first, then let them all ask at once.
    let go = Arc::new(tokio::sync::Barrier::new(n + 1));
    let mut agents = tokio::task::JoinSet::new();
    for i in 0..n {
        let (socket, go, standin) = (config.socket_path.clone(), go.clone(), standin.clone());
        agents.spawn(async move {
            let mut c = connect(&socket).await;
            let id = format!("burst-{i}");
            let line = ask_line(&id, Some(&format!("p{}", i % channels)));
            go.wait().await;
            c.send_json(&line).await.unwrap();
            let ev = bounded(
                "a burst ask to be accepted",
                Duration::from_secs(600),
                expect_event(&mut c, "accepted"),
            )
            .await;
            let mid = posted_message(&standin, &ev, &id, Duration::from_secs(600))
                .await
                .map(|(mid, _)| mid);
            // A waiting agent keeps its connection: hand it back to be held to the end.
            (mid, c)
        });
    }
    bounded("every burst agent to connect", STEP_LIMIT * 2, go.wait()).await;
    let t0 = Instant::now();
    let mut linked = HashSet::new();
    let mut waiting = Vec::with_capacity(n);
    while let Some(r) = agents.join_next().await {
        let (mid, c) = r.expect("bench: a burst agent panicked");
        linked.extend(mid);
        waiting.push(c);
    }
    let requests: Vec<_> = standin.requests().into_iter().skip(before).collect();
    let creates: Vec<_> = requests
        .iter()
        .filter(|r| {
            r.method == "POST"
                && r.status == 200
                && r.path.contains("/channels/")
                && r.path.ends_with("/messages")
        })
        .collect();
    let last = creates.iter().map(|r| r.at).max().unwrap_or(t0);
    if std::env::var_os("BENCH_DEBUG").is_some() {
        for r in &requests {
            eprintln!(
                "bench: {:>9.3} s {} {} {}",
                r.at.saturating_duration_since(t0).as_secs_f64(),
                r.status,
                r.method,
                r.path
            );
        }
    }
    let mut posted_messages = HashSet::new();
    for c in 0..channels {
        for m in standin.messages_in(BURST_CHANNEL + c as u64) {
            if let Some(id) = m["id"].as_str().and_then(|s| s.parse::<u64>().ok()) {
                posted_messages.insert(id);
            }
        }
    }
    let delivered = linked.intersection(&posted_messages).count();
    let per_channel = n.div_ceil(channels.max(1));
    let windows = per_channel.div_ceil(limits.channel_messages.max(1) as usize);
    let ideal = limits.channel_window * (windows.saturating_sub(1) as u32);
    let limited = standin.rate_limited();
    drop(waiting);
    daemon.shutdown().await;
    RateReport {
        questions: n,
        channels,
        limits: limits.clone(),
        makespan: last.saturating_duration_since(t0),
        ideal_makespan: ideal,
        posted: creates.len(),
        requests: requests.len(),
        limited,
        lost: n - delivered,
    }
}

// ---------------------------------------------------------------------------------------------
// The store backends: SQLite, PostgreSQL with one node and with three

/// Clicks in flight at most while answering many: as many as item 3's answering connections.
const IN_FLIGHT: usize = 16;
/// Connections the many asks are pipelined over.
const LANES: usize = 10;

/// SQLite's column (its paths are items 1 and 2: `sqlite_ask`, `sqlite_answer`), then, unless
/// `cfg.postgres` is `None`, PostgreSQL with 1 node and with 3, each on a database of its own.
async fn backends(
    cfg: &BenchConfig,
    sqlite_ask: Latency,
    sqlite_answer: Latency,
) -> Vec<BackendReport> {
    // Request ids unique to this run: a given PostgreSQL database keeps earlier runs' rows.
    let tag = format!("{}-{}", std::process::id(), now_ms());
    eprintln!(
        "bench: backends: SQLite, answering {} by clicks",
        cfg.answers
    );
    let nodes = Nodes::start(None, 1).await;
    let throughput = answer_many(&nodes, &[0], &format!("sqlite-{tag}"), cfg.answers).await;
    nodes.shutdown().await;
    let mut out = vec![BackendReport {
        name: "SQLite".into(),
        ask: sqlite_ask,
        answer: sqlite_answer,
        throughput,
    }];
    let Some(pg) = &cfg.postgres else {
        return out;
    };
    for n in [1, 3] {
        let (url, scratch) = match pg {
            Postgres::Scratch => {
                let db = ScratchDb::create().await.unwrap_or_else(|e| {
                    panic!("bench: a scratch database: {e:#} (or --no-postgres)")
                });
                (db.url.clone(), Some(db))
            }
            Postgres::Url(url) => (url.clone(), None),
        };
        eprintln!(
            "bench: backends: PostgreSQL with {n} node(s) on {}: {} asks, then answering {} by \
             clicks",
            redact_url(&url),
            cfg.asks,
            cfg.answers
        );
        let nodes = Nodes::start(Some(&url), n).await;
        // With a cluster, asked on the followers: every answer crosses from the leader.
        let ask_on: Vec<usize> = if n == 1 { vec![0] } else { (1..n).collect() };
        let run = format!("pg{n}-{tag}");
        let (ask, answer) = paths_on(&nodes, ask_on[0], &run, cfg.asks, cfg.warmup).await;
        let throughput = answer_many(&nodes, &ask_on, &run, cfg.answers).await;
        nodes.shutdown().await;
        if let Some(db) = scratch {
            if let Err(e) = db.drop_now().await {
                eprintln!("bench: cannot drop the scratch database: {e:#}");
            }
        }
        out.push(BackendReport {
            name: format!("PostgreSQL, {n} node{}", if n == 1 { "" } else { "s" }),
            ask,
            answer,
            throughput,
        });
    }
    out
}

/// Daemons in this process on one database, with Discord through one stand-in: `node-1` leads
/// (it starts first and is waited for), the others follow.
struct Nodes {
    standin: StandIn,
    daemons: Vec<Daemon>,
    _dir: tempfile::TempDir,
}

impl Nodes {
    /// `n` daemons on `url`, or one on a SQLite file of its own when `url` is `None`.
    async fn start(url: Option<&str>, n: usize) -> Nodes {
        let standin = StandIn::start().await;
        let dir = tempfile::tempdir().unwrap();
        let mut daemons = Vec::with_capacity(n);
        for i in 1..=n {
            let mut config = discord_config(dir.path());
            config.socket_path = dir.path().join(format!("node-{i}.sock"));
            if let Some(url) = url {
                config.database_url = url.to_owned();
            }
            config.cluster.node_id = Some(format!("node-{i}"));
            config.discord.api_base = standin.base_url.clone();
            config.discord.channel_id = Some(Snowflake(CHANNEL));
            // One local user asks everything here.
            config.limits.max_pending_per_uid = 1_000_000;
            let daemon = Daemon::start(config)
                .await
                .unwrap_or_else(|e| panic!("bench: cannot start node-{i}: {e:#}"));
            if i == 1 {
                let mut roles = daemon.hub.roles();
                bounded("node-1 to lead", STEP_LIMIT, roles.wait_for(Role::leads))
                    .await
                    .unwrap();
                bounded("the gateway session", STEP_LIMIT, standin.wait_ready()).await;
            }
            daemons.push(daemon);
        }
        for d in &daemons[1..] {
            let mut roles = d.hub.roles();
            bounded(
                "a node to see node-1 lead",
                STEP_LIMIT,
                roles
                    .wait_for(|r| matches!(r, Role::Follower { leader: Some(l) } if l == "node-1")),
            )
            .await
            .unwrap();
        }
        Nodes {
            standin,
            daemons,
            _dir: dir,
        }
    }

    fn socket(&self, i: usize) -> &Path {
        &self.daemons[i].socket_path
    }

    /// The followers first, so that the lead never moves.
    async fn shutdown(self) {
        for d in self.daemons.into_iter().rev() {
            d.shutdown().await;
        }
    }
}

/// The question text of [`ask_line`], which the message shows: how a follower's client finds
/// the message the leader posted (its `accepted` has no link).
fn question_of(request_id: &str) -> String {
    format!("Proceed with the destructive cleanup for {request_id}?")
}

/// Whether `message` shows `question` (as a person reads it: agent text is escaped).
fn shows(message: &Value, question: &str) -> bool {
    message["embeds"][0]["description"]
        .as_str()
        .is_some_and(|d| super::discord_markdown::shown(d) == question)
}

/// Items 1 and 2 on node `ask_on`: ask on a fresh connection (timed: write → the stand-in has
/// the create POST, from whichever node posts), click the first button (timed:
/// INTERACTION_CREATE sent → `answered` read on the asking connection), and wait for the
/// callback so that the next iteration starts quiet.
async fn paths_on(
    nodes: &Nodes,
    ask_on: usize,
    run: &str,
    n: usize,
    warmup: usize,
) -> (Latency, Latency) {
    let standin = &nodes.standin;
    let clicker = Clicker::new(4242, "bench-person", &[]);
    let mut asks = Vec::with_capacity(n);
    let mut answers = Vec::with_capacity(n);
    for i in 0..warmup + n {
        standin.forget_history();
        let request_id = format!("{run}-path-{i}");
        let want = question_of(&request_id);
        let mut c = connect(nodes.socket(ask_on)).await;
        let mut line = ask_line(&request_id, None).to_string();
        line.push('\n');
        let t0 = Instant::now();
        c.send_raw(line.as_bytes()).await.unwrap();
        expect_event(&mut c, "accepted").await;
        let post = bounded(
            "the create POST",
            STEP_LIMIT,
            standin.wait_for_request(|r| {
                r.method == "POST"
                    && r.status == 200
                    && r.body.as_ref().is_some_and(|b| shows(b, &want))
            }),
        )
        .await;
        let ask_time = post.at.saturating_duration_since(t0);
        let message = standin
            .created_messages_from(0)
            .into_iter()
            .rev()
            .find(|m| shows(m, &want))
            .expect("bench: the posted message");
        let mid: u64 = message["id"].as_str().unwrap().parse().unwrap();
        let iid = 11_000_000 + i as u64;
        click_first_button(standin, &message, mid, iid, &clicker).await;
        let answered = expect_event(&mut c, "answered").await;
        let answer_time = dispatched(standin).elapsed();
        assert_eq!(answered["request_id"], request_id.as_str());
        wait_callback(standin, iid).await;
        if i >= warmup {
            asks.push(ask_time);
            answers.push(answer_time);
        }
    }
    (Latency::of(asks), Latency::of(answers))
}

/// `n` questions asked (pipelined over [`LANES`] connections spread over the nodes `ask_on`)
/// and posted, untimed; then every message is clicked with at most [`IN_FLIGHT`] clicks not yet
/// answered, timed from the first click to the last `answered` line read.
async fn answer_many(nodes: &Nodes, ask_on: &[usize], run: &str, n: usize) -> Throughput {
    let standin = &nodes.standin;
    standin.forget_history();
    let mut conns = Vec::with_capacity(LANES);
    for l in 0..LANES {
        conns.push(connect(nodes.socket(ask_on[l % ask_on.len()])).await);
    }
    let mut ids: Vec<HashSet<String>> = vec![HashSet::new(); LANES];
    for k in 0..n {
        let id = format!("{run}-many-{k}");
        conns[k % LANES]
            .send_json(&ask_line(&id, None))
            .await
            .unwrap();
        ids[k % LANES].insert(id);
    }
    for (c, ids) in conns.iter_mut().zip(&ids) {
        for _ in ids {
            expect_event(c, "accepted").await;
        }
    }
    // A follower accepts before the leader posts: wait for every message.
    let messages = bounded(
        "every question to be posted",
        Duration::from_secs(600),
        async {
            let mut changes = standin.subscribe();
            let mut created = Vec::with_capacity(n);
            loop {
                created.extend(standin.created_messages_from(created.len()));
                if created.len() >= n {
                    return created;
                }
                let _ = tokio::time::timeout(Duration::from_millis(100), changes.changed()).await;
            }
        },
    )
    .await;
    let window = Arc::new(tokio::sync::Semaphore::new(IN_FLIGHT));
    let t0 = Instant::now();
    let mut readers = tokio::task::JoinSet::new();
    for (mut c, ids) in conns.into_iter().zip(ids) {
        let window = window.clone();
        readers.spawn(async move {
            let mut lost = 0;
            let mut last = Instant::now();
            for _ in 0..ids.len() {
                let ev = bounded("an answered line", STEP_LIMIT, c.recv_json()).await;
                let ok = matches!(&ev, Ok(Some(v)) if v["event"] == "answered"
                    && v["request_id"].as_str().is_some_and(|id| ids.contains(id))
                    && v["result"]["answers"][0]["selected"][0] == "Yes, delete them (Recommended)");
                if !ok {
                    eprintln!("bench: expected an answer, got {ev:?}");
                    lost += 1;
                }
                last = Instant::now();
                window.add_permits(1);
            }
            (lost, last)
        });
    }
    let clicker = Clicker::new(4242, "bench-person", &[]);
    for (k, message) in messages.iter().take(n).enumerate() {
        bounded("room for a click", STEP_LIMIT, window.acquire())
            .await
            .unwrap()
            .forget();
        let mid: u64 = message["id"].as_str().unwrap().parse().unwrap();
        click_first_button(standin, message, mid, 12_000_000 + k as u64, &clicker).await;
    }
    let mut lost = 0;
    let mut last = t0;
    while let Some(r) = readers.join_next().await {
        let (l, at) = r.expect("bench: a reading lane panicked");
        lost += l;
        last = last.max(at);
    }
    Throughput {
        answers: n,
        in_flight: IN_FLIGHT,
        time: last.saturating_duration_since(t0),
        lost,
    }
}
