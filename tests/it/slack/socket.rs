//! The Socket Mode connection: a dropped socket and a `disconnect` message each bring a new
//! connection, and `health` and `/metrics` show the connection's state beside Discord's.

use super::*;
use askrelay_testkit::slack::SlackFailure;
use serde_json::json;

/// The `health` reply's state of the Slack connection.
async fn slack_state(t: &Slack) -> Value {
    let h = t
        .app
        .client()
        .await
        .call_json(&json!({"op": "health"}))
        .await
        .unwrap();
    h["connections"]["slack"].clone()
}

#[tokio::test]
async fn a_dropped_socket_reconnects_and_health_shows_it() {
    let t = Slack::start().await;
    assert_eq!(slack_state(&t).await, "connected");
    let daemon = t.app.daemon.as_ref().unwrap();
    assert!(daemon
        .metrics
        .render(t.app.hub())
        .await
        .contains("askrelay_slack_socket_connected 1"));
    let (_, mut up) = t
        .app
        .hub()
        .connections()
        .into_iter()
        .find(|(name, _)| *name == "slack")
        .unwrap();
    // The first try to open a new connection fails: the connection stays down a while.
    t.s.fail_next("apps.connections.open", SlackFailure::Status(503), 1);
    t.s.drop_socket().await;
    within("the connection seen down", up.wait_for(|u| !*u))
        .await
        .unwrap();
    assert_eq!(slack_state(&t).await, "disconnected");
    let h = t
        .app
        .client()
        .await
        .call_json(&json!({"op": "health"}))
        .await
        .unwrap();
    assert_eq!(h["status"], "degraded", "{h}");
    within("a new connection", t.s.wait_connected(2)).await;
    within("the connection seen up", up.wait_for(|u| *u))
        .await
        .unwrap();
    assert_eq!(slack_state(&t).await, "connected");
    // Slack asks for a new connection: it is opened.
    t.s.send_disconnect("refresh_requested").await;
    within("a third connection", t.s.wait_connected(3)).await;
    // And a question asked now is answered through it.
    let (mut c, _) = t.ask("after", &yes_no("q")).await;
    let m = t.message(0).await;
    t.press(&alice(), &m, "No, keep them").await;
    expect_event(&mut c, "answered").await;
}

/// Against `https://`, the client is the production one: https only, the system's roots (here
/// the stand-in's CA, through `SSL_CERT_FILE`), and Socket Mode over `wss://`.
#[tokio::test]
async fn over_tls_the_https_only_client_posts_and_hears_presses() {
    askrelay_testkit::slack::install_test_ca();
    let s = SlackStandIn::start().await;
    let https = s.https_api_base();
    let app = App::start_with(|c| {
        slack_config(c, &s);
        c.slack.api_base = https;
    })
    .await;
    within("the Socket Mode connection", s.wait_connected(1)).await;
    let t = Slack { app, s };
    let (mut c, _) = t.ask("tls", &yes_no("q")).await;
    let m = t.message(0).await;
    t.press(&alice(), &m, "No, keep them").await;
    expect_event(&mut c, "answered").await;
    let post = &t.s.calls("chat.postMessage")[0];
    assert!(post.tls, "the post went over TLS");
    assert!(t.s.calls("chat.postMessage").iter().all(|r| r.tls));
    t.outcome_of(&m).await;
}
