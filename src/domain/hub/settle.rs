//! Settling a question: first wins in the store, then the clients and the other answerers
//! hear of it; an answer from a terminal is checked and matched to the question's options
//! first.

use super::{storage_error, Hub};
use crate::domain::access::LocalUser;
use crate::domain::answer::{AskResult, Settlement};
use crate::domain::clock::now_ms;
use crate::domain::confirm::Unconfirmed;
use crate::domain::error::{AskError, ErrorCode};
use crate::domain::grant::{self, Grant};
use crate::domain::quorum::{Policy, Requester};
use crate::domain::request::{
    Actor, Answered, AuditAction, AuditEntry, Outcome, Request, SettleOutcome, Settled, Source,
    Status, Via,
};
use crate::domain::store::NewAnswer;
use crate::domain::text::Escaped;
use crate::domain::vote::Vote;
use std::time::Duration;

/// What a socket `answer` (a person at a terminal) asks for.
#[derive(Debug, Clone)]
pub struct TerminalAnswer {
    pub request_id: String,
    pub question: String,
    pub labels: Vec<String>,
    pub custom: Option<String>,
    /// Free text about who is answering; shown quoted, trusted for nothing.
    pub note: Option<String>,
    /// The word typed to confirm a label of the route's `confirm_labels`.
    pub confirm: Option<String>,
}

/// The audit detail of a settlement: what was chosen, and the note quoted.
pub(super) fn audit_detail(
    q: &crate::domain::Question,
    s: &Settlement,
    note: Option<&str>,
) -> String {
    let mut d = crate::domain::audit::settlement_detail(q, s);
    if let Some(n) = note {
        d.push_str(&format!(" note={:?}", n));
    }
    d
}

impl Hub {
    /// Settles question `idx` of `req` (as loaded by the caller; it is not read again) under
    /// the approval policy of its answerer: the person who asked is refused where the policy
    /// says so, and on a quorum route a choice that does not decide alone is a vote, which
    /// settles the question once enough people chose the same. Then first wins; a settlement
    /// that does not count says why. When another surface than the owner settled it (or
    /// voted), the owner is told so that it updates what people see.
    pub async fn settle(
        &self,
        req: &Request,
        idx: usize,
        settlement: Settlement,
        actor: Actor,
    ) -> Result<Settled, AskError> {
        let policy = self.policy_of(req);
        self.settle_confirmed(req, idx, settlement, actor, &policy, None)
            .await
    }

    /// [`Hub::settle`] under `policy`, the approval policy of `req`'s answerer (which an
    /// answerer that holds it hands in), with the word the person typed to confirm (a route's
    /// `confirm_labels`): a label that needs it settles or votes only with the word, and
    /// without it nothing is recorded and the refusal is audited.
    pub async fn settle_confirmed(
        &self,
        req: &Request,
        idx: usize,
        settlement: Settlement,
        actor: Actor,
        policy: &Policy,
        typed: Option<&str>,
    ) -> Result<Settled, AskError> {
        let question = question(req, idx)?;
        let settlement = settlement.normalise(question)?;
        // The expiry policy and a grant (which had its approvals when it was given) decide
        // alone.
        if !matches!(actor.via, Via::Policy | Via::Grant) {
            policy.check_terms(req, question, &settlement)?;
            if policy.refuses_requester(req, &actor, self.host()) {
                let err = AskError::new(
                    ErrorCode::Forbidden,
                    match policy.requester(req, &actor, self.host()) {
                        Requester::Unknown => format!(
                            "nobody can tell whether {} asked this (the request carries no uid, \
                             and no identity's sessions name its session); on this route the \
                             requester may not answer, so the answer is refused",
                            Escaped(&actor.describe())
                        ),
                        _ => format!(
                            "{} asked this (their agent did); on this route another person must \
                             answer it",
                            Escaped(&actor.describe())
                        ),
                    },
                );
                self.audit(AuditEntry {
                    request_key: Some(req.key),
                    request_id: Some(req.request_id.clone()),
                    question_idx: Some(idx),
                    source: actor.via.into(),
                    actor: Some(actor.audit()),
                    action: AuditAction::Forbidden,
                    detail: Some(format!(
                        "the requester's answer refused: {}",
                        audit_detail(question, &settlement, actor.note.as_deref())
                    )),
                    accepted: false,
                })
                .await;
                return Err(err);
            }
            if let Err(why) = policy
                .confirm
                .check(question, &settlement, &req.scope, typed)
            {
                self.audit(AuditEntry {
                    request_key: Some(req.key),
                    request_id: Some(req.request_id.clone()),
                    question_idx: Some(idx),
                    source: actor.via.into(),
                    actor: Some(actor.audit()),
                    action: AuditAction::Forbidden,
                    detail: Some(format!(
                        "not confirmed ({}): {}",
                        match why {
                            Unconfirmed::Missing { .. } => "no word typed",
                            Unconfirmed::Wrong { .. } => "the word typed did not match",
                        },
                        audit_detail(question, &settlement, actor.note.as_deref())
                    )),
                    accepted: false,
                })
                .await;
                return Err(AskError::new(ErrorCode::Forbidden, why.to_string()));
            }
            if !policy.decides(question, &settlement) {
                return self.vote(req, idx, settlement, actor, policy).await;
            }
        }
        self.settle_now(req, idx, settlement, actor, &[]).await
    }

