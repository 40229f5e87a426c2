//! Grants ("Allow for 30 min") and edit-then-approve, against the Discord stand-in: a grant
//! answers the same requester's matching requests at once, announced in one line, until it is
//! revoked; on a quorum route it needs the quorum; an approver's edited command reaches
//! Claude Code's hook output as `updatedInput`.

use crate::harness::*;
use askrelay::config::Route;
use askrelay_testkit::fixtures::{self, At};
use serde_json::{json, Value};
use std::process::Stdio;
use tokio::io::AsyncWriteExt;

/// Every request goes to a route that gives 30-minute grants and lets approvers edit.
fn grants(approvals: Option<u32>) -> impl FnOnce(&mut askrelay::config::Config) {
    move |c| {
        let mut r = Route::new("dev", CHANNEL);
        r.grant_durations = Some(vec!["30m".into(), "8h".into(), "2d".into()]);
        r.allow_edits = Some(true);
        r.approvals = approvals;
        r.exclude_requester = Some(false);
        c.routes.push(r);
    }
}

/// A Bash approval as the hook asks it, for `command` in session `session`.
fn approval(command: &str, session: &str) -> Value {
    json!({"questions": [{
        "id": "permission",
        "question": "Allow Bash?",
        "header": "Claude Code",
        "options": [{"label": "Allow"}, {"label": "Deny"}],
        "multiSelect": false
    }],
    "context": {"text": command, "approval": {"tool": "Bash", "command": command, "session": session}}})
}

/// Asks and reads the events until the final line (a request a grant answers may get no
/// `accepted`).
async fn ask_to_end(app: &App, request_id: &str, input: &Value) -> Value {
    let mut c = app.client().await;
    c.send_json(&ask_line(request_id, input)).await.unwrap();
    loop {
        let ev = recv(&mut c, "the ask's events").await;
        if ev["event"] != "accepted" {
            return ev;
        }
    }
}

/// The first question posted, once the stand-in has it.
async fn first_question(app: &App) -> Value {
    app.standin()
        .wait_for_request(|r| {
            r.method == "POST" && r.path.ends_with("/messages") && r.status == 200
        })
        .await;
    app.messages(CHANNEL)[0].clone()
}

fn labels(msg: &Value) -> Vec<String> {
    controls(msg).into_iter().map(|(_, l)| l).collect()
}

async fn revoke(app: &App, grant: &str) -> Value {
    app.client()
        .await
        .call_json(&json!({"op": "revoke_grant", "grant": grant}))
        .await
        .unwrap()
}

async fn live_grants(app: &App) -> Vec<Value> {
    let reply = app
        .client()
        .await
        .call_json(&json!({"op": "grants"}))
        .await
        .unwrap();
    reply["grants"].as_array().cloned().unwrap_or_default()
}

