//! One thread per agent session (docs/approvals.md, "One thread per agent session"): on a route
//! with `threads = "per_session"`, the real `askrelay hook claude-code` asks, and the daemon
//! posts each session's questions, approvals and ends of turns in a thread of its own in the
//! route's channel, against the Discord stand-in (every body checked against Discord's OpenAPI
//! spec, the thread's creation included).

use crate::approvals::{finish, start};
use crate::harness::*;
use askrelay::config::{Route, Threads};
use askrelay_testkit::standin::Thread;
use serde_json::{json, Value};
use tokio::process::Child;

/// A daemon whose every request goes to a route with a thread per session, and Stop replies.
async fn app() -> App {
    App::discord_with(|c| {
        c.routes.push(Route {
            threads: Some(Threads::PerSession),
            stop_replies: Some(true),
            ..Route::new("sessions", CHANNEL)
        });
    })
    .await
}

/// `askrelay hook claude-code` asked about `touch FILE` in session `session`.
async fn ask_bash(app: &App, session: &str, file: &str) -> Child {
    let event = json!({
        "session_id": session,
        "transcript_path": format!("/home/dev/.claude/projects/x/{session}.jsonl"),
        "cwd": "/work/shop",
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": format!("touch {file}"), "description": "Touch it"},
        "tool_use_id": format!("toolu_{session}_{file}"),
    });
    let bin = Bin::new().env("ASKRELAY_SOCKET_PATH", app.socket().display());
    start(&bin, &["hook", "claude-code"], &event.to_string()).await
}

/// The `n`th message (from 0) in the `t`th thread created (from 0), once both are there, with
/// the thread.
async fn in_thread(app: &App, t: usize, n: usize) -> (Thread, Value) {
    within(&format!("message {n} in thread {t}"), async {
        let mut rx = app.standin().subscribe();
        loop {
            if let Some(thread) = app.standin().threads().into_iter().nth(t) {
                if let Some(m) = app.messages(thread.id).into_iter().nth(n) {
                    return (thread, m);
                }
            }
            let _ = rx.changed().await;
        }
    })
    .await
}

/// Allows the question in `m` and checks the hook printed an allow.
async fn allow(app: &App, m: &Value, hook: Child) {
    final_state(&app.press(m, &alice(), "Allow").await);
    let (code, out, err) = finish(hook).await;
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(r#""permissionDecision":"allow""#),
        "{out} {err}"
    );
}

#[tokio::test]
async fn a_sessions_questions_share_a_thread_and_another_session_gets_its_own() {
    let app = app().await;
    let a1 = ask_bash(&app, "3f2a9c1e-aaaa", "one").await;
    let (thread_a, m1) = in_thread(&app, 0, 0).await;
    assert_eq!(thread_a.parent, CHANNEL, "in the route's channel");
    assert_eq!(thread_a.name, "claude-code · shop · 3f2a9c1e");
    allow(&app, &m1, a1).await;

    // The same session again: the same thread.
    let a2 = ask_bash(&app, "3f2a9c1e-aaaa", "two").await;
    let (t, m2) = in_thread(&app, 0, 1).await;
    assert_eq!(t, thread_a);
    assert!(serde_json::to_string(&m2).unwrap().contains("touch two"));

    // Another session, at the same time: a thread of its own.
    let b1 = ask_bash(&app, "77b0c0de-bbbb", "three").await;
    let (thread_b, m3) = in_thread(&app, 1, 0).await;
    assert_ne!(thread_b.id, thread_a.id);
    assert_eq!(thread_b.name, "claude-code · shop · 77b0c0de");
    allow(&app, &m3, b1).await;
    allow(&app, &m2, a2).await;

    // Its end of turn too, and a reply given in the thread keeps the agent working.
    let stop = json!({"session_id": "3f2a9c1e-aaaa", "cwd": "/work/shop",
        "hook_event_name": "Stop", "stop_hook_active": false,
        "last_assistant_message": "Done. Shall I also clean up?"});
    let bin = Bin::new().env("ASKRELAY_SOCKET_PATH", app.socket().display());
    let hook = start(&bin, &["hook", "claude-code"], &stop.to_string()).await;
    let (t, m4) = in_thread(&app, 0, 2).await;
    assert_eq!(t, thread_a);
    let opened = app.press(&m4, &alice(), "Reply…").await;
    let modal = opened["data"]["custom_id"].as_str().unwrap().to_owned();
    final_state(
        &app.submit_modal(&m4, &alice(), &modal, "Yes, clean up")
            .await,
    );
    let (code, out, err) = finish(hook).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        serde_json::from_str::<Value>(out.trim()).unwrap(),
        json!({"decision": "block", "reason": "Yes, clean up"})
    );

    assert!(
        app.messages(CHANNEL).is_empty(),
        "nothing in the channel itself"
    );
    assert_eq!(app.standin().threads().len(), 2);
    app.assert_payloads_valid();
}

#[tokio::test]
async fn a_restart_keeps_the_sessions_thread_and_a_deleted_one_is_replaced() {
    let mut app = app().await;
    let a1 = ask_bash(&app, "sess-restart", "one").await;
    let (thread, m1) = in_thread(&app, 0, 0).await;
    allow(&app, &m1, a1).await;

    app.restart().await;
    let a2 = ask_bash(&app, "sess-restart", "two").await;
    let (t, m2) = in_thread(&app, 0, 1).await;
    assert_eq!(t, thread, "the same thread after a restart");
    allow(&app, &m2, a2).await;
    assert_eq!(app.standin().threads().len(), 1);

    // Someone deletes the thread: the session's next question starts a new one.
    app.standin().delete_thread(thread.id);
    app.restart().await;
    let a3 = ask_bash(&app, "sess-restart", "three").await;
    let (t, m3) = in_thread(&app, 0, 0).await;
    assert_ne!(t.id, thread.id);
    assert_eq!(t.name, thread.name);
    allow(&app, &m3, a3).await;

    // And while the daemon runs: the question goes to a new thread, not nowhere.
    app.standin().delete_thread(t.id);
    let a4 = ask_bash(&app, "sess-restart", "four").await;
    let (t4, m4) = in_thread(&app, 0, 0).await;
    assert_ne!(t4.id, t.id);
    allow(&app, &m4, a4).await;
    app.assert_payloads_valid();
}

#[tokio::test]
async fn without_threads_a_session_is_posted_in_the_channel() {
    let app = App::discord().await;
    let a1 = ask_bash(&app, "sess-plain", "one").await;
    let m = within("the question in the channel", async {
        let mut rx = app.standin().subscribe();
        loop {
            if let Some(m) = app.messages(CHANNEL).into_iter().next() {
                return m;
            }
            let _ = rx.changed().await;
        }
    })
    .await;
    allow(&app, &m, a1).await;
    assert!(app.standin().threads().is_empty());
}
