//! Clicks that wait on a stalled store (issue 27 §3): Discord drops an interaction whose first
//! response comes after 3 s, so a click whose settlement waits on the database longer than
//! `DEFER_AFTER` (2 s) is acknowledged with a deferred update (type 6) first, and followed up
//! once the store answered: the message edited to its settled rendering, or an ephemeral
//! follow-up that says the answer could not be saved.
//!
//! The stall is real: the test holds the database's write lock from a connection of its own
//! (SQLite: `BEGIN IMMEDIATE`; PostgreSQL: `LOCK TABLE questions IN EXCLUSIVE MODE`), which the
//! daemon's settlement waits behind. Every wait is on an event (a request the stand-in
//! records, a line on the socket), never a sleep.

use crate::harness::*;
use askrelay::daemon::DaemonHooks;
use askrelay::domain::request::{EditState, Status};
use askrelay_testkit::scratch::{on_postgres, ScratchDb};
use askrelay_testkit::standin::{Recorded, StandIn};
use serde_json::{json, Value};

/// The follow-up route of interaction `id` (the fixtures' token is `tok{id}`).
fn follow_up_path(app_id: u64, id: &str) -> String {
    format!("/api/v10/webhooks/{app_id}/tok{id}")
}

/// Sends a click on `label` of `msg` without waiting for its callback; its interaction id.
async fn click_only(app: &App, msg: &Value, label: &str) -> String {
    let payload = app.click_payload(msg, &alice(), &control(msg, label));
    let id = payload["id"].as_str().unwrap().to_owned();
    askrelay_testkit::fixtures::parse(&payload);
    app.standin().send_interaction(payload).await;
    id
}

/// Waits for interaction `id`'s callback and asserts that it is a deferred update (type 6).
async fn deferred(standin: &StandIn, id: &str) -> Recorded {
    let cb = within(
        "the deferred update (type 6)",
        standin.wait_for_request(|r| r.path.contains(&format!("/interactions/{id}/"))),
    )
    .await;
    assert_eq!(cb.body.as_ref().unwrap()["type"], 6, "{cb:?}");
    assert_eq!(cb.status, 204, "{cb:?}");
    cb
}

/// Waits for interaction `id`'s follow-up and asserts that it went through and is ephemeral;
/// its text.
async fn ephemeral_follow_up(standin: &StandIn, id: &str) -> String {
    let follow = follow_up_path(standin.application_id(), id);
    let sent = within(
        "the ephemeral follow-up",
        standin.wait_for_request(|r| r.method == "POST" && r.path == follow),
    )
    .await;
    assert_eq!(sent.status, 200, "{sent:?}");
    let body = sent.body.unwrap();
    assert_eq!(body["flags"].as_u64().unwrap() & 64, 64, "{body}");
    body["content"].as_str().unwrap().to_owned()
}

/// What the tests assert after a click that settled late: the message edited (not through a
/// callback) to the settled rendering, the agent's `answered` line, the accepted click in the
/// audit, one callback only (the type 6), and no follow-up.
async fn assert_settled_late(app: &App, c: &mut askrelay::client::Client, msg: &Value, id: &str) {
    let edit = app.edit_of(msg).await;
    assert_eq!(edit["components"], json!([]), "{edit}");
    let text = shown_body(&edit);
    assert!(
        text.contains("<@4242>") && text.contains("No, keep them"),
        "{text}"
    );
    let ev = expect_event(c, "answered").await;
    assert_eq!(
        ev["result"]["answers"][0]["selected"],
        json!(["No, keep them"])
    );
    let audit = app.store().audit_rows(None).await.unwrap();
    assert!(
        audit
            .iter()
            .any(|r| r.source == "discord" && r.action == "answer" && r.accepted),
        "{audit:?}"
    );
    let s = app.standin();
    let callbacks: Vec<Recorded> = s
        .requests()
        .into_iter()
        .filter(|r| r.path.contains(&format!("/interactions/{id}/")))
        .collect();
    assert_eq!(callbacks.len(), 1, "only the type 6: {callbacks:?}");
    let follow = follow_up_path(s.application_id(), id);
    assert!(
        !s.requests().iter().any(|r| r.path.starts_with(&follow)),
        "a settled click needs no follow-up"
    );
}

