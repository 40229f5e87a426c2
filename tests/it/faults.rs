//! The promises under faults: a crash between any two steps, Discord outages, gateway drops,
//! who may connect, and hostile clients.

use crate::harness::*;
use askrelay::client::Client;
use askrelay::daemon::DaemonHooks;
use askrelay_testkit::fixtures::{self, At, Clicker};
use askrelay_testkit::standin::{Failure, RateLimits, Recorded, StandIn, StandInOptions};
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use std::time::Duration;
use tokio::process::Child;

fn own_uid() -> u32 {
    std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").unwrap())
}

// --- who may connect -------------------------------------------------------------------------

#[tokio::test]
async fn a_peer_outside_allowed_uids_is_refused_and_audited() {
    let app = App::start_with(|c| c.allowed_uids = vec![own_uid() + 1]).await;
    let mut c = app.client().await;
    let ev = recv(&mut c, "an error line before the close").await;
    assert_eq!(ev["code"], "FORBIDDEN", "{ev}");
    assert!(
        ev["message"].as_str().unwrap().contains("allowed_uids"),
        "{ev}"
    );
    expect_eof(&mut c, "the refused connection to close").await;
    let audit = app.store().audit_rows(None).await.unwrap();
    assert!(audit.iter().any(|r| r.action == "connect" && !r.accepted));

    let app = App::start_with(|c| c.allowed_uids = vec![own_uid()]).await;
    let mut c = app.client().await;
    c.send_json(&ask_line("mine", &yes_no("q"))).await.unwrap();
    expect_event(&mut c, "accepted").await;
}

#[tokio::test]
async fn socket_mode_follows_the_config() {
    let app = App::start_with(|c| c.socket_mode = askrelay::config::SocketMode(0o660)).await;
    let mode = std::fs::metadata(&app.config.socket_path)
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o660);
}

// --- hostile clients ---------------------------------------------------------------------------

#[tokio::test]
async fn a_slow_loris_is_cut_off_without_starving_others() {
    let app = App::start_with(|c| c.limits.line_timeout_secs = 1).await;
    let mut slow = app.client().await;
    slow.send_raw(b"{\"op\":\"ask\",\"questions\":")
        .await
        .unwrap();
    // Meanwhile another client is served normally.
    let mut c = app.client().await;
    c.send_json(&ask_line("quick", &yes_no("q"))).await.unwrap();
    expect_event(&mut c, "accepted").await;
    app.answer("quick", "q", &["No, keep them"]).await;
    expect_event(&mut c, "answered").await;
    // The half-written line times out with an error, then the connection closes.
    let ev = recv(&mut slow, "the next line").await;
    assert!(
        ev["message"]
            .as_str()
            .unwrap()
            .contains("line_timeout_secs"),
        "{ev}"
    );
    expect_eof(&mut slow, "the timed-out connection to close").await;
}

#[tokio::test]
async fn a_thousand_idle_connections_do_not_starve_a_new_client() {
    let _ = rlimit::increase_nofile_limit(u64::MAX);
    let app = App::start().await;
    let mut idle = Vec::new();
    for _ in 0..1000 {
        idle.push(app.client().await);
    }
    let mut c = app.client().await;
    c.send_json(&ask_line("busy-day", &yes_no("q")))
        .await
        .unwrap();
    expect_event(&mut c, "accepted").await;
    app.answer("busy-day", "q", &["No, keep them"]).await;
    expect_event(&mut c, "answered").await;
    drop(idle);
}

#[tokio::test]
async fn over_the_connection_cap_a_client_gets_a_clear_error() {
    let app = App::start_with(|c| c.limits.max_connections = 3).await;
    let mut held = Vec::new();
    for _ in 0..3 {
        let mut c = app.client().await;
        // A reply proves the connection holds a slot.
        c.call_json(&json!({"op": "health"})).await.unwrap();
        held.push(c);
    }
    let mut extra = app.client().await;
    let ev = recv(&mut extra, "an error line").await;
    assert_eq!(ev["code"], "BUSY", "{ev}");
    assert!(ev["message"]
        .as_str()
        .unwrap()
        .contains("limits.max_connections"));
    // The held ones still work.
    let h = held[0].call_json(&json!({"op": "health"})).await.unwrap();
    assert_eq!(h["event"], "health");
}

