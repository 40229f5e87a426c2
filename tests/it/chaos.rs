//! The fault harness of `crates/testkit/src/chaos.rs` in small configurations: the real `askrelay`
//! binary against the Discord stand-in, with SIGKILLs and restarts, a crash point, 5xx and 429
//! bursts and gateway drops; alone on SQLite, and as a cluster of three on PostgreSQL (a scratch
//! database on the server `ASKRELAY_TEST_POSTGRES` names). Some requests of each go to the quorum
//! routes (two and three approvals), voted on by distinct people, and their audit rows are
//! checked. The full runs are
//! `cargo run --release --example chaos -- --requests 200 --kills 20` and the same with
//! `--nodes 3 --database postgres`.

use askrelay_testkit::chaos::{self, ChaosConfig};
use std::path::Path;
use std::time::Duration;

/// A small run's config: a short ramp, clicks spread over 1.5 s, faults every 80 ms; a failed
/// run keeps the daemons' logs and database, and the report says where.
fn small(requests: usize, kills: usize, seed: u64) -> ChaosConfig {
    let mut cfg = ChaosConfig::new(requests, kills, seed);
    cfg.ramp = Duration::from_millis(800);
    cfg.click_spread = Duration::from_millis(1500);
    cfg.fault_every = Duration::from_millis(80);
    cfg.verbose = std::env::var_os("CHAOS_VERBOSE").is_some();
    cfg.keep_dir_on_failure = true;
    cfg
}

/// Runs `cfg` within `limit` and checks the bars.
async fn run_small(cfg: ChaosConfig, limit: Duration) -> chaos::ChaosReport {
    let daemon = Path::new(env!("CARGO_BIN_EXE_askrelay"));
    let report = tokio::time::timeout(limit, chaos::run(cfg, daemon))
        .await
        .expect("the chaos run did not finish in time although every wait in it is bounded");
    println!("{}", report.render());
    assert!(
        report.ok(),
        "the chaos run missed the bar:\n{}",
        report.render()
    );
    report
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_small_chaos_run_loses_nothing_and_posts_nothing_twice() {
    let mut cfg = small(20, 3, 20_251_130);
    cfg.deadline = Duration::from_secs(40);
    let report = run_small(cfg, Duration::from_secs(150)).await;
    assert_eq!(report.answered, 20);
    assert_eq!(report.kills, 3);
    // Every body checked: posts, retries, reposts after a kill, edits at start-up.
    assert!(report.bodies_checked >= 20, "{report:?}");
    assert_eq!(report.bodies_invalid, 0, "{report:?}");
    // Queued before the first ask, so these never depend on timing.
    assert!(
        report.injected_5xx > 0 && report.injected_429 > 0 && report.stalls > 0,
        "{report:?}"
    );
    assert_quorums(&report);
}

/// The seed's plan has quorum questions (the plan depends on the seed only): every one settled
/// by a quorum or a decisive label, checked against the audit rows.
fn assert_quorums(report: &chaos::ChaosReport) {
    assert!(report.quorum_requests > 0, "{report:?}");
    assert!(report.settled_by_quorum > 0, "{report:?}");
    assert!(report.settled_by_decisive > 0, "{report:?}");
    assert_eq!(
        report.settled_by_quorum + report.settled_by_decisive,
        report.quorum_questions,
        "{report:?}"
    );
    assert!(report.votes >= 2 * report.settled_by_quorum, "{report:?}");
    assert_eq!(report.quorum_violations, 0, "{report:?}");
    assert_eq!(report.settled_twice, 0, "{report:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_small_cluster_chaos_run_loses_nothing_and_fails_over() {
    let mut cfg = small(30, 4, 20_251_201);
    cfg.nodes = 3;
    cfg.database = Some("postgres".into());
    cfg.deadline = Duration::from_secs(45);
    let report = run_small(cfg, Duration::from_secs(170)).await;
    assert_eq!(report.answered, 30);
    assert_eq!(report.kills, 4);
    assert_eq!(report.nodes, 3);
    // At least one kill hits the leader (the last one does if none did before), and every
    // leader kill is followed by a live gateway session again.
    assert!(report.leader_kills >= 1, "{report:?}");
    assert_eq!(report.failovers, report.leader_kills, "{report:?}");
    assert_eq!(report.bodies_invalid, 0, "{report:?}");
    assert_quorums(&report);
}
