//! Items 1 and 2: the ask and answer paths through the real daemon in this process, Discord
//! through the stand-in; the same through `askrelay mcp`, the memory rounds, and the stand-in's
//! HTTP alone.

use super::binary::DaemonProc;
use super::floors::{AnswerFloor, AskFloor};
use super::helpers::{ask_line, bounded, connect, expect_event, question_of, shows};
use super::mcp::{mcp_paths, McpPaths};
use super::report::{fmt_dur, Latency, MemoryReport};
use super::{CHANNEL, STEP_LIMIT};
use crate::fixtures::{self, Clicker};
use crate::standin::StandIn;
use askrelay::config::{Config, Secret, Snowflake};
use askrelay::daemon::Daemon;
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};

pub(super) fn discord_config(dir: &Path) -> Config {
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
pub(super) async fn posted_message(
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

pub(super) fn message_id_of_link(link: &str) -> u64 {
    link.rsplit('/')
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("bench: not a message link: {link}"))
}

/// The figures of items 1 and 2.
pub(super) struct Paths {
    pub(super) ask: Latency,
    pub(super) answer: Latency,
    /// The floors, each sample taken right before the path's sample of the same iteration.
    pub(super) ask_floor: Latency,
    pub(super) answer_floor: Latency,
    pub(super) http: Latency,
    pub(super) mcp: McpPaths,
}

impl Paths {
    /// The rows of `bench --paths-only`: each path's p50 and p99 beside its floor's.
    pub(super) fn table(&self) -> String {
        let mut out = String::from("| path | p50 | p99 | floor p50 | floor p99 | p50 ratio |\n");
        out.push_str("|---|---|---|---|---|---|\n");
        let none = Latency {
            n: 0,
            p50: Duration::ZERO,
            p99: Duration::ZERO,
        };
        for (what, l, f) in [
            ("1. ask", &self.ask, &self.ask_floor),
            ("2. answer", &self.answer, &self.answer_floor),
            ("1. ask through MCP", &self.mcp.ask, &self.ask),
            ("2. answer through MCP", &self.mcp.answer, &self.answer),
            (
                "the MCP floor (echo round trip)",
                self.mcp.echo.as_ref().unwrap_or(&none),
                &none,
            ),
        ] {
            let ratio = if f.n == 0 {
                "–".to_owned()
            } else {
                format!(
                    "{:.2}×",
                    l.p50.as_secs_f64() / f.p50.as_secs_f64().max(1e-9)
                )
            };
            out.push_str(&format!(
                "| {what} (n = {}) | {} | {} | {} | {} | {ratio} |\n",
                l.n,
                fmt_dur(l.p50),
                fmt_dur(l.p99),
                fmt_dur(f.p50),
                fmt_dur(f.p99),
            ));
        }
        out.push_str("\n(For the MCP rows the \"floor\" is the same path through the socket.)\n");
        out
    }
}

/// Each iteration asks on a fresh connection (timed: write → the stand-in has the create
/// POST), waits for `accepted`, clicks the first button (timed: INTERACTION_CREATE sent →
/// `answered` read), then waits for the interaction callback, which carries the message's final
/// state (type 7, update message), so that the next iteration starts quiet. Before the ask and
/// before the click, a sample of that path's floor: floor, path, floor, path. Then the same
/// through `askrelay mcp` (the `bin` given) on the same daemon, beside the echo server (`echo`).
pub(super) async fn ask_and_answer_paths(
    n: usize,
    warmup: usize,
    bin: &Path,
    echo: Option<&Path>,
) -> Paths {
    let mut ask_floor = AskFloor::start().await;
    let mut answer_floor = AnswerFloor::start().await;
    let mut ask_floor_samples = Vec::with_capacity(n);
    let mut answer_floor_samples = Vec::with_capacity(n);
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
        let ask_floor_time = ask_floor.sample().await;
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
        let answer_floor_time = answer_floor.sample().await;
        click_first_button(&standin, &message, mid, 8_000_000 + i as u64, &clicker).await;
        let answered = expect_event(&mut c, "answered").await;
        let answer_time = dispatched(&standin).elapsed();
        assert_eq!(answered["request_id"], request_id.as_str());
        wait_callback(&standin, 8_000_000 + i as u64).await;
        if i >= warmup {
            ask_samples.push(ask_time);
            answer_samples.push(answer_time);
            ask_floor_samples.push(ask_floor_time);
            answer_floor_samples.push(answer_floor_time);
        }
    }
    ask_floor.stop().await;
    answer_floor.stop().await;
    eprintln!("bench: the same through askrelay mcp, each call beside one through the echo server");
    let mcp = mcp_paths(
        &standin,
        &config.socket_path,
        bin,
        echo,
        n,
        warmup,
        &clicker,
    )
    .await;
    daemon.shutdown().await;
    let http = http_alone(&standin, n, warmup).await;
    Paths {
        ask: Latency::of(ask_samples),
        answer: Latency::of(answer_samples),
        ask_floor: Latency::of(ask_floor_samples),
        answer_floor: Latency::of(answer_floor_samples),
        http,
        mcp,
    }
}

/// Waits for the create POST of the message that shows `want`, asked at `t0`: the ask path's
/// time (`t0` → the stand-in has the POST), and the message with its id.
pub(super) async fn created_since(
    standin: &StandIn,
    want: &str,
    t0: Instant,
) -> (Duration, u64, Value) {
    let post = bounded(
        "the create POST",
        STEP_LIMIT,
        standin.wait_for_request(|r| {
            r.method == "POST" && r.status == 200 && r.body.as_ref().is_some_and(|b| shows(b, want))
        }),
    )
    .await;
    let message = standin
        .created_messages_from(0)
        .into_iter()
        .rev()
        .find(|m| shows(m, want))
        .unwrap_or_else(|| panic!("bench: no message shows {want:?}"));
    let mid: u64 = message["id"].as_str().unwrap().parse().unwrap();
    (post.at.saturating_duration_since(t0), mid, message)
}

/// When the stand-in wrote the last INTERACTION_CREATE to the gateway socket: where the answer
/// path's clock starts (its own bookkeeping before that is not the daemon's time).
pub(super) fn dispatched(standin: &StandIn) -> Instant {
    standin
        .last_dispatch_at()
        .expect("bench: the stand-in dispatched the interaction")
}

/// Sends a click on the message's first button; returns when it was sent.
pub(super) async fn click_first_button(
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
pub(super) async fn wait_callback(standin: &StandIn, iid: u64) {
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

/// Item 6: the `askrelay` binary answers `rounds` × `per_round` questions through Discord
/// (the stand-in, in this process): each round asks `per_round` questions pipelined over 10
/// connections, clicks every message, and reads every `answered`; the daemon's RSS is read
/// after each round. The stand-in forgets each round's messages so that it stays small.
pub(super) async fn memory_rounds(bin: &Path, rounds: usize, per_round: usize) -> MemoryReport {
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
pub(super) async fn http_alone(standin: &StandIn, n: usize, warmup: usize) -> Latency {
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
