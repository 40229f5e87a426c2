//! Posting once and editing to the end: a crash between the post and its record, or a post
//! whose answer was lost, finds the message in Slack's history instead of posting a second;
//! a 429 is waited out for its `Retry-After`, and an edit that could not be made is made after
//! a restart.

use super::*;
use askrelay_testkit::slack::SlackFailure;
use std::time::Duration;

/// Asks `id` on `bin` (serving on `s`) with the crash point after the post: Slack has the
/// message, and the daemon aborts before recording its ts.
async fn ask_and_crash_after_the_post(bin: &Bin, s: &SlackStandIn, id: &str) {
    let crashing = serve_on(bin, s, Some("posted")).await;
    let mut c = Client::connect(&bin.socket()).await.unwrap();
    c.send_json(&ask_line(id, &yes_no("q"))).await.unwrap();
    aborted(crashing, "posted").await;
}

#[tokio::test]
async fn a_crash_after_the_post_posts_again_without_a_duplicate() {
    let s = SlackStandIn::start().await;
    let bin = bin_on(&s);
    ask_and_crash_after_the_post(&bin, &s, "crash").await;
    assert_eq!(s.messages(DEFAULT_CHANNEL).len(), 1);
    let _daemon = bin.serve().await.drain();
    let mut c = Client::connect(&bin.socket()).await.unwrap();
    c.send_json(&ask_line("crash", &yes_no("q"))).await.unwrap();
    expect_event(&mut c, "accepted").await;
    // Slack does not de-duplicate on client_msg_id (nor does the stand-in): the daemon finds
    // its message in the channel's history by the nonce in its metadata, and records it.
    let searched = within(
        "the channel's history searched",
        s.wait_for_requests(1, "conversations.history", Recorded::ok),
    )
    .await;
    assert_eq!(searched[0].param_str("include_all_metadata"), Some("true"));
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
    // The message found is the one recorded: it is edited to the outcome.
    within(
        "the found message edited",
        s.wait_for_request("chat.update", |r| {
            r.ok() && r.param_str("ts") == Some(ts(&messages[0]))
        }),
    )
    .await;
    assert_eq!(s.messages(DEFAULT_CHANNEL).len(), 1);
    assert_eq!(
        s.calls("chat.postMessage").len(),
        1,
        "never posted a second time"
    );
}

#[tokio::test]
async fn a_press_on_a_found_message_before_its_record_is_edited_in_at_once() {
    let s = SlackStandIn::start().await;
    // A repair pass an hour away: the edit must not wait for it.
    let bin = bin_on(&s).env("ASKRELAY_SLACK__REPAIR_INTERVAL_SECS", 3600);
    ask_and_crash_after_the_post(&bin, &s, "early").await;
    let m = s.messages(DEFAULT_CHANNEL).remove(0);
    // The restarted daemon's search for the message is held; meanwhile someone presses it
    // (it has been up all along): the press settles the request.
    s.stall_next("conversations.history", 1);
    let _daemon = bin.serve().await.drain();
    let mut c = Client::connect(&bin.socket()).await.unwrap();
    c.send_json(&ask_line("early", &yes_no("q"))).await.unwrap();
    expect_event(&mut c, "accepted").await;
    within("the search held", s.wait_stalled(1)).await;
    s.click(
        &alice(),
        DEFAULT_CHANNEL,
        ts(&m),
        button(&m, "No, keep them"),
    )
    .await;
    let ev = expect_event(&mut c, "answered").await;
    assert_eq!(ev["result"]["answers"][0]["selected"][0], "No, keep them");
    // Found and recorded after the press: its outcome is edited in then, not an hour later.
    s.release_stalls();
    let edited = ts(&m).to_owned();
    within(
        "the found message edited to its outcome",
        s.wait_for_request("chat.update", move |r| {
            r.ok()
                && r.param_str("ts") == Some(edited.as_str())
                && r.params.to_string().contains("No, keep them")
        }),
    )
    .await;
    assert_eq!(s.calls("chat.postMessage").len(), 1);
}

