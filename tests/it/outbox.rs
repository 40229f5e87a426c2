//! The outbox heals while the daemon runs, and a Discord call that hangs never stalls the rest:
//! every REST call has a deadline, a hung post holds up its own channel only, a hung callback
//! falls back to an edit, and edits that ran out of attempts land once Discord is back, with no
//! restart.

use crate::harness::*;
use askrelay::config::Route;
use askrelay_testkit::standin::{Failure, Stall};
use serde_json::json;
use std::collections::BTreeMap;

const OTHER_CHANNEL: u64 = 200;

#[tokio::test]
async fn a_hung_post_holds_up_only_its_own_channel() {
    let app = App::discord_with(|c| {
        // Long enough that channel B's whole round trip fits inside A's hang.
        c.discord.request_timeout_ms = 10_000;
        c.routes.push(Route {
            matches: BTreeMap::from([("project".into(), "other".into())]),
            ..Route::new("other", OTHER_CHANNEL)
        });
    })
    .await;
    let s = app.standin();
    // The create in channel A hangs until released.
    s.stall_next(
        "POST",
        &format!("/channels/{CHANNEL}/messages"),
        Stall::UntilReleased,
        1,
    );
    let mut a = app.client().await;
    a.send_json(&ask_line("on-a", &yes_no("q"))).await.unwrap();
    within("the hung create to arrive", s.wait_stalled(1)).await;
    // Meanwhile channel B is posted, clicked and answered; A's create is still hanging.
    let mut line = ask_line("on-b", &yes_no("q"));
    line["scope"] = json!({"project": "other"});
    let mut b = app.client().await;
    b.send_json(&line).await.unwrap();
    expect_event(&mut b, "accepted").await;
    let mb = app.messages(OTHER_CHANNEL).remove(0);
    final_state(&app.press(&mb, &alice(), "No, keep them").await);
    expect_event(&mut b, "answered").await;
    assert!(
        app.messages(CHANNEL).is_empty(),
        "channel A is still waiting on its hung create"
    );
    // Released, A's create lands (a create that timed out would be retried with the same
    // nonce: see the test below).
    s.release_stalls();
    expect_event(&mut a, "accepted").await;
    within("the question in channel A", async {
        let mut changes = s.subscribe();
        while app.messages(CHANNEL).is_empty() {
            let _ = changes.changed().await;
        }
    })
    .await;
    let ma = app.messages(CHANNEL).remove(0);
    final_state(&app.press(&ma, &alice(), "No, keep them").await);
    expect_event(&mut a, "answered").await;
    assert_eq!(app.messages(CHANNEL).len(), 1, "one message, not two");
    app.assert_payloads_valid();
}

#[tokio::test]
async fn a_hung_callback_falls_back_to_an_edit_and_the_answer_is_stored_once() {
    let app = App::discord_with(|c| c.discord.callback_timeout_ms = 300).await;
    let (mut c, _) = app.ask("slow-cb", &yes_no("q")).await;
    let msg = app.messages(CHANNEL).remove(0);
    let s = app.standin();
    s.stall_next("POST", "/callback", Stall::UntilReleased, 1);
    let payload = app.click_payload(&msg, &alice(), &control(&msg, "No, keep them"));
    s.send_interaction(payload).await;
    // The agent has its answer; the daemon gave up on the callback in time and edited the
    // message instead.
    let ev = expect_event(&mut c, "answered").await;
    assert_eq!(ev["result"]["answers"][0]["selected"][0], "No, keep them");
    let edit = app.edit_of(&msg).await;
    assert_eq!(edit["components"], json!([]));
    assert!(edit.to_string().contains("<@4242>"), "{edit}");
    s.release_stalls();
    let audit = app.store().audit_rows(None).await.unwrap();
    let won: Vec<_> = audit
        .iter()
        .filter(|r| r.action == "answer" && r.accepted)
        .collect();
    assert_eq!(won.len(), 1, "stored exactly once: {audit:?}");
    // A second click is told it was answered.
    let cb = app
        .press(&msg, &bob(), "Yes, delete them (Recommended)")
        .await;
    assert!(
        ephemeral(&cb).starts_with("Already answered by <@4242>"),
        "{cb}"
    );
    assert!(shown(ephemeral(&cb)).ends_with(": No, keep them"), "{cb}");
    app.assert_payloads_valid();
}

