//! The socket front end against the real daemon (in-process): docs/contract.md, "Tool input" and "Socket protocol".

use crate::harness::*;
use askrelay::domain::store::{Page, Visibility};
use askrelay::domain::Outcome;
use askrelay::domain::Phase;
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;

#[tokio::test]
async fn ask_then_answer_round_trip() {
    let app = App::start().await;
    let mut c = app.client().await;
    c.send_json(&ask_line("r1", &yes_no("cleanup")))
        .await
        .unwrap();
    let accepted = expect_event(&mut c, "accepted").await;
    assert_eq!(accepted["request_id"], "r1");
    assert_eq!(accepted["answerer"], "terminal");

    let reply = app.answer("r1", "cleanup", &["No, keep them"]).await;
    assert_eq!(reply["event"], "answer_accepted", "{reply}");
    assert_eq!(reply["request_answered"], true);

    let line = c.recv_line().await.unwrap().unwrap();
    assert_eq!(
        line,
        r#"{"event":"answered","request_id":"r1","result":{"answers":[{"id":"cleanup","selected":["No, keep them"]}]}}"#
    );
}

#[tokio::test]
async fn multi_select_and_custom_text_follow_the_spec() {
    let app = App::start().await;
    let mut c = app.client().await;
    let input = json!({"questions": [
        {"id": "targets", "question": "Which?", "multiSelect": true,
         "options": [{"label": "web"}, {"label": "db"}, {"label": "cache"}]},
        {"id": "name", "question": "Name it"},
        {"id": "pick", "question": "Pick", "options": [{"label": "a"}, {"label": "b"}]}
    ]});
    c.send_json(&ask_line("m1", &input)).await.unwrap();
    expect_event(&mut c, "accepted").await;
    let mut op = json!({"op": "answer", "request_id": "m1", "question": "targets",
        "select": ["cache", "web"], "custom": "and the CDN"});
    let r = app.client().await.call_json(&op).await.unwrap();
    assert_eq!(r["request_answered"], false, "{r}");
    op = json!({"op": "answer", "request_id": "m1", "question": "name", "custom": "v2"});
    app.client().await.call_json(&op).await.unwrap();
    op = json!({"op": "answer", "request_id": "m1", "question": "pick", "select": ["b"], "custom": "neither"});
    let r = app.client().await.call_json(&op).await.unwrap();
    assert_eq!(r["request_answered"], true, "{r}");
    let ev = expect_event(&mut c, "answered").await;
    assert_eq!(
        serde_json::to_string(&ev["result"]).unwrap(),
        r#"{"answers":[{"id":"targets","selected":["web","cache"],"custom":"and the CDN"},{"id":"name","selected":[],"custom":"v2"},{"id":"pick","selected":[],"custom":"neither"}]}"#
    );
}

