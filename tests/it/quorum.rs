//! Approval policy on a route: a quorum of distinct people (`approvals`), decisive labels that
//! settle alone, and the person who asked refused (`exclude_requester`, `[[identities]]`), on
//! Discord clicks and terminal answers alike.

use crate::harness::*;
use askrelay::config::{Config, IdentityConfig, Route, Snowflake};
use askrelay_testkit::fixtures::Clicker;
use serde_json::{json, Value};

/// Carol's Discord id: in the tests' identity, the same person as the local user who asks.
const CAROL: u64 = 4545;

fn carol() -> Clicker {
    Clicker::new(CAROL, "carol", &[])
}

/// Every request goes to a route that needs two approvals; terminals may answer there.
pub(crate) fn two_approvals(exclude_requester: Option<bool>) -> impl FnOnce(&mut Config) {
    move |c: &mut Config| {
        let mut r = Route::new("prod", CHANNEL);
        r.approvals = Some(2);
        r.terminal_answers = Some(true);
        r.exclude_requester = exclude_requester;
        c.routes.push(r);
        c.identities.push(IdentityConfig {
            name: "carol".into(),
            uids: vec![nix::unistd::geteuid().as_raw()],
            hosts: Vec::new(),
            discord_user_ids: vec![Snowflake(CAROL)],
            sessions: Vec::new(),
            ..Default::default()
        });
    }
}

pub(crate) fn allow_deny() -> Value {
    json!({"questions": [{
        "id": "permission",
        "question": "Run `terraform apply` in prod?",
        "header": "Approve",
        "options": [{"label": "Allow"}, {"label": "Deny"}],
        "multiSelect": false
    }]})
}

