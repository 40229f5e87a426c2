//! Many nodes on one PostgreSQL database, behind a PgBouncer in transaction mode
//! (`postgres.pooler_url`) or, with `--no-pooler`, connected directly: what the database holds,
//! what the cluster answers, how long it goes without a leader, and what each node costs.
//!
//! ```text
//! cargo build --release --bin askrelay
//! cargo run --example cluster_scale -- --nodes 100
//! cargo run --example cluster_scale -- --nodes 20 --no-pooler
//! ```
//!
//! It starts `--nodes` daemons (`target/release/askrelay`) on a fresh scratch
//! database of the test server (`ASKRELAY_TEST_POSTGRES`, by default
//! postgres://postgres@127.0.0.1:5432/test) with the Discord stand-in, the first one leading;
//! then every node asks `--asks-per-node` questions at once, which a clicker answers as they are
//! posted; then the leader is killed (SIGKILL) while a follower asks one more. It reports:
//! - the server's connections for the database (`pg_stat_activity`, sampled every 50 ms) with
//!   every node idle, and at their peak;
//! - asks answered per second (from the first ask to the last answer its asker received);
//! - the leader gap: from the SIGKILL to the new leader's gateway session, and to the post of
//!   the question asked at the kill;
//! - each node's resident memory idle and after the asks (VmRSS), and at most (VmHWM).
//!
//! PgBouncer (Debian's `pgbouncer`) is started by the testkit on a free port, with
//! `--pool-size` server connections at most.

use askrelay::client::Client;
use askrelay_testkit::harness::{alice, ask_line, expect_event, press_on, yes_no, Bin, Binary};
use askrelay_testkit::harness::{Served, CHANNEL};
use askrelay_testkit::pgbouncer::PgBouncer;
use askrelay_testkit::scratch::ScratchDb;
use askrelay_testkit::standin::StandIn;
use clap::Parser;
use serde_json::Value;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Debug, Parser)]
#[command(about = "Runs N askrelay daemons on one PostgreSQL database and measures them")]
struct Args {
    /// Daemons on the database.
    #[arg(long, default_value_t = 20)]
    nodes: usize,
    /// `cluster.poll_interval_ms` of every node: how soon a follower hears of an answer
    /// without notices (behind a pooler, only the leader listens).
    #[arg(long, default_value_t = 2000)]
    poll_interval_ms: u64,
    /// Connect every node to PostgreSQL directly (no `postgres.pooler_url`).
    #[arg(long)]
    no_pooler: bool,
    /// PgBouncer's server connections for the database at most.
    #[arg(long, default_value_t = 10)]
    pool_size: u32,
    /// `postgres.max_connections` of every node (its pool).
    #[arg(long, default_value_t = 4)]
    max_connections: u32,
    /// Questions each node asks at once in the busy phase.
    #[arg(long, default_value_t = 2)]
    asks_per_node: usize,
}

/// The release binary ([`Bin`] names its binary by type).
struct Release;
impl Binary for Release {
    const PATH: &'static str = concat!(env!("CARGO_MANIFEST_DIR"), "/target/release/askrelay");
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if !std::path::Path::new(Release::PATH).exists() {
        anyhow::bail!(
            "{} is missing: cargo build --release --bin askrelay",
            Release::PATH
        );
    }
    if let Some(why) = PgBouncer::unavailable().filter(|_| !args.no_pooler) {
        anyhow::bail!("{why}; or measure without a pooler (--no-pooler)");
    }
    let db = ScratchDb::create().await?;
    let standin = StandIn::start().await;
    let bouncer = if args.no_pooler {
        None
    } else {
        let size = args.pool_size;
        Some(tokio::task::spawn_blocking(move || PgBouncer::start(size)).await??)
    };
    let dir = tempfile::tempdir()?;
    let (max_server, peak, sampler) = sample_connections(&db).await?;
    eprintln!(
        "{} nodes, {}; the server's max_connections = {max_server}",
        args.nodes,
        match &bouncer {
            Some(_) => format!(
                "behind pgbouncer (transaction mode, pool {})",
                args.pool_size
            ),
            None => "connected directly".to_owned(),
        }
    );

