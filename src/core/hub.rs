//! The hub: one cloneable handle that front ends and answerers share.
//!
//! It stores new requests, offers them down the answerer waterfall, lets any number of client
//! connections wait on a request, settles questions (first wins, decided by the store), and
//! cancels requests whose clients went away and did not come back within the grace period.
//!
//! Invariant: every pending request in the store has a [`Live`] entry here, from the moment it is
//! stored (or loaded at start-up) until it ends. A request ends by writing the store first and
//! then publishing [`Phase::Ended`], so a reader that finds no entry can trust the store.

use super::answer::Settlement;
use super::answerer::{Answerer, Offer};
use super::error::{AskError, ErrorCode};
use super::model::{Ask, Question};
use crate::store::{
    AnsweredBy, AuditEntry, Inserted, NewRequest, Outcome, SettleOutcome, Status, Store,
    StoredRequest,
};
use anyhow::Result;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// The local process on the other end of a socket connection (SO_PEERCRED).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Peer {
    pub uid: Option<u32>,
    pub pid: Option<i32>,
}

impl Peer {
    fn actor(&self) -> String {
        format!(
            "uid={} pid={}",
            self.uid.map_or("?".into(), |u| u.to_string()),
            self.pid.map_or("?".into(), |p| p.to_string())
        )
    }
}

/// Where a request stands, as its waiting clients see it.
#[derive(Debug, Clone, PartialEq)]
pub enum Phase {
    /// Stored; the waterfall is still deciding who takes it.
    Offering,
    /// An answerer took it: its name and what it reported.
    Accepted {
        answerer: String,
        detail: Map<String, Value>,
    },
    /// The final line.
    Ended(Outcome),
}

/// A client's hold on a request: it watches the phase, and while any attachment lives the
/// request is not cancelled for a missing client.
pub struct Attachment {
    pub request_id: String,
    pub phase: watch::Receiver<Phase>,
    _guard: Option<AttachGuard>,
}

struct AttachGuard {
    hub: Hub,
    request_id: String,
}

impl Drop for AttachGuard {
    fn drop(&mut self) {
        self.hub.detach(&self.request_id);
    }
}

/// In-memory state of one pending request.
struct Live {
    questions: Arc<Vec<Question>>,
    phase: watch::Sender<Phase>,
    /// Open client attachments; at zero a grace timer runs.
    attached: usize,
    /// Bumped on every attach and detach, so a grace timer knows whether it is still current.
    epoch: u64,
}

#[derive(Clone)]
pub struct Hub {
    inner: Arc<Inner>,
}

struct Inner {
    store: Store,
    answerers: Vec<Arc<dyn Answerer>>,
    live: Mutex<HashMap<String, Live>>,
    /// Serializes "find or store" of a request id, so two asks with one id never both insert.
    register: tokio::sync::Mutex<()>,
    cancel_grace: Duration,
    tasks: TaskTracker,
    shutdown: CancellationToken,
}

/// Settings of the hub that come from the config.
#[derive(Debug, Clone)]
pub struct HubSettings {
    pub cancel_grace: Duration,
    pub restart_grace: Duration,
}

impl Hub {
    /// Builds the hub and takes over the requests left pending by an earlier run: each gets
    /// `restart_grace` for its client to re-attach, and its answerer is told to resume it.
    pub async fn start(
        store: Store,
        answerers: Vec<Arc<dyn Answerer>>,
        settings: HubSettings,
        tasks: TaskTracker,
        shutdown: CancellationToken,
    ) -> Result<Hub> {
        let hub = Hub {
            inner: Arc::new(Inner {
                store,
                answerers,
                live: Mutex::new(HashMap::new()),
                register: tokio::sync::Mutex::new(()),
                cancel_grace: settings.cancel_grace,
                tasks,
                shutdown,
            }),
        };
        let pending = hub.inner.store.pending_requests().await?;
        if !pending.is_empty() {
            tracing::info!(
                count = pending.len(),
                grace_secs = settings.restart_grace.as_secs(),
                "resuming pending requests; their clients may re-attach"
            );
        }
        for req in &pending {
            let phase = match &req.answerer {
                Some(a) => Phase::Accepted {
                    answerer: a.clone(),
                    detail: req.accepted.clone().unwrap_or_default(),
                },
                None => Phase::Offering,
            };
            hub.insert_live(req, phase);
            hub.schedule_grace(
                &req.request_id,
                settings.restart_grace,
                "restart_grace_secs",
            );
        }
        Ok(hub)
    }