/// After a restart (the old daemon's edits finished and recorded), the outbox does not think
/// an edit of the request is still due.
async fn assert_no_edit_due(app: &mut App, request_id: &str) {
    app.restart().await;
    let req = app.store().by_id(request_id).await.unwrap().unwrap();
    let posts = app.store().posts(&[req.key]).await.unwrap();
    assert!(
        posts[&req.key]
            .iter()
            .all(|p| p.edited == EditState::Settled),
        "{:?}",
        posts[&req.key]
    );
    let due = app.store().outbox_due(None).await.unwrap();
    assert!(due.is_empty(), "{due:?}");
}

#[tokio::test]
async fn a_click_behind_a_sqlite_write_lock_is_deferred_then_settled() {
    if on_postgres() {
        // The lock below is SQLite's; the PostgreSQL test is the next but one.
        return;
    }
    let mut app = App::discord().await;
    let (mut c, _) = app.ask("late", &yes_no("q")).await;
    let msg = app.messages(CHANNEL).remove(0);
    let other = hold_write_lock(&app).await;
    let id = click_only(&app, &msg, "No, keep them").await;
    // The settlement waits (busy_timeout, 10 s); at 2 s the click is acknowledged.
    deferred(app.standin(), &id).await;
    release(other).await;
    assert_settled_late(&app, &mut c, &msg, &id).await;
    app.assert_payloads_valid();
    assert_no_edit_due(&mut app, "late").await;
}

#[tokio::test]
async fn a_click_whose_settlement_fails_after_the_deferral_is_told_to_try_again() {
    if on_postgres() {
        return;
    }
    let app = App::discord().await;
    let (mut c, _) = app.ask("failed", &yes_no("q")).await;
    let msg = app.messages(CHANNEL).remove(0);
    let other = hold_write_lock(&app).await;
    let id = click_only(&app, &msg, "No, keep them").await;
    deferred(app.standin(), &id).await;
    // The lock outlasts the daemon's busy_timeout (10 s): the settlement fails.
    let text = ephemeral_follow_up(app.standin(), &id).await;
    release(other).await;
    assert!(text.contains("could not be saved, try again"), "{text}");
    assert!(text.contains("database was busy"), "{text}");
    assert!(!text.contains(&format!("tok{id}")), "{text}");
    assert_eq!(text.lines().count(), 1, "{text}");
    // No callback after the type 6.
    let s = app.standin();
    let callbacks = s
        .requests()
        .into_iter()
        .filter(|r| r.path.contains(&format!("/interactions/{id}/")))
        .count();
    assert_eq!(callbacks, 1);
    // Nothing was stored: the request is still pending and its message still asks.
    let req = app.store().by_id("failed").await.unwrap().unwrap();
    assert_eq!(req.status, Status::Pending);
    assert!(req.answers[0].is_none());
    assert!(!s.requests().iter().any(|r| r.method == "PATCH"));
    // A second click, with the lock gone, settles it at once.
    let cb = app.press(&msg, &alice(), "No, keep them").await;
    final_state(&cb);
    let ev = expect_event(&mut c, "answered").await;
    assert_eq!(
        ev["result"]["answers"][0]["selected"],
        json!(["No, keep them"])
    );
    app.assert_payloads_valid();
}

#[tokio::test]
async fn a_refusal_that_comes_after_the_deferral_is_an_ephemeral_follow_up() {
    if on_postgres() {
        return;
    }
    let app = App::discord().await;
    let (mut c, _) = app.ask("twice", &yes_no("q")).await;
    let msg = app.messages(CHANNEL).remove(0);
    let first = app.press(&msg, &alice(), "No, keep them").await;
    final_state(&first);
    expect_event(&mut c, "answered").await;
    // A late click is refused, and its refusal audited: behind the lock, that audit row waits.
    let other = hold_write_lock(&app).await;
    let payload = app.click_payload(
        &msg,
        &bob(),
        &control(&msg, "Yes, delete them (Recommended)"),
    );
    let id = payload["id"].as_str().unwrap().to_owned();
    app.standin().send_interaction(payload).await;
    deferred(app.standin(), &id).await;
    release(other).await;
    let text = ephemeral_follow_up(app.standin(), &id).await;
    assert!(text.starts_with("Already answered by <@4242>"), "{text}");
    let audit = app.store().audit_rows(None).await.unwrap();
    assert!(
        audit.iter().any(|r| r.action == "late" && !r.accepted),
        "{audit:?}"
    );
    app.assert_payloads_valid();
}