fn description(message: &Value) -> String {
    message["embeds"][0]["description"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Bob's vote for Allow on the first question of request `id`, through `via` as user `bob_id`,
/// as a vote whose caller gave up on the database after the commit leaves it: stored with its
/// audit row (by the store's compare-and-swap on the votes read now), and nothing settled.
pub(crate) async fn store_unsettled_vote(
    app: &App,
    id: &str,
    via: askrelay::domain::Via,
    bob_id: &str,
) {
    use askrelay::domain::request::{AuditAction, AuditEntry, Source};
    use askrelay::domain::vote::Vote;
    let req = app.store().by_id(id).await.unwrap().unwrap();
    let old = serde_json::to_string(&req.votes[0]).unwrap();
    let person = format!("{}:{bob_id}", via.as_str());
    let mut votes = req.votes[0].clone();
    votes.push(Vote {
        person: person.clone(),
        via: via.as_str().into(),
        id: bob_id.into(),
        name: "bob".into(),
        selected: vec![0],
        custom: None,
        at_ms: askrelay::domain::clock::now_ms(),
        terms: None,
    });
    let audit_row = AuditEntry {
        request_key: Some(req.key),
        request_id: Some(req.request_id.clone()),
        question_idx: Some(0),
        source: Source::from(via),
        actor: Some(format!("{person} name=bob")),
        action: AuditAction::Vote,
        detail: Some("Allow (2 of 2)".into()),
        accepted: true,
    };
    let swapped = app
        .store()
        .vote(
            req.key,
            0,
            Some(&old),
            &serde_json::to_string(&votes).unwrap(),
            &audit_row,
        )
        .await
        .unwrap();
    assert!(swapped, "the vote was stored");
}

pub(crate) async fn audit(app: &App, action: &str) -> Vec<askrelay::domain::request::AuditRow> {
    app.store()
        .audit_rows(None)
        .await
        .unwrap()
        .into_iter()
        .filter(|r| r.action == action)
        .collect()
}

#[tokio::test]
async fn two_people_reach_the_quorum_and_one_vote_does_not_settle() {
    let app = App::discord_with(two_approvals(None)).await;
    let (mut c, _) = app.ask("q-1", &allow_deny()).await;
    let msg = app.messages(CHANNEL)[0].clone();
    // Free text would decide alone; this route does not allow that, so it is not offered.
    let labels: Vec<String> = controls(&msg).into_iter().map(|(_, l)| l).collect();
    assert_eq!(labels, ["Allow", "Deny"], "{msg}");

    let cb = app.press(&msg, &alice(), "Allow").await;
    assert_eq!(cb["type"], 7, "the clicked message shows the vote: {cb}");
    let shown = cb["data"]["embeds"][0]["description"].as_str().unwrap();
    assert!(
        shown.contains("**Approvals: 1 of 2** · alice: Allow"),
        "{shown}"
    );
    assert!(
        !cb["data"]["components"].as_array().unwrap().is_empty(),
        "still open: {cb}"
    );
    // The same choice again is not a second vote.
    let again = app.press(&msg, &alice(), "Allow").await;
    assert!(
        is_ephemeral(&again) && ephemeral(&again).contains("already voted"),
        "{again}"
    );
    assert!(
        app.hub().observe("q-1").is_some(),
        "one vote does not settle"
    );

    let done = app.press(&msg, &bob(), "Allow").await;
    assert_eq!(done["type"], 7, "{done}");
    assert!(final_state(&done)["components"]
        .as_array()
        .is_none_or(|c| c.is_empty()));
    let answered = expect_event(&mut c, "answered").await;
    assert_eq!(
        answered["result"]["answers"][0]["selected"],
        json!(["Allow"]),
        "{answered}"
    );
    // Every vote is audited, and the settlement names both voters.
    assert_eq!(audit(&app, "vote").await.len(), 2, "both votes");
    let settled = audit(&app, "answer").await;
    let detail = settled.last().unwrap().detail.clone().unwrap_or_default();
    assert!(
        detail.contains("voters: discord:4242 name=alice, discord:4343 name=bob"),
        "{detail}"
    );
    app.assert_payloads_valid();
}

#[tokio::test]
async fn a_deny_decides_alone_and_a_changed_vote_counts_once() {
    let app = App::discord_with(two_approvals(None)).await;
    let (mut c, _) = app.ask("q-2", &allow_deny()).await;
    let msg = app.messages(CHANNEL)[0].clone();
    let cb = app.press(&msg, &alice(), "Allow").await;
    assert!(description(&cb["data"]).contains("1 of 2"), "{cb}");
    // Alice changes her mind: Deny decides with one vote.
    let cb = app.press(&msg, &alice(), "Deny").await;
    assert_eq!(cb["type"], 7, "{cb}");
    let answered = expect_event(&mut c, "answered").await;
    assert_eq!(
        answered["result"]["answers"][0]["selected"],
        json!(["Deny"]),
        "{answered}"
    );
    app.assert_payloads_valid();
}

#[tokio::test]
async fn the_requester_is_refused_on_discord_and_at_the_terminal() {
    let app = App::discord_with(two_approvals(None)).await;
    let (mut c, _) = app.ask("q-3", &allow_deny()).await;
    let msg = app.messages(CHANNEL)[0].clone();
    // Carol is the local user who asked (her identity maps this uid to her Discord id).
    let cb = app.press(&msg, &carol(), "Allow").await;
    assert!(
        is_ephemeral(&cb) && ephemeral(&cb).contains("another person must answer it"),
        "{cb}"
    );
    // So is a Deny, and so is the same account at a terminal.
    let cb = app.press(&msg, &carol(), "Deny").await;
    assert!(is_ephemeral(&cb), "{cb}");
    let reply = app.answer("q-3", "permission", &["Allow"]).await;
    assert_eq!(reply["code"], "FORBIDDEN", "{reply}");
    let refused = audit(&app, "forbidden").await;
    assert_eq!(refused.len(), 3, "{refused:?}");
    assert!(refused.iter().all(|r| !r.accepted));
    // Others still settle it.
    app.press(&msg, &alice(), "Deny").await;
    let answered = expect_event(&mut c, "answered").await;
    assert_eq!(
        answered["result"]["answers"][0]["selected"],
        json!(["Deny"])
    );
}

/// The case: a single daemon, and an identity that names this host in `hosts`. The
/// requests of a single daemon carry no node name, so the identity never matched, and the
/// requester's own click counted as a vote ("Approvals: 2 of 2 · bob · alice").
#[tokio::test]
async fn an_identity_with_this_hosts_name_is_the_requester_on_a_single_daemon() {
    let app = App::discord_with(|c: &mut Config| {
        two_approvals(None)(c);
        c.identities[0].hosts = vec![c.cluster.node()];
    })
    .await;
    let (mut c, _) = app.ask("q-hosts", &allow_deny()).await;
    let msg = app.messages(CHANNEL)[0].clone();
    app.press(&msg, &alice(), "Allow").await;
    let cb = app.press(&msg, &carol(), "Allow").await;
    assert!(
        is_ephemeral(&cb) && ephemeral(&cb).contains("another person must answer it"),
        "the requester's click must be refused, not counted: {cb}"
    );
    assert!(app.hub().observe("q-hosts").is_some(), "still pending");
    let reply = app.answer("q-hosts", "permission", &["Allow"]).await;
    assert_eq!(reply["code"], "FORBIDDEN", "{reply}");
    app.press(&msg, &Clicker::new(7777, "dave", &[]), "Allow")
        .await;
    let answered = expect_event(&mut c, "answered").await;
    assert_eq!(
        answered["result"]["answers"][0]["selected"],
        json!(["Allow"])
    );
    let voters = audit(&app, "answer").await;
    let detail = voters[0].detail.clone().unwrap_or_default();
    assert!(!detail.contains("carol"), "{detail}");
}

/// A route without a Discord channel is answered from the terminal, under its own policy: no
/// token needed (a terminal-only quorum once needed a fake one), the request keeps its route,
/// the requester is refused, and a vote waits for the quorum instead of settling.
#[tokio::test]
async fn a_terminal_only_route_applies_its_policy_at_the_terminal() {
    let terminal_route = |exclude_requester: Option<bool>| {
        move |c: &mut Config| {
            two_approvals(exclude_requester)(c);
            let r = &mut c.routes[0];
            r.channel_id = None;
            r.terminal_answers = None;
            r.matches.insert("project".into(), "prod-*".into());
        }
    };
    // The same keys as TOML: a route without channel_id loads (no [discord] at all).
    let toml = "[[routes]]\nname = \"prod\"\nmatch = { project = \"prod-*\" }\napprovals = 2\n";
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("c.toml"), toml).unwrap();
    let loaded = Config::load_from(Some(&dir.path().join("c.toml")), Vec::new()).unwrap();
    assert_eq!(loaded.routes[0].channel_id, None);

    let app = App::start_with(terminal_route(None)).await;
    let mut line = ask_line("t-1", &allow_deny());
    line["scope"] = json!({"project": "prod-eu"});
    let mut c = app.client().await;
    c.send_json(&line).await.unwrap();
    let accepted = expect_event(&mut c, "accepted").await;
    assert_eq!(accepted["answerer"], "terminal", "{accepted}");
    let pending = app
        .client()
        .await
        .call_json(&json!({"op": "pending"}))
        .await
        .unwrap();
    assert_eq!(pending["requests"][0]["route"], "prod", "{pending}");
    // The requester (this uid, carol's identity) is refused.
    let reply = app.answer("t-1", "permission", &["Allow"]).await;
    assert_eq!(reply["code"], "FORBIDDEN", "{reply}");
    assert!(app.hub().observe("t-1").is_some(), "still pending");

    // Where the requester may vote, a vote is one of two: it does not settle alone.
    let app = App::start_with(terminal_route(Some(false))).await;
    let mut line = ask_line("t-2", &allow_deny());
    line["scope"] = json!({"project": "prod-eu"});
    let mut c = app.client().await;
    c.send_json(&line).await.unwrap();
    expect_event(&mut c, "accepted").await;
    let reply = app.answer("t-2", "permission", &["Allow"]).await;
    assert_eq!(reply["votes"], json!({"count": 1, "needed": 2}), "{reply}");
    assert_eq!(reply["request_answered"], false, "{reply}");
    assert!(app.hub().observe("t-2").is_some(), "still pending");
    // A request no route matches is first-wins at the terminal, as before.
    let (mut other, _) = app.ask("t-3", &allow_deny()).await;
    let reply = app.answer("t-3", "permission", &["Deny"]).await;
    assert_eq!(reply["request_answered"], true, "{reply}");
    expect_event(&mut other, "answered").await;
}

/// A route without a channel needs the terminal on, and takes none of Discord's keys.
#[test]
fn a_terminal_only_route_needs_the_terminal_and_no_discord_keys() {
    let load = |toml: &str| {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("c.toml"), toml).unwrap();
        Config::load_from(Some(&dir.path().join("c.toml")), Vec::new())
            .map(|_| ())
            .map_err(|e| format!("{e:#}"))
    };
    let err =
        load("[terminal]\nenabled = false\n[[routes]]\nname = \"p\"\napprovals = 2\n").unwrap_err();
    assert!(
        err.contains("routes[0].channel_id: not set, and the terminal answerer is off"),
        "{err}"
    );
    let err = load("[[routes]]\nname = \"p\"\nmention_role_ids = [5]\n").unwrap_err();
    assert!(
        err.contains("routes[0].mention_role_ids: is for a Discord channel"),
        "{err}"
    );
    load("[[routes]]\nname = \"p\"\napprovals = 2\nexclude_requester = true\n").unwrap();
}