/// Every validation rule of docs/contract.md, "Tool input" gives INVALID_REQUEST naming the field.
#[tokio::test]
async fn every_validation_rule_names_the_field() {
    let app = App::start_with(|c| c.limits.max_questions = 3).await;
    let q = |extra: Value| {
        let mut base = json!({"id": "a", "question": "Q?", "options": [{"label": "x"}]});
        for (k, v) in extra.as_object().unwrap() {
            if v.is_null() {
                base.as_object_mut().unwrap().remove(k);
            } else {
                base[k] = v.clone();
            }
        }
        base
    };
    let long = |n: usize| "x".repeat(n);
    let opts = |n: usize| -> Value {
        (0..n)
            .map(|i| json!({"label": format!("o{i}")}))
            .collect::<Vec<_>>()
            .into()
    };
    let cases: Vec<(Value, &str)> = vec![
        (json!({}), "questions: is required"),
        (json!({"questions": "no"}), "questions: must be an array"),
        (json!({"questions": []}), "questions: must hold at least 1"),
        (
            json!({"questions": [q(json!({"id":"a"})), q(json!({"id":"b"})), q(json!({"id":"c"})), q(json!({"id":"d"}))]}),
            "questions: at most 3",
        ),
        (json!({"questions": [7]}), "questions[0]: must be an object"),
        (
            json!({"questions": [q(json!({"id": null}))]}),
            "questions[0].id: is required",
        ),
        (
            json!({"questions": [q(json!({"id": ""}))]}),
            "questions[0].id: must not be empty",
        ),
        (
            json!({"questions": [q(json!({"id": long(65)}))]}),
            "questions[0].id: at most 64",
        ),
        (
            json!({"questions": [q(json!({"id": 5}))]}),
            "questions[0].id: must be a string",
        ),
        (
            json!({"questions": [q(json!({})), q(json!({}))]}),
            "questions[1].id: \"a\" is used twice",
        ),
        (
            json!({"questions": [q(json!({"question": null}))]}),
            "questions[0].question: is required",
        ),
        (
            json!({"questions": [q(json!({"question": " "}))]}),
            "questions[0].question: must not be empty",
        ),
        (
            json!({"questions": [q(json!({"question": long(4001)}))]}),
            "questions[0].question: at most 4000",
        ),
        (
            json!({"questions": [q(json!({"header": long(81)}))]}),
            "questions[0].header: at most 80",
        ),
        (
            json!({"questions": [q(json!({"options": opts(26)}))]}),
            "questions[0].options: at most 25",
        ),
        (
            json!({"questions": [q(json!({"options": "x"}))]}),
            "questions[0].options: must be an array",
        ),
        (
            json!({"questions": [q(json!({"options": [{"label": ""}]}))]}),
            "questions[0].options[0].label: must not be empty",
        ),
        (
            json!({"questions": [q(json!({"options": [{"description": "d"}]}))]}),
            "questions[0].options[0].label: is required",
        ),
        (
            json!({"questions": [q(json!({"options": [{"label": long(201)}]}))]}),
            "questions[0].options[0].label: at most 200",
        ),
        (
            json!({"questions": [q(json!({"options": [{"label": "x"}, {"label": "x"}]}))]}),
            "questions[0].options[1].label: \"x\" is used twice",
        ),
        (
            json!({"questions": [q(json!({"options": [{"label": "x", "description": long(1001)}]}))]}),
            "questions[0].options[0].description: at most 1000",
        ),
        (
            json!({"questions": [q(json!({"options": [{"label": "x", "value": 1}]}))]}),
            "questions[0].options[0].value: unknown field",
        ),
        (
            json!({"questions": [q(json!({"multiSelect": "yes"}))]}),
            "questions[0].multiSelect: must be true or false",
        ),
        (
            json!({"questions": [q(json!({"multiSelect": true, "options": []}))]}),
            "questions[0].multiSelect: needs at least one option",
        ),
        (
            json!({"questions": [q(json!({"multiselect": true}))]}),
            "questions[0].multiselect: unknown field",
        ),
        (
            json!({"questions": [q(json!({}))], "request_id": ""}),
            "request_id: must not be empty",
        ),
        (
            json!({"questions": [q(json!({}))], "caller": "me"}),
            "caller: must be an object",
        ),
        (
            json!({"questions": [q(json!({}))], "scope": {"project": [1]}}),
            "scope.project: must be a string",
        ),
        (
            json!({"questions": [q(json!({}))], "extra": 1}),
            "extra: unknown field",
        ),
    ];
    let mut c = app.client().await;
    for (input, expected) in cases {
        let mut line = input.clone();
        line["op"] = json!("ask");
        c.send_json(&line).await.unwrap();
        let ev = recv(&mut c, "a reply").await;
        assert_eq!(ev["event"], "error", "{input} gave {ev}");
        assert_eq!(ev["code"], "INVALID_REQUEST", "{input} gave {ev}");
        let msg = ev["message"].as_str().unwrap();
        assert!(
            msg.contains(expected),
            "{input}: expected {expected:?} in {msg:?}"
        );
    }
    // Nothing invalid was stored.
    assert!(app
        .store()
        .history(
            Visibility::All,
            Page {
                limit: 100,
                after: None
            }
        )
        .await
        .unwrap()
        .is_empty());
}