#[tokio::test]
async fn garbage_and_half_lines_never_stop_the_daemon() {
    let app = App::start().await;
    let mut c = app.client().await;
    for junk in [
        &b"\xff\xfe\x00\n"[..],
        b"null\n",
        b"{\"op\":\"ask\",\"questions\":[{\"id\":\"\xe2\x82\"}]}\n",
        b"{\"op\":[]}\n",
        b"1e999999\n",
    ] {
        c.send_raw(junk).await.unwrap();
        let ev = recv(&mut c, "the next line").await;
        assert_eq!(ev["code"], "INVALID_REQUEST", "{ev}");
    }
    // A client that vanishes mid-line costs nothing.
    let mut half = app.client().await;
    half.send_raw(b"{\"op\":\"ask\",\"request_id\":\"half\"")
        .await
        .unwrap();
    drop(half);
    c.send_json(&ask_line("after", &yes_no("q"))).await.unwrap();
    expect_event(&mut c, "accepted").await;
}

// --- Discord outages (in-process daemon, stand-in) --------------------------------------------

#[tokio::test]
async fn a_5xx_storm_leaves_the_request_pending_and_unposted_until_discord_is_back() {
    let d = App::discord().await;
    d.standin()
        .fail_next("POST", "/messages", Failure::Status(503), 100_000);
    let mut c = d.client().await;
    c.send_json(&ask_line("storm", &yes_no("q"))).await.unwrap();
    let acc = expect_event(&mut c, "accepted").await;
    assert!(
        acc["posting"].as_str().unwrap().contains("unavailable"),
        "{acc}"
    );
    // `pending` says it is not posted yet, and why.
    let p = d
        .client()
        .await
        .call_json(&json!({"op": "pending"}))
        .await
        .unwrap();
    let post = &p["requests"][0]["questions"][0]["post"];
    assert_eq!(post["posted"], false, "{p}");
    d.standin()
        .wait_for_requests(5, |r| r.method == "POST" && r.path.ends_with("/messages"))
        .await;
    let p = d
        .client()
        .await
        .call_json(&json!({"op": "pending"}))
        .await
        .unwrap();
    let err = p["requests"][0]["questions"][0]["post"]["last_error"]
        .as_str()
        .unwrap_or("")
        .to_owned();
    assert!(err.contains("503"), "{p}");
    // Discord comes back: the question is posted once.
    d.standin().clear_failures();
    d.standin()
        .wait_for_request(|r| {
            r.method == "POST" && r.path.ends_with("/messages") && r.status == 200
        })
        .await;
    let msgs = d.standin().messages_in(CHANNEL);
    assert_eq!(msgs.len(), 1);
    let cb = d
        .press(&msgs[0], &Clicker::new(1, "a", &[]), "No, keep them")
        .await;
    final_state(&cb);
    expect_event(&mut c, "answered").await;
}

/// The recorded message creates in `channel`, in the order they arrived.
fn creates_in(standin: &StandIn, channel: u64) -> Vec<Recorded> {
    let path = format!("/channels/{channel}/messages");
    standin
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST" && r.path.ends_with(&path))
        .collect()
}

/// Waits for the question to be posted, then asserts that the creates in [`CHANNEL`] were `n`
/// 429s and then exactly one 200, each try at least `retry_after_secs` after the one before.
async fn expect_storm_then_one_post(d: &App, n: usize, retry_after_secs: f64) {
    within(
        "the question to be posted after the 429s",
        d.standin().wait_for_request(|r| {
            r.method == "POST" && r.path.ends_with("/messages") && r.status == 200
        }),
    )
    .await;
    let creates = creates_in(d.standin(), CHANNEL);
    let min_gap = Duration::from_secs_f64(retry_after_secs);
    let statuses: Vec<u16> = creates.iter().map(|r| r.status).collect();
    let mut want = vec![429; n];
    want.push(200);
    let seen: Vec<String> = creates
        .iter()
        .map(|r| format!("{} at +{:?}", r.status, r.at.duration_since(creates[0].at)))
        .collect();
    assert_eq!(statuses, want, "the creates, in order: {seen:?}");
    for (i, w) in creates.windows(2).enumerate() {
        let gap = w[1].at.duration_since(w[0].at);
        assert!(
            gap >= min_gap,
            "try {} came {gap:?} after a 429 that said retry after {min_gap:?}",
            i + 2
        );
    }
}