    /// The approval policy of `req`, as its answerer says (first-wins without one).
    pub fn policy_of(&self, req: &Request) -> Policy {
        self.answerer_for(req)
            .map(|a| a.policy(req))
            .unwrap_or_default()
    }

    /// One person's vote on a quorum route: stored (replacing their earlier vote) with a
    /// compare-and-swap on the question's votes, then the question settles if enough people
    /// chose the same answer.
    async fn vote(
        &self,
        req: &Request,
        idx: usize,
        settlement: Settlement,
        actor: Actor,
        policy: &Policy,
    ) -> Result<Settled, AskError> {
        let person = policy.person(&actor, self.host());
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
            if let Some(a) = self.answerer_for(&cur) {
                if a.name() != actor.via.as_str() {
                    a.settled(&self.context(a.name()), &cur, idx).await;
                }
            }
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
                self.settle_reached_quorums(&req).await;
            }
        }
    }

    /// Settles the quorum questions whose votes reached it before a crash or a restart cut
    /// the settlement off (a vote is stored before the settlement it completes).
    pub(super) async fn settle_reached_quorums(&self, req: &Request) {
        let policy = self.policy_of(req);
        if !policy.is_quorum() || req.status != Status::Pending {
            return;
        }
        for (idx, votes) in req.votes.iter().enumerate() {
            if req.answers[idx].is_some() {
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

    /// First-wins settlement (`voters`: the quorum that chose it, for the audit row and a
    /// grant's approvers).
    async fn settle_now(
        &self,
        req: &Request,
        idx: usize,
        settlement: Settlement,
        actor: Actor,
        voters: &[Vote],
    ) -> Result<Settled, AskError> {
        let question = question(req, idx)?;
        let at_ms = now_ms();
        let mut detail = audit_detail(question, &settlement, actor.note.as_deref());
        if !voters.is_empty() {
            let named: Vec<String> = voters.iter().map(Vote::audit).collect();
            detail.push_str(&format!(" voters: {}", named.join(", ")));
        }
        let mut settlement = settlement;
        let grant = self.grant_of(req, idx, &settlement, &actor, voters, at_ms)?;
        if let Some(g) = &grant {
            if let Some(t) = settlement.terms.as_mut().and_then(|t| t.grant.as_mut()) {
                t.id = Some(g.id.clone());
            }
            detail.push_str(&format!(
                " grant: {} for {} {:?} ({}) until {}",
                g.id,
                g.tool,
                g.pattern,
                g.kind(),
                crate::domain::clock::rfc3339(g.ends_at_ms)
            ));
        }
        if actor.via == Via::Grant {
            detail.push_str(&format!(" by grant {}", actor.id));
        }
        if let Some(e) = settlement.terms.as_ref().and_then(|t| t.edited.as_deref()) {
            let asked = req.context.as_deref().and_then(|c| c.approval.as_ref());
            detail.push_str(&format!(
                " edited: asked {:?}, approved {:?}",
                asked.map(|a| a.command.as_str()).unwrap_or_default(),
                e
            ));
        }
        let audit = AuditEntry {
            request_key: Some(req.key),
            request_id: Some(req.request_id.clone()),
            question_idx: Some(idx),
            source: actor.via.into(),
            actor: Some(actor.audit()),
            action: AuditAction::Answer,
            detail: Some(detail),
            accepted: false,
        };
        let questions = req.questions.clone();
        let finish = move |all: &[Settlement]| AskResult::build(&questions, all).to_json();
        // When every other question was answered as the caller read the request, this answer
        // completes it, and the result is known now (answers are never taken back).
        let result_if_last = req
            .answers
            .iter()
            .enumerate()
            .map(|(i, a)| match (i == idx, a) {
                (true, _) => Some(settlement.clone()),
                (false, a) => a.as_ref().map(|a| a.settlement.clone()),
            })
            .collect::<Option<Vec<Settlement>>>()
            .map(|all| finish(&all));
        let outcome = self
            .inner
            .store
            .settle(NewAnswer {
                key: req.key,
                idx,
                settlement: &settlement,
                actor: &actor,
                at_ms,
                audit: &audit,
                result_if_last,
                finish: &finish,
                grant: grant.as_ref(),
            })
            .await
            .map_err(|e| storage_error("the answer", &e))?;
        if matches!(outcome, SettleOutcome::Won { .. }) {
            crate::crash::point("answered");
            tracing::info!(
                request_id = %Escaped(&req.request_id),
                question = %Escaped(&question.id),
                by = %Escaped(&actor.describe()),
                "question settled"
            );
        }
        let mut settled = req.clone();
        if let SettleOutcome::Won { result } = &outcome {
            settled.answers[idx] = Some(Answered {
                actor: actor.clone(),
                at_ms,
                settlement,
            });
            if let Some(result) = result {
                let waited = Duration::from_millis((at_ms - req.created_at_ms).max(0) as u64);
                self.inner
                    .settings
                    .recorder
                    .answered(req.answerer.as_deref().unwrap_or("none"), waited);
                settled.status = Status::Answered;
                settled.ended_at_ms = Some(at_ms);
                settled.outcome = Some(Outcome::Answered(result.clone()));
                self.publish_end(&req.request_id, Outcome::Answered(result.clone()));
            }
            if let Some(a) = self.answerer_for(&settled) {
                if a.name() != actor.via.as_str() {
                    a.settled(&self.context(a.name()), &settled, idx).await;
                }
            }
        }
        Ok(Settled {
            outcome,
            request: settled,
        })
    }

    /// A person at a terminal answers: only the request's owner or an operator, and only on a
    /// request whose answerer lets terminals answer (the terminal answerer, or a route with
    /// `terminal_answers = true`). Who answered comes from the connection, not from the line.
    pub async fn answer_from_terminal(
        &self,
        answer: TerminalAnswer,
        who: &LocalUser,
    ) -> Result<Settled, AskError> {
        let req = self.request_for(&answer.request_id, who).await?;
        if req.status != Status::Pending {
            // Said before the question and the options are checked: they no longer matter.
            let err = too_late(&req);
            self.audit(AuditEntry {
                source: Source::Terminal,
                actor: Some(who.audit()),
                action: AuditAction::Answer,
                detail: Some(format!("terminal answer refused: {}", err.message)),
                accepted: false,
                ..AuditEntry::about(&req)
            })
            .await;
            return Err(err);
        }
        let owner = self.answerer_for(&req);
        if !owner.as_ref().is_some_and(|a| a.terminal_may_answer(&req)) {
            let owner_name = req.answerer.clone().unwrap_or_else(|| "none".into());
            self.audit(AuditEntry {
                source: Source::Terminal,
                actor: Some(who.audit()),
                action: AuditAction::Forbidden,
                detail: Some(format!(
                    "terminal answer refused: the request belongs to the {owner_name} answerer"
                )),
                accepted: false,
                ..AuditEntry::about(&req)
            })
            .await;
            return Err(AskError::new(
                ErrorCode::Forbidden,
                format!(
                    "request {:?} is answered through {owner_name}, not from a terminal; answer \
                     it there (or set terminal_answers = true on its route)",
                    Escaped(&answer.request_id)
                ),
            ));
        }
        let (index, q) = req
            .questions
            .iter()
            .enumerate()
            .find(|(_, q)| q.id == answer.question)
            .ok_or_else(|| {
                let ids: Vec<String> = req
                    .questions
                    .iter()
                    .map(|q| format!("{:?}", Escaped(&q.id)))
                    .collect();
                AskError::invalid(format!(
                    "request {:?} has no question {:?}; its questions are: {}",
                    Escaped(&answer.request_id),
                    Escaped(&answer.question),
                    ids.join(", ")
                ))
            })?;
        let selected = q.resolve(&answer.labels, false)?;
        let actor = Actor::local(who.peer.uid, who.name.clone(), answer.note);
        let settlement = Settlement {
            selected,
            custom: answer.custom,
            terms: None,
        };
        let policy = self.policy_of(&req);
        self.settle_confirmed(
            &req,
            index,
            settlement,
            actor,
            &policy,
            answer.confirm.as_deref(),
        )
        .await
    }
}

impl Hub {
    /// Answers a new request at once when a live grant covers it (docs/approvals.md,
    /// "Grants"): the same route (whose grants are still on), tool, requester and session,
    /// and a command the grant matches. Returns the request as it then stands.
    pub(super) async fn answer_by_grant(&self, req: Request) -> Request {
        let (Some(route), Some(uid)) = (req.route.as_deref(), req.peer.uid) else {
            return req;
        };
        if req
            .context
            .as_deref()
            .and_then(|c| c.approval.as_ref())
            .is_none()
            || self.policy_of(&req).grant_secs.is_empty()
        {
            return req;
        }
        let now = now_ms();
        let grants = match self.inner.store.live_grants(route, uid, now).await {
            Ok(g) => g,
            Err(e) => {
                // The people are asked instead.
                tracing::warn!(error = %format!("{e:#}"), "cannot read the grants; asking people");
                return req;
            }
        };
        let Some((g, option)) = grants
            .iter()
            .find_map(|g| g.answers(&req, route, now).map(|i| (g, i)))
        else {
            return req;
        };
        let actor = Actor {
            via: Via::Grant,
            id: g.id.clone(),
            name: g.approver.clone(),
            note: None,
        };
        match self
            .settle_now(&req, 0, Settlement::choice(option), actor, &[])
            .await
        {
            Ok(settled) => {
                tracing::info!(
                    request_id = %Escaped(&req.request_id),
                    grant = %g.id,
                    "answered by a grant"
                );
                settled.request
            }
            Err(e) => {
                tracing::warn!(error = %e.message, "cannot answer by a grant; asking people");
                req
            }
        }
    }

    /// The grant that settling question `idx` of `req` with `settlement` gives, when its
    /// terms ask for one; its approver is the person who settled it, or the quorum's voters.
    fn grant_of(
        &self,
        req: &Request,
        idx: usize,
        settlement: &Settlement,
        actor: &Actor,
        voters: &[Vote],
        at_ms: i64,
    ) -> Result<Option<Grant>, AskError> {
        let Some(terms) = settlement.terms.as_ref().and_then(|t| t.grant.as_ref()) else {
            return Ok(None);
        };
        let approval = req.context.as_deref().and_then(|c| c.approval.as_ref());
        let label = settlement
            .selected
            .first()
            .and_then(|&i| req.questions[idx].options.get(i))
            .map(|o| o.label.as_str());
        let (Some(approval), Some(label)) = (approval, label) else {
            return Err(AskError::invalid(
                "terms.grant: this request is not an approval",
            ));
        };
        let mut g = grant::from_terms(
            req,
            approval,
            terms.pattern.as_deref(),
            label,
            terms.secs,
            actor,
            at_ms,
        )
        .ok_or_else(|| {
            AskError::invalid(
                "terms.grant: only a request of a local account on a route can be granted",
            )
        })?;
        if !voters.is_empty() {
            g.set_quorum(voters);
        }
        Ok(Some(g))
    }
}

fn question(req: &Request, idx: usize) -> Result<&crate::domain::Question, AskError> {
    req.questions.get(idx).ok_or_else(|| {
        AskError::invalid(format!(
            "request {:?} has no question number {}",
            Escaped(&req.request_id),
            idx + 1
        ))
    })
}

/// Why an answer to a request that has ended did not count: who answered and when, or how it
/// ended (the code, `CONFLICT`, and the CLI say that it did not count).
fn too_late(req: &Request) -> AskError {
    let at = crate::domain::clock::rfc3339;
    let answered: Vec<&Answered> = req.answers.iter().flatten().collect();
    let message = match (req.status, answered.last()) {
        (Status::Answered, Some(last)) => {
            let mut by: Vec<String> = answered.iter().map(|a| a.actor.describe()).collect();
            by.dedup();
            format!(
                "request {:?} was already answered by {} at {}",
                Escaped(&req.request_id),
                by.join(", "),
                at(last.at_ms)
            )
        }
        (status, _) => format!(
            "request {:?} has ended ({}{})",
            Escaped(&req.request_id),
            status.as_str(),
            req.ended_at_ms
                .map(|ms| format!(" at {}", at(ms)))
                .unwrap_or_default()
        ),
    };
    AskError::new(ErrorCode::Conflict, message)
}
