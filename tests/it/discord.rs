//! The Discord answerer end to end: the real daemon and the real serenity client, over real HTTP
//! and a real WebSocket, against the Discord stand-in. Every body "Discord" receives is checked
//! against Discord's OpenAPI spec and the limits it misses.

use crate::harness::*;
use askrelay::config::{Route, Snowflake};
use askrelay_testkit::fixtures::Clicker;
use askrelay_testkit::standin::{Failure, Recorded, StandIn};
use serde_json::{json, Value};
use std::collections::BTreeMap;

const INFRA_CHANNEL: u64 = 200;

#[tokio::test]
async fn button_choice_settles_and_edits_the_message() {
    let app = App::discord().await;
    let (mut c, accepted) = app.ask("btn", &yes_no("cleanup")).await;
    assert_eq!(accepted["answerer"], "discord");
    assert_eq!(accepted["channel_id"], CHANNEL.to_string());
    assert!(accepted["message_links"][0]
        .as_str()
        .unwrap()
        .contains(&format!("/{CHANNEL}/")));
    let msg = app.messages(CHANNEL).remove(0);
    let embed = &msg["embeds"][0];
    assert_eq!(embed["title"], "Confirm");
    assert_eq!(
        shown(embed["description"].as_str().unwrap()),
        "Proceed with the destructive cleanup?"
    );
    assert!(embed["footer"]["text"].as_str().unwrap().contains("btn"));
    // The recommended option is the primary button.
    let row = &msg["components"][0]["components"];
    assert_eq!(row[0]["label"], "Yes, delete them (Recommended)");
    assert_eq!(row[0]["style"], 1);
    assert_eq!(row[1]["style"], 2);
    assert_eq!(msg["components"][1]["components"][0]["label"], "Other…");

    let cb = app
        .click(&msg, &alice(), &control(&msg, "No, keep them"))
        .await;
    let edit = final_state(&cb);
    let line = c.recv_line().await.unwrap().unwrap();
    assert_eq!(
        line,
        r#"{"event":"answered","request_id":"btn","result":{"answers":[{"id":"cleanup","selected":["No, keep them"]}]}}"#
    );
    let text = shown_body(edit);
    assert!(
        text.contains("<@4242>") && text.contains("No, keep them") && text.contains("<t:"),
        "{text}"
    );
    // The update is the edit: the message now shows the answer, and no PATCH was needed.
    assert_eq!(
        app.standin().message(id_of(&msg)).unwrap()["components"],
        json!([])
    );
    assert!(!app.standin().requests().iter().any(|r| r.method == "PATCH"));
    let audit = app.store().audit_rows(None).await.unwrap();
    assert!(audit
        .iter()
        .any(|r| r.source == "discord" && r.action == "answer" && r.accepted));
    app.assert_payloads_valid();
}

#[tokio::test]
async fn other_opens_a_modal_whose_text_replaces_the_choice() {
    let app = App::discord().await;
    let (mut c, _) = app.ask("other", &yes_no("cleanup")).await;
    let msg = app.messages(CHANNEL).remove(0);
    let cb = app.click(&msg, &alice(), &control(&msg, "Other…")).await;
    assert_eq!(cb["type"], 9, "{cb}");
    assert_eq!(cb["data"]["title"], "Confirm");
    let input = &cb["data"]["components"][0]["components"][0];
    assert_eq!(input["style"], 2);
    assert_eq!(input["required"], true);
    assert_eq!(input["max_length"], 4000);
    let modal_id = cb["data"]["custom_id"].as_str().unwrap().to_owned();
    let cb = app
        .submit_modal(&msg, &alice(), &modal_id, "Archive them instead")
        .await;
    final_state(&cb);
    let ev = expect_event(&mut c, "answered").await;
    assert_eq!(
        serde_json::to_string(&ev["result"]).unwrap(),
        r#"{"answers":[{"id":"cleanup","selected":[],"custom":"Archive them instead"}]}"#
    );
    app.assert_payloads_valid();
}

