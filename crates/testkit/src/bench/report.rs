//! What the benchmark reports: the figures of each item ([`Latency`], [`CapacityReport`], ...),
//! and the tables `print` and `table` write (the ones docs/performance.md shows).

use crate::standin::{RateLimitCounts, RateLimits};
use std::time::Duration;

/// p50 and p99 of a set of samples.
#[derive(Clone, Copy, Debug)]
pub struct Latency {
    pub n: usize,
    pub p50: Duration,
    pub p99: Duration,
}

impl Latency {
    pub(super) fn of(mut samples: Vec<Duration>) -> Latency {
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

/// The machine the figures come from: its cores and CPU, and its load average (1, 5 and 15
/// minutes, from /proc/loadavg) before the run and after it. A load well above zero before
/// means something else was running, and the figures are not comparable.
#[derive(Clone, Debug)]
pub struct Machine {
    pub cores: usize,
    pub cpu: String,
    pub load_before: String,
    pub load_after: String,
}

impl Machine {
    /// The load average now, as /proc/loadavg gives it ("?" where it cannot be read).
    pub fn load() -> String {
        std::fs::read_to_string("/proc/loadavg")
            .ok()
            .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
            .unwrap_or_else(|| "?".into())
    }

    /// The machine now, with the load `load_before` read at the start.
    pub fn now(load_before: String) -> Machine {
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|c| {
                c.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, m)| m.trim().to_owned())
            })
            .unwrap_or_else(|| "unknown CPU".into());
        Machine {
            cores: std::thread::available_parallelism().map_or(0, |n| n.get()),
            cpu,
            load_before,
            load_after: Machine::load(),
        }
    }

    /// One line for the top of the tables.
    pub fn line(&self) -> String {
        format!(
            "{} CPU(s), {}; load average {} before the run, {} after",
            self.cores, self.cpu, self.load_before, self.load_after
        )
    }
}

#[derive(Clone, Debug)]
pub struct BenchReport {
    pub machine: Machine,
    /// Items 1 and 2 on Slack, beside the same floors.
    pub slack: super::SlackPaths,
    pub ask: Latency,
    /// Item 1 through `askrelay mcp`: `tools/call` written → the create POST.
    pub ask_mcp: Latency,
    /// Item 2 through `askrelay mcp`: INTERACTION_CREATE → the tool result read.
    pub answer_mcp: Latency,
    /// The MCP hop's floor: `tools/call` written → its result read, through a minimal rmcp
    /// server on stdio that answers at once (one sample before each MCP call).
    pub mcp_echo: Option<Latency>,
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
            if let (Some(echo), true) = (&self.mcp_echo, what.starts_with("2.")) {
                let hops = (self.ask_mcp.p50.as_secs_f64() - self.ask.p50.as_secs_f64())
                    + (self.answer_mcp.p50.as_secs_f64() - self.answer.p50.as_secs_f64());
                rows.push([
                    format!(
                        "the MCP hop's floor: `tools/call` → result through a minimal rmcp \
                         server on stdio, p50 (n = {})",
                        echo.n
                    ),
                    fmt_dur(echo.p50),
                    format!(
                        "both hops add {:.0} µs at p50, {:.1}× this round trip (p99 {})",
                        hops * 1e6,
                        hops / echo.p50.as_secs_f64().max(1e-9),
                        fmt_dur(echo.p99)
                    ),
                    "–".into(),
                    "–".into(),
                ]);
            }
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
        // Slack beside Discord, against the same floors (issue 41).
        for (what, l, f) in [
            (
                "1. on Slack: write `ask` → `chat.postMessage`",
                &self.slack.ask,
                &self.slack.ask_floor,
            ),
            (
                "2. on Slack: the press's envelope → `answered` read",
                &self.slack.answer,
                &self.slack.answer_floor,
            ),
        ] {
            rows.push([
                format!("{what}, p50 (n = {})", l.n),
                fmt_dur(l.p50),
                format!(
                    "floor {}, ratio {:.1}×; p99 {} (ratio {:.1}×)",
                    fmt_dur(f.p50),
                    ratio(l.p50, f.p50),
                    fmt_dur(l.p99),
                    ratio(l.p99, f.p99)
                ),
                "–".into(),
                "–".into(),
            ]);
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

pub(super) fn markdown(rows: Vec<[String; 5]>) -> String {
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

pub(super) fn yes(ok: bool) -> String {
    if ok { "yes" } else { "**no**" }.into()
}

pub(super) fn fmt_dur(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us < 1_000.0 {
        format!("{us:.0} µs")
    } else if us < 1_000_000.0 {
        format!("{:.2} ms", us / 1_000.0)
    } else {
        format!("{:.2} s", us / 1_000_000.0)
    }
}