/// Behind a REST proxy (serenity's limiter off) a 429 is retried by the daemon itself, with
/// backoff: the same question is posted once, after the storm, never early.
#[tokio::test]
async fn a_429_storm_is_waited_out() {
    const STORM: usize = 12;
    // Below the harness's backoff floor (`retry_max_delay_ms = 20`): serenity does not hand
    // the daemon a 429's `retry_after`, so its backoff is what keeps it from coming back early.
    const RETRY_AFTER: f64 = 0.01;
    let d = App::discord().await;
    d.standin().fail_next(
        "POST",
        "/messages",
        Failure::RateLimited {
            retry_after_secs: RETRY_AFTER,
            global: true,
        },
        STORM,
    );
    let mut c = d.client().await;
    c.send_json(&ask_line("limited", &yes_no("q")))
        .await
        .unwrap();
    expect_event(&mut c, "accepted").await;
    expect_storm_then_one_post(&d, STORM, RETRY_AFTER).await;
    assert_eq!(d.standin().messages_in(CHANNEL).len(), 1);
    d.assert_payloads_valid();
}

/// Discord REST over TLS with serenity's own rate limiter on: the production path.
async fn rate_limited_app(limits: Option<RateLimits>) -> App {
    let standin = StandIn::start_with(StandInOptions {
        tls: true,
        rate_limits: limits,
    })
    .await;
    let hooks = DaemonHooks {
        discord_client: Some(standin.tls_client()),
        ..Default::default()
    };
    App::build(Some(standin), hooks, |c| {
        c.discord.api_base = askrelay::config::DEFAULT_API_BASE.to_owned()
    })
    .await
}

/// With the limiter on, a 429 is waited out for exactly as long as it says (`Retry-After`),
/// and the question is still posted once.
#[tokio::test]
async fn with_the_rate_limiter_on_a_429_is_retried_after_its_retry_after() {
    const STORM: usize = 2;
    const RETRY_AFTER: f64 = 0.3;
    let d = rate_limited_app(None).await;
    d.standin().fail_next(
        "POST",
        "/messages",
        Failure::RateLimited {
            retry_after_secs: RETRY_AFTER,
            global: false,
        },
        STORM,
    );
    let (_c, _) = d.ask("limited", &yes_no("q")).await;
    expect_storm_then_one_post(&d, STORM, RETRY_AFTER).await;
    d.assert_payloads_valid();
}

/// With the limiter on, a burst in one channel keeps to the channel's bucket: no create is
/// turned away, no window holds more than the bucket allows, and the questions appear in the
/// order they were asked.
#[tokio::test]
async fn with_the_rate_limiter_on_a_burst_keeps_to_the_bucket() {
    const BURST: usize = 7;
    let limits = RateLimits {
        channel_messages: 3,
        channel_window: Duration::from_millis(400),
        global_per_second: 50,
    };
    let d = rate_limited_app(Some(limits.clone())).await;
    // One agent after another, each told "accepted" (stored and posted) before the next asks,
    // so that the channel's order is defined: asks on separate connections at the same instant
    // have none (each connection's task stores its own, and on PostgreSQL they commit in any
    // order). Seven posts in a row still meet the bucket of three per window.
    let mut agents = Vec::new();
    for i in 0..BURST {
        let mut c = d.client().await;
        c.send_json(&ask_line(&format!("burst-{i}"), &yes_no("q")))
            .await
            .unwrap();
        expect_event(&mut c, "accepted").await;
        agents.push(c);
    }
    let creates = creates_in(d.standin(), CHANNEL);
    let limited = d.standin().rate_limited();
    assert_eq!(
        (limited.channel, limited.global),
        (0, 0),
        "the daemon ran into the limits"
    );
    assert_eq!(creates.len(), BURST, "one create per question");
    // Discord's windows are fixed: the first create opens one, and each later window opens
    // at the first create after the one before closed. So BURST creates need at least
    // ceil(BURST / per) windows, and the last comes that many windows, less one, after the first.
    let per = limits.channel_messages as usize;
    let windows = BURST.div_ceil(per) as u32;
    let span = creates[BURST - 1].at.duration_since(creates[0].at);
    assert!(
        span >= limits.channel_window * (windows - 1),
        "{BURST} creates within {span:?}, over {per} per {:?}",
        limits.channel_window
    );
    let order: Vec<String> = d
        .standin()
        .messages_in(CHANNEL)
        .iter()
        .map(|m| {
            let footer = m["embeds"][0]["footer"]["text"].as_str().unwrap();
            footer
                .split_whitespace()
                .find(|w| w.starts_with("burst-"))
                .unwrap()
                .to_owned()
        })
        .collect();
    let asked: Vec<String> = (0..BURST).map(|i| format!("burst-{i}")).collect();
    assert_eq!(order, asked, "the questions' order in the channel");
    d.assert_payloads_valid();
}