#[tokio::test]
async fn eight_options_use_a_select_menu() {
    let app = App::discord().await;
    let input =
        json!({"questions": [{"id": "pick", "question": "Which one?", "options": options(8)}]});
    let (mut c, _) = app.ask("sel", &input).await;
    let msg = app.messages(CHANNEL).remove(0);
    let menu = &msg["components"][0]["components"][0];
    assert_eq!(menu["type"], 3);
    assert_eq!(menu["options"].as_array().unwrap().len(), 8);
    assert_eq!(msg["components"][1]["components"][0]["label"], "Other…");
    let cb = app.select(&msg, &alice(), &select_id(&msg), &["5"]).await;
    final_state(&cb);
    let ev = expect_event(&mut c, "answered").await;
    assert_eq!(ev["result"]["answers"][0]["selected"], json!(["Option 5"]));
    app.assert_payloads_valid();
}

#[tokio::test]
async fn multi_select_draft_then_submit_and_draft_then_note() {
    let app = App::discord().await;
    let input = json!({"questions": [
        {"id": "plain", "question": "Which services?", "multiSelect": true, "options": options(4)},
        {"id": "noted", "question": "Which regions?", "multiSelect": true, "options": options(3)}
    ]});
    let (mut c, _) = app.ask("multi", &input).await;
    let msgs = app.messages(CHANNEL);
    assert_eq!(msgs.len(), 2);
    let (m1, m2) = (&msgs[0], &msgs[1]);
    assert_eq!(m1["components"][0]["components"][0]["min_values"], 0);
    assert_eq!(m1["components"][0]["components"][0]["max_values"], 4);

    // bob's draft is his own; alice's draft is what her Submit sends.
    assert_eq!(
        app.select(m1, &bob(), &select_id(m1), &["1"]).await["type"],
        6
    );
    assert_eq!(
        app.select(m1, &alice(), &select_id(m1), &["3", "0"]).await["type"],
        6
    );
    final_state(&app.click(m1, &alice(), &control(m1, "Submit")).await);

    assert_eq!(
        app.select(m2, &alice(), &select_id(m2), &["2"]).await["type"],
        6
    );
    let cb = app
        .click(m2, &alice(), &control(m2, "Submit with note…"))
        .await;
    assert_eq!(cb["type"], 9);
    let modal_id = cb["data"]["custom_id"].as_str().unwrap().to_owned();
    final_state(
        &app.submit_modal(m2, &alice(), &modal_id, "EU only after 18:00")
            .await,
    );

    let ev = expect_event(&mut c, "answered").await;
    assert_eq!(
        serde_json::to_string(&ev["result"]).unwrap(),
        r#"{"answers":[{"id":"plain","selected":["Option 0","Option 3"]},{"id":"noted","selected":["Option 2"],"custom":"EU only after 18:00"}]}"#
    );
    app.assert_payloads_valid();
}

#[tokio::test]
async fn free_text_question_answers_through_a_modal() {
    let app = App::discord().await;
    let input = json!({"questions": [{"id": "name", "header": "Naming", "question": "What should the release be called?"}]});
    let (mut c, _) = app.ask("free", &input).await;
    let msg = app.messages(CHANNEL).remove(0);
    assert_eq!(controls(&msg).len(), 1);
    let cb = app.click(&msg, &alice(), &control(&msg, "Answer…")).await;
    assert_eq!(cb["type"], 9);
    let modal_id = cb["data"]["custom_id"].as_str().unwrap().to_owned();
    app.submit_modal(&msg, &alice(), &modal_id, "Lighthouse")
        .await;
    let ev = expect_event(&mut c, "answered").await;
    assert_eq!(
        serde_json::to_string(&ev["result"]).unwrap(),
        r#"{"answers":[{"id":"name","selected":[],"custom":"Lighthouse"}]}"#
    );
    app.assert_payloads_valid();
}

#[tokio::test]
async fn two_questions_in_one_request() {
    let app = App::discord().await;
    let input = json!({"questions": [
        {"id": "a", "question": "First?", "options": [{"label": "A1"}, {"label": "A2"}]},
        {"id": "b", "question": "Second?", "options": [{"label": "B1"}, {"label": "B2"}]}
    ]});
    let (mut c, accepted) = app.ask("two", &input).await;
    assert_eq!(accepted["message_links"].as_array().unwrap().len(), 2);
    let msgs = app.messages(CHANNEL);
    assert!(msgs[0]["embeds"][0]["description"]
        .as_str()
        .unwrap()
        .contains("Question 1 of 2"));
    assert!(msgs[1]["embeds"][0]["description"]
        .as_str()
        .unwrap()
        .contains("Question 2 of 2"));
    final_state(
        &app.click(&msgs[1], &alice(), &control(&msgs[1], "B2"))
            .await,
    );
    assert!(
        app.hub().observe("two").is_some(),
        "still pending after one answer"
    );
    app.click(&msgs[0], &bob(), &control(&msgs[0], "A1")).await;
    let ev = expect_event(&mut c, "answered").await;
    assert_eq!(
        serde_json::to_string(&ev["result"]).unwrap(),
        r#"{"answers":[{"id":"a","selected":["A1"]},{"id":"b","selected":["B2"]}]}"#
    );
    app.assert_payloads_valid();
}

