//! The `/askrelay` slash command against the stand-in: registration (bulk overwrite, per guild or
//! global, the body checked against Discord's spec), and `pending`, `history` and `cancel`, each
//! with who may use it.

use crate::harness::*;
use askrelay::config::{Route, Snowflake};
use askrelay_testkit::fixtures::{self, At, Clicker};
use serde_json::{json, Value};
use std::collections::BTreeMap;

const INFRA: u64 = 321;
const OPERATOR_ROLE: u64 = 9_000;

fn operator() -> Clicker {
    Clicker::new(5_151, "olivia", &[OPERATOR_ROLE])
}

/// Runs `/askrelay sub` in `channel` as `who`; returns the callback body.
async fn slash(app: &App, channel: u64, who: &Clicker, sub: &str, options: Value) -> Value {
    let at = At {
        application_id: app.standin().application_id(),
        guild_id: Some(app.standin().guild_id()),
        channel_id: channel,
        message_id: 0,
    };
    let payload = fixtures::slash_command(app.next_id(), &at, who, "askrelay", sub, options);
    app.interact(payload).await
}

fn text(cb: &Value) -> String {
    cb["data"]["embeds"][0]["description"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

async fn app() -> App {
    App::discord_with(|c| {
        c.discord.allowed_user_ids = vec![Snowflake(4242)];
        c.discord.guild_ids = vec![Snowflake(999)];
        c.discord.operator_role_ids = vec![Snowflake(OPERATOR_ROLE)];
        c.routes.push(Route {
            matches: BTreeMap::from([("project".into(), "infra".into())]),
            allowed_user_ids: Some(vec![Snowflake(4343)]),
            ..Route::new("infra", INFRA)
        });
    })
    .await
}

#[tokio::test]
async fn the_command_is_registered_per_guild_by_bulk_overwrite() {
    let mut app = app().await;
    let put = within(
        "the command registration",
        app.standin()
            .wait_for_request(|r| r.method == "PUT" && r.path.ends_with("/guilds/999/commands")),
    )
    .await;
    assert_eq!(put.status, 200);
    let body = put.body.unwrap();
    assert_eq!(body[0]["name"], "askrelay");
    let subs: Vec<&str> = body[0]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].as_str().unwrap())
        .collect();
    assert_eq!(subs, ["pending", "cancel", "grants", "revoke", "history"]);
    // A restart registers the same body again: idempotent.
    app.restart().await;
    let puts = within(
        "the second registration",
        app.standin()
            .wait_for_requests(2, |r| r.method == "PUT" && r.path.ends_with("/commands")),
    )
    .await;
    assert_eq!(puts[0].body, puts[1].body);
    app.assert_payloads_valid();
}

#[tokio::test]
async fn without_guild_ids_it_is_registered_globally() {
    let app = App::discord().await;
    let put = within(
        "the command registration",
        app.standin().wait_for_request(|r| r.method == "PUT"),
    )
    .await;
    let app_id = app.standin().application_id();
    assert!(
        put.path
            .ends_with(&format!("/applications/{app_id}/commands")),
        "{}",
        put.path
    );
    app.assert_payloads_valid();
}

