//! Approval policy on a Slack route: a quorum of distinct Slack people, and the person who asked
//! refused, known by `[[identities]] slack_user_ids` (the local uid that asks over the socket
//! mapped to a Slack user id). The same rules on Discord and at the terminal are quorum.rs's.

use super::*;
use crate::quorum::{allow_deny, audit, store_unsettled_vote, two_approvals};
use serde_json::json;

/// Carol's Slack id: in the tests' identity, the same person as the local user who asks.
const CAROL: &str = "U0CAROL01";

fn carol() -> Person {
    Person::new(CAROL, "carol")
}

/// quorum.rs's route that needs two approvals, posted in Slack's default channel (no Discord),
/// with Carol's Slack id in her identity.
fn in_slack(exclude_requester: Option<bool>) -> impl FnOnce(&mut Config) {
    move |c: &mut Config| {
        two_approvals(exclude_requester)(c);
        let r = &mut c.routes[0];
        r.channel_id = None;
        r.slack_channel_id = Some(DEFAULT_CHANNEL.into());
        c.identities[0].slack_user_ids = vec![CAROL.into()];
    }
}

#[tokio::test]
async fn the_requester_is_refused_in_slack_and_two_others_reach_the_quorum() {
    let t = Slack::start_with(in_slack(None)).await;
    let (mut c, accepted) = t.ask("sq-1", &allow_deny()).await;
    assert_eq!(
        (&accepted["answerer"], &accepted["route"]),
        (&json!("slack"), &json!("prod")),
        "{accepted}"
    );
    let m = t.message(0).await;
    assert!(
        m.to_string().contains("*Votes:* 0 of 2 needed"),
        "the message says a quorum is needed: {m}"
    );
    // Carol is the local user who asked: her press is refused in private, Allow and Deny alike.
    for label in ["Allow", "Deny"] {
        t.act(&carol(), &m, button(&m, label)).await;
    }
    let told = t.told(CAROL, "another person must answer it").await;
    assert_eq!(told.via, "response_url");
    assert!(
        told.text
            .unwrap()
            .starts_with("Your answer was not recorded"),
        "a refusal, not a vote"
    );
    let refused = audit(&t.app, "forbidden").await;
    assert_eq!(refused.len(), 2, "{refused:?}");
    assert!(refused.iter().all(|r| !r.accepted
        && r.source == "slack"
        && r.actor.as_deref() == Some("slack:U0CAROL01 name=carol")));
    assert!(audit(&t.app, "vote").await.is_empty(), "no vote counted");
    assert!(t.app.hub().is_pending("sq-1"), "still pending");
    assert!(
        t.s.calls("chat.update").is_empty(),
        "the message is unchanged"
    );

    // Alice's press is one vote of two: she is told, and the message shows the count.
    t.act(&alice(), &m, button(&m, "Allow")).await;
    t.told("U0ALICE01", "Your vote counted (1 of 2 approvals)")
        .await;
    let counted = t.update_with(&m, "*Votes:* 1 of 2 needed").await;
    assert!(
        counted.params["blocks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|b| b["type"] == "actions"),
        "still open: {}",
        counted.params
    );
    assert!(t.app.hub().is_pending("sq-1"), "one vote does not settle");

    // Bob's is the second person's: the quorum is reached.
    t.act(&bob(), &m, button(&m, "Allow")).await;
    let answered = expect_event(&mut c, "answered").await;
    assert_eq!(
        answered["result"]["answers"][0]["selected"],
        json!(["Allow"]),
        "{answered}"
    );
    let outcome = t.outcome_of(&m).await.params.to_string();
    assert!(
        outcome.contains("*Answered* by <@U0BOB0001> in Slack") && outcome.contains("Allow"),
        "{outcome}"
    );
    assert!(elements(&t.now(&m)).is_empty(), "no controls left");
    assert_eq!(audit(&t.app, "vote").await.len(), 2, "both votes");
    let settled = audit(&t.app, "answer").await;
    let detail = settled.last().unwrap().detail.clone().unwrap_or_default();
    assert!(
        detail.contains("voters: slack:U0ALICE01 name=alice, slack:U0BOB0001 name=bob"),
        "{detail}"
    );
    t.s.assert_no_violations();
}

/// `exclude_requester = false`: the requester's press is a vote like anyone's, counted once.
#[tokio::test]
async fn where_the_requester_may_answer_their_press_in_slack_is_one_vote() {
    let t = Slack::start_with(in_slack(Some(false))).await;
    let (mut c, _) = t.ask("sq-2", &allow_deny()).await;
    let m = t.message(0).await;
    t.act(&carol(), &m, button(&m, "Allow")).await;
    t.told(CAROL, "Your vote counted (1 of 2 approvals)").await;
    t.update_with(&m, "*Votes:* 1 of 2 needed").await;
    // The same choice again is not a second vote.
    t.act(&carol(), &m, button(&m, "Allow")).await;
    t.told(
        CAROL,
        "You already voted for this answer (1 of 2 approvals)",
    )
    .await;
    assert!(t.app.hub().is_pending("sq-2"), "one person is one vote");
    assert!(audit(&t.app, "forbidden").await.is_empty());
    t.act(&alice(), &m, button(&m, "Allow")).await;
    let answered = expect_event(&mut c, "answered").await;
    assert_eq!(
        answered["result"]["answers"][0]["selected"],
        json!(["Allow"])
    );
    let settled = audit(&t.app, "answer").await;
    let detail = settled.last().unwrap().detail.clone().unwrap_or_default();
    assert!(
        detail.contains("voters: slack:U0CAROL01 name=carol, slack:U0ALICE01 name=alice"),
        "{detail}"
    );
    t.outcome_of(&m).await;
    t.s.assert_no_violations();
}

/// A vote that completes the quorum is committed, but its caller never heard back (the
/// database's reply was lost to a partition or a stall): nobody presses any more, and Slack's
/// repair pass settles it, as Discord's does (quorum.rs), so the agent is answered.
#[tokio::test]
async fn a_quorum_vote_stored_without_its_settlement_is_settled_by_slacks_repair_pass() {
    let t = Slack::start_with(|c: &mut Config| {
        in_slack(Some(false))(c);
        c.slack.repair_interval_secs = 1;
    })
    .await;
    let (mut c, _) = t.ask("sq-3", &allow_deny()).await;
    let m = t.message(0).await;
    t.act(&alice(), &m, button(&m, "Allow")).await;
    t.told("U0ALICE01", "Your vote counted (1 of 2 approvals)")
        .await;
    // Bob's vote, as a press whose call gave up after the commit leaves it.
    store_unsettled_vote(&t.app, "sq-3", askrelay::domain::Via::Slack, "U0BOB0001").await;
    let answered = expect_event(&mut c, "answered").await;
    assert_eq!(
        answered["result"]["answers"][0]["selected"],
        json!(["Allow"]),
        "{answered}"
    );
    let settled = audit(&t.app, "answer").await;
    let detail = settled.last().unwrap().detail.clone().unwrap_or_default();
    assert!(
        detail.contains("voters: slack:U0ALICE01 name=alice, slack:U0BOB0001 name=bob"),
        "{detail}"
    );
    t.outcome_of(&m).await;
    t.s.assert_no_violations();
}
