//! The store backends side by side: SQLite, PostgreSQL with one node and with three (asked on
//! a follower): the ask and answer paths and the throughput of answering many by clicks.

use super::helpers::{ask_line, bounded, connect, expect_event, now_ms, question_of};
use super::paths::{click_first_button, created_since, discord_config, dispatched, wait_callback};
use super::report::{BackendReport, Latency, Throughput};
use super::{BenchConfig, Postgres, CHANNEL, STEP_LIMIT};
use crate::fixtures::Clicker;
use crate::scratch::ScratchDb;
use crate::standin::StandIn;
use askrelay::config::Snowflake;
use askrelay::daemon::Daemon;
use askrelay::domain::cluster::Role;
use askrelay::store::redact_url;
use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Clicks in flight at most while answering many: as many as item 3's answering connections.
pub(super) const IN_FLIGHT: usize = 16;
/// Connections the many asks are pipelined over.
pub(super) const LANES: usize = 10;

/// SQLite's column (its paths are items 1 and 2: `sqlite_ask`, `sqlite_answer`), then, unless
/// `cfg.postgres` is `None`, PostgreSQL with 1 node and with 3, each on a database of its own.
pub(super) async fn backends(
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
pub(super) struct Nodes {
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

/// Items 1 and 2 on node `ask_on`: ask on a fresh connection (timed: write → the stand-in has
/// the create POST, from whichever node posts), click the first button (timed:
/// INTERACTION_CREATE sent → `answered` read on the asking connection), and wait for the
/// callback so that the next iteration starts quiet.
pub(super) async fn paths_on(
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
        let (ask_time, mid, message) = created_since(standin, &want, t0).await;
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
pub(super) async fn answer_many(
    nodes: &Nodes,
    ask_on: &[usize],
    run: &str,
    n: usize,
) -> Throughput {
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