    let node = |name: &str| {
        let d = dir.path().join(name);
        std::fs::create_dir_all(&d).unwrap();
        let bin = Bin::<Release>::in_dir(&d)
            .discord(&standin)
            .env("ASKRELAY_DATABASE_URL", &db.url)
            .env("ASKRELAY_CLUSTER__NODE_ID", name)
            .env("ASKRELAY_CLUSTER__POLL_INTERVAL_MS", args.poll_interval_ms)
            .env("ASKRELAY_POSTGRES__MAX_CONNECTIONS", args.max_connections)
            .env("ASKRELAY_DISCORD__TERMINAL_ANSWERS", "true");
        match &bouncer {
            Some(b) => bin.env("ASKRELAY_POSTGRES__POOLER_URL", b.url(&db)),
            None => bin,
        }
    };
    let started = Instant::now();
    let mut bins = Vec::new();
    let mut served: Vec<Served> = Vec::new();
    for i in 0..args.nodes {
        let bin = node(&format!("n{i:03}"));
        let mut s = bin.serve().await;
        if i == 0 {
            s.wait_log_anywhere("leading the cluster").await;
            standin.wait_ready().await;
        } else {
            s.wait_log_anywhere("following the cluster's leader").await;
        }
        bins.push(bin);
        served.push(s);
    }
    eprintln!(
        "all {} nodes up in {:.1} s",
        args.nodes,
        started.elapsed().as_secs_f64()
    );
    // Idle: a few beats after the last start, once each node's pool closed what it opened.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let idle = connections(&db).await?;
    let rss_idle = rss(&served, "VmRSS");
    peak.store(0, Ordering::Relaxed);

    // Busy: every node asks at once; the clicker answers what is posted.
    let total = args.nodes * args.asks_per_node;
    let clicker = tokio::spawn(click_all(standin.clone(), total));
    let busy_from = Instant::now();
    let mut waits = Vec::new();
    for (i, bin) in bins.iter().enumerate() {
        for k in 0..args.asks_per_node {
            let id = format!("scale-{i}-{k}");
            let mut client = Client::connect(&bin.socket()).await?;
            client.send_json(&ask_line(&id, &yes_no("go"))).await?;
            waits.push(tokio::spawn(async move {
                expect_event(&mut client, "answered").await;
            }));
        }
    }
    for w in waits {
        w.await?;
    }
    let busy_secs = busy_from.elapsed().as_secs_f64();
    clicker.await?;
    let peak_busy = peak.load(Ordering::Relaxed);
    let rss_busy = rss(&served, "VmRSS");
    // Before the kill, which takes the leader's figures with it.
    let rss_max = rss(&served, "VmHWM");

    // The leader gap: SIGKILL the leader while a follower asks.
    let mut gap = None;
    if args.nodes > 1 {
        let identified = standin.identify_count();
        let posted_before = standin.messages_in(CHANNEL).len();
        let killed = Instant::now();
        served[0].child.start_kill()?;
        let mut client = Client::connect(&bins[1].socket()).await?;
        client
            .send_json(&ask_line("at-the-kill", &yes_no("go")))
            .await?;
        standin.wait_identify_count(identified + 1).await;
        standin.wait_ready().await;
        let gateway = killed.elapsed();
        let mut seen = standin.subscribe();
        while standin.messages_in(CHANNEL).len() <= posted_before {
            seen.changed().await?;
        }
        gap = Some((gateway, killed.elapsed()));
    }
    let peak_all = peak.load(Ordering::Relaxed).max(peak_busy);
    sampler.abort();