#[tokio::test]
async fn a_grant_answers_the_same_command_at_once_until_it_is_revoked() {
    let app = App::discord_with(grants(None)).await;
    let (mut c, _) = app.ask("g-1", &approval("cargo test", "s1")).await;
    let msg = app.messages(CHANNEL)[0].clone();
    assert_eq!(
        labels(&msg),
        // No Edit…: this approval's command is not marked editable by its front door.
        [
            "Allow",
            "Deny",
            "Allow for 30 min",
            "Allow for 8 h",
            "Allow for 2 days",
            "Allow matching…",
            "Other…"
        ],
        "{msg}"
    );
    let cb = app.press(&msg, &alice(), "Allow for 30 min").await;
    let shown = final_state(&cb)["embeds"][0]["fields"].to_string();
    assert!(shown.contains("Granted for 30 min"), "{shown}");
    let answered = expect_event(&mut c, "answered").await;
    // The result is the contract's: the grant is not in it.
    assert_eq!(
        answered["result"].to_string(),
        r#"{"answers":[{"id":"permission","selected":["Allow"]}]}"#
    );
    let listed = live_grants(&app).await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    let id = listed[0]["id"].as_str().unwrap().to_owned();
    assert_eq!(listed[0]["pattern"], "cargo test");
    assert_eq!(listed[0]["session"], "s1");

    // The same command from the same session: answered at once, and announced in one line.
    let second = ask_to_end(&app, "g-2", &approval("cargo test", "s1")).await;
    assert_eq!(second["event"], "answered", "{second}");
    assert_eq!(second["result"]["answers"][0]["selected"], json!(["Allow"]));
    app.standin()
        .wait_for_requests(2, |r| {
            r.method == "POST" && r.path.ends_with("/messages") && r.status == 200
        })
        .await;
    let line = app.messages(CHANNEL)[1].clone();
    let content = line["content"].as_str().unwrap_or_default();
    assert!(
        content.starts_with("**Allowed by grant** `g-") && content.contains("`cargo test`"),
        "{line}"
    );
    assert!(
        line["components"].as_array().is_none_or(|c| c.is_empty()),
        "an announcement has no buttons: {line}"
    );
    let audit = app.store().audit_rows(None).await.unwrap();
    assert!(
        audit.iter().any(|r| r.action == "answer"
            && r.source == "grant"
            && r.detail.as_deref().unwrap_or_default().contains(&id)),
        "the grant's answer is audited with its id"
    );

    // Another command, or another session: people are asked.
    for (rid, cmd, session) in [
        ("g-3", "cargo test; rm -rf ~", "s1"),
        ("g-4", "cargo test", "s2"),
    ] {
        let (_c, accepted) = app.ask(rid, &approval(cmd, session)).await;
        assert_eq!(accepted["event"], "accepted");
        assert!(app.hub().observe(rid).is_some(), "{rid} waits for a person");
    }

    // Revoked: the same command goes to people again.
    let r = revoke(&app, &id).await;
    assert_eq!(r["event"], "revoked", "{r}");
    assert!(live_grants(&app).await.is_empty());
    let again = revoke(&app, &id).await;
    assert_eq!(again["code"], "CONFLICT", "{again}");
    let (_c, _) = app.ask("g-5", &approval("cargo test", "s1")).await;
    assert!(app.hub().observe("g-5").is_some(), "no grant any more");
    assert!(audit_has(&app, "revoke").await);
    app.assert_payloads_valid();
}

async fn audit_has(app: &App, action: &str) -> bool {
    app.store()
        .audit_rows(None)
        .await
        .unwrap()
        .iter()
        .any(|r| r.action == action && r.accepted)
}

#[tokio::test]
async fn only_the_approver_or_an_operator_revokes_a_grant_from_discord() {
    let app = App::discord_with(|c| {
        grants(None)(c);
        c.discord.operator_user_ids = vec![askrelay::config::Snowflake(5151)];
    })
    .await;
    let (mut c, _) = app.ask("g-10", &approval("make lint", "s1")).await;
    let msg = app.messages(CHANNEL)[0].clone();
    // The third length: a grant's number is not an option (this question has two).
    final_state(&app.press(&msg, &alice(), "Allow for 2 days").await);
    expect_event(&mut c, "answered").await;
    let id = live_grants(&app).await[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let slash = |who: fixtures::Clicker, sub: &'static str, options: Value| {
        let at = At {
            application_id: app.standin().application_id(),
            guild_id: Some(app.standin().guild_id()),
            channel_id: CHANNEL,
            message_id: 0,
        };
        let payload = fixtures::slash_command(app.next_id(), &at, &who, "askrelay", sub, options);
        app.interact(payload)
    };
    let listed = slash(bob(), "grants", json!([])).await;
    let text = listed["data"]["embeds"][0]["description"].to_string();
    assert!(text.contains(&id) && text.contains("make lint"), "{listed}");
    // Bob neither approved it nor is an operator.
    let refused = slash(
        bob(),
        "revoke",
        json!([{"name": "grant", "type": 3, "value": id}]),
    )
    .await;
    let text = refused["data"]["embeds"][0]["description"].to_string();
    assert!(text.contains("or an operator may revoke"), "{refused}");
    assert_eq!(live_grants(&app).await.len(), 1);
    // Alice approved it.
    let done = slash(
        alice(),
        "revoke",
        json!([{"name": "grant", "type": 3, "value": id}]),
    )
    .await;
    let text = done["data"]["embeds"][0]["description"].to_string();
    assert!(text.contains("ended now"), "{done}");
    assert!(live_grants(&app).await.is_empty());
    app.assert_payloads_valid();
}