/// A real race: eight people click at once (eight INTERACTION_CREATE dispatches written back to
/// back, so the daemon handles them concurrently), and one of the clicks is delivered twice.
/// Exactly one click wins; every other one is told who won and what they picked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_people_click_at_once_and_exactly_one_wins() {
    let app = App::discord().await;
    let (mut c, _) = app.ask("race", &yes_no("q")).await;
    let msg = app.messages(CHANNEL).remove(0);
    let labels = ["Yes, delete them (Recommended)", "No, keep them"];
    let clickers: Vec<Clicker> = (0..8)
        .map(|i| Clicker::new(7000 + i, &format!("racer{i}"), &[]))
        .collect();
    let payloads: Vec<Value> = clickers
        .iter()
        .enumerate()
        .map(|(i, who)| app.click_payload(&msg, who, &control(&msg, labels[i % 2])))
        .collect();
    let mut deliveries = payloads.clone();
    // The same interaction twice (a gateway resend): it must not win twice.
    deliveries.push(payloads[3].clone());
    let s = app.standin();
    futures_util::future::join_all(deliveries.into_iter().map(|p| s.send_interaction(p))).await;
    let callbacks = within(
        "a callback for each of the 9 deliveries",
        s.wait_for_requests(9, |r| r.path.ends_with("/callback")),
    )
    .await;
    let bodies: Vec<Value> = callbacks.iter().map(|r| r.body.clone().unwrap()).collect();
    let winners: Vec<&Recorded> = callbacks
        .iter()
        .filter(|r| r.body.as_ref().unwrap()["type"] == 7)
        .collect();
    assert_eq!(winners.len(), 1, "{bodies:#?}");
    let winner_id = winners[0].path.split('/').nth_back(2).unwrap();
    let w = payloads
        .iter()
        .position(|p| p["id"] == winner_id)
        .expect("the winner is one of the clicks");
    let ev = expect_event(&mut c, "answered").await;
    assert_eq!(
        ev["result"]["answers"][0]["selected"],
        json!([labels[w % 2]]),
        "the agent gets the winner's pick"
    );
    // Everyone else is told who won and what they picked.
    for b in bodies.iter().filter(|b| b["type"] != 7) {
        assert!(is_ephemeral(b), "{b}");
        let text = shown(b["data"]["content"].as_str().unwrap());
        assert!(
            text.starts_with(&format!("Already answered by <@{}>", 7000 + w)),
            "{text}"
        );
        assert!(text.ends_with(&format!(": {}", labels[w % 2])), "{text}");
    }
    let audit = app.store().audit_rows(None).await.unwrap();
    let accepted: Vec<_> = audit
        .iter()
        .filter(|r| r.action == "answer" && r.accepted)
        .collect();
    assert_eq!(accepted.len(), 1, "stored once: {audit:#?}");
    assert!(accepted[0]
        .actor
        .as_deref()
        .unwrap()
        .contains(&format!("racer{w}")));
    // A loser is refused at admission ("late") or by the store's first-wins ("answer", not
    // accepted), depending on how far it got before the winner committed.
    let lost = audit
        .iter()
        .filter(|r| (r.action == "late" || r.action == "answer") && !r.accepted)
        .count();
    assert_eq!(lost, 8, "every losing delivery is audited: {audit:#?}");
    app.assert_payloads_valid();
}

#[tokio::test]
async fn a_late_click_gets_an_ephemeral_reply() {
    let app = App::discord().await;
    let (mut c, _) = app.ask("late", &yes_no("q")).await;
    let msg = app.messages(CHANNEL).remove(0);
    app.click(&msg, &alice(), &control(&msg, "No, keep them"))
        .await;
    expect_event(&mut c, "answered").await;
    let cb = app
        .click(
            &msg,
            &bob(),
            &control(&msg, "Yes, delete them (Recommended)"),
        )
        .await;
    assert!(is_ephemeral(&cb), "{cb}");
    // Who answered, when, and what: not only that it is over.
    let text = shown(cb["data"]["content"].as_str().unwrap());
    assert!(text.starts_with("Already answered by <@"), "{cb}");
    assert!(text.ends_with(": No, keep them"), "{cb}");
    let audit = app.store().audit_rows(None).await.unwrap();
    assert!(audit
        .iter()
        .any(|r| r.action == "late" && !r.accepted && r.actor.as_deref().unwrap().contains("bob")));
    app.assert_payloads_valid();
}

