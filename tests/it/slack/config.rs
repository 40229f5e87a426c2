//! Slack's tokens at start-up: a token of the wrong shape or an empty one stops `serve` with the
//! key and the shape expected, never the token; the tokens in use never reach the logs.

use super::*;

#[tokio::test]
async fn bad_tokens_stop_serve_without_showing_them() {
    for (key, value, says) in [
        (
            "ASKRELAY_SLACK_BOT_TOKEN",
            "xapp-1-A0-leaked-secret-value",
            "slack.bot_token: does not look like the bot token: it should start with xoxb-",
        ),
        (
            "ASKRELAY_SLACK_APP_TOKEN",
            "xoxb-1-leaked-secret-value",
            "slack.app_token: does not look like the app-level token: it should start with xapp-",
        ),
        ("ASKRELAY_SLACK_BOT_TOKEN", "", "slack.bot_token: is empty"),
    ] {
        let bin = Bin::new()
            .env("ASKRELAY_SLACK_BOT_TOKEN", BOT_TOKEN)
            .env("ASKRELAY_SLACK_APP_TOKEN", APP_TOKEN)
            .env(key, value);
        for command in ["serve", "check-config"] {
            let (code, out, err) = bin.run(&[command]).await;
            assert_eq!(code, 2, "{command} with a bad {key}: {err}");
            assert!(err.contains(says), "{command}: {err}");
            assert_eq!(err.lines().count(), 1, "one line: {err}");
            assert!(
                !format!("{out}{err}").contains("leaked-secret"),
                "{command} printed the token: {err}"
            );
        }
    }
}

#[tokio::test]
async fn the_tokens_never_reach_the_logs() {
    let s = SlackStandIn::start().await;
    let bin = Bin::new()
        .env("ASKRELAY_SLACK_BOT_TOKEN", BOT_TOKEN)
        .env("ASKRELAY_SLACK_APP_TOKEN", APP_TOKEN)
        .env("ASKRELAY_SLACK__API_BASE", s.api_base())
        .env("ASKRELAY_SLACK__CHANNEL_ID", DEFAULT_CHANNEL);
    let mut cmd = bin.cmd(&["serve"]);
    cmd.env("ASKRELAY_LOG", "trace");
    let daemon = bin.serve_cmd(cmd).await;
    within("the Socket Mode connection", s.wait_connected(1)).await;
    let mut c = Client::connect(&bin.socket()).await.unwrap();
    c.send_json(&ask_line("secret", &yes_no("q")))
        .await
        .unwrap();
    expect_event(&mut c, "accepted").await;
    within(
        "the question posted",
        s.wait_for_request("chat.postMessage", Recorded::ok),
    )
    .await;
    let m = s.messages(DEFAULT_CHANNEL).remove(0);
    s.click(
        &alice(),
        DEFAULT_CHANNEL,
        ts(&m),
        button(&m, "No, keep them"),
    )
    .await;
    expect_event(&mut c, "answered").await;
    within("the edit", s.wait_for_request("chat.update", Recorded::ok)).await;
    let (status, log) = daemon.terminate().await;
    assert!(status.success());
    assert!(
        log.contains("TRACE") || log.contains("DEBUG"),
        "trace level was on"
    );
    for token in [BOT_TOKEN, APP_TOKEN] {
        assert!(!log.contains(token), "a token is in the log:\n{log}");
    }
    let (code, out, err) = bin.run(&["check-config"]).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("slack: token ok"), "{out}");
    assert!(!format!("{out}{err}").contains(BOT_TOKEN));
}
