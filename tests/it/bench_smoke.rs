//! A tiny run of the benchmark (crates/testkit/src/bench/), its PostgreSQL columns included (on
//! scratch databases of the server `ASKRELAY_TEST_POSTGRES` names): it must complete and lose
//! nothing. No figure is checked: timing belongs in docs/performance.md, not in assertions.

use askrelay_testkit::bench::{self, BenchConfig, Postgres};
use askrelay_testkit::standin::RateLimits;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_benchmark_completes_and_loses_nothing() {
    let cfg = BenchConfig {
        asks: 30,
        warmup: 5,
        capacity: 200,
        backlog: 200,
        burst: 20,
        burst_channels: 2,
        // Short windows keep the burst to about a second.
        rate_limits: RateLimits {
            channel_messages: 5,
            channel_window: Duration::from_millis(300),
            global_per_second: 50,
        },
        memory_rounds: 3,
        memory_per_round: 20,
        daemon_bin: env!("CARGO_BIN_EXE_askrelay").into(),
        // The echo server is an example: `.ci/run`'s `bench --quick` measures it.
        mcp_echo_bin: None,
        answers: 30,
        postgres: Some(Postgres::Scratch),
    };
    let report = tokio::time::timeout(Duration::from_secs(120), bench::run(&cfg))
        .await
        .expect("the benchmark did not finish within 120 s");
    report.print();
    assert_eq!(report.capacity.lost, 0, "capacity answers lost");
    assert_eq!(report.rate.lost, 0, "burst questions lost");
    assert_eq!(
        report.startup.pending_reported, cfg.backlog,
        "pending after a restart with a backlog"
    );
    assert_eq!(report.ask.n, cfg.asks);
    assert_eq!(report.answer.n, cfg.asks);
    assert_eq!(report.ask_mcp.n, cfg.asks);
    assert_eq!(report.memory.series.len(), cfg.memory_rounds);
    assert_eq!(report.memory.lost, 0, "answers lost in the memory rounds");
    let names: Vec<&str> = report.backends.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(
        names,
        ["SQLite", "PostgreSQL, 1 node", "PostgreSQL, 3 nodes"]
    );
    for b in &report.backends {
        assert_eq!(b.ask.n, cfg.asks, "{}", b.name);
        assert_eq!(b.answer.n, cfg.asks, "{}", b.name);
        assert_eq!(b.throughput.answers, 30, "{}", b.name);
        assert_eq!(b.throughput.lost, 0, "{}: answers lost", b.name);
    }
}
