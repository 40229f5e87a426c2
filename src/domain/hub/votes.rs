//! Votes on a quorum route: one person's vote stored with a compare-and-swap, the settlement
//! once enough people chose the same answer, and the repair of quorums reached before a crash
//! or a stalled database cut their settlement off.

use super::settle::audit_detail;
use super::{storage_error, Hub};
use crate::domain::answer::Settlement;
use crate::domain::clock::now_ms;
use crate::domain::error::{AskError, ErrorCode};
use crate::domain::quorum::Policy;
use crate::domain::request::{
    Actor, AuditAction, AuditEntry, Request, SettleOutcome, Settled, Status, Via,
};
use crate::domain::text::Escaped;
use crate::domain::vote::Vote;

impl Hub {
    /// One person's vote on a quorum route: stored (replacing their earlier vote) with a
    /// compare-and-swap on the question's votes, then the question settles if enough people
    /// chose the same answer.
    pub(super) async fn vote(
        &self,
        req: &Request,
        idx: usize,
        settlement: Settlement,
        actor: Actor,
        policy: &Policy,
    ) -> Result<Settled, AskError> {
        let person = policy.person(&actor, self.host());
        // From before the compare-and-swap until the settlement returned: a repair pass that
        // reads the quorum this vote completes leaves it to this vote, which settles it in the
        // voter's name and tells them so.
        let _voting = self.inner.voting.hold((req.key, idx));
        let mut cur = req.clone();
        // Each retry follows a vote that landed meanwhile; a few are plenty.
        for _ in 0..8 {
            if cur.status != Status::Pending {
                let outcome = SettleOutcome::Ended(cur.status);
                return Ok(Settled {
                    outcome,
                    request: cur,
                });
            }
            if let Some(a) = &cur.answers[idx] {
                let outcome = SettleOutcome::AlreadyAnswered(a.clone());
                return Ok(Settled {
                    outcome,
                    request: cur,
                });
            }
            let old = &cur.votes[idx];
            if old
                .iter()
                .any(|v| v.person == person && v.settlement() == settlement)
            {
                let tally = policy.tally(old, &settlement);
                if tally.count >= tally.needed {
                    // The quorum was reached by a stored vote whose settlement failed (a
                    // stalled or cut-off database between the two writes): settle it now.
                    return self.settle_quorum(&cur, idx, &settlement, actor).await;
                }
                let outcome = SettleOutcome::AlreadyVoted(tally);
                return Ok(Settled {
                    outcome,
                    request: cur,
                });
            }
            let mut votes: Vec<Vote> = old.iter().filter(|v| v.person != person).cloned().collect();
            votes.push(Vote {
                person: person.clone(),
                via: actor.via.as_str().to_owned(),
                id: actor.id.clone(),
                name: actor.name.clone(),
                selected: settlement.selected.clone(),
                custom: settlement.custom.clone(),
                at_ms: now_ms(),
                terms: settlement.terms.clone(),
            });
            let tally = policy.tally(&votes, &settlement);
            let json = |v: &[Vote]| serde_json::to_string(v).unwrap_or_default();
            let expected = (!old.is_empty()).then(|| json(old));
            let audit = AuditEntry {
                request_key: Some(req.key),
                request_id: Some(req.request_id.clone()),
                question_idx: Some(idx),
                source: actor.via.into(),
                actor: Some(actor.audit()),
                action: AuditAction::Vote,
                detail: Some(format!(
                    "{} ({} of {})",
                    audit_detail(&req.questions[idx], &settlement, actor.note.as_deref()),
                    tally.count,
                    tally.needed
                )),
                accepted: true,
            };
            let swapped = match self
                .inner
                .store
                .vote(req.key, idx, expected.as_deref(), &json(&votes), &audit)
                .await
            {
                Ok(s) => s,
                Err(e) => {
                    // The vote may have been committed all the same (the database's reply
                    // was lost): if it completed the quorum, that is settled once the
                    // database answers again.
                    if tally.count >= tally.needed {
                        self.retry_reached_quorum(req.key, idx);
                    }
                    return Err(storage_error("the vote", &e));
                }
            };
            if !swapped {
                cur = self
                    .inner
                    .store
                    .by_key(req.key)
                    .await
                    .map_err(|e| storage_error("the request", &e))?
                    .ok_or_else(|| AskError::new(ErrorCode::Internal, "the request is gone"))?;
                continue;
            }
            crate::crash::point("voted");
            cur.votes[idx] = votes;
            tracing::info!(
                request_id = %Escaped(&req.request_id),
                question = %Escaped(&req.questions[idx].id),
                by = %Escaped(&actor.describe()),
                votes = tally.count,
                needed = tally.needed,
                "vote counted"
            );
            if tally.count >= tally.needed {
                // The vote that completes the quorum is stored; the settlement is not yet.
                crate::crash::point("quorum");
                let settled = self.settle_quorum(&cur, idx, &settlement, actor).await;
                if settled.is_err() {
                    self.retry_reached_quorum(req.key, idx);
                }
                return settled;
            }
            // Every other copy shows the new count.
            self.tell_settled(&cur, idx, &actor).await;
            let outcome = SettleOutcome::Voted(tally);
            return Ok(Settled {
                outcome,
                request: cur,
            });
        }
        Err(AskError::new(
            ErrorCode::Conflict,
            "too many votes at once on this question; vote again",
        ))
    }

