//! Operating the daemon: `/metrics` after a known sequence (exact counts), `/healthz` and
//! `askrelay health` up, degraded and unreachable, systemd's notifications through a fake
//! `NOTIFY_SOCKET`, the logs (one WARN and one INFO per gateway outage, JSON lines, a fatal
//! error said once), retention with an age of a few seconds, and the JSON Lines export.

use crate::harness::*;
use askrelay::config::Route;
use askrelay::daemon::DaemonHooks;
use askrelay_testkit::standin::StandIn;
use serde_json::{json, Value};
use sqlx::Connection;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::io::AsyncBufReadExt;

/// Listen on a free local port.
pub(crate) fn with_http(c: &mut askrelay::config::Config) {
    c.http.listen = Some("127.0.0.1:0".into());
}

pub(crate) fn http_base(app: &App) -> String {
    let addr = app.daemon.as_ref().unwrap().http_addr.expect("http is on");
    format!("http://{addr}")
}

async fn get(url: &str) -> (u16, String) {
    let resp = within(&format!("GET {url}"), reqwest::get(url))
        .await
        .unwrap();
    let status = resp.status().as_u16();
    (status, resp.text().await.unwrap())
}

/// The value of one sample line (`name{labels}`), or `None` when the series is absent.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .map(|v| v.trim().parse().unwrap())
}

fn must(text: &str, series: &str) -> f64 {
    sample(text, series).unwrap_or_else(|| panic!("no sample {series} in:\n{text}"))
}