    /// Hands the requests left pending by an earlier run back to the answerers: one that was
    /// stored but never offered (a crash in between) is offered now; the others are resumed by
    /// the answerer that owns them. Call once the answerers are wired to this hub.
    pub async fn resume(&self) -> Result<()> {
        for req in self.inner.store.pending_requests().await? {
            if req.answerer.is_none() {
                let hub = self.clone();
                self.inner.tasks.spawn(async move { hub.offer(req).await });
            } else if let Some(a) = self.answerer_for(&req) {
                a.resume(&req).await;
            }
        }
        Ok(())
    }

    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    /// Number of requests pending in memory.
    pub fn pending_count(&self) -> usize {
        self.inner.live.lock().unwrap().len()
    }

    /// Watches a pending request without attaching to it (it does not keep the request alive).
    /// `None` when the request is not pending.
    pub fn observe(&self, request_id: &str) -> Option<watch::Receiver<Phase>> {
        self.inner
            .live
            .lock()
            .unwrap()
            .get(request_id)
            .map(|e| e.phase.subscribe())
    }

    /// Whether the request is still pending (from memory: every pending request is live).
    pub fn is_pending(&self, request_id: &str) -> bool {
        self.inner.live.lock().unwrap().contains_key(request_id)
    }

    pub fn answerer_names(&self) -> Vec<&'static str> {
        self.inner.answerers.iter().map(|a| a.name()).collect()
    }

    /// Handles an `ask`: stores it (or finds it by its id) and returns an attachment that
    /// follows it to its final line.
    ///
    /// The work runs in a task of its own, so a client that disconnects half-way can never
    /// leave a request stored but unregistered or half-offered.
    pub async fn ask(&self, ask: Ask, peer: Peer) -> Result<Attachment, AskError> {
        let hub = self.clone();
        self.inner
            .tasks
            .spawn(async move { hub.ask_inner(ask, peer).await })
            .await
            .map_err(|e| AskError::new(ErrorCode::Internal, format!("the ask task failed: {e}")))?
    }

    async fn ask_inner(&self, ask: Ask, peer: Peer) -> Result<Attachment, AskError> {
        if let Some(owner) = &ask.caller.owner_agent_id {
            self.audit(AuditEntry {
                source: "socket",
                actor: Some(peer.actor()),
                action: "ask",
                detail: Some(format!("delegated caller owned by {owner}")),
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
        let register = self.inner.register.lock().await;
        // A live request is attached to without touching the database.
        if let Some(att) = self.attach_live(&request_id, &ask.questions)? {
            return Ok(att);
        }
        let new = NewRequest {
            request_id: request_id.clone(),
            questions: ask.questions.clone(),
            caller: ask.caller.clone(),
            scope: ask.scope.clone(),
            peer_uid: peer.uid,
            peer_pid: peer.pid,
        };
        let inserted = self
            .inner
            .store
            .insert_request(&new)
            .await
            .map_err(|e| AskError::internal(&e))?;
        match inserted {
            Inserted::Existing(req) => {
                drop(register);
                if req.questions != ask.questions {
                    return Err(same_id_other_questions(&request_id));
                }
                // Not live, so it has ended: its final line is stored.
                let outcome = req.outcome.clone().unwrap_or_else(|| {
                    Outcome::Error(AskError::new(
                        ErrorCode::Internal,
                        "the request is pending in the store but not in memory",
                    ))
                });
                self.audit(AuditEntry {
                    request_key: Some(req.key),
                    source: "socket",
                    actor: Some(peer.actor()),
                    action: "reattach",
                    detail: Some(format!("ended: {}", req.status.as_str())),
                    accepted: true,
                    ..Default::default()
                })
                .await;
                let (_tx, rx) = watch::channel(Phase::Ended(outcome));
                Ok(Attachment {
                    request_id,
                    phase: rx,
                    _guard: None,
                })
            }
            Inserted::New(req) => {
                crate::crash::point("stored");
                self.insert_live(&req, Phase::Offering);
                let att = self
                    .attach_live(&request_id, &ask.questions)?
                    .expect("a request just registered is live");
                drop(register);
                self.audit(AuditEntry {
                    request_key: Some(req.key),
                    source: "socket",
                    actor: Some(peer.actor()),
                    action: "ask",
                    detail: Some(format!("{} question(s)", req.questions.len())),
                    accepted: true,
                    ..Default::default()
                })
                .await;
                let hub = self.clone();
                self.inner.tasks.spawn(async move { hub.offer(req).await });
                Ok(att)
            }
        }
    }

    fn insert_live(&self, req: &StoredRequest, phase: Phase) {
        let (tx, _rx) = watch::channel(phase);
        self.inner.live.lock().unwrap().insert(
            req.request_id.clone(),
            Live {
                questions: Arc::new(req.questions.clone()),
                phase: tx,
                attached: 0,
                epoch: 0,
            },
        );
    }

    fn attach_live(
        &self,
        request_id: &str,
        questions: &[Question],
    ) -> Result<Option<Attachment>, AskError> {
        let mut live = self.inner.live.lock().unwrap();
        let Some(entry) = live.get_mut(request_id) else {
            return Ok(None);
        };
        if entry.questions.as_slice() != questions {
            return Err(same_id_other_questions(request_id));
        }
        entry.attached += 1;
        entry.epoch += 1;
        Ok(Some(Attachment {
            request_id: request_id.to_owned(),
            phase: entry.phase.subscribe(),
            _guard: Some(AttachGuard {
                hub: self.clone(),
                request_id: request_id.to_owned(),
            }),
        }))
    }

    fn detach(&self, request_id: &str) {
        let mut live = self.inner.live.lock().unwrap();
        let Some(entry) = live.get_mut(request_id) else {
            return;
        };
        entry.attached = entry.attached.saturating_sub(1);
        entry.epoch += 1;
        if entry.attached == 0 {
            drop(live);
            self.schedule_grace(request_id, self.inner.cancel_grace, "cancel_grace_secs");
        }
    }

    /// Cancels the request after `grace` unless a client attaches (or detaches) in between.
    fn schedule_grace(&self, request_id: &str, grace: Duration, setting: &'static str) {
        let epoch = match self.inner.live.lock().unwrap().get(request_id) {
            Some(e) if e.attached == 0 => e.epoch,
            _ => return,
        };
        let hub = self.clone();
        let request_id = request_id.to_owned();
        let shutdown = self.inner.shutdown.clone();
        self.inner.tasks.spawn(async move {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(grace) => {}
            }
            let still_alone = matches!(
                hub.inner.live.lock().unwrap().get(&request_id),
                Some(e) if e.attached == 0 && e.epoch == epoch
            );
            if still_alone {
                let reason = format!(
                    "the asking client went away and did not re-attach within {setting} ({} s)",
                    grace.as_secs()
                );
                tracing::info!(request_id, %reason, "cancelling an abandoned request");
                if let Err(e) = hub.cancel(&request_id, &reason, "daemon").await {
                    tracing::debug!(request_id, error = %e, "abandoned request had already ended");
                }
            }
        });
    }

    /// Runs the waterfall for a stored request: the first answerer that accepts owns it.
    async fn offer(&self, req: StoredRequest) {
        let mut declines = Vec::new();
        for answerer in &self.inner.answerers {
            match answerer.offer(&req).await {
                Offer::Accept(detail) => {
                    if let Err(e) = self
                        .inner
                        .store
                        .set_accepted(req.key, answerer.name(), &detail)
                        .await
                    {
                        tracing::error!(error = %format!("{e:#}"), "cannot record the answerer");
                    }
                    tracing::info!(
                        request_id = req.request_id,
                        answerer = answerer.name(),
                        "request accepted"
                    );
                    if let Some(e) = self.inner.live.lock().unwrap().get(&req.request_id) {
                        e.phase.send_if_modified(|p| {
                            if matches!(p, Phase::Offering) {
                                *p = Phase::Accepted {
                                    answerer: answerer.name().to_owned(),
                                    detail,
                                };
                                true
                            } else {
                                false
                            }
                        });
                    }
                    return;
                }
                Offer::Decline(reason) => {
                    tracing::debug!(answerer = answerer.name(), %reason, "answerer declined");
                    declines.push(format!("{}: {reason}", answerer.name()));
                }
            }
        }
        let message = if self.inner.answerers.is_empty() || declines.is_empty() {
            "no answerer is configured: set discord.token and discord.channel_id, or enable the \
             terminal answerer with [terminal] enabled = true"
                .to_owned()
        } else {
            format!("no answerer accepted the request ({})", declines.join("; "))
        };
        let err = AskError::new(ErrorCode::NoAnswerer, message);
        self.end(&req.request_id, req.key, Status::Failed, err, "daemon")
            .await;
    }

    /// Cancels a pending request; its waiting clients get `ABORTED`.
    pub async fn cancel(&self, request_id: &str, reason: &str, by: &str) -> Result<(), AskError> {
        let req = self.request(request_id).await?;
        if req.status != Status::Pending {
            return Err(AskError::invalid(format!(
                "request {request_id:?} has already ended ({})",
                req.status.as_str()
            )));
        }
        let err = AskError::aborted(format!("the request was cancelled: {reason}"));
        if self
            .end(request_id, req.key, Status::Cancelled, err, by)
            .await
        {
            Ok(())
        } else {
            Err(AskError::invalid(format!(
                "request {request_id:?} has already ended"
            )))
        }
    }

    /// Ends a pending request with an error outcome; false if it had already ended.
    async fn end(
        &self,
        request_id: &str,
        key: i64,
        status: Status,
        err: AskError,
        by: &str,
    ) -> bool {
        let ended = match self.inner.store.end_request(key, status, &err).await {
            Ok(ended) => ended,
            Err(e) => {
                tracing::error!(request_id, error = %format!("{e:#}"), "cannot end the request");
                return false;
            }
        };
        self.audit(AuditEntry {
            request_key: Some(key),
            source: if by == "daemon" { "daemon" } else { "socket" },
            actor: Some(by.to_owned()),
            action: status.as_str(),
            detail: Some(err.to_string()),
            accepted: ended,
            ..Default::default()
        })
        .await;
        if ended {
            self.publish_end(request_id, Outcome::Error(err)).await;
        }
        ended
    }

    /// Ends a pending request because its answerer cannot show it after all (for example a
    /// permission lost between accepting and posting). False if it had already ended.
    pub async fn fail(&self, key: i64, err: AskError) -> bool {
        self.finish(key, Status::Failed, err).await
    }

    /// Ends a pending request because its answerer's expiry policy ran out (`EXPIRED`).
    pub async fn expire(&self, key: i64, message: String) -> bool {
        self.finish(
            key,
            Status::Expired,
            AskError::new(ErrorCode::Expired, message),
        )
        .await
    }

    async fn finish(&self, key: i64, status: Status, err: AskError) -> bool {
        let request_id = match self.inner.store.request_by_key(key).await {
            Ok(Some(r)) => r.request_id,
            _ => return false,
        };
        self.end(&request_id, key, status, err, "daemon").await
    }

    /// Publishes the final line to waiting clients, forgets the live entry and tells the owning
    /// answerer.
    async fn publish_end(&self, request_id: &str, outcome: Outcome) {
        if let Some(entry) = self.inner.live.lock().unwrap().remove(request_id) {
            entry.phase.send_replace(Phase::Ended(outcome.clone()));
        }
        if let Ok(req) = self.request(request_id).await {
            if let Some(a) = self.answerer_for(&req) {
                a.request_ended(&req, &outcome).await;
            }
        }
    }

    /// Settles question `index` of the request with key `key`. First wins; a settlement that
    /// does not count says why.
    pub async fn settle(
        &self,
        key: i64,
        index: usize,
        settlement: Settlement,
        by: &str,
        via: &'static str,
    ) -> Result<SettleOutcome, AskError> {
        let req = self
            .inner
            .store
            .request_by_key(key)
            .await
            .map_err(|e| AskError::internal(&e))?
            .ok_or_else(|| AskError::invalid(format!("unknown request key {key}")))?;
        let question = req.questions.get(index).ok_or_else(|| {
            AskError::invalid(format!(
                "request {:?} has no question number {}",
                req.request_id,
                index + 1
            ))
        })?;
        let settlement = settlement.normalise(question)?;
        let outcome = self
            .inner
            .store
            .settle(key, index, &settlement, by, via)
            .await
            .map_err(|e| AskError::internal(&e))?;
        self.audit(AuditEntry {
            request_key: Some(key),
            question_idx: Some(index as i64),
            source: via,
            actor: Some(by.to_owned()),
            action: "answer",
            detail: Some(serde_json::to_string(&settlement).unwrap_or_default()),
            accepted: matches!(outcome, SettleOutcome::Won { .. }),
        })
        .await;
        if let SettleOutcome::Won { result } = &outcome {
            crate::crash::point("answered");
            tracing::info!(
                request_id = req.request_id,
                question = question.id,
                by,
                via,
                "question settled"
            );
            if let Some(a) = self.answerer_for(&req) {
                let by = AnsweredBy {
                    by: by.to_owned(),
                    via: via.to_owned(),
                    at_ms: crate::store::now_ms(),
                    settlement: settlement.clone(),
                };
                a.question_settled(&req, index, &by).await;
            }
            if let Some(result) = result {
                self.publish_end(&req.request_id, Outcome::Answered(result.clone()))
                    .await;
            }
        }
        Ok(outcome)
    }

    /// Settles a question named by request id and question id, with option labels.
    pub async fn answer_by_labels(
        &self,
        request_id: &str,
        question_id: &str,
        labels: &[String],
        custom: Option<String>,
        by: &str,
        via: &'static str,
    ) -> Result<SettleOutcome, AskError> {
        let req = self.request(request_id).await?;
        let (index, q) = req
            .questions
            .iter()
            .enumerate()
            .find(|(_, q)| q.id == question_id)
            .ok_or_else(|| {
                let ids: Vec<&str> = req.questions.iter().map(|q| q.id.as_str()).collect();
                AskError::invalid(format!(
                    "request {request_id:?} has no question {question_id:?}; its questions are: {}",
                    ids.join(", ")
                ))
            })?;
        let mut selected = Vec::with_capacity(labels.len());
        for l in labels {
            let i = q.option_index(l).ok_or_else(|| {
                let all: Vec<String> = q.options.iter().map(|o| format!("{:?}", o.label)).collect();
                AskError::invalid(format!(
                    "question {question_id:?} has no option {l:?}; its options are: {}",
                    if all.is_empty() {
                        "none (free text only)".into()
                    } else {
                        all.join(", ")
                    }
                ))
            })?;
            selected.push(i);
        }
        self.settle(req.key, index, Settlement { selected, custom }, by, via)
            .await
    }

    /// A request by id, or `INVALID_REQUEST` naming it.
    pub async fn request(&self, request_id: &str) -> Result<StoredRequest, AskError> {
        self.inner
            .store
            .request_by_id(request_id)
            .await
            .map_err(|e| AskError::internal(&e))?
            .ok_or_else(|| AskError::invalid(format!("unknown request_id {request_id:?}")))
    }

    fn answerer_for(&self, req: &StoredRequest) -> Option<&Arc<dyn Answerer>> {
        let name = req.answerer.as_deref()?;
        self.inner.answerers.iter().find(|a| a.name() == name)
    }

    /// Writes an audit row; a failure is logged, never swallowed silently.
    pub async fn audit(&self, entry: AuditEntry) {
        if let Err(e) = self.inner.store.audit(&entry).await {
            tracing::error!(error = %format!("{e:#}"), action = entry.action, "cannot write the audit log");
        }
    }
}

fn same_id_other_questions(request_id: &str) -> AskError {
    AskError::invalid(format!(
        "request_id {request_id:?} is already used with other questions; use a new request_id \
         or send the same questions to re-attach"
    ))
}
