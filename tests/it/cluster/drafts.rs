//! A multi-select draft across a change of leader (issue 42 item 5): a selection whose save
//! failed on a leader cut off from the database (its TCP proxy paused) is not known to the
//! next leader, which must not submit the older draft it finds in the store in its place: it
//! asks the person to choose again.

use super::*;
use askrelay_testkit::fixtures;
use askrelay_testkit::proxy::Proxy;

const SERVICES: &str = r#"{"questions":[{"id":"svc","question":"Which services?","header":"Services","options":[{"label":"Option 0"},{"label":"Option 1"},{"label":"Option 2"}],"multiSelect":true}]}"#;

/// Sends alice's selection of `values` on `message`'s select menu; the interaction's id.
async fn select_only(standin: &StandIn, message: &Value, values: &[&str]) -> String {
    let id = next_interaction_id();
    let payload = fixtures::select_values(
        id,
        &at_on(standin, message),
        &alice(),
        &select_id(message),
        values,
    );
    fixtures::parse(&payload);
    standin.send_interaction(payload).await;
    id.to_string()
}

/// The callback of interaction `id`.
async fn callback(standin: &StandIn, id: &str) -> Value {
    within(
        "the interaction's callback",
        standin.wait_for_request(|r| r.path.contains(&format!("/interactions/{id}/"))),
    )
    .await
    .body
    .unwrap()
}

#[tokio::test]
async fn a_selection_that_failed_to_save_on_a_cut_off_leader_is_not_submitted_stale_by_the_next() {
    let cluster = Cluster::new().await;
    let (proxy, url) = Proxy::for_postgres(&cluster.db.url).await.unwrap();
    let b = cluster
        .node("b")
        .env("ASKRELAY_POSTGRES__DB_DEADLINE_SECS", 3)
        .env("ASKRELAY_DATABASE_URL", &url)
        // The cut-off leader holds its gateway for 8 s: the selection surely reaches it.
        .env("ASKRELAY_CLUSTER__FAILOVER_SECS", 10);
    let mut leader = cluster.lead(&b).await;
    let mut next = follower(&cluster.node("a")).await;
    let mut asker = b.ask(&["--request-id", "services"], SERVICES).await;
    asker.wait_stderr("waiting for an answer").await;
    let message = cluster.posted(1).await.remove(0);

    // Option 0 chosen and saved on b.
    let id = select_only(&cluster.standin, &message, &["0"]).await;
    assert_eq!(callback(&cluster.standin, &id).await["type"], 6);

    // b is cut off: Options 0 and 2 chosen, and the save runs out; the person is told.
    proxy.pause();
    let id = select_only(&cluster.standin, &message, &["0", "2"]).await;
    assert_eq!(callback(&cluster.standin, &id).await["type"], 6, "deferred");
    let follow = format!(
        "/api/v10/webhooks/{}/tok{id}",
        cluster.standin.application_id()
    );
    let told = within(
        "the follow-up of the selection that was not saved",
        cluster
            .standin
            .wait_for_request(|r| r.method == "POST" && r.path == follow),
    )
    .await;
    let told = told.body.unwrap()["content"].as_str().unwrap().to_owned();
    assert!(told.contains("could not save your selection"), "{told}");

    // a takes over. It does not know of the failed save; "Submit" must not send Option 0
    // alone, the draft it finds in the store.
    leader.wait_log("could not renew its lead in time").await;
    next.wait_log("leading the cluster").await;
    within("a's gateway session", cluster.standin.wait_ready()).await;
    let refused = press_on(&cluster.standin, &message, &alice(), "Submit").await;
    assert!(
        is_ephemeral(&refused)
            && ephemeral(&refused).contains("choose your options again, then Submit"),
        "{refused}"
    );

    // Chosen again on a, and submitted: the answer is the person's last selection.
    let id = select_only(&cluster.standin, &message, &["0", "2"]).await;
    assert_eq!(callback(&cluster.standin, &id).await["type"], 6);
    let cb = press_on(&cluster.standin, &message, &alice(), "Submit").await;
    final_state(&cb);
    proxy.resume();
    let (code, out) = asker.finish().await;
    assert_eq!(code, 0, "{out}");
    assert!(out.contains(r#"["Option 0","Option 2"]"#), "{out}");
    next.terminate().await;
    leader.terminate().await;
    proxy.cut();
    drop(proxy);
    cluster.db.drop_now().await.unwrap();
}
