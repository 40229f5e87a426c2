//! Tests: a vote under way on a quorum question is left to itself by the repair pass. The
//! pass settles the quorums whose settlement a crash or a stalled database cut off; one that
//! read the votes between a live vote's compare-and-swap and its settlement settled the
//! question first, in the first voter's name, and the person whose vote completed the quorum
//! was told it was already answered. A fake answerer on a real SQLite file.

use super::copies::{ask, hub, person, store, Fake, Takes};
use crate::domain::answer::Settlement;
use crate::domain::request::{AuditAction, AuditEntry, SettleOutcome, Status, Via};
use crate::domain::vote::Vote;

#[tokio::test]
async fn a_vote_is_under_way_from_before_its_swap_until_its_settlement_returned() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir).await;
    let discord = Fake::with_quorum("discord", Takes::Yes(1), 2);
    let (hub, _, _stop) = hub(&store, &[&discord]).await;
    assert!(discord.hub.set(hub.clone()).is_ok());
    let (_att, _, _) = ask(&hub, "v1").await;
    let req = store.by_id("v1").await.unwrap().unwrap();
    assert!(!hub.is_being_voted(req.key, 0));
    // Votes through another surface, so that Discord's copy is told of each.
    let first = hub
        .settle(&req, 0, Settlement::choice(0), person(Via::Slack, "U1"))
        .await
        .unwrap();
    assert!(
        matches!(first.outcome, SettleOutcome::Voted(_)),
        "{:?}",
        first.outcome
    );
    let second = hub
        .settle(
            &first.request,
            0,
            Settlement::choice(0),
            person(Via::Slack, "U2"),
        )
        .await
        .unwrap();
    assert!(
        matches!(second.outcome, SettleOutcome::Won { .. }),
        "{:?}",
        second.outcome
    );
    // The new count shown, then the settlement: each while its vote was under way.
    assert_eq!(*discord.voting.lock().unwrap(), [(0, true), (0, true)]);
    assert!(!hub.is_being_voted(req.key, 0));
}

#[tokio::test]
async fn the_repair_pass_leaves_a_quorum_to_the_vote_under_way_and_settles_it_after() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir).await;
    let discord = Fake::with_quorum("discord", Takes::Yes(1), 2);
    let (hub, _, _stop) = hub(&store, &[&discord]).await;
    let (_att, _, _) = ask(&hub, "v2").await;
    let req = store.by_id("v2").await.unwrap().unwrap();
    // Two people chose Allow, as a vote's compare-and-swap stores them before it settles.
    let vote = |id: &str| Vote {
        person: format!("slack:{id}"),
        via: "slack".into(),
        id: id.into(),
        name: id.into(),
        selected: vec![0],
        custom: None,
        at_ms: 1,
        terms: None,
    };
    let votes = serde_json::to_string(&[vote("U1"), vote("U2")]).unwrap();
    let audit = AuditEntry {
        question_idx: Some(0),
        action: AuditAction::Vote,
        accepted: true,
        ..AuditEntry::about(&req)
    };
    assert!(store.vote(req.key, 0, None, &votes, &audit).await.unwrap());

    // The vote is under way: the pass leaves its quorum to it.
    let under_way = hub.inner.voting.hold((req.key, 0));
    hub.sweep_reached_quorums().await;
    let read = store.by_id("v2").await.unwrap().unwrap();
    assert_eq!(read.status, Status::Pending);
    assert!(read.answers[0].is_none(), "{:?}", read.answers);
    // Two votes under way, one of them ended: still left.
    let other = hub.inner.voting.hold((req.key, 0));
    drop(under_way);
    hub.sweep_reached_quorums().await;
    assert!(store.by_id("v2").await.unwrap().unwrap().answers[0].is_none());

    // No vote under way any more (its settlement failed): the pass settles it.
    drop(other);
    hub.sweep_reached_quorums().await;
    let read = store.by_id("v2").await.unwrap().unwrap();
    let answer = read.answers[0].as_ref().expect("settled by the pass");
    assert_eq!(answer.settlement.selected, [0]);
    assert_eq!(
        answer.actor.id, "U1",
        "the pass answers in the first voter's name"
    );
}
