//! The hub: one cloneable handle that front ends and answerers share.
//!
//! It stores new requests (with the outbox rows of the answerer that takes them, in one
//! transaction), lets any number of client connections wait on a request, settles questions
//! (first wins, decided by the store), and cancels requests whose clients went away and did not
//! come back within the grace period.
//!
//! Invariant: every pending request in the store has a [`Live`] entry here, from the moment it is
//! stored (or loaded at start-up) until it ends. A request ends by writing the store first and
//! then publishing [`Phase::Ended`], so a reader that finds no entry can trust the store.

use super::access::LocalUser;
use super::answer::{AskResult, Settlement};
use super::answerer::{Answerer, AnswererContext, Claim, Core, Delivery, Proposal};
use super::cluster::Role;
use super::error::{AskError, ErrorCode};
use super::expiry::{Deadlines, ExpiryRule, OnExpire};
use super::metrics::Recorder;
use super::model::{Ask, Context, Question};
use super::request::{
    now_ms, Actor, Answered, AuditAction, AuditEntry, Created, NewRequest, Outcome, Peer,
    PlannedPost, Post, Request, SettleOutcome, Settled, Source, Status,
};
use super::store::{Page, Store, Visibility};
use anyhow::Result;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Where a request stands, as its waiting clients see it.
#[derive(Debug, Clone, PartialEq)]
pub enum Phase {
    /// Stored; its answerer is still showing it.
    Offering,
    /// An answerer took it: its name and what it reported.
    Accepted { answerer: String, detail: Detail },
    /// The final line.
    Ended(Outcome),
    /// The daemon is shutting down; the request stays pending for a re-attach.
    ShuttingDown,
}

/// What an answerer reported on taking a request, kept as compact JSON text: every waiting
/// agent's request holds one for as long as it waits, and as a map (an ordered map of owned
/// keys and values) it took about four times the memory. It is read back once per attached
/// client, for its `accepted` line.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Detail(Option<Box<str>>);

impl Detail {
    pub fn new(map: &Map<String, Value>) -> Detail {
        if map.is_empty() {
            return Detail(None);
        }
        Detail(serde_json::to_string(map).ok().map(String::into_boxed_str))
    }

    pub fn to_map(&self) -> Map<String, Value> {
        self.0
            .as_deref()
            .and_then(|text| serde_json::from_str(text).ok())
            .unwrap_or_default()
    }
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

/// A request's questions and context as fingerprints: an ask under a live request's id must ask
/// the same, and every waiting agent's request would otherwise hold a copy of its content for
/// that check alone. Keyed per process (`RandomState`), so a collision cannot be prepared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Content {
    questions: u64,
    context: u64,
}

/// In-memory state of one pending request.
struct Live {
    /// The request's key in the store.
    key: i64,
    /// The uid that owns the request id.
    uid: Option<u32>,
    /// What it asks, for telling a repeated ask under its id from another one.
    content: Content,
    phase: watch::Sender<Phase>,
    /// Open client attachments; at zero a grace timer runs.
    attached: usize,
    /// Bumped on every attach and detach, so a grace timer knows whether it is still current.
    epoch: u64,
    /// Its place in the expiry queue (deadline, key), if it expires.
    expires: Option<(i64, i64)>,
    /// Its answerer and route, for the pending gauge.
    answerer: Option<String>,
    route: Option<String>,
}

#[derive(Clone)]
pub struct Hub {
    inner: Arc<Inner>,
}

struct Inner {
    store: Arc<dyn Store>,
    answerers: Vec<Arc<dyn Answerer>>,
    live: Mutex<LiveMap>,
    /// Serializes "find or store" of a request id, so two asks with one id never both insert.
    register: tokio::sync::Mutex<()>,
    settings: HubSettings,
    tasks: TaskTracker,
    shutdown: CancellationToken,
    /// The expiry deadlines of pending requests, by key.
    deadlines: Deadlines<i64>,
    /// The store's cluster, when it is shared (then this hub owns only its node's requests).
    cluster: Option<crate::core::cluster::ClusterHandle>,
    /// This daemon's role: `Solo` without a cluster; in one, the cluster driver sets it.
    role: watch::Sender<Role>,
    /// The keys of [`Content`] fingerprints.
    fingerprints: std::hash::RandomState,
}

#[derive(Default)]
struct LiveMap {
    by_id: HashMap<String, Live>,
    /// Pending requests per asking uid (`limits.max_pending_per_uid`).
    per_uid: HashMap<Option<u32>, usize>,
}

impl LiveMap {
    fn insert(&mut self, request_id: String, live: Live) {
        *self.per_uid.entry(live.uid).or_default() += 1;
        if let Some(old) = self.by_id.insert(request_id, live) {
            self.forget_uid(old.uid);
        }
    }

