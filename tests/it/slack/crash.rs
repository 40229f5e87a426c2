//! Crashes on Slack's side of the ask path: the real binary aborts at a crash point
//! (`src/crash.rs`, like a SIGKILL), is started again on the same database, and the agent
//! re-attaches (the same `ask`, docs/protocol.md).
//!
//! - `clicked`, a press, a form or "Save grant" sent before its answer is stored: never acked,
//!   nothing stored; after the restart the request is still pending, its one message still
//!   works, and the interaction sent again settles it (a "Save grant" finds its preview
//!   forgotten: the pattern is previewed and saved again).
//! - `clicked` in a batch ("Allow selected" under `/askrelay pending`) before any of its answers
//!   is stored: every request of it still pending after the restart, and the press delivered
//!   again settles each once.
//! - `voted`, a vote toward a quorum stored before anything is shown: kept after the restart
//!   (the same person's press again is "already voted", not a second vote), and a second
//!   person's vote settles the question.
//! - `answered`, the answer stored before the agent is told: the re-attach gets it, and the
//!   message is edited to its outcome at start-up.
//! - `files shared`, the context's files shared in the thread before their record: shared a
//!   second time after the restart, as docs/slack.md says (Slack's uploads take no idempotency
//!   key), then recorded; the question is still posted once.
//!
//! The crash after a post (`posted`, `posted_extra`) is in `outbox.rs` and `remind.rs`.

use super::batch::{pending, pick, press, send_press};
use super::grants::{approval, open_pattern_form, preview, save, send_pattern};
use super::*;
use askrelay::domain::request::Slot;
use askrelay::domain::Status;
use askrelay_testkit::slack::ViewValues;
use serde_json::json;

const NO: &str = r#"{"answers":[{"id":"q","selected":["No, keep them"]}]}"#;

/// A stand-in, and the binary on it with `config` (a TOML file, when not empty) and a repair
/// pass an hour away: what is shared or edited after a restart is done at start-up or by a
/// press, never by a pass that came by.
async fn setup(config: &str) -> (SlackStandIn, Bin) {
    let s = SlackStandIn::start().await;
    let mut bin = bin_on(&s).env("ASKRELAY_SLACK__REPAIR_INTERVAL_SECS", 3600);
    if !config.is_empty() {
        let file = bin.dir().join("askrelay.toml");
        std::fs::write(&file, config).unwrap();
        bin = bin.env("ASKRELAY_CONFIG", file.display());
    }
    (s, bin)
}

/// Asks `input` as `id` on `bin`'s daemon: the agent's connection (kept: it waits) and the
/// question's message, posted and recorded (`accepted` links it).
async fn ask_posted(s: &SlackStandIn, bin: &Bin, id: &str, input: &Value) -> (Client, Value) {
    let posted = s.messages(DEFAULT_CHANNEL).len();
    let mut c = Client::connect(&bin.socket()).await.unwrap();
    c.send_json(&ask_line(id, input)).await.unwrap();
    let accepted = expect_event(&mut c, "accepted").await;
    assert_eq!(
        accepted["message_links"].as_array().map(Vec::len),
        Some(1),
        "{accepted}"
    );
    (c, message(s, posted).await)
}

/// After the crash: `bin` served again (no crash point, the same database) and the agent
/// re-attached with the same ask; the daemon, the connection and its first line.
async fn restart(s: &SlackStandIn, bin: &Bin, id: &str, input: &Value) -> (Served, Client, Value) {
    let daemon = serve_on(bin, s, None).await;
    let (c, first) = reattach(bin, id, input).await;
    (daemon, c, first)
}

/// The agent of `id` re-attached to `bin`'s daemon with the same ask: the connection and its
/// first line.
async fn reattach(bin: &Bin, id: &str, input: &Value) -> (Client, Value) {
    let mut c = Client::connect(&bin.socket()).await.unwrap();
    c.send_json(&ask_line(id, input)).await.unwrap();
    let first = recv(&mut c, "the first line after the re-attach").await;
    (c, first)
}