#[tokio::test]
async fn a_discord_vote_and_a_terminal_vote_reach_the_quorum_together() {
    // The requester may answer here (exclude_requester = false): the terminal is a second
    // person beside alice.
    let app = App::discord_with(two_approvals(Some(false))).await;
    let (mut c, _) = app.ask("q-4", &allow_deny()).await;
    let msg = app.messages(CHANNEL)[0].clone();
    let reply = app.answer("q-4", "permission", &["Allow"]).await;
    assert_eq!(reply["event"], "answer_accepted", "{reply}");
    assert_eq!(reply["votes"], json!({"count": 1, "needed": 2}), "{reply}");
    assert_eq!(reply["request_answered"], false);
    // The message shows the terminal's vote.
    let edited = within("the message to show the vote", async {
        let mut seen = app.standin().subscribe();
        loop {
            let now = app.standin().message(id_of(&msg)).unwrap();
            if description(&now).contains("1 of 2") {
                return now;
            }
            seen.changed().await.unwrap();
        }
    })
    .await;
    assert!(description(&edited).contains("Approvals"), "{edited}");
    // Carol on Discord is the same person as the terminal: her Allow does not count twice.
    let cb = app.press(&msg, &carol(), "Allow").await;
    assert!(ephemeral(&cb).contains("already voted"), "{cb}");
    app.press(&msg, &alice(), "Allow").await;
    let answered = expect_event(&mut c, "answered").await;
    assert_eq!(
        answered["result"]["answers"][0]["selected"],
        json!(["Allow"])
    );
    app.assert_payloads_valid();
}

