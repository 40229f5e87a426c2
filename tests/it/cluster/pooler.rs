//! Twenty nodes behind one PgBouncer in transaction mode (`postgres.pooler_url`): each question
//! is posted once, each asker gets its answer (a follower's at its next poll), and the database
//! sees PgBouncer's few server connections and the leader's one listener, not a lease and a
//! listener per node.

use super::*;
use askrelay_testkit::pgbouncer::PgBouncer;

/// PgBouncer's server connections for the test database at most.
const POOL: u32 = 5;

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
    let bouncer = tokio::task::spawn_blocking(|| PgBouncer::start(POOL))
        .await
        .unwrap()
        .unwrap();
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
    let bouncer = tokio::task::spawn_blocking(|| PgBouncer::start(POOL))
        .await
        .unwrap()
        .unwrap();
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