/// Nothing of an answer is stored: the request is pending, no question answered, no answer
/// audited, no grant saved.
async fn nothing_stored(bin: &Bin, id: &str) {
    let store = store_of(bin).await;
    let req = store.by_id(id).await.unwrap().unwrap();
    assert_eq!(req.status, Status::Pending);
    assert!(req.answers.iter().all(Option::is_none), "{:?}", req.answers);
    let audit = store.audit_rows(Some(req.key)).await.unwrap();
    assert!(!audit.iter().any(|r| r.action == "answer"), "{audit:?}");
    let grants = store
        .grants(askrelay::domain::clock::now_ms(), 10)
        .await
        .unwrap();
    assert!(grants.is_empty(), "{grants:?}");
}

/// The outbox row of request `key`'s context files.
async fn files_row(store: &Arc<dyn Store>, key: i64) -> askrelay::domain::request::Post {
    let mut posts = store.posts(&[key]).await.unwrap();
    let posts = posts.remove(&key).unwrap_or_default();
    posts.into_iter().find(|p| p.slot == Slot::Files).unwrap()
}

/// `m` edited to its outcome exactly once, without controls, and the question posted once in
/// all: the outcome's blocks as text.
async fn edited_once_and_posted_once(s: &SlackStandIn, m: &Value) -> String {
    let outcome = outcome_of(s, m).await;
    let edits = s
        .calls("chat.update")
        .into_iter()
        .filter(|r| r.ok() && r.param_str("ts") == Some(ts(m)))
        .count();
    assert_eq!(edits, 1, "the message is edited to its outcome once");
    assert!(elements(&s.message(DEFAULT_CHANNEL, ts(m)).unwrap()).is_empty());
    assert_eq!(
        s.calls("chat.postMessage").len(),
        1,
        "the question is never posted again"
    );
    assert_eq!(s.messages(DEFAULT_CHANNEL).len(), 1);
    s.assert_no_violations();
    outcome.params.to_string()
}

#[tokio::test]
async fn a_press_that_crashed_before_it_was_stored_is_not_acked_and_settles_when_delivered_again() {
    let (s, bin) = setup("").await;
    let crashing = serve_on(&bin, &s, Some("clicked")).await;
    let (_c, m) = ask_posted(&s, &bin, "press", &yes_no("q")).await;
    let pressed = s
        .click(
            &alice(),
            DEFAULT_CHANNEL,
            ts(&m),
            button(&m, "No, keep them"),
        )
        .await;
    aborted(crashing, "clicked").await;
    // Never acked (Slack tells the person it failed, and may deliver it again); nothing stored,
    // the message untouched.
    assert!(s.ack_of(pressed.envelope_id()).is_none(), "{:?}", s.acks());
    nothing_stored(&bin, "press").await;
    assert!(s.calls("chat.update").is_empty());

    let (_daemon, mut c, first) = restart(&s, &bin, "press", &yes_no("q")).await;
    assert_eq!(first["event"], "accepted", "still pending: {first}");
    // The same press, delivered again to the new connection: settled, then acked.
    let again = s.redeliver(pressed.envelope_id()).await;
    assert_eq!(again.retry_attempt, 1);
    within("the ack", s.wait_ack(pressed.envelope_id())).await;
    let ev = expect_event(&mut c, "answered").await;
    assert_eq!(ev["result"].to_string(), NO);
    let shown = edited_once_and_posted_once(&s, &m).await;
    assert!(shown.contains("by <@U0ALICE01> in Slack"), "{shown}");
}

