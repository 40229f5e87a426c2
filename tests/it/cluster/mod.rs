//! Cluster mode: three `askrelay serve` processes on this machine, each with its own socket,
//! sharing one fresh PostgreSQL database and one Discord stand-in. Exactly one of them (the
//! leader) holds the gateway session and posts; the others store, serve and learn of answers
//! through the database. `slack.rs` runs a cluster with Slack (its stand-in) instead.

use crate::harness::*;
use askrelay::client::Client;
use askrelay::domain::request::AuditAction;
use askrelay_testkit::scratch::ScratchDb;
use askrelay_testkit::standin::StandIn;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};
use tempfile::TempDir;

mod alerts;
mod deadlines;
mod drafts;
mod failover;
mod partitions;
mod pooler;
mod slack;

use partitions::{failing, health_ok_again, health_timed};

const QUESTION: &str = r#"{"questions":[{"id":"deploy","question":"Deploy to production?","header":"Deploy","options":[{"label":"Yes","description":"Ship it."},{"label":"No","description":"Hold."}],"multiSelect":false}]}"#;

/// The default failover bound (`cluster.failover_secs`), which the tests keep.
const FAILOVER: Duration = Duration::from_secs(3);

/// One cluster under test: the database, the stand-in and a directory per node.
struct Cluster {
    db: ScratchDb,
    standin: StandIn,
    dir: TempDir,
}

impl Cluster {
    async fn new() -> Cluster {
        Cluster {
            db: ScratchDb::create()
                .await
                .expect("a scratch PostgreSQL database"),
            standin: StandIn::start().await,
            dir: tempfile::tempdir().unwrap(),
        }
    }

    /// Node `name`: its own socket, the shared database and stand-in. Its own uid is an
    /// operator (the daemon's uid always is), so `answer` on it may answer any node's request.
    fn node(&self, name: &str) -> Bin {
        let dir = self.dir.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        Bin::in_dir(&dir)
            .discord(&self.standin)
            .env("ASKRELAY_DATABASE_URL", &self.db.url)
            .env("ASKRELAY_CLUSTER__NODE_ID", name)
            .env("ASKRELAY_CLUSTER__POLL_INTERVAL_MS", 200)
            .env("ASKRELAY_DISCORD__TERMINAL_ANSWERS", "true")
    }

    /// Starts the first node and waits until it leads and holds the gateway.
    async fn leader(&self, name: &str) -> (Bin, Served) {
        let bin = self.node(name);
        let served = self.lead(&bin).await;
        (bin, served)
    }

    /// Starts `bin` as the first node and waits until it leads and holds the gateway.
    async fn lead(&self, bin: &Bin) -> Served {
        let mut served = bin.serve().await;
        served.wait_log("leading the cluster").await;
        within("the leader's gateway session", self.standin.wait_ready()).await;
        served
    }

    /// The messages posted for `request_id`'s questions (the stand-in's copies), waiting for
    /// `n` of them.
    async fn posted(&self, n: usize) -> Vec<Value> {
        let mut seen = self.standin.subscribe();
        within(&format!("{n} questions posted"), async {
            loop {
                let m = self.standin.messages_in(CHANNEL);
                if m.len() >= n {
                    return m;
                }
                seen.changed().await.unwrap();
            }
        })
        .await
    }

    /// Waits until message `id` has been edited to a settled state (no controls left), saying
    /// `what` it waits for; the message as it is then.
    async fn edited_final(&self, id: u64, what: &str) -> Value {
        let mut seen = self.standin.subscribe();
        within(what, async {
            loop {
                let now = self.standin.message(id).unwrap();
                if controls(&now).is_empty() {
                    return now;
                }
                seen.changed().await.unwrap();
            }
        })
        .await
    }
}

/// Starts a follower and waits until it names the leader (its log says so when its role is set).
async fn follower(bin: &Bin) -> Served {
    let mut served = bin.serve().await;
    // The role may be set before or after the socket listens (the line `serve` waits for).
    served
        .wait_log_anywhere("following the cluster's leader")
        .await;
    served
}

/// `askrelay health --json` of a node.
async fn health(bin: &Bin) -> Value {
    let (code, out, err) = bin.run(&["health", "--json"]).await;
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(out.trim()).unwrap()
}

fn text_of(message: &Value) -> String {
    message.to_string()
}