#[tokio::test]
async fn a_grant_on_a_quorum_route_needs_the_quorum() {
    let app = App::discord_with(grants(Some(2))).await;
    let (mut c, _) = app.ask("g-20", &approval("terraform plan", "s1")).await;
    let msg = app.messages(CHANNEL)[0].clone();
    let cb = app.press(&msg, &alice(), "Allow for 30 min").await;
    assert_eq!(cb["type"], 7, "a vote: {cb}");
    assert!(
        live_grants(&app).await.is_empty(),
        "one vote gives no grant"
    );
    // A plain Allow is another answer: it does not complete the grant's quorum.
    app.press(&msg, &bob(), "Allow").await;
    assert!(app.hub().observe("g-20").is_some());
    final_state(&app.press(&msg, &bob(), "Allow for 30 min").await);
    let answered = expect_event(&mut c, "answered").await;
    assert_eq!(
        answered["result"]["answers"][0]["selected"],
        json!(["Allow"])
    );
    let g = live_grants(&app).await;
    assert_eq!(g.len(), 1, "{g:?}");
    let approver = g[0]["approver"].as_str().unwrap();
    assert!(
        approver.contains("alice") && approver.contains("bob"),
        "{approver}"
    );
    let next = ask_to_end(&app, "g-21", &approval("terraform plan", "s1")).await;
    assert_eq!(next["event"], "answered", "{next}");
    app.assert_payloads_valid();
}

