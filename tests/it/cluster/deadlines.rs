//! The deadline of every database call (`postgres.db_deadline_secs`, issue 42 item 1). A node
//! reaches the database through a TCP proxy the test pauses: its open connections stay open
//! and hear nothing, as in a network partition, so only the node's own deadline can end a
//! call. Its asks get `INTERNAL` naming the cause (with `"retry": true`: the client asks again
//! by itself until the node stores it), and its clicks "could not be saved, try again", within
//! the deadline, instead of waiting for the partition to heal.

use super::*;
use askrelay::client::Client;
use askrelay_testkit::fixtures;
use askrelay_testkit::proxy::Proxy;
use serde_json::json;

/// The deadline these tests give their cut-off node: above Discord's 2 s deferral, so that a
/// click's reply is always the deferral and then a follow-up.
const DEADLINE: Duration = Duration::from_secs(3);

/// The daemon's own `postgres.db_deadline_secs`, which the tests that leave it unset meet.
const DEFAULT_DEADLINE: Duration = Duration::from_secs(5);

/// What a test allows on top of the deadline: a debug build on a shared 2-core machine (the
/// bound is the deadline; a partition used to hold the calls until it healed).
const SLACK: Duration = Duration::from_secs(3);

/// `bin` with the tests' deadline, reaching the database at `url` (through the proxy).
fn cut_off_able(bin: Bin, url: &str) -> Bin {
    bin.env("ASKRELAY_POSTGRES__DB_DEADLINE_SECS", DEADLINE.as_secs())
        .env("ASKRELAY_DATABASE_URL", url)
}

/// Asks on `socket` with request id `id`; the first line that answers the ask (`accepted` or
/// `error`), and how long it took to come.
async fn ask_raw(socket: std::path::PathBuf, id: String) -> (Value, Duration) {
    let mut c = Client::connect(&socket).await.unwrap();
    let mut ask: Value = serde_json::from_str(QUESTION).unwrap();
    ask["op"] = json!("ask");
    ask["request_id"] = json!(id);
    let started = Instant::now();
    c.send_json(&ask).await.unwrap();
    loop {
        let line = c.recv_json().await.unwrap().expect("a reply to the ask");
        if line["event"] == "accepted" || line["event"] == "error" {
            return (line, started.elapsed());
        }
    }
}