#[tokio::test]
async fn a_request_cancelled_while_discord_is_down_is_never_posted() {
    let d = App::discord().await;
    d.standin()
        .fail_next("POST", "/messages", Failure::Status(500), 100_000);
    let mut c = d.client().await;
    c.send_json(&ask_line("never", &yes_no("q"))).await.unwrap();
    expect_event(&mut c, "accepted").await;
    let r = d
        .client()
        .await
        .call_json(&json!({"op": "cancel", "request_id": "never"}))
        .await
        .unwrap();
    assert_eq!(r["event"], "cancelled");
    assert_eq!(recv(&mut c, "the next line").await["code"], "ABORTED");
    d.standin().clear_failures();
    // The next request is posted; the cancelled one never is.
    let mut c2 = d.client().await;
    c2.send_json(&ask_line("later", &yes_no("q")))
        .await
        .unwrap();
    expect_event(&mut c2, "accepted").await;
    let msgs = d.standin().messages_in(CHANNEL);
    assert_eq!(msgs.len(), 1);
    assert!(msgs[0]["embeds"][0]["footer"]["text"]
        .as_str()
        .unwrap()
        .contains("later"));
}

#[tokio::test]
async fn interactions_after_gateway_drops_reconnects_and_invalid_sessions_still_settle() {
    let d = App::discord().await;
    let who = Clicker::new(9, "nine", &[]);
    let mut c = d.client().await;

    c.send_json(&ask_line("g1", &yes_no("q"))).await.unwrap();
    expect_event(&mut c, "accepted").await;
    d.standin().drop_gateway().await;
    d.standin().wait_resume_count(1).await;
    let m = d.standin().messages_in(CHANNEL).pop().unwrap();
    assert_eq!(d.press(&m, &who, "No, keep them").await["type"], 7);
    assert_eq!(expect_event(&mut c, "answered").await["request_id"], "g1");

    c.send_json(&ask_line("g2", &yes_no("q"))).await.unwrap();
    expect_event(&mut c, "accepted").await;
    d.standin().send_reconnect().await;
    d.standin().wait_resume_count(2).await;
    let m = d.standin().messages_in(CHANNEL).pop().unwrap();
    assert_eq!(d.press(&m, &who, "No, keep them").await["type"], 7);
    assert_eq!(expect_event(&mut c, "answered").await["request_id"], "g2");

    c.send_json(&ask_line("g3", &yes_no("q"))).await.unwrap();
    expect_event(&mut c, "accepted").await;
    let identified = d.standin().identify_count();
    d.standin().send_invalid_session(false).await;
    d.standin().wait_identify_count(identified + 1).await;
    let m = d.standin().messages_in(CHANNEL).pop().unwrap();
    assert_eq!(d.press(&m, &who, "No, keep them").await["type"], 7);
    assert_eq!(expect_event(&mut c, "answered").await["request_id"], "g3");
}

// --- crash at every step (the real binary, SIGABRT at a named point) ------------------------