#[tokio::test]
async fn pending_lists_this_channel_or_every_channel_its_user_may_answer_in() {
    let app = app().await;
    let (_a, _) = app.ask("here-1", &yes_no("q")).await;
    let mut infra = ask_line("infra-1", &yes_no("q"));
    infra["scope"] = json!({"project": "infra"});
    let mut c = app.client().await;
    c.send_json(&infra).await.unwrap();
    expect_event(&mut c, "accepted").await;

    let cb = slash(&app, CHANNEL, &alice(), "pending", json!([])).await;
    assert_eq!(cb["type"], 4, "{cb}");
    assert_eq!(cb["data"]["flags"], 64, "private: {cb}");
    let list = text(&cb);
    assert!(shown(&list).contains("here-1"), "{list}");
    assert!(
        shown(&list).contains("Confirm: Proceed with the destructive cleanup?"),
        "{list}"
    );
    assert!(
        list.contains("[jump](https://discord.com/channels/"),
        "{list}"
    );
    assert!(
        !shown(&list).contains("infra-1"),
        "another channel's request: {list}"
    );
    // all: alice may not answer on infra, so she still does not see it; an operator does.
    let list = text(
        &slash(
            &app,
            CHANNEL,
            &alice(),
            "pending",
            json!([{"name": "all", "type": 5, "value": true}]),
        )
        .await,
    );
    assert!(!shown(&list).contains("infra-1"), "{list}");
    let list = text(
        &slash(
            &app,
            CHANNEL,
            &operator(),
            "pending",
            json!([{"name": "all", "type": 5, "value": true}]),
        )
        .await,
    );
    let list = shown(&list);
    assert!(
        list.contains("here-1") && list.contains("infra-1"),
        "{list}"
    );
    // Someone who may not answer here sees nothing, and it is audited.
    let cb = slash(
        &app,
        CHANNEL,
        &Clicker::new(1, "mallory", &[]),
        "pending",
        json!([]),
    )
    .await;
    assert!(text(&cb).contains("not allowed"), "{cb}");
    let audit = app.store().audit_rows(None).await.unwrap();
    let commands: Vec<_> = audit.iter().filter(|r| r.action == "command").collect();
    assert_eq!(commands.len(), 4, "{commands:?}");
    assert!(!commands[3].accepted && commands[3].actor.as_deref().unwrap().contains("mallory"));
    app.assert_payloads_valid();
}

#[tokio::test]
async fn cancel_is_for_operators_and_ends_the_request_with_the_reason() {
    let app = app().await;
    let (mut c, _) = app.ask("stuck", &yes_no("q")).await;
    let args = json!([
        {"name": "request", "type": 3, "value": "stuck"},
        {"name": "reason", "type": 3, "value": "the deploy window closed"}
    ]);
    // Allowed to answer is not allowed to cancel.
    let refused = slash(&app, CHANNEL, &alice(), "cancel", args.clone()).await;
    assert!(
        text(&refused).contains("Only askrelay operators"),
        "{refused}"
    );
    let done = slash(&app, CHANNEL, &operator(), "cancel", args).await;
    assert!(text(&done).contains("cancelled"), "{done}");
    let ev = recv(&mut c, "the cancellation").await;
    assert_eq!(ev["code"], "ABORTED", "{ev}");
    assert!(
        ev["message"]
            .as_str()
            .unwrap()
            .contains("the deploy window closed"),
        "{ev}"
    );
    let msg = app.messages(CHANNEL).remove(0);
    let edit = app.edit_of(&msg).await;
    assert_eq!(edit["components"], json!([]));
    assert!(edit.to_string().contains("Cancelled"), "{edit}");
    // Cancelling again says it has ended.
    let again = slash(
        &app,
        CHANNEL,
        &operator(),
        "cancel",
        json!([{"name": "request", "type": 3, "value": "stuck"}]),
    )
    .await;
    assert!(text(&again).contains("already ended"), "{again}");
    let audit = app.store().audit_rows(None).await.unwrap();
    assert!(
        audit.iter().any(|r| r.action == "cancelled"
            && r.source == "discord"
            && r.actor.as_deref().unwrap().contains("olivia")),
        "{audit:?}"
    );
    app.assert_payloads_valid();
}

#[tokio::test]
async fn history_shows_who_answered_what_and_how_long_it_took() {
    let app = app().await;
    for id in ["h1", "h2", "h3"] {
        let (mut c, _) = app.ask(id, &yes_no("q")).await;
        let msg = app.messages(CHANNEL).pop().unwrap();
        app.press(&msg, &alice(), "No, keep them").await;
        expect_event(&mut c, "answered").await;
    }
    let cb = slash(
        &app,
        CHANNEL,
        &alice(),
        "history",
        json!([{"name": "n", "type": 4, "value": 2}]),
    )
    .await;
    let list = shown(&text(&cb));
    assert!(
        list.contains("h3") && list.contains("h2") && !list.contains("h1"),
        "{list}"
    );
    assert!(list.contains("by <@4242>: No, keep them"), "{list}");
    assert!(list.contains("after "), "{list}");
    app.assert_payloads_valid();
}

