//! Slack in a cluster: a reminder's timer is stored with the request when the leader arms it,
//! so a leader killed before it fires loses nothing, and the next leader (which loads the
//! stored timers when its term begins) posts it once, in the question's thread; and a leader
//! that dies between a post and its record leaves one message, which the next leader finds in
//! the channel's history.

use super::*;
use crate::slack::{alice, button};
use askrelay_testkit::slack::{Recorded, SlackStandIn, APP_TOKEN, BOT_TOKEN, DEFAULT_CHANNEL};

/// How long after the ask the reminder is due: far longer than killing A takes. B may lead
/// before or after it is due (an overdue timer fires as it is loaded); either way A never
/// reached it.
const REMIND_AFTER_SECS: u64 = 6;

/// Node `name` with Slack (the stand-in, in Socket Mode) as its only answerer, reminding once
/// `REMIND_AFTER_SECS` after an ask.
fn slack_node(cluster: &Cluster, s: &SlackStandIn, name: &str) -> Bin {
    let dir = cluster.dir.path().join(name);
    std::fs::create_dir_all(&dir).unwrap();
    Bin::in_dir(&dir)
        .env("ASKRELAY_DATABASE_URL", &cluster.db.url)
        .env("ASKRELAY_CLUSTER__NODE_ID", name)
        .env("ASKRELAY_CLUSTER__POLL_INTERVAL_MS", 200)
        .env("ASKRELAY_SLACK_BOT_TOKEN", BOT_TOKEN)
        .env("ASKRELAY_SLACK_APP_TOKEN", APP_TOKEN)
        .env("ASKRELAY_SLACK__API_BASE", s.api_base())
        .env("ASKRELAY_SLACK__CHANNEL_ID", DEFAULT_CHANNEL)
        .env("ASKRELAY_SLACK__REMIND_AFTER_SECS", REMIND_AFTER_SECS)
        .env("ASKRELAY_SLACK__REMIND_MAX", 1)
}

#[tokio::test]
async fn a_slack_reminder_armed_under_a_killed_leader_is_posted_once_by_the_next_one() {
    let cluster = Cluster::new().await;
    let s = SlackStandIn::start().await;
    let a = slack_node(&cluster, &s, "a");
    let mut leader = a.serve().await;
    leader.wait_log("leading the cluster").await;
    within("A's Socket Mode connection", s.wait_connected(1)).await;
    let b = slack_node(&cluster, &s, "b");
    let mut next = follower(&b).await;

    // Asked on A, the leader: `accepted` comes once the question is posted and its reminder's
    // timer stored (Slack::deliver arms it before it returns).
    // (Its client goes with A; the request outlives it by restart_grace_secs, 300 s.)
    let mut c = Client::connect(&a.socket()).await.unwrap();
    c.send_json(&ask_line("late", &yes_no("q"))).await.unwrap();
    expect_event(&mut c, "accepted").await;
    let question = s.messages(DEFAULT_CHANNEL).remove(0);
    let ts = question["ts"].as_str().unwrap().to_owned();
    let store = open_store(&cluster.db.url).await;
    let req = store.by_id("late").await.unwrap().unwrap();
    let armed = store.timers("slack").await.unwrap();
    assert_eq!(armed.len(), 1, "{armed:?}");
    assert_eq!(
        (armed[0].request_key, armed[0].name.as_str(), armed[0].fired),
        (req.key, "remind", 0)
    );
    let due = armed[0].due_at_ms.expect("a due time");
    assert!(
        due >= req.created_at_ms + REMIND_AFTER_SECS as i64 * 1000,
        "{armed:?}"
    );

    // A dies before the reminder is due; B takes over, Socket Mode and the timers.
    leader.child.start_kill().unwrap();
    leader.child.wait().await.unwrap();
    next.wait_log("leading the cluster").await;
    within("B's Socket Mode connection", s.wait_connected(2)).await;

    // B posts the reminder in the question's thread.
    let in_thread = {
        let ts = ts.clone();
        move |r: &Recorded| r.ok() && r.param_str("thread_ts") == Some(ts.as_str())
    };
    let reminder = within(
        "the reminder in the question's thread",
        s.wait_for_request("chat.postMessage", &in_thread),
    )
    .await;
    let text = reminder.params["blocks"][0]["text"]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        text.starts_with("*Reminder:* this question has waited"),
        "{text}"
    );
    assert_eq!(reminder.param_str("channel"), Some(DEFAULT_CHANNEL));
    next.wait_log("nobody answered in Slack yet; reminding")
        .await;
    let (_, log_a) = leader.finish().await;
    assert!(
        !log_a.contains("nobody answered in Slack yet"),
        "A reminded before it died:\n{log_a}"
    );

    // Once: the stored timer is done (nothing more is due), its one note is in the outbox,
    // and the thread holds that one reply, posted with one call.
    assert!(store.timers("slack").await.unwrap().is_empty());
    let notes: Vec<String> = store.posts(&[req.key]).await.unwrap()[&req.key]
        .iter()
        .filter(|p| p.answerer == "slack" && p.is_note())
        .map(|p| p.slot.to_string())
        .collect();
    assert_eq!(notes, ["note:r1"]);
    // The question is still open (A's requests outlive it by restart_grace_secs): a press,
    // which B takes, settles it and B edits its message; and still the one reply is there.
    let pressed = s
        .click(
            &alice(),
            DEFAULT_CHANNEL,
            &ts,
            button(&question, "No, keep them"),
        )
        .await;
    within("the press's ack", s.wait_ack(pressed.envelope_id())).await;
    let edited = ts.clone();
    within(
        "the question's outcome",
        s.wait_for_request("chat.update", move |r| {
            r.ok()
                && r.param_str("ts") == Some(edited.as_str())
                && r.params.to_string().contains("No, keep them")
        }),
    )
    .await;
    let settled = store.by_id("late").await.unwrap().unwrap();
    assert!(settled.answers[0].is_some(), "{settled:?}");
    assert_eq!(s.thread(DEFAULT_CHANNEL, &ts).len(), 1);
    assert_eq!(
        s.calls("chat.postMessage")
            .iter()
            .filter(|r| in_thread(r))
            .count(),
        1
    );
    s.assert_no_violations();
    store.close().await;
    next.terminate().await;
    cluster.db.drop_now().await.unwrap();
}

