//! Posting once and editing to the end: a crash between the post and its record posts again
//! with the same `client_msg_id` (no second message), a 429 is waited out for its
//! `Retry-After`, and an edit that could not be made is made after a restart.

use super::*;
use askrelay_testkit::slack::SlackFailure;
use std::time::Duration;

/// `askrelay serve` (the binary) on the stand-in, as `[slack]` through the environment.
fn bin_on(s: &SlackStandIn) -> Bin {
    Bin::new()
        .env("ASKRELAY_SLACK_BOT_TOKEN", BOT_TOKEN)
        .env("ASKRELAY_SLACK_APP_TOKEN", APP_TOKEN)
        .env("ASKRELAY_SLACK__API_BASE", s.api_base())
        .env("ASKRELAY_SLACK__CHANNEL_ID", DEFAULT_CHANNEL)
}

#[tokio::test]
async fn a_crash_after_the_post_posts_again_without_a_duplicate() {
    let s = SlackStandIn::start().await;
    let bin = bin_on(&s);
    let mut cmd = bin.cmd(&["serve"]);
    cmd.env(askrelay::crash::ENV, "posted");
    let crashing = bin.serve_cmd(cmd).await;
    within("the Socket Mode connection", s.wait_connected(1)).await;
    let mut c = Client::connect(&bin.socket()).await.unwrap();
    c.send_json(&ask_line("crash", &yes_no("q"))).await.unwrap();
    // Slack has the message; the daemon dies before recording its ts.
    let (status, log) = crashing.finish().await;
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(6), "the crash point aborts:\n{log}");
    assert_eq!(s.messages(DEFAULT_CHANNEL).len(), 1);
    let _daemon = bin.serve().await.drain();
    let mut c = Client::connect(&bin.socket()).await.unwrap();
    c.send_json(&ask_line("crash", &yes_no("q"))).await.unwrap();
    expect_event(&mut c, "accepted").await;
    // Posted again with the same client_msg_id, which the stand-in de-duplicates on.
    let posts = within(
        "the post after the restart",
        s.wait_for_requests(2, "chat.postMessage", Recorded::ok),
    )
    .await;
    assert_eq!(
        posts[0].param_str("client_msg_id"),
        posts[1].param_str("client_msg_id")
    );
    assert_eq!(s.dedup_hits(), 1);
    let messages = s.messages(DEFAULT_CHANNEL);
    assert_eq!(messages.len(), 1, "exactly one message, never a duplicate");
    // Its buttons work.
    s.click(
        &alice(),
        DEFAULT_CHANNEL,
        ts(&messages[0]),
        button(&messages[0], "No, keep them"),
    )
    .await;
    let ev = expect_event(&mut c, "answered").await;
    assert_eq!(ev["result"]["answers"][0]["selected"][0], "No, keep them");
    assert_eq!(s.messages(DEFAULT_CHANNEL).len(), 1);
}

#[tokio::test]
async fn a_429_on_post_message_is_retried_after_its_retry_after() {
    let t = Slack::start().await;
    t.s.fail_next(
        "chat.postMessage",
        SlackFailure::RateLimited {
            retry_after_secs: 1,
        },
        1,
    );
    let (_c, accepted) = t.ask("limited", &yes_no("q")).await;
    let calls = t.s.calls("chat.postMessage");
    assert_eq!(calls.len(), 2, "one 429, then the post");
    assert_eq!(calls[0].status, 429);
    assert!(calls[1].ok());
    let waited = calls[1].at.duration_since(calls[0].at);
    assert!(
        waited >= Duration::from_secs(1),
        "the retry came {waited:?} after a 429 that said retry after 1 s"
    );
    assert_eq!(accepted["message_links"].as_array().unwrap().len(), 1);
    assert_eq!(t.s.messages(DEFAULT_CHANNEL).len(), 1);
}

#[tokio::test]
async fn an_edit_that_failed_is_made_after_a_restart() {
    let mut t = Slack::start().await;
    let (mut c, _) = t.ask("heal", &yes_no("q")).await;
    let m = t.message(0).await;
    t.s.fail_next("chat.update", SlackFailure::Status(503), 1000);
    t.press(&alice(), &m, "No, keep them").await;
    expect_event(&mut c, "answered").await;
    within(
        "an edit that fails",
        t.s.wait_for_request("chat.update", |r| r.status == 503),
    )
    .await;
    t.app.stop().await;
    t.s.clear_failures();
    t.app.restart().await;
    within("a new Socket Mode connection", t.s.wait_connected(2)).await;
    let update = t.outcome_of(&m).await;
    assert!(update.params.to_string().contains("in Slack"));
    assert!(elements(&t.now(&m)).is_empty());
}

