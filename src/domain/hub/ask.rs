//! A new ask: re-attach to a request under the same id, or store a new one (every answerer
//! asked, the per-uid cap, one transaction) and deliver it to every answerer that took it.

use super::live::{same_id_other_context, same_id_other_questions};
use super::{
    add_expiry, all, foreign_error, new_token, storage_error, Attachment, Detail, Hub, Phase,
};
use crate::domain::answerer::{Accepted, Answerer, Claim, Delivery, Prepared, Proposal};
use crate::domain::clock::now_ms;
use crate::domain::error::{AskError, ErrorCode};
use crate::domain::expiry::ExpiryRule;
use crate::domain::model::{Ask, Question};
use crate::domain::request::{
    AuditAction, AuditEntry, Created, NewPost, NewRequest, Outcome, Peer, PlannedPost, Request,
    Source, Status,
};
use crate::domain::text::Escaped;
use std::sync::Arc;
use tokio::sync::watch;

/// What the answerers made of a new request: who shows it, the owner first.
pub(super) struct Taken {
    /// Every answerer that took it, in the daemon's order, with the outbox rows it plans; the
    /// first owns it.
    copies: Vec<(Arc<dyn Answerer>, Vec<PlannedPost>)>,
    /// The owner's route, for answerers that have routes.
    route: Option<String>,
    /// The owner's route's expiry.
    expiry: Option<ExpiryRule>,
}

/// A request an ask just stored, for its delivery: every answerer that shows it, the owner
/// first, each with what it prepared while the store committed it.
pub(super) struct Stored {
    req: Request,
    copies: Vec<(Arc<dyn Answerer>, Option<Prepared>)>,
}

impl Hub {
    /// Handles an `ask`: stores it (or finds it by its id) and returns an attachment that
    /// follows it to its final line.
    ///
    /// The work runs in a task of its own, so a client that disconnects half-way can never
    /// leave a request stored but unregistered or half-shown. A request just stored is handed
    /// to its answerer in that same task, once the attachment is on its way to the client: a
    /// task of its own for the delivery would put one more hand-off between the `COMMIT` and
    /// the message.
    pub async fn ask(&self, ask: Ask, peer: Peer) -> Result<Attachment, AskError> {
        let hub = self.clone();
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.inner.tasks.spawn(async move {
            match hub.ask_inner(ask, peer).await {
                Ok((att, delivery)) => {
                    // A client gone by now drops the attachment here: its grace period starts.
                    let _ = tx.send(Ok(att));
                    if let Some(Stored { req, copies }) = delivery {
                        hub.deliver(req, copies).await;
                    }
                }
                Err(e) => {
                    let _ = tx.send(Err(e));
                }
            }
        });
        let attached = rx
            .await
            .map_err(|_| {
                AskError::new(
                    ErrorCode::Internal,
                    "the ask task failed before it answered",
                )
            })
            .and_then(|r| r);
        if let Err(e) = &attached {
            self.inner.settings.recorder.failed(e.code);
        }
        attached
    }