#[tokio::test]
async fn a_reused_request_id_with_other_questions_is_invalid() {
    let app = App::start().await;
    let mut c = app.client().await;
    c.send_json(&ask_line("dup", &yes_no("a"))).await.unwrap();
    expect_event(&mut c, "accepted").await;
    let mut c2 = app.client().await;
    c2.send_json(&ask_line("dup", &yes_no("b"))).await.unwrap();
    let ev = recv(&mut c2, "the next line").await;
    assert_eq!(ev["code"], "INVALID_REQUEST");
    assert_eq!(ev["request_id"], "dup");
    assert!(
        ev["message"].as_str().unwrap().contains("other questions"),
        "{ev}"
    );
}

#[tokio::test]
async fn a_bad_line_then_a_good_ask_on_the_same_connection() {
    let app = App::start_with(|c| c.limits.max_line_bytes = 4096).await;
    let mut c = app.client().await;
    c.send_raw(b"{this is not json\n").await.unwrap();
    let ev = recv(&mut c, "the next line").await;
    assert_eq!(ev["code"], "INVALID_REQUEST");
    assert!(ev["message"].as_str().unwrap().contains("not valid JSON"));

    c.send_raw(b"{\"op\":\"launch\",\"request_id\":\"x\"}\n")
        .await
        .unwrap();
    let ev = recv(&mut c, "the next line").await;
    assert_eq!(ev["request_id"], "x");
    assert!(ev["message"]
        .as_str()
        .unwrap()
        .contains("unknown operation"));

    let mut huge = vec![b'a'; 10_000];
    huge.push(b'\n');
    c.send_raw(&huge).await.unwrap();
    let ev = recv(&mut c, "the next line").await;
    assert!(
        ev["message"].as_str().unwrap().contains("max_line_bytes"),
        "{ev}"
    );

    c.send_json(&ask_line("ok", &yes_no("q"))).await.unwrap();
    assert_eq!(expect_event(&mut c, "accepted").await["request_id"], "ok");
    app.answer("ok", "q", &["No, keep them"]).await;
    expect_event(&mut c, "answered").await;
}

#[tokio::test]
async fn several_asks_share_one_connection() {
    let app = App::start().await;
    let mut c = app.client().await;
    c.send_json(&ask_line("one", &yes_no("q"))).await.unwrap();
    c.send_json(&ask_line("two", &yes_no("q"))).await.unwrap();
    expect_event(&mut c, "accepted").await;
    expect_event(&mut c, "accepted").await;
    app.answer("two", "q", &["No, keep them"]).await;
    let ev = expect_event(&mut c, "answered").await;
    assert_eq!(ev["request_id"], "two");
    app.answer("one", "q", &["Yes, delete them (Recommended)"])
        .await;
    let ev = expect_event(&mut c, "answered").await;
    assert_eq!(ev["request_id"], "one");
}

#[tokio::test]
async fn disconnect_cancels_after_the_grace_period() {
    let app = App::start_with(|c| c.cancel_grace_secs = 1).await;
    let mut c = app.client().await;
    c.send_json(&ask_line("gone", &yes_no("q"))).await.unwrap();
    expect_event(&mut c, "accepted").await;
    let mut phase = app.hub().observe("gone").unwrap();
    drop(c);
    let ended = within(
        "the abandoned request to be cancelled",
        phase.wait_for(|p| matches!(p, Phase::Ended(_))),
    )
    .await
    .unwrap()
    .clone();
    let Phase::Ended(Outcome::Error(e)) = ended else {
        panic!("expected an error outcome, got {ended:?}")
    };
    assert_eq!(e.code.as_str(), "ABORTED");
    assert!(e.message.contains("cancel_grace_secs"), "{}", e.message);
    // A re-attach after that gets only the same final line.
    let mut c = app.client().await;
    c.send_json(&ask_line("gone", &yes_no("q"))).await.unwrap();
    let ev = recv(&mut c, "the next line").await;
    assert_eq!(ev["event"], "error");
    assert_eq!(ev["code"], "ABORTED");
    assert_eq!(ev["message"].as_str().unwrap(), e.message);
}