#[tokio::test]
async fn a_form_that_crashed_before_it_was_stored_stays_open_and_settles_when_sent_again() {
    let (s, bin) = setup("").await;
    let crashing = serve_on(&bin, &s, Some("clicked")).await;
    let (_c, m) = ask_posted(&s, &bin, "form", &yes_no("q")).await;
    // Other… opens the form (it settles nothing: no crash yet).
    let other = s
        .click(&alice(), DEFAULT_CHANNEL, ts(&m), button(&m, "Other…"))
        .await;
    within("the ack", s.wait_ack(other.envelope_id())).await;
    let form = form_opened_by(&s, &other).await;
    let values = ViewValues::new().text("answer", "text", Some("Archive them"));
    let sent = s.submit_view(&alice(), &form.id, &values).await;
    aborted(crashing, "clicked").await;
    assert!(s.ack_of(sent.envelope_id()).is_none(), "{:?}", s.acks());
    assert!(!s.view(&form.id).unwrap().closed, "the form stays open");
    nothing_stored(&bin, "form").await;
    assert!(s.calls("chat.update").is_empty());

    let (_daemon, mut c, first) = restart(&s, &bin, "form", &yes_no("q")).await;
    assert_eq!(first["event"], "accepted", "still pending: {first}");
    // The person sends the form again: it settles and closes.
    let again = s.submit_view(&alice(), &form.id, &values).await;
    let ack = within("the form's ack", s.wait_ack(again.envelope_id())).await;
    assert_eq!(ack.payload, None, "the form closes");
    let ev = expect_event(&mut c, "answered").await;
    assert_eq!(ev["result"]["answers"][0]["custom"], "Archive them", "{ev}");
    let shown = edited_once_and_posted_once(&s, &m).await;
    assert!(shown.contains("Archive them"), "{shown}");
}

/// A route in the stand-in's channel whose approvals offer grants.
fn granting() -> String {
    format!(
        "[[routes]]\nname = \"dev\"\nslack_channel_id = \"{DEFAULT_CHANNEL}\"\n\
         grant_durations = [\"30m\", \"8h\"]\nexclude_requester = false\n"
    )
}

#[tokio::test]
async fn a_save_grant_that_crashed_before_it_was_stored_saves_nothing_and_the_pattern_is_saved_again(
) {
    let (s, bin) = setup(&granting()).await;
    let input = approval("cargo test -p core", "s1");
    let crashing = serve_on(&bin, &s, Some("clicked")).await;
    let (_c, m) = ask_posted(&s, &bin, "grant", &input).await;
    let form = open_pattern_form(&s, &m).await;
    let pushed = send_pattern(&s, &form, Some("cargo test *"), "30m", None).await;
    assert_eq!(pushed["response_action"], "push", "{pushed}");
    let shown = preview(&s);
    let sent = s.submit_view(&alice(), &shown.id, &ViewValues::new()).await;
    aborted(crashing, "clicked").await;
    assert!(s.ack_of(sent.envelope_id()).is_none(), "{:?}", s.acks());
    assert!(!s.view(&shown.id).unwrap().closed, "the preview stays open");
    nothing_stored(&bin, "grant").await;

    let (_daemon, mut c, first) = restart(&s, &bin, "grant", &input).await;
    assert_eq!(first["event"], "accepted", "still pending: {first}");
    // "Save grant" sent again: the preview waiting was the crashed run's, so nothing is saved;
    // both forms close and the person is told to use Allow matching… again.
    let cleared = save(&s, &shown).await;
    assert_eq!(cleared["response_action"], "clear", "{cleared}");
    told(&s, &alice().id, "No pattern of yours is waiting").await;
    nothing_stored(&bin, "grant").await;
    // Previewed and saved again: the grant is live and the request allowed.
    let form = open_pattern_form(&s, &m).await;
    let pushed = send_pattern(&s, &form, Some("cargo test *"), "30m", None).await;
    assert_eq!(pushed["response_action"], "push", "{pushed}");
    let cleared = save(&s, &preview(&s)).await;
    assert_eq!(cleared["response_action"], "clear", "{cleared}");
    let ev = expect_event(&mut c, "answered").await;
    assert_eq!(
        ev["result"].to_string(),
        r#"{"answers":[{"id":"permission","selected":["Allow"]}]}"#
    );
    let grants = store_of(&bin)
        .await
        .grants(askrelay::domain::clock::now_ms(), 10)
        .await
        .unwrap();
    assert_eq!(grants.len(), 1, "{grants:?}");
    assert_eq!(grants[0].pattern, "cargo test *");
    let shown = edited_once_and_posted_once(&s, &m).await;
    assert!(shown.contains("Granted for 30 min"), "{shown}");
}

