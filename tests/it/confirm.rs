//! Type to confirm (`confirm_labels`, `confirm_word` on a route): a destructive label settles
//! only when the person also types the word the question shows, in a Discord modal or with
//! `askrelay answer --confirm`; a wrong word changes nothing and is audited.

use crate::harness::*;
use askrelay::config::{Config, Route};
use askrelay::domain::Status;
use serde_json::{json, Value};

/// Requests of project `prod-*` go to a route where "Allow" needs the project's name typed;
/// terminals may answer there.
fn confirm_route(approvals: Option<u32>) -> impl FnOnce(&mut Config) {
    move |c: &mut Config| {
        let mut r = Route::new("prod", CHANNEL);
        r.matches.insert("project".into(), "prod-*".into());
        r.terminal_answers = Some(true);
        r.confirm_labels = Some(vec!["Allow".into()]);
        r.confirm_word = Some("{scope.project}".into());
        r.approvals = approvals;
        r.exclude_requester = Some(false);
        c.routes.push(r);
    }
}

fn allow_deny(multi: bool) -> Value {
    json!({"questions": [{
        "id": "permission",
        "question": "Run `terraform destroy` in prod?",
        "header": "Approve",
        "options": [{"label": "Allow"}, {"label": "Deny"}, {"label": "Read the plan"}],
        "multiSelect": multi
    }]})
}

/// Asks `input` with scope `project = project`.
async fn ask_in(app: &App, id: &str, input: &Value, project: &str) -> askrelay::client::Client {
    let mut line = ask_line(id, input);
    line["scope"] = json!({ "project": project });
    let mut c = app.client().await;
    c.send_json(&line).await.unwrap();
    expect_event(&mut c, "accepted").await;
    c
}

async fn status(app: &App, id: &str) -> Status {
    app.store().by_id(id).await.unwrap().unwrap().status
}

async fn refused(app: &App) -> Vec<askrelay::domain::request::AuditRow> {
    app.store()
        .audit_rows(None)
        .await
        .unwrap()
        .into_iter()
        .filter(|r| r.action == "forbidden")
        .collect()
}

#[tokio::test]
async fn a_confirm_label_asks_for_the_word_and_only_the_exact_word_settles() {
    let app = App::discord_with(confirm_route(None)).await;
    let mut c = ask_in(&app, "c-1", &allow_deny(false), "prod-eu").await;
    let msg = app.messages(CHANNEL)[0].clone();
    let description = msg["embeds"][0]["description"].as_str().unwrap();
    assert!(
        description.contains("**Typed confirmation:** Allow needs typing `prod-eu` to confirm."),
        "{description}"
    );

    // The click opens a modal and settles nothing.
    let cb = app.press(&msg, &alice(), "Allow").await;
    assert_eq!(cb["type"], 9, "a modal: {cb}");
    assert_eq!(cb["data"]["title"], "Confirm: Allow");
    let input = &cb["data"]["components"][0]["components"][0];
    assert_eq!(input["label"], "Type prod-eu to confirm", "{cb}");
    assert_eq!(input["required"], true);
    let modal_id = cb["data"]["custom_id"].as_str().unwrap().to_owned();
    assert!(modal_id.ends_with(":mC:0"), "indices only: {modal_id}");
    assert_eq!(status(&app, "c-1").await, Status::Pending);

    // A wrong word (the case matters) is refused to the clicker alone, and audited.
    for wrong in ["prod-EU", "approve"] {
        let cb = app.submit_modal(&msg, &alice(), &modal_id, wrong).await;
        assert!(
            is_ephemeral(&cb)
                && ephemeral(&cb).contains("did not match")
                && ephemeral(&cb).contains("nothing was recorded"),
            "{cb}"
        );
    }
    assert_eq!(status(&app, "c-1").await, Status::Pending);
    let rows = refused(&app).await;
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert!(rows
        .iter()
        .all(|r| !r.accepted && r.detail.as_deref().unwrap_or("").contains("not confirmed")));

    // The word, with spaces around it, settles as Allow.
    let cb = app
        .submit_modal(&msg, &alice(), &modal_id, "  prod-eu ")
        .await;
    assert_eq!(cb["type"], 7, "{cb}");
    let answered = expect_event(&mut c, "answered").await;
    assert_eq!(
        answered["result"],
        json!({"answers": [{"id": "permission", "selected": ["Allow"]}]})
    );
    app.assert_payloads_valid();
}