#[tokio::test]
async fn metrics_count_a_known_sequence_of_asks_and_answers() {
    const GONE: u64 = 555;
    let app = App::discord_with(|c| {
        with_http(c);
        let mut r = Route::new("gone", GONE);
        r.matches.insert("project".into(), "gone".into());
        c.routes.push(r);
    })
    .await;
    app.standin().set_channel_missing(GONE);
    let base = http_base(&app);
    // The /askrelay registration is one of the REST calls counted below: wait until it is done.
    within(
        "the command registration",
        app.standin()
            .wait_for_request(|r| r.method == "PUT" && r.path.ends_with("/commands")),
    )
    .await;

    // The format follows Accept: OpenMetrics for Prometheus, the classic text 0.0.4 otherwise.
    let client = reqwest::Client::new();
    let scrape = |accept: Option<&'static str>| {
        let mut req = client.get(format!("{base}/metrics"));
        if let Some(a) = accept {
            req = req.header("accept", a);
        }
        async move {
            let resp = within("GET /metrics", req.send()).await.unwrap();
            let ct = resp.headers()["content-type"].to_str().unwrap().to_owned();
            (ct, resp.text().await.unwrap())
        }
    };
    let (ct, om) = scrape(Some(
        "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5",
    ))
    .await;
    assert!(ct.starts_with("application/openmetrics-text"), "{ct}");
    assert!(
        om.ends_with("# EOF\n") && om.contains("# TYPE askrelay_asks counter"),
        "{om}"
    );
    let (ct, classic) = scrape(None).await;
    assert_eq!(ct, "text/plain; version=0.0.4; charset=utf-8");
    assert!(
        classic.contains("# TYPE askrelay_asks_total counter") && !classic.contains("# EOF"),
        "{classic}"
    );

    // Before anything happened, every known series is there at 0.
    let (_, text) = get(&format!("{base}/metrics")).await;
    for series in [
        "askrelay_asks_total{answerer=\"discord\"}",
        "askrelay_asks_total{answerer=\"terminal\"}",
        "askrelay_answers_total{answerer=\"discord\"}",
        "askrelay_answers_total{answerer=\"terminal\"}",
        "askrelay_errors_total{code=\"INVALID_REQUEST\"}",
        "askrelay_errors_total{code=\"EXPIRED\"}",
        "askrelay_errors_total{code=\"BUSY\"}",
    ] {
        assert_eq!(sample(&text, series), Some(0.0), "{series}: {text}");
    }

    // 1: answered in Discord.
    let (mut c1, _) = app.ask("m1", &yes_no("q")).await;
    let msg = app.messages(CHANNEL).remove(0);
    final_state(&app.press(&msg, &alice(), "No, keep them").await);
    assert_eq!(expect_event(&mut c1, "answered").await["event"], "answered");
    // 2: cancelled (ABORTED), its message edited to say so.
    let (mut c2, _) = app.ask("m2", &yes_no("q")).await;
    let msg2 = app.messages(CHANNEL).remove(1);
    let reply = app
        .client()
        .await
        .call_json(&json!({"op": "cancel", "request_id": "m2"}))
        .await
        .unwrap();
    assert_eq!(reply["event"], "cancelled", "{reply}");
    assert_eq!(expect_event(&mut c2, "error").await["code"], "ABORTED");
    app.edit_of(&msg2).await;
    // 3: still pending.
    let (_c3, _) = app.ask("m3", &yes_no("q")).await;
    // 4: refused: its route's channel is gone (a 404 from Discord): NO_ANSWERER.
    let mut c4 = app.client().await;
    let mut line = ask_line("m4", &yes_no("q"));
    line["scope"] = json!({"project": "gone"});
    c4.send_json(&line).await.unwrap();
    assert_eq!(expect_event(&mut c4, "error").await["code"], "NO_ANSWERER");
    // 5: a line that is not an ask at all.
    let bad = c4
        .call_json(&json!({"op": "ask", "questions": []}))
        .await
        .unwrap();
    assert_eq!(bad["code"], "INVALID_REQUEST", "{bad}");

    let (status, text) = get(&format!("{base}/metrics")).await;
    assert_eq!(status, 200);
    assert_eq!(
        must(
            &text,
            "askrelay_pending_requests{answerer=\"discord\",route=\"default\"}"
        ),
        1.0
    );
    assert_eq!(
        must(&text, "askrelay_asks_total{answerer=\"discord\"}"),
        3.0
    );
    assert_eq!(
        must(&text, "askrelay_answers_total{answerer=\"discord\"}"),
        1.0
    );
    assert_eq!(must(&text, "askrelay_errors_total{code=\"ABORTED\"}"), 1.0);
    assert_eq!(
        must(&text, "askrelay_errors_total{code=\"NO_ANSWERER\"}"),
        1.0
    );
    assert_eq!(
        must(&text, "askrelay_errors_total{code=\"INVALID_REQUEST\"}"),
        1.0
    );
    // A code that never happened is there, at 0 (rate() and absence alerts work from start-up).
    assert_eq!(
        sample(&text, "askrelay_errors_total{code=\"EXPIRED\"}"),
        Some(0.0)
    );
    assert_eq!(must(&text, "askrelay_answer_latency_seconds_count"), 1.0);
    assert!(text.contains("askrelay_answer_latency_seconds_bucket{le=\"1.0\"}"));
    // Every REST call the stand-in answered, by status: the gateway URL is serenity's own.
    let rest: Vec<_> = app
        .standin()
        .requests()
        .into_iter()
        .filter(|r| !r.path.contains("/gateway"))
        .collect();
    let failed = rest.iter().filter(|r| r.status == 404).count();
    assert_eq!(failed, 1, "the one check of the missing channel");
    assert_eq!(
        must(
            &text,
            "askrelay_discord_rest_responses_total{status=\"404\"}"
        ),
        1.0
    );
    assert_eq!(
        must(
            &text,
            "askrelay_discord_rest_responses_total{status=\"2xx\"}"
        ),
        (rest.len() - failed) as f64
    );
    assert_eq!(must(&text, "askrelay_discord_gateway_connected"), 1.0);
    assert_eq!(must(&text, "askrelay_store_errors_total"), 0.0);
    assert!(
        !text.contains("Proceed") && !text.contains("m1"),
        "no question text, no request id"
    );
    app.assert_payloads_valid();
}