#[tokio::test]
async fn a_person_not_on_the_allowlist_then_an_allowed_one() {
    let app = App::discord_with(|c| {
        c.discord.allowed_user_ids = vec![Snowflake(4242)];
        c.discord.allowed_role_ids = vec![Snowflake(77)];
    })
    .await;
    let (mut c, _) = app.ask("acl", &yes_no("q")).await;
    let msg = app.messages(CHANNEL).remove(0);
    let cb = app
        .click(
            &msg,
            &bob(),
            &control(&msg, "Yes, delete them (Recommended)"),
        )
        .await;
    assert!(is_ephemeral(&cb), "{cb}");
    assert!(cb["data"]["content"]
        .as_str()
        .unwrap()
        .contains("not allowed"));
    // A role on the list is enough.
    let carol = Clicker::new(5555, "carol", &[77]);
    let cb = app
        .click(&msg, &carol, &control(&msg, "No, keep them"))
        .await;
    final_state(&cb);
    let ev = expect_event(&mut c, "answered").await;
    assert_eq!(ev["result"]["answers"][0]["selected"][0], "No, keep them");
    let audit = app.store().audit_rows(None).await.unwrap();
    assert!(audit.iter().any(|r| r.action == "denied"
        && !r.accepted
        && r.actor.as_deref().unwrap().contains("bob")));
    app.assert_payloads_valid();
}

#[tokio::test]
async fn cancel_on_disconnect_edits_the_message() {
    let app = App::discord_with(|c| c.cancel_grace_secs = 0).await;
    let (c, _) = app.ask("gone", &yes_no("q")).await;
    let msg = app.messages(CHANNEL).remove(0);
    drop(c);
    let edit = app.edit_of(&msg).await;
    assert_eq!(edit["components"], json!([]));
    assert!(edit.to_string().contains("Cancelled"), "{edit}");
    let cb = app
        .click(&msg, &alice(), &control(&msg, "No, keep them"))
        .await;
    assert!(is_ephemeral(&cb));
    assert!(
        cb["data"]["content"]
            .as_str()
            .unwrap()
            .contains("cancelled"),
        "{cb}"
    );
    app.assert_payloads_valid();
}

#[tokio::test]
async fn restart_then_a_click_on_the_old_message_settles_it() {
    let mut app = App::discord().await;
    let (c, _) = app.ask("durable", &yes_no("q")).await;
    let msg = app.messages(CHANNEL).remove(0);
    drop(c);
    app.restart().await;
    let mut c = app.client().await;
    c.send_json(&ask_line("durable", &yes_no("q")))
        .await
        .unwrap();
    let acc = expect_event(&mut c, "accepted").await;
    assert_eq!(acc["answerer"], "discord");
    let cb = app
        .click(&msg, &alice(), &control(&msg, "No, keep them"))
        .await;
    final_state(&cb);
    let ev = expect_event(&mut c, "answered").await;
    assert_eq!(ev["result"]["answers"][0]["selected"][0], "No, keep them");
    assert_eq!(app.messages(CHANNEL).len(), 1, "nothing was posted twice");
    app.assert_payloads_valid();
}

#[tokio::test]
async fn a_150_character_label_comes_back_whole() {
    let app = App::discord().await;
    let long = format!("{} (Recommended)", "l".repeat(150 - " (Recommended)".len()));
    assert_eq!(long.chars().count(), 150);
    let input = json!({"questions": [{"id": "q", "question": "Long?", "options": [{"label": long}, {"label": "short"}]}]});
    let (mut c, _) = app.ask("long", &input).await;
    let msg = app.messages(CHANNEL).remove(0);
    let button = &msg["components"][0]["components"][0];
    let shown = button["label"].as_str().unwrap();
    assert!(
        shown.chars().count() <= 80 && shown.ends_with('…'),
        "{shown}"
    );
    app.click(&msg, &alice(), button["custom_id"].as_str().unwrap())
        .await;
    let ev = expect_event(&mut c, "answered").await;
    assert_eq!(ev["result"]["answers"][0]["selected"][0], long.as_str());
    app.assert_payloads_valid();
}