#[tokio::test]
async fn a_click_behind_a_postgres_table_lock_is_deferred_then_settled() {
    use sqlx::{Connection, Executor};
    let scratch = match ScratchDb::create().await {
        Ok(db) => db,
        Err(e) => {
            skip(
                "defer::a_click_behind_a_postgres_table_lock_is_deferred_then_settled",
                &format!("no PostgreSQL server for a scratch database ({e:#})"),
            );
            return;
        }
    };
    let url = scratch.url.clone();
    let mut app = App::build(Some(StandIn::start().await), DaemonHooks::default(), |c| {
        c.database_url = url
    })
    .await;
    let (mut c, _) = app.ask("late-pg", &yes_no("q")).await;
    let msg = app.messages(CHANNEL).remove(0);
    let mut other = sqlx::PgConnection::connect(&scratch.url).await.unwrap();
    other.execute("BEGIN").await.unwrap();
    // Blocks every write to the questions (the settlement's conditional UPDATE) and lets
    // reads through, as SQLite's write lock does.
    other
        .execute("LOCK TABLE questions IN EXCLUSIVE MODE")
        .await
        .unwrap();
    let id = click_only(&app, &msg, "No, keep them").await;
    deferred(app.standin(), &id).await;
    other.execute("ROLLBACK").await.unwrap();
    drop(other);
    assert_settled_late(&app, &mut c, &msg, &id).await;
    app.assert_payloads_valid();
    assert_no_edit_due(&mut app, "late-pg").await;
    app.stop().await;
    drop(app);
    let _ = scratch.drop_now().await;
}

/// Holds SQLite's write lock from a connection of the test's own until dropped or rolled back.
async fn hold_write_lock(app: &App) -> sqlx::SqliteConnection {
    use sqlx::{Connection, Executor};
    let mut other = sqlx::SqliteConnection::connect(&app.config.database_url)
        .await
        .unwrap();
    other.execute("BEGIN IMMEDIATE").await.unwrap();
    other
}

async fn release(mut other: sqlx::SqliteConnection) {
    use sqlx::Executor;
    other.execute("ROLLBACK").await.unwrap();
}

/// The Other… form's text, submitted while the store is stalled: deferred, then settled.
#[tokio::test]
async fn a_modal_submitted_behind_a_lock_is_deferred_then_settled() {
    if on_postgres() {
        return;
    }
    let app = App::discord().await;
    let (mut c, _) = app.ask("late-form", &yes_no("q")).await;
    let msg = app.messages(CHANNEL).remove(0);
    let cb = app.click(&msg, &alice(), &control(&msg, "Other…")).await;
    assert_eq!(cb["type"], 9, "{cb}");
    let modal_id = cb["data"]["custom_id"].as_str().unwrap().to_owned();
    let other = hold_write_lock(&app).await;
    let payload = askrelay_testkit::fixtures::modal_submit(
        app.next_id(),
        &app.at(&msg),
        &alice(),
        &modal_id,
        "Archive them instead",
    );
    let id = payload["id"].as_str().unwrap().to_owned();
    askrelay_testkit::fixtures::parse(&payload);
    app.standin().send_interaction(payload).await;
    deferred(app.standin(), &id).await;
    release(other).await;
    let edit = app.edit_of(&msg).await;
    assert_eq!(edit["components"], json!([]), "{edit}");
    assert!(shown_body(&edit).contains("Archive them instead"), "{edit}");
    let ev = expect_event(&mut c, "answered").await;
    assert_eq!(ev["result"]["answers"][0]["custom"], "Archive them instead");
    let callbacks = app
        .standin()
        .requests()
        .into_iter()
        .filter(|r| r.path.contains(&format!("/interactions/{id}/")))
        .count();
    assert_eq!(callbacks, 1, "only the type 6");
    app.assert_payloads_valid();
}

