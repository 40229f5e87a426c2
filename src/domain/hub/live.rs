//! The live registry: every pending request's in-memory entry (its phase, its attached
//! clients, the fingerprints of what it asks), and the grace timer that cancels a request
//! whose clients went away.

use super::{foreign_error, AttachGuard, Attachment, Hub, Phase};
use crate::domain::error::AskError;
use crate::domain::model::{Context, OnDisconnect, Question};
use crate::domain::request::{Peer, Request, Source, Status};
use crate::domain::text::Escaped;
use std::collections::HashMap;
use std::time::Duration;
use tokio::sync::watch;

/// A request's questions and context as fingerprints: an ask under a live request's id must ask
/// the same, and every waiting agent's request would otherwise hold a copy of its content for
/// that check alone. Keyed per process (`RandomState`), so a collision cannot be prepared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Content {
    pub(super) questions: u64,
    pub(super) context: u64,
}

/// In-memory state of one pending request.
pub(super) struct Live {
    /// The request's key in the store.
    pub(super) key: i64,
    /// The uid that owns the request id.
    pub(super) uid: Option<u32>,
    /// What it asks, for telling a repeated ask under its id from another one.
    pub(super) content: Content,
    pub(super) phase: watch::Sender<Phase>,
    /// Open client attachments; at zero a grace timer runs.
    pub(super) attached: usize,
    /// Bumped on every attach and detach, so a grace timer knows whether it is still current.
    pub(super) epoch: u64,
    /// Its place in the expiry queue (deadline, key), if it expires.
    pub(super) expires: Option<(i64, i64)>,
    /// Its answerer and route, for the pending gauge.
    pub(super) answerer: Option<String>,
    pub(super) route: Option<String>,
}

#[derive(Default)]
pub(super) struct LiveMap {
    pub(super) by_id: HashMap<String, Live>,
    /// Pending requests per asking uid (`limits.max_pending_per_uid`).
    pub(super) per_uid: HashMap<Option<u32>, usize>,
}

impl LiveMap {
    pub(super) fn insert(&mut self, request_id: String, live: Live) {
        *self.per_uid.entry(live.uid).or_default() += 1;
        if let Some(old) = self.by_id.insert(request_id, live) {
            self.forget_uid(old.uid);
        }
    }

    pub(super) fn remove(&mut self, request_id: &str) -> Option<Live> {
        let live = self.by_id.remove(request_id)?;
        self.forget_uid(live.uid);
        Some(live)
    }

    pub(super) fn forget_uid(&mut self, uid: Option<u32>) {
        if let Some(n) = self.per_uid.get_mut(&uid) {
            *n -= 1;
            if *n == 0 {
                self.per_uid.remove(&uid);
            }
        }
        // Let the maps give memory back after a burst.
        if self.by_id.is_empty() && self.by_id.capacity() > 1024 {
            self.by_id = HashMap::new();
        }
    }
}

impl Hub {
    /// Number of requests pending in memory.
    pub fn pending_count(&self) -> usize {
        self.inner.live.lock().unwrap().by_id.len()
    }

    /// Watches a pending request without attaching to it (it does not keep the request alive).
    /// `None` when the request is not pending.
    pub fn observe(&self, request_id: &str) -> Option<watch::Receiver<Phase>> {
        self.inner
            .live
            .lock()
            .unwrap()
            .by_id
            .get(request_id)
            .map(|e| e.phase.subscribe())
    }

    /// Whether the request is still pending (from memory: every pending request is live).
    pub fn is_pending(&self, request_id: &str) -> bool {
        self.inner
            .live
            .lock()
            .unwrap()
            .by_id
            .contains_key(request_id)
    }

    /// Pending requests by (answerer, route), from memory; "none" where there is none. Every
    /// route of every answerer ([`crate::domain::Answerer::routes`], "none" for one without
    /// routes) is there, at 0 when nothing waits on it, so that a dashboard sees each series
    /// from start-up rather than from its first request.
    pub fn pending_by_route(&self) -> std::collections::BTreeMap<(String, String), usize> {
        let mut out = std::collections::BTreeMap::new();
        for a in &self.inner.answerers {
            for route in a.routes().unwrap_or_else(|| vec!["none".to_owned()]) {
                out.insert((a.name().to_owned(), route), 0);
            }
        }
        let live = self.inner.live.lock().unwrap();
        for e in live.by_id.values() {
            let key = (
                e.answerer.clone().unwrap_or_else(|| "none".into()),
                e.route.clone().unwrap_or_else(|| "none".into()),
            );
            *out.entry(key).or_insert(0) += 1;
        }
        out
    }

    /// Moves a live request from `Offering` (or an earlier `Accepted`) to `phase`.
    pub(super) fn set_phase(&self, request_id: &str, phase: Phase) {
        if let Some(e) = self.inner.live.lock().unwrap().by_id.get(request_id) {
            e.phase.send_if_modified(|p| {
                if matches!(p, Phase::Offering | Phase::Accepted { .. }) {
                    *p = phase;
                    true
                } else {
                    false
                }
            });
        }
    }

    /// The fingerprints of a request's questions and context.
    pub(super) fn content(&self, questions: &[Question], context: Option<&Context>) -> Content {
        use std::hash::BuildHasher;
        let keys = &self.inner.fingerprints;
        Content {
            questions: keys.hash_one(questions),
            context: keys.hash_one(context),
        }
    }