/// An answer that takes longer than 2 s (here: another connection holds the database's write
/// lock, which the command's audit row waits for) is deferred first, within Discord's 3 s, and
/// edited in once it is ready.
#[tokio::test]
async fn a_slow_answer_is_deferred_then_edited_in() {
    use sqlx::{Connection, Executor};
    let app = app().await;
    let (_c, _) = app.ask("slow", &yes_no("q")).await;
    // Another connection holds the write lock: the command's audit row waits (busy_timeout).
    let mut other = sqlx::SqliteConnection::connect(&app.config.database_url)
        .await
        .unwrap();
    other.execute("BEGIN IMMEDIATE").await.unwrap();
    let at = At {
        application_id: app.standin().application_id(),
        guild_id: Some(app.standin().guild_id()),
        channel_id: CHANNEL,
        message_id: 0,
    };
    let id = app.next_id();
    let payload = fixtures::slash_command(id, &at, &alice(), "askrelay", "pending", json!([]));
    let deferred = interact_on(app.standin(), payload).await;
    assert_eq!(deferred["type"], 5, "{deferred}");
    assert_eq!(deferred["data"]["flags"], 64);
    other.execute("COMMIT").await.unwrap();
    drop(other);
    let edit = original_edit(app.standin(), &id.to_string(), "the answer edited in").await;
    let body = edit.body.unwrap();
    assert!(
        body["embeds"][0]["description"]
            .as_str()
            .unwrap()
            .contains("slow"),
        "{body}"
    );
    app.assert_payloads_valid();
}

/// Agent text in a listing is inert wherever it sits: a request id, an agent id and a scope
/// value with backticks in them used to close the code span askrelay put the id in, and what
/// followed was live.
#[tokio::test]
async fn an_id_with_a_backtick_cannot_break_out_of_a_listing() {
    let app = app().await;
    let evil = "` [Open the runbook](https://evil.example) <@&123456789012345678> `";
    let id = format!("x{evil}");
    let mut line = ask_line(&id, &yes_no("q"));
    line["caller"] = json!({"agent_id": format!("a{evil}")});
    line["scope"] = json!({"team": evil});
    let mut c = app.client().await;
    c.send_json(&line).await.unwrap();
    expect_event(&mut c, "accepted").await;
    let words = ["evil", "runbook", "1234567"];
    let all = json!([{"name": "all", "type": 5, "value": true}]);
    for (who, options) in [
        (alice(), json!([])),
        (alice(), all.clone()),
        (operator(), all.clone()),
    ] {
        let cb = slash(&app, CHANNEL, &who, "pending", options).await;
        assert_markup_is_ours(&cb, &words, &[]);
        // The id reads as it is, so that it can be copied into `/askrelay cancel`.
        let shown = askrelay_testkit::discord_markdown::parse(&text(&cb)).display;
        assert!(shown.contains(&id), "{shown}");
    }
    let done = slash(
        &app,
        CHANNEL,
        &operator(),
        "cancel",
        json!([{"name": "request", "type": 3, "value": id},
               {"name": "reason", "type": 3, "value": format!("stop {evil}")}]),
    )
    .await;
    assert!(text(&done).contains("cancelled"), "{done}");
    assert_markup_is_ours(&done, &words, &[]);
    expect_event(&mut c, "error").await;
    let history = slash(&app, CHANNEL, &alice(), "history", json!([])).await;
    assert!(
        askrelay_testkit::discord_markdown::parse(&text(&history))
            .display
            .contains(&id),
        "{history}"
    );
    assert_markup_is_ours(&history, &words, &[]);
    app.assert_payloads_valid();
}