/// `askrelay serve` against the stand-in, aborting at `crash_at` when given; returns once it
/// listens and has a gateway session.
async fn serve_discord(bin: &Bin, standin: &StandIn, crash_at: Option<&str>) -> Served {
    let identified = standin.identify_count();
    let mut cmd = bin.cmd(&["serve"]);
    if let Some(p) = crash_at {
        cmd.env(askrelay::crash::ENV, p);
    }
    let served = bin.serve_cmd(cmd).await;
    within(
        "a gateway session",
        standin.wait_identify_count(identified + 1),
    )
    .await;
    served
}

/// The deliberate abort: death by SIGABRT (not any failure), within the wait limit.
async fn aborted(served: Served, point: &str) {
    use std::os::unix::process::ExitStatusExt;
    let (status, log) = served.finish().await;
    assert_eq!(
        status.signal(),
        Some(nix::sys::signal::Signal::SIGABRT as i32),
        "{point}: the daemon should abort at the crash point; it exited with {status}:\n{log}"
    );
    assert!(
        log.contains(&format!("{}={point}", askrelay::crash::ENV)),
        "{log}"
    );
}

async fn reattach(bin: &Bin, id: &str) -> Client {
    let mut c = Client::connect(&bin.socket()).await.unwrap();
    c.send_json(&ask_line(id, &yes_no("q"))).await.unwrap();
    c
}

const NO: &str = r#"{"answers":[{"id":"q","selected":["No, keep them"]}]}"#;

