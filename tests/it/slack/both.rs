//! A route shown in Slack and in Discord at once: each posts its copy, the first allowed
//! answer on either settles it, the other copy then says who answered and where, and a late
//! press in Slack is told "Already answered by … in Discord".

use super::*;
use askrelay::config::Route;
use askrelay::domain::request::Via;

/// A route named `name` with a Discord channel ([`CHANNEL`]) and a Slack one (the stand-in's
/// default channel).
fn both_route(name: &str) -> Route {
    let mut r = Route::new(name, CHANNEL);
    r.slack_channel_id = Some(DEFAULT_CHANNEL.into());
    r
}

#[tokio::test]
async fn a_route_in_slack_and_discord_settles_once_and_each_copy_says_where() {
    let t = Slack::start_with_discord(|c| c.routes.push(both_route("both"))).await;
    let (app, s) = (&t.app, &t.s);
    let (mut c, accepted) = app.ask("both-1", &yes_no("q")).await;
    // Discord owns it (first in the daemon's order); both copies' links are there.
    assert_eq!(accepted["answerer"], "discord", "{accepted}");
    let links = accepted["message_links"].as_array().unwrap();
    assert_eq!(links.len(), 2, "{accepted}");
    assert!(
        links[1].as_str().unwrap().contains(DEFAULT_CHANNEL),
        "{accepted}"
    );
    let in_discord = app.messages(CHANNEL).remove(0);
    let in_slack = s.messages(DEFAULT_CHANNEL).remove(0);
    // Slack's edit waits until the late press below was made on its copy.
    s.stall_next("chat.update", 1);
    let cb = app
        .press(&in_discord, &crate::harness::alice(), "No, keep them")
        .await;
    final_state(&cb);
    expect_event(&mut c, "answered").await;
    within("Slack's edit, held", s.wait_stalled(1)).await;
    s.click(
        &bob(),
        DEFAULT_CHANNEL,
        ts(&in_slack),
        button(&in_slack, "No, keep them"),
    )
    .await;
    let text = t
        .told("U0BOB0001", "Already answered by")
        .await
        .text
        .unwrap();
    assert!(text.contains("in Discord"), "{text}");
    s.release_stalls();
    let update = t.outcome_of(&in_slack).await.params.to_string();
    assert!(
        update.contains("in Discord") && update.contains("No, keep them"),
        "{update}"
    );
    let req = app.store().by_id("both-1").await.unwrap().unwrap();
    assert_eq!(req.answers[0].as_ref().unwrap().actor.via, Via::Discord);
    s.assert_no_violations();
}