const PRIVATE: u64 = 654;
const PRIVATE_ESCALATION: u64 = 655;

/// A route without an allowlist that posts in a private channel: anyone who can read that
/// channel may answer there, and nobody else may see its requests. They used to be listed in
/// every channel to anyone running `pending all:true` or `history`.
#[tokio::test]
async fn a_route_is_listed_only_in_the_channels_it_posts_in() {
    let app = App::discord_with(|c| {
        c.discord.guild_ids = vec![Snowflake(999)];
        c.discord.operator_role_ids = vec![Snowflake(OPERATOR_ROLE)];
        c.routes.push(Route {
            matches: BTreeMap::from([("project".into(), "secret".into())]),
            escalate: Some(vec![askrelay::config::EscalationStep {
                after_secs: 86_400,
                mention_role_ids: vec![],
                mention_user_ids: vec![],
                channel_id: Some(Snowflake(PRIVATE_ESCALATION)),
                dm_user_ids: vec![],
                allowed_role_ids: vec![],
                allowed_user_ids: vec![],
            }]),
            ..Route::new("secret", PRIVATE)
        });
    })
    .await;
    let mut secret = ask_line("secret-1", &yes_no("q"));
    secret["scope"] = json!({"project": "secret"});
    let mut s = app.client().await;
    s.send_json(&secret).await.unwrap();
    expect_event(&mut s, "accepted").await;
    let (mut p, _) = app.ask("public-1", &yes_no("q")).await;
    let all = json!([{"name": "all", "type": 5, "value": true}]);
    let pending = |channel: u64, who: Clicker, options: Value| {
        let app = &app;
        async move { text(&slash(app, channel, &who, "pending", options).await) }
    };

    // In the public channel: only the public route's request, with or without `all`.
    for options in [json!([]), all.clone()] {
        let list = pending(CHANNEL, alice(), options).await;
        assert!(list.contains("public"), "{list}");
        assert!(!list.contains("secret"), "the private route leaks: {list}");
    }
    // Where the private route posts (its channel, its escalation step's channel), its request.
    let list = pending(PRIVATE, alice(), json!([])).await;
    assert!(
        list.contains("secret") && !list.contains("public"),
        "{list}"
    );
    let list = pending(PRIVATE_ESCALATION, alice(), all.clone()).await;
    assert!(
        list.contains("secret") && !list.contains("public"),
        "{list}"
    );
    // Not escalated yet: nothing of it is shown in the escalation channel itself.
    let list = pending(PRIVATE_ESCALATION, alice(), json!([])).await;
    assert!(!list.contains("secret"), "{list}");
    // An operator sees every route's requests with `all`.
    let list = pending(CHANNEL, operator(), all.clone()).await;
    assert!(list.contains("secret") && list.contains("public"), "{list}");

    // History: the same rule, answers and answerers included.
    let msg = app.messages(PRIVATE).remove(0);
    app.press(&msg, &bob(), "No, keep them").await;
    expect_event(&mut s, "answered").await;
    let msg = app.messages(CHANNEL).remove(0);
    app.press(&msg, &alice(), "No, keep them").await;
    expect_event(&mut p, "answered").await;
    let history = |channel: u64, who: Clicker| {
        let app = &app;
        async move { text(&slash(app, channel, &who, "history", json!([])).await) }
    };
    let list = history(CHANNEL, alice()).await;
    assert!(
        list.contains("public") && !list.contains("secret"),
        "{list}"
    );
    assert!(
        !list.contains("4343"),
        "the private route's answerer leaks: {list}"
    );
    let list = history(PRIVATE, alice()).await;
    assert!(
        list.contains("secret") && !list.contains("public"),
        "{list}"
    );
    let list = history(CHANNEL, operator()).await;
    assert!(list.contains("secret") && list.contains("public"), "{list}");
    app.assert_payloads_valid();
}