#[tokio::test]
async fn a_store_that_cannot_write_is_counted_and_named_by_healthz() {
    let limit = Arc::new(AtomicU64::new(0));
    let mut hooks = DaemonHooks::default();
    hooks.store.sqlite_page_limit = Some(limit.clone());
    let app = App::build(None, hooks, with_http).await;
    let base = http_base(&app);
    let (status, text) = get(&format!("{base}/metrics")).await;
    assert_eq!(status, 200);
    assert_eq!(sample(&text, "askrelay_discord_gateway_connected"), None);
    assert_eq!(must(&text, "askrelay_store_errors_total"), 0.0);

    // The disk is full: not a page more.
    let pool = sqlx::SqlitePool::connect(&app.config.database_url)
        .await
        .unwrap();
    let (pages,): (i64,) = sqlx::query_as("PRAGMA page_count")
        .fetch_one(&pool)
        .await
        .unwrap();
    pool.close().await;
    limit.store(pages as u64, Ordering::SeqCst);
    let mut big = yes_no("q");
    big["questions"][0]["question"] = json!("x".repeat(4000));
    let mut c = app.client().await;
    c.send_json(&ask_line("full", &big)).await.unwrap();
    assert_eq!(expect_event(&mut c, "error").await["code"], "INTERNAL");

    let (_, text) = get(&format!("{base}/metrics")).await;
    assert_eq!(must(&text, "askrelay_store_errors_total"), 1.0);
    assert_eq!(must(&text, "askrelay_errors_total{code=\"INTERNAL\"}"), 1.0);
    // The ask that could not be stored is not counted as asked.
    assert_eq!(
        sample(&text, "askrelay_asks_total{answerer=\"terminal\"}"),
        Some(0.0)
    );
    limit.store(1 << 30, Ordering::SeqCst);

    // Another process holds the write lock: the health check's write does not finish within
    // its deadline (SQLite would wait its busy timeout, 10 s) and /healthz names the store at
    // once.
    let mut outside = sqlx::SqliteConnection::connect(&app.config.database_url)
        .await
        .unwrap();
    sqlx::query("BEGIN IMMEDIATE")
        .execute(&mut outside)
        .await
        .unwrap();
    let (status, body) = get(&format!("{base}/healthz")).await;
    assert_eq!(status, 503, "{body}");
    let h: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(h["status"], "degraded");
    assert_eq!(h["failing"], json!(["store"]));
    assert_eq!(h["gateway"], "not configured");
    assert!(
        h["store"]
            .as_str()
            .unwrap()
            .contains("did not take a write within 800 ms"),
        "{h}"
    );
    sqlx::query("ROLLBACK").execute(&mut outside).await.unwrap();
    // A check that gave up waiting is not a store error: the write itself did not fail.
    let (_, text) = get(&format!("{base}/metrics")).await;
    assert_eq!(must(&text, "askrelay_store_errors_total"), 1.0);
    let (status, body) = get(&format!("{base}/healthz")).await;
    assert_eq!(status, 200, "{body}");
}

/// Waits until the daemon sees the gateway as `up`.
async fn gateway_is(app: &App, up: bool) {
    let (_, mut rx) = app.hub().connections().remove(0);
    within(
        &format!("the gateway to be seen {}", if up { "up" } else { "down" }),
        rx.wait_for(|c| *c == up),
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn healthz_and_health_say_up_degraded_and_unreachable() {
    let mut app = App::discord_with(with_http).await;
    let base = http_base(&app);
    let bin = Bin::in_dir(app.dir.path());
    gateway_is(&app, true).await;

    let (status, body) = get(&format!("{base}/healthz")).await;
    assert_eq!(status, 200, "{body}");
    let h: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(h["status"], "ok");
    assert_eq!(h["store"], "ok");
    assert_eq!(h["gateway"], "connected");
    assert!(h.get("failing").is_none(), "{h}");
    let (code, out, err) = bin.run(&["health"]).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("status: ok") && out.contains("gateway: connected"),
        "{out}"
    );
    let (code, out, _) = bin.run(&["health", "--json"]).await;
    assert_eq!(code, 0);
    let j: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(j["gateway"], "connected");

    // Degraded: the gateway is down (and refuses to come back for now).
    app.standin().set_gateway_down(true);
    gateway_is(&app, false).await;
    let (status, body) = get(&format!("{base}/healthz")).await;
    assert_eq!(status, 503, "{body}");
    let h: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(h["status"], "degraded");
    assert_eq!(h["failing"], json!(["gateway"]));
    assert_eq!(h["gateway"], "disconnected");
    assert_eq!(h["store"], "ok");
    let (_, text) = get(&format!("{base}/metrics")).await;
    assert_eq!(must(&text, "askrelay_discord_gateway_connected"), 0.0);
    let (code, out, err) = bin.run(&["health"]).await;
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("gateway: disconnected"), "{out}");
    assert!(err.contains("degraded: gateway failing"), "{err}");

    // Back.
    app.standin().set_gateway_down(false);
    gateway_is(&app, true).await;
    let (status, _) = get(&format!("{base}/healthz")).await;
    assert_eq!(status, 200);

    // Unreachable.
    app.stop().await;
    let (code, _, err) = bin.run(&["health"]).await;
    assert_eq!(code, 7, "{err}");
    assert!(err.contains("cannot reach the daemon"), "{err}");
}

