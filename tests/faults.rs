//! The promises under faults: a crash between any two steps, Discord outages, gateway drops,
//! who may connect, and hostile clients.

mod harness;
mod support;

use askrelay::client::Client;
use harness::{ask_line, expect_event, yes_no, App};
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use support::fixtures::{self, Clicker};
use support::standin::{Failure, StandIn};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

const CHANNEL: u64 = 100;
static NEXT_INTERACTION: AtomicU64 = AtomicU64::new(500_000);

fn own_uid() -> u32 {
    std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").unwrap())
}

// --- who may connect -------------------------------------------------------------------------

#[tokio::test]
async fn a_peer_outside_allowed_uids_is_refused_and_audited() {
    let app = App::start_with(|c| c.allowed_uids = vec![own_uid() + 1]).await;
    let mut c = app.client().await;
    let ev = c
        .recv_json()
        .await
        .unwrap()
        .expect("an error line before the close");
    assert_eq!(ev["code"], "FORBIDDEN", "{ev}");
    assert!(
        ev["message"].as_str().unwrap().contains("allowed_uids"),
        "{ev}"
    );
    assert!(
        c.recv_json().await.unwrap().is_none(),
        "then the connection closes"
    );
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
    let ev = slow.recv_json().await.unwrap().unwrap();
    assert!(
        ev["message"]
            .as_str()
            .unwrap()
            .contains("line_timeout_secs"),
        "{ev}"
    );
    assert!(slow.recv_json().await.unwrap().is_none());
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
    let ev = extra.recv_json().await.unwrap().expect("an error line");
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
        let ev = c.recv_json().await.unwrap().unwrap();
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

struct Discord {
    standin: StandIn,
    app: App,
}

async fn discord_app(tweak: impl FnOnce(&mut askrelay::config::Config)) -> Discord {
    let standin = StandIn::start().await;
    let base = standin.base_url.clone();
    let app = App::start_with(|c| {
        c.terminal.enabled = Some(false);
        c.discord.token = Some(askrelay::config::Secret::new("test-bot-token"));
        c.discord.api_base = base;
        c.discord.channel_id = Some(askrelay::config::Snowflake(CHANNEL));
        c.discord.retry_max_delay_ms = 20;
        tweak(c);
    })
    .await;
    standin.wait_ready().await;
    Discord { standin, app }
}

fn click(standin: &StandIn, message: &Value, who: &Clicker, label: &str) -> Value {
    let custom_id = message["components"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["components"].as_array().unwrap().iter())
        .find(|c| c["label"] == label)
        .unwrap_or_else(|| panic!("no {label} button"))["custom_id"]
        .as_str()
        .unwrap()
        .to_owned();
    fixtures::component_click(
        NEXT_INTERACTION.fetch_add(1, Ordering::SeqCst),
        standin.application_id(),
        standin.guild_id(),
        message["channel_id"].as_str().unwrap().parse().unwrap(),
        message["id"].as_str().unwrap().parse().unwrap(),
        who,
        &custom_id,
    )
}

/// Sends a click and waits for the callback the daemon answers it with.
async fn send_click(standin: &StandIn, payload: Value) -> Value {
    let id = payload["id"].as_str().unwrap().to_owned();
    standin.send_interaction(payload).await;
    standin
        .wait_for_request(|r| r.path.contains(&format!("/interactions/{id}/")))
        .await
        .body
        .unwrap()
}

#[tokio::test]
async fn a_5xx_storm_leaves_the_request_pending_and_unposted_until_discord_is_back() {
    let d = discord_app(|_| {}).await;
    d.standin
        .fail_next("POST", "/messages", Failure::Status(503), 100_000);
    let mut c = d.app.client().await;
    c.send_json(&ask_line("storm", &yes_no("q"))).await.unwrap();
    let acc = expect_event(&mut c, "accepted").await;
    assert!(
        acc["posting"].as_str().unwrap().contains("unavailable"),
        "{acc}"
    );
    // `pending` says it is not posted yet, and why.
    let p = d
        .app
        .client()
        .await
        .call_json(&json!({"op": "pending"}))
        .await
        .unwrap();
    let post = &p["requests"][0]["questions"][0]["post"];
    assert_eq!(post["posted"], false, "{p}");
    d.standin
        .wait_for_requests(5, |r| r.method == "POST" && r.path.ends_with("/messages"))
        .await;
    let p = d
        .app
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
    d.standin.clear_failures();
    d.standin
        .wait_for_request(|r| {
            r.method == "POST" && r.path.ends_with("/messages") && r.status == 200
        })
        .await;
    let msgs = d.standin.messages_in(CHANNEL);
    assert_eq!(msgs.len(), 1);
    let cb = send_click(
        &d.standin,
        click(
            &d.standin,
            &msgs[0],
            &Clicker::new(1, "a", &[]),
            "No, keep them",
        ),
    )
    .await;
    assert_eq!(cb["type"], 7, "the winning click updates the message");
    expect_event(&mut c, "answered").await;
}

#[tokio::test]
async fn a_429_storm_is_waited_out() {
    let d = discord_app(|_| {}).await;
    d.standin.fail_next(
        "POST",
        "/messages",
        Failure::RateLimited {
            retry_after_secs: 0.01,
            global: true,
        },
        12,
    );
    let mut c = d.app.client().await;
    c.send_json(&ask_line("limited", &yes_no("q")))
        .await
        .unwrap();
    expect_event(&mut c, "accepted").await;
    d.standin
        .wait_for_request(|r| {
            r.method == "POST" && r.path.ends_with("/messages") && r.status == 200
        })
        .await;
    assert_eq!(d.standin.messages_in(CHANNEL).len(), 1);
}

#[tokio::test]
async fn a_request_cancelled_while_discord_is_down_is_never_posted() {
    let d = discord_app(|_| {}).await;
    d.standin
        .fail_next("POST", "/messages", Failure::Status(500), 100_000);
    let mut c = d.app.client().await;
    c.send_json(&ask_line("never", &yes_no("q"))).await.unwrap();
    expect_event(&mut c, "accepted").await;
    let r = d
        .app
        .client()
        .await
        .call_json(&json!({"op": "cancel", "request_id": "never"}))
        .await
        .unwrap();
    assert_eq!(r["event"], "cancelled");
    assert_eq!(c.recv_json().await.unwrap().unwrap()["code"], "ABORTED");
    d.standin.clear_failures();
    // The next request is posted; the cancelled one never is.
    let mut c2 = d.app.client().await;
    c2.send_json(&ask_line("later", &yes_no("q")))
        .await
        .unwrap();
    expect_event(&mut c2, "accepted").await;
    let msgs = d.standin.messages_in(CHANNEL);
    assert_eq!(msgs.len(), 1);
    assert!(msgs[0]["embeds"][0]["footer"]["text"]
        .as_str()
        .unwrap()
        .contains("later"));
}

#[tokio::test]
async fn interactions_after_gateway_drops_reconnects_and_invalid_sessions_still_settle() {
    let d = discord_app(|_| {}).await;
    let who = Clicker::new(9, "nine", &[]);
    let mut c = d.app.client().await;

    c.send_json(&ask_line("g1", &yes_no("q"))).await.unwrap();
    expect_event(&mut c, "accepted").await;
    d.standin.drop_gateway().await;
    d.standin.wait_resume_count(1).await;
    let m = d.standin.messages_in(CHANNEL).pop().unwrap();
    assert_eq!(
        send_click(&d.standin, click(&d.standin, &m, &who, "No, keep them")).await["type"],
        7
    );
    assert_eq!(expect_event(&mut c, "answered").await["request_id"], "g1");

    c.send_json(&ask_line("g2", &yes_no("q"))).await.unwrap();
    expect_event(&mut c, "accepted").await;
    d.standin.send_reconnect().await;
    d.standin.wait_resume_count(2).await;
    let m = d.standin.messages_in(CHANNEL).pop().unwrap();
    assert_eq!(
        send_click(&d.standin, click(&d.standin, &m, &who, "No, keep them")).await["type"],
        7
    );
    assert_eq!(expect_event(&mut c, "answered").await["request_id"], "g2");

    c.send_json(&ask_line("g3", &yes_no("q"))).await.unwrap();
    expect_event(&mut c, "accepted").await;
    let identified = d.standin.identify_count();
    d.standin.send_invalid_session(false).await;
    d.standin.wait_identify_count(identified + 1).await;
    let m = d.standin.messages_in(CHANNEL).pop().unwrap();
    assert_eq!(
        send_click(&d.standin, click(&d.standin, &m, &who, "No, keep them")).await["type"],
        7
    );
    assert_eq!(expect_event(&mut c, "answered").await["request_id"], "g3");
}

// --- crash at every step (the real binary, SIGABRT at a named point) ------------------------

struct Proc {
    child: Child,
}

async fn serve(dir: &Path, standin: &StandIn, crash_at: Option<&str>) -> Proc {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_askrelay"));
    cmd.arg("serve")
        .env_clear()
        .env("ASKRELAY_SOCKET_PATH", dir.join("s.sock"))
        .env(
            "ASKRELAY_DATABASE_URL",
            format!("sqlite://{}", dir.join("a.db").display()),
        )
        .env("ASKRELAY_DISCORD__TOKEN", "test-bot-token")
        .env("ASKRELAY_DISCORD__API_BASE", &standin.base_url)
        .env("ASKRELAY_DISCORD__CHANNEL_ID", CHANNEL.to_string())
        .env("ASKRELAY_DISCORD__RETRY_MAX_DELAY_MS", "20")
        .env("ASKRELAY_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(p) = crash_at {
        cmd.env(askrelay::crash::ENV, p);
    }
    let identified = standin.identify_count();
    let mut child = cmd.spawn().unwrap();
    let mut log = BufReader::new(child.stderr.take().unwrap()).lines();
    loop {
        let line = log
            .next_line()
            .await
            .unwrap()
            .expect("the daemon exited before listening");
        if line.contains("listening") {
            break;
        }
    }
    tokio::spawn(async move { while let Ok(Some(_)) = log.next_line().await {} });
    standin.wait_identify_count(identified + 1).await;
    Proc { child }
}

impl Proc {
    /// Waits for the deliberate abort.
    async fn crashed(mut self) {
        let status = self.child.wait().await.unwrap();
        assert!(!status.success(), "the daemon should have aborted");
    }
}

async fn reattach(dir: &Path, id: &str) -> Client {
    let mut c = Client::connect(&dir.join("s.sock")).await.unwrap();
    c.send_json(&ask_line(id, &yes_no("q"))).await.unwrap();
    c
}

/// Runs one crash scenario and returns the final line the re-attached client got.
async fn crash_scenario(point: &str) -> (StandIn, Value) {
    let standin = StandIn::start().await;
    let dir = tempfile::tempdir().unwrap();
    let who = Clicker::new(7, "seven", &[]);
    let crashing = serve(dir.path(), &standin, Some(point)).await;
    let mut c = reattach(dir.path(), point).await;
    if point == "clicked" || point == "answered" {
        expect_event(&mut c, "accepted").await;
        let m = standin.messages_in(CHANNEL).remove(0);
        standin
            .send_interaction(click(&standin, &m, &who, "No, keep them"))
            .await;
    }
    crashing.crashed().await;
    let _daemon = serve(dir.path(), &standin, None).await;
    let mut c = reattach(dir.path(), point).await;
    let first = c.recv_json().await.unwrap().unwrap();
    let last = if first["event"] == "answered" {
        first
    } else {
        assert_eq!(first["event"], "accepted", "{first}");
        // A request stored but never posted is posted by the restarted daemon.
        standin
            .wait_for_request(|r| {
                r.method == "POST" && r.path.ends_with("/messages") && r.status == 200
            })
            .await;
        let msgs = standin.messages_in(CHANNEL);
        assert_eq!(
            msgs.len(),
            1,
            "{point}: exactly one message, never a duplicate"
        );
        assert_eq!(
            send_click(&standin, click(&standin, &msgs[0], &who, "No, keep them")).await["type"],
            7
        );
        expect_event(&mut c, "answered").await
    };
    assert_eq!(
        standin.messages_in(CHANNEL).len(),
        1,
        "{point}: no duplicate post"
    );
    (standin, last)
}

#[tokio::test]
async fn crash_after_storing_before_posting() {
    let (_, last) = crash_scenario("stored").await;
    assert_eq!(last["result"]["answers"][0]["selected"][0], "No, keep them");
}

#[tokio::test]
async fn crash_after_posting_before_recording_the_message_id() {
    let (standin, last) = crash_scenario("posted").await;
    assert_eq!(last["result"]["answers"][0]["selected"][0], "No, keep them");
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
    let (_, last) = crash_scenario("clicked").await;
    assert_eq!(last["result"]["answers"][0]["selected"][0], "No, keep them");
}

#[tokio::test]
async fn crash_after_storing_the_answer_before_telling_the_agent() {
    let (standin, last) = crash_scenario("answered").await;
    // The re-attached client got the stored answer at once, and the message edit was finished
    // at start-up.
    assert_eq!(last["event"], "answered");
    assert_eq!(last["result"]["answers"][0]["selected"][0], "No, keep them");
    let edit = standin
        .wait_for_request(|r| r.method == "PATCH" && r.path.contains("/messages/"))
        .await;
    assert_eq!(edit.body.unwrap()["components"], json!([]));
}
