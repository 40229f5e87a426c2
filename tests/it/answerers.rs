//! Routes choose their answerers (docs/contract.md, "Answerers and routes"): a route with
//! `answerers = ["discord", "terminal"]` shows each request in its Discord channel and to
//! `askrelay answer` at once; the first allowed answer on either settles it, the other copy
//! says who answered and where, and a late answer anywhere hears "already answered". The real
//! daemon, its socket, the `askrelay` binary and the Discord stand-in.

use crate::harness::*;
use askrelay::config::{Config, IdentityConfig, Route, Snowflake};
use askrelay_testkit::fixtures::Clicker;
use serde_json::{json, Value};

/// Carol's Discord id: in the quorum test's identity, the same person as the local user.
const CAROL: u64 = 4545;

/// Every request goes to route `both`, shown in Discord's channel and at the terminal.
fn both(c: &mut Config) {
    c.terminal.enabled = Some(true);
    let mut r = Route::new("both", CHANNEL);
    r.answerers = Some(vec!["discord".into(), "terminal".into()]);
    c.routes.push(r);
}

/// The local user name and uid of this process: who answers at the terminal.
pub(crate) fn me() -> (String, u32) {
    let uid = nix::unistd::geteuid();
    let name = nix::unistd::User::from_uid(uid).unwrap().unwrap().name;
    (name, uid.as_raw())
}

fn two_questions() -> Value {
    json!({"questions": [
        {"id": "first", "question": "Deploy the first?", "header": "First",
         "options": [{"label": "Yes"}, {"label": "No"}], "multiSelect": false},
        {"id": "second", "question": "Deploy the second?", "header": "Second",
         "options": [{"label": "Yes"}, {"label": "No"}], "multiSelect": false}
    ]})
}

#[tokio::test]
async fn answered_at_the_terminal_the_discord_message_says_so_and_a_late_click_is_told() {
    let app = App::discord_with(both).await;
    let (mut c, accepted) = app.ask("t-1", &yes_no("q")).await;
    // One accepted line for both copies: Discord owns it, the terminal's hint is there too.
    assert_eq!(accepted["answerer"], "discord", "{accepted}");
    assert_eq!(accepted["route"], "both", "{accepted}");
    assert_eq!(
        accepted["message_links"].as_array().map(Vec::len),
        Some(1),
        "{accepted}"
    );
    assert!(
        accepted["hint"]
            .as_str()
            .is_some_and(|h| h.contains("askrelay answer t-1")),
        "{accepted}"
    );
    let msg = app.messages(CHANNEL).remove(0);
    // No terminal_answers on the route: naming the terminal lets it answer.
    let reply = app.answer("t-1", "q", &["No, keep them"]).await;
    assert_eq!(reply["event"], "answer_accepted", "{reply}");
    expect_event(&mut c, "answered").await;
    let edit = app.edit_of(&msg).await;
    let (name, uid) = me();
    let fields = edit["embeds"][0]["fields"].as_array().unwrap().clone();
    let by = fields
        .iter()
        .find(|f| f["name"] == "Answered in the terminal by")
        .unwrap_or_else(|| panic!("who answered, and where: {edit}"));
    assert!(
        shown(by["value"].as_str().unwrap()).starts_with(&format!("{name} (uid {uid})")),
        "{by}"
    );
    assert_eq!(edit["components"], json!([]), "no controls left: {edit}");
    // A click after it is told who answered, and where.
    let cb = app
        .press(&msg, &alice(), "Yes, delete them (Recommended)")
        .await;
    assert!(is_ephemeral(&cb), "{cb}");
    let told = shown(ephemeral(&cb));
    assert!(
        told.contains(&format!(
            "Already answered in the terminal by {name} (uid {uid})"
        )),
        "{told}"
    );
    app.assert_payloads_valid();
}

#[tokio::test]
async fn answered_in_discord_askrelay_answer_is_told_who_answered_there() {
    let app = App::discord_with(both).await;
    let (mut c, _) = app.ask("d-1", &yes_no("q")).await;
    let msg = app.messages(CHANNEL).remove(0);
    let cb = app.press(&msg, &alice(), "No, keep them").await;
    final_state(&cb);
    expect_event(&mut c, "answered").await;
    // The binary, as a person at a terminal runs it: exit 1, and who answered, in Discord.
    let bin = Bin::new().env("ASKRELAY_SOCKET_PATH", app.socket().display());
    let (code, out, err) = bin
        .run(&[
            "answer",
            "d-1",
            "--select",
            "Yes, delete them (Recommended)",
        ])
        .await;
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("was already answered by alice (Discord user 4242)"),
        "{err}"
    );
    let answered = app.store().by_id("d-1").await.unwrap().unwrap();
    let a = answered.answers[0].as_ref().unwrap();
    assert_eq!(
        (a.actor.via.as_str(), a.actor.id.as_str()),
        ("discord", "4242")
    );
}