#[tokio::test]
async fn systemd_hears_ready_watchdog_pings_and_stopping() {
    let standin = StandIn::start().await;
    let bin = Bin::new().discord(&standin);
    let path = bin.dir().join("notify");
    let notify = tokio::net::UnixDatagram::bind(&path).unwrap();
    let served = bin
        .serve_cmd({
            let mut c = bin.cmd(&["serve"]);
            c.env("NOTIFY_SOCKET", &path).env("WATCHDOG_USEC", "200000");
            c
        })
        .await;
    // One datagram per message, a line per state (sd-notify ends each with '\n').
    let next = || async {
        let mut buf = vec![0u8; 4096];
        let n = within("a notification", notify.recv(&mut buf))
            .await
            .unwrap();
        let message = String::from_utf8_lossy(&buf[..n]).into_owned();
        message
            .strip_suffix('\n')
            .unwrap_or_else(|| panic!("a message ends its last line: {message:?}"))
            .to_owned()
    };
    // Watchdog pings may come first; READY=1 comes once the gateway is connected.
    let ready = loop {
        let m = next().await;
        if m != "WATCHDOG=1" {
            break m;
        }
    };
    assert!(ready.starts_with("READY=1\n"), "{ready:?}");
    assert_eq!(ready, "READY=1\nSTATUS=serving");
    assert!(standin.identify_count() >= 1, "READY before the gateway");
    // Pings keep coming, at half of WatchdogSec.
    for _ in 0..2 {
        assert_eq!(next().await, "WATCHDOG=1");
    }
    served.signal("-TERM").await;
    let stopping = loop {
        let m = next().await;
        if m != "WATCHDOG=1" {
            break m;
        }
    };
    assert_eq!(stopping, "STOPPING=1");
    let (status, _) = served.finish().await;
    assert!(status.success(), "{status}");
}

/// Reads log lines into `log` until one contains `needle`, and returns it.
async fn read_until(
    lines: &mut tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStderr>>,
    log: &mut String,
    needle: &str,
) -> String {
    within(&format!("a log line with {needle:?}"), async {
        while let Some(l) = lines.next_line().await.unwrap() {
            log.push_str(&l);
            log.push('\n');
            if l.contains(needle) {
                return l;
            }
        }
        panic!("the log ended without {needle:?}:\n{log}");
    })
    .await
}

#[tokio::test]
async fn a_daemon_that_cannot_reach_the_gateway_says_why_and_stops_at_once() {
    let standin = StandIn::start().await;
    standin.set_gateway_down(true);
    let bin = Bin::new().discord(&standin);
    // The daemon's default log filter, which hides serenity's own warnings.
    let mut child = bin.cmd(&["serve"]).spawn().unwrap();
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let mut log = String::new();
    let l = &mut lines;
    let why = read_until(l, &mut log, "cannot connect to the Discord gateway").await;
    assert!(
        why.contains(" WARN ") && why.contains("503") && why.contains("trying again in"),
        "the cause and the time to the next try: {why}"
    );
    // The same cause again is not logged again.
    within("more tries", standin.wait_refused_upgrades(3)).await;
    // Nothing to flush and no session: SIGTERM stops at once, not after
    // shutdown_timeout_secs.
    signal(&child, "-TERM").await;
    read_until(l, &mut log, "stopped").await;
    within("the daemon to exit", child.wait()).await.unwrap();
    assert!(!log.contains("shutdown_timeout_secs ran out"), "{log}");
    assert_eq!(
        log.matches("cannot connect to the Discord gateway").count(),
        1,
        "{log}"
    );
}

