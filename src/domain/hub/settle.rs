//! Settling a question: the approval policy's checks (the requester rule, the confirm word,
//! whether the choice decides alone or is a vote), then first wins in the store, and the
//! clients and the other answerers hear of it. Votes are `votes.rs`, grants `grants.rs`, a
//! terminal's answer `terminal.rs`.

use super::{storage_error, Hub};
use crate::domain::answer::{AskResult, Settlement};
use crate::domain::clock::now_ms;
use crate::domain::confirm::Unconfirmed;
use crate::domain::error::{AskError, ErrorCode};
use crate::domain::quorum::{Policy, Requester};
use crate::domain::request::{
    Actor, Answered, AuditAction, AuditEntry, Outcome, Request, SettleOutcome, Settled, Status, Via,
};
use crate::domain::store::NewAnswer;
use crate::domain::text::Escaped;
use crate::domain::vote::Vote;
use std::time::Duration;

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
    /// that does not count says why. Every answerer that shows the request, but the one the
    /// answer came through, is told of a settlement (or a vote), so that it updates what
    /// people see.
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

    /// The approval policy of `req`, as its owner says (the route's, which every answerer
    /// that shows it applies alike), else the next answerer that shows it; first-wins
    /// without one.
    pub fn policy_of(&self, req: &Request) -> Policy {
        self.answerers_for(req)
            .first()
            .map(|a| a.policy(req))
            .unwrap_or_default()
    }

    /// First-wins settlement (`voters`: the quorum that chose it, for the audit row and a
    /// grant's approvers).
    pub(super) async fn settle_now(
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
            // Every other copy shows the outcome, naming who answered and where.
            self.tell_settled(&settled, idx, &actor).await;
        }
        Ok(Settled {
            outcome,
            request: settled,
        })
    }
}

pub(super) fn question(req: &Request, idx: usize) -> Result<&crate::domain::Question, AskError> {
    req.questions.get(idx).ok_or_else(|| {
        AskError::invalid(format!(
            "request {:?} has no question number {}",
            Escaped(&req.request_id),
            idx + 1
        ))
    })
}
