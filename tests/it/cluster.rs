//! Cluster mode: three `askrelay serve` processes on this machine, each with its own socket,
//! sharing one fresh PostgreSQL database and one Discord stand-in. Exactly one of them (the
//! leader) holds the gateway session and posts; the others store, serve and learn of answers
//! through the database.

use crate::harness::*;
use askrelay::client::Client;
use askrelay::domain::request::AuditAction;
use askrelay_testkit::scratch::ScratchDb;
use askrelay_testkit::standin::StandIn;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};
use tempfile::TempDir;

const QUESTION: &str = r#"{"questions":[{"id":"deploy","question":"Deploy to production?","header":"Deploy","options":[{"label":"Yes","description":"Ship it."},{"label":"No","description":"Hold."}],"multiSelect":false}]}"#;

/// The default failover bound (`cluster.failover_secs`), which the tests keep.
const FAILOVER: Duration = Duration::from_secs(10);

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
        let mut served = bin.serve().await;
        served.wait_log("leading the cluster").await;
        within("the leader's gateway session", self.standin.wait_ready()).await;
        (bin, served)
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
}

/// Starts a follower and waits until it names the leader (its log says so when its role is set).
async fn follower(bin: &Bin) -> Served {
    let mut served = bin.serve().await;
    served.wait_log("following the cluster's leader").await;
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
    within("the leader to edit ship-2's message", async {
        let mut seen = cluster.standin.subscribe();
        loop {
            let now = cluster.standin.message(id).unwrap();
            if text_of(&now).contains("No") && controls(&now).is_empty() {
                return;
            }
            seen.changed().await.unwrap();
        }
    })
    .await;

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
    let failover = killed_at.elapsed();
    assert!(
        failover <= FAILOVER,
        "failover took {failover:?}, more than cluster.failover_secs"
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
    let (_b, mut leader) = cluster.leader("b").await;
    let a = cluster.node("a");
    let follower = follower(&a).await;
    let mut asker = a.ask(&["--request-id", "cut-1"], QUESTION).await;
    asker.wait_stderr("waiting for an answer").await;
    let posted = cluster.posted(1).await;
    let sessions = cluster.standin.identify_count();

    // Every connection of every node is cut: pools, leases, listeners.
    let cut = terminate_backends(&cluster.db.url).await;
    assert!(cut >= 4, "cut only {cut} connections");

    // The leader's lease went with its connection: it steps down, and a leader (itself again or
    // A) opens a new gateway session. Then the click is answered, and A's client, whose notice
    // stream was cut too, still gets it.
    leader.wait_log("stepping down").await;
    within(
        "a new gateway session after the cut",
        cluster.standin.wait_identify_count(sessions + 1),
    )
    .await;
    within("a live session", cluster.standin.wait_ready()).await;
    press_on(&cluster.standin, &posted[0], &alice(), "No").await;
    let (code, out) = asker.finish().await;
    assert_eq!(code, 0, "{out}");
    assert!(out.contains(r#"["No"]"#), "{out}");
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
    within("the leader to edit the orphan's message", async {
        let mut seen = cluster.standin.subscribe();
        loop {
            if controls(&cluster.standin.message(id).unwrap()).is_empty() {
                return;
            }
            seen.changed().await.unwrap();
        }
    })
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