#[tokio::test]
async fn a_429_on_posting_is_retried() {
    let app = App::discord().await;
    app.standin().fail_next(
        "POST",
        &format!("/channels/{CHANNEL}/messages"),
        Failure::RateLimited {
            retry_after_secs: 0.2,
            global: false,
        },
        1,
    );
    app.standin().fail_next(
        "POST",
        &format!("/channels/{CHANNEL}/messages"),
        Failure::Status(502),
        1,
    );
    let (mut c, _) = app.ask("limited", &yes_no("q")).await;
    let posts: Vec<Recorded> = app
        .standin()
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST" && r.path.ends_with("/messages"))
        .collect();
    let statuses: Vec<u16> = posts.iter().map(|r| r.status).collect();
    assert_eq!(statuses, vec![429, 502, 200]);
    assert_eq!(app.messages(CHANNEL).len(), 1);
    let msg = app.messages(CHANNEL).remove(0);
    app.click(&msg, &alice(), &control(&msg, "No, keep them"))
        .await;
    expect_event(&mut c, "answered").await;
    app.assert_payloads_valid();
}

#[tokio::test]
async fn an_unknown_channel_is_no_answerer_with_the_cause() {
    let app = App::discord().await;
    app.standin().set_channel_missing(CHANNEL);
    let mut c = app.client().await;
    c.send_json(&ask_line("nowhere", &yes_no("q")))
        .await
        .unwrap();
    let ev = recv(&mut c, "the next line").await;
    assert_eq!(ev["code"], "NO_ANSWERER", "{ev}");
    let msg = ev["message"].as_str().unwrap();
    assert!(
        msg.contains("Unknown Channel") && msg.contains(&CHANNEL.to_string()),
        "{msg}"
    );
    assert!(!msg.contains("MTE4MDAwMDAwMDAwMDAwMDAwMQ.Gx1234.test-bot-token"));
}

#[tokio::test]
async fn a_forbidden_channel_is_no_answerer_with_the_cause() {
    let app = App::discord().await;
    app.standin().set_channel_forbidden(CHANNEL);
    let mut c = app.client().await;
    c.send_json(&ask_line("closed", &yes_no("q")))
        .await
        .unwrap();
    let ev = recv(&mut c, "the next line").await;
    assert_eq!(ev["code"], "NO_ANSWERER", "{ev}");
    assert!(
        ev["message"].as_str().unwrap().contains("Missing Access"),
        "{ev}"
    );
}

#[tokio::test]
async fn the_route_is_chosen_by_scope_with_its_mentions_and_allowlist() {
    let app = App::discord_with(|c| {
        c.routes.push(Route {
            matches: BTreeMap::from([("project".into(), "infra-*".into())]),
            allowed_role_ids: Some(vec![Snowflake(789)]),
            mention_role_ids: Some(vec![Snowflake(789)]),
            mention_user_ids: Some(vec![Snowflake(4242)]),
            ..Route::new("infra", INFRA_CHANNEL)
        });
    })
    .await;
    let mut input = ask_line("infra-q", &yes_no("q"));
    input["scope"] = json!({"project": "infra-db", "agent": "ops-bot"});
    let mut c = app.client().await;
    c.send_json(&input).await.unwrap();
    let acc = expect_event(&mut c, "accepted").await;
    assert_eq!(acc["route"], "infra");
    let msg = app.messages(INFRA_CHANNEL).remove(0);
    assert_eq!(msg["content"], "<@&789> <@4242>");
    let post = app
        .standin()
        .requests()
        .into_iter()
        .find(|r| {
            r.method == "POST"
                && r.path
                    .ends_with(&format!("/channels/{INFRA_CHANNEL}/messages"))
        })
        .unwrap();
    let mentions = &post.body.as_ref().unwrap()["allowed_mentions"];
    assert_eq!(mentions["parse"], json!([]));
    assert_eq!(mentions["roles"], json!(["789"]));
    assert_eq!(mentions["users"], json!(["4242"]));
    assert!(msg["embeds"][0]["footer"]["text"]
        .as_str()
        .unwrap()
        .contains("project=infra-db"));
    // The route's allowlist applies: a role member may answer, others may not.
    let cb = app
        .click(&msg, &bob(), &control(&msg, "No, keep them"))
        .await;
    assert!(is_ephemeral(&cb));
    let ops = Clicker::new(6000, "ops", &[789]);
    final_state(&app.click(&msg, &ops, &control(&msg, "No, keep them")).await);
    expect_event(&mut c, "answered").await;

    let (_c2, acc) = app.ask("web-q", &yes_no("q")).await;
    assert_eq!(acc["route"], "default");
    assert_eq!(app.messages(CHANNEL).len(), 1);
    app.assert_payloads_valid();
}