#[tokio::test]
async fn a_channel_slack_does_not_know_ends_the_request_with_the_cause() {
    let t = Slack::start_with(|c| c.slack.channel_id = Some("C0NOTHERE1".into())).await;
    let mut c = t.app.client().await;
    c.send_json(&ask_line("nowhere", &yes_no("q")))
        .await
        .unwrap();
    let ev = expect_event(&mut c, "error").await;
    assert_eq!(ev["code"], "NO_ANSWERER", "{ev}");
    let message = ev["message"].as_str().unwrap();
    assert!(
        message.contains("posting to Slack channel C0NOTHERE1 (route \"default\") failed: Slack said channel_not_found"),
        "{message}"
    );
    assert!(!message.contains(BOT_TOKEN));
}

#[tokio::test]
async fn a_long_retry_after_is_waited_in_the_background_not_by_the_agent() {
    let t = Slack::start().await;
    t.s.fail_next(
        "chat.postMessage",
        SlackFailure::RateLimited {
            retry_after_secs: 30,
        },
        1,
    );
    let (_c, accepted) = t.ask("later", &yes_no("q")).await;
    let posting = accepted["posting"].as_str().unwrap_or_default();
    assert!(
        posting.contains("Slack is rate limiting (429, retry after 30 s)")
            && posting.contains("posted as soon as it is back"),
        "{accepted}"
    );
    assert_eq!(t.s.calls("chat.postMessage").len(), 1, "no second try yet");
    assert!(t.s.messages(DEFAULT_CHANNEL).is_empty());
}

/// Slack's Web API cut off by a partition (a TCP proxy that stops forwarding): the ask is
/// accepted anyway once its tries ran out, saying Slack is unavailable, and the question is
/// posted exactly once when the partition heals, although the tries held in the partition
/// reach Slack late (the same `client_msg_id`); its buttons then work.
#[tokio::test]
async fn a_partition_from_slack_is_waited_out_and_the_question_posted_once() {
    let s = SlackStandIn::start().await;
    let proxy = askrelay_testkit::proxy::Proxy::start(s.addr())
        .await
        .unwrap();
    let app = App::start_with(|c| {
        slack_config(c, &s);
        c.slack.api_base = format!("http://{}/api", proxy.addr());
    })
    .await;
    within("the Socket Mode connection", s.wait_connected(1)).await;
    proxy.pause();
    let started = std::time::Instant::now();
    let mut c = app.client().await;
    c.send_json(&ask_line("cut", &yes_no("q"))).await.unwrap();
    let accepted = expect_event(&mut c, "accepted").await;
    eprintln!(
        "accepted {:?} after the ask, with Slack's Web API partitioned",
        started.elapsed()
    );
    let posting = accepted["posting"].as_str().unwrap_or_default();
    assert!(posting.contains("Slack is unavailable"), "{accepted}");
    assert!(s.messages(DEFAULT_CHANNEL).is_empty());
    proxy.resume();
    let posted = within(
        "the question posted after the partition",
        s.wait_for_request("chat.postMessage", Recorded::ok),
    )
    .await;
    let m = within("the message", async {
        loop {
            if let Some(m) = s.messages(DEFAULT_CHANNEL).pop() {
                return m;
            }
            s.subscribe().changed().await.unwrap();
        }
    })
    .await;
    let id = posted.param_str("client_msg_id").unwrap().to_owned();
    assert!(s
        .calls("chat.postMessage")
        .iter()
        .all(|r| r.param_str("client_msg_id") == Some(id.as_str())));
    s.click(
        &alice(),
        DEFAULT_CHANNEL,
        ts(&m),
        button(&m, "No, keep them"),
    )
    .await;
    let ev = expect_event(&mut c, "answered").await;
    assert_eq!(ev["result"]["answers"][0]["selected"][0], "No, keep them");
    assert_eq!(
        s.messages(DEFAULT_CHANNEL).len(),
        1,
        "exactly one message, whatever reached Slack late"
    );
    s.assert_no_violations();
}
