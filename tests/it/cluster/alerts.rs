//! The cluster's alertable state on `/metrics` (issue 42 item 3): a failover counted with its
//! cause and its gap by the node that took over, the holder every node sees, and how long the
//! outbox has gone without a post while work is due. The leader is frozen for real (SIGSTOP);
//! Discord's refusals keep the outbox due. docs/operations.md's alert rules read these series
//! (`metrics::the_alert_rules_of_operations_md_pass_promtool`).

use super::*;

/// Scrapes `url` until `done` holds for its text; that text.
async fn scrape_until(url: &str, what: &str, done: impl Fn(&str) -> bool) -> String {
    within(what, async {
        loop {
            let m = get_text(url).await;
            if done(&m) {
                return m;
            }
        }
    })
    .await
}

#[tokio::test]
async fn a_frozen_leader_shows_as_a_failover_with_its_gap_and_the_new_holder() {
    let cluster = Cluster::new().await;
    let b = fast(cluster.node("b"));
    let mut leader = cluster.lead(&b).await;
    let a = fast(cluster.node("a")).env("ASKRELAY_HTTP__LISTEN", "127.0.0.1:0");
    let mut next = follower(&a).await;
    let metrics = metrics_of(&mut next).await;
    let expired = r#"askrelay_cluster_failovers_total{cause="expired"}"#;
    let released = r#"askrelay_cluster_failovers_total{cause="released"}"#;
    let m = scrape_until(&metrics, "a to see b hold the lead", |m| {
        sample_of(m, r#"askrelay_cluster_holder{node="b"}"#) == Some(1.0)
    })
    .await;
    assert_eq!(sample_of(&m, expired), Some(0.0), "{m}");
    assert_eq!(sample_of(&m, released), Some(0.0), "{m}");
    assert_eq!(
        sample_of(&m, "askrelay_cluster_leader_gap_seconds_count"),
        Some(0.0),
        "{m}"
    );
    assert_eq!(
        sample_of(&m, "askrelay_outbox_seconds_since_last_post"),
        Some(0.0),
        "nothing is due: {m}"
    );

    // b freezes; a takes over once b's lease expired, and counts it.
    leader.signal("-STOP").await;
    next.wait_log("leading the cluster").await;
    let took = next.wait_log_anywhere("took over the cluster's lead").await;
    assert!(
        took.contains("from=b") && took.contains(r#"cause="expired""#),
        "{took}"
    );
    let m = get_text(&metrics).await;
    assert_eq!(sample_of(&m, expired), Some(1.0), "{m}");
    assert_eq!(sample_of(&m, released), Some(0.0), "{m}");
    assert_eq!(
        sample_of(&m, r#"askrelay_cluster_holder{node="a"}"#),
        Some(1.0),
        "{m}"
    );
    assert_eq!(
        sample_of(&m, r#"askrelay_cluster_holder{node="b"}"#),
        None,
        "one holder: {m}"
    );
    assert_eq!(
        sample_of(&m, "askrelay_cluster_leader_gap_seconds_count"),
        Some(1.0),
        "{m}"
    );
    // At least the lease's length (2 s) from b's last renewal: that is when it expired.
    let gap = sample_of(&m, "askrelay_cluster_leader_gap_seconds_sum").unwrap();
    assert!(gap >= 2.0, "a gap of {gap} s: {m}");
    assert_eq!(
        sample_of(
            &m,
            r#"askrelay_cluster_leader_gap_seconds_bucket{le="1.0"}"#
        ),
        Some(0.0),
        "{m}"
    );
    leader.signal("-CONT").await;
    leader.wait_log("stepping down").await;

    // Discord refuses every post: the question waits, and the gauge says how long nothing
    // was posted; it is 0 again once the post goes through.
    use askrelay_testkit::standin::Failure;
    cluster
        .standin
        .fail_next("POST", "/messages", Failure::Status(500), 100_000);
    let asker = a.ask(&["--request-id", "stuck"], QUESTION).await;
    let m = scrape_until(&metrics, "the outbox to go a second without a post", |m| {
        sample_of(m, "askrelay_outbox_seconds_since_last_post").is_some_and(|s| s >= 1.0)
    })
    .await;
    assert!(
        sample_of(&m, "askrelay_outbox_oldest_due_seconds").unwrap() >= 1.0,
        "{m}"
    );
    cluster.standin.clear_failures();
    let posted = cluster.posted(1).await;
    scrape_until(&metrics, "the gauge to be 0 once posted", |m| {
        sample_of(m, "askrelay_outbox_seconds_since_last_post") == Some(0.0)
    })
    .await;
    press_on(&cluster.standin, &posted[0], &alice(), "Yes").await;
    let (code, out) = asker.finish().await;
    assert_eq!(code, 0, "{out}");
    next.terminate().await;
    leader.terminate().await;
    cluster.db.drop_now().await.unwrap();
}