#[tokio::test]
async fn a_leader_that_dies_between_a_slack_post_and_its_record_leaves_one_message() {
    let cluster = Cluster::new().await;
    let s = SlackStandIn::start().await;
    // A aborts right after Slack took a post, before it records the message's ts.
    let a = slack_node(&cluster, &s, "a");
    let mut cmd = a.cmd(&["serve"]);
    cmd.env(askrelay::crash::ENV, "posted");
    let mut leader = a.serve_cmd(cmd).await;
    leader.wait_log("leading the cluster").await;
    within("A's Socket Mode connection", s.wait_connected(1)).await;
    let b = slack_node(&cluster, &s, "b");
    let mut next = follower(&b).await;

    // Asked on B, whose agent waits through A's death; A posts it and dies.
    let mut c = Client::connect(&b.socket()).await.unwrap();
    c.send_json(&ask_line("orphan", &yes_no("q")))
        .await
        .unwrap();
    expect_event(&mut c, "accepted").await;
    let (status, log_a) = leader.finish().await;
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(6), "the crash point aborts:\n{log_a}");
    let messages = s.messages(DEFAULT_CHANNEL);
    assert_eq!(messages.len(), 1, "A posted it");
    let store = open_store(&cluster.db.url).await;
    let req = store.by_id("orphan").await.unwrap().unwrap();
    let unrecorded = &store.posts(&[req.key]).await.unwrap()[&req.key];
    assert!(
        unrecorded.iter().all(|p| p.message.is_none()),
        "{unrecorded:?}"
    );

    // B leads, finds A's message in the channel's history by its nonce, and records it.
    next.wait_log("leading the cluster").await;
    next.wait_log("found the message in Slack, posted before its record")
        .await;
    assert!(!s.calls("conversations.history").is_empty());
    assert_eq!(s.calls("chat.postMessage").len(), 1, "never posted again");
    // It is the question's one message: a press on it settles, and it is edited.
    let ts = messages[0]["ts"].as_str().unwrap().to_owned();
    s.click(
        &alice(),
        DEFAULT_CHANNEL,
        &ts,
        button(&messages[0], "No, keep them"),
    )
    .await;
    let ev = expect_event(&mut c, "answered").await;
    assert_eq!(ev["result"]["answers"][0]["selected"][0], "No, keep them");
    within(
        "the found message edited",
        s.wait_for_request("chat.update", move |r| {
            r.ok() && r.param_str("ts") == Some(ts.as_str())
        }),
    )
    .await;
    assert_eq!(s.messages(DEFAULT_CHANNEL).len(), 1);
    s.assert_no_violations();
    store.close().await;
    next.terminate().await;
    cluster.db.drop_now().await.unwrap();
}
