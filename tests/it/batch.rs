//! Batches from Discord against the stand-in: `/askrelay pending` offers the approvals its user
//! may answer in a select menu; "Allow selected" and "Deny selected" settle each selected
//! request on its own, through a click's checks and the core's policy, and the reply names what
//! was done and what was refused, and why. The selection is kept in the (ephemeral) message, so
//! each interaction here carries the message as the daemon last left it.

use crate::harness::*;
use askrelay::client::Client;
use askrelay::config::{Config, IdentityConfig, Route, Snowflake};
use askrelay_testkit::fixtures::{self, At, Clicker};
use serde_json::{json, Value};
use std::collections::BTreeMap;

const INFRA: u64 = 321;
/// The id of the ephemeral `/askrelay pending` reply, as Discord would number it.
const LISTING: u64 = 777_000;

fn allow_deny() -> Value {
    json!({"questions": [{
        "id": "permission",
        "question": "Run `terraform apply` in prod?",
        "header": "Approve",
        "options": [{"label": "Allow"}, {"label": "Deny"}],
        "multiSelect": false
    }]})
}

/// Claude Code's permission request, as `askrelay hook` asks it.
fn allow_once() -> Value {
    json!({"questions": [{
        "id": "permission",
        "question": "Bash: rm -rf build",
        "header": "Permission",
        "options": [{"label": "Allow once"}, {"label": "Deny"}, {"label": "Deny and stop"}],
        "multiSelect": false
    }]})
}

fn at(app: &App, channel: u64) -> At {
    At {
        application_id: app.standin().application_id(),
        guild_id: Some(app.standin().guild_id()),
        channel_id: channel,
        message_id: LISTING,
    }
}

/// `/askrelay pending` in `channel` as `who`: the callback body.
async fn pending(app: &App, channel: u64, who: &Clicker) -> Value {
    let payload = fixtures::slash_command(
        app.next_id(),
        &at(app, channel),
        who,
        "askrelay",
        "pending",
        json!([]),
    );
    app.interact(payload).await
}

/// The ephemeral message a callback (a reply, or an update of it) leaves, with these
/// components.
fn listing_message(app: &App, channel: u64, components: &Value) -> Value {
    let mut m = fixtures::message_json(
        app.standin().application_id(),
        channel,
        LISTING,
        "",
        components.clone(),
    );
    m["flags"] = json!(64);
    m
}

/// A component interaction on the listing message (`components` as it stands).
fn on_listing(
    app: &App,
    channel: u64,
    who: &Clicker,
    components: &Value,
    custom_id: &str,
    values: Option<&[&str]>,
) -> Value {
    let mut p = match values {
        Some(v) => fixtures::select_values(app.next_id(), &at(app, channel), who, custom_id, v),
        None => fixtures::component_click(app.next_id(), &at(app, channel), who, custom_id),
    };
    p["message"] = listing_message(app, channel, components);
    p
}

