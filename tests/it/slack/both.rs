//! A route shown in Slack and in Discord at once: each posts its copy, the first allowed
//! answer on either settles it, the other copy then says who answered and where, and a late
//! press in Slack is told "Already answered by … in Discord". A route whose `answerers` add the
//! terminal is answered there just as well, and one whose `answerers` name Slack alone is not
//! posted in Discord, though it has a Discord channel.

use super::*;
use askrelay::config::Route;
use askrelay::domain::request::Via;
use serde_json::json;

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

/// `answerers = ["slack", "discord", "terminal"]`: both chat copies are posted and the terminal
/// may answer; answered there, each copy says who answered and where, and a late press on each
/// is told so.
#[tokio::test]
async fn answered_at_the_terminal_both_chat_copies_say_who_and_where() {
    let t = Slack::start_with_discord(|c| {
        c.terminal.enabled = Some(true);
        let mut r = both_route("all");
        r.answerers = Some(vec!["slack".into(), "discord".into(), "terminal".into()]);
        c.routes.push(r);
    })
    .await;
    let (mut c, accepted) = t.app.ask("all-1", &yes_no("q")).await;
    // Discord owns it (the daemon's order, not the list's); a link to each chat copy, and the
    // terminal's hint.
    assert_eq!(accepted["answerer"], "discord", "{accepted}");
    let links = accepted["message_links"].as_array().unwrap();
    assert_eq!(links.len(), 2, "{accepted}");
    assert!(
        accepted["hint"]
            .as_str()
            .is_some_and(|h| h.contains("askrelay answer all-1")),
        "{accepted}"
    );
    let req = t.app.store().by_id("all-1").await.unwrap().unwrap();
    assert_eq!(req.answerers, ["discord", "slack", "terminal"]);
    let in_discord = t.app.messages(CHANNEL).remove(0);
    let in_slack = t.s.messages(DEFAULT_CHANNEL).remove(0);
    // Slack's edit waits until the late press below was made on its copy.
    t.s.stall_next("chat.update", 1);
    let reply = t.app.answer("all-1", "q", &["No, keep them"]).await;
    assert_eq!(reply["event"], "answer_accepted", "{reply}");
    let answered = expect_event(&mut c, "answered").await;
    assert_eq!(
        answered["result"]["answers"][0]["selected"],
        json!(["No, keep them"]),
        "{answered}"
    );
    let (name, uid) = crate::answerers::me();
    let by = format!("{name} (uid {uid})");

    // Discord's copy: edited to say who answered at the terminal, its controls gone; a late
    // click is told.
    let edit = t.app.edit_of(&in_discord).await;
    let fields = edit["embeds"][0]["fields"].as_array().unwrap();
    let field = fields
        .iter()
        .find(|f| f["name"] == "Answered in the terminal by")
        .unwrap_or_else(|| panic!("who answered, and where: {edit}"));
    assert!(
        shown(field["value"].as_str().unwrap()).starts_with(&by),
        "{field}"
    );
    assert_eq!(edit["components"], json!([]), "no controls left: {edit}");
    let cb = t
        .app
        .press(
            &in_discord,
            &crate::harness::alice(),
            "Yes, delete them (Recommended)",
        )
        .await;
    assert!(is_ephemeral(&cb), "{cb}");
    let told = shown(ephemeral(&cb));
    assert!(
        told.contains(&format!("Already answered in the terminal by {by}")),
        "{told}"
    );

    // Slack's copy: a late press is told, then the held edit says who answered and where.
    within("Slack's edit, held", t.s.wait_stalled(1)).await;
    t.act(
        &bob(),
        &in_slack,
        button(&in_slack, "Yes, delete them (Recommended)"),
    )
    .await;
    let told = t
        .told("U0BOB0001", "Already answered by")
        .await
        .text
        .unwrap();
    assert!(
        told.contains(&format!("{by} in the terminal")) && told.contains("No, keep them"),
        "{told}"
    );
    t.s.release_stalls();
    let update = t.outcome_of(&in_slack).await.params.to_string();
    assert!(
        update.contains(&format!("*Answered* by {by} in the terminal"))
            && update.contains("No, keep them"),
        "{update}"
    );
    let req = t.app.store().by_id("all-1").await.unwrap().unwrap();
    assert_eq!(req.answers[0].as_ref().unwrap().actor.via, Via::Terminal);
    let audit = t.app.store().audit_rows(None).await.unwrap();
    let mut late: Vec<&str> = audit
        .iter()
        .filter(|r| r.action == "late" && !r.accepted)
        .map(|r| r.source.as_str())
        .collect();
    late.sort_unstable();
    assert_eq!(late, ["discord", "slack"], "each late press is audited");
    t.s.assert_no_violations();
    t.app.assert_payloads_valid();
}

/// `answerers = ["slack"]` on a route that also has a Discord channel: Slack alone shows it.
#[tokio::test]
async fn a_route_whose_answerers_name_slack_alone_is_not_posted_in_discord() {
    let t = Slack::start_with_discord(|c| {
        let mut r = both_route("slack-only");
        r.answerers = Some(vec!["slack".into()]);
        c.routes.push(r);
    })
    .await;
    // `accepted` comes once every copy is shown.
    let (mut c, accepted) = t.ask("so-1", &yes_no("q")).await;
    assert_eq!(accepted["answerer"], "slack", "{accepted}");
    let links = accepted["message_links"].as_array().unwrap();
    assert_eq!(links.len(), 1, "{accepted}");
    assert!(
        links[0].as_str().unwrap().contains(DEFAULT_CHANNEL),
        "{accepted}"
    );
    let req = t.app.store().by_id("so-1").await.unwrap().unwrap();
    assert_eq!(req.answerers, ["slack"]);
    let m = t.message(0).await;
    t.act(&alice(), &m, button(&m, "No, keep them")).await;
    expect_event(&mut c, "answered").await;
    t.outcome_of(&m).await;
    // Nothing was posted in Discord, nor edited there.
    let to_discord: Vec<String> = t
        .app
        .standin()
        .requests()
        .into_iter()
        .filter(|r| r.path.contains("/messages"))
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    assert!(to_discord.is_empty(), "{to_discord:?}");
    assert!(t.app.messages(CHANNEL).is_empty());
    t.s.assert_no_violations();
}