#[tokio::test]
async fn a_click_on_the_leader_answers_the_client_on_the_node_that_asked() {
    let cluster = Cluster::new().await;
    let (b, mut leader) = cluster.leader("b").await;
    let a = cluster.node("a");
    let follower_a = follower(&a).await;
    let c = cluster.node("c");
    let follower_c = follower(&c).await;

    let h = health(&a).await;
    assert_eq!(h["cluster"]["role"], "follower", "{h}");
    assert_eq!(h["cluster"]["leader"], "b", "{h}");
    assert_eq!(h["gateway"], "held by the leader", "{h}");
    assert_eq!(h["status"], "ok", "{h}");
    let h = health(&b).await;
    assert_eq!(h["cluster"]["role"], "leader", "{h}");

    // Ask on A; B posts it and takes the click; A's client gets the answer.
    let mut asker = a.ask(&["--request-id", "ship-1"], QUESTION).await;
    asker.wait_stderr("waiting for an answer").await;
    let posted = cluster.posted(1).await;
    assert_eq!(cluster.standin.live_sessions(), 1, "one gateway holder");
    let cb = press_on(&cluster.standin, &posted[0], &alice(), "Yes").await;
    assert_eq!(cb["type"], 7, "the winning click updates the message: {cb}");
    let (code, out) = asker.finish().await;
    assert_eq!(code, 0, "{out}");
    assert!(out.contains(r#"["Yes"]"#), "{out}");
    leader.wait_log("question settled").await;

    // A terminal answer on C for A's request: C's uid is an operator, and the route lets
    // terminals answer.
    let mut asker = a.ask(&["--request-id", "ship-2"], QUESTION).await;
    asker.wait_stderr("waiting for an answer").await;
    cluster.posted(2).await;
    let (code, out, err) = c.run(&["pending"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("ship-2") && out.contains("node a"),
        "pending on C shows A's request and its node: {out}"
    );
    let (code, _, err) = c
        .run(&["answer", "ship-2", "--question", "deploy", "--select", "No"])
        .await;
    assert_eq!(code, 0, "{err}");
    let (code, out) = asker.finish().await;
    assert_eq!(code, 0, "{out}");
    assert!(out.contains(r#"["No"]"#), "{out}");
    // The leader edits the message to its final state.
    let second = cluster.posted(2).await[1].clone();
    let id = id_of(&second);
    let now = cluster
        .edited_final(id, "the leader to edit ship-2's message")
        .await;
    assert!(text_of(&now).contains("No"), "{now}");

    // History on any node shows the whole cluster.
    let (_, out, _) = c.run(&["history"]).await;
    assert!(out.contains("ship-1") && out.contains("ship-2"), "{out}");
    assert_eq!(
        cluster
            .standin
            .requests()
            .iter()
            .filter(|r| r.method == "POST" && r.path.ends_with("/messages"))
            .count(),
        2,
        "followers post nothing; the leader posted each question once"
    );
    assert_bodies_valid(&cluster.standin);
    follower_a.terminate().await;
    follower_c.terminate().await;
    leader.terminate().await;
    cluster.db.drop_now().await.unwrap();
}

#[tokio::test]
async fn the_leader_dies_during_a_burst_and_another_node_takes_over_without_loss() {
    const N: usize = 24;
    let cluster = Cluster::new().await;
    let (_b, mut leader) = cluster.leader("b").await;
    let a = cluster.node("a");
    let follower_a = follower(&a).await;
    let c = cluster.node("c");
    let follower_c = follower(&c).await;

    // A burst of asks on A and C; the leader is killed once a third are posted.
    let mut clients = Vec::new();
    for i in 0..N {
        let node = if i % 2 == 0 { &a } else { &c };
        let id = format!("burst-{i}");
        let mut input = yes_no("go");
        input["questions"][0]["question"] = serde_json::json!(format!("Proceed with {id}?"));
        let mut client = Client::connect(&node.socket()).await.unwrap();
        client.send_json(&ask_line(&id, &input)).await.unwrap();
        clients.push((id, client));
    }
    cluster.posted(N / 3).await;
    let killed_at = Instant::now();
    leader.child.start_kill().unwrap();
    leader.child.wait().await.unwrap();

    // Another node takes the gateway within the bound, and posts the rest.
    within(
        "a new gateway session",
        cluster.standin.wait_identify_count(2),
    )
    .await;
    within("a live session", cluster.standin.wait_ready()).await;
    // The lease outlives a killed leader by up to failover_secs after its last renewal; a
    // follower takes it at its next beat (a quarter of it), then connects the gateway.
    let failover = killed_at.elapsed();
    assert!(
        failover <= FAILOVER + FAILOVER / 4 + Duration::from_secs(1),
        "failover took {failover:?}, more than cluster.failover_secs and a beat"
    );
    let posted = cluster.posted(N).await;
    assert_eq!(cluster.standin.live_sessions(), 1, "one gateway holder");

    // Every question was posted once.
    let mut per_request: BTreeMap<String, usize> = BTreeMap::new();
    for m in &posted {
        *per_request.entry(request_of(m)).or_default() += 1;
    }
    assert_eq!(posted.len(), N, "0 duplicates: {per_request:?}");
    assert_eq!(per_request.len(), N, "{per_request:?}");

    // Each is answered (alternately Yes and No) through the new leader; each client gets its
    // own answer.
    let mut expected = BTreeMap::new();
    for (i, m) in posted.iter().enumerate() {
        let label = if i % 2 == 0 {
            "Yes, delete them (Recommended)"
        } else {
            "No, keep them"
        };
        press_on(&cluster.standin, m, &alice(), label).await;
        expected.insert(request_of(m), label);
    }
    let mut answered = BTreeSet::new();
    for (id, mut client) in clients {
        let ev = expect_event(&mut client, "answered").await;
        let want = expected[&id];
        assert_eq!(
            ev["result"]["answers"][0]["selected"],
            serde_json::json!([want]),
            "{id} got another request's answer: {ev}"
        );
        answered.insert(id);
    }
    assert_eq!(answered.len(), N, "0 lost");

    // The store: every request answered once, no request ended twice.
    let store = open_store(&cluster.db.url).await;
    let audit = store.audit_rows(None).await.unwrap();
    let mut won: BTreeMap<i64, usize> = BTreeMap::new();
    for row in &audit {
        if row.action == AuditAction::Answer.as_str() && row.accepted {
            *won.entry(row.request_key.unwrap()).or_default() += 1;
        }
    }
    assert_eq!(won.len(), N, "{won:?}");
    assert!(won.values().all(|&n| n == 1), "ended twice: {won:?}");
    store.close().await;
    assert_bodies_valid(&cluster.standin);
    follower_a.terminate().await;
    follower_c.terminate().await;
    cluster.db.drop_now().await.unwrap();
}

#[tokio::test]
async fn a_follower_restarts_and_its_client_re_attaches() {
    let cluster = Cluster::new().await;
    let (_b, leader) = cluster.leader("b").await;
    let a = cluster.node("a");
    let follower = a.serve().await;
    let mut asker = a.ask(&["--request-id", "phoenix"], QUESTION).await;
    asker.wait_stderr("waiting for an answer").await;
    let posted = cluster.posted(1).await;
    follower.terminate().await;
    asker.wait_stderr("lost the daemon").await;
    let follower = a.serve().await;
    asker.wait_stderr("reconnected").await;
    press_on(&cluster.standin, &posted[0], &alice(), "Yes").await;
    let (code, out) = asker.finish().await;
    assert_eq!(code, 0, "{out}");
    assert!(out.contains(r#"["Yes"]"#), "{out}");
    assert_eq!(
        cluster.standin.messages_in(CHANNEL).len(),
        1,
        "the restart re-posted nothing"
    );
    follower.terminate().await;
    leader.terminate().await;
    cluster.db.drop_now().await.unwrap();
}

#[tokio::test]
async fn dropped_database_connections_lose_no_answer() {
    let cluster = Cluster::new().await;
    let (b, mut leader) = cluster.leader("b").await;
    let a = cluster.node("a");
    let follower = follower(&a).await;
    let mut asker = a.ask(&["--request-id", "cut-1"], QUESTION).await;
    asker.wait_stderr("waiting for an answer").await;
    let posted = cluster.posted(1).await;
    let sessions = cluster.standin.identify_count();
    let epoch = health(&b).await["cluster"]["epoch"].clone();

    // Every connection of every node is cut: pools, leases, listeners.
    let cut = terminate_backends(&cluster.db.url).await;
    assert!(cut >= 4, "cut only {cut} connections");

    // The lead is a lease in a table, not a lock on a session: the leader's next beat opens a
    // new lease connection and renews it, in the same epoch, without a change of leader. Then
    // the click is answered, and A's client, whose notice stream was cut too, still gets it.
    leader.wait_log("cannot beat").await;
    leader.wait_log("this node beats again").await;
    let h = health(&b).await;
    assert_eq!(h["cluster"]["role"], "leader", "{h}");
    assert_eq!(h["cluster"]["epoch"], epoch, "the same term: {h}");
    press_on(&cluster.standin, &posted[0], &alice(), "No").await;
    let (code, out) = asker.finish().await;
    assert_eq!(code, 0, "{out}");
    assert!(out.contains(r#"["No"]"#), "{out}");
    assert_eq!(
        cluster.standin.identify_count(),
        sessions,
        "no new gateway session: the lead never changed"
    );
    follower.terminate().await;
    leader.terminate().await;
    cluster.db.drop_now().await.unwrap();
}

#[tokio::test]
async fn the_leader_ends_the_requests_of_a_node_that_stopped_heartbeating() {
    let cluster = Cluster::new().await;
    let b = cluster
        .node("b")
        .env("ASKRELAY_RESTART_GRACE_SECS", 1)
        .env("ASKRELAY_CLUSTER__FAILOVER_SECS", 2);
    let mut leader = b.serve().await;
    leader.wait_log("leading the cluster").await;
    let a = cluster.node("a");
    let mut follower = a.serve().await;
    let mut asker = a.ask(&["--request-id", "orphan"], QUESTION).await;
    asker.wait_stderr("waiting for an answer").await;
    let posted = cluster.posted(1).await;
    follower.child.start_kill().unwrap();
    follower.child.wait().await.unwrap();

    // A's heartbeat stops; once it is older than restart_grace_secs the leader cancels A's
    // request as a restart would, and edits its message.
    leader
        .wait_log("cancelling a request of a node that stopped")
        .await;
    let id = id_of(&posted[0]);
    cluster
        .edited_final(id, "the leader to edit the orphan's message")
        .await;
    let (code, out, err) = b.run(&["history", "--json"]).await;
    assert_eq!(code, 0, "{err}");
    let rows: Value = serde_json::from_str(&out).unwrap();
    let row = &rows[0];
    assert_eq!(row["request_id"], "orphan", "{out}");
    assert_eq!(row["status"], "cancelled", "{out}");
    assert_eq!(row["node"], "a", "{out}");
    assert!(
        row["error"]["message"]
            .as_str()
            .unwrap()
            .contains("its node \"a\" stopped"),
        "{out}"
    );
    leader.terminate().await;
    cluster.db.drop_now().await.unwrap();
}

/// The request a burst question belongs to: its text says "Proceed with ID?".
fn request_of(message: &Value) -> String {
    let text = shown_body(message);
    let start = text.find("Proceed with ").expect("a burst question") + "Proceed with ".len();
    let end = start + text[start..].find('?').unwrap();
    text[start..end].to_owned()
}

async fn open_store(url: &str) -> std::sync::Arc<dyn askrelay::domain::store::Store> {
    askrelay::store::open(url, &Default::default(), &Default::default())
        .await
        .unwrap()
}

/// Terminates every backend connected to the database of `url` (but this one); how many.
async fn terminate_backends(url: &str) -> u64 {
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
    let n: i64 = sqlx::query_scalar(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
         WHERE datname = current_database() AND pid <> pg_backend_pid()",
    )
    .fetch_one(&mut conn)
    .await
    .unwrap();
    let _ = conn.close().await;
    n as u64
}

/// A node with a 2 s failover: it beats every 500 ms, and a lease not renewed for 2 s expires.
fn fast(bin: Bin) -> Bin {
    bin.env("ASKRELAY_CLUSTER__FAILOVER_SECS", 2)
}

/// The lease as stored: holder, epoch.
async fn lease_row(url: &str) -> (String, i64) {
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
    let row = sqlx::query_as("SELECT holder, epoch FROM lease WHERE one = 1")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    let _ = conn.close().await;
    row
}

#[tokio::test]
async fn a_frozen_leader_loses_the_lead_within_failover_and_is_fenced_when_it_wakes() {
    let cluster = Cluster::new().await;
    let b = fast(cluster.node("b"));
    let mut leader = cluster.lead(&b).await;
    let a = fast(cluster.node("a")).env("ASKRELAY_HTTP__LISTEN", "127.0.0.1:0");
    let mut next = follower(&a).await;
    let metrics = metrics_of(&mut next).await;
    let m = get_text(&metrics).await;
    assert_eq!(sample_of(&m, "askrelay_cluster_leader"), Some(0.0), "{m}");
    let mut before = a.ask(&["--request-id", "before"], QUESTION).await;
    before.wait_stderr("waiting for an answer").await;
    let first = cluster.posted(1).await.remove(0);
    let sessions = cluster.standin.identify_count();
    let (_, epoch) = lease_row(&cluster.db.url).await;

    // b freezes with its database sessions open: a takes the lease once it expired, without
    // waiting for b's connections to die.
    leader.signal("-STOP").await;
    let frozen = Instant::now();
    // A click that reaches the frozen leader's session: Discord tells the person it failed,
    // so b must not count it (nor answer it) when it wakes without its lead.
    let stale_id = next_interaction_id();
    cluster
        .standin
        .send_interaction(askrelay_testkit::fixtures::component_click(
            stale_id,
            &at_on(&cluster.standin, &first),
            &bob(),
            &control(&first, "No"),
        ))
        .await;
    next.wait_log("leading the cluster").await;
    eprintln!("a frozen leader was replaced after {:?}", frozen.elapsed());
    // A new epoch, held by a: epoch + 1, or more if a take of a's committed after its beat
    // gave up waiting for the reply (a loaded machine) and a took it again at once. Once
    // taken, it holds to the end (asserted below).
    let (holder, taken) = lease_row(&cluster.db.url).await;
    assert_eq!(holder, "a");
    assert!(taken > epoch, "epoch {taken}, was {epoch}");
    within(
        "the new leader's gateway session",
        cluster.standin.wait_identify_count(sessions + 1),
    )
    .await;
    let h = health(&a).await;
    assert_eq!(h["cluster"]["role"], "leader", "{h}");
    assert_eq!(h["cluster"]["epoch"], taken, "{h}");
    let m = get_text(&metrics).await;
    assert_eq!(sample_of(&m, "askrelay_cluster_leader"), Some(1.0), "{m}");
    assert_eq!(
        sample_of(&m, "askrelay_cluster_lease_epoch"),
        Some(taken as f64),
        "{m}"
    );
    let age = sample_of(&m, "askrelay_cluster_leader_heartbeat_age_seconds").unwrap();
    assert!(age < 2.0, "{m}");
    assert!(
        sample_of(&m, "askrelay_outbox_oldest_due_seconds").is_some(),
        "{m}"
    );

    // The new leader posts new questions and takes clicks on the old leader's messages.
    let mut during = a.ask(&["--request-id", "during"], QUESTION).await;
    during.wait_stderr("waiting for an answer").await;
    // Oldest first: b's question, then a's.
    let posted = cluster.posted(2).await;
    let cb = press_on(&cluster.standin, &posted[0], &alice(), "Yes").await;
    assert_eq!(cb["type"], 7, "{cb}");
    let (code, out) = before.finish().await;
    assert_eq!(code, 0, "{out}");
    assert!(out.contains(r#"["Yes"]"#), "{out}");

    // b wakes: its term ran out while it slept, so it stops its Discord work, and whatever it
    // still tries for Discord is refused by the fence. Nothing is posted twice.
    leader.signal("-CONT").await;
    leader.wait_log("stepping down").await;

    let h = health(&b).await;
    assert_eq!(h["cluster"]["role"], "follower", "{h}");
    assert_eq!(h["cluster"]["leader"], "a", "{h}");
    press_on(&cluster.standin, &posted[1], &alice(), "No").await;
    let (code, out) = during.finish().await;
    assert_eq!(code, 0, "{out}");
    assert!(out.contains(r#"["No"]"#), "{out}");
    // Each question posted once (ephemeral follow-ups, such as the woken leader's answer to a
    // click it held while frozen, are not posts).
    let posts: Vec<Value> = cluster
        .standin
        .messages_in(CHANNEL)
        .into_iter()
        .filter(|m| m["flags"].as_u64().unwrap_or(0) & 64 == 0)
        .collect();
    assert_eq!(posts.len(), 2, "each question posted once: {posts:?}");
    assert_eq!(lease_row(&cluster.db.url).await, ("a".to_owned(), taken));
    next.terminate().await;
    let (_, b_log) = leader.terminate().await;
    // The click that reached the frozen leader's session was never answered nor counted
    // ("before" was answered "Yes" by alice on a, above). When b read it on waking (the
    // stand-in may also have closed the silent session first), b left it unanswered and
    // audited it.
    assert!(
        !cluster
            .standin
            .requests()
            .iter()
            .any(|r| r.path.contains(&format!("/interactions/{stale_id}/"))),
        "the click that reached the frozen leader was answered"
    );
    if b_log.contains("an interaction reached this node after its lead ended") {
        let rows = open_store(&cluster.db.url)
            .await
            .audit_rows(None)
            .await
            .unwrap();
        assert!(
            rows.iter().any(|r| r.action == "not_ready" && !r.accepted),
            "the unanswered click is audited"
        );
    }
    cluster.db.drop_now().await.unwrap();
}

/// libfaketime, which runs a process under a wrong clock (Debian's `faketime`).
fn libfaketime() -> Option<&'static str> {
    let lib = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";
    std::path::Path::new(lib).exists().then_some(lib)
}

/// `bin` with its wall clock `offset` off (e.g. "+600s"); its monotonic clock is left alone.
fn skewed(bin: Bin, lib: &str, offset: &str) -> Bin {
    bin.env("LD_PRELOAD", lib)
        .env("FAKETIME", offset)
        .env("FAKETIME_DONT_FAKE_MONOTONIC", 1)
        .env("FAKETIME_NO_CACHE", 1)
}

#[tokio::test]
async fn a_node_with_a_wrong_clock_keeps_cluster_time_on_the_databases_clock() {
    let Some(lib) = libfaketime() else {
        return skip(
            "a_node_with_a_wrong_clock_keeps_cluster_time_on_the_databases_clock",
            "libfaketime is not installed (apt-get install faketime)",
        );
    };
    let cluster = Cluster::new().await;
    // The leader's clock is ten minutes fast: with its own clock, every other node's
    // heartbeat would look ten minutes old, and it would reap their live requests.
    let b = skewed(fast(cluster.node("b")), lib, "+600s").env("ASKRELAY_RESTART_GRACE_SECS", 2);
    let mut leader = b.serve().await;
    leader
        .wait_log_anywhere("this host's clock differs from the database's")
        .await;
    leader.wait_log("leading the cluster").await;
    within("the leader's gateway session", cluster.standin.wait_ready()).await;
    // A follower whose clock is ten minutes slow stamps its requests on the database's clock.
    let a = skewed(fast(cluster.node("a")), lib, "-600s").env("ASKRELAY_RESTART_GRACE_SECS", 2);
    let a_served = follower(&a).await;
    let c = fast(cluster.node("c")).env("ASKRELAY_RESTART_GRACE_SECS", 2);
    let mut c_served = follower(&c).await;
    let mut live = a.ask(&["--request-id", "live"], QUESTION).await;
    live.wait_stderr("waiting for an answer").await;
    let mut gone = c
        .ask(
            &["--request-id", "gone"],
            &QUESTION.replace("Deploy to production?", "Restart the cache?"),
        )
        .await;
    gone.wait_stderr("waiting for an answer").await;
    let posted = cluster.posted(2).await;
    let id_with = |text: &str| {
        id_of(
            posted
                .iter()
                .find(|m| text_of(m).contains(text))
                .unwrap_or_else(|| panic!("no message with {text:?}: {posted:?}")),
        )
    };
    let (gone_id, live_id) = (id_with("request gone"), id_with("request live"));

    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect(&cluster.db.url).await.unwrap();
    let (created, now): (i64, i64) = sqlx::query_as(
        "SELECT created_at, askrelay_now_ms() FROM requests WHERE request_id = 'live'",
    )
    .fetch_one(&mut conn)
    .await
    .unwrap();
    assert!(
        (now - created).abs() < 60_000,
        "a slow node's request is stamped on the database's clock: {} s off",
        (now - created) / 1000
    );

    // c stops; the leader reaps c's request once c has been silent for restart_grace_secs by
    // the database's clock, and leaves a's (alive, whatever its clock says) alone.
    c_served.child.start_kill().unwrap();
    c_served.child.wait().await.unwrap();
    drop(gone);
    leader
        .wait_log("cancelling a request of a node that stopped")
        .await;
    cluster
        .edited_final(gone_id, "the leader to edit the reaped request's message")
        .await;
    let status: Vec<(String, String)> =
        sqlx::query_as("SELECT request_id, status FROM requests ORDER BY request_id")
            .fetch_all(&mut conn)
            .await
            .unwrap();
    assert_eq!(
        status,
        [
            ("gone".to_owned(), "cancelled".to_owned()),
            ("live".to_owned(), "pending".to_owned())
        ]
    );
    let _ = conn.close().await;
    let live_msg = cluster.standin.message(live_id).unwrap();
    press_on(&cluster.standin, &live_msg, &alice(), "Yes").await;
    let (code, out) = live.finish().await;
    assert_eq!(code, 0, "{out}");
    // The offset is measured once and then held: every beat since (the reaping took several)
    // measured the same difference. An offset measured against the already corrected clock
    // would flip between the skew and 0 at every beat, stamping every other beat's requests
    // ten minutes off, and say so in the log each time.
    for (node, served) in [("b", leader), ("a", a_served)] {
        let (_, log) = served.terminate().await;
        let said = log.matches("this host's clock differs").count();
        assert_eq!(
            said, 1,
            "node {node} re-measured its offset {said} times:\n{log}"
        );
    }
    cluster.db.drop_now().await.unwrap();
}

#[tokio::test]
async fn twenty_nodes_on_one_database_hold_a_bounded_number_of_connections() {
    let cluster = Cluster::new().await;
    let (_first, mut leader) = cluster.leader("n00").await;
    let mut nodes = Vec::new();
    for i in 1..20 {
        let bin = cluster.node(&format!("n{i:02}"));
        nodes.push(follower(&bin).await);
    }
    // Each node listens for notices on a connection it opens once it runs: count when all do.
    for n in nodes.iter_mut().chain([&mut leader]) {
        n.wait_log_anywhere("listening for cluster notices").await;
    }
    // Every node idle: count the connections each kind holds.
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect(&cluster.db.url).await.unwrap();
    let rows: Vec<(String, i64)> = sqlx::query_as(
        "SELECT split_part(application_name, ' ', 1), count(*) FROM pg_stat_activity \
         WHERE datname = current_database() AND pid <> pg_backend_pid() GROUP BY 1 ORDER BY 1",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap();
    let _ = conn.close().await;
    let total: i64 = rows.iter().map(|(_, n)| n).sum();
    eprintln!("20 idle nodes hold {total} connections: {rows:?}");
    let of = |name: &str| rows.iter().find(|(n, _)| n == name).map_or(0, |(_, n)| *n);
    assert_eq!(of("askrelay-lease"), 20, "{rows:?}");
    assert_eq!(of("askrelay-listen"), 20, "{rows:?}");
    // The formula of docs/cluster.md: per node, the lease and the listener, and at most
    // postgres.max_connections (4) pooled.
    assert!(total <= 20 * (2 + 4), "{total} connections: {rows:?}");
    for n in nodes {
        n.terminate().await;
    }
    leader.terminate().await;
    cluster.db.drop_now().await.unwrap();
}

/// The `/metrics` URL of a daemon started with `http.listen = "127.0.0.1:0"`.
async fn metrics_of(served: &mut Served) -> String {
    let line = served
        .wait_log_anywhere("serving /metrics and /healthz")
        .await;
    let addr = line.split("addr=").nth(1).unwrap();
    let addr = addr.split_whitespace().next().unwrap();
    format!("http://{addr}/metrics")
}

async fn get_text(url: &str) -> String {
    let resp = within(&format!("GET {url}"), reqwest::get(url))
        .await
        .unwrap();
    resp.text().await.unwrap()
}

/// The value of one sample line (`name{labels}`), or `None` when the series is absent.
fn sample_of(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .map(|v| v.trim().parse().unwrap())
}

/// A follower reports degraded, naming the outbox, when the leader's work is overdue (here:
/// Discord refuses every post), although the lead itself is healthy; and ok again once the
/// leader's repair pass posts it.
#[tokio::test]
async fn a_follower_reports_an_overdue_outbox_as_degraded() {
    use askrelay_testkit::standin::Failure;
    let cluster = Cluster::new().await;
    let overdue = |bin: Bin| {
        fast(bin)
            .env("ASKRELAY_OUTBOX_OVERDUE_SECS", 1)
            .env("ASKRELAY_DISCORD__REPAIR_INTERVAL_SECS", 1)
    };
    let b = overdue(cluster.node("b"));
    let leader = cluster.lead(&b).await;
    let a = overdue(cluster.node("a"));
    let served_a = follower(&a).await;
    let (code, h, _) = health_timed(&a).await;
    assert_eq!((code, h["status"].as_str()), (0, Some("ok")), "{h}");

    cluster
        .standin
        .fail_next("POST", "/messages", Failure::Status(500), 100_000);
    let asker = a.ask(&["--request-id", "stuck"], QUESTION).await;
    let h = within("the follower to report the outbox as overdue", async {
        loop {
            let (code, h, _) = health_timed(&a).await;
            if failing(&h).contains(&"outbox".to_owned()) {
                assert_eq!(code, 1, "{h}");
                return h;
            }
        }
    })
    .await;
    assert_eq!(h["status"], "degraded", "{h}");
    assert_eq!(failing(&h), ["outbox"], "only the outbox: {h}");
    assert_eq!(h["gateway"], "held by the leader", "{h}");

    // Discord takes posts again: the repair pass posts the question, and health is ok again.
    cluster.standin.clear_failures();
    let posted = cluster.posted(1).await;
    health_ok_again(&a).await;
    press_on(&cluster.standin, &posted[0], &alice(), "Yes").await;
    let (code, out) = asker.finish().await;
    assert_eq!(code, 0, "{out}");
    served_a.terminate().await;
    leader.terminate().await;
    cluster.db.drop_now().await.unwrap();
}

/// A leader whose edit is being retried (Discord failing) and whose lead ends meanwhile sends
/// no more attempts: the new leader's edit would otherwise be overwritten by the old one's
/// late retry (a settled message shown open again, for good, as it is recorded settled).
#[tokio::test]
async fn a_leader_that_lost_the_lead_stops_retrying_its_edits() {
    use askrelay_testkit::standin::Failure;
    let cluster = Cluster::new().await;
    // Retries seconds apart (from 250 ms, doubling), as in production: time enough for the
    // lead to end between two of them.
    let bin = fast(cluster.node("a")).env("ASKRELAY_DISCORD__RETRY_MAX_DELAY_MS", 8000);
    let mut served = cluster.lead(&bin).await;
    let mut asker = bin.ask(&["--request-id", "edited"], QUESTION).await;
    asker.wait_stderr("waiting for an answer").await;
    let id = id_of(&cluster.posted(1).await[0]);
    let patch = format!("/messages/{id}");
    cluster
        .standin
        .fail_next("PATCH", &patch, Failure::Status(500), 1000);
    let (code, _, err) = bin.run(&["cancel", "edited"]).await;
    assert_eq!(code, 0, "{err}");
    within(
        "the first (failing) edit",
        cluster
            .standin
            .wait_for_request(|r| r.method == "PATCH" && r.path.ends_with(&patch)),
    )
    .await;
    // The lease moves elsewhere while the edit waits to be retried (its backoff is seconds).
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect(&cluster.db.url).await.unwrap();
    sqlx::query(
        "UPDATE lease SET holder = 'elsewhere', epoch = epoch + 1, \
         expires_at = askrelay_now_ms() + 600000",
    )
    .execute(&mut conn)
    .await
    .unwrap();
    let _ = conn.close().await;
    served.wait_log("stepping down").await;
    let from = cluster.standin.requests().len();
    cluster.standin.clear_failures();
    let gave_up = served.wait_log("cannot edit the question message").await;
    assert!(gave_up.contains("lead ended"), "{gave_up}");
    let late: Vec<_> = cluster
        .standin
        .requests_from(from)
        .into_iter()
        .filter(|r| r.method == "PATCH")
        .collect();
    assert!(late.is_empty(), "edits sent after the lead ended: {late:?}");
    let (code, _) = asker.finish().await;
    assert_eq!(code, 5, "the cancelled ask ends ABORTED");
    served.terminate().await;
    cluster.db.drop_now().await.unwrap();
}