#[tokio::test]
async fn a_gateway_outage_logs_one_warning_and_one_line_when_it_is_back() {
    let standin = StandIn::start().await;
    let bin = Bin::new().discord(&standin);
    // With the daemon's default log filter (the harness's `serve` sets ASKRELAY_LOG=info).
    let mut child = bin.cmd(&["serve"]).spawn().unwrap();
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let mut log = String::new();
    let l = &mut lines;
    read_until(l, &mut log, "connected to the Discord gateway").await;
    standin.set_gateway_down(true);
    read_until(l, &mut log, "lost the Discord gateway connection").await;
    // serenity tries again and again meanwhile.
    within("reconnect attempts", standin.wait_refused_upgrades(2)).await;
    standin.set_gateway_down(false);
    let back = read_until(l, &mut log, "the Discord gateway connection is back").await;
    assert!(
        back.contains("INFO") && back.contains("downtime="),
        "{back}"
    );
    signal(&child, "-TERM").await;
    read_until(l, &mut log, "stopped").await;
    within("the daemon to exit", child.wait()).await.unwrap();
    // One warning that the session is gone, and one for the cause of the failed tries (the
    // same at each), nothing else.
    let loud: Vec<&str> = log
        .lines()
        .filter(|l| l.contains(" WARN ") || l.contains(" ERROR "))
        .collect();
    assert_eq!(loud.len(), 2, "{log}");
    assert!(
        loud[0].contains("lost the Discord gateway connection")
            && loud[1].contains("cannot connect to the Discord gateway")
            && loud[1].contains("503"),
        "{log}"
    );
    assert_eq!(
        log.matches("connected to the Discord gateway").count(),
        1,
        "{log}"
    );
}

#[tokio::test]
async fn json_logs_and_the_start_line_and_a_fatal_error_said_once() {
    let bin = Bin::new().env("ASKRELAY_LOG_FORMAT", "json");
    let served = bin.serve().await;
    // A second daemon on the same database stops: its error is one line, in JSON.
    let other = Bin::in_dir(bin.dir())
        .env("ASKRELAY_LOG_FORMAT", "json")
        .env(
            "ASKRELAY_SOCKET_PATH",
            bin.dir().join("other.sock").display(),
        );
    let (code, out, err) = other.run(&["serve"]).await;
    assert_eq!(code, 1, "{out}{err}");
    let fatal: Vec<&str> = err.lines().filter(|l| l.contains("in use by")).collect();
    assert_eq!(fatal.len(), 1, "{err}");
    let line: Value = serde_json::from_str(fatal[0]).unwrap_or_else(|e| panic!("{e}: {err}"));
    assert_eq!(line["level"], "ERROR");
    let (status, log) = served.terminate().await;
    assert!(status.success());
    let mut started = None;
    for l in log.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value =
            serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}"));
        if v["fields"]["message"]
            .as_str()
            .is_some_and(|m| m.ends_with("started"))
        {
            started = Some(v);
        }
    }
    let started = started.expect("the start line");
    let f = &started["fields"];
    assert!(
        f["database"].as_str().unwrap().ends_with("askrelay.db"),
        "{f}"
    );
    assert!(
        f["socket"].as_str().unwrap().ends_with("askrelay.sock"),
        "{f}"
    );
    assert_eq!(f["socket_mode"], "0600");
    assert_eq!(f["answerers"], "terminal");
    assert_eq!(f["routes"], "none");

    // In text, the same error is one line on stderr too.
    let text =
        Bin::in_dir(bin.dir()).env("ASKRELAY_SOCKET_PATH", bin.dir().join("x.sock").display());
    let served = bin.serve().await;
    let (code, _, err) = text.run(&["serve"]).await;
    assert_eq!(code, 1);
    assert_eq!(
        err.matches("in use by another askrelay daemon").count(),
        1,
        "{err}"
    );
    served.terminate().await;
}

