//! The fault harness: the real daemon against the Discord stand-in under SIGKILLs, crash points,
//! injected 5xx and 429 bursts and gateway drops (see `crates/testkit/src/chaos/`).
//!
//! ```text
//! cargo run --release --example chaos -- --requests 200 --kills 20
//! cargo run --release --example chaos -- --requests 200 --kills 20 --seed 7 --verbose
//! cargo run --release --example chaos -- --nodes 3 --database postgres --requests 200 --kills 20
//! cargo run --release --example chaos -- --nodes 3 --requests 60 --kills 0 --failover-secs 2 \
//!     --faults freeze,partition,stall,skew --fault-count 8 --no-dedup
//! ```
//!
//! It runs `askrelay serve` from next to this example (`target/<profile>/askrelay`), building it
//! first with `cargo build --bin askrelay` (same profile) when it is missing or when run through
//! `cargo run`. At the end it prints requests, questions posted, duplicates posted, answers lost,
//! requests ended twice, wrong answers, questions settled twice and quorum violations (checked
//! against the audit rows; the bar is 0 for these six), and the quorum figures: requests on the
//! quorum routes, votes counted, questions settled by a quorum and by a decisive label, the
//! requester's clicks refused. It exits 1 when the bar is missed. A failed run keeps its work directory (the daemon's log and database) and says
//! where. `--verbose` shows progress, kills and faults as they happen.
//!
//! `--nodes N` runs a cluster of N daemons on one PostgreSQL database: `--database URL`, or by
//! default (and with `--database postgres`) a scratch database on the test server
//! (`ASKRELAY_TEST_POSTGRES`, by default postgres://postgres@127.0.0.1:5432/test), dropped at
//! the end unless the work directory is kept. The report then adds the leader kills and the
//! failover times.
//!
//! `--faults` adds the cluster faults (docs/reliability.md, "Cluster faults"), one at a time,
//! and a table per fault kind: the longest time without a leader (no live gateway session at
//! the stand-in) against its bar, the longest with two, duplicates, lost answers, double
//! settlements, wrong answers and clicks told "failed" that counted.

use askrelay_testkit::chaos::{self, ChaosConfig, ClusterFault};
use clap::Parser;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Parser)]
#[command(
    about = "Runs askrelay under SIGKILLs and Discord faults and checks that nothing is lost"
)]
struct Args {
    /// Requests, all in flight at once (1 to 3 questions each).
    #[arg(long, default_value_t = 200)]
    requests: usize,
    /// SIGKILLs of the daemon, each followed by a restart.
    #[arg(long, default_value_t = 20)]
    kills: usize,
    /// Seed of the random choices (questions, kill points, faults); default: from the clock.
    #[arg(long)]
    seed: Option<u64>,
    /// Give up waiting for the final lines after this many seconds.
    #[arg(long, default_value_t = 600)]
    deadline_secs: u64,
    /// Never start the daemon with ASKRELAY_TEST_CRASH_AT.
    #[arg(long)]
    no_crash_points: bool,
    /// Keep the work directory (daemon.log, askrelay.db) even when the run passes.
    #[arg(long)]
    keep_dir: bool,
    /// Progress lines on stderr.
    #[arg(long, short)]
    verbose: bool,
    /// The askrelay binary; by default target/<profile>/askrelay next to this example.
    #[arg(long)]
    daemon: Option<PathBuf>,
    /// Daemons sharing the database: more than 1 is a cluster on PostgreSQL.
    #[arg(long, default_value_t = 1)]
    nodes: usize,
    /// "postgres" (a scratch database on the test server, dropped at the end), a postgres://
    /// URL, or "sqlite". Default: SQLite for one node, a scratch database for more.
    #[arg(long, value_name = "URL")]
    database: Option<String>,
    /// Cluster faults to inject, one at a time: freeze (SIGSTOP a node, the leader half the
    /// time), partition (cut a node off from PostgreSQL), stall (PostgreSQL for everyone), skew
    /// (a node's clock 300 s off, with libfaketime). Needs --nodes 2 or more.
    #[arg(long, value_delimiter = ',', value_name = "KINDS")]
    faults: Vec<ClusterFault>,
    /// How many cluster faults in all (each kind once per round); default: one of each.
    #[arg(long, default_value_t = 0)]
    fault_count: usize,
    /// Turn the stand-in's nonce de-duplication off, so that a post sent twice shows.
    #[arg(long)]
    no_dedup: bool,
    /// cluster.failover_secs for every node (unset: the daemon's default, 3).
    #[arg(long)]
    failover_secs: Option<u64>,
    /// Freeze, partition and skew always hit the leader (by default half the time).
    #[arg(long)]
    faults_at_leader: bool,
}

/// target/<profile>/examples/chaos → target/<profile>/askrelay. Built first when it is missing;
/// under `cargo run` (which does not build binaries for an example) it is always brought up to
/// date, so that a stale daemon is never tested.
fn daemon_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("chaos: current_exe");
    let profile_dir = exe
        .parent()
        .and_then(|p| p.parent())
        .expect("chaos: the example is not in target/<profile>/examples");
    let bin = profile_dir.join("askrelay");
    let under_cargo = std::env::var_os("CARGO");
    if bin.exists() && under_cargo.is_none() {
        return bin;
    }
    let release = profile_dir.file_name().is_some_and(|n| n == "release");
    let mut build = std::process::Command::new(under_cargo.unwrap_or_else(|| "cargo".into()));
    build.args(["build", "--bin", "askrelay"]);
    if release {
        build.arg("--release");
    }
    if bin.exists() {
        eprintln!(
            "chaos: making sure {} is up to date: {build:?}",
            bin.display()
        );
    } else {
        eprintln!(
            "chaos: {} is missing; building it: {build:?}",
            bin.display()
        );
    }
    match build.status() {
        Ok(s) if s.success() => {}
        other => {
            eprintln!("chaos: building the daemon failed ({other:?})");
            std::process::exit(2);
        }
    }
    bin
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    let daemon = args.daemon.clone().unwrap_or_else(daemon_binary);
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_secs())
    });
    let mut cfg = ChaosConfig::new(args.requests, args.kills, seed);
    cfg.deadline = Duration::from_secs(args.deadline_secs);
    cfg.crash_points = !args.no_crash_points;
    cfg.verbose = args.verbose;
    cfg.keep_dir_on_failure = true;
    cfg.keep_dir = args.keep_dir;
    cfg.nodes = args.nodes;
    cfg.database = args.database.clone();
    cfg.cluster_faults = args.faults.clone();
    cfg.cluster_fault_count = args.fault_count;
    cfg.dedup = !args.no_dedup;
    cfg.failover_secs = args.failover_secs;
    cfg.faults_at_leader = args.faults_at_leader;
    eprintln!(
        "chaos: {} requests, {} kills, seed {seed}, {} node(s), daemon {}",
        cfg.requests,
        cfg.kills,
        cfg.nodes,
        daemon.display()
    );
    let report = chaos::run(cfg, &daemon).await;
    report.print();
    if !report.ok() {
        std::process::exit(1);
    }
}