#[tokio::test]
async fn forged_and_garbage_custom_ids_get_an_ephemeral_reply() {
    let app = App::discord().await;
    let (mut c, _) = app.ask("forged", &yes_no("q")).await;
    let msg = app.messages(CHANNEL).remove(0);
    let good = control(&msg, "No, keep them");
    let token = good.split(':').nth(1).unwrap().to_owned();
    let key = app.hub().request("forged").await.unwrap().key;
    const NOT_OURS: &str = "This control is not one askrelay knows; nothing was recorded.";
    const UNKNOWN: &str = "This question is no longer known to askrelay; nothing was recorded.";
    const NO_OPTION: &str = "This button does not match any option.";
    // (custom_id, the reply, the audit action, the request and question it is filed under)
    type Case = (String, &'static str, &'static str, Option<i64>, Option<i64>);
    let cases: Vec<Case> = vec![
        ("garbage".into(), NOT_OURS, "forged", None, None),
        (String::new(), NOT_OURS, "forged", None, None),
        // The pre-token format, and tokens that are not 20 lower-case hex digits.
        ("ar:999999:0:b:0".into(), NOT_OURS, "forged", None, None),
        (
            format!("ar:{}:0:b:0", token.to_uppercase()),
            NOT_OURS,
            "forged",
            None,
            None,
        ),
        (
            format!("ar:{}0:0:b:0", token),
            NOT_OURS,
            "forged",
            None,
            None,
        ),
        // Non-canonical numbers, a modal's code on a button, trailing parts.
        (format!("ar:{token}:00:b:0"), NOT_OURS, "forged", None, None),
        (format!("ar:{token}:0:b:+1"), NOT_OURS, "forged", None, None),
        (format!("ar:{token}:0:mA"), NOT_OURS, "forged", None, None),
        (
            format!("ar:{token}:0:b:0:1"),
            NOT_OURS,
            "forged",
            None,
            None,
        ),
        // Well formed, but no such request.
        (
            "ar:0123456789abcdef0123:0:b:0".into(),
            UNKNOWN,
            "stale",
            None,
            None,
        ),
        // This request, but a question or option it does not have.
        (
            format!("ar:{token}:7:b:0"),
            UNKNOWN,
            "stale",
            Some(key),
            Some(7),
        ),
        (
            format!("ar:{token}:0:b:99"),
            NO_OPTION,
            "forged",
            Some(key),
            Some(0),
        ),
    ];
    for (bad, reply, _, _, _) in &cases {
        let cb = app.click(&msg, &alice(), bad).await;
        assert!(is_ephemeral(&cb), "{bad}: {cb}");
        assert_eq!(cb["data"]["content"], *reply, "{bad}");
    }
    // One refused row per click, in order, naming who clicked and what they sent.
    let audit = app.store().audit_rows(None).await.unwrap();
    let refused: Vec<_> = audit.iter().filter(|r| r.source == "discord").collect();
    assert_eq!(refused.len(), cases.len(), "{audit:#?}");
    for (row, (bad, _, action, req, q)) in refused.iter().zip(&cases) {
        assert_eq!(row.action, *action, "{bad}: {row:?}");
        assert!(!row.accepted, "{bad}: {row:?}");
        assert_eq!(
            (row.request_key, row.question_idx),
            (*req, *q),
            "{bad}: {row:?}"
        );
        assert_eq!(
            row.actor.as_deref(),
            Some("discord:4242 name=alice"),
            "{bad}"
        );
        let detail = row.detail.as_deref().unwrap();
        assert!(
            detail.starts_with(&format!("custom_id {bad:?} in channel {CHANNEL} message ")),
            "{bad}: {detail}"
        );
    }
    // Nothing was settled by any of them.
    assert!(app.hub().is_pending("forged"));
    // An interaction serenity cannot parse is logged, and the daemon keeps serving.
    let mut broken = app.click_payload(&msg, &alice(), "garbage");
    broken
        .as_object_mut()
        .unwrap()
        .remove("attachment_size_limit");
    app.standin().send_interaction(broken).await;
    let cb = app
        .click(&msg, &alice(), &control(&msg, "No, keep them"))
        .await;
    final_state(&cb);
    expect_event(&mut c, "answered").await;
    app.assert_payloads_valid();
}

