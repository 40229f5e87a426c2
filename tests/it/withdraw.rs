//! `withdraw` on the socket (docs/protocol.md, "withdraw"): the agent went on without
//! askrelay's answer, so its pending requests end as cancelled, "withdrawn: …"; an asker
//! marked `on_disconnect: withdraw` (an agent's hook) that goes away withdraws its request at
//! once; and every copy of a withdrawn question in Discord says why.

use crate::approvals::{finish, start};
use crate::harness::*;
use askrelay::config::{EscalationStep, Snowflake};
use askrelay::domain::request::WithdrawReason;
use serde_json::{json, Value};
use tokio::io::AsyncBufReadExt;

fn scoped(request_id: &str, session: &str, call: &str) -> Value {
    let mut line = ask_line(request_id, &yes_no("q"));
    line["scope"] = json!({"session": session, "call": call});
    line
}

#[tokio::test]
async fn withdraw_by_call_ends_only_that_call_and_names_the_terminal() {
    let app = App::start().await;
    let mut a = app.client().await;
    a.send_json(&scoped("call-a", "s1", "k1")).await.unwrap();
    expect_event(&mut a, "accepted").await;
    let mut b = app.client().await;
    b.send_json(&scoped("call-b", "s1", "k2")).await.unwrap();
    expect_event(&mut b, "accepted").await;

    let mut other = app.client().await;
    let reply = other
        .call_json(&json!({"op": "withdraw", "reason": "answered_in_terminal",
                           "session": "s1", "call": "k1", "agent": "claude-code",
                           "event": "PostToolUse"}))
        .await
        .unwrap();
    assert_eq!(reply["event"], "withdrawn", "{reply}");
    assert_eq!(reply["ended"], 1, "{reply}");
    assert_eq!(reply["request_ids"], json!(["call-a"]));

    let ev = expect_event(&mut a, "error").await;
    assert_eq!(ev["code"], "ABORTED", "{ev}");
    assert_eq!(
        ev["message"],
        "the request was cancelled: withdrawn: answered in the terminal (PostToolUse)"
    );
    // A late answer decides nothing, and is audited as refused.
    let reply = other
        .call_json(
            &json!({"op": "answer", "request_id": "call-a", "question": "q",
                           "select": ["No, keep them"]}),
        )
        .await
        .unwrap();
    assert_eq!(reply["code"], "CONFLICT", "{reply}");
    let audit = app.store().audit_rows(None).await.unwrap();
    let cancel = audit
        .iter()
        .find(|r| {
            r.detail
                .as_deref()
                .is_some_and(|d| d.contains("answered in the terminal"))
        })
        .unwrap_or_else(|| panic!("{audit:?}"));
    // The decider is the agent's own terminal, where the person answered; not the hook
    // process that told.
    assert_eq!(
        (cancel.source.as_str(), cancel.action.as_str()),
        ("terminal", "withdrawn"),
        "{cancel:?}"
    );
    assert!(
        cancel
            .actor
            .as_deref()
            .unwrap_or("")
            .starts_with("terminal:claude-code "),
        "{cancel:?}"
    );
    assert!(audit.iter().any(|r| r.action == "answer" && !r.accepted));
    // Stored with the request, and shown in its history.
    let req = app.store().by_id("call-a").await.unwrap().unwrap();
    assert_eq!(req.withdrawn, Some(WithdrawReason::AnsweredInTerminal));
    let history = other
        .call_json(&json!({"op": "history", "limit": 10}))
        .await
        .unwrap();
    let seen = history["requests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["request_id"] == "call-a")
        .cloned()
        .unwrap_or_else(|| panic!("{history}"));
    assert_eq!(seen["withdrawn"], "answered_in_terminal", "{seen}");
    assert_eq!(seen["status"], "cancelled", "{seen}");

    // The other call is still pending; a session-wide withdrawal ends it.
    let reply = other
        .call_json(
            &json!({"op": "withdraw", "reason": "agent_moved_on", "session": "s1",
                           "event": "Stop"}),
        )
        .await
        .unwrap();
    assert_eq!(reply["request_ids"], json!(["call-b"]), "{reply}");
    let ev = expect_event(&mut b, "error").await;
    assert_eq!(
        ev["message"],
        "the request was cancelled: withdrawn: the agent moved on (Stop)"
    );
    // The agent moved on: its session's hook told, and the audit names that peer.
    let audit = app.store().audit_rows(None).await.unwrap();
    let moved = audit
        .iter()
        .find(|r| r.detail.as_deref().is_some_and(|d| d.contains("(Stop)")))
        .unwrap_or_else(|| panic!("{audit:?}"));
    assert_eq!(
        (moved.source.as_str(), moved.action.as_str()),
        ("socket", "withdrawn")
    );
    assert!(
        moved.actor.as_deref().unwrap_or("").starts_with("uid:"),
        "{moved:?}"
    );
}

#[tokio::test]
async fn withdraw_of_another_session_or_an_unknown_reason_ends_nothing() {
    let app = App::start().await;
    let mut a = app.client().await;
    a.send_json(&scoped("keep", "s1", "k1")).await.unwrap();
    expect_event(&mut a, "accepted").await;
    let mut other = app.client().await;
    let reply = other
        .call_json(&json!({"op": "withdraw", "reason": "hook_killed", "session": "s2"}))
        .await
        .unwrap();
    assert_eq!(reply["ended"], 0, "{reply}");
    let reply = other
        .call_json(&json!({"op": "withdraw", "reason": "bored", "session": "s1"}))
        .await
        .unwrap();
    assert_eq!(reply["event"], "error", "{reply}");
    let reply = other
        .call_json(&json!({"op": "pending", "request_id": "keep"}))
        .await
        .unwrap();
    assert_eq!(reply["requests"][0]["request_id"], "keep", "{reply}");
}

#[tokio::test]
async fn withdraw_by_request_id_needs_no_session_and_a_bad_agent_name_is_refused() {
    let app = App::start().await;
    let mut a = app.client().await;
    a.send_json(&ask_line("one", &yes_no("q"))).await.unwrap();
    expect_event(&mut a, "accepted").await;
    let mut other = app.client().await;
    let reply = other
        .call_json(&json!({"op": "withdraw", "reason": "hook_killed"}))
        .await
        .unwrap();
    assert_eq!(reply["code"], "INVALID_REQUEST", "{reply}");
    let reply = other
        .call_json(&json!({"op": "withdraw", "reason": "answered_in_terminal",
                           "request_id": "one", "agent": "claude code"}))
        .await
        .unwrap();
    assert_eq!(reply["code"], "INVALID_REQUEST", "{reply}");
    let reply = other
        .call_json(
            &json!({"op": "withdraw", "reason": "hook_killed", "request_id": "one",
                           "event": "SIGTERM"}),
        )
        .await
        .unwrap();
    assert_eq!(reply["request_ids"], json!(["one"]), "{reply}");
    let ev = expect_event(&mut a, "error").await;
    assert_eq!(
        ev["message"],
        "the request was cancelled: withdrawn: the agent moved on: its waiting hook was stopped \
         (SIGTERM)"
    );
}

/// An ask that says its asker never comes back (`on_disconnect: withdraw`, an agent's hook).
fn hook_ask(request_id: &str) -> Value {
    let mut line = scoped(request_id, "s1", "k1");
    line["on_disconnect"] = json!("withdraw");
    line
}

#[tokio::test]
async fn an_asker_that_never_comes_back_is_withdrawn_as_soon_as_its_connection_closes() {
    // The re-attach window is longer than any wait here: only the mark can end it in time.
    let app = App::start_with(|c| c.cancel_grace_secs = 3600).await;
    let mut c = app.client().await;
    c.send_json(&hook_ask("gone")).await.unwrap();
    expect_event(&mut c, "accepted").await;
    // Without the mark, a closed connection waits for a re-attach.
    let mut plain = app.client().await;
    plain.send_json(&scoped("stays", "s1", "k2")).await.unwrap();
    expect_event(&mut plain, "accepted").await;
    drop(c);
    drop(plain);
    app.wait_ended("gone").await;
    let req = app.store().by_id("gone").await.unwrap().unwrap();
    assert_eq!(req.withdrawn, Some(WithdrawReason::HookKilled));
    assert_eq!(
        req.error().unwrap().message,
        "the request was cancelled: withdrawn: the agent moved on: its waiting hook was stopped \
         (its connection closed)"
    );
    assert!(app.hub().is_pending("stays"));
    let audit = app.store().audit_rows(Some(req.key)).await.unwrap();
    assert!(
        audit.iter().any(|r| r.action == "withdrawn" && r.accepted),
        "{audit:?}"
    );
    // The mark is the ask's own: a bad value is refused, naming the field.
    let mut bad = hook_ask("bad");
    bad["on_disconnect"] = json!("never");
    let reply = app.client().await.call_json(&bad).await.unwrap();
    assert_eq!(reply["code"], "INVALID_REQUEST", "{reply}");
    assert!(
        reply["message"]
            .as_str()
            .unwrap()
            .starts_with("on_disconnect:"),
        "{reply}"
    );
}

fn permission_request(id: &str) -> String {
    json!({
        "session_id": "sess-gone",
        "cwd": "/work/shop",
        "hook_event_name": "PermissionRequest",
        "tool_name": "Bash",
        "tool_input": {"command": format!("touch {id}"), "description": "Create it"},
        "permission_suggestions": []
    })
    .to_string()
}

/// A running hook: the process, its request's id, and its stderr (kept open, as an agent
/// keeps it, unless a test drops it).
struct Waiting {
    child: tokio::process::Child,
    id: String,
    stderr: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStderr>>,
}

/// Starts `askrelay hook claude-code` on `event` and waits until its request is pending.
async fn hook_waiting(app: &App, event: &str) -> Waiting {
    let bin = Bin::new().env("ASKRELAY_SOCKET_PATH", app.socket().display());
    let mut child = start(&bin, &["hook", "claude-code"], event).await;
    let mut err = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let id = within("the hook to ask", async {
        while let Some(line) = err.next_line().await.unwrap() {
            if let Some(rest) = line.strip_prefix("askrelay: request ") {
                if line.contains("is waiting for an answer") {
                    return rest.split_whitespace().next().unwrap().to_owned();
                }
            }
        }
        panic!("the hook ended without asking");
    })
    .await;
    assert!(app.hub().is_pending(&id), "{id}");
    Waiting {
        child,
        id,
        stderr: err,
    }
}

impl Waiting {
    /// Exit code, stdout, and the rest of stderr.
    async fn finish(mut self) -> (i32, String, String) {
        let mut rest = Vec::new();
        while let Ok(Some(l)) = self.stderr.next_line().await {
            rest.push(l);
        }
        let (code, out, _) = finish(self.child).await;
        (code, out, rest.join("\n"))
    }
}

#[tokio::test]
async fn a_hook_killed_with_sigkill_withdraws_its_request_at_once() {
    let app = App::start_with(|c| c.cancel_grace_secs = 3600).await;
    let mut hook = hook_waiting(&app, &permission_request("killed")).await;
    let id = hook.id.clone();
    hook.child.kill().await.unwrap();
    app.wait_ended(&id).await;
    let req = app.store().by_id(&id).await.unwrap().unwrap();
    assert_eq!(req.withdrawn, Some(WithdrawReason::HookKilled), "{req:?}");
    assert!(
        req.error()
            .unwrap()
            .message
            .contains("(its connection closed)"),
        "{req:?}"
    );
}

#[tokio::test]
async fn a_hook_whose_agent_closes_its_stdout_withdraws_its_request_at_once() {
    let app = App::start_with(|c| c.cancel_grace_secs = 3600).await;
    let mut hook = hook_waiting(&app, &permission_request("orphan")).await;
    let id = hook.id.clone();
    // The agent went away: its ends of the hook's stdout and stderr are closed. (Its stdin
    // was closed from the start, as every agent does once the event is written.)
    drop(hook.child.stdout.take());
    drop(hook.stderr);
    app.wait_ended(&id).await;
    let req = app.store().by_id(&id).await.unwrap().unwrap();
    assert_eq!(req.withdrawn, Some(WithdrawReason::HookKilled), "{req:?}");
    assert!(
        req.error()
            .unwrap()
            .message
            .contains("(its agent closed the hook's stdout)"),
        "{req:?}"
    );
    // And the hook ends, without a decision (nobody reads one), and without a panic over
    // the closed pipes.
    let (code, _, _) = finish(hook.child).await;
    assert_eq!(code, 0);
}

#[tokio::test]
async fn sigterm_to_a_waiting_hook_withdraws_its_request() {
    let app = App::start_with(|c| c.cancel_grace_secs = 3600).await;
    let hook = hook_waiting(&app, &permission_request("termed")).await;
    let id = hook.id.clone();
    signal(&hook.child, "-TERM").await;
    let (code, out, err) = hook.finish().await;
    assert_eq!((code, out.as_str()), (0, ""), "no decision: {err}");
    assert!(
        err.contains("no decision (Claude Code's own dialog)"),
        "{err}"
    );
    let req = app.store().by_id(&id).await.unwrap().unwrap();
    assert_eq!(req.withdrawn, Some(WithdrawReason::HookKilled), "{req:?}");
    assert!(
        req.error().unwrap().message.ends_with("(SIGTERM)"),
        "{req:?}"
    );
}

#[tokio::test]
async fn a_hook_waiting_across_a_daemon_restart_is_not_withdrawn() {
    let mut app = App::start_with(|c| c.cancel_grace_secs = 3600).await;
    let hook = hook_waiting(&app, &permission_request("restarted")).await;
    let id = hook.id.clone();
    // Its connection closes with the daemon: that is no reason to withdraw, and it comes back.
    app.restart().await;
    let reply = app.answer(&id, "permission", &["Allow once"]).await;
    assert_eq!(reply["event"], "answer_accepted", "{reply}");
    let (code, out, err) = hook.finish().await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(r#""behavior":"allow""#), "{out} {err}");
    let req = app.store().by_id(&id).await.unwrap().unwrap();
    assert_eq!(req.withdrawn, None, "{req:?}");
}

const COPIES: u64 = 556;
const LEAD: u64 = 7778;

/// The messages created in `channel` (waits for `n` of them), as the stand-in holds them.
async fn messages_in(app: &App, channel: u64, n: usize) -> Vec<Value> {
    let path = format!("/channels/{channel}/messages");
    within(
        &format!("{n} message(s) in channel {channel}"),
        app.standin().wait_for_requests(n, |r| {
            r.method == "POST" && r.path.ends_with(&path) && r.status == 200
        }),
    )
    .await;
    app.messages(channel)
}

#[tokio::test]
async fn every_copy_of_a_question_answered_in_the_terminal_says_so() {
    let app = App::discord_with(|c| {
        c.discord.dm_user_ids = vec![Snowflake(LEAD)];
        c.discord.remind_after_secs = Some(1);
        c.discord.remind_max = Some(1);
        // A second apart: a timer that comes due while another's posts are going out waits
        // for the next repair pass.
        c.discord.escalate = vec![EscalationStep {
            after_secs: 2,
            mention_role_ids: vec![],
            mention_user_ids: vec![],
            channel_id: Some(Snowflake(COPIES)),
            dm_user_ids: vec![],
            allowed_role_ids: vec![],
            allowed_user_ids: vec![],
        }];
    })
    .await;
    let mut c = app.client().await;
    c.send_json(&scoped("everywhere", "s9", "k9"))
        .await
        .unwrap();
    expect_event(&mut c, "accepted").await;
    // The question, its reminder (a reply in the channel), its escalation copy and its DM.
    let in_channel = messages_in(&app, CHANNEL, 2).await;
    let (question, reminder) = (&in_channel[0], &in_channel[1]);
    assert!(
        reminder["content"]
            .as_str()
            .unwrap()
            .starts_with("**Reminder:**"),
        "{reminder}"
    );
    let copy = messages_in(&app, COPIES, 1).await.remove(0);
    let dm = within("the DM", async {
        loop {
            if let Some(ch) = app.standin().dm_channel(LEAD) {
                if let Some(m) = app.messages(ch).into_iter().next() {
                    return m;
                }
            }
            app.standin()
                .wait_for_request(|r| r.method == "POST" && r.path.contains("/messages"))
                .await;
        }
    })
    .await;

    let reply = app
        .client()
        .await
        .call_json(&json!({"op": "withdraw", "reason": "answered_in_terminal",
                           "session": "s9", "call": "k9", "agent": "claude-code",
                           "event": "PostToolUse"}))
        .await
        .unwrap();
    assert_eq!(reply["ended"], 1, "{reply}");
    expect_event(&mut c, "error").await;

    for m in [question, &copy, &dm] {
        let edit = app.edit_of(m).await;
        assert_eq!(edit["components"], json!([]), "{edit}");
        let shown = shown_body(&edit);
        assert!(shown.contains("Answered in the terminal"), "{shown}");
        assert!(
            shown.contains("withdrawn: answered in the terminal (PostToolUse)"),
            "{shown}"
        );
    }
    let edit = app.edit_of(reminder).await;
    assert_eq!(
        edit["content"], "**Answered in the terminal:** this question needs no answer any more.",
        "{edit}"
    );
    assert_eq!(edit["allowed_mentions"]["parse"], json!([]), "{edit}");

    // A click that comes late learns where it was answered, and is audited as late.
    let late = app
        .press(&dm, &lead(), "Yes, delete them (Recommended)")
        .await;
    assert!(
        ephemeral(&late).starts_with("Already answered in the terminal"),
        "{late}"
    );
    let req = app.store().by_id("everywhere").await.unwrap().unwrap();
    let audit = app.store().audit_rows(Some(req.key)).await.unwrap();
    assert!(
        audit
            .iter()
            .any(|r| r.action == "late" && !r.accepted && r.source == "discord"),
        "{audit:?}"
    );
    assert!(!audit.iter().any(|r| r.action == "answer"), "{audit:?}");
    app.assert_payloads_valid();
}

fn lead() -> askrelay_testkit::fixtures::Clicker {
    askrelay_testkit::fixtures::Clicker::new(LEAD, "lead", &[])
}

/// What Codex 0.171.0 sends for one shell call that its approval policy asks about, as seen in
/// its interactive UI (`agents::codex_tui`): the PermissionRequest carries the model's
/// justification as `description`; the PostToolUse after the person allowed it in the terminal
/// carries the command alone.
fn codex_event(event: &str, tool_input: Value) -> String {
    json!({"session_id": "01a24918-b1d2-7da1-b44d-4de21f342f15",
           "turn_id": "01a24918-b220-7ec0-b7f3-595f50a6e1cd",
           "transcript_path": "/home/dev/.codex/sessions/rollout.jsonl",
           "cwd": "/home/dev/proj", "hook_event_name": event, "model": "gpt-test",
           "permission_mode": "default", "tool_name": "Bash", "tool_input": tool_input})
    .to_string()
}

#[tokio::test]
async fn codexs_post_tool_use_withdraws_the_question_of_its_permission_request() {
    // A client that goes away is cancelled only after the grace: longer than any wait here.
    let app = App::start_with(|c| c.cancel_grace_secs = 3600).await;
    let bin = Bin::new().env("ASKRELAY_SOCKET_PATH", app.socket().display());
    let asked = codex_event(
        "PermissionRequest",
        json!({"command": "touch /home/dev/proj/marker", "description": "Create the marker"}),
    );
    let mut hook = crate::approvals::start(&bin, &["hook", "codex"], &asked).await;
    let mut err = tokio::io::BufReader::new(hook.stderr.take().unwrap()).lines();
    within("the hook to ask", async {
        while let Some(line) = err.next_line().await.unwrap() {
            if line.contains("is waiting for an answer") {
                return;
            }
        }
        panic!("the hook ended without asking");
    })
    .await;
    let reply = app
        .client()
        .await
        .call_json(&json!({"op": "pending"}))
        .await
        .unwrap();
    let id = reply["requests"][0]["request_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{reply}"))
        .to_owned();
    // Another call of the session ends nothing.
    let other = codex_event("PostToolUse", json!({"command": "ls"}));
    let (code, out, _) =
        crate::approvals::finish(crate::approvals::start(&bin, &["hook", "codex"], &other).await)
            .await;
    assert_eq!((code, out.as_str()), (0, ""));
    assert!(app.hub().is_pending(&id));
    // The same call, run: withdrawn, though its input has no description.
    let ran = codex_event(
        "PostToolUse",
        json!({"command": "touch /home/dev/proj/marker"}),
    );
    let (code, out, err) =
        crate::approvals::finish(crate::approvals::start(&bin, &["hook", "codex"], &ran).await)
            .await;
    assert_eq!((code, out.as_str()), (0, ""), "{err}");
    assert!(err.contains("withdrew 1 request"), "{err}");
    app.wait_ended(&id).await;
    let status = within("the asking hook to exit", hook.wait())
        .await
        .unwrap();
    assert!(status.success(), "{status}");
    let audit = app.store().audit_rows(None).await.unwrap();
    assert!(
        audit.iter().any(|r| r
            .detail
            .as_deref()
            .is_some_and(|d| d.contains("withdrawn: answered in the terminal (PostToolUse)"))),
        "{audit:?}"
    );
}
