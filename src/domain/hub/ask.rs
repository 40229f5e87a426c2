//! A new ask: re-attach to a request under the same id, or store a new one (the answerer
//! waterfall, the per-uid cap, one transaction) and deliver it to its answerer.

use super::live::{same_id_other_context, same_id_other_questions};
use super::{add_expiry, foreign_error, new_token, storage_error, Attachment, Detail, Hub, Phase};
use crate::domain::answerer::{Answerer, Claim, Delivery, Proposal};
use crate::domain::error::{AskError, ErrorCode};
use crate::domain::expiry::ExpiryRule;
use crate::domain::model::{Ask, Question};
use crate::domain::request::{
    now_ms, AuditAction, AuditEntry, Created, NewRequest, Outcome, Peer, PlannedPost, Request,
    Source, Status,
};
use crate::domain::text::Escaped;
use std::sync::Arc;
use tokio::sync::watch;

/// What the waterfall gave a request.
pub(super) struct Taken {
    /// The answerer that claimed it.
    answerer: Arc<dyn Answerer>,
    /// Its route, for answerers that have routes (Discord).
    route: Option<String>,
    /// The outbox rows to store with it.
    posts: Vec<PlannedPost>,
    /// The route's expiry.
    expiry: Option<ExpiryRule>,
}

impl Hub {
    /// Handles an `ask`: stores it (or finds it by its id) and returns an attachment that
    /// follows it to its final line.
    ///
    /// The work runs in a task of its own, so a client that disconnects half-way can never
    /// leave a request stored but unregistered or half-shown.
    pub async fn ask(&self, ask: Ask, peer: Peer) -> Result<Attachment, AskError> {
        let hub = self.clone();
        let attached = self
            .inner
            .tasks
            .spawn(async move { hub.ask_inner(ask, peer).await })
            .await
            .map_err(|e| AskError::new(ErrorCode::Internal, format!("the ask task failed: {e}")))
            .and_then(|r| r);
        if let Err(e) = &attached {
            self.inner.settings.recorder.failed(e.code);
        }
        attached
    }

    pub(super) async fn ask_inner(&self, ask: Ask, peer: Peer) -> Result<Attachment, AskError> {
        if let Some(owner) = &ask.caller.owner_agent_id {
            self.audit(AuditEntry {
                source: Source::Socket,
                actor: Some(peer.to_string()),
                action: AuditAction::Ask,
                detail: Some("delegated caller".into()),
                accepted: false,
                ..Default::default()
            })
            .await;
            return Err(AskError::new(
                ErrorCode::DelegatedCaller,
                format!(
                    "this agent is a sub-agent owned by the live agent {owner:?}, and only the \
                     root agent may ask people; do not wait for an answer: put the unresolved \
                     question in your final result so that your owner can ask it"
                ),
            ));
        }
        let request_id = ask
            .request_id
            .clone()
            .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        let content = self.content(&ask.questions, ask.context.as_ref());
        // A live request is attached to without touching the database.
        if let Some(att) = self.attach_live(&request_id, content, peer)? {
            return Ok(att);
        }
        let token = new_token();
        let questions: Arc<[Question]> = ask.questions.clone().into();
        let Taken {
            answerer,
            route,
            posts,
            expiry,
        } = match self.claim(&token, &questions, &ask.scope).await {
            Ok(taken) => taken,
            Err(reasons) => {
                // An ended request under this id still gets its stored final line.
                if let Ok(Some(req)) = self.inner.store.by_id(&request_id).await {
                    return self.existing(req, &ask, peer).await;
                }
                self.audit(AuditEntry {
                    source: Source::Socket,
                    actor: Some(peer.to_string()),
                    action: AuditAction::Ask,
                    detail: Some(format!("NO_ANSWERER: {reasons}")),
                    accepted: false,
                    ..Default::default()
                })
                .await;
                return Err(AskError::new(ErrorCode::NoAnswerer, reasons));
            }
        };
        let register = self.inner.register.lock().await;
        if let Some(att) = self.attach_live(&request_id, content, peer)? {
            return Ok(att);
        }
        self.check_pending_cap(peer)?;
        let created_at_ms = now_ms();
        let new = NewRequest {
            request_id: request_id.clone(),
            token,
            questions,
            context: ask.context.clone().map(Arc::new),
            caller: ask.caller.clone(),
            scope: ask.scope.clone(),
            peer,
            answerer: answerer.name().to_owned(),
            route,
            created_at_ms,
            expiry: expiry
                .as_ref()
                .unwrap_or(&self.inner.settings.expiry)
                .for_request(created_at_ms),
            node: self.node().map(str::to_owned),
        };
        let audit = AuditEntry {
            source: Source::Socket,
            actor: Some(peer.to_string()),
            action: AuditAction::Ask,
            detail: Some(format!(
                "{} question(s) for {}",
                new.questions.len(),
                new.answerer
            )),
            accepted: true,
            ..Default::default()
        };
        let created = self
            .inner
            .store
            .create(&new, &posts, &audit)
            .await
            .map_err(|e| storage_error("the request", &e))?;
        match created {
            Created::Existing(req) => {
                drop(register);
                self.existing(req, &ask, peer).await
            }
            Created::New(req) => {
                crate::crash::point("stored");
                self.inner.settings.recorder.asked(answerer.name());
                self.insert_live(&req, Phase::Offering, content);
                let att = self
                    .attach_live(&request_id, content, peer)?
                    .expect("a request just registered is live");
                drop(register);
                let hub = self.clone();
                self.inner
                    .tasks
                    .spawn(async move { hub.deliver(answerer, req).await });
                Ok(att)
            }
        }
    }