#[tokio::test]
async fn an_edit_that_ran_out_of_attempts_lands_once_discord_is_back() {
    let app = App::discord_with(|c| {
        c.discord.terminal_answers = true;
        c.discord.repair_interval_secs = 1;
        c.outbox_overdue_secs = 1;
    })
    .await;
    let (mut c, _) = app.ask("outage", &yes_no("q")).await;
    let msg = app.messages(CHANNEL).remove(0);
    let s = app.standin();
    s.fail_next("PATCH", "/messages/", Failure::Status(503), 1_000_000);
    let reply = app.answer("outage", "q", &["No, keep them"]).await;
    assert_eq!(reply["event"], "answer_accepted", "{reply}");
    expect_event(&mut c, "answered").await;
    // More than the 8 attempts of one edit: the repair loop keeps trying while it runs.
    within(
        "more than 8 failed edits",
        s.wait_for_requests(9, |r| r.method == "PATCH" && r.status == 503),
    )
    .await;
    // The backlog is reported.
    let mut op = app.client().await;
    let health = within("an overdue edit", async {
        loop {
            let h = op.call_json(&json!({"op": "health"})).await.unwrap();
            if h["outbox"]["overdue"] == 1 {
                return h;
            }
            // The overdue threshold is a second; wait for the next repair attempt.
            let n = s.requests().len();
            s.wait_for_requests(n + 1, |_| true).await;
        }
    })
    .await;
    assert!(
        health["outbox"]["oldest_secs"].as_u64().is_some(),
        "{health}"
    );
    let pending = op.call_json(&json!({"op": "pending"})).await.unwrap();
    assert_eq!(pending["outbox"]["overdue"], 1, "{pending}");
    // Discord is back: the next pass edits the message, without a restart.
    s.clear_failures();
    let edit = within(
        "the edit once Discord is back",
        s.wait_for_request(|r| r.method == "PATCH" && r.status == 200),
    )
    .await;
    assert_eq!(edit.body.unwrap()["components"], json!([]));
    assert_eq!(
        s.message(id_of(&msg)).unwrap()["components"],
        json!([]),
        "the message no longer shows live buttons"
    );
    let health = within("the backlog to clear", async {
        loop {
            let h = op.call_json(&json!({"op": "health"})).await.unwrap();
            if h["outbox"]["overdue"] == 0 {
                return h;
            }
            tokio::task::yield_now().await;
        }
    })
    .await;
    assert_eq!(health["outbox"]["overdue"], 0);
    app.assert_payloads_valid();
}

#[tokio::test]
async fn a_hung_channel_check_or_post_is_a_transient_failure_that_is_retried() {
    let app = App::discord_with(|c| c.discord.request_timeout_ms = 300).await;
    let s = app.standin();
    s.stall_next(
        "POST",
        "/messages",
        Stall::For(std::time::Duration::from_secs(5)),
        1,
    );
    let mut c = app.client().await;
    c.send_json(&ask_line("retried", &yes_no("q")))
        .await
        .unwrap();
    let acc = expect_event(&mut c, "accepted").await;
    // The first create hung past the deadline; a retry posted it.
    assert_eq!(acc["message_links"].as_array().unwrap().len(), 1, "{acc}");
    let msgs = app.messages(CHANNEL);
    assert_eq!(msgs.len(), 1);
    final_state(&app.press(&msgs[0], &alice(), "No, keep them").await);
    expect_event(&mut c, "answered").await;
}

/// A create held past the agent's budget (serenity waiting on a rate-limit bucket, a slow
/// Discord) is not cut short and made again: the agent is told at the budget that the question
/// is posted in the background, and the held create is the one that posts it and is recorded.
#[tokio::test]
async fn a_create_held_past_the_agents_budget_goes_on_and_is_not_made_twice() {
    // Longer than the agent's budget (5 s), so that only the budget can end the wait.
    let app = App::discord_with(|c| c.discord.request_timeout_ms = 30_000).await;
    let s = app.standin();
    let path = format!("/channels/{CHANNEL}/messages");
    s.stall_next("POST", &path, Stall::UntilReleased, 1);
    let mut c = app.client().await;
    c.send_json(&ask_line("held", &yes_no("q"))).await.unwrap();
    within("the held create", s.wait_stalled(1)).await;
    let acc = expect_event(&mut c, "accepted").await;
    let posting = acc["posting"].as_str().unwrap_or_default();
    assert!(posting.contains("within 5 s"), "{acc}");
    s.release_stalls();
    // The daemon records the message the create returned (a create cut short returns nothing,
    // and the message is recorded only from a second create).
    let key = app.store().by_id("held").await.unwrap().unwrap().key;
    within("the question's message to be recorded", async {
        loop {
            let posts = app.store().posts(&[key]).await.unwrap();
            if posts[&key].iter().any(|p| p.message.is_some()) {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    })
    .await;
    let creates = s
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST" && r.path.ends_with(&path))
        .count();
    assert_eq!(creates, 1, "the held create was cut short and made again");
    let m = app.messages(CHANNEL).remove(0);
    final_state(&app.press(&m, &alice(), "No, keep them").await);
    expect_event(&mut c, "answered").await;
    assert_eq!(app.messages(CHANNEL).len(), 1);
    app.assert_payloads_valid();
}
