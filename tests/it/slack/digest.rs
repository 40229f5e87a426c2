//! The digest in Slack (`[digest] slack_channel_id`): posted on its schedule in its channel with
//! what that channel may see (the routes that post there and those `digest.routes` names, never
//! another channel's), agent text inert, the median in a context line, nothing when nothing
//! waits; a turn's post that Slack rate-limits is tried again with the same `client_msg_id`.

use super::*;
use askrelay::config::Route;
use askrelay_testkit::slack::SlackFailure;
use serde_json::json;
use std::collections::BTreeMap;
use std::time::Duration;

const DIGESTS: &str = "C0DIGEST01";
const SECRET: &str = "C0SECRET01";

/// Waits until the stored Slack digest schedule satisfies `pred`.
async fn schedule_until(t: &Slack, what: &str, pred: impl Fn(Option<i64>) -> bool) -> Option<i64> {
    within(what, async {
        loop {
            let due = t.app.store().schedule_due("slack-digest").await.unwrap();
            if pred(due) {
                return due;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
}

fn in_digests(r: &Recorded) -> bool {
    r.param_str("channel") == Some(DIGESTS)
}

/// Every second; the default route (posting elsewhere) named, a route in another channel not.
fn digest_config(c: &mut Config) {
    c.slack.allowed_user_ids = vec!["U0ALICE01".into()];
    c.digest.slack_channel_id = Some(DIGESTS.into());
    c.digest.every_secs = Some(1);
    c.digest.routes = vec!["default".into()];
    let mut secret = Route::new("secret", 0);
    secret.channel_id = None;
    secret.matches = BTreeMap::from([("project".into(), "secret".into())]);
    secret.slack_channel_id = Some(SECRET.into());
    c.routes.push(secret);
}

async fn ask_in(t: &Slack, id: &str, input: &serde_json::Value, project: Option<&str>) -> Client {
    let mut line = ask_line(id, input);
    if let Some(p) = project {
        line["scope"] = json!({ "project": p });
    }
    let mut c = t.app.client().await;
    c.send_json(&line).await.unwrap();
    expect_event(&mut c, "accepted").await;
    c
}

#[tokio::test]
async fn the_digest_lists_what_its_channel_may_see_and_is_silent_when_nothing_waits() {
    let t = Slack::start_with(digest_config).await;
    t.s.add_channel(DIGESTS, "digests");
    t.s.add_channel(SECRET, "secret");
    // Two turns with nothing pending: no digest.
    let first = schedule_until(&t, "the Slack digest schedule to start", |d| d.is_some())
        .await
        .unwrap();
    schedule_until(&t, "two digest turns", |d| {
        d.is_some_and(|d| d >= first + 2000)
    })
    .await;
    assert!(
        !t.s.calls("chat.postMessage").iter().any(in_digests),
        "nothing was pending"
    );
    // Discord's schedule is not Slack's: none is kept without a Discord digest.
    assert_eq!(t.app.store().schedule_due("digest").await.unwrap(), None);

    // One answered (for the median), one waiting with hostile text, one in another channel.
    let mut done = ask_in(&t, "done", &yes_no("q"), None).await;
    let m = t.message(0).await;
    t.press(&alice(), &m, "No, keep them").await;
    expect_event(&mut done, "answered").await;
    let mut input = yes_no("q");
    input["questions"][0]["question"] = json!("Drop <!channel> and <@U0BOB0001>?");
    let _waiting = ask_in(&t, "waiting", &input, None).await;
    let _hidden = ask_in(&t, "hidden", &yes_no("q"), Some("secret")).await;
    let post = within(
        "a digest listing the waiting request",
        t.s.wait_for_request("chat.postMessage", |r| {
            r.ok() && in_digests(r) && r.params.to_string().contains("waiting")
        }),
    )
    .await;
    let p = &post.params;
    assert_eq!(p["text"], "1 question(s) waiting for an answer", "{p}");
    let blocks = p["blocks"].as_array().unwrap();
    assert_eq!(blocks[0]["type"], "header", "{p}");
    let list = blocks[1]["text"]["text"].as_str().unwrap();
    assert!(list.contains("`waiting`"), "{list}");
    assert!(!list.contains("hidden"), "another channel's route: {list}");
    // Agent text is inert; the line links to the question's message.
    assert!(
        list.contains("&lt;!channel&gt;") && list.contains("&lt;@U0BOB0001&gt;"),
        "{list}"
    );
    assert!(
        !list.contains("<!channel>") && !list.contains("<@U0BOB0001>"),
        "{list}"
    );
    assert!(
        list.contains(&format!("https://slack.com/archives/{DEFAULT_CHANNEL}/p")),
        "{list}"
    );
    let median = blocks.last().unwrap()["elements"][0]["text"]
        .as_str()
        .unwrap();
    assert!(
        median.starts_with("median time to an answer over the last day: ")
            && median.ends_with("(1 answered)"),
        "{median}"
    );
    assert_eq!(p["link_names"], false, "{p}");
    t.s.assert_no_violations();
}

#[tokio::test]
async fn a_rate_limited_digest_is_posted_once_with_the_same_client_msg_id() {
    let t = Slack::start_with(|c| {
        digest_config(c);
        c.digest.every_secs = Some(2);
    })
    .await;
    t.s.add_channel(DIGESTS, "digests");
    let _waiting = ask_in(&t, "waiting", &yes_no("q"), None).await;
    t.message(0).await;
    // The next post is the digest's first turn with something pending: Slack rate-limits it.
    t.s.fail_next(
        "chat.postMessage",
        SlackFailure::RateLimited {
            retry_after_secs: 1,
        },
        1,
    );
    let posted = within(
        "the digest's post after the 429",
        t.s.wait_for_request("chat.postMessage", |r| r.ok() && in_digests(r)),
    )
    .await;
    let id = posted.params["client_msg_id"].as_str().unwrap().to_owned();
    assert_eq!(id.len(), 36, "a UUID: {id}");
    let tries: Vec<_> =
        t.s.calls("chat.postMessage")
            .into_iter()
            .filter(|r| in_digests(r) && r.param_str("client_msg_id") == Some(id.as_str()))
            .collect();
    assert_eq!(tries.len(), 2, "one 429, then the post, as one message");
    assert!(!tries[0].ok() && tries[1].ok());
    t.s.assert_no_violations();
}

#[tokio::test]
async fn a_digest_whose_answer_was_lost_is_found_in_the_history_not_posted_twice() {
    let t = Slack::start_with(|c| {
        digest_config(c);
        c.digest.every_secs = Some(2);
    })
    .await;
    t.s.add_channel(DIGESTS, "digests");
    let _waiting = ask_in(&t, "waiting", &yes_no("q"), None).await;
    t.message(0).await;
    // The digest's post lands, and its answer is lost (a 502 from Slack's edge).
    t.s.fail_next("chat.postMessage", SlackFailure::LostReply(502), 1);
    let searched = within(
        "the digests channel's history searched",
        t.s.wait_for_request("conversations.history", |r| {
            r.ok() && r.param_str("channel") == Some(DIGESTS)
        }),
    )
    .await;
    // The next turns post digests of their own; this turn's is the lost one, never again.
    let lost =
        t.s.calls("chat.postMessage")
            .into_iter()
            .find(in_digests)
            .unwrap();
    assert_eq!(lost.status, 502);
    assert!(lost.at < searched.at);
    let id = lost.param_str("client_msg_id").unwrap().to_owned();
    // Turns run one after the other: once the next turn's digest is up, this one is done.
    let other = id.clone();
    within(
        "the next turn's digest",
        t.s.wait_for_request("chat.postMessage", move |r| {
            r.ok() && in_digests(r) && r.param_str("client_msg_id") != Some(other.as_str())
        }),
    )
    .await;
    let tries =
        t.s.calls("chat.postMessage")
            .into_iter()
            .filter(|r| r.param_str("client_msg_id") == Some(id.as_str()))
            .count();
    assert_eq!(tries, 1, "the turn's digest is not posted again");
}