#[tokio::test]
async fn retention_prunes_ended_requests_and_old_audit_rows() {
    // 0.00002 days is 1.728 s.
    let app = App::start_with(|c| {
        c.retention.ended_after_days = Some(0.00002);
        c.retention.audit_after_days = Some(0.00002);
        c.retention.interval_secs = 1;
    })
    .await;
    let (mut c, _) = app.ask("old", &yes_no("q")).await;
    let reply = app.answer("old", "q", &["No, keep them"]).await;
    assert_eq!(reply["event"], "answer_accepted", "{reply}");
    expect_event(&mut c, "answered").await;
    let key = app.store().by_id("old").await.unwrap().unwrap().key;
    let (_open, _) = app.ask("open", &yes_no("q")).await;

    let mut pruned = app.daemon.as_ref().unwrap().pruned.clone();
    within("the ended request and its audit rows to be pruned", async {
        loop {
            pruned.changed().await.unwrap();
            let gone = app.store().by_id("old").await.unwrap().is_none();
            let audit_left = app.store().audit_rows(Some(key)).await.unwrap().len();
            if gone && audit_left == 0 {
                break;
            }
        }
    })
    .await;
    // The pending request stays, whatever its age, with its questions.
    let open = app.store().by_id("open").await.unwrap().unwrap();
    assert_eq!(open.questions.len(), 1);
    assert!(app.hub().is_pending("open"));
    // Its children went with it (foreign keys would refuse otherwise), and the audit log is
    // still append-only for anything else.
    let pool = sqlx::SqlitePool::connect(&app.config.database_url)
        .await
        .unwrap();
    let (left,): (i64,) = sqlx::query_as("SELECT count(*) FROM questions WHERE request_key = ?")
        .bind(key)
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(left, 0);
    pool.close().await;
}

#[tokio::test]
async fn history_since_exports_json_lines_page_by_page() {
    let app = App::start().await;
    let bin = Bin::in_dir(app.dir.path());
    // More than one page (200).
    let mut c = app.client().await;
    for i in 0..205 {
        c.send_json(&ask_line(&format!("h{i}"), &yes_no("q")))
            .await
            .unwrap();
    }
    for _ in 0..205 {
        expect_event(&mut c, "accepted").await;
    }
    let (code, out, err) = bin
        .run(&["history", "--json", "--since", "2000-01-01"])
        .await;
    assert_eq!(code, 0, "{err}");
    let lines: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 205);
    assert_eq!(lines[0]["request_id"], "h204", "newest first");
    assert_eq!(lines[204]["request_id"], "h0");
    let (code, out, _) = bin
        .run(&["history", "--json", "--since", "2999-01-01T00:00:00Z"])
        .await;
    assert_eq!(code, 0);
    assert_eq!(out, "");
    let (code, out, _) = bin
        .run(&["history", "--json", "--since", "2000-01-01", "--limit", "3"])
        .await;
    assert_eq!(code, 0);
    assert_eq!(out.lines().count(), 3);
    let (code, _, err) = bin.run(&["history", "--since", "yesterday"]).await;
    assert_eq!(code, 2);
    assert!(err.contains("--since"), "{err}");
}

#[tokio::test]
async fn a_taken_http_port_stops_start_up_naming_the_key() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(dir.path());
    config.http.listen = Some(taken.local_addr().unwrap().to_string());
    let err = askrelay::daemon::Daemon::start(config.clone())
        .await
        .err()
        .expect("start-up fails");
    assert!(format!("{err:#}").contains("http.listen"), "{err:#}");
    assert!(
        !config.socket_path.exists(),
        "the socket file is not left behind"
    );
    // Nothing else holds the database: a daemon without the listener starts.
    config.http.listen = None;
    let d = within(
        "the daemon to start",
        askrelay::daemon::Daemon::start(config),
    )
    .await
    .unwrap();
    d.shutdown().await;
}