    /// The question's votes for `settlement` reached the quorum: it settles, and its audit
    /// row names every voter.
    async fn settle_quorum(
        &self,
        req: &Request,
        idx: usize,
        settlement: &Settlement,
        actor: Actor,
    ) -> Result<Settled, AskError> {
        let voters: Vec<Vote> = req.votes[idx]
            .iter()
            .filter(|v| v.settlement() == *settlement)
            .cloned()
            .collect();
        self.settle_now(req, idx, settlement.clone(), actor, &voters)
            .await
    }

    /// Settles, in the background, question `idx` of request `key` whose stored votes reached
    /// the quorum when settling it failed (the database stalled or was cut off between the
    /// vote and the settlement): every second, for up to `QUORUM_RETRIES` seconds, until it is
    /// settled or the request ends. A restart or a new leader settles it too.
    fn retry_reached_quorum(&self, key: i64, idx: usize) {
        const QUORUM_RETRIES: u32 = 300;
        let hub = self.clone();
        let shutdown = self.inner.shutdown.clone();
        self.inner.tasks.spawn(async move {
            for _ in 0..QUORUM_RETRIES {
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    _ = tokio::time::sleep(std::time::Duration::from_secs(1)) => {}
                }
                match hub.inner.store.by_key(key).await {
                    Ok(Some(req))
                        if req.status == Status::Pending && req.answers[idx].is_none() =>
                    {
                        hub.settle_reached_quorums(&req).await;
                    }
                    Ok(_) => return,
                    Err(_) => {}
                }
            }
        });
    }

    /// Settles every pending question, of any cluster node, whose stored votes reached their
    /// quorum. A vote can be committed after its caller gave up on the database (a partition
    /// or a stall between the commit and its reply), and then nobody settles it but this pass,
    /// which the leader's repair loop runs.
    pub(super) async fn sweep_reached_quorums(&self) {
        let keys = match self.inner.store.voted_pending().await {
            Ok(k) => k,
            Err(e) => {
                tracing::warn!(error = %format!("{e:#}"), "cannot read the questions with votes; the next repair pass tries again");
                return;
            }
        };
        for key in keys {
            if let Ok(Some(req)) = self.inner.store.by_key(key).await {
                self.settle_reached(&req, Leave::Voting).await;
            }
        }
    }

    /// Settles the quorum questions whose votes reached it before a crash or a restart cut
    /// the settlement off (a vote is stored before the settlement it completes).
    pub(super) async fn settle_reached_quorums(&self, req: &Request) {
        self.settle_reached(req, Leave::None).await;
    }

    /// [`Hub::settle_reached_quorums`], leaving alone (with [`Leave::Voting`]) the questions
    /// with a vote under way on this daemon.
    async fn settle_reached(&self, req: &Request, leave: Leave) {
        let policy = self.policy_of(req);
        if !policy.is_quorum() || req.status != Status::Pending {
            return;
        }
        for (idx, votes) in req.votes.iter().enumerate() {
            if req.answers[idx].is_some() {
                continue;
            }
            if leave == Leave::Voting && self.is_being_voted(req.key, idx) {
                tracing::debug!(
                    request_id = %Escaped(&req.request_id),
                    question = idx,
                    "a vote on this question is under way; its quorum is left to it"
                );
                continue;
            }
            let reached = votes
                .iter()
                .find(|v| policy.tally(votes, &v.settlement()).count >= policy.approvals as usize);
            if let Some(last) = reached {
                let actor = Actor {
                    via: Via::parse(&last.via).unwrap_or(Via::Terminal),
                    id: last.id.clone(),
                    name: last.name.clone(),
                    note: None,
                };
                if let Err(e) = self
                    .settle_quorum(req, idx, &last.settlement(), actor)
                    .await
                {
                    tracing::warn!(error = %e.message, "cannot settle a question whose quorum was reached");
                }
            }
        }
    }
}

/// Which questions a pass settling reached quorums leaves alone.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Leave {
    None,
    /// Those with a vote under way on this daemon (`Hub::is_being_voted`): the repair pass's.
    Voting,
}

impl Hub {
    /// Whether a vote on question `idx` of request `key` is under way on this daemon, between
    /// the start of its compare-and-swap and the return of the settlement it may complete.
    /// Without the mark, a repair pass that read the stored votes in between settled the
    /// question first, in the first voter's name, and the person whose vote completed the
    /// quorum was told it was already answered.
    pub(super) fn is_being_voted(&self, key: i64, idx: usize) -> bool {
        self.inner.voting.contains(&(key, idx))
    }
}