#[tokio::test]
async fn a_restart_between_the_ask_and_the_answers_keeps_both_copies_working() {
    let mut app = App::discord_with(both).await;
    let (c, _) = app.ask("r-1", &two_questions()).await;
    drop(c);
    let messages = app.messages(CHANNEL);
    assert_eq!(messages.len(), 2, "one message per question");
    app.restart().await;
    // Both copies are kept with the request, not read from the config again.
    let req = app.store().by_id("r-1").await.unwrap().unwrap();
    assert_eq!(req.answerer.as_deref(), Some("discord"));
    assert_eq!(req.answerers, ["discord", "terminal"]);
    // The agent comes back under the same id and gets both copies' details again (Discord's
    // links once this daemon leads: on PostgreSQL it may not have taken the lead yet).
    let (mut c, accepted) = app.ask("r-1", &two_questions()).await;
    assert_eq!(accepted["answerer"], "discord", "{accepted}");
    assert!(accepted["hint"].is_string(), "{accepted}");
    assert!(accepted["message_links"].is_array(), "{accepted}");
    // One question in Discord, the other at the terminal; each copy shows the other's.
    let cb = app.press(&messages[0], &alice(), "Yes").await;
    final_state(&cb);
    let reply = app.answer("r-1", "second", &["No"]).await;
    assert_eq!(reply["event"], "answer_accepted", "{reply}");
    assert_eq!(reply["request_answered"], true, "{reply}");
    let answered = expect_event(&mut c, "answered").await;
    assert_eq!(
        answered["result"]["answers"],
        json!([{"id": "first", "selected": ["Yes"]}, {"id": "second", "selected": ["No"]}]),
        "{answered}"
    );
    let edit = app.edit_of(&messages[1]).await;
    assert!(
        edit.to_string().contains("Answered in the terminal by"),
        "{edit}"
    );
    app.assert_payloads_valid();
}

/// A quorum route shown in Discord and at the terminal: votes from both count toward it, and
/// a person known on both (an identity mapping their uid and Discord id) votes once.
#[tokio::test]
async fn a_quorum_across_both_surfaces_counts_each_person_once() {
    let app = App::discord_with(|c: &mut Config| {
        both(c);
        let r = &mut c.routes[0];
        r.approvals = Some(2);
        r.exclude_requester = Some(false);
        c.identities.push(IdentityConfig {
            name: "carol".into(),
            uids: vec![me().1],
            discord_user_ids: vec![Snowflake(CAROL)],
            ..Default::default()
        });
    })
    .await;
    let input = json!({"questions": [{
        "id": "permission", "question": "Run `terraform apply` in prod?", "header": "Approve",
        "options": [{"label": "Allow"}, {"label": "Deny"}], "multiSelect": false}]});
    let (mut c, _) = app.ask("v-1", &input).await;
    let msg = app.messages(CHANNEL).remove(0);
    // Carol at the terminal: one vote of two; the Discord message shows it.
    let reply = app.answer("v-1", "permission", &["Allow"]).await;
    assert_eq!(reply["votes"], json!({"count": 1, "needed": 2}), "{reply}");
    let shown_vote = within("the message to show the vote", async {
        let mut seen = app.standin().subscribe();
        loop {
            let now = app.standin().message(id_of(&msg)).unwrap();
            if now.to_string().contains("Approvals: 1 of 2") {
                return now;
            }
            seen.changed().await.unwrap();
        }
    })
    .await;
    assert!(shown_vote["components"]
        .as_array()
        .is_some_and(|c| !c.is_empty()));
    // Carol again, in Discord: the same person, so not a second vote.
    let cb = app
        .press(&msg, &Clicker::new(CAROL, "carol", &[]), "Allow")
        .await;
    assert!(
        is_ephemeral(&cb) && ephemeral(&cb).contains("already voted"),
        "{cb}"
    );
    assert!(app.hub().is_pending("v-1"), "one person is one vote");
    // Bob in Discord is the second person: the quorum is reached.
    let done = app.press(&msg, &bob(), "Allow").await;
    final_state(&done);
    let answered = expect_event(&mut c, "answered").await;
    assert_eq!(
        answered["result"]["answers"][0]["selected"],
        json!(["Allow"])
    );
    let audit = app.store().audit_rows(None).await.unwrap();
    let settled = audit.iter().rev().find(|r| r.action == "answer").unwrap();
    let detail = settled.detail.clone().unwrap_or_default();
    assert!(
        detail.contains(&format!("voters: uid:{}", me().1)) && detail.contains("discord:4343"),
        "{detail}"
    );
    app.assert_payloads_valid();
}
