//! The digest (`[digest]`): posted on its schedule with what is waiting, nothing when nothing
//! is, and resumed from the stored schedule after a restart.

use crate::harness::*;
use askrelay::config::{Route, Snowflake};
use serde_json::json;
use std::collections::BTreeMap;
use std::time::Duration;

const DIGESTS: u64 = 888;

/// Waits until the stored digest schedule satisfies `pred` (the store is the event source).
async fn schedule_until(app: &App, what: &str, pred: impl Fn(Option<i64>) -> bool) -> Option<i64> {
    within(what, async {
        loop {
            let due = app.store().schedule_due("digest").await.unwrap();
            if pred(due) {
                return due;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
}

fn digest_posts(app: &App) -> usize {
    app.standin()
        .requests()
        .iter()
        .filter(|r| {
            r.method == "POST" && r.path.ends_with(&format!("/channels/{DIGESTS}/messages"))
        })
        .count()
}

#[tokio::test]
async fn the_digest_lists_what_waits_and_is_silent_when_nothing_does() {
    let app = App::discord_with(|c| {
        c.digest.channel_id = Some(Snowflake(DIGESTS));
        c.digest.every_secs = Some(1);
        // The default route posts elsewhere: the digest's channel is let see it.
        c.digest.routes = vec!["default".into()];
    })
    .await;
    // Two turns with nothing pending: no digest.
    let first = schedule_until(&app, "the digest schedule to start", |d| d.is_some())
        .await
        .unwrap();
    schedule_until(&app, "two digest turns", |d| {
        d.is_some_and(|d| d >= first + 2000)
    })
    .await;
    assert_eq!(digest_posts(&app), 0, "nothing was pending");

    // One answered (for the median), one waiting.
    let (mut c, _) = app.ask("done", &yes_no("q")).await;
    let msg = app.messages(CHANNEL).remove(0);
    app.press(&msg, &alice(), "No, keep them").await;
    expect_event(&mut c, "answered").await;
    let (_w, _) = app.ask("waiting", &yes_no("q")).await;
    let post = within(
        "a digest",
        app.standin().wait_for_request(|r| {
            r.method == "POST" && r.path.ends_with(&format!("/channels/{DIGESTS}/messages"))
        }),
    )
    .await
    .body
    .unwrap();
    let embed = &post["embeds"][0];
    assert_eq!(
        embed["title"], "1 question(s) waiting for an answer",
        "{post}"
    );
    let list = embed["description"].as_str().unwrap();
    assert!(
        shown(list).contains("Confirm: Proceed with the destructive cleanup?"),
        "{list}"
    );
    assert!(
        list.contains("[jump](https://discord.com/channels/"),
        "{list}"
    );
    let footer = embed["footer"]["text"].as_str().unwrap();
    assert!(
        footer.starts_with("median time to an answer over the last day: "),
        "{footer}"
    );
    assert!(footer.ends_with("(1 answered)"), "{footer}");
    assert_eq!(
        post["allowed_mentions"],
        json!({"parse": [], "users": [], "roles": []})
    );
    app.assert_payloads_valid();
}

#[tokio::test]
async fn the_digest_schedule_is_resumed_after_a_restart() {
    let mut app = App::discord_with(|c| {
        c.digest.channel_id = Some(Snowflake(DIGESTS));
        c.digest.every_secs = Some(86_400);
        c.digest.at = Some("09:00".into());
        c.digest.timezone = Some("Europe/Berlin".into());
    })
    .await;
    let due = schedule_until(&app, "the digest schedule to start", |d| d.is_some())
        .await
        .unwrap();
    let now = askrelay::domain::clock::now_ms();
    assert!(
        due > now && due <= now + 86_400_000,
        "the next 09:00 in Berlin: {due}"
    );
    app.restart().await;
    // The stored turn is kept, not computed again.
    assert_eq!(app.store().schedule_due("digest").await.unwrap(), Some(due));
}

/// The digest posts in its own channel, so it lists only what that channel may see: the
/// requests of the routes that post there. A route without an allowlist in a private channel
/// used to show in it, as did requests that only the terminal was asked (they never went to
/// Discord). Agent text in the digest is inert.
#[tokio::test]
async fn the_digest_lists_only_its_channels_routes_and_nothing_left_to_the_terminal() {
    const SECRET: u64 = 777;
    let app = App::discord_with(|c| {
        // No default route: a request no route matches is left to the terminal.
        c.discord.channel_id = None;
        c.terminal.enabled = Some(true);
        c.routes.push(Route {
            matches: BTreeMap::from([("project".into(), "infra".into())]),
            ..Route::new("infra", DIGESTS)
        });
        c.routes.push(Route {
            matches: BTreeMap::from([("project".into(), "secret".into())]),
            ..Route::new("secret", SECRET)
        });
        c.digest.channel_id = Some(Snowflake(DIGESTS));
        c.digest.every_secs = Some(1);
    })
    .await;
    let ask = |id: String, project: Option<&str>| {
        let app = &app;
        let mut line = ask_line(&id, &yes_no("q"));
        if let Some(p) = project {
            line["scope"] = json!({ "project": p });
        }
        async move {
            let mut c = app.client().await;
            c.send_json(&line).await.unwrap();
            let accepted = expect_event(&mut c, "accepted").await;
            (c, accepted)
        }
    };
    let (_t, acc) = ask("terminal-only".into(), None).await;
    assert_eq!(acc["answerer"], "terminal", "{acc}");
    let (_s, _) = ask("secret-1".into(), Some("secret")).await;
    let evil = "` [Open the runbook](https://evil.example) <@&123456789012345678>";
    let infra = format!("infra{evil}");
    let (_i, _) = ask(infra.clone(), Some("infra")).await;
    // The first digest that lists the infra request was posted after all three were asked.
    let post = within(
        "a digest with the infra request",
        app.standin().wait_for_request(|r| {
            r.method == "POST"
                && r.path.ends_with(&format!("/channels/{DIGESTS}/messages"))
                && r.body.as_ref().is_some_and(|b| {
                    let embed = &b["embeds"][0];
                    embed["title"]
                        .as_str()
                        .unwrap_or("")
                        .ends_with("waiting for an answer")
                        && embed["description"]
                            .as_str()
                            .unwrap_or("")
                            .contains("infra")
                })
        }),
    )
    .await
    .body
    .unwrap();
    let embed = &post["embeds"][0];
    assert_eq!(
        embed["title"], "1 question(s) waiting for an answer",
        "{post}"
    );
    let list = embed["description"].as_str().unwrap();
    assert!(
        !list.contains("terminal"),
        "a terminal-only request: {list}"
    );
    assert!(!list.contains("secret"), "another channel's route: {list}");
    let shown = askrelay_testkit::discord_markdown::parse(list).display;
    assert!(shown.contains(&infra), "{shown}");
    assert_markup_is_ours(&post, &["evil", "runbook", "1234567"], &[]);
    app.assert_payloads_valid();
}