#[tokio::test]
async fn a_post_whose_answer_was_lost_is_found_in_the_history_not_posted_twice() {
    let t = Slack::start().await;
    // Slack posts the message, then its edge answers 502.
    t.s.fail_next("chat.postMessage", SlackFailure::LostReply(502), 1);
    let (mut c, _accepted) = t.ask("lost", &yes_no("q")).await;
    within(
        "the channel's history searched",
        t.s.wait_for_requests(1, "conversations.history", Recorded::ok),
    )
    .await;
    let messages = t.s.messages(DEFAULT_CHANNEL);
    assert_eq!(messages.len(), 1, "exactly one message, never a duplicate");
    // The one found is the one recorded: its buttons settle the request, and it is edited.
    t.s.click(
        &alice(),
        DEFAULT_CHANNEL,
        ts(&messages[0]),
        button(&messages[0], "No, keep them"),
    )
    .await;
    let ev = expect_event(&mut c, "answered").await;
    assert_eq!(ev["result"]["answers"][0]["selected"][0], "No, keep them");
    within(
        "the found message edited",
        t.s.wait_for_request("chat.update", |r| {
            r.ok() && r.param_str("ts") == Some(ts(&messages[0]))
        }),
    )
    .await;
    let posts = t.s.calls("chat.postMessage");
    assert_eq!(posts.len(), 1, "the post is not made again: {posts:?}");
    assert_eq!(posts[0].status, 502);
    assert_eq!(t.s.messages(DEFAULT_CHANNEL).len(), 1);
}

#[tokio::test]
async fn a_post_that_never_landed_is_searched_for_then_made() {
    let t = Slack::start().await;
    // A 5xx Slack answered before doing anything looks the same to the daemon as one after.
    t.s.fail_next("chat.postMessage", SlackFailure::Status(503), 1);
    let (_c, _accepted) = t.ask("unsure", &yes_no("q")).await;
    t.message(0).await;
    let posts = t.s.calls("chat.postMessage");
    assert_eq!(posts.len(), 2, "searched, not found, posted: {posts:?}");
    let between = |from: &Recorded, to: &Recorded| {
        t.s.calls("conversations.history")
            .into_iter()
            .filter(|r| r.at > from.at && r.at < to.at)
            .count()
    };
    assert_eq!(between(&posts[0], &posts[1]), 1, "searched after the 503");
    assert_eq!(t.s.messages(DEFAULT_CHANNEL).len(), 1);
    // A 429 says the post was not made: no search before the next try.
    t.s.fail_next(
        "chat.postMessage",
        SlackFailure::RateLimited {
            retry_after_secs: 1,
        },
        1,
    );
    let (_c2, _) = t.ask("limited", &yes_no("q")).await;
    t.message(1).await;
    let posts = t.s.calls("chat.postMessage");
    assert_eq!(posts.len(), 4, "{posts:?}");
    assert_eq!(posts[2].status, 429);
    assert_eq!(between(&posts[2], &posts[3]), 0, "no search after a 429");
    assert_eq!(t.s.messages(DEFAULT_CHANNEL).len(), 2);
}

#[tokio::test]
async fn without_the_history_scope_a_crash_after_the_post_posts_again_and_says_so() {
    let s = SlackStandIn::start().await;
    let bin = bin_on(&s);
    ask_and_crash_after_the_post(&bin, &s, "noscope").await;
    // An app installed before the *:history scopes: Slack refuses the search.
    s.fail_next(
        "conversations.history",
        SlackFailure::Error("missing_scope".into()),
        1,
    );
    let mut daemon = bin.serve().await;
    let mut c = Client::connect(&bin.socket()).await.unwrap();
    c.send_json(&ask_line("noscope", &yes_no("q")))
        .await
        .unwrap();
    expect_event(&mut c, "accepted").await;
    within(
        "the post after the restart",
        s.wait_for_requests(2, "chat.postMessage", Recorded::ok),
    )
    .await;
    // The old behaviour, said in the log: the question is posted again.
    daemon
        .wait_log_anywhere("cannot search the channel's history for an earlier post")
        .await;
    assert_eq!(s.messages(DEFAULT_CHANNEL).len(), 2);
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