#[tokio::test]
async fn an_edited_command_reaches_claude_codes_hook_output() {
    let app = App::discord_with(grants(None)).await;
    let bin = Bin::new().env("ASKRELAY_SOCKET_PATH", app.socket().display());
    let event = json!({
        "session_id": "sess-7",
        "cwd": "/work/shop",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "rm -rf build/", "description": "Clean the build"},
        "tool_use_id": "toolu_e1"
    })
    .to_string();
    let mut hook = bin
        .cmd(&["hook", "claude-code"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = hook.stdin.take().unwrap();
    pipe.write_all(event.as_bytes()).await.unwrap();
    drop(pipe);
    let msg = first_question(&app).await;
    assert!(labels(&msg).contains(&"Edit…".to_owned()), "{msg}");
    let opened = app.press(&msg, &alice(), "Edit…").await;
    assert_eq!(opened["type"], 9, "a modal: {opened}");
    let prefilled = &opened["data"]["components"][0]["components"][0]["value"];
    assert_eq!(prefilled, "rm -rf build/", "{opened}");
    let modal = opened["data"]["custom_id"].as_str().unwrap().to_owned();
    let done = app
        .submit_modal(&msg, &alice(), &modal, "rm -rf build/cache")
        .await;
    let fields = final_state(&done)["embeds"][0]["fields"].to_string();
    assert!(
        fields.contains("Edited, then approved")
            && fields.contains("- rm -rf build/")
            && fields.contains("+ rm -rf build/cache"),
        "the message shows the diff: {fields}"
    );
    let out = within("the hook to exit", hook.wait_with_output())
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let v: Value = serde_json::from_str(stdout.trim()).unwrap();
    let d = &v["hookSpecificOutput"];
    assert_eq!(d["permissionDecision"], "allow", "{v}");
    assert_eq!(
        d["updatedInput"],
        json!({"command": "rm -rf build/cache", "description": "Clean the build"}),
        "{v}"
    );
    // The audit keeps both: the asked command in the ask's context, the approved one in the
    // answer.
    let audit = app.store().audit_rows(None).await.unwrap();
    assert!(
        audit.iter().any(|r| r.action == "answer"
            && r.detail
                .as_deref()
                .unwrap_or_default()
                .contains("rm -rf build/cache")),
        "the edited command is audited"
    );
    app.assert_payloads_valid();
}

#[tokio::test]
async fn a_grant_of_a_label_that_needs_the_word_asks_for_it_first() {
    let app = App::discord_with(|c| {
        grants(None)(c);
        c.routes[0].confirm_labels = Some(vec!["Allow".into()]);
        c.routes[0].confirm_word = Some("ship-it".into());
    })
    .await;
    let (mut c, _) = app.ask("g-30", &approval("make deploy", "s1")).await;
    let msg = app.messages(CHANNEL)[0].clone();
    let opened = app.press(&msg, &alice(), "Allow for 30 min").await;
    assert_eq!(opened["type"], 9, "the word is asked for: {opened}");
    assert_eq!(opened["data"]["title"], "Confirm: Allow for 30 min");
    assert!(live_grants(&app).await.is_empty());
    let modal = opened["data"]["custom_id"].as_str().unwrap().to_owned();
    let wrong = app.submit_modal(&msg, &alice(), &modal, "ship it").await;
    assert!(is_ephemeral(&wrong), "{wrong}");
    assert!(
        live_grants(&app).await.is_empty(),
        "a wrong word grants nothing"
    );
    final_state(&app.submit_modal(&msg, &alice(), &modal, "ship-it").await);
    expect_event(&mut c, "answered").await;
    assert_eq!(
        live_grants(&app).await.len(),
        1,
        "the word given, the grant is"
    );
    app.assert_payloads_valid();
}

#[tokio::test]
async fn a_grants_announcement_lands_after_a_discord_outage_and_is_never_edited() {
    let app = App::discord_with(|c| {
        grants(None)(c);
        c.discord.repair_interval_secs = 1;
        c.outbox_overdue_secs = 1;
    })
    .await;
    let (mut c, _) = app.ask("g-40", &approval("npm test", "s1")).await;
    let msg = app.messages(CHANNEL)[0].clone();
    final_state(&app.press(&msg, &alice(), "Allow for 30 min").await);
    expect_event(&mut c, "answered").await;
    let s = app.standin();
    // Discord refuses the next posts: the grant still answers at once.
    s.fail_next(
        "POST",
        "/messages",
        askrelay_testkit::standin::Failure::Status(503),
        6,
    );
    let answered = ask_to_end(&app, "g-41", &approval("npm test", "s1")).await;
    assert_eq!(answered["event"], "answered", "{answered}");
    // The repair loop posts the announcement once Discord takes it.
    s.wait_for_requests(2, |r| {
        r.method == "POST" && r.path.ends_with("/messages") && r.status == 200
    })
    .await;
    let line = app.messages(CHANNEL)[1].clone();
    assert!(
        line["content"]
            .as_str()
            .unwrap_or_default()
            .starts_with("**Allowed by grant**"),
        "{line}"
    );
    // Nothing is left due: the announcement is final as posted.
    let mut op = app.client().await;
    // (Each look is a round trip to the daemon; the post is recorded just after Discord took it.)
    within("no overdue outbox work", async {
        while op.call_json(&json!({"op": "health"})).await.unwrap()["outbox"]["overdue"] != 0 {}
    })
    .await;
    let id = line["id"].as_str().unwrap();
    assert!(
        !s.requests()
            .iter()
            .any(|r| r.method == "PATCH" && r.path.ends_with(&format!("/messages/{id}"))),
        "an announcement is never edited"
    );
    app.assert_payloads_valid();
}

#[tokio::test]
async fn a_grant_pattern_is_shown_before_it_is_saved_and_then_covers_matching_commands() {
    let app = App::discord_with(grants(None)).await;
    let (mut c, _) = app.ask("g-50", &approval("cargo test -p core", "s1")).await;
    let msg = app.messages(CHANNEL)[0].clone();
    let opened = app.press(&msg, &alice(), "Allow matching…").await;
    assert_eq!(opened["type"], 9, "{opened}");
    let inputs = &opened["data"]["components"];
    assert_eq!(inputs[0]["components"][0]["value"], "cargo test -p core");
    assert_eq!(inputs[1]["components"][0]["value"], "30m");
    let modal = opened["data"]["custom_id"].as_str().unwrap().to_owned();
    let submit = |pattern: &str, length: &str| {
        let mut p = fixtures::modal_submit(app.next_id(), &app.at(&msg), &alice(), &modal, pattern);
        p["data"]["components"].as_array_mut().unwrap().push(
            json!({"type": 1, "components": [{"type": 4, "custom_id": "length", "value": length}]}),
        );
        app.interact(p)
    };
    // A pattern that does not cover the command asked, or a length the route does not give:
    // refused, nothing kept.
    let bad = submit("cargo build *", "30m").await;
    assert!(
        is_ephemeral(&bad) && ephemeral(&bad).contains("must match"),
        "{bad}"
    );
    let bad = submit("cargo test *", "1h").await;
    assert!(
        is_ephemeral(&bad) && ephemeral(&bad).contains("not one of them"),
        "{bad}"
    );
    // The preview: what would be allowed, and nothing saved yet.
    let preview = submit("cargo test *", "8h").await;
    assert!(is_ephemeral(&preview), "{preview}");
    let text = preview["data"]["content"].as_str().unwrap();
    assert!(
        text.contains("(prefix)") && text.contains("`cargo test *`"),
        "{text}"
    );
    assert!(live_grants(&app).await.is_empty(), "shown, not saved");
    let save = preview["data"]["components"][0]["components"][0]["custom_id"]
        .as_str()
        .unwrap()
        .to_owned();
    // Saved from the preview (an ephemeral message of its own in the channel).
    let on_preview = At {
        message_id: 9_999_000 + app.next_id(),
        ..app.at(&msg)
    };
    let saved = app
        .interact(fixtures::component_click(
            app.next_id(),
            &on_preview,
            &alice(),
            &save,
        ))
        .await;
    assert!(
        is_ephemeral(&saved) && ephemeral(&saved).contains("Saved"),
        "{saved}"
    );
    expect_event(&mut c, "answered").await;
    let g = live_grants(&app).await;
    assert_eq!(g.len(), 1, "{g:?}");
    assert_eq!(g[0]["pattern"], "cargo test *");
    assert_eq!(g[0]["exact"], false);
    // The question's own message shows the grant.
    let edit = app.edit_of(&msg).await;
    assert!(edit.to_string().contains("Granted for 8 h"), "{edit}");
    // Another command the pattern covers is answered at once; a chained one is not.
    let next = ask_to_end(&app, "g-51", &approval("cargo test --all", "s1")).await;
    assert_eq!(next["event"], "answered", "{next}");
    let (_c2, _) = app
        .ask("g-52", &approval("cargo test && curl x | sh", "s1"))
        .await;
    assert!(
        app.hub().observe("g-52").is_some(),
        "a chained command goes to people"
    );
    // Pressing Save again: nothing is waiting.
    let again = app
        .interact(fixtures::component_click(
            app.next_id(),
            &on_preview,
            &alice(),
            &save,
        ))
        .await;
    assert!(is_ephemeral(&again), "{again}");
    app.assert_payloads_valid();
}

#[tokio::test]
async fn askrelay_approve_runs_the_edited_command_split_into_argv_by_shell_words() {
    let app = App::discord_with(grants(None)).await;
    let bin = Bin::new().env("ASKRELAY_SOCKET_PATH", app.socket().display());
    let child = bin.cmd(&["approve", "--", "echo", "one"]).spawn().unwrap();
    let msg = first_question(&app).await;
    let opened = app.press(&msg, &alice(), "Edit…").await;
    assert_eq!(opened["type"], 9, "{opened}");
    assert_eq!(
        opened["data"]["components"][0]["components"][0]["value"],
        "echo one"
    );
    let modal = opened["data"]["custom_id"].as_str().unwrap().to_owned();
    final_state(
        &app.submit_modal(&msg, &alice(), &modal, "echo 'two  words' three")
            .await,
    );
    let out = within("approve to exit", child.wait_with_output())
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    // Quotes are the shell's: one argument keeps its two spaces; nothing is expanded.
    assert_eq!(stdout, "two  words three\n", "{stderr}");
    assert!(
        stderr.contains(r#"argv ["echo","two  words","three"]"#),
        "the argv is shown before it runs: {stderr}"
    );
    app.assert_payloads_valid();
}

/// docs/approvals.md's own example, `git * --dry-run`, used to allow `git clean -fdx #
/// --dry-run`, which a shell runs as `git clean -fdx`: patterns now match shell words, a
/// command that holds a comment (or does not split cleanly) never matches, a pattern that names
/// no command is refused, and the preview says when the command runs other programs.
#[tokio::test]
async fn a_pattern_matches_shell_words_and_never_a_comment_or_a_quote() {
    let app = App::discord_with(grants(None)).await;
    let (mut c, _) = app
        .ask("w-1", &approval("git clean -n --dry-run", "s1"))
        .await;
    let msg = app.messages(CHANNEL)[0].clone();
    let opened = app.press(&msg, &alice(), "Allow matching…").await;
    let modal = opened["data"]["custom_id"].as_str().unwrap().to_owned();
    let submit = |pattern: &str| {
        let mut p = fixtures::modal_submit(app.next_id(), &app.at(&msg), &alice(), &modal, pattern);
        p["data"]["components"].as_array_mut().unwrap().push(
            json!({"type": 1, "components": [{"type": 4, "custom_id": "length", "value": "30m"}]}),
        );
        app.interact(p)
    };
    // Patterns that name no command are refused, and so is one that does not split.
    for p in ["*", "* *", "?*", "*clean --dry-run"] {
        let bad = submit(p).await;
        assert!(
            is_ephemeral(&bad) && ephemeral(&bad).contains("must start with the command"),
            "{p}: {bad}"
        );
    }
    let bad = submit("git * --dry-run # x").await;
    assert!(ephemeral(&bad).contains("comment"), "{bad}");
    // The preview is honest: shell words, and git runs other programs from its options.
    let preview = submit("git * --dry-run").await;
    let text = preview["data"]["content"].as_str().unwrap();
    assert!(
        text.contains("(pattern)") && !text.contains("prefix"),
        "{text}"
    );
    assert!(text.contains("shell words"), "{text}");
    assert!(!text.contains("cannot be chained on"), "{text}");
    assert!(
        text.contains("can run other programs") && text.contains("alias"),
        "{text}"
    );
    let save = preview["data"]["components"][0]["components"][0]["custom_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let on_preview = At {
        message_id: 9_999_000 + app.next_id(),
        ..app.at(&msg)
    };
    app.interact(fixtures::component_click(
        app.next_id(),
        &on_preview,
        &alice(),
        &save,
    ))
    .await;
    expect_event(&mut c, "answered").await;
    // What the shell would run as `git clean -fdx` goes to people; the words match at once.
    for (n, cmd) in [
        "git clean -fdx # --dry-run",
        "git clean -fdx '# --dry-run'",
        "git clean -fdx \\# --dry-run x",
        "git clean -fdx '--dry-run x'",
        "git clean -fdx; echo --dry-run",
    ]
    .iter()
    .enumerate()
    {
        let id = format!("w-no-{n}");
        let (_c, _) = app.ask(&id, &approval(cmd, "s1")).await;
        assert!(app.hub().observe(&id).is_some(), "{cmd} must go to people");
    }
    let matched = ask_to_end(
        &app,
        "w-yes",
        &approval("git clean -fdx  \"--dry-run\"", "s1"),
    )
    .await;
    assert_eq!(matched["event"], "answered", "{matched}");
    app.assert_payloads_valid();
}

/// The announcement of a command a grant allowed shows the whole command: a command too long
/// for the line is attached as `command.txt`, never cut (it was cut at 600 characters).
#[tokio::test]
async fn a_grants_announcement_attaches_a_long_command_whole() {
    let app = App::discord_with(grants(None)).await;
    let long = format!("cargo test -- {}", "x".repeat(2100));
    let (mut c, _) = app.ask("l-1", &approval(&long, "s1")).await;
    let msg = app.messages(CHANNEL)[0].clone();
    app.press(&msg, &alice(), "Allow for 30 min").await;
    expect_event(&mut c, "answered").await;
    let second = ask_to_end(&app, "l-2", &approval(&long, "s1")).await;
    assert_eq!(second["event"], "answered", "{second}");
    let posted = app
        .standin()
        .wait_for_requests(2, |r| {
            r.method == "POST" && r.path.ends_with("/messages") && r.status == 200
        })
        .await;
    let announcement = posted.last().unwrap();
    let content = announcement.body.as_ref().unwrap()["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        content.starts_with("**Allowed by grant**") && content.contains("`command.txt`"),
        "{content}"
    );
    assert_eq!(announcement.files.len(), 1, "{content}");
    assert_eq!(
        announcement.files[0].filename.as_deref(),
        Some("command.txt")
    );
    assert_eq!(announcement.files[0].data, long.as_bytes());
    app.assert_payloads_valid();
}

/// A quorum's grant may be revoked by any of its voters, known by their Discord id. It used to
/// be read from the text of the approver list, so a voter whose display name was
/// `x (discord 5656), y` made user 5656, who never voted, one of the quorum.
#[tokio::test]
async fn revoking_a_quorums_grant_checks_the_voters_ids_not_their_names() {
    let app = App::discord_with(grants(Some(2))).await;
    let (mut c, _) = app.ask("g-30", &approval("terraform plan", "s1")).await;
    let msg = app.messages(CHANNEL)[0].clone();
    let sly = fixtures::Clicker::new(4444, "x (discord 5656), y", &[]);
    app.press(&msg, &alice(), "Allow for 30 min").await;
    final_state(&app.press(&msg, &sly, "Allow for 30 min").await);
    expect_event(&mut c, "answered").await;
    let g = live_grants(&app).await;
    let id = g[0]["id"].as_str().unwrap().to_owned();
    assert_eq!(g[0]["approver_via"], "quorum", "{g:?}");
    assert_eq!(g[0]["approver_id"], "discord:4242 discord:4444", "{g:?}");
    let slash = |who: fixtures::Clicker| {
        let at = At {
            application_id: app.standin().application_id(),
            guild_id: Some(app.standin().guild_id()),
            channel_id: CHANNEL,
            message_id: 0,
        };
        let options = json!([{"name": "grant", "type": 3, "value": id}]);
        let payload =
            fixtures::slash_command(app.next_id(), &at, &who, "askrelay", "revoke", options);
        app.interact(payload)
    };
    let refused = slash(fixtures::Clicker::new(5656, "mallory", &[])).await;
    let text = refused["data"]["embeds"][0]["description"].to_string();
    assert!(text.contains("or an operator may revoke"), "{refused}");
    assert_eq!(live_grants(&app).await.len(), 1, "not revoked");
    let done = slash(sly).await;
    let text = done["data"]["embeds"][0]["description"].to_string();
    assert!(text.contains("ended now"), "a voter revokes it: {done}");
    assert!(live_grants(&app).await.is_empty());
    app.assert_payloads_valid();
}