/// `askrelay answer --all --route R --select LABEL`: each request of the route is answered on
/// its own; one without that option is refused and said so; other routes are left alone.
#[tokio::test]
async fn a_batch_answers_each_request_of_the_route_and_names_the_refused_one() {
    let app = App::discord_with(|c: &mut Config| {
        let mut r = Route::new("prod", CHANNEL);
        r.matches.insert("project".into(), "prod".into());
        r.terminal_answers = Some(true);
        c.routes.push(r);
        c.discord.terminal_answers = true;
    })
    .await;
    let mut clients = Vec::new();
    for (id, input, project) in [
        ("b-1", allow_deny(), "prod"),
        ("b-2", allow_deny(), "prod"),
        ("b-3", yes_no("q"), "prod"),
        ("b-4", allow_deny(), "staging"),
    ] {
        let mut line = ask_line(id, &input);
        line["scope"] = json!({ "project": project });
        let mut c = app.client().await;
        c.send_json(&line).await.unwrap();
        expect_event(&mut c, "accepted").await;
        clients.push(c);
    }
    let bin = Bin::new().env("ASKRELAY_SOCKET_PATH", app.socket().display());
    // Without a terminal to confirm on, nothing is answered.
    let (code, _, err) = bin
        .run(&["answer", "--all", "--route", "prod", "--select", "Deny"])
        .await;
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("3 request(s) on route prod") && err.contains("--yes"),
        "{err}"
    );
    let (code, out, err) = bin
        .run(&[
            "answer", "--all", "--route", "prod", "--select", "Deny", "--yes",
        ])
        .await;
    assert_eq!(code, 1, "one was refused: {out}{err}");
    assert!(out.contains("done     b-1: answered"), "{out}");
    assert!(out.contains("done     b-2: answered"), "{out}");
    assert!(
        out.contains("refused  b-3: ") && out.contains("no option"),
        "{out}"
    );
    assert!(!out.contains("b-4"), "another route: {out}");
    for c in &mut clients[..2] {
        let answered = expect_event(c, "answered").await;
        assert_eq!(
            answered["result"]["answers"][0]["selected"],
            json!(["Deny"])
        );
    }
    let (_, pending, _) = bin.run(&["pending", "--json"]).await;
    assert!(
        pending.contains("b-3") && pending.contains("b-4"),
        "{pending}"
    );
}

/// Two votes stored at the same moment (each from the request as it was before either): the
/// compare-and-swap makes the later one read the earlier and count it, so the quorum is
/// reached once, and no vote is lost.
#[tokio::test]
async fn votes_at_the_same_moment_are_both_counted() {
    use askrelay::domain::{Actor, SettleOutcome, Settlement, Via};
    let app = App::discord_with(two_approvals(Some(false))).await;
    let (mut c, _) = app.ask("q-5", &allow_deny()).await;
    let req = app.store().by_id("q-5").await.unwrap().unwrap();
    let hub = app.hub();
    let vote = |id: &str| {
        let actor = Actor {
            via: Via::Discord,
            id: id.into(),
            name: format!("voter {id}"),
            note: None,
        };
        hub.settle(&req, 0, Settlement::choice(0), actor)
    };
    let (a, b) = tokio::join!(vote("1"), vote("2"));
    let outcomes = [a.unwrap().outcome, b.unwrap().outcome];
    let won = outcomes
        .iter()
        .filter(|o| matches!(o, SettleOutcome::Won { .. }))
        .count();
    let voted = outcomes
        .iter()
        .filter(|o| matches!(o, SettleOutcome::Voted(_)))
        .count();
    assert_eq!((won, voted), (1, 1), "{outcomes:?}");
    let answered = expect_event(&mut c, "answered").await;
    assert_eq!(
        answered["result"]["answers"][0]["selected"],
        json!(["Allow"])
    );
    let stored = app.store().by_id("q-5").await.unwrap().unwrap();
    assert_eq!(stored.votes[0].len(), 2, "{:?}", stored.votes);
}

