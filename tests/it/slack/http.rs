//! The HTTP Events API mode: Slack posts a press, signed with the app's signing secret, to
//! `slack.listen`; a press with a wrong signature or an old timestamp is refused with 401 and
//! settles nothing, a signed one settles, and the 200 comes after the commit; a signed
//! `/askrelay` is answered in the response.

use super::*;
use askrelay_testkit::slack::fixtures::{block_actions_on_message, button_action};
use askrelay_testkit::slack::signature;

/// The signing secret the HTTP-mode tests give the daemon.
pub(super) const SECRET: &str = "0123456789abcdef0123456789abcdef";

/// `bin` in the HTTP Events API mode on the stand-in `s`, with [`SECRET`].
pub(super) fn in_http_mode(bin: Bin, s: &SlackStandIn) -> Bin {
    bin.env("ASKRELAY_SLACK_BOT_TOKEN", BOT_TOKEN)
        .env("ASKRELAY_SLACK_SIGNING_SECRET", SECRET)
        .env("ASKRELAY_SLACK__MODE", "http")
        .env("ASKRELAY_SLACK__LISTEN", "127.0.0.1:0")
        .env("ASKRELAY_SLACK__API_BASE", s.api_base())
        .env("ASKRELAY_SLACK__CHANNEL_ID", DEFAULT_CHANNEL)
}

/// The address the daemon listens on for Slack's requests, from its log.
pub(super) async fn listen_addr(daemon: &mut Served) -> String {
    let line = daemon.wait_log("listening for Slack's requests").await;
    line.split("addr=")
        .nth(1)
        .and_then(|a| a.split_whitespace().next())
        .unwrap_or_else(|| panic!("no address in {line}"))
        .to_owned()
}

/// POSTs `body` to the daemon's endpoint as Slack would, signed with `secret` at `ts`.
async fn send(addr: &str, body: &str, secret: &str, ts: u64) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("http://{addr}/slack/events"))
        .header("content-type", "application/x-www-form-urlencoded")
        .header("x-slack-request-timestamp", ts.to_string())
        .header("x-slack-signature", signature(secret, ts, body))
        .body(body.to_owned())
        .send()
        .await
        .unwrap()
}

/// [`send`]'s status.
async fn post(addr: &str, body: &str, secret: &str, ts: u64) -> u16 {
    send(addr, body, secret, ts).await.status().as_u16()
}

#[tokio::test]
async fn signed_presses_settle_and_unsigned_or_old_ones_are_refused() {
    let s = SlackStandIn::start().await;
    let bin = in_http_mode(Bin::new(), &s);
    let mut daemon = bin.serve().await;
    let addr = listen_addr(&mut daemon).await;
    let mut c = Client::connect(&bin.socket()).await.unwrap();
    c.send_json(&ask_line("signed", &yes_no("q")))
        .await
        .unwrap();
    expect_event(&mut c, "accepted").await;
    let m = s.messages(DEFAULT_CHANNEL).remove(0);
    let Action::Button {
        block_id,
        action_id,
    } = button(&m, "No, keep them")
    else {
        unreachable!()
    };
    let payload = block_actions_on_message(
        &alice(),
        DEFAULT_CHANNEL,
        "askrelay",
        ts(&m),
        Some(&m),
        vec![button_action(
            &block_id,
            &action_id,
            "No, keep them",
            Some("1"),
            "1.0",
        )],
        "trigger-1",
        &format!("{}/response/none", s.base_url()),
    );
    let body: String = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("payload", &payload.to_string())
        .finish();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    // Another secret, and the right one ten minutes late: refused, nothing settles.
    assert_eq!(
        post(&addr, &body, "not-the-secret-at-all-0123456789", now).await,
        401
    );
    assert_eq!(post(&addr, &body, SECRET, now - 600).await, 401);
    assert!(still_pending(&bin, "signed").await, "nothing settled");
    // Signed now: the 200 comes once the answer is stored.
    assert_eq!(post(&addr, &body, SECRET, now).await, 200);
    let ev = expect_event(&mut c, "answered").await;
    assert_eq!(ev["result"]["answers"][0]["selected"][0], "No, keep them");
    // /askrelay, signed: the reply is the response's body, the person's alone.
    let command: String = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("command", "/askrelay")
        .append_pair("text", "history")
        .append_pair("team_id", "T0STANDIN1")
        .append_pair("channel_id", DEFAULT_CHANNEL)
        .append_pair("user_id", "U0ALICE01")
        .append_pair("user_name", "alice")
        .append_pair("response_url", &format!("{}/response/none", s.base_url()))
        .append_pair("trigger_id", "trigger-2")
        .finish();
    let unsigned = send(&addr, &command, "not-the-secret-at-all-0123456789", now).await;
    assert_eq!(unsigned.status().as_u16(), 401);
    let reply = send(&addr, &command, SECRET, now).await;
    assert_eq!(reply.status().as_u16(), 200);
    let reply: Value = serde_json::from_str(&reply.text().await.unwrap()).unwrap();
    assert_eq!(reply["response_type"], "ephemeral", "{reply}");
    let text = reply["text"].as_str().unwrap();
    assert!(
        text.contains("`signed`") && text.contains("No, keep them"),
        "{reply}"
    );
    within(
        "the message's outcome",
        s.wait_for_request("chat.update", Recorded::ok),
    )
    .await;
    // No Socket Mode in this mode.
    assert_eq!(s.connections_opened(), 0);
    let (status, log) = daemon.terminate().await;
    assert!(status.success());
    assert!(!log.contains(SECRET), "the signing secret is in the log");
}

/// Whether request `id` is still unanswered, as `askrelay pending` shows it.
async fn still_pending(bin: &Bin, id: &str) -> bool {
    let (code, out, err) = bin.run(&["pending", "--json"]).await;
    assert_eq!(code, 0, "{err}");
    out.contains(id)
}