#[tokio::test]
async fn a_terminal_answer_edits_the_discord_message() {
    let app = App::discord_with(|c| {
        c.terminal.enabled = Some(true);
        c.discord.terminal_answers = true;
    })
    .await;
    let (mut c, acc) = app.ask("both", &yes_no("q")).await;
    assert_eq!(
        acc["answerer"], "discord",
        "Discord comes first in the waterfall"
    );
    let msg = app.messages(CHANNEL).remove(0);
    let reply = app
        .client()
        .await
        .call_json(&json!({"op": "answer", "request_id": "both", "question": "q", "select": ["No, keep them"], "by": "root"}))
        .await
        .unwrap();
    assert_eq!(reply["event"], "answer_accepted");
    expect_event(&mut c, "answered").await;
    let edit = app.edit_of(&msg).await;
    assert!(
        edit.to_string().contains("Answered in the terminal by"),
        "{edit}"
    );
    let cb = app
        .click(
            &msg,
            &alice(),
            &control(&msg, "Yes, delete them (Recommended)"),
        )
        .await;
    assert!(is_ephemeral(&cb));
    app.assert_payloads_valid();
    drop(app.dir);
}

#[tokio::test]
async fn a_route_expiry_ends_the_request_and_edits_the_message() {
    let app = App::discord_with(|c| {
        c.routes.push(Route {
            matches: BTreeMap::from([("project".into(), "urgent".into())]),
            expire_after_secs: Some(1),
            ..Route::new("hurry", CHANNEL)
        });
    })
    .await;
    let mut line = ask_line("soon", &yes_no("q"));
    line["scope"] = json!({"project": "urgent"});
    let mut c = app.client().await;
    c.send_json(&line).await.unwrap();
    let acc = expect_event(&mut c, "accepted").await;
    assert_eq!(acc["expires_in_secs"], 1);
    let ev = recv(&mut c, "the next line").await;
    assert_eq!(ev["code"], "EXPIRED", "{ev}");
    assert!(ev["message"]
        .as_str()
        .unwrap()
        .contains("nobody answered within 1s"));
    let msg = app.messages(CHANNEL).remove(0);
    let edit = app.edit_of(&msg).await;
    assert!(edit.to_string().contains("Expired"), "{edit}");
    assert_eq!(edit["components"], json!([]));
    app.assert_payloads_valid();
}

/// The binary: `check-config` verifies the token and channel access, and `serve` names the bot
/// once it is connected.
#[tokio::test]
async fn check_config_and_serve_against_the_standin() {
    use tokio::io::AsyncBufReadExt;
    let standin = StandIn::start().await;
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let mut c = askrelay_in(dir.path());
        c.args(args)
            .env(
                "ASKRELAY_DISCORD__TOKEN",
                "MTE4MDAwMDAwMDAwMDAwMDAwMQ.Gx1234.test-bot-token",
            )
            .env("ASKRELAY_DISCORD__API_BASE", &standin.base_url)
            .env("ASKRELAY_DISCORD__CHANNEL_ID", CHANNEL.to_string())
            .env("ASKRELAY_SOCKET_PATH", dir.path().join("s.sock"))
            .env(
                "ASKRELAY_DATABASE_URL",
                format!("sqlite://{}", dir.path().join("a.db").display()),
            )
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        c
    };
    let out = run(&["check-config"]).output().await.unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("token ok")
            && stdout.contains(&format!("channel ok: discord.channel_id = {CHANNEL}")),
        "{stdout}"
    );

    standin.set_channel_missing(CHANNEL);
    let out = run(&["check-config"]).output().await.unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("Unknown Channel")
            && !stderr.contains("MTE4MDAwMDAwMDAwMDAwMDAwMQ.Gx1234.test-bot-token"),
        "{stderr}"
    );

    let mut serve = run(&["serve"]).spawn().unwrap();
    let mut log = tokio::io::BufReader::new(serve.stderr.take().unwrap()).lines();
    let line = loop {
        let l = log
            .next_line()
            .await
            .unwrap()
            .expect("serve exited before connecting");
        assert!(
            !l.contains("MTE4MDAwMDAwMDAwMDAwMDAwMQ.Gx1234.test-bot-token"),
            "{l}"
        );
        if l.contains("connected to the Discord gateway") {
            break l;
        }
    };
    assert!(line.contains("bot=askrelay-test"), "{line}");
    serve.kill().await.unwrap();
}