    /// An ask whose id is stored but not live: the request has ended, and its owner gets its
    /// stored final line.
    pub(super) async fn existing(
        &self,
        req: Request,
        ask: &Ask,
        peer: Peer,
    ) -> Result<Attachment, AskError> {
        if req.owner_uid() != peer.uid || !self.owned_here(&req) {
            return Err(self.foreign(&req.request_id, peer).await);
        }
        if req.questions.as_ref() != ask.questions.as_slice() {
            return Err(same_id_other_questions(&req.request_id));
        }
        if req.context.as_deref() != ask.context.as_ref() {
            return Err(same_id_other_context(&req.request_id));
        }
        let outcome = req.outcome.clone().unwrap_or_else(|| {
            Outcome::Error(AskError::new(
                ErrorCode::Internal,
                "the request is pending in the store but not in memory",
            ))
        });
        self.audit(AuditEntry {
            request_key: Some(req.key),
            source: Source::Socket,
            actor: Some(peer.to_string()),
            action: AuditAction::Reattach,
            detail: Some(format!("ended: {}", req.status.as_str())),
            accepted: true,
            ..Default::default()
        })
        .await;
        let (_tx, rx) = watch::channel(Phase::Ended(outcome));
        Ok(Attachment {
            request_id: req.request_id,
            phase: rx,
            _guard: None,
        })
    }

    /// Runs the waterfall: the first answerer that claims the request, with its route and
    /// outbox rows; or every answerer's reason to decline.
    pub(super) async fn claim(
        &self,
        token: &str,
        questions: &[Question],
        scope: &crate::domain::model::Scope,
    ) -> Result<Taken, String> {
        let proposal = Proposal {
            token,
            questions,
            scope,
        };
        let mut declines = Vec::new();
        for a in &self.inner.answerers {
            match a.claim(&proposal).await {
                Claim::Take {
                    route,
                    posts,
                    expiry,
                } => {
                    return Ok(Taken {
                        answerer: a.clone(),
                        route,
                        posts,
                        expiry,
                    })
                }
                Claim::Decline(reason) => {
                    tracing::debug!(answerer = a.name(), %reason, "answerer declined");
                    declines.push(format!("{}: {reason}", a.name()));
                }
            }
        }
        Err(if declines.is_empty() {
            "no answerer is configured: set discord.token and discord.channel_id, or enable the \
             terminal answerer with [terminal] enabled = true"
                .to_owned()
        } else {
            format!("no answerer accepted the request ({})", declines.join("; "))
        })
    }

    pub(super) fn check_pending_cap(&self, peer: Peer) -> Result<(), AskError> {
        let max = self.inner.settings.max_pending_per_uid;
        let n = self
            .inner
            .live
            .lock()
            .unwrap()
            .per_uid
            .get(&peer.uid)
            .copied()
            .unwrap_or(0);
        if n >= max {
            tracing::warn!(%peer, pending = n, "ask refused: limits.max_pending_per_uid reached");
            return Err(AskError::new(
                ErrorCode::Busy,
                format!(
                    "this user already has {n} pending requests (limits.max_pending_per_uid = \
                     {max}); wait for some to be answered, or cancel them"
                ),
            ));
        }
        Ok(())
    }

    /// Shows a stored request through its answerer and tells waiting clients.
    pub(super) async fn deliver(&self, answerer: Arc<dyn Answerer>, req: Request) {
        let req = self.answer_by_grant(req).await;
        let ctx = self.context(answerer.name());
        match answerer.deliver(&ctx, &req).await {
            Delivery::Shown(mut detail) => {
                add_expiry(&mut detail, &req);
                tracing::info!(
                    request_id = %Escaped(&req.request_id),
                    answerer = answerer.name(),
                    "request accepted"
                );
                self.set_phase(
                    &req.request_id,
                    Phase::Accepted {
                        answerer: answerer.name().to_owned(),
                        detail: Detail::new(&detail),
                    },
                );
            }
            Delivery::Failed(err) => {
                self.end_by(&req, Status::Failed, err, Source::Daemon).await;
            }
        }
    }

    /// The refusal for a request id another uid owns, audited. It says nothing about the
    /// request itself.
    pub(super) async fn foreign(&self, request_id: &str, peer: Peer) -> AskError {
        self.audit(AuditEntry {
            source: Source::Socket,
            actor: Some(peer.to_string()),
            action: AuditAction::Forbidden,
            detail: Some(format!(
                "request_id {:?} belongs to another uid",
                Escaped(request_id)
            )),
            accepted: false,
            ..Default::default()
        })
        .await;
        foreign_error(request_id)
    }
}