/// A vote on a quorum route, behind a stalled store: deferred, then the message shows the
/// count (an edit, as the other copies get); the second vote settles in time.
#[tokio::test]
async fn a_vote_behind_a_lock_is_deferred_then_shown() {
    if on_postgres() {
        return;
    }
    let app = App::discord_with(|c| {
        let mut r = askrelay::config::Route::new("prod", CHANNEL);
        r.approvals = Some(2);
        c.routes.push(r);
    })
    .await;
    let input = json!({"questions": [{
        "id": "permission",
        "question": "Run `terraform apply` in prod?",
        "header": "Approve",
        "options": [{"label": "Allow"}, {"label": "Deny"}],
        "multiSelect": false
    }]});
    let (mut c, _) = app.ask("late-vote", &input).await;
    let msg = app.messages(CHANNEL).remove(0);
    let other = hold_write_lock(&app).await;
    let id = {
        let payload = app.click_payload(&msg, &alice(), &control(&msg, "Allow"));
        let id = payload["id"].as_str().unwrap().to_owned();
        app.standin().send_interaction(payload).await;
        id
    };
    deferred(app.standin(), &id).await;
    release(other).await;
    let edit = app.edit_of(&msg).await;
    let shown = edit["embeds"][0]["description"].as_str().unwrap();
    assert!(
        shown.contains("**Approvals: 1 of 2** · alice: Allow"),
        "{shown}"
    );
    assert!(
        !edit["components"].as_array().unwrap().is_empty(),
        "still open: {edit}"
    );
    let cb = app.press(&msg, &bob(), "Allow").await;
    final_state(&cb);
    let ev = expect_event(&mut c, "answered").await;
    assert_eq!(ev["result"]["answers"][0]["selected"], json!(["Allow"]));
    let audit = app.store().audit_rows(None).await.unwrap();
    // The deferred vote, then the vote that reached the quorum.
    assert!(
        audit
            .iter()
            .any(|r| r.source == "discord" && r.action == "vote" && r.accepted),
        "{audit:?}"
    );
    assert!(
        audit
            .iter()
            .any(|r| r.source == "discord" && r.action == "answer" && r.accepted),
        "{audit:?}"
    );
    app.assert_payloads_valid();
}

/// A form can only be an interaction's first response: when opening it (its audit row) waits
/// past the deferral, the person is told to use the button again, and it is audited.
#[tokio::test]
async fn a_form_too_slow_to_open_says_to_use_the_button_again() {
    if on_postgres() {
        return;
    }
    let app = App::discord().await;
    let (_c, _) = app.ask("late-open", &yes_no("q")).await;
    let msg = app.messages(CHANNEL).remove(0);
    let other = hold_write_lock(&app).await;
    let id = click_only(&app, &msg, "Other…").await;
    deferred(app.standin(), &id).await;
    release(other).await;
    let text = ephemeral_follow_up(app.standin(), &id).await;
    assert!(text.contains("use the button again"), "{text}");
    let audit = app.store().audit_rows(None).await.unwrap();
    assert!(audit.iter().any(|r| r.action == "open_modal"), "{audit:?}");
    // With the store back, the button opens the form.
    let cb = app.click(&msg, &alice(), &control(&msg, "Other…")).await;
    assert_eq!(cb["type"], 9, "{cb}");
    app.assert_payloads_valid();
}

/// A multi-select draft saved behind a lock that outlasts the busy timeout: deferred, then
/// told it could not be saved. "Submit" then refuses, rather than submit an empty selection in
/// its place (a wrong answer the fault harness found); once the person chooses again, Submit
/// sends what they chose.
#[tokio::test]
async fn a_draft_that_failed_to_save_is_never_submitted_empty() {
    if on_postgres() {
        return;
    }
    let app = App::discord().await;
    let input = json!({"questions": [
        {"id": "svc", "question": "Which services?", "multiSelect": true, "options": options(3)}
    ]});
    let (mut c, _) = app.ask("draft", &input).await;
    let msg = app.messages(CHANNEL).remove(0);
    let other = hold_write_lock(&app).await;
    let payload = askrelay_testkit::fixtures::select_values(
        app.next_id(),
        &app.at(&msg),
        &alice(),
        &select_id(&msg),
        &["2"],
    );
    let id = payload["id"].as_str().unwrap().to_owned();
    app.standin().send_interaction(payload).await;
    deferred(app.standin(), &id).await;
    let text = ephemeral_follow_up(app.standin(), &id).await;
    release(other).await;
    assert!(text.contains("could not save your selection"), "{text}");
    let refused = app.press(&msg, &alice(), "Submit").await;
    assert!(
        is_ephemeral(&refused) && ephemeral(&refused).contains("was not saved"),
        "{refused}"
    );
    let req = app.store().by_id("draft").await.unwrap().unwrap();
    assert!(req.answers[0].is_none(), "nothing was submitted");
    assert_eq!(
        app.select(&msg, &alice(), &select_id(&msg), &["2", "0"])
            .await["type"],
        6
    );
    final_state(&app.press(&msg, &alice(), "Submit").await);
    let ev = expect_event(&mut c, "answered").await;
    assert_eq!(
        ev["result"]["answers"][0]["selected"],
        json!(["Option 0", "Option 2"])
    );
    app.assert_payloads_valid();
}