#[tokio::test]
async fn asks_on_a_node_cut_off_from_the_database_get_internal_naming_the_cause_within_the_deadline(
) {
    let cluster = Cluster::new().await;
    let (proxy, url) = Proxy::for_postgres(&cluster.db.url).await.unwrap();
    let (_a, leader) = cluster.leader("a").await;
    // At the defaults users run (db_deadline_secs 5).
    let b = cluster.node("b").env("ASKRELAY_DATABASE_URL", &url);
    let mut served_b = follower(&b).await;
    // One ask through b first, answered: b's pool holds open connections, on which a query
    // had no deadline at all.
    let mut asker = b.ask(&["--request-id", "before"], QUESTION).await;
    asker.wait_stderr("waiting for an answer").await;
    let posted = cluster.posted(1).await;
    press_on(&cluster.standin, &posted[0], &alice(), "Yes").await;
    assert_eq!(asker.finish().await.0, 0);

    proxy.pause();
    // Several at once: they take turns to store, and the last must not wait out a deadline
    // for each one before it.
    let asks: Vec<_> = (0..6)
        .map(|i| tokio::spawn(ask_raw(b.socket(), format!("cut-{i}"))))
        .collect();
    for ask in asks {
        let (line, took) = within("an ask on the cut-off node to be answered", ask)
            .await
            .unwrap();
        eprintln!("an ask on the cut-off node was answered after {took:?}: {line}");
        assert_eq!(line["event"], "error", "{line}");
        assert_eq!(line["code"], "INTERNAL", "{line}");
        assert_eq!(
            line["retry"], true,
            "nothing changed; the same ask may come again: {line}"
        );
        let message = line["message"].as_str().unwrap();
        assert!(
            message.contains("the database did not answer within 5 s (postgres.db_deadline_secs)"),
            "the cause is named: {message}"
        );
        assert!(
            took < DEFAULT_DEADLINE + SLACK,
            "answered after {took:?}, the deadline is {DEFAULT_DEADLINE:?}"
        );
    }
    // The node serves its socket meanwhile, and says what fails.
    let (code, h, _) = health_timed(&b).await;
    assert_eq!(code, 1, "{h}");
    assert!(failing(&h).contains(&"store".to_owned()), "{h}");

    // An agent's client asking meanwhile is told so and asks again by itself, backing off.
    let mut asker = b.ask(&["--request-id", "cut-0"], QUESTION).await;
    asker.wait_stderr("could not save request cut-0").await;
    // The partition heals: the same ask (the same request id) is stored now, as after a
    // restart, by the same client, and answered.
    proxy.resume();
    served_b
        .wait_log_anywhere("the database answers again")
        .await;
    asker.wait_stderr("waiting for an answer").await;
    let posted = cluster.posted(2).await;
    press_on(&cluster.standin, &posted[1], &alice(), "No").await;
    let (code, out) = asker.finish().await;
    assert_eq!(code, 0, "{out}");
    assert!(out.contains(r#"["No"]"#), "{out}");
    served_b.terminate().await;
    leader.terminate().await;
    proxy.cut();
    drop(proxy);
    cluster.db.drop_now().await.unwrap();
}

/// Sends a click on `custom_id` of `message` as alice, without waiting for its callback; the
/// interaction's id.
async fn click_only(standin: &StandIn, message: &Value, custom_id: &str) -> String {
    let id = next_interaction_id();
    let payload = fixtures::component_click(id, &at_on(standin, message), &alice(), custom_id);
    fixtures::parse(&payload);
    standin.send_interaction(payload).await;
    id.to_string()
}

/// The private reply to interaction `id`, and when it came: its callback when that is one
/// (type 4), else, after a deferred update (type 6), its ephemeral follow-up.
async fn private_reply(standin: &StandIn, id: &str) -> (String, Instant) {
    let cb = within(
        "the interaction's callback",
        standin.wait_for_request(|r| r.path.contains(&format!("/interactions/{id}/"))),
    )
    .await;
    let body = cb.body.unwrap();
    if body["type"] == 4 {
        return (ephemeral(&body).to_owned(), Instant::now());
    }
    assert_eq!(body["type"], 6, "a deferred update: {body}");
    let follow = format!("/api/v10/webhooks/{}/tok{id}", standin.application_id());
    let sent = within(
        "the ephemeral follow-up",
        standin.wait_for_request(|r| r.method == "POST" && r.path == follow),
    )
    .await;
    let at = Instant::now();
    let body = sent.body.unwrap();
    assert_eq!(body["flags"].as_u64().unwrap() & 64, 64, "{body}");
    (body["content"].as_str().unwrap().to_owned(), at)
}

/// What a person is told when their click could not be saved because the database did not
/// answer in time (docs/cluster.md).
const NOT_SAVED: &str = "Your answer could not be saved, try again (askrelay's database did \
                         not answer in time). Nothing was recorded.";

#[tokio::test]
async fn a_click_on_a_leader_cut_off_from_the_database_is_told_could_not_be_saved_within_the_deadline(
) {
    let cluster = Cluster::new().await;
    let (proxy, url) = Proxy::for_postgres(&cluster.db.url).await.unwrap();
    // A lease of 10 s: the cut-off leader holds its gateway for 8 s, long enough for both
    // clicks to reach it (at the default of 3 s the second would reach the next leader).
    let b = cut_off_able(cluster.node("b"), &url).env("ASKRELAY_CLUSTER__FAILOVER_SECS", 10);
    let cut_off = click_on_a_cut_off_leader(&cluster, &proxy, &b, DEADLINE).await;
    let message = cut_off.message.clone();

    // A click that b must read its request for first (a token b does not hold in memory)
    // is told the same: what matters to the person is that their answer did not count.
    let yes = control(&message, "Yes");
    let mut parts: Vec<&str> = yes.split(':').collect();
    let unknown = "0".repeat(parts[1].len());
    parts[1] = &unknown;
    let clicked = Instant::now();
    let id = click_only(&cluster.standin, &message, &parts.join(":")).await;
    let (text, at) = private_reply(&cluster.standin, &id).await;
    assert_eq!(text, NOT_SAVED);
    assert!(
        at - clicked < DEADLINE + SLACK,
        "told after {:?}",
        at - clicked
    );

    // Nothing was saved: once a takes over, the person clicks again and it counts.
    counts_on_the_next_leader(cluster, proxy, cut_off).await;
}

/// At the defaults users run (`failover_secs` 3, `db_deadline_secs` 5) a leader cut off from
/// the database steps down before its write's deadline runs out: the click it took is still
/// told "could not be saved" within the deadline (its interaction token outlives the lead),
/// not left "thinking", and the click made again on the next leader counts.
#[tokio::test]
async fn at_the_defaults_a_click_on_a_leader_cut_off_is_told_could_not_be_saved_though_it_steps_down(
) {
    let cluster = Cluster::new().await;
    let (proxy, url) = Proxy::for_postgres(&cluster.db.url).await.unwrap();
    let b = cluster.node("b").env("ASKRELAY_DATABASE_URL", &url);
    // The click reaches b at once, before it gives up its lead (about 2.6 s after the cut).
    let cut_off = click_on_a_cut_off_leader(&cluster, &proxy, &b, DEFAULT_DEADLINE).await;
    counts_on_the_next_leader(cluster, proxy, cut_off).await;
}

/// A leader cut off from the database with a question posted, and the node that follows it.
struct CutOff {
    leader: Served,
    next: Served,
    asker: Asker,
    message: Value,
}

/// `b` leads and `a` follows; a question asked on b is posted (b keeps it in memory: a click
/// goes straight to its write); b is cut off (`proxy` paused) and still holds the gateway
/// until its lease is about to run out: alice's click on Yes reaches it, its write cannot
/// reach the database, and she is told "could not be saved" within `deadline`.
async fn click_on_a_cut_off_leader(
    cluster: &Cluster,
    proxy: &Proxy,
    b: &Bin,
    deadline: Duration,
) -> CutOff {
    let leader = cluster.lead(b).await;
    let next = follower(&cluster.node("a")).await;
    let mut asker = b.ask(&["--request-id", "clicked"], QUESTION).await;
    asker.wait_stderr("waiting for an answer").await;
    let message = cluster.posted(1).await.remove(0);
    proxy.pause();
    let clicked = Instant::now();
    let id = click_only(&cluster.standin, &message, &control(&message, "Yes")).await;
    let (text, at) = private_reply(&cluster.standin, &id).await;
    let took = at - clicked;
    eprintln!("the click was told after {took:?} (deadline {deadline:?}): {text}");
    assert_eq!(text, NOT_SAVED);
    assert!(
        took < deadline + SLACK,
        "told after {took:?}, the deadline is {deadline:?}"
    );
    CutOff {
        leader,
        next,
        asker,
        message,
    }
}

/// Once a takes over from the cut-off b, the person clicks again and it counts; b's asker
/// hears of it once b reaches the database again.
async fn counts_on_the_next_leader(cluster: Cluster, proxy: Proxy, cut_off: CutOff) {
    let CutOff {
        mut leader,
        mut next,
        asker,
        message,
    } = cut_off;
    leader.wait_log("could not renew its lead in time").await;
    next.wait_log("leading the cluster").await;
    within("a's gateway session", cluster.standin.wait_ready()).await;
    let cb = press_on(&cluster.standin, &message, &alice(), "Yes").await;
    assert_eq!(cb["type"], 7, "{cb}");
    proxy.resume();
    let (code, out) = asker.finish().await;
    assert_eq!(code, 0, "{out}");
    assert!(out.contains(r#"["Yes"]"#), "{out}");
    next.terminate().await;
    leader.terminate().await;
    proxy.cut();
    drop(proxy);
    cluster.db.drop_now().await.unwrap();
}