#[tokio::test]
async fn a_label_without_confirmation_settles_at_once_and_the_word_falls_back_to_approve() {
    let app = App::discord_with(|c: &mut Config| {
        let mut r = Route::new("any", CHANNEL);
        r.confirm_labels = Some(vec!["Allow".into()]);
        r.confirm_word = Some("{scope.host}".into());
        c.routes.push(r);
    })
    .await;
    let mut c = ask_in(&app, "c-2", &allow_deny(false), "web").await;
    let msg = app.messages(CHANNEL)[0].clone();
    let description = msg["embeds"][0]["description"].as_str().unwrap();
    assert!(
        description.contains("Allow needs typing `approve` to confirm."),
        "no host label: {description}"
    );
    let cb = app.press(&msg, &alice(), "Deny").await;
    assert_eq!(cb["type"], 7, "Deny needs no word: {cb}");
    let answered = expect_event(&mut c, "answered").await;
    assert_eq!(
        answered["result"]["answers"][0]["selected"],
        json!(["Deny"])
    );
    app.assert_payloads_valid();
}

#[tokio::test]
async fn a_multi_select_draft_with_a_confirm_label_asks_at_submit() {
    let app = App::discord_with(confirm_route(None)).await;
    let mut c = ask_in(&app, "c-3", &allow_deny(true), "prod-us").await;
    let msg = app.messages(CHANNEL)[0].clone();
    let cb = app
        .select(&msg, &alice(), &select_id(&msg), &["2", "0"])
        .await;
    assert_eq!(cb["type"], 6, "{cb}");
    // A note has no room for the word: refused, Submit named.
    let cb = app
        .click(&msg, &alice(), &control(&msg, "Submit with note…"))
        .await;
    assert!(
        is_ephemeral(&cb) && ephemeral(&cb).contains("Submit"),
        "{cb}"
    );
    let cb = app.press(&msg, &alice(), "Submit").await;
    assert_eq!(cb["type"], 9, "{cb}");
    assert_eq!(cb["data"]["title"], "Confirm your selection");
    let modal_id = cb["data"]["custom_id"].as_str().unwrap().to_owned();
    assert_eq!(status(&app, "c-3").await, Status::Pending);
    let cb = app.submit_modal(&msg, &alice(), &modal_id, "prod-us").await;
    assert_eq!(cb["type"], 7, "{cb}");
    let answered = expect_event(&mut c, "answered").await;
    assert_eq!(
        answered["result"]["answers"][0]["selected"],
        json!(["Allow", "Read the plan"])
    );
    app.assert_payloads_valid();
}

/// On a quorum route each voter types the word; the votes count as usual.
#[tokio::test]
async fn each_voter_types_the_word_on_a_quorum_route() {
    let app = App::discord_with(confirm_route(Some(2))).await;
    let mut c = ask_in(&app, "c-4", &allow_deny(false), "prod-eu").await;
    let msg = app.messages(CHANNEL)[0].clone();
    for (who, kind) in [(alice(), 7), (bob(), 7)] {
        let cb = app.press(&msg, &who, "Allow").await;
        assert_eq!(cb["type"], 9, "{cb}");
        let modal_id = cb["data"]["custom_id"].as_str().unwrap().to_owned();
        let cb = app.submit_modal(&msg, &who, &modal_id, "prod-eu").await;
        assert_eq!(cb["type"], kind, "{cb}");
    }
    let answered = expect_event(&mut c, "answered").await;
    assert_eq!(
        answered["result"]["answers"][0]["selected"],
        json!(["Allow"])
    );
    let votes = app
        .store()
        .audit_rows(None)
        .await
        .unwrap()
        .into_iter()
        .filter(|r| r.action == "vote")
        .count();
    assert_eq!(votes, 2);
    app.assert_payloads_valid();
}

/// A modal opened before a restart still settles after it: its custom_id carries only the
/// request's token and indices.
#[tokio::test]
async fn a_confirm_modal_opened_before_a_restart_settles_after_it() {
    let mut app = App::discord_with(confirm_route(None)).await;
    let c = ask_in(&app, "c-5", &allow_deny(false), "prod-eu").await;
    let msg = app.messages(CHANNEL)[0].clone();
    let cb = app.press(&msg, &alice(), "Allow").await;
    let modal_id = cb["data"]["custom_id"].as_str().unwrap().to_owned();
    drop(c);
    app.restart().await;
    let mut line = ask_line("c-5", &allow_deny(false));
    line["scope"] = json!({"project": "prod-eu"});
    let mut c = app.client().await;
    c.send_json(&line).await.unwrap();
    expect_event(&mut c, "accepted").await;
    let cb = app.submit_modal(&msg, &alice(), &modal_id, "prod-eu").await;
    assert_eq!(cb["type"], 7, "{cb}");
    let answered = expect_event(&mut c, "answered").await;
    assert_eq!(
        answered["result"]["answers"][0]["selected"],
        json!(["Allow"])
    );
}