    println!(
        "== cluster_scale: {} nodes, {}",
        args.nodes,
        if bouncer.is_some() {
            format!(
                "behind pgbouncer (transaction mode, pool_size {})",
                args.pool_size
            )
        } else {
            "direct (no pooler)".to_owned()
        }
    );
    println!("server max_connections: {max_server}");
    println!(
        "server connections for the database: idle {} {:?}; peak {}",
        idle.iter().map(|(_, n)| n).sum::<i64>(),
        idle,
        peak_all
    );
    println!(
        "asks: {total} answered in {busy_secs:.2} s = {:.1} asks/s (poll_interval_ms {})",
        total as f64 / busy_secs,
        args.poll_interval_ms
    );
    if let Some((gateway, posted)) = gap {
        println!(
            "leader SIGKILL: new gateway session after {:.2} s; a question asked at the kill posted after {:.2} s",
            gateway.as_secs_f64(),
            posted.as_secs_f64()
        );
    }
    let stats = |v: &[u64]| {
        let max = v.iter().max().copied().unwrap_or(0);
        let avg = v.iter().sum::<u64>() / v.len().max(1) as u64;
        format!(
            "avg {:.1} MiB, max {:.1} MiB",
            avg as f64 / 1024.0,
            max as f64 / 1024.0
        )
    };
    let (leader_idle, followers_idle) = rss_idle.split_first().unwrap();
    println!(
        "RSS idle: leader {:.1} MiB, followers {}",
        *leader_idle as f64 / 1024.0,
        stats(followers_idle)
    );
    println!("RSS after the asks: {}", stats(&rss_busy));
    println!("RSS at most (VmHWM): {}", stats(&rss_max));
    for s in served.into_iter().skip(1) {
        s.terminate().await;
    }
    drop(bouncer);
    db.drop_now().await?;
    Ok(())
}

/// Presses Yes on each of the first `n` questions posted, as they are posted.
async fn click_all(standin: StandIn, n: usize) {
    let mut pressed = BTreeSet::new();
    let mut seen = standin.subscribe();
    while pressed.len() < n {
        let messages: Vec<Value> = standin.messages_in(CHANNEL);
        for m in messages {
            let id = m["id"].as_str().unwrap_or_default().to_owned();
            if pressed.insert(id) {
                press_on(&standin, &m, &alice(), "Yes, delete them (Recommended)").await;
            }
        }
        if pressed.len() < n {
            seen.changed().await.unwrap();
        }
    }
}

/// The server's max_connections, and a task that keeps the peak of the database's
/// connections (every 50 ms) in the returned counter.
async fn sample_connections(
    db: &ScratchDb,
) -> anyhow::Result<(i64, Arc<AtomicI64>, tokio::task::JoinHandle<()>)> {
    use sqlx::Connection;
    let options: sqlx::postgres::PgConnectOptions = db.url.parse()?;
    let mut conn =
        sqlx::PgConnection::connect_with(&options.application_name("cluster_scale")).await?;
    let max: String = sqlx::query_scalar("SHOW max_connections")
        .fetch_one(&mut conn)
        .await?;
    let peak = Arc::new(AtomicI64::new(0));
    let keep = peak.clone();
    let task = tokio::spawn(async move {
        loop {
            let n: Result<i64, _> = sqlx::query_scalar(
                "SELECT count(*) FROM pg_stat_activity \
                 WHERE datname = current_database() AND pid <> pg_backend_pid()",
            )
            .fetch_one(&mut conn)
            .await;
            if let Ok(n) = n {
                keep.fetch_max(n, Ordering::Relaxed);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    Ok((max.parse()?, peak, task))
}

/// The database's connections by the first word of their application name.
async fn connections(db: &ScratchDb) -> anyhow::Result<Vec<(String, i64)>> {
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect(&db.url).await?;
    let rows = sqlx::query_as(
        "SELECT split_part(application_name, ' ', 1), count(*) FROM pg_stat_activity \
         WHERE datname = current_database() AND pid <> pg_backend_pid() \
         AND application_name <> 'cluster_scale' GROUP BY 1 ORDER BY 1",
    )
    .fetch_all(&mut conn)
    .await?;
    let _ = conn.close().await;
    Ok(rows)
}

/// `field` (VmRSS, VmHWM) of /proc/PID/status of each node, in KiB (0 for one that is gone).
fn rss(served: &[Served], field: &str) -> Vec<u64> {
    served
        .iter()
        .map(|s| {
            let Some(pid) = s.child.id() else { return 0 };
            std::fs::read_to_string(format!("/proc/{pid}/status"))
                .ok()
                .and_then(|status| {
                    status.lines().find_map(|l| {
                        l.strip_prefix(field)?
                            .trim_start_matches(':')
                            .trim()
                            .trim_end_matches("kB")
                            .trim()
                            .parse()
                            .ok()
                    })
                })
                .unwrap_or(0)
        })
        .collect()
}