/// The menu's options: (label, value).
fn options(components: &Value) -> Vec<(String, String)> {
    components[0]["components"][0]["options"]
        .as_array()
        .map(|o| {
            o.iter()
                .map(|o| {
                    (
                        o["label"].as_str().unwrap().to_owned(),
                        o["value"].as_str().unwrap().to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

async fn token(app: &App, request_id: &str) -> String {
    app.store().by_id(request_id).await.unwrap().unwrap().token
}

async fn status(app: &App, request_id: &str) -> String {
    app.store()
        .by_id(request_id)
        .await
        .unwrap()
        .unwrap()
        .status
        .as_str()
        .to_owned()
}

/// Asks on behalf of an agent, in `project` when given; the agent's connection.
async fn ask_in(app: &App, id: &str, input: &Value, project: Option<&str>) -> Client {
    let mut line = ask_line(id, input);
    if let Some(p) = project {
        line["scope"] = json!({ "project": p });
    }
    let mut c = app.client().await;
    c.send_json(&line).await.unwrap();
    expect_event(&mut c, "accepted").await;
    c
}

/// Selects `values` in the listing's menu; returns the components the update leaves.
async fn select(
    app: &App,
    channel: u64,
    who: &Clicker,
    components: &Value,
    values: &[&str],
) -> Value {
    let cb = app
        .interact(on_listing(
            app,
            channel,
            who,
            components,
            "ar:batch:pick",
            Some(values),
        ))
        .await;
    assert_eq!(cb["type"], 7, "the listing shows the selection: {cb}");
    cb["data"]["components"].clone()
}

fn selected_in(components: &Value) -> Vec<String> {
    components[0]["components"][0]["options"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["default"] == true)
        .map(|o| o["value"].as_str().unwrap().to_owned())
        .collect()
}

fn app_config(c: &mut Config) {
    c.discord.allowed_user_ids = vec![Snowflake(4242)];
    c.discord.guild_ids = vec![Snowflake(999)];
    c.routes.push(Route {
        matches: BTreeMap::from([("project".into(), "infra".into())]),
        allowed_user_ids: Some(vec![Snowflake(4343)]),
        ..Route::new("infra", INFRA)
    });
}

/// "Allow selected": two approvals (one in Claude Code's form) are allowed, their agents get
/// the answer and their messages show it; one answered meanwhile and one on a route alice may
/// not answer on (a selection the menu never offered her) are refused and named, with why.
#[tokio::test]
async fn allow_selected_settles_each_request_and_names_the_refused_ones() {
    let app = App::discord_with(app_config).await;
    let mut b1 = ask_in(&app, "b-1", &allow_deny(), None).await;
    let mut b2 = ask_in(&app, "b-2", &allow_once(), None).await;
    let mut b3 = ask_in(&app, "b-3", &allow_deny(), None).await;
    let _y = ask_in(&app, "y-1", &yes_no("q"), None).await;
    let _infra = ask_in(&app, "infra-1", &allow_deny(), Some("infra")).await;
    let messages = within("the questions posted", async {
        loop {
            let m = app.messages(CHANNEL);
            if m.len() == 4 {
                return m;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await;

    let cb = pending(&app, CHANNEL, &alice()).await;
    assert_eq!(cb["type"], 4, "{cb}");
    assert_eq!(cb["data"]["flags"], 64, "private: {cb}");
    let components = cb["data"]["components"].clone();
    let offered = options(&components);
    let labels: Vec<&str> = offered.iter().map(|(l, _)| l.as_str()).collect();
    assert_eq!(
        labels.len(),
        3,
        "only the approvals alice may answer: {labels:?}"
    );
    for (id, (label, value)) in ["b-1", "b-2", "b-3"].iter().zip(&offered) {
        assert!(label.starts_with(id), "{label}");
        assert_eq!(*value, token(&app, id).await);
    }
    let buttons: Vec<&str> = components[1]["components"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["label"].as_str().unwrap())
        .collect();
    assert_eq!(buttons, ["Allow selected", "Deny selected"]);

    let all: Vec<&str> = offered.iter().map(|(_, v)| v.as_str()).collect();
    let components = select(&app, CHANNEL, &alice(), &components, &all).await;
    assert_eq!(selected_in(&components), all);
    // Meanwhile b-3 is answered on its own message.
    let t3 = token(&app, "b-3").await;
    let b3_msg = messages
        .iter()
        .find(|m| m.to_string().contains(&t3))
        .unwrap()
        .clone();
    app.press(&b3_msg, &alice(), "Deny").await;
    expect_event(&mut b3, "answered").await;
    // A selection the menu never offered: infra-1, on a route alice may not answer on.
    let mut forged = components.clone();
    forged[0]["components"][0]["options"]
        .as_array_mut()
        .unwrap()
        .push(json!({"label": "infra-1", "value": token(&app, "infra-1").await, "default": true}));

    let cb = app
        .interact(on_listing(
            &app,
            CHANNEL,
            &alice(),
            &forged,
            "ar:batch:allow",
            None,
        ))
        .await;
    let reply = ephemeral(&cb).to_owned();
    let lines: Vec<String> = shown(&reply).lines().map(str::to_owned).collect();
    assert_eq!(lines[0], "Allow selected: 2 done, 2 refused.", "{reply}");
    assert_eq!(lines[1], "done · b-1 · allowed", "{reply}");
    assert_eq!(lines[2], "done · b-2 · allowed", "{reply}");
    assert!(
        lines[3].starts_with("refused · b-3 · Already answered by"),
        "{reply}"
    );
    assert!(
        lines[4].starts_with("refused · infra-1 · it is not one you are shown in this channel"),
        "{reply}"
    );
    for (c, label) in [(&mut b1, "Allow"), (&mut b2, "Allow once")] {
        let answered = expect_event(c, "answered").await;
        assert_eq!(
            answered["result"]["answers"][0]["selected"],
            json!([label]),
            "{answered}"
        );
    }
    assert_eq!(status(&app, "infra-1").await, "pending");
    assert_eq!(status(&app, "y-1").await, "pending");
    // Each settled message shows its answer, as after a click.
    let t1 = token(&app, "b-1").await;
    let b1_msg = messages
        .iter()
        .find(|m| m.to_string().contains(&t1))
        .unwrap();
    let edit = app.edit_of(b1_msg).await;
    assert_eq!(edit["components"], json!([]), "{edit}");
    assert!(shown_body(&edit).contains("Allow"), "{edit}");

    let audit = app.store().audit_rows(None).await.unwrap();
    let answers = audit
        .iter()
        .filter(|r| r.action == "answer" && r.accepted)
        .count();
    assert_eq!(answers, 3, "b-1, b-2 and b-3's click: {audit:?}");
    assert!(
        audit.iter().any(|r| r.action == "stale" && !r.accepted),
        "infra-1's refusal: {audit:?}"
    );
    assert!(
        audit.iter().any(|r| r.action == "late" && !r.accepted),
        "b-3's refusal: {audit:?}"
    );
    assert!(audit.iter().any(|r| r.action == "command"
        && r.accepted
        && r.detail
            .as_deref()
            .unwrap_or("")
            .contains("2 done, 2 refused")));
    app.assert_payloads_valid();
}

/// "Deny selected" on a route that excludes the requester: alice's own request is not offered,
/// and when it is selected anyway the core refuses it with its reason; the others are denied.
#[tokio::test]
async fn deny_selected_denies_each_and_the_requester_is_refused_by_the_core() {
    let app = App::discord_with(|c: &mut Config| {
        app_config(c);
        let mut r = Route::new("prod", CHANNEL);
        r.matches.insert("project".into(), "prod".into());
        r.allowed_user_ids = Some(vec![Snowflake(4242)]);
        r.exclude_requester = Some(true);
        c.routes.push(r);
        c.identities.push(IdentityConfig {
            name: "alice".into(),
            uids: vec![nix::unistd::geteuid().as_raw()],
            hosts: Vec::new(),
            discord_user_ids: vec![Snowflake(4242)],
            sessions: Vec::new(),
            ..Default::default()
        });
    })
    .await;
    let mut d1 = ask_in(&app, "d-1", &allow_deny(), None).await;
    let mut d2 = ask_in(&app, "d-2", &allow_once(), None).await;
    let _own = ask_in(&app, "own-1", &allow_deny(), Some("prod")).await;

    let cb = pending(&app, CHANNEL, &alice()).await;
    let components = cb["data"]["components"].clone();
    let offered: Vec<String> = options(&components).into_iter().map(|(_, v)| v).collect();
    assert_eq!(
        offered,
        [token(&app, "d-1").await, token(&app, "d-2").await],
        "not alice's own request: {components}"
    );
    let own = token(&app, "own-1").await;
    let mut forged = components.clone();
    forged[0]["components"][0]["options"]
        .as_array_mut()
        .unwrap()
        .push(json!({"label": "own-1", "value": own, "default": false}));
    let values: Vec<&str> = offered
        .iter()
        .map(String::as_str)
        .chain([own.as_str()])
        .collect();
    let components = select(&app, CHANNEL, &alice(), &forged, &values).await;
    let cb = app
        .interact(on_listing(
            &app,
            CHANNEL,
            &alice(),
            &components,
            "ar:batch:deny",
            None,
        ))
        .await;
    let reply = shown(ephemeral(&cb));
    assert!(
        reply.starts_with("Deny selected: 2 done, 1 refused."),
        "{reply}"
    );
    assert!(reply.contains("done · d-1 · denied"), "{reply}");
    assert!(reply.contains("done · d-2 · denied"), "{reply}");
    assert!(
        reply.contains("refused · own-1 · ") && reply.contains("another person must answer it"),
        "{reply}"
    );
    for c in [&mut d1, &mut d2] {
        let answered = expect_event(c, "answered").await;
        assert_eq!(
            answered["result"]["answers"][0]["selected"],
            json!(["Deny"])
        );
    }
    assert_eq!(status(&app, "own-1").await, "pending");
    let audit = app.store().audit_rows(None).await.unwrap();
    assert!(
        audit.iter().any(|r| r.action == "forbidden" && !r.accepted),
        "the core's refusal is audited: {audit:?}"
    );
    app.assert_payloads_valid();
}

/// The menu lists only what its user may answer: nothing (no controls) for a channel without
/// approvals, the infra approval to bob in the infra channel; and a button with nothing
/// selected answers nothing.
#[tokio::test]
async fn the_menu_lists_only_the_approvals_its_user_may_answer() {
    let app = App::discord_with(app_config).await;
    let _y = ask_in(&app, "y-1", &yes_no("q"), None).await;
    let _infra = ask_in(&app, "infra-1", &allow_deny(), Some("infra")).await;
    let cb = pending(&app, CHANNEL, &alice()).await;
    let list = cb["data"]["embeds"][0]["description"].as_str().unwrap();
    assert!(shown(list).contains("y-1"), "{cb}");
    assert!(
        cb["data"]["components"]
            .as_array()
            .is_none_or(|c| c.is_empty()),
        "no approval: no controls: {cb}"
    );
    let bob = Clicker::new(4343, "bob", &[]);
    let cb = pending(&app, INFRA, &bob).await;
    let components = cb["data"]["components"].clone();
    let offered = options(&components);
    assert_eq!(offered.len(), 1, "{components}");
    assert!(offered[0].0.starts_with("infra-1"), "{offered:?}");
    // Nothing selected yet.
    let cb = app
        .interact(on_listing(
            &app,
            INFRA,
            &bob,
            &components,
            "ar:batch:allow",
            None,
        ))
        .await;
    assert!(ephemeral(&cb).contains("Choose the requests"), "{cb}");
    assert_eq!(status(&app, "infra-1").await, "pending");
    app.assert_payloads_valid();
}

/// On a quorum route a batch's Allow is one vote per request, shown on each message; a
/// second person's "Deny selected" decides alone, as a click on Deny does.
#[tokio::test]
async fn on_a_quorum_route_allow_selected_votes_and_deny_selected_decides() {
    let app = App::discord_with(|c: &mut Config| {
        let mut r = Route::new("prod", CHANNEL);
        r.approvals = Some(2);
        r.exclude_requester = Some(false);
        c.routes.push(r);
    })
    .await;
    let mut q1 = ask_in(&app, "q-1", &allow_deny(), None).await;
    let mut q2 = ask_in(&app, "q-2", &allow_deny(), None).await;
    let cb = pending(&app, CHANNEL, &alice()).await;
    let components = cb["data"]["components"].clone();
    let values: Vec<String> = options(&components).into_iter().map(|(_, v)| v).collect();
    let values: Vec<&str> = values.iter().map(String::as_str).collect();
    assert_eq!(values.len(), 2, "{components}");
    let chosen = select(&app, CHANNEL, &alice(), &components, &values).await;
    let cb = app
        .interact(on_listing(
            &app,
            CHANNEL,
            &alice(),
            &chosen,
            "ar:batch:allow",
            None,
        ))
        .await;
    let reply = shown(ephemeral(&cb));
    assert!(
        reply.contains("done · q-1 · vote recorded, 1 of 2 approvals")
            && reply.contains("done · q-2 · vote recorded, 1 of 2 approvals"),
        "{reply}"
    );
    let msg = app.messages(CHANNEL)[0].clone();
    within("the message to show the vote", async {
        let mut seen = app.standin().subscribe();
        loop {
            let now = app.standin().message(id_of(&msg)).unwrap();
            if now.to_string().contains("1 of 2") {
                return;
            }
            seen.changed().await.unwrap();
        }
    })
    .await;
    assert_eq!(status(&app, "q-1").await, "pending");
    // Bob's Deny settles both at once.
    let cb = pending(&app, CHANNEL, &bob()).await;
    let components = cb["data"]["components"].clone();
    let chosen = select(&app, CHANNEL, &bob(), &components, &values).await;
    let cb = app
        .interact(on_listing(
            &app,
            CHANNEL,
            &bob(),
            &chosen,
            "ar:batch:deny",
            None,
        ))
        .await;
    let reply = shown(ephemeral(&cb));
    assert!(
        reply.starts_with("Deny selected: 2 done, 0 refused."),
        "{reply}"
    );
    for c in [&mut q1, &mut q2] {
        let answered = expect_event(c, "answered").await;
        assert_eq!(
            answered["result"]["answers"][0]["selected"],
            json!(["Deny"])
        );
    }
    app.assert_payloads_valid();
}

/// A batch that takes longer than 2 s is deferred (privately) and its reply edited in.
#[tokio::test]
async fn a_slow_batch_is_deferred_then_edited_in() {
    use sqlx::{Connection, Executor};
    if askrelay_testkit::scratch::on_postgres() {
        // The lock below is SQLite's.
        return;
    }
    let app = App::discord_with(app_config).await;
    let mut c = ask_in(&app, "s-1", &allow_deny(), None).await;
    let cb = pending(&app, CHANNEL, &alice()).await;
    let components = cb["data"]["components"].clone();
    let t = token(&app, "s-1").await;
    let chosen = select(&app, CHANNEL, &alice(), &components, &[t.as_str()]).await;
    // Another connection holds the write lock: the settlement waits (busy_timeout).
    let mut other = sqlx::SqliteConnection::connect(&app.config.database_url)
        .await
        .unwrap();
    other.execute("BEGIN IMMEDIATE").await.unwrap();
    let payload = on_listing(&app, CHANNEL, &alice(), &chosen, "ar:batch:allow", None);
    let id = payload["id"].as_str().unwrap().to_owned();
    let body = interact_on(app.standin(), payload).await;
    assert_eq!(body["type"], 5, "{body}");
    assert_eq!(body["data"]["flags"], 64, "{body}");
    other.execute("COMMIT").await.unwrap();
    drop(other);
    let edit = original_edit(app.standin(), &id, "the reply edited in").await;
    let body = edit.body.unwrap();
    assert!(
        shown(body["content"].as_str().unwrap()).contains("done · s-1 · allowed"),
        "{body}"
    );
    expect_event(&mut c, "answered").await;
    app.assert_payloads_valid();
}

/// A selection whose audit row waits behind another writer's lock longer than 2 s is
/// acknowledged first (a deferred update, type 6), and the listing then shows it through
/// `@original`, the interaction's own (ephemeral) message.
#[tokio::test]
async fn a_slow_selection_is_deferred_then_shown() {
    use sqlx::{Connection, Executor};
    if askrelay_testkit::scratch::on_postgres() {
        // The lock below is SQLite's.
        return;
    }
    let app = App::discord_with(app_config).await;
    let _c = ask_in(&app, "s-2", &allow_deny(), None).await;
    let cb = pending(&app, CHANNEL, &alice()).await;
    let components = cb["data"]["components"].clone();
    // The listing as the stand-in keeps it (the reply to /askrelay pending).
    let listing = app
        .messages(CHANNEL)
        .into_iter()
        .rev()
        .find(|m| m["flags"].as_u64().unwrap_or(0) & 64 == 64)
        .expect("the listing");
    let t = token(&app, "s-2").await;
    let mut other = sqlx::SqliteConnection::connect(&app.config.database_url)
        .await
        .unwrap();
    other.execute("BEGIN IMMEDIATE").await.unwrap();
    let mut payload = on_listing(
        &app,
        CHANNEL,
        &alice(),
        &components,
        "ar:batch:pick",
        Some(&[t.as_str()]),
    );
    payload["message"]["id"] = listing["id"].clone();
    let id = payload["id"].as_str().unwrap().to_owned();
    assert_eq!(interact_on(app.standin(), payload).await["type"], 6);
    other.execute("ROLLBACK").await.unwrap();
    drop(other);
    let edit = original_edit(app.standin(), &id, "the selection shown").await;
    assert_eq!(edit.status, 200, "{edit:?}");
    assert_eq!(selected_in(&edit.body.unwrap()["components"]), vec![t]);
    let audit = app.store().audit_rows(None).await.unwrap();
    assert!(
        audit.iter().any(|r| r.action == "draft" && r.accepted),
        "{audit:?}"
    );
    app.assert_payloads_valid();
}

/// Agent text in the menu (plain) and in the batch's reply (markdown) is inert.
#[tokio::test]
async fn agent_text_in_the_menu_and_the_reply_is_inert() {
    let app = App::discord_with(app_config).await;
    let evil = "` [Open the runbook](https://evil.example) <@&123456789012345678> @everyone `";
    let id = format!("x{evil}");
    let mut line = ask_line(&id, &allow_deny());
    line["caller"] = json!({"agent_id": format!("a{evil}")});
    let mut c = app.client().await;
    c.send_json(&line).await.unwrap();
    expect_event(&mut c, "accepted").await;
    let words = ["evil", "runbook", "1234567", "everyone"];
    let cb = pending(&app, CHANNEL, &alice()).await;
    assert_markup_is_ours(&cb, &words, &[]);
    let components = cb["data"]["components"].clone();
    let t = token(&app, &id).await;
    let chosen = select(&app, CHANNEL, &alice(), &components, &[t.as_str()]).await;
    let cb = app
        .interact(on_listing(
            &app,
            CHANNEL,
            &alice(),
            &chosen,
            "ar:batch:deny",
            None,
        ))
        .await;
    assert_markup_is_ours(&cb, &words, &[]);
    let reply = askrelay_testkit::discord_markdown::parse(ephemeral(&cb)).display;
    // It reads as written (`@everyone` gets a zero-width space after its `@`).
    assert!(
        reply.contains("done · x` [Open the runbook](https://evil.example) <@&123456789012345678>")
            && reply.ends_with("` · denied"),
        "{reply}"
    );
    expect_event(&mut c, "answered").await;
    app.assert_payloads_valid();
}

/// The selection is kept in the message, not in the daemon: a button pressed after a restart
/// answers what was selected before it.
#[tokio::test]
async fn a_selection_made_before_a_restart_is_answered_after_it() {
    let mut app = App::discord_with(app_config).await;
    let _c = ask_in(&app, "r-1", &allow_deny(), None).await;
    let cb = pending(&app, CHANNEL, &alice()).await;
    let components = cb["data"]["components"].clone();
    let t = token(&app, "r-1").await;
    let chosen = select(&app, CHANNEL, &alice(), &components, &[t.as_str()]).await;
    app.restart().await;
    let cb = app
        .interact(on_listing(
            &app,
            CHANNEL,
            &alice(),
            &chosen,
            "ar:batch:allow",
            None,
        ))
        .await;
    let reply = shown(ephemeral(&cb));
    assert!(reply.contains("done · r-1 · allowed"), "{reply}");
    assert_eq!(status(&app, "r-1").await, "answered");
    app.assert_payloads_valid();
}