#[tokio::test]
async fn the_terminal_needs_the_word_with_confirm() {
    let app = App::discord_with(confirm_route(None)).await;
    let mut c = ask_in(&app, "c-6", &allow_deny(false), "prod-eu").await;
    let app = &app;
    let answer = |confirm: Option<&str>| {
        let mut line = json!({"op": "answer", "request_id": "c-6", "question": "permission", "select": ["Allow"]});
        if let Some(w) = confirm {
            line["confirm"] = json!(w);
        }
        async move {
            let mut client = app.client().await;
            client.call_json(&line).await.unwrap()
        }
    };
    let reply = answer(None).await;
    assert_eq!(reply["code"], "FORBIDDEN", "{reply}");
    let message = reply["message"].as_str().unwrap();
    assert!(
        message.contains("needs typing prod-eu") && message.contains("--confirm prod-eu"),
        "{message}"
    );
    let reply = answer(Some("prod")).await;
    assert_eq!(reply["code"], "FORBIDDEN", "{reply}");
    assert!(
        reply["message"].as_str().unwrap().contains("did not match"),
        "{reply}"
    );
    assert_eq!(status(app, "c-6").await, Status::Pending);
    let rows = refused(app).await;
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert!(rows
        .iter()
        .all(|r| !r.accepted && r.detail.as_deref().unwrap_or("").contains("not confirmed")));

    let reply = answer(Some("prod-eu")).await;
    assert_eq!(reply["event"], "answer_accepted", "{reply}");
    let answered = expect_event(&mut c, "answered").await;
    assert_eq!(
        answered["result"]["answers"][0]["selected"],
        json!(["Allow"])
    );
}

/// `askrelay answer --all --select Allow --confirm WORD`: each request's word is checked on
/// its own, so one with another word is refused and named.
#[tokio::test]
async fn a_batch_checks_each_requests_word() {
    let app = App::discord_with(confirm_route(None)).await;
    let mut eu = ask_in(&app, "c-7", &allow_deny(false), "prod-eu").await;
    let _us = ask_in(&app, "c-8", &allow_deny(false), "prod-us").await;
    let bin = Bin::new().env("ASKRELAY_SOCKET_PATH", app.socket().display());
    let (code, out, err) = bin
        .run(&["answer", "--all", "--select", "Allow", "--yes"])
        .await;
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("refused  c-7: ") && out.contains("--confirm prod-eu"),
        "{out}"
    );
    assert!(out.contains("--confirm prod-us"), "{out}");
    let (code, out, err) = bin
        .run(&[
            "answer",
            "--all",
            "--select",
            "Allow",
            "--confirm",
            "prod-eu",
            "--yes",
        ])
        .await;
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("done     c-7: answered"), "{out}");
    assert!(
        out.contains("refused  c-8: ") && out.contains("did not match"),
        "{out}"
    );
    let answered = expect_event(&mut eu, "answered").await;
    assert_eq!(
        answered["result"]["answers"][0]["selected"],
        json!(["Allow"])
    );
    assert_eq!(status(&app, "c-8").await, Status::Pending);
}

#[test]
fn a_config_error_names_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let load = |route: &str| {
        let path = dir.path().join("askrelay.toml");
        std::fs::write(
            &path,
            format!("[[routes]]\nname = \"prod\"\nchannel_id = \"{CHANNEL}\"\n{route}"),
        )
        .unwrap();
        Config::load_from(Some(&path), Vec::new())
            .map(|_| ())
            .map_err(|e| format!("{e:#}"))
    };
    assert_eq!(
        load("confirm_labels = [\"Allow\"]\nconfirm_word = \"{scope.project}\"\n"),
        Ok(())
    );
    for (route, want) in [
        (
            "confirm_labels = [\"Allow\", \"Allow\"]\n",
            "routes[0].confirm_labels[1]: \"Allow\" is listed twice",
        ),
        (
            "confirm_labels = [\"Allow\", \" \"]\n",
            "routes[0].confirm_labels[1]: must name an option label",
        ),
        (
            "confirm_labels = [\"Allow\"]\nconfirm_word = \"type this\"\n",
            "routes[0].confirm_word: \"type this\" is not a word",
        ),
        (
            "confirm_labels = [\"Allow\"]\nconfirm_word = \"{project}\"\n",
            "routes[0].confirm_word: \"{project}\" is not {scope.KEY}",
        ),
        (
            "confirm_word = \"yes\"\n",
            "routes[0].confirm_word: set confirm_labels too",
        ),
    ] {
        let err = load(route).unwrap_err();
        assert!(err.contains(want), "{route}: {err}");
    }
}
