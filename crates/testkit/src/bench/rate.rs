//! Item 5: serenity's own rate limiter against a rate-limited stand-in over TLS.

use super::helpers::{ask_line, bounded, connect, expect_event};
use super::paths::{discord_config, posted_message};
use super::report::RateReport;
use super::{BURST_CHANNEL, STEP_LIMIT};
use crate::standin::{RateLimits, StandIn, StandInOptions};
use askrelay::config::Route;
use askrelay::daemon::{Daemon, DaemonHooks};
use serde_json::json;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub(super) async fn rate_limits(n: usize, channels: usize, limits: &RateLimits) -> RateReport {
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