    /// The ask's work up to its attachment; for a request it stored, also the delivery that
    /// follows ([`Hub::deliver`]).
    pub(super) async fn ask_inner(
        &self,
        ask: Ask,
        peer: Peer,
    ) -> Result<(Attachment, Option<Stored>), AskError> {
        if let Some(owner) = &ask.caller.owner_agent_id {
            self.audit(AuditEntry {
                request_id: ask.request_id.clone(),
                source: Source::Socket,
                actor: Some(peer.audit(None)),
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
        if let Some(att) = self.attach_live(&request_id, content, peer, ask.on_disconnect)? {
            return Ok((att, None));
        }
        let token = new_token();
        let questions: Arc<[Question]> = ask.questions.clone().into();
        let Taken {
            copies,
            route,
            expiry,
        } = match self
            .claim(&token, &questions, &ask.scope, ask.context.as_ref())
            .await
        {
            Ok(taken) => taken,
            Err(reasons) => {
                // An ended request under this id still gets its stored final line.
                if let Ok(Some(req)) = self.inner.store.by_id(&request_id).await {
                    return Ok((self.existing(req, &ask, peer).await?, None));
                }
                self.audit(AuditEntry {
                    request_id: Some(request_id.clone()),
                    source: Source::Socket,
                    actor: Some(peer.audit(None)),
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
        if let Some(att) = self.attach_live(&request_id, content, peer, ask.on_disconnect)? {
            return Ok((att, None));
        }
        self.check_pending_cap(peer)?;
        let owner = copies[0].0.clone();
        let answerers: Vec<String> = copies.iter().map(|(a, _)| a.name().to_owned()).collect();
        // Each row under the name of the answerer whose copy it is.
        let posts: Vec<NewPost> = copies
            .iter()
            .flat_map(|(a, posts)| {
                posts.iter().map(|p| NewPost {
                    answerer: a.name().to_owned(),
                    post: p.clone(),
                })
            })
            .collect();
        let created_at_ms = now_ms();
        let new = NewRequest {
            request_id: request_id.clone(),
            token,
            questions,
            context: ask.context.clone().map(Arc::new),
            caller: ask.caller.clone(),
            scope: ask.scope.clone(),
            peer,
            answerer: owner.name().to_owned(),
            answerers,
            route,
            created_at_ms,
            expiry: expiry
                .as_ref()
                .unwrap_or(&self.inner.settings.expiry)
                .for_request(created_at_ms),
            node: self.node().map(str::to_owned),
        };
        let audit = AuditEntry {
            request_id: Some(new.request_id.clone()),
            source: Source::Socket,
            actor: Some(peer.audit(None)),
            action: AuditAction::Ask,
            detail: Some(format!(
                "{} question(s) for {}",
                new.questions.len(),
                new.answerers.join(", ")
            )),
            accepted: true,
            ..Default::default()
        };
        // The answerers prepare their messages while the store commits (on SQLite's worker
        // thread, or over PostgreSQL's connection), not after: the posts follow the COMMIT
        // sooner. The request they see is the one the store returns, but for its key.
        let about_to_store = Request::created(0, &new);
        let storing = self.inner.storing.hold(request_id.clone());
        let (created, prepared) =
            tokio::join!(self.inner.store.create(&new, &posts, &audit), async {
                copies
                    .iter()
                    .map(|(a, _)| a.prepare(&about_to_store))
                    .collect::<Vec<_>>()
            });
        let created = created.map_err(|e| storage_error("the request", &e))?;
        match created {
            Created::Existing(req) => {
                drop(storing);
                drop(register);
                Ok((self.existing(req, &ask, peer).await?, None))
            }
            Created::New(req) => {
                crate::crash::point("stored");
                self.inner.settings.recorder.asked(owner.name());
                self.insert_live(&req, Phase::Offering, content);
                drop(storing);
                let att = self
                    .attach_live(&request_id, content, peer, ask.on_disconnect)?
                    .expect("a request just registered is live");
                drop(register);
                let copies = copies.into_iter().map(|(a, _)| a).zip(prepared).collect();
                Ok((att, Some(Stored { req, copies })))
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
            source: Source::Socket,
            actor: Some(peer.audit(None)),
            action: AuditAction::Reattach,
            detail: Some(format!("ended: {}", req.status.as_str())),
            accepted: true,
            ..AuditEntry::about(&req)
        })
        .await;
        let (_tx, rx) = watch::channel(Phase::Ended(outcome));
        Ok(Attachment {
            request_id: req.request_id,
            phase: rx,
            _guard: None,
        })
    }

    /// Asks every answerer at once whether it takes the request: each that takes it shows a
    /// copy (the first, in the daemon's order, owns it, and its route and expiry are the
    /// request's); one that only stands in ([`Claim::Fallback`]) shows it when nobody else
    /// takes it. Without any, every answerer's reason to decline.
    pub(super) async fn claim(
        &self,
        token: &str,
        questions: &[Question],
        scope: &crate::domain::model::Scope,
        context: Option<&crate::domain::model::Context>,
    ) -> Result<Taken, String> {
        let proposal = Proposal {
            token,
            questions,
            scope,
            context,
        };
        let answerers = &self.inner.answerers;
        let claims = all(answerers.iter().map(|a| a.claim(&proposal)).collect()).await;
        let mut taken: Option<Taken> = None;
        let mut fallback: Option<Taken> = None;
        let mut declines = Vec::new();
        for (a, claim) in answerers.iter().zip(claims) {
            match claim {
                Claim::Take {
                    route,
                    posts,
                    expiry,
                } => match &mut taken {
                    Some(t) => t.copies.push((a.clone(), posts)),
                    None => {
                        taken = Some(Taken {
                            copies: vec![(a.clone(), posts)],
                            route,
                            expiry,
                        })
                    }
                },
                Claim::Fallback {
                    route,
                    posts,
                    expiry,
                } => {
                    fallback.get_or_insert_with(|| Taken {
                        copies: vec![(a.clone(), posts)],
                        route,
                        expiry,
                    });
                }
                Claim::Decline(reason) => {
                    tracing::debug!(answerer = a.name(), %reason, "answerer declined");
                    declines.push(format!("{}: {reason}", a.name()));
                }
            }
        }
        if let Some(t) = taken.or(fallback) {
            return Ok(t);
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

    /// Shows a stored request through every answerer that took it, at once, each with what
    /// it prepared, and tells waiting clients once all have: one `accepted` line, the copies'
    /// details merged ([`Accepted::merge`]), under the owner's name. A copy that cannot be
    /// shown is logged while another is; when none can be, the request fails with the first
    /// copy's error.
    pub(super) async fn deliver(
        &self,
        req: Request,
        copies: Vec<(Arc<dyn Answerer>, Option<Prepared>)>,
    ) {
        let req = self.answer_by_grant(req).await;
        // A request a grant answered is announced, not asked: what was prepared does not fit.
        let granted = req.granted();
        let owner = match copies.first() {
            Some((a, _)) => a.name(),
            None => return,
        };
        let req_ref = &req;
        let delivered = all(copies
            .into_iter()
            .map(|(a, prepared)| async move {
                let prepared = prepared.filter(|_| !granted);
                let delivery = a.deliver(&self.context(a.name()), req_ref, prepared).await;
                (a.name(), delivery)
            })
            .collect())
        .await;
        let mut shown: Option<Accepted> = None;
        let mut failed = Vec::new();
        for (name, delivery) in delivered {
            match delivery {
                Delivery::Shown(detail) => {
                    tracing::info!(
                        request_id = %Escaped(&req.request_id),
                        answerer = name,
                        "request accepted"
                    );
                    shown = Some(match shown {
                        Some(s) => s.merge(detail),
                        None => detail,
                    });
                }
                Delivery::Failed(err) => failed.push((name, err)),
            }
        }
        match shown {
            Some(mut detail) => {
                for (name, err) in &failed {
                    tracing::warn!(
                        request_id = %Escaped(&req.request_id),
                        answerer = name,
                        error = %err.message,
                        "one copy of the request cannot be shown; the others are"
                    );
                }
                add_expiry(&mut detail, &req);
                self.set_phase(
                    &req.request_id,
                    Phase::Accepted {
                        answerer: owner.to_owned(),
                        detail: Detail::new(&detail),
                    },
                );
            }
            None => {
                if let Some((_, err)) = failed.into_iter().next() {
                    self.end_by(&req, Status::Failed, err, Source::Daemon).await;
                }
            }
        }
    }

    /// The refusal for a request id another uid owns, audited. It says nothing about the
    /// request itself.
    pub(super) async fn foreign(&self, request_id: &str, peer: Peer) -> AskError {
        self.audit(AuditEntry {
            request_id: Some(request_id.to_owned()),
            source: Source::Socket,
            actor: Some(peer.audit(None)),
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
