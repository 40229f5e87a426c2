//! Twenty nodes behind one PgBouncer in transaction mode (`postgres.pooler_url`): each question
//! is posted once, each asker gets its answer (a follower's at its next poll), and the database
//! sees PgBouncer's few server connections and the leader's one listener, not a lease and a
//! listener per node. And the leader's faults behind PgBouncer: killed; frozen (SIGSTOP) or cut
//! off (its TCP proxies paused) as in `failover.rs`, whose three nodes each reach PgBouncer, and
//! the database, through proxies of their own here.

use super::failover::{posted_after, Three, NAMES, PATIENCE, SLACK};
use super::*;
use askrelay_testkit::pgbouncer::PgBouncer;
use askrelay_testkit::proxy::Proxy;

/// PgBouncer's server connections for the test database at most.
const POOL: u32 = 5;

/// A PgBouncer in transaction mode in front of the test server, with `POOL` server connections.
async fn bouncer() -> PgBouncer {
    tokio::task::spawn_blocking(|| PgBouncer::start(POOL))
        .await
        .unwrap()
        .unwrap()
}

/// The database's connections, by the first word of their application name, this query's
/// own left out.
async fn connections(db: &ScratchDb) -> Vec<(String, i64)> {
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect(&db.url).await.unwrap();
    let rows = sqlx::query_as(
        "SELECT split_part(application_name, ' ', 1), count(*) FROM pg_stat_activity \
         WHERE datname = current_database() AND pid <> pg_backend_pid() GROUP BY 1 ORDER BY 1",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap();
    let _ = conn.close().await;
    rows
}

fn count(rows: &[(String, i64)], name: &str) -> i64 {
    rows.iter().find(|(n, _)| n == name).map_or(0, |(_, n)| *n)
}

#[tokio::test]
async fn twenty_nodes_behind_pgbouncer_post_each_question_once_and_answer_the_asker() {
    const TEST: &str = "cluster::pooler::twenty_nodes_behind_pgbouncer_post_each_question_once_and_answer_the_asker";
    const N: usize = 20;
    if let Some(why) = PgBouncer::unavailable() {
        return skip(TEST, &why);
    }
    let bouncer = bouncer().await;
    let cluster = Cluster::new().await;
    let pooled = |name: &str| {
        cluster
            .node(name)
            .env("ASKRELAY_POSTGRES__POOLER_URL", bouncer.url(&cluster.db))
            .env("ASKRELAY_POSTGRES__MAX_CONNECTIONS", 2)
    };
    let first = pooled("n00");
    let leader = cluster.lead(&first).await;
    let mut bins = vec![first];
    let mut served = vec![leader];
    for i in 1..N {
        let bin = pooled(&format!("n{i:02}"));
        served.push(follower(&bin).await);
        bins.push(bin);
    }
    let idle = connections(&cluster.db).await;
    eprintln!("{N} idle nodes behind pgbouncer: {idle:?}");

    // Each node asks one question.
    let mut clients = Vec::new();
    for (i, bin) in bins.iter().enumerate() {
        let id = format!("pooled-{i}");
        let mut input = yes_no("go");
        input["questions"][0]["question"] = serde_json::json!(format!("Proceed with {id}?"));
        let mut client = Client::connect(&bin.socket()).await.unwrap();
        client.send_json(&ask_line(&id, &input)).await.unwrap();
        clients.push((id, client));
    }
    let posted = cluster.posted(N).await;
    let busy = connections(&cluster.db).await;
    eprintln!("{N} nodes with a question each: {busy:?}");
    let mut per_request: BTreeMap<String, usize> = BTreeMap::new();
    for m in &posted {
        *per_request.entry(request_of(m)).or_default() += 1;
    }
    assert_eq!(posted.len(), N, "0 duplicates: {per_request:?}");
    assert_eq!(per_request.len(), N, "{per_request:?}");

    // Each is answered through the leader; each asker, on whichever node, gets its own.
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
    for (id, mut client) in clients {
        let ev = expect_event(&mut client, "answered").await;
        assert_eq!(
            ev["result"]["answers"][0]["selected"],
            serde_json::json!([expected[&id]]),
            "{id} got another request's answer: {ev}"
        );
    }

    // The server saw PgBouncer's connections and the leader's listener: no lease connection,
    // one listener, and at most the pooler's pool besides.
    let after = connections(&cluster.db).await;
    eprintln!("{N} nodes after the answers: {after:?}");
    for rows in [&idle, &busy, &after] {
        assert_eq!(count(rows, "askrelay-lease"), 0, "{rows:?}");
        assert_eq!(
            count(rows, "askrelay-listen"),
            1,
            "the leader's only: {rows:?}"
        );
        let total: i64 = rows.iter().map(|(_, n)| n).sum();
        assert!(
            total <= i64::from(POOL) + 1,
            "{total} server connections for {N} nodes: {rows:?}"
        );
    }
    for s in served {
        s.terminate().await;
    }
    drop(bouncer);
    cluster.db.drop_now().await.unwrap();
}

/// Behind PgBouncer the lease is a row renewed by pool transactions: a killed leader's lease
/// expires, a follower takes it and the gateway, and posts what was asked meanwhile; the killed
/// node's id is free again once its claim lapses.
#[tokio::test]
async fn behind_pgbouncer_a_killed_leader_is_replaced_and_its_id_is_free_again() {
    const TEST: &str =
        "cluster::pooler::behind_pgbouncer_a_killed_leader_is_replaced_and_its_id_is_free_again";
    if let Some(why) = PgBouncer::unavailable() {
        return skip(TEST, &why);
    }
    let bouncer = bouncer().await;
    let cluster = Cluster::new().await;
    let pooled = |name: &str| {
        cluster
            .node(name)
            .env("ASKRELAY_POSTGRES__POOLER_URL", bouncer.url(&cluster.db))
    };
    let b = pooled("b");
    let mut leader = cluster.lead(&b).await;
    let a = pooled("a");
    let follower_a = follower(&a).await;
    let c = pooled("c");
    let follower_c = follower(&c).await;

    let killed_at = Instant::now();
    leader.child.start_kill().unwrap();
    leader.child.wait().await.unwrap();
    let asker = a.ask(&["--request-id", "after-the-kill"], QUESTION).await;
    within(
        "a new gateway session",
        cluster.standin.wait_identify_count(2),
    )
    .await;
    within("a live session", cluster.standin.wait_ready()).await;
    let posted = cluster.posted(1).await;
    let failover = killed_at.elapsed();
    eprintln!("behind pgbouncer, the question asked at the kill was posted after {failover:?}");
    assert!(
        failover <= FAILOVER + FAILOVER / 4 + Duration::from_secs(1),
        "failover took {failover:?}"
    );
    let rows = connections(&cluster.db).await;
    assert_eq!(count(&rows, "askrelay-lease"), 0, "{rows:?}");
    press_on(&cluster.standin, &posted[0], &alice(), "Yes").await;
    let (code, out) = asker.finish().await;
    assert_eq!(code, 0, "{out}");

    // The killed node comes back under its id once its claim lapsed (at most failover_secs).
    let back = follower(&b).await;
    for s in [back, follower_a, follower_c] {
        s.terminate().await;
    }
    drop(bouncer);
    cluster.db.drop_now().await.unwrap();
}

/// The questions the stand-in was asked to create in the channel, by nonce, with how many times
/// each: a question posted by two leaders is one stored nonce sent twice, although the
/// stand-in, which de-duplicates nonces as Discord does, keeps one message.
fn creates(standin: &StandIn) -> BTreeMap<String, usize> {
    let mut by_nonce = BTreeMap::new();
    for r in standin.requests() {
        if r.method == "POST" && r.path.ends_with(&format!("/channels/{CHANNEL}/messages")) {
            let nonce = r.body.as_ref().map_or(Value::Null, |b| b["nonce"].clone());
            *by_nonce.entry(nonce.to_string()).or_default() += 1;
        }
    }
    by_nonce
}

/// Asserts that `n` questions were posted, each once: `n` creates, `n` nonces.
fn posted_once_each(standin: &StandIn, n: usize) {
    let creates = creates(standin);
    assert_eq!(creates.len(), n, "{n} questions, {creates:?}");
    assert!(
        creates.values().all(|&c| c == 1),
        "a question posted twice: {creates:?}"
    );
}

/// Behind PgBouncer the lease is a row renewed by the pool's transactions: a frozen leader
/// renews nothing, a follower takes the lead and posts the question asked at the freeze within
/// Discord's patience. Woken, the old leader steps down and follows, and posts nothing: a
/// question asked on it is posted once, by the new leader.
#[tokio::test]
async fn behind_pgbouncer_a_frozen_leader_is_replaced_within_five_seconds_and_posts_nothing_when_it_wakes(
) {
    const TEST: &str = "cluster::pooler::behind_pgbouncer_a_frozen_leader_is_replaced_within_five_seconds_and_posts_nothing_when_it_wakes";
    if let Some(why) = PgBouncer::unavailable() {
        return skip(TEST, &why);
    }
    let mut three = Three::behind(bouncer().await).await;
    let url = three.cluster.db.url.clone();
    assert_eq!(lease_row(&url).await.0, NAMES[0]);

    let sessions = three.cluster.standin.identify_count();
    three.served[0].signal("-STOP").await;
    let frozen = Instant::now();
    let freeze = posted_after(&three, 1, "during-freeze", 1, frozen).await;
    within(
        "the new leader's session",
        three.cluster.standin.wait_identify_count(sessions + 1),
    )
    .await;
    eprintln!(
        "behind pgbouncer, freeze: a question asked at the freeze was posted after {freeze:?}"
    );
    let next = three.leader().await;
    assert_ne!(next, 0, "the frozen node still holds the lease");

    // Woken, its term is over: it stops its Discord work, and its next beat through the pool
    // finds the lease held by the new leader, whom it follows.
    three.served[0].signal("-CONT").await;
    three.served[0].wait_log("stepping down").await;
    let following = three.served[0]
        .wait_log_anywhere("following the cluster's leader")
        .await;
    assert!(
        following.contains(&format!("leader={}", NAMES[next])),
        "{following}"
    );
    posted_after(&three, 0, "after-the-wake", 2, Instant::now()).await;
    let (holder, epoch) = lease_row(&url).await;
    eprintln!("behind pgbouncer, after the wake: the lease is ({holder}, {epoch})");
    assert_eq!(holder, NAMES[next], "the woken node took the lead back");
    posted_once_each(&three.cluster.standin, 2);
    three.stop().await;
    assert!(
        freeze < PATIENCE + SLACK,
        "freeze: posted {freeze:?} after it began"
    );
}

/// Behind PgBouncer, the leader cut off (its links to PgBouncer and to the database paused, as
/// a partition of its host would): its beats through the pool run out, it stops its Discord
/// work before its lease can expire, and a follower takes the lead and posts the question asked
/// at the cut within Discord's patience. Back, the old leader follows, and nothing is posted
/// twice.
#[tokio::test]
async fn behind_pgbouncer_a_cut_off_leader_is_replaced_within_five_seconds_and_does_not_lead_when_it_is_back(
) {
    const TEST: &str = "cluster::pooler::behind_pgbouncer_a_cut_off_leader_is_replaced_within_five_seconds_and_does_not_lead_when_it_is_back";
    if let Some(why) = PgBouncer::unavailable() {
        return skip(TEST, &why);
    }
    let mut three = Three::behind(bouncer().await).await;
    let url = three.cluster.db.url.clone();
    assert_eq!(lease_row(&url).await.0, NAMES[0]);

    let sessions = three.cluster.standin.identify_count();
    three.links(0).for_each(Proxy::pause);
    let paused = Instant::now();
    let partition = posted_after(&three, 1, "during-partition", 1, paused).await;
    within(
        "the new leader's session",
        three.cluster.standin.wait_identify_count(sessions + 1),
    )
    .await;
    eprintln!(
        "behind pgbouncer, partition: a question asked at the cut was posted after {partition:?}"
    );
    three.served[0]
        .wait_log("could not renew its lead in time")
        .await;
    let next = three.leader().await;
    assert_ne!(next, 0, "the cut-off node still holds the lease");

    // Back: what it sent meanwhile reaches PgBouncer late, and its beats find the lease held
    // by the new leader, whom it follows.
    three.links(0).for_each(Proxy::resume);
    three.served[0].wait_log("this node beats again").await;
    let following = three.served[0]
        .wait_log_anywhere("following the cluster's leader")
        .await;
    assert!(
        following.contains(&format!("leader={}", NAMES[next])),
        "{following}"
    );
    posted_after(&three, 0, "after-the-cut", 2, Instant::now()).await;
    let (holder, epoch) = lease_row(&url).await;
    eprintln!("behind pgbouncer, after the cut: the lease is ({holder}, {epoch})");
    assert_eq!(
        holder, NAMES[next],
        "the node that was cut off took the lead back"
    );
    posted_once_each(&three.cluster.standin, 2);
    three.stop().await;
    assert!(
        partition < PATIENCE + SLACK,
        "partition: posted {partition:?} after it began"
    );
}
