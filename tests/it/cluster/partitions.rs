//! The cluster when its database stalls or a node is cut off from it: health answers at once
//! and says what fails, the lead moves, and the cluster serves on.

use super::*;

/// `askrelay health --json` of a node whatever its status, and how long it took.
pub(super) async fn health_timed(bin: &Bin) -> (i32, Value, Duration) {
    let started = Instant::now();
    let (code, out, err) = bin.run(&["health", "--json"]).await;
    let took = started.elapsed();
    assert!(code == 0 || code == 1, "{code}: {err}");
    (code, serde_json::from_str(out.trim()).unwrap(), took)
}

/// Waits until `askrelay health` of `bin` says ok again.
pub(super) async fn health_ok_again(bin: &Bin) {
    within("health to be ok again", async {
        loop {
            if health_timed(bin).await.0 == 0 {
                return;
            }
        }
    })
    .await;
}

pub(super) fn failing(h: &Value) -> Vec<String> {
    h["failing"]
        .as_array()
        .map(|a| a.iter().map(|p| p.as_str().unwrap().to_owned()).collect())
        .unwrap_or_default()
}

#[tokio::test]
async fn a_stalled_database_makes_health_say_so_within_a_second_and_the_lead_comes_back() {
    let cluster = Cluster::new().await;
    let b = fast(cluster.node("b"));
    let mut leader = cluster.lead(&b).await;
    let a = fast(cluster.node("a"));
    let mut served_a = follower(&a).await;
    let (code, h, _) = health_timed(&a).await;
    assert_eq!((code, h["status"].as_str()), (0, Some("ok")), "{h}");

    // The database stalls for everyone: the lease, the health probe and the outbox are locked.
    use sqlx::Connection;
    let mut stall = sqlx::PgConnection::connect(&cluster.db.url).await.unwrap();
    sqlx::query("BEGIN").execute(&mut stall).await.unwrap();
    sqlx::query("LOCK TABLE lease, health_probe, posts IN ACCESS EXCLUSIVE MODE")
        .execute(&mut stall)
        .await
        .unwrap();

    // The leader cannot renew, and stops its Discord work before its lease could expire.
    leader.wait_log("could not renew its lead in time").await;
    leader.wait_log("stepping down").await;
    // Health answers at once, naming the store and, once the leader's renewal is older than
    // failover_secs, the lead.
    let h = within("a follower to report the lead as failing", async {
        loop {
            let (code, h, took) = health_timed(&a).await;
            assert!(took < Duration::from_secs(3), "health took {took:?}");
            assert_eq!(code, 1, "{h}");
            assert!(failing(&h).contains(&"store".to_owned()), "{h}");
            assert!(
                h["store"]
                    .as_str()
                    .unwrap_or_default()
                    .contains("within 800 ms"),
                "{h}"
            );
            if failing(&h).contains(&"lead".to_owned()) {
                return h;
            }
        }
    })
    .await;
    assert_eq!(h["status"], "degraded", "{h}");
    let (code, hb, took) = health_timed(&b).await;
    assert!(took < Duration::from_secs(3), "health took {took:?}");
    assert_eq!(
        (code, hb["cluster"]["role"].as_str()),
        (1, Some("follower")),
        "{hb}"
    );

    // The database answers again: a node takes the lead, and health is ok again.
    sqlx::query("ROLLBACK").execute(&mut stall).await.unwrap();
    let _ = stall.close().await;
    served_a.wait_log("this node beats again").await;
    health_ok_again(&a).await;
    let mut asker = a.ask(&["--request-id", "after-stall"], QUESTION).await;
    asker.wait_stderr("waiting for an answer").await;
    let posted = cluster.posted(1).await;
    press_on(&cluster.standin, &posted[0], &alice(), "Yes").await;
    let (code, out) = asker.finish().await;
    assert_eq!(code, 0, "{out}");
    served_a.terminate().await;
    leader.terminate().await;
    cluster.db.drop_now().await.unwrap();
}

#[tokio::test]
async fn a_leader_cut_off_from_the_database_steps_down_and_another_node_takes_over() {
    let cluster = Cluster::new().await;
    // b reaches the database through a proxy the test controls; a directly.
    let (proxy, url) = askrelay_testkit::proxy::Proxy::for_postgres(&cluster.db.url)
        .await
        .unwrap();
    let b = fast(cluster.node("b")).env("ASKRELAY_DATABASE_URL", &url);
    let mut leader = cluster.lead(&b).await;
    let a = fast(cluster.node("a"));
    let mut next = follower(&a).await;
    let sessions = cluster.standin.identify_count();

    // A blackhole between b and the database: b's connections stay open and hear nothing.
    proxy.pause();
    let cut = Instant::now();
    leader.wait_log("could not renew its lead in time").await;
    leader.wait_log("stepping down").await;
    next.wait_log("leading the cluster").await;
    eprintln!("a cut-off leader was replaced after {:?}", cut.elapsed());
    within(
        "the new leader's gateway session",
        cluster.standin.wait_identify_count(sessions + 1),
    )
    .await;
    within("a live session", cluster.standin.wait_ready()).await;

    // b, still cut off, answers health at once and says what fails.
    let (code, h, took) = health_timed(&b).await;
    assert!(took < Duration::from_secs(3), "health took {took:?}");
    assert_eq!(code, 1, "{h}");
    assert_eq!(h["cluster"]["role"], "follower", "{h}");
    assert!(failing(&h).contains(&"store".to_owned()), "{h}");

    // The cluster serves: a's question is posted by a and answered.
    let mut asker = a.ask(&["--request-id", "partitioned"], QUESTION).await;
    asker.wait_stderr("waiting for an answer").await;
    let posted = cluster.posted(1).await;
    let cb = press_on(&cluster.standin, &posted[0], &alice(), "Yes").await;
    assert_eq!(cb["type"], 7, "{cb}");
    let (code, out) = asker.finish().await;
    assert_eq!(code, 0, "{out}");

    // The partition heals: b beats again and follows a.
    proxy.resume();
    leader.wait_log("this node beats again").await;
    let h = within("b to follow a", async {
        loop {
            let (_, h, _) = health_timed(&b).await;
            if h["cluster"]["leader"] == "a" {
                return h;
            }
        }
    })
    .await;
    assert_eq!(h["cluster"]["role"], "follower", "{h}");
    assert_eq!(cluster.standin.messages_in(CHANNEL).len(), 1);
    next.terminate().await;
    leader.terminate().await;
    // b's connections went through the proxy: close them before the database is dropped.
    proxy.cut();
    drop(proxy);
    cluster.db.drop_now().await.unwrap();
}