/// Runs one crash scenario: ask, click when the point is after a click, abort at `point`,
/// restart, re-attach. When the answer was stored before the crash the first line after the
/// re-attach must be that answer, with nothing clicked again; otherwise the request is still
/// pending, its one message still works, and a click settles it. Returns the stand-in, the
/// final line, and the restarted daemon with its `Bin`, which run until the caller drops them
/// (a caller may wait for its start-up work). The `Bin` owns the daemon's database: on
/// PostgreSQL, dropping it drops the database under the running daemon.
async fn crash_scenario(point: &str, answer_stored: bool) -> (StandIn, Value, (Child, Bin)) {
    let standin = StandIn::start().await;
    let bin = Bin::new().discord(&standin);
    let who = Clicker::new(7, "seven", &[]);
    let crashing = serve_discord(&bin, &standin, Some(point)).await;
    let mut c = reattach(&bin, point).await;
    if point == "clicked" || point == "answered" {
        expect_event(&mut c, "accepted").await;
        let m = standin.messages_in(CHANNEL).remove(0);
        let at = At {
            application_id: standin.application_id(),
            guild_id: Some(standin.guild_id()),
            channel_id: CHANNEL,
            message_id: id_of(&m),
        };
        let click = fixtures::component_click(1, &at, &who, &control(&m, "No, keep them"));
        standin.send_interaction(click).await;
    }
    aborted(crashing, point).await;
    let is_post = |r: &Recorded| r.method == "POST" && r.path.ends_with("/messages");
    // Crashed after posting but before recording the message's id: the restarted daemon posts
    // again (the nonce makes it the same message); wait for that post, not the first one.
    let posts =
        standin.requests().iter().filter(|r| is_post(r)).count() + usize::from(point == "posted");
    let daemon = serve_discord(&bin, &standin, None).await.drain();
    let mut c = reattach(&bin, point).await;
    let first = recv(&mut c, "the first line after the re-attach").await;
    let last = if answer_stored {
        assert_eq!(
            first.to_string(),
            format!(r#"{{"event":"answered","request_id":"{point}","result":{NO}}}"#),
            "{point}: the stored answer comes back at once"
        );
        first
    } else {
        assert_eq!(first["event"], "accepted", "{point}: {first}");
        // A request stored but never posted is posted by the restarted daemon.
        within(
            "the question to be posted",
            standin.wait_for_requests(posts.max(1), |r| is_post(r) && r.status == 200),
        )
        .await;
        let msgs = standin.messages_in(CHANNEL);
        assert_eq!(
            msgs.len(),
            1,
            "{point}: exactly one message, never a duplicate"
        );
        let at = At {
            application_id: standin.application_id(),
            guild_id: Some(standin.guild_id()),
            channel_id: CHANNEL,
            message_id: id_of(&msgs[0]),
        };
        let click = fixtures::component_click(2, &at, &who, &control(&msgs[0], "No, keep them"));
        standin.send_interaction(click).await;
        let cb = within(
            "the callback of the click after the restart",
            standin.wait_for_request(|r| r.path.contains("/interactions/2/")),
        )
        .await;
        final_state(cb.body.as_ref().unwrap());
        let ev = expect_event(&mut c, "answered").await;
        assert_eq!(ev["result"].to_string(), NO);
        ev
    };
    assert_eq!(
        standin.messages_in(CHANNEL).len(),
        1,
        "{point}: no duplicate post"
    );
    assert_bodies_valid(&standin);
    (standin, last, (daemon, bin))
}

#[tokio::test]
async fn crash_after_storing_before_posting() {
    crash_scenario("stored", false).await;
}

#[tokio::test]
async fn crash_after_posting_before_recording_the_message_id() {
    let (standin, _, _daemon) = crash_scenario("posted", false).await;
    // The re-post carried the same nonce and was de-duplicated.
    let posts: Vec<_> = standin
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST" && r.path.ends_with("/messages"))
        .collect();
    assert!(posts.len() >= 2);
    let nonces: std::collections::HashSet<_> = posts
        .iter()
        .map(|r| r.body.as_ref().unwrap()["nonce"].clone())
        .collect();
    assert_eq!(nonces.len(), 1, "{nonces:?}");
    assert!(posts
        .iter()
        .all(|r| r.body.as_ref().unwrap()["enforce_nonce"] == true));
}

#[tokio::test]
async fn crash_after_a_click_before_storing_the_answer() {
    // Nothing was stored: the person saw the click fail, and the same message still works.
    crash_scenario("clicked", false).await;
}

#[tokio::test]
async fn crash_after_storing_the_answer_before_telling_the_agent() {
    let (standin, _, _daemon) = crash_scenario("answered", true).await;
    // The message edit the crash cut short was finished at start-up.
    let edit = within(
        "the edit finished at start-up",
        standin.wait_for_request(|r| r.method == "PATCH" && r.path.contains("/messages/")),
    )
    .await;
    assert_eq!(edit.body.unwrap()["components"], json!([]));
}

/// Discord's REST API cut off by a partition (a TCP proxy that stops forwarding): the agent is
/// told within a bound that Discord is unavailable, and the question is posted exactly once
/// when the partition heals.
#[tokio::test]
async fn a_partition_from_discords_api_is_waited_out_and_the_question_posted_once() {
    let standin = StandIn::start().await;
    let upstream: std::net::SocketAddr = standin
        .base_url
        .trim_start_matches("http://")
        .parse()
        .unwrap();
    let proxy = askrelay_testkit::proxy::Proxy::start(upstream)
        .await
        .unwrap();
    let base = format!("http://{}", proxy.addr());
    let app = App::build(Some(standin), DaemonHooks::default(), |c| {
        c.discord.api_base = base;
    })
    .await;
    proxy.pause();
    let started = std::time::Instant::now();
    let mut c = app.client().await;
    c.send_json(&ask_line("cut", &yes_no("q"))).await.unwrap();
    let first = within("a first line", c.recv_json())
        .await
        .unwrap()
        .unwrap();
    eprintln!(
        "{} {:?} after the ask, with Discord's API partitioned: {first}",
        first["event"],
        started.elapsed()
    );
    assert_eq!(first["event"], "accepted", "{first}");
    assert!(
        first["posting"]
            .as_str()
            .is_some_and(|p| p.starts_with("Discord is unavailable")),
        "{first}"
    );
    // The channel check and the first tries, each bounded at 5 s (a debug build on a
    // shared machine gets a margin).
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    proxy.resume();
    let msg = within("the question posted", async {
        loop {
            if let Some(m) = app.messages(CHANNEL).pop() {
                return m;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    final_state(&app.press(&msg, &alice(), "No, keep them").await);
    expect_event(&mut c, "answered").await;
    assert_eq!(app.messages(CHANNEL).len(), 1, "exactly one message");
    app.assert_payloads_valid();
}