    /// `content` is `req`'s (see [`Hub::content`]): the ask path has it already.
    pub(super) fn insert_live(&self, req: &Request, phase: Phase, content: Content) {
        let (tx, _rx) = watch::channel(phase);
        let expires = req.expiry.as_ref().map(|e| (e.at_ms, req.key));
        if let Some((at, key)) = expires {
            self.inner.deadlines.insert(at, key);
        }
        self.inner.live.lock().unwrap().insert(
            req.request_id.clone(),
            Live {
                key: req.key,
                uid: req.owner_uid(),
                content,
                phase: tx,
                attached: 0,
                epoch: 0,
                expires,
                answerer: req.answerer.clone(),
                route: req.route.clone(),
            },
        );
    }

    /// Attaches to a live request: `Ok(None)` when it is not live, `FORBIDDEN` when another
    /// uid owns it.
    pub(super) fn attach_live(
        &self,
        request_id: &str,
        content: Content,
        peer: Peer,
        on_disconnect: OnDisconnect,
    ) -> Result<Option<Attachment>, AskError> {
        let mut live = self.inner.live.lock().unwrap();
        let Some(entry) = live.by_id.get_mut(request_id) else {
            return Ok(None);
        };
        if entry.uid != peer.uid {
            drop(live);
            return Err(foreign_error(request_id));
        }
        if entry.content.questions != content.questions {
            return Err(same_id_other_questions(request_id));
        }
        if entry.content.context != content.context {
            return Err(same_id_other_context(request_id));
        }
        entry.attached += 1;
        entry.epoch += 1;
        Ok(Some(Attachment {
            request_id: request_id.to_owned(),
            phase: entry.phase.subscribe(),
            _guard: Some(AttachGuard {
                hub: self.clone(),
                request_id: request_id.to_owned(),
                peer,
                on_disconnect,
            }),
        }))
    }

    /// A client's attachment ended (`peer`, whose ask said `on_disconnect`). The last one
    /// gone leaves the request alone: a client that may come back gets `cancel_grace_secs`; one
    /// that never does (an agent's hook) has its request withdrawn at once. Not while the
    /// daemon shuts down: its clients re-attach to the next run.
    pub(super) fn detach(&self, request_id: &str, peer: Peer, on_disconnect: OnDisconnect) {
        let mut live = self.inner.live.lock().unwrap();
        let Some(entry) = live.by_id.get_mut(request_id) else {
            return;
        };
        entry.attached = entry.attached.saturating_sub(1);
        entry.epoch += 1;
        if entry.attached != 0 {
            return;
        }
        let epoch = entry.epoch;
        // Announced before the shutdown token is cancelled: the clients' `shutting_down`
        // lines, and with them these detaches, may come first.
        let shutting_down = matches!(*entry.phase.borrow(), Phase::ShuttingDown);
        drop(live);
        match on_disconnect {
            OnDisconnect::Grace => self.schedule_grace(
                request_id,
                self.inner.settings.cancel_grace,
                "cancel_grace_secs",
            ),
            OnDisconnect::Withdraw => {
                if shutting_down || self.inner.shutdown.is_cancelled() {
                    return;
                }
                let hub = self.clone();
                let request_id = request_id.to_owned();
                self.inner.tasks.spawn(async move {
                    // Unless a client attached again meanwhile.
                    let still_alone = matches!(
                        hub.inner.live.lock().unwrap().by_id.get(&request_id),
                        Some(e) if e.attached == 0 && e.epoch == epoch
                            && !matches!(*e.phase.borrow(), Phase::ShuttingDown)
                    );
                    if still_alone && !hub.inner.shutdown.is_cancelled() {
                        hub.withdraw_abandoned(&request_id, peer).await;
                    }
                });
            }
        }
    }

    /// Cancels the request after `grace` unless a client attaches (or detaches) in between.
    pub(super) fn schedule_grace(&self, request_id: &str, grace: Duration, setting: &'static str) {
        let epoch = match self.inner.live.lock().unwrap().by_id.get(request_id) {
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
                hub.inner.live.lock().unwrap().by_id.get(&request_id),
                Some(e) if e.attached == 0 && e.epoch == epoch
            );
            if still_alone {
                let reason = format!(
                    "the asking client went away and did not re-attach within {setting} ({} s)",
                    grace.as_secs()
                );
                tracing::info!(request_id = %Escaped(&request_id), %reason, "cancelling an abandoned request");
                let req = match hub.inner.store.by_id(&request_id).await {
                    Ok(Some(r)) => r,
                    _ => return,
                };
                let err = AskError::aborted(format!("the request was cancelled: {reason}"));
                hub.end_by(&req, Status::Cancelled, err, Source::Daemon)
                    .await;
            }
        });
    }
}

pub(super) fn same_id_other_context(request_id: &str) -> AskError {
    AskError::invalid(format!(
        "context: request_id {:?} is already used with another context; use a new request_id \
         or send the same context to re-attach",
        Escaped(request_id)
    ))
}

pub(super) fn same_id_other_questions(request_id: &str) -> AskError {
    AskError::invalid(format!(
        "request_id {:?} is already used with other questions; use a new request_id or send \
         the same questions to re-attach",
        Escaped(request_id)
    ))
}