#[tokio::test]
async fn a_crash_after_the_answer_is_stored_answers_the_reattached_agent_and_edits_the_message() {
    let (s, bin) = setup("").await;
    let crashing = serve_on(&bin, &s, Some("answered")).await;
    let (_c, m) = ask_posted(&s, &bin, "stored", &yes_no("q")).await;
    let pressed = s
        .click(
            &alice(),
            DEFAULT_CHANNEL,
            ts(&m),
            button(&m, "No, keep them"),
        )
        .await;
    aborted(crashing, "answered").await;
    // Stored, though the press was never acked and the message not edited yet.
    assert!(s.ack_of(pressed.envelope_id()).is_none(), "{:?}", s.acks());
    assert!(s.calls("chat.update").is_empty());
    let store = store_of(&bin).await;
    let req = store.by_id("stored").await.unwrap().unwrap();
    assert_eq!(req.status, Status::Answered);
    let answered = req.answers[0].clone().expect("the answer is stored");
    assert_eq!(answered.actor.id, "U0ALICE01");

    let (_daemon, _c, first) = restart(&s, &bin, "stored", &yes_no("q")).await;
    assert_eq!(
        first.to_string(),
        format!(r#"{{"event":"answered","request_id":"stored","result":{NO}}}"#),
        "the stored answer comes back at once"
    );
    // The edit the crash cut short is made at start-up.
    let shown = edited_once_and_posted_once(&s, &m).await;
    assert!(
        shown.contains("by <@U0ALICE01> in Slack") && shown.contains("No, keep them"),
        "{shown}"
    );
    // The press delivered again is told it was answered; nothing changes.
    s.redeliver(pressed.envelope_id()).await;
    within("the ack", s.wait_ack(pressed.envelope_id())).await;
    told(&s, &alice().id, "Already answered by").await;
    let req = store.by_id("stored").await.unwrap().unwrap();
    assert_eq!(req.answers[0].as_ref(), Some(&answered));
}

#[tokio::test]
async fn a_crash_after_the_files_are_shared_shares_them_a_second_time_and_posts_the_question_once()
{
    let (s, bin) = setup("").await;
    let log = "z".repeat(5000);
    let mut input = yes_no("q");
    input["context"] = json!({"text": "short", "files": [{"name": "big.log", "content": log}]});
    let crashing = serve_on(&bin, &s, Some("files shared")).await;
    // Shared in the background: the crash may come before the agent has `accepted`.
    let mut c = Client::connect(&bin.socket()).await.unwrap();
    c.send_json(&ask_line("files", &input)).await.unwrap();
    aborted(crashing, "files shared").await;
    let m = message(&s, 0).await;
    // The file is in the question's thread; its outbox row is not recorded.
    let shared = |s: &SlackStandIn| -> Vec<String> {
        s.uploads()
            .into_iter()
            .filter(|u| u.completed)
            .inspect(|u| {
                assert_eq!(u.channel.as_deref(), Some(DEFAULT_CHANNEL));
                assert_eq!(u.thread_ts.as_deref(), Some(ts(&m)), "in the thread");
                assert_eq!(u.bytes.as_deref(), Some(log.as_bytes()));
            })
            .map(|u| u.filename)
            .collect()
    };
    assert_eq!(shared(&s), ["big.log"]);
    let store = store_of(&bin).await;
    let key = store.by_id("files").await.unwrap().unwrap().key;
    assert_eq!(files_row(&store, key).await.message, None, "not recorded");

    let (mut daemon, mut c, first) = restart(&s, &bin, "files", &input).await;
    assert_eq!(first["event"], "accepted", "still pending: {first}");
    // The restarted daemon shares what is not recorded: the same file a second time in the
    // thread (Slack's uploads take no idempotency key), and records it this time.
    daemon.wait_log("every question is posted in Slack").await;
    assert_eq!(
        shared(&s),
        ["big.log", "big.log"],
        "shared a second time, as docs/slack.md says"
    );
    assert_eq!(s.calls("files.completeUploadExternal").len(), 2);
    assert_eq!(
        files_row(&store, key).await.message.as_deref(),
        Some(ts(&m)),
        "recorded: never shared a third time"
    );
    // The question itself was posted once, and its buttons work.
    s.click(
        &alice(),
        DEFAULT_CHANNEL,
        ts(&m),
        button(&m, "No, keep them"),
    )
    .await;
    let ev = expect_event(&mut c, "answered").await;
    assert_eq!(ev["result"].to_string(), NO);
    edited_once_and_posted_once(&s, &m).await;
}

/// A route in the stand-in's channel where a question settles when two people chose the same
/// answer (quorum.rs's `two_approvals`, in Slack).
fn two_approvals() -> String {
    format!(
        "[[routes]]\nname = \"prod\"\nslack_channel_id = \"{DEFAULT_CHANNEL}\"\napprovals = 2\n"
    )
}

/// The accepted audit rows of request `id` with this action.
async fn audited(bin: &Bin, id: &str, action: &str) -> Vec<askrelay::domain::request::AuditRow> {
    let store = store_of(bin).await;
    let key = store.by_id(id).await.unwrap().unwrap().key;
    let rows = store.audit_rows(Some(key)).await.unwrap();
    rows.into_iter()
        .filter(|r| r.action == action && r.accepted)
        .collect()
}

#[tokio::test]
async fn a_vote_stored_before_a_crash_is_kept_counted_once_and_a_second_person_settles_it() {
    let (s, bin) = setup(&two_approvals()).await;
    let input = crate::quorum::allow_deny();
    let crashing = serve_on(&bin, &s, Some("voted")).await;
    let (_c, m) = ask_posted(&s, &bin, "voted", &input).await;
    assert!(m.to_string().contains("*Votes:* 0 of 2 needed"), "{m}");
    let pressed = s
        .click(&alice(), DEFAULT_CHANNEL, ts(&m), button(&m, "Allow"))
        .await;
    aborted(crashing, "voted").await;
    // The vote is stored (with its audit row), though never acked nor shown; nothing settled.
    assert!(s.ack_of(pressed.envelope_id()).is_none(), "{:?}", s.acks());
    assert!(s.calls("chat.update").is_empty());
    let req = store_of(&bin).await.by_id("voted").await.unwrap().unwrap();
    assert_eq!(req.status, Status::Pending);
    assert_eq!(req.answers[0], None);
    assert_eq!(req.votes[0].len(), 1, "{:?}", req.votes);
    assert_eq!(req.votes[0][0].id, "U0ALICE01");
    assert_eq!(audited(&bin, "voted", "vote").await.len(), 1);

    let (_daemon, mut c, first) = restart(&s, &bin, "voted", &input).await;
    assert_eq!(first["event"], "accepted", "still pending: {first}");
    // Alice's press delivered again: her vote is the one stored, not a second.
    s.redeliver(pressed.envelope_id()).await;
    within("the ack", s.wait_ack(pressed.envelope_id())).await;
    told(
        &s,
        &alice().id,
        "You already voted for this answer (1 of 2 approvals)",
    )
    .await;
    let req = store_of(&bin).await.by_id("voted").await.unwrap().unwrap();
    assert_eq!((req.status, req.votes[0].len()), (Status::Pending, 1));
    assert_eq!(audited(&bin, "voted", "vote").await.len(), 1);
    // The kept vote is shown on the message again at start-up.
    let at = ts(&m).to_owned();
    within(
        "the kept vote shown on the message",
        s.wait_for_request("chat.update", move |r| {
            r.ok()
                && r.param_str("ts") == Some(at.as_str())
                && r.params.to_string().contains("1 of 2 needed")
        }),
    )
    .await;
    // Bob's is the second person's: the quorum is reached.
    s.click(&bob(), DEFAULT_CHANNEL, ts(&m), button(&m, "Allow"))
        .await;
    let ev = expect_event(&mut c, "answered").await;
    assert_eq!(
        ev["result"].to_string(),
        r#"{"answers":[{"id":"permission","selected":["Allow"]}]}"#
    );
    let shown = outcome_of(&s, &m).await.params.to_string();
    assert!(
        shown.contains("*Answered* by <@U0BOB0001> in Slack"),
        "{shown}"
    );
    assert_eq!(audited(&bin, "voted", "vote").await.len(), 2, "two votes");
    let settled = audited(&bin, "voted", "answer").await;
    assert_eq!(settled.len(), 1, "{settled:?}");
    let detail = settled[0].detail.clone().unwrap_or_default();
    assert!(
        detail.contains("voters: slack:U0ALICE01 name=alice, slack:U0BOB0001 name=bob"),
        "{detail}"
    );
    assert_eq!(s.calls("chat.postMessage").len(), 1, "posted once");
    s.assert_no_violations();
}

#[tokio::test]
async fn a_batch_that_crashed_before_its_answers_were_stored_leaves_each_pending_and_settles_each_once(
) {
    let (s, bin) = setup("").await;
    let asks = [
        ("batch-1", approval("cargo test", "s1")),
        ("batch-2", approval("cargo build", "s1")),
    ];
    let crashing = serve_on(&bin, &s, Some("clicked")).await;
    let mut messages = Vec::new();
    for (id, input) in &asks {
        let (_c, m) = ask_posted(&s, &bin, id, input).await;
        messages.push(m);
    }
    let store = store_of(&bin).await;
    let mut tokens = Vec::new();
    for (id, _) in &asks {
        tokens.push(store.by_id(id).await.unwrap().unwrap().token);
    }
    let tokens: Vec<&str> = tokens.iter().map(String::as_str).collect();
    // `/askrelay pending`, both chosen (answers nothing), then "Allow selected": the crash.
    let listing = pending(&s, &alice()).await;
    pick(&s, &alice(), &listing, &tokens).await;
    let pressed = send_press(&s, &alice(), &listing, "ar:batch:allow").await;
    aborted(crashing, "clicked").await;
    assert!(s.ack_of(pressed.envelope_id()).is_none(), "{:?}", s.acks());
    for (id, _) in &asks {
        nothing_stored(&bin, id).await;
    }
    assert!(s.calls("chat.update").is_empty());

    let (_daemon, c, first) = restart(&s, &bin, asks[0].0, &asks[0].1).await;
    let mut agents = vec![(c, first)];
    agents.push(reattach(&bin, asks[1].0, &asks[1].1).await);
    for (_, first) in &agents {
        assert_eq!(first["event"], "accepted", "still pending: {first}");
    }
    // The same press delivered again: both are allowed, each once.
    s.redeliver(pressed.envelope_id()).await;
    within("the ack", s.wait_ack(pressed.envelope_id())).await;
    told(&s, &alice().id, "*Allow selected*: 2 done, 0 refused.").await;
    for (c, _) in &mut agents {
        let ev = expect_event(c, "answered").await;
        assert_eq!(
            ev["result"].to_string(),
            r#"{"answers":[{"id":"permission","selected":["Allow"]}]}"#
        );
    }
    // Pressed once more: both are answered already.
    press(&s, &alice(), &listing, "ar:batch:allow").await;
    told(&s, &alice().id, "*Allow selected*: 0 done, 2 refused.").await;
    for (id, _) in &asks {
        assert_eq!(audited(&bin, id, "answer").await.len(), 1, "{id}");
    }
    let outcomes = [
        outcome_of(&s, &messages[0]).await,
        outcome_of(&s, &messages[1]).await,
    ];
    for outcome in outcomes {
        let shown = outcome.params.to_string();
        assert!(shown.contains("U0ALICE01"), "{shown}");
    }
    assert_eq!(s.calls("chat.postMessage").len(), 2, "each posted once");
    s.assert_no_violations();
}