/// First-wins does not depend on timing: eight settlements made from one snapshot of the pending
/// request (as eight clicks admitted from the same cached view would be), all at once, and
/// exactly one counts; each of the others learns who won.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settlements_from_one_stale_snapshot_count_once() {
    use askrelay::domain::{Actor, SettleOutcome, Settlement, Via};
    let app = App::discord().await;
    let (mut c, _) = app.ask("stale", &yes_no("q")).await;
    let snapshot = app.hub().request("stale").await.unwrap();
    let tries = (0..8).map(|i| {
        let (hub, req) = (app.hub().clone(), snapshot.clone());
        tokio::spawn(async move {
            let actor = Actor {
                via: Via::Discord,
                id: (7000 + i).to_string(),
                name: format!("racer{i}"),
                note: None,
            };
            let pick = Settlement::choice(i % 2);
            (i, hub.settle(&req, 0, pick, actor).await.unwrap())
        })
    });
    let outcomes: Vec<_> = futures_util::future::join_all(tries)
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let won: Vec<usize> = outcomes
        .iter()
        .filter(|(_, s)| matches!(s.outcome, SettleOutcome::Won { .. }))
        .map(|(i, _)| *i)
        .collect();
    assert_eq!(won.len(), 1, "{outcomes:#?}");
    for (_, s) in outcomes.iter().filter(|(i, _)| *i != won[0]) {
        match &s.outcome {
            SettleOutcome::AlreadyAnswered(a) => {
                assert_eq!(a.actor.id, (7000 + won[0]).to_string())
            }
            SettleOutcome::Ended(status) => assert_eq!(status.as_str(), "answered"),
            other => panic!("a loser got {other:?}"),
        }
    }
    let ev = expect_event(&mut c, "answered").await;
    let labels = ["Yes, delete them (Recommended)", "No, keep them"];
    assert_eq!(
        ev["result"]["answers"][0]["selected"],
        json!([labels[won[0] % 2]])
    );
}

/// A copy of a question's message that the bot posted but never recorded (a cluster leader
/// frozen or cut off between its post and the record, whose successor posted the question
/// again without Discord's nonce de-duplication) answers like the recorded message; a message
/// by another author with the same controls does not.
#[tokio::test]
async fn a_click_on_an_unrecorded_copy_by_the_bot_answers_and_one_by_another_author_does_not() {
    let app = App::discord().await;
    let (mut c, _) = app.ask("copy", &yes_no("copy")).await;
    let msg = app.messages(CHANNEL).remove(0);
    // The bot posts the same message again (no nonce): the store never hears of it.
    let body = serde_json::json!({
        "embeds": msg["embeds"],
        "components": msg["components"],
    });
    let url = format!(
        "{}/api/v10/channels/{CHANNEL}/messages",
        app.standin().base_url
    );
    let copy: Value = reqwest::Client::new()
        .post(&url)
        .header("Authorization", "Bot test")
        .header("Content-Type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap()
        .text()
        .await
        .map(|t| serde_json::from_str(&t).unwrap())
        .unwrap();
    assert_ne!(copy["id"], msg["id"]);

    // The same controls on a message by someone else are refused.
    let mut forged = copy.clone();
    forged["id"] = serde_json::json!("1577000000000000001");
    forged["author"]["id"] = serde_json::json!("4242424242");
    let cb = app
        .click(
            &forged,
            &alice(),
            &control(&msg, "Yes, delete them (Recommended)"),
        )
        .await;
    assert!(is_ephemeral(&cb), "{cb}");

    let cb = app
        .click(
            &copy,
            &alice(),
            &control(&msg, "Yes, delete them (Recommended)"),
        )
        .await;
    assert_eq!(cb["type"], 7, "{cb}");
    let answered = expect_event(&mut c, "answered").await;
    assert_eq!(
        answered["result"]["answers"][0]["selected"][0], "Yes, delete them (Recommended)",
        "{answered}"
    );
    // The update edited the copy; the recorded message is edited too, not left asking.
    let edit = app.edit_of(&msg).await;
    assert_eq!(edit["components"], json!([]), "{edit}");
    app.assert_payloads_valid();
}