    fn remove(&mut self, request_id: &str) -> Option<Live> {
        let live = self.by_id.remove(request_id)?;
        self.forget_uid(live.uid);
        Some(live)
    }

    fn forget_uid(&mut self, uid: Option<u32>) {
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

/// Settings of the hub that come from the config.
#[derive(Debug, Clone)]
pub struct HubSettings {
    pub cancel_grace: Duration,
    pub restart_grace: Duration,
    /// Pending requests one uid may have at once; `BUSY` past it.
    pub max_pending_per_uid: usize,
    /// Outbox work due for longer than this is reported as overdue.
    pub overdue_after: Duration,
    /// `[expiry]`: the rule of every request whose answerer (route) sets none.
    pub expiry: ExpiryRule,
    /// Where the hub reports what it counts (asks, answers, errors).
    pub recorder: Arc<dyn Recorder>,
}

/// The pending requests found at start-up, to hand back to their answerers once the daemon
/// serves (see [`Hub::resume`]).
pub struct Backlog(Vec<(Request, Vec<Post>)>);

impl Backlog {
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// What a socket `answer` (a person at a terminal) asks for.
#[derive(Debug, Clone)]
pub struct TerminalAnswer {
    pub request_id: String,
    pub question: String,
    pub labels: Vec<String>,
    pub custom: Option<String>,
    /// Free text about who is answering; shown quoted, trusted for nothing.
    pub note: Option<String>,
}

impl Hub {
    /// Builds the hub and takes over the requests left pending by an earlier run (read once):
    /// each gets `restart_grace` for its client to re-attach. Hand the returned backlog to
    /// [`Hub::resume`] once the answerers are started.
    pub async fn start(
        store: Arc<dyn Store>,
        answerers: Vec<Arc<dyn Answerer>>,
        settings: HubSettings,
        tasks: TaskTracker,
        shutdown: CancellationToken,
    ) -> Result<(Hub, Backlog)> {
        let restart_grace = settings.restart_grace;
        let hub = Hub {
            inner: Arc::new(Inner {
                answerers,
                live: Mutex::new(LiveMap::default()),
                register: tokio::sync::Mutex::new(()),
                settings,
                tasks,
                shutdown,
                deadlines: Deadlines::default(),
                role: watch::Sender::new(if store.cluster().is_some() {
                    Role::Follower { leader: None }
                } else {
                    Role::Solo
                }),
                cluster: store.cluster(),
                store,
                fingerprints: Default::default(),
            }),
        };
        let pending = hub.inner.store.all_pending().await?;
        if !pending.is_empty() {
            tracing::info!(
                count = pending.len(),
                grace_secs = restart_grace.as_secs(),
                "resuming pending requests; their clients may re-attach"
            );
        }
        for (req, _) in &pending {
            let phase = match req.answerer.as_deref() {
                Some(a) => Phase::Accepted {
                    answerer: a.to_owned(),
                    detail: Detail::default(),
                },
                None => Phase::Offering,
            };
            let content = hub.content(&req.questions, req.context.as_deref());
            hub.insert_live(req, phase, content);
            hub.schedule_grace(&req.request_id, restart_grace, "restart_grace_secs");
        }
        Ok((hub, Backlog(pending)))
    }

    /// This daemon's node id in a cluster.
    pub fn node(&self) -> Option<&str> {
        self.inner.cluster.as_ref().map(|c| c.node())
    }

    /// Whether `req` was asked through this daemon (always, without a cluster): a uid on
    /// another node is somebody else.
    fn owned_here(&self, req: &Request) -> bool {
        req.node.as_deref() == self.node()
    }

    /// What this daemon does in its cluster.
    pub fn role(&self) -> Role {
        self.inner.role.borrow().clone()
    }

    /// Watches [`Hub::role`].
    pub fn roles(&self) -> watch::Receiver<Role> {
        self.inner.role.subscribe()
    }

    /// Records a change of role (the cluster driver); answerers watching it start or stop their
    /// platform work.
    pub fn set_role(&self, role: Role) {
        self.inner.role.send_if_modified(|r| {
            if *r == role {
                return false;
            }
            if r.as_str() != role.as_str() {
                tracing::info!(
                    from = r.as_str(),
                    to = role.as_str(),
                    "cluster role changed"
                );
            }
            if let Role::Follower {
                leader: Some(leader),
            } = &role
            {
                tracing::info!(%leader, "following the cluster's leader");
            }
            *r = role;
            true
        });
    }

    /// Tells every answerer that outbox work may be due (another node stored or changed
    /// something).
    pub fn wake_answerers(&self) {
        for a in &self.inner.answerers {
            a.wake();
        }
    }

    /// Another node answered or ended a request of this one: its waiting clients get the final
    /// line as stored.
    pub async fn ended_elsewhere(&self, key: i64) {
        match self.inner.store.by_key(key).await {
            Ok(Some(req)) => self.publish_stored_end(req),
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(key, error = %format!("{e:#}"), "cannot read a request another node ended; the next poll looks again")
            }
        }
    }

    /// The poll behind notices: every live request that has ended in the store meanwhile
    /// (answered or ended by another node) gets its final line.
    pub async fn catch_up(&self) {
        let Some(cluster) = &self.inner.cluster else {
            return;
        };
        let keys: Vec<i64> = self
            .inner
            .live
            .lock()
            .unwrap()
            .by_id
            .values()
            .map(|l| l.key)
            .collect();
        if keys.is_empty() {
            return;
        }
        match cluster.ended_among(&keys).await {
            Ok(ended) => ended.into_iter().for_each(|r| self.publish_stored_end(r)),
            Err(e) => {
                tracing::warn!(error = %format!("{e:#}"), "cannot poll for requests other nodes ended")
            }
        }
    }

    fn publish_stored_end(&self, req: Request) {
        if req.status == Status::Pending {
            return;
        }
        if let Some(outcome) = req.outcome {
            if self.is_pending(&req.request_id) {
                tracing::info!(request_id = %crate::core::text::Escaped(&req.request_id), status = req.status.as_str(), "request ended on another node");
            }
            self.publish_end(&req.request_id, outcome);
        }
    }

    /// The leader's sweep: requests of nodes that stopped heartbeating more than
    /// `restart_grace_secs` ago end as a restart would have ended them (their clients are gone
    /// with their node).
    pub async fn reap_orphans(&self) {
        let Some(cluster) = &self.inner.cluster else {
            return;
        };
        let grace = self.inner.settings.restart_grace;
        let before = now_ms() - grace.as_millis() as i64;
        let orphans = match cluster.orphans(before).await {
            Ok(o) => o,
            Err(e) => {
                tracing::warn!(error = %format!("{e:#}"), "cannot look for requests of nodes that stopped");
                return;
            }
        };
        for req in orphans {
            let node = req.node.clone().unwrap_or_else(|| "unknown".into());
            let err = AskError::aborted(format!(
                "the request was cancelled: its node {node:?} stopped and did not come back \
                 within restart_grace_secs ({} s)",
                grace.as_secs()
            ));
            tracing::info!(request_id = %crate::core::text::Escaped(&req.request_id), %node, "cancelling a request of a node that stopped");
            self.end_by(&req, Status::Cancelled, err, Source::Daemon)
                .await;
        }
    }

    /// Pending requests of every node, with their outbox rows: what a new leader takes over.
    pub async fn pending_everywhere(&self) -> Result<Vec<(Request, Vec<Post>)>> {
        match &self.inner.cluster {
            Some(c) => c.all_pending_everywhere().await,
            None => self.inner.store.all_pending().await,
        }
    }

    /// The context an answerer acts through.
    pub fn context(&self, answerer: &'static str) -> AnswererContext {
        AnswererContext::new(Arc::new(self.clone()), answerer)
    }

    /// Starts every answerer with its context.
    pub async fn start_answerers(&self) -> Result<()> {
        for a in &self.inner.answerers {
            a.start(self.context(a.name())).await?;
        }
        Ok(())
    }

    /// Hands the requests left pending by an earlier run back to the answerers that own them,
    /// and starts the expiry timer (a deadline that passed while the daemon was down comes due
    /// at once). One whose answerer is no longer configured ends with `NO_ANSWERER`.
    pub async fn resume(&self, backlog: Backlog) {
        let hub = self.clone();
        self.inner.tasks.spawn(async move {
            let inner = hub.inner.clone();
            inner
                .deadlines
                .run(&inner.shutdown, now_ms, |key| hub.expire_now(key))
                .await;
        });
        for (req, posts) in backlog.0 {
            match self.answerer_for(&req) {
                Some(a) => {
                    let mut detail = a.resume(&self.context(a.name()), &req, &posts).await;
                    add_expiry(&mut detail, &req);
                    if !detail.is_empty() {
                        self.set_phase(
                            &req.request_id,
                            Phase::Accepted {
                                answerer: a.name().to_owned(),
                                detail: Detail::new(&detail),
                            },
                        );
                    }
                }
                None => {
                    let err = AskError::new(
                        ErrorCode::NoAnswerer,
                        format!(
                            "the answerer that took this request ({}) is no longer configured",
                            req.answerer.as_deref().unwrap_or("none")
                        ),
                    );
                    self.end_by(&req, Status::Failed, err, Source::Daemon).await;
                }
            }
        }
    }

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

    pub fn answerer_names(&self) -> Vec<&'static str> {
        self.inner.answerers.iter().map(|a| a.name()).collect()
    }

    /// Pending requests by (answerer, route), from memory; "none" where there is none.
    pub fn pending_by_route(&self) -> std::collections::BTreeMap<(String, String), usize> {
        let live = self.inner.live.lock().unwrap();
        let mut out = std::collections::BTreeMap::new();
        for e in live.by_id.values() {
            let key = (
                e.answerer.clone().unwrap_or_else(|| "none".into()),
                e.route.clone().unwrap_or_else(|| "none".into()),
            );
            *out.entry(key).or_insert(0) += 1;
        }
        out
    }

    /// The platform connections of the answerers that keep one (Discord's gateway): each
    /// answerer's name and whether it is connected now.
    pub fn connections(&self) -> Vec<(&'static str, watch::Receiver<bool>)> {
        self.inner
            .answerers
            .iter()
            .filter_map(|a| a.connection().map(|c| (a.name(), c)))
            .collect()
    }

    /// Where the hub reports its counts; front ends report what they refuse through it too.
    pub fn recorder(&self) -> &Arc<dyn Recorder> {
        &self.inner.settings.recorder
    }

    /// Tells every waiting client that the daemon is going away (their requests stay pending).
    pub fn announce_shutdown(&self) {
        let live = self.inner.live.lock().unwrap();
        for entry in live.by_id.values() {
            entry.phase.send_replace(Phase::ShuttingDown);
        }
    }

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

    async fn ask_inner(&self, ask: Ask, peer: Peer) -> Result<Attachment, AskError> {
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
        let (answerer, route, posts, expiry) =
            match self.claim(&token, &questions, &ask.scope).await {
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
    async fn existing(&self, req: Request, ask: &Ask, peer: Peer) -> Result<Attachment, AskError> {
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
    async fn claim(
        &self,
        token: &str,
        questions: &[Question],
        scope: &super::model::Scope,
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
                } => return Ok((a.clone(), route, posts, expiry)),
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

    fn check_pending_cap(&self, peer: Peer) -> Result<(), AskError> {
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
    async fn deliver(&self, answerer: Arc<dyn Answerer>, req: Request) {
        let ctx = self.context(answerer.name());
        match answerer.deliver(&ctx, &req).await {
            Delivery::Shown(mut detail) => {
                add_expiry(&mut detail, &req);
                tracing::info!(
                    request_id = %crate::core::text::Escaped(&req.request_id),
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

    /// Moves a live request from `Offering` (or an earlier `Accepted`) to `phase`.
    fn set_phase(&self, request_id: &str, phase: Phase) {
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
    fn content(&self, questions: &[Question], context: Option<&Context>) -> Content {
        use std::hash::BuildHasher;
        let keys = &self.inner.fingerprints;
        Content {
            questions: keys.hash_one(questions),
            context: keys.hash_one(context),
        }
    }

    /// `content` is `req`'s (see [`Hub::content`]): the ask path has it already.
    fn insert_live(&self, req: &Request, phase: Phase, content: Content) {
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
    fn attach_live(
        &self,
        request_id: &str,
        content: Content,
        peer: Peer,
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
            }),
        }))
    }

    /// The refusal for a request id another uid owns, audited. It says nothing about the
    /// request itself.
    async fn foreign(&self, request_id: &str, peer: Peer) -> AskError {
        self.audit(AuditEntry {
            source: Source::Socket,
            actor: Some(peer.to_string()),
            action: AuditAction::Forbidden,
            detail: Some(format!(
                "request_id {:?} belongs to another uid",
                crate::core::text::Escaped(request_id)
            )),
            accepted: false,
            ..Default::default()
        })
        .await;
        foreign_error(request_id)
    }

    fn detach(&self, request_id: &str) {
        let mut live = self.inner.live.lock().unwrap();
        let Some(entry) = live.by_id.get_mut(request_id) else {
            return;
        };
        entry.attached = entry.attached.saturating_sub(1);
        entry.epoch += 1;
        if entry.attached == 0 {
            drop(live);
            self.schedule_grace(
                request_id,
                self.inner.settings.cancel_grace,
                "cancel_grace_secs",
            );
        }
    }

    /// Cancels the request after `grace` unless a client attaches (or detaches) in between.
    fn schedule_grace(&self, request_id: &str, grace: Duration, setting: &'static str) {
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
                tracing::info!(request_id = %crate::core::text::Escaped(&request_id), %reason, "cancelling an abandoned request");
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

    /// Cancels a pending request for a local user; its waiting clients get `ABORTED`. The
    /// owner or an operator may cancel.
    pub async fn cancel(
        &self,
        request_id: &str,
        reason: Option<String>,
        who: &LocalUser,
    ) -> Result<(), AskError> {
        let req = self.request_for(request_id, who).await?;
        if req.status != Status::Pending {
            return Err(AskError::invalid(format!(
                "request {:?} has already ended ({})",
                crate::core::text::Escaped(request_id),
                req.status.as_str()
            )));
        }
        let reason = reason.unwrap_or_else(|| format!("cancelled by {}", who.describe()));
        let err = AskError::aborted(format!("the request was cancelled: {reason}"));
        let audit = AuditEntry {
            request_key: Some(req.key),
            source: Source::Socket,
            actor: Some(who.describe()),
            action: AuditAction::Cancelled,
            detail: Some(err.to_string()),
            ..Default::default()
        };
        if self.end_with(&req, Status::Cancelled, err, audit).await {
            Ok(())
        } else {
            Err(AskError::invalid(format!(
                "request {:?} has already ended",
                crate::core::text::Escaped(request_id)
            )))
        }
    }

    /// Ends a pending request with an error outcome on behalf of `source`; false if it had
    /// already ended.
    async fn end_by(&self, req: &Request, status: Status, err: AskError, source: Source) -> bool {
        let audit = AuditEntry {
            request_key: Some(req.key),
            source,
            actor: Some(source.as_str().to_owned()),
            action: AuditAction::ended(status),
            detail: Some(err.to_string()),
            ..Default::default()
        };
        self.end_with(req, status, err, audit).await
    }

    async fn end_with(
        &self,
        req: &Request,
        status: Status,
        err: AskError,
        audit: AuditEntry,
    ) -> bool {
        let ended = match self.inner.store.end(req.key, status, &err, &audit).await {
            Ok(ended) => ended,
            Err(e) => {
                tracing::error!(request_id = %crate::core::text::Escaped(&req.request_id), error = %format!("{e:#}"), "cannot end the request");
                return false;
            }
        };
        if ended {
            self.inner.settings.recorder.failed(err.code);
            let outcome = Outcome::Error(err);
            self.publish_end(&req.request_id, outcome.clone());
            let mut ended_req = req.clone();
            ended_req.status = status;
            ended_req.ended_at_ms = Some(now_ms());
            ended_req.outcome = Some(outcome);
            if let Some(a) = self.answerer_for(&ended_req) {
                a.ended(&self.context(a.name()), &ended_req).await;
            }
        }
        ended
    }

    /// Publishes the final line to waiting clients and forgets the live entry.
    fn publish_end(&self, request_id: &str, outcome: Outcome) {
        let entry = self.inner.live.lock().unwrap().remove(request_id);
        if let Some(entry) = entry {
            if let Some((at, key)) = entry.expires {
                self.inner.deadlines.remove(at, &key);
            }
            entry.phase.send_replace(Phase::Ended(outcome));
        }
    }

    /// Settles question `idx` of `req` (as loaded by the caller; it is not read again). First
    /// wins; a settlement that does not count says why. When another surface than the owner
    /// settled it, the owner is told so that it updates what people see.
    pub async fn settle(
        &self,
        req: &Request,
        idx: usize,
        settlement: Settlement,
        actor: Actor,
    ) -> Result<Settled, AskError> {
        let question = req.questions.get(idx).ok_or_else(|| {
            AskError::invalid(format!(
                "request {:?} has no question number {}",
                crate::core::text::Escaped(&req.request_id),
                idx + 1
            ))
        })?;
        let settlement = settlement.normalise(question)?;
        let at_ms = now_ms();
        let audit = AuditEntry {
            request_key: Some(req.key),
            question_idx: Some(idx),
            source: actor.via.into(),
            actor: Some(actor.describe()),
            action: AuditAction::Answer,
            detail: Some(audit_detail(&settlement, actor.note.as_deref())),
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
            .settle(
                req.key,
                idx,
                &settlement,
                &actor,
                at_ms,
                &audit,
                result_if_last,
                &finish,
            )
            .await
            .map_err(|e| storage_error("the answer", &e))?;
        if matches!(outcome, SettleOutcome::Won { .. }) {
            crate::crash::point("answered");
            tracing::info!(
                request_id = %crate::core::text::Escaped(&req.request_id),
                question = %crate::core::text::Escaped(&question.id),
                by = %crate::core::text::Escaped(&actor.describe()),
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
        let owner = self.answerer_for(&req);
        if !owner.as_ref().is_some_and(|a| a.terminal_may_answer(&req)) {
            let owner_name = req.answerer.clone().unwrap_or_else(|| "none".into());
            self.audit(AuditEntry {
                request_key: Some(req.key),
                source: Source::Terminal,
                actor: Some(who.describe()),
                action: AuditAction::Forbidden,
                detail: Some(format!(
                    "terminal answer refused: the request belongs to the {owner_name} answerer"
                )),
                accepted: false,
                ..Default::default()
            })
            .await;
            return Err(AskError::new(
                ErrorCode::Forbidden,
                format!(
                    "request {:?} is answered through {owner_name}, not from a terminal; answer \
                     it there (or set terminal_answers = true on its route)",
                    crate::core::text::Escaped(&answer.request_id)
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
                    .map(|q| format!("{:?}", crate::core::text::Escaped(&q.id)))
                    .collect();
                AskError::invalid(format!(
                    "request {:?} has no question {:?}; its questions are: {}",
                    crate::core::text::Escaped(&answer.request_id),
                    crate::core::text::Escaped(&answer.question),
                    ids.join(", ")
                ))
            })?;
        let mut selected = Vec::with_capacity(answer.labels.len());
        for l in &answer.labels {
            let i = q.option_index(l).ok_or_else(|| {
                let all: Vec<String> = q
                    .options
                    .iter()
                    .map(|o| format!("{:?}", crate::core::text::Escaped(&o.label)))
                    .collect();
                AskError::invalid(format!(
                    "question {:?} has no option {:?}; its options are: {}",
                    crate::core::text::Escaped(&answer.question),
                    crate::core::text::Escaped(l),
                    if all.is_empty() {
                        "none (free text only)".into()
                    } else {
                        all.join(", ")
                    }
                ))
            })?;
            selected.push(i);
        }
        let actor = Actor::local(who.peer.uid, who.name.clone(), answer.note);
        let settlement = Settlement {
            selected,
            custom: answer.custom,
        };
        self.settle(&req, index, settlement, actor).await
    }

    /// A request by id for a local user: `INVALID_REQUEST` when unknown, `FORBIDDEN` when it is
    /// not theirs to touch.
    pub async fn request_for(
        &self,
        request_id: &str,
        who: &LocalUser,
    ) -> Result<Request, AskError> {
        let req = self.request(request_id).await?;
        if !(who.operator || who.owns(&req) && self.owned_here(&req)) {
            return Err(self.foreign(request_id, who.peer).await);
        }
        Ok(req)
    }

    /// A request by id, or `INVALID_REQUEST` naming it.
    pub async fn request(&self, request_id: &str) -> Result<Request, AskError> {
        self.inner
            .store
            .by_id(request_id)
            .await
            .map_err(|e| AskError::internal(&e))?
            .ok_or_else(|| {
                AskError::invalid(format!(
                    "unknown request_id {:?}",
                    crate::core::text::Escaped(request_id)
                ))
            })
    }

    /// One page of the pending requests a local user may see, with where they are shown.
    pub async fn pending(
        &self,
        who: &LocalUser,
        page: Page,
    ) -> Result<Vec<(Request, Vec<Post>)>, AskError> {
        let reqs = self
            .inner
            .store
            .pending(visibility(who), page)
            .await
            .map_err(|e| AskError::internal(&e))?;
        self.with_posts(reqs).await
    }

    /// One page of the requests (of any status) a local user may see, newest first.
    pub async fn history(
        &self,
        who: &LocalUser,
        page: Page,
    ) -> Result<Vec<(Request, Vec<Post>)>, AskError> {
        let reqs = self
            .inner
            .store
            .history(visibility(who), page)
            .await
            .map_err(|e| AskError::internal(&e))?;
        self.with_posts(reqs).await
    }

    /// Where a request is shown (its outbox rows).
    pub async fn posts_of(&self, req: &Request) -> Result<Vec<Post>, AskError> {
        let mut all = self
            .inner
            .store
            .posts(&[req.key])
            .await
            .map_err(|e| AskError::internal(&e))?;
        Ok(all.remove(&req.key).unwrap_or_default())
    }

    async fn with_posts(&self, reqs: Vec<Request>) -> Result<Vec<(Request, Vec<Post>)>, AskError> {
        self.inner
            .store
            .with_posts(reqs)
            .await
            .map_err(|e| AskError::internal(&e))
    }

    /// Outbox work due for more than `overdue_after`: how many items, and how long the oldest
    /// has been due.
    pub async fn outbox_overdue(&self) -> Result<(usize, Duration), AskError> {
        let due = self
            .inner
            .store
            .outbox_due(None)
            .await
            .map_err(|e| AskError::internal(&e))?;
        let now = now_ms();
        let late: Vec<i64> = due
            .iter()
            .map(|d| now - d.due_since_ms)
            .filter(|age| *age > self.inner.settings.overdue_after.as_millis() as i64)
            .collect();
        let oldest = late.iter().copied().max().unwrap_or(0).max(0) as u64;
        Ok((late.len(), Duration::from_millis(oldest)))
    }

    /// Whether the store takes a write now (the health check).
    pub async fn store_writable(&self) -> Result<(), String> {
        self.inner
            .store
            .writable()
            .await
            .map_err(|e| format!("{e:#}"))
    }

    /// A request's expiry came due: its policy answers every open question, or it ends as
    /// `EXPIRED` (the policy `fail`, or a question the policy has no answer for).
    async fn expire_now(&self, key: i64) {
        let req = match self.inner.store.by_key(key).await {
            Ok(Some(r)) if r.status == Status::Pending => r,
            Ok(_) => return,
            Err(e) => {
                // Retried in a while: the deadline is stored, the queue only forgot it.
                tracing::error!(key, error = %format!("{e:#}"), "cannot read a request whose expiry came due; retrying in 10 s");
                self.inner.deadlines.insert(now_ms() + 10_000, key);
                return;
            }
        };
        let Some(expiry) = req.expiry.clone() else {
            return;
        };
        let waited = Duration::from_millis((expiry.at_ms - req.created_at_ms).max(0) as u64);
        let open = req
            .answers
            .iter()
            .enumerate()
            .filter(|(_, a)| a.is_none())
            .map(|(i, _)| i);
        match expiry.on_expire.answers(&req.questions, open) {
            Some(answers) => {
                tracing::info!(request_id = %crate::core::text::Escaped(&req.request_id), policy = %expiry.on_expire.describe(), "nobody answered in time; the expiry policy answers");
                let mut cur = req;
                for (idx, settlement) in answers {
                    match self
                        .settle(&cur, idx, settlement, Actor::policy(waited))
                        .await
                    {
                        Ok(s) if s.request.status != Status::Pending => return,
                        Ok(s) if matches!(s.outcome, SettleOutcome::Won { .. }) => cur = s.request,
                        Ok(s) if matches!(s.outcome, SettleOutcome::AlreadyAnswered(_)) => {}
                        Ok(_) => return,
                        Err(e) => {
                            tracing::error!(request_id = %crate::core::text::Escaped(&cur.request_id), error = %e, "the expiry policy's answer could not be stored");
                            return;
                        }
                    }
                }
            }
            None => {
                let why = match expiry.on_expire {
                    OnExpire::Fail => String::new(),
                    ref p => format!(
                        "; the expiry policy ({}) has no answer for every open question",
                        p.describe()
                    ),
                };
                let err = AskError::new(
                    ErrorCode::Expired,
                    format!(
                        "nobody answered within {}{why}",
                        super::expiry::human(waited)
                    ),
                );
                if self
                    .end_by(&req, Status::Expired, err, Source::Policy)
                    .await
                {
                    tracing::info!(request_id = %crate::core::text::Escaped(&req.request_id), "request expired");
                }
            }
        }
    }

    fn answerer_for(&self, req: &Request) -> Option<Arc<dyn Answerer>> {
        let name = req.answerer.as_deref()?;
        self.inner
            .answerers
            .iter()
            .find(|a| a.name() == name)
            .cloned()
    }

    /// Writes an audit row; a failure is logged, never swallowed silently.
    pub async fn audit(&self, entry: AuditEntry) {
        if let Err(e) = self.inner.store.audit(&entry).await {
            tracing::error!(error = %format!("{e:#}"), action = entry.action.as_str(), "cannot write the audit log");
        }
    }
}

#[async_trait::async_trait]
impl Core for Hub {
    async fn settle(
        &self,
        req: &Request,
        idx: usize,
        settlement: Settlement,
        actor: Actor,
    ) -> Result<Settled, AskError> {
        Hub::settle(self, req, idx, settlement, actor).await
    }

    async fn end(&self, req: &Request, status: Status, error: AskError) -> bool {
        self.end_by(req, status, error, Source::Daemon).await
    }

    async fn cancel_as(&self, req: &Request, reason: &str, source: Source, actor: String) -> bool {
        let err = AskError::aborted(format!("the request was cancelled: {reason}"));
        let audit = AuditEntry {
            request_key: Some(req.key),
            source,
            actor: Some(actor),
            action: AuditAction::Cancelled,
            detail: Some(err.to_string()),
            ..Default::default()
        };
        self.end_with(req, Status::Cancelled, err, audit).await
    }

    async fn audit(&self, entry: AuditEntry) {
        Hub::audit(self, entry).await
    }

    fn is_being_delivered(&self, request_id: &str) -> bool {
        self.inner
            .live
            .lock()
            .unwrap()
            .by_id
            .get(request_id)
            .is_some_and(|l| matches!(*l.phase.borrow(), Phase::Offering))
    }

    async fn is_pending(&self, req: &Request) -> bool {
        if Hub::is_pending(self, &req.request_id) {
            return true;
        }
        // Not live: it ended, or it is another node's (this one leads), or it was stored a
        // moment ago and is not live yet (a repair pass woken by its notice got there first).
        // The store knows.
        match self.inner.store.by_key(req.key).await {
            Ok(Some(r)) => r.status == Status::Pending,
            Ok(None) => false,
            Err(_) => req.status == Status::Pending,
        }
    }

    fn store(&self) -> &Arc<dyn Store> {
        &self.inner.store
    }

    fn shutdown(&self) -> &CancellationToken {
        &self.inner.shutdown
    }

    fn tasks(&self) -> &TaskTracker {
        &self.inner.tasks
    }

    fn roles(&self) -> watch::Receiver<Role> {
        Hub::roles(self)
    }

    async fn pending_everywhere(&self) -> Result<Vec<(Request, Vec<Post>)>> {
        Hub::pending_everywhere(self).await
    }
}

/// What the waterfall gave a request: its answerer, route, outbox rows and the route's expiry.
type Taken = (
    Arc<dyn Answerer>,
    Option<String>,
    Vec<PlannedPost>,
    Option<ExpiryRule>,
);

/// Tells the clients of a request that expires when it does (`expires_in_secs`, from now).
fn add_expiry(detail: &mut Map<String, Value>, req: &Request) {
    if let Some(e) = &req.expiry {
        let left = ((e.at_ms - now_ms()).max(0) as u64).div_ceil(1000);
        detail.insert("expires_in_secs".into(), Value::from(left));
        detail.insert("on_expire".into(), Value::from(e.on_expire.describe()));
    }
}

/// The audit detail of a settlement: what was chosen, and the note quoted.
fn audit_detail(s: &Settlement, note: Option<&str>) -> String {
    let mut d = serde_json::to_string(s).unwrap_or_default();
    if let Some(n) = note {
        d.push_str(&format!(" note={:?}", n));
    }
    d
}

fn visibility(who: &LocalUser) -> Visibility {
    match (who.operator, who.peer.uid) {
        (true, _) => Visibility::All,
        (false, Some(uid)) => Visibility::Owner(uid),
        // No credentials: nothing is provably theirs.
        (false, None) => Visibility::Owner(u32::MAX),
    }
}

/// 80 random bits as 20 hex digits: the per-request token platform controls carry.
fn new_token() -> String {
    let mut bytes = [0u8; 10];
    if getrandom::fill(&mut bytes).is_err() {
        // No OS randomness at all: a v4 UUID's random bits (it has its own fallback).
        bytes.copy_from_slice(&uuid::Uuid::new_v4().as_bytes()[..10]);
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn storage_error(what: &str, e: &anyhow::Error) -> AskError {
    tracing::error!(error = %format!("{e:#}"), "storage failed; nothing was saved");
    AskError::new(
        ErrorCode::Internal,
        format!("{what} could not be saved (storage error: {e:#}); nothing changed, try again"),
    )
}

fn foreign_error(request_id: &str) -> AskError {
    AskError::new(
        ErrorCode::Forbidden,
        format!(
            "request_id {:?} is not available to this user; request ids belong to the local \
             user who asked them (use another request_id)",
            crate::core::text::Escaped(request_id)
        ),
    )
}

fn same_id_other_context(request_id: &str) -> AskError {
    AskError::invalid(format!(
        "context: request_id {:?} is already used with another context; use a new request_id \
         or send the same context to re-attach",
        crate::core::text::Escaped(request_id)
    ))
}

fn same_id_other_questions(request_id: &str) -> AskError {
    AskError::invalid(format!(
        "request_id {:?} is already used with other questions; use a new request_id or send \
         the same questions to re-attach",
        crate::core::text::Escaped(request_id)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_accepted_detail_keeps_its_fields_in_order() {
        let mut map = Map::new();
        map.insert("route".into(), Value::from("ops"));
        map.insert("message_links".into(), serde_json::json!(["https://x/1"]));
        map.insert("expires_in_secs".into(), Value::from(60));
        let detail = Detail::new(&map);
        assert_eq!(detail.to_map(), map);
        assert_eq!(
            serde_json::to_string(&detail.to_map()).unwrap(),
            r#"{"route":"ops","message_links":["https://x/1"],"expires_in_secs":60}"#
        );
        assert_eq!(Detail::new(&Map::new()), Detail::default());
        assert!(Detail::default().to_map().is_empty());
    }
}