/// The real binary dies (SIGABRT) right after the vote that completes the quorum is stored and
/// before the question settles: the next start settles it, and the agent that re-attaches
/// gets the answer.
#[tokio::test]
async fn a_quorum_reached_before_a_crash_settles_at_the_next_start() {
    use askrelay_testkit::fixtures::{self, At};
    use askrelay_testkit::standin::StandIn;
    let standin = StandIn::start().await;
    let bin = Bin::new().discord(&standin);
    let config = bin.dir().join("quorum.toml");
    std::fs::write(
        &config,
        format!("[[routes]]\nname = \"prod\"\nchannel_id = \"{CHANNEL}\"\napprovals = 2\n"),
    )
    .unwrap();
    let config = config.display().to_string();
    let serve = |crash: Option<&str>| {
        let mut cmd = bin.cmd(&["serve", "--config", &config]);
        if let Some(p) = crash {
            cmd.env(askrelay::crash::ENV, p);
        }
        cmd
    };
    let crashing = bin.serve_cmd(serve(Some("quorum"))).await;
    let mut c = askrelay::client::Client::connect(&bin.socket())
        .await
        .unwrap();
    c.send_json(&ask_line("q-6", &allow_deny())).await.unwrap();
    expect_event(&mut c, "accepted").await;
    let m = within("the question to be posted", async {
        let mut seen = standin.subscribe();
        loop {
            if let Some(m) = standin.messages_in(CHANNEL).first() {
                return m.clone();
            }
            seen.changed().await.unwrap();
        }
    })
    .await;
    let at = At {
        application_id: standin.application_id(),
        guild_id: Some(standin.guild_id()),
        channel_id: CHANNEL,
        message_id: id_of(&m),
    };
    for (n, who) in [alice(), bob()].iter().enumerate() {
        let click = fixtures::component_click(90 + n as u64, &at, who, &control(&m, "Allow"));
        standin.send_interaction(click).await;
    }
    let (status, log) = crashing.finish().await;
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        status.signal(),
        Some(nix::sys::signal::Signal::SIGABRT as i32),
        "{log}"
    );
    let _daemon = bin.serve_cmd(serve(None)).await.drain();
    let mut c = askrelay::client::Client::connect(&bin.socket())
        .await
        .unwrap();
    c.send_json(&ask_line("q-6", &allow_deny())).await.unwrap();
    let answered = expect_event(&mut c, "answered").await;
    assert_eq!(
        answered["result"]["answers"][0]["selected"],
        json!(["Allow"])
    );
}

/// A vote that completes the quorum is committed, but its caller never heard back (the
/// database's reply was lost to a partition or a stall): nobody is clicking any more, and the
/// leader's repair pass settles it, so the agent is answered.
#[tokio::test]
async fn a_quorum_vote_stored_without_its_settlement_is_settled_by_the_repair_pass() {
    use askrelay::domain::Via;
    let app = App::discord_with(|c: &mut Config| {
        two_approvals(None)(c);
        c.discord.repair_interval_secs = 1;
    })
    .await;
    let (mut c, _) = app.ask("q-7", &allow_deny()).await;
    let msg = app.messages(CHANNEL)[0].clone();
    let cb = app.press(&msg, &alice(), "Allow").await;
    assert_eq!(cb["type"], 7, "{cb}");
    // Bob's vote, as a click whose call gave up after the commit leaves it.
    store_unsettled_vote(&app, "q-7", Via::Discord, "4343").await;
    let answered = expect_event(&mut c, "answered").await;
    assert_eq!(
        answered["result"]["answers"][0]["selected"],
        json!(["Allow"]),
        "{answered}"
    );
    let settled = audit(&app, "answer").await;
    let detail = settled.last().unwrap().detail.clone().unwrap_or_default();
    assert!(
        detail.contains("voters: discord:4242 name=alice, discord:4343 name=bob"),
        "{detail}"
    );
}