#[tokio::test]
async fn reattach_within_the_grace_period_keeps_the_request() {
    let app = App::start_with(|c| c.cancel_grace_secs = 30).await;
    let mut c = app.client().await;
    c.send_json(&ask_line("back", &yes_no("q"))).await.unwrap();
    expect_event(&mut c, "accepted").await;
    drop(c);
    let mut c = app.client().await;
    c.send_json(&ask_line("back", &yes_no("q"))).await.unwrap();
    expect_event(&mut c, "accepted").await;
    let reply = app.answer("back", "q", &["No, keep them"]).await;
    assert_eq!(reply["event"], "answer_accepted");
    expect_event(&mut c, "answered").await;
}

#[tokio::test]
async fn idempotent_reattach_never_duplicates_the_request() {
    let app = App::start().await;
    let mut a = app.client().await;
    let mut b = app.client().await;
    a.send_json(&ask_line("same", &yes_no("q"))).await.unwrap();
    expect_event(&mut a, "accepted").await;
    b.send_json(&ask_line("same", &yes_no("q"))).await.unwrap();
    expect_event(&mut b, "accepted").await;
    let pending = app.store().all_pending().await.unwrap();
    assert_eq!(pending.len(), 1);
    app.answer("same", "q", &["No, keep them"]).await;
    let la = expect_event(&mut a, "answered").await;
    let lb = expect_event(&mut b, "answered").await;
    assert_eq!(la, lb);
    // After the end, the same id returns the stored answer at once, and only that line.
    let mut c = app.client().await;
    c.send_json(&ask_line("same", &yes_no("q"))).await.unwrap();
    let first = recv(&mut c, "the next line").await;
    assert_eq!(first, la);
    assert_eq!(
        app.store()
            .history(
                Visibility::All,
                Page {
                    limit: 10,
                    after: None
                }
            )
            .await
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test]
async fn restart_keeps_pending_requests_and_the_client_reattaches() {
    let mut app = App::start().await;
    let mut c = app.client().await;
    c.send_json(&ask_line("survivor", &yes_no("q")))
        .await
        .unwrap();
    expect_event(&mut c, "accepted").await;
    app.stop().await;
    assert!(
        !app.socket().exists(),
        "the socket file is removed on shutdown"
    );
    // The waiting client is told, then the connection closes; the request stays pending.
    let ev = recv(&mut c, "the shutdown notice").await;
    assert_eq!(
        ev,
        json!({"event": "shutting_down", "request_id": "survivor"})
    );
    expect_eof(&mut c, "the connection to close after the notice").await;
    app.restart().await;
    let mut c = app.client().await;
    c.send_json(&ask_line("survivor", &yes_no("q")))
        .await
        .unwrap();
    let acc = expect_event(&mut c, "accepted").await;
    assert_eq!(acc["answerer"], "terminal");
    let reply = app
        .answer("survivor", "q", &["Yes, delete them (Recommended)"])
        .await;
    assert_eq!(reply["event"], "answer_accepted", "{reply}");
    let ev = expect_event(&mut c, "answered").await;
    assert_eq!(
        ev["result"]["answers"][0]["selected"][0],
        "Yes, delete them (Recommended)"
    );
}

#[tokio::test]
async fn restart_grace_cancels_abandoned_requests() {
    let mut app = App::start_with(|c| c.restart_grace_secs = 1).await;
    let mut c = app.client().await;
    c.send_json(&ask_line("abandoned", &yes_no("q")))
        .await
        .unwrap();
    expect_event(&mut c, "accepted").await;
    drop(c);
    app.restart().await;
    app.wait_ended("abandoned").await;
    let req = app.hub().request("abandoned").await.unwrap();
    assert_eq!(req.status.as_str(), "cancelled");
    let Some(Outcome::Error(e)) = req.outcome else {
        panic!()
    };
    assert!(e.message.contains("restart_grace_secs"), "{}", e.message);
}

#[tokio::test]
async fn first_wins_with_fifty_concurrent_answers() {
    let app = App::start().await;
    let mut c = app.client().await;
    c.send_json(&ask_line("race", &yes_no("q"))).await.unwrap();
    expect_event(&mut c, "accepted").await;
    let labels = ["Yes, delete them (Recommended)", "No, keep them"];
    let me = nix::unistd::User::from_uid(nix::unistd::geteuid())
        .unwrap()
        .unwrap()
        .name;
    let mut tasks = Vec::new();
    for i in 0..50 {
        let mut client = app.client().await;
        tasks.push(tokio::spawn(async move {
            let label = labels[i % 2];
            let reply = client
                .call_json(
                    &json!({"op": "answer", "request_id": "race", "question": "q",
                    "select": [label], "by": format!("person{i}")}),
                )
                .await
                .unwrap();
            (i, label, reply)
        }));
    }
    let mut winners = Vec::new();
    for t in tasks {
        let (i, label, reply) = t.await.unwrap();
        match reply["event"].as_str() {
            Some("answer_accepted") => winners.push((i, label)),
            Some("error") => {
                assert_eq!(reply["code"], "CONFLICT", "{reply}");
                let m = reply["message"].as_str().unwrap();
                assert!(
                    m.contains(&format!(
                        "already answered by {me} (uid {}) via terminal",
                        own_uid()
                    )),
                    "{m}"
                );
            }
            _ => panic!("unexpected {reply}"),
        }
    }
    assert_eq!(winners.len(), 1, "exactly one winner: {winners:?}");
    let ev = expect_event(&mut c, "answered").await;
    assert_eq!(ev["result"]["answers"][0]["selected"][0], winners[0].1);
    let audit = app.store().audit_rows(None).await.unwrap();
    let answers: Vec<_> = audit.iter().filter(|r| r.action == "answer").collect();
    assert_eq!(answers.len(), 50);
    assert_eq!(answers.iter().filter(|r| r.accepted).count(), 1);
}

#[tokio::test]
async fn an_answer_to_an_ended_request_says_how_it_ended_and_is_audited() {
    let app = App::start().await;
    let mut c = app.client().await;
    c.send_json(&ask_line("gone", &yes_no("q"))).await.unwrap();
    expect_event(&mut c, "accepted").await;
    let mut other = app.client().await;
    let reply = other
        .call_json(&json!({"op": "cancel", "request_id": "gone", "reason": "not today"}))
        .await
        .unwrap();
    assert_eq!(reply["event"], "cancelled", "{reply}");
    // Whatever question and option it names: they no longer matter.
    let reply = other
        .call_json(
            &json!({"op": "answer", "request_id": "gone", "question": "",
                           "select": ["9"]}),
        )
        .await
        .unwrap();
    assert_eq!(reply["code"], "CONFLICT", "{reply}");
    let m = reply["message"].as_str().unwrap();
    assert!(
        m.starts_with("request \"gone\" has ended (cancelled at 20") && m.ends_with("Z)"),
        "{m}"
    );
    let audit = app.store().audit_rows(None).await.unwrap();
    let refused: Vec<_> = audit
        .iter()
        .filter(|r| r.action == "answer" && !r.accepted)
        .collect();
    assert_eq!(refused.len(), 1, "{audit:?}");
    assert!(refused[0]
        .detail
        .as_deref()
        .unwrap()
        .starts_with("terminal answer refused: request \"gone\" has ended"));
}

#[tokio::test]
async fn no_answerer_configured_is_an_error_not_a_wait() {
    let app = App::start_with(|c| c.terminal.enabled = Some(false)).await;
    let mut c = app.client().await;
    c.send_json(&ask_line("lonely", &yes_no("q")))
        .await
        .unwrap();
    let ev = recv(&mut c, "the next line").await;
    assert_eq!(ev["event"], "error", "{ev}");
    assert_eq!(ev["code"], "NO_ANSWERER");
    assert!(
        ev["message"].as_str().unwrap().contains("discord.token"),
        "{ev}"
    );
}

#[tokio::test]
async fn delegated_callers_are_told_to_return_the_question() {
    let app = App::start().await;
    let mut c = app.client().await;
    let mut line = ask_line("child", &yes_no("q"));
    line["caller"] = json!({"agent_id": "sub-1", "owner_agent_id": "root-7"});
    c.send_json(&line).await.unwrap();
    let ev = recv(&mut c, "the next line").await;
    assert_eq!(ev["code"], "DELEGATED_CALLER");
    assert_eq!(ev["request_id"], "child");
    assert!(ev["message"].as_str().unwrap().contains("final result"));
    // A resumed root sends null and is fine.
    let mut line = ask_line("root", &yes_no("q"));
    line["caller"] = json!({"agent_id": "root-7", "owner_agent_id": null});
    c.send_json(&line).await.unwrap();
    expect_event(&mut c, "accepted").await;
}

#[tokio::test]
async fn cancel_from_another_connection() {
    let app = App::start().await;
    let mut asker = app.client().await;
    asker
        .send_json(&ask_line("stop-me", &yes_no("q")))
        .await
        .unwrap();
    expect_event(&mut asker, "accepted").await;
    let mut op = app.client().await;
    let r = op
        .call_json(&json!({"op": "cancel", "request_id": "stop-me", "reason": "wrong team"}))
        .await
        .unwrap();
    assert_eq!(r, json!({"event": "cancelled", "request_id": "stop-me"}));
    let ev = recv(&mut asker, "the next line").await;
    assert_eq!(ev["code"], "ABORTED");
    assert!(ev["message"].as_str().unwrap().contains("wrong team"));
    let r = op
        .call_json(&json!({"op": "cancel", "request_id": "stop-me"}))
        .await
        .unwrap();
    assert_eq!(r["code"], "INVALID_REQUEST");
    assert!(r["message"].as_str().unwrap().contains("already ended"));
    let r = op
        .call_json(&json!({"op": "cancel", "request_id": "nope"}))
        .await
        .unwrap();
    assert!(r["message"]
        .as_str()
        .unwrap()
        .contains("unknown request_id"));
    // A late terminal answer does not count and says why.
    let r = app.answer("stop-me", "q", &["No, keep them"]).await;
    assert_eq!(r["code"], "CONFLICT");
    assert!(r["message"].as_str().unwrap().contains("cancelled"), "{r}");
}

#[tokio::test]
async fn supervision_ops_report_state_and_peer_credentials() {
    let app = App::start().await;
    let mut c = app.client().await;
    let mut line = ask_line("seen", &yes_no("q"));
    line["scope"] = json!({"project": "infra-prod"});
    c.send_json(&line).await.unwrap();
    expect_event(&mut c, "accepted").await;
    let mut op = app.client().await;
    let pending = op.call_json(&json!({"op": "pending"})).await.unwrap();
    let r = &pending["requests"][0];
    assert_eq!(r["request_id"], "seen");
    assert_eq!(r["scope"]["project"], "infra-prod");
    assert_eq!(r["peer"]["uid"], json!(own_uid()));
    assert_eq!(r["peer"]["pid"], json!(std::process::id()));
    let health = op.call_json(&json!({"op": "health"})).await.unwrap();
    assert_eq!(health["pending"], 1);
    let r = app.answer("seen", "q", &["Maybe"]).await;
    assert_eq!(r["code"], "INVALID_REQUEST");
    assert!(
        r["message"]
            .as_str()
            .unwrap()
            .contains("no option \"Maybe\""),
        "{r}"
    );
    app.answer("seen", "q", &["No, keep them"]).await;
    expect_event(&mut c, "answered").await;
    let history = op
        .call_json(&json!({"op": "history", "limit": 5}))
        .await
        .unwrap();
    assert_eq!(history["requests"][0]["status"], "answered");
    // Who answered is the connection's user; the line's `by` is only a note.
    let answered = &history["requests"][0]["questions"][0]["answered"];
    let me = nix::unistd::User::from_uid(nix::unistd::geteuid())
        .unwrap()
        .unwrap()
        .name;
    assert_eq!(answered["by"], me.as_str(), "{answered}");
    assert_eq!(answered["id"], own_uid().to_string(), "{answered}");
    assert_eq!(answered["via"], "terminal");
    assert_eq!(answered["note"], "tester");
}

/// The uid of this test process, as the daemon sees it through SO_PEERCRED.
fn own_uid() -> u32 {
    std::fs::metadata("/proc/self")
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m))
        .unwrap()
}

#[tokio::test]
async fn the_socket_is_owner_only_and_a_live_daemon_is_not_replaced() {
    let app = App::start().await;
    let mode = std::fs::metadata(app.socket())
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
    let mut other = app.config.clone();
    other.database_url = format!("sqlite://{}", app.dir.path().join("other.db").display());
    let err = askrelay::daemon::Daemon::start(other)
        .await
        .err()
        .expect("a second daemon on the same socket must fail");
    assert!(err.to_string().contains("already listening"), "{err}");
}

#[tokio::test]
async fn a_stale_socket_file_is_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let config = crate::harness::test_config(dir.path());
    // A socket file nobody listens on, as a crashed daemon leaves it.
    drop(std::os::unix::net::UnixListener::bind(&config.socket_path).unwrap());
    assert!(config.socket_path.exists());
    let d = askrelay::daemon::Daemon::start(config.clone())
        .await
        .unwrap();
    askrelay::client::Client::connect(&config.socket_path)
        .await
        .unwrap();
    d.shutdown().await;
}

/// A socket file deleted under a running daemon (a cleanup of /tmp or /run, a careless `rm`)
/// left it running, healthy by its own account, and out of every client's reach. It notices
/// within seconds, says so, and binds the path again, owner-only as at start-up; a file that
/// someone else put at the path is left alone (said once) until it is gone.
#[tokio::test]
async fn a_deleted_socket_file_is_bound_again() {
    let env = Bin::new();
    let mut daemon = env.serve().await;
    let socket = env.socket();
    std::fs::remove_file(&socket).unwrap();
    let warned = daemon.wait_log("the socket file was deleted").await;
    assert!(warned.contains("WARN"), "{warned}");
    assert!(warned.contains(&socket.display().to_string()), "{warned}");
    daemon.wait_log("socket file recreated").await;
    let meta = std::fs::symlink_metadata(&socket).unwrap();
    assert!(std::os::unix::fs::FileTypeExt::is_socket(&meta.file_type()));
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    // A client asks through the new socket and the daemon answers.
    let mut asker = env
        .ask(&["--request-id", "back-1"], &yes_no("go").to_string())
        .await;
    asker.wait_stderr("waiting for an answer").await;
    let (code, out, err) = env.run(&["answer", "back-1", "--select", "2"]).await;
    assert_eq!(code, 0, "{out}{err}");
    let (code, out) = asker.finish().await;
    assert_eq!(code, 0);
    assert!(out.contains("No, keep them"), "{out}");

    // Someone else's file at the path: not replaced, said once; bound again once it is gone.
    // Renamed over it, so that the path is never empty (the daemon would bind it again).
    let other = env.dir().join("other");
    std::fs::write(&other, "not a socket").unwrap();
    std::fs::rename(&other, &socket).unwrap();
    daemon.wait_log("replaced by another file").await;
    assert_eq!(std::fs::read_to_string(&socket).unwrap(), "not a socket");
    std::fs::remove_file(&socket).unwrap();
    daemon.wait_log("socket file recreated").await;
    let (code, _, err) = env.run(&["pending"]).await;
    assert_eq!(code, 0, "{err}");

    let (status, log) = daemon.terminate().await;
    assert!(status.success(), "{log}");
    assert_eq!(log.matches("replaced by another file").count(), 1, "{log}");
}
