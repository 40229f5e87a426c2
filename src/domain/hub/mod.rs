//! The hub: one cloneable handle that front ends and answerers share.
//!
//! It stores new requests (with the outbox rows of every answerer that takes them, in one
//! transaction), lets any number of client connections wait on a request, settles questions
//! (first wins anywhere, decided by the store), tells every answerer that shows a request how
//! it went, and cancels requests whose clients went away and did not come back within the
//! grace period.
//!
//! Invariant: every pending request in the store has a [`Live`] entry here, from the moment it is
//! stored (or loaded at start-up) until it ends. A request ends by writing the store first and
//! then publishing [`Phase::Ended`], so a reader that finds no entry can trust the store.

use super::answer::Settlement;
use super::answerer::{Accepted, Answerer, AnswererContext, Core};
use super::clock::now_ms;
use super::cluster::Role;
use super::error::{AskError, ErrorCode};
use super::expiry::{Deadlines, ExpiryRule};
use super::metrics::Recorder;
use super::model::OnDisconnect;
use super::quorum::Policy;
use super::request::{
    Actor, AuditAction, AuditEntry, Outcome, Peer, Post, Request, Settled, Source, Status,
};
use super::store::Store;
use super::text::Escaped;
use anyhow::Result;
use live::LiveMap;
use marks::Marks;

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
/// agent's request holds one for as long as it waits, and as owned strings (a route, a channel,
/// links) it took several allocations and about four times the memory. It is read back once
/// per attached client, for its `accepted` line.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Detail(Option<Box<str>>);

impl Detail {
    pub fn new(accepted: &Accepted) -> Detail {
        if accepted.is_empty() {
            return Detail(None);
        }
        Detail(
            serde_json::to_string(accepted)
                .ok()
                .map(String::into_boxed_str),
        )
    }

    pub fn get(&self) -> Accepted {
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
    /// The attached client, and what its going away means (its ask's `on_disconnect`).
    peer: Peer,
    on_disconnect: OnDisconnect,
}

impl Drop for AttachGuard {
    fn drop(&mut self) {
        self.hub
            .detach(&self.request_id, self.peer, self.on_disconnect);
    }
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
    /// The ids of requests being stored, from before their COMMIT until they are live (or
    /// found stored already): a repair pass that reads their outbox rows meanwhile leaves them
    /// to their delivery (`Core::is_being_delivered`).
    storing: Marks<String>,
    /// The questions, as (request key, index), with a vote under way on this daemon, from
    /// before its compare-and-swap until its settlement returned: the repair pass leaves a
    /// quorum such a vote completed to that vote (`Hub::is_being_voted`).
    voting: Marks<(i64, usize)>,
    settings: HubSettings,
    tasks: TaskTracker,
    shutdown: CancellationToken,
    /// The expiry deadlines of pending requests, by key.
    deadlines: Deadlines<i64>,
    /// The store's cluster, when it is shared (then this hub owns only its node's requests).
    cluster: Option<crate::domain::cluster::ClusterHandle>,
    /// This daemon's role: `Solo` without a cluster; in one, the cluster driver sets it.
    role: watch::Sender<Role>,
    /// What the cluster driver last learned of the lead (health and metrics read it).
    lead: std::sync::Mutex<crate::domain::cluster::LeadStatus>,
    /// The keys of [`Content`] fingerprints.
    fingerprints: std::hash::RandomState,
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
    /// This daemon's host name (its cluster node name in a cluster): where its requests are
    /// asked, for the identities' `hosts` (`config::Cluster::node`).
    pub host: String,
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

mod ask;
mod cluster;
mod end;
mod expire;
mod grants;
mod live;
mod marks;
mod once_grants;
mod queries;
mod settle;
mod terminal;
mod votes;
mod withdraw;
pub use crate::domain::request::WithdrawReason;
pub use withdraw::WithdrawMatch;

pub use terminal::TerminalAnswer;

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
                storing: Marks::default(),
                voting: Marks::default(),
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
                lead: Default::default(),
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

    /// Where this daemon's requests are asked and its terminal answers given: its node name in
    /// a cluster, else its host name. A single daemon has one too, so that an identity's
    /// `hosts` means the same alone as in a cluster.
    pub fn host(&self) -> &str {
        self.node().unwrap_or(&self.inner.settings.host)
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

    /// Every configured answerer that shows a copy of `req` ([`Request::answerers`]), the
    /// owner first: those that hear how it goes and resume it. One no longer configured is
    /// left out.
    fn answerers_for(&self, req: &Request) -> Vec<Arc<dyn Answerer>> {
        let names: &[String] = if req.answerers.is_empty() {
            // Not read from the store (a test's request): its owner alone.
            req.answerer.as_slice()
        } else {
            &req.answerers
        };
        names
            .iter()
            .filter_map(|n| self.inner.answerers.iter().find(|a| a.name() == n))
            .cloned()
            .collect()
    }

    /// Tells every answerer that shows `req`, but the one `actor` acted through (it shows
    /// its own outcome), that question `idx` was settled or voted on.
    async fn tell_settled(&self, req: &Request, idx: usize, actor: &Actor) {
        for a in self.answerers_for(req) {
            if a.name() != actor.via.as_str() {
                a.settled(&self.context(a.name()), req, idx).await;
            }
        }
    }
}

/// Runs `futures` together and returns their outputs in order: the hub asks and shows through
/// every answerer at once, so that one slow platform does not hold up the others' posts.
async fn all<F: std::future::Future>(futures: Vec<F>) -> Vec<F::Output> {
    use std::task::Poll;
    if futures.len() == 1 {
        // One answerer (most requests): no wrapping between the call and its platform.
        let mut one = Vec::with_capacity(1);
        for f in futures {
            one.push(f.await);
        }
        return one;
    }
    let mut running: Vec<std::pin::Pin<Box<F>>> = futures.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = running.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut waiting = false;
        for (f, out) in running.iter_mut().zip(outputs.iter_mut()) {
            if out.is_none() {
                match f.as_mut().poll(cx) {
                    Poll::Ready(v) => *out = Some(v),
                    Poll::Pending => waiting = true,
                }
            }
        }
        if waiting {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
    .await;
    outputs.into_iter().flatten().collect()
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

    async fn settle_confirmed(
        &self,
        req: &Request,
        idx: usize,
        settlement: Settlement,
        actor: Actor,
        policy: &Policy,
        typed: Option<&str>,
    ) -> Result<Settled, AskError> {
        Hub::settle_confirmed(self, req, idx, settlement, actor, policy, typed).await
    }

    async fn end(&self, req: &Request, status: Status, error: AskError) -> bool {
        self.end_by(req, status, error, Source::Daemon).await
    }

    async fn cancel_as(&self, req: &Request, reason: &str, source: Source, actor: String) -> bool {
        let err = AskError::aborted(format!("the request was cancelled: {reason}"));
        let audit = AuditEntry {
            source,
            actor: Some(actor),
            action: AuditAction::Cancelled,
            detail: Some(err.to_string()),
            ..AuditEntry::about(req)
        };
        self.end_with(req, Status::Cancelled, err, None, audit)
            .await
    }

    async fn audit(&self, entry: AuditEntry) {
        Hub::audit(self, entry).await
    }

    async fn revoke_grant(
        &self,
        id: &str,
        actor: &Actor,
        operator: bool,
    ) -> Result<crate::domain::grant::Grant, AskError> {
        Hub::revoke_grant(self, id, actor, operator).await
    }

    async fn settle_reached_quorums(&self, req: &Request) {
        Hub::settle_reached_quorums(self, req).await
    }

    async fn sweep_reached_quorums(&self) {
        Hub::sweep_reached_quorums(self).await
    }

    fn is_being_delivered(&self, request_id: &str) -> bool {
        if self.inner.storing.contains(request_id) {
            return true;
        }
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

/// Tells the clients of a request that expires when it does (`expires_in_secs`, from now).
fn add_expiry(accepted: &mut Accepted, req: &Request) {
    if let Some(e) = &req.expiry {
        let left = ((e.at_ms - now_ms()).max(0) as u64).div_ceil(1000);
        accepted.expires_in_secs = Some(left);
        accepted.on_expire = Some(e.on_expire.describe());
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
    .retryable()
}

fn foreign_error(request_id: &str) -> AskError {
    AskError::new(
        ErrorCode::Forbidden,
        format!(
            "request_id {:?} is not available to this user; request ids belong to the local \
             user who asked them (use another request_id)",
            Escaped(request_id)
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    mod copies;
    mod votes;

    #[test]
    fn the_accepted_details_of_several_copies_merge_the_owners_first() {
        let discord = Accepted {
            route: Some("ops".into()),
            channel_id: Some("100".into()),
            message_links: Some(vec!["https://discord/1".into()]),
            posting: Some("Discord is unavailable".into()),
            ..Accepted::default()
        };
        let slack = Accepted {
            route: Some("ops-slack".into()),
            message_links: Some(vec!["https://slack/1".into()]),
            posting: Some("Slack is slow".into()),
            ..Accepted::default()
        };
        let terminal = Accepted {
            hint: Some("askrelay answer r".into()),
            ..Accepted::default()
        };
        let merged = discord.merge(slack).merge(terminal);
        assert_eq!(merged.route.as_deref(), Some("ops"));
        assert_eq!(merged.channel_id.as_deref(), Some("100"));
        assert_eq!(
            merged.message_links,
            Some(vec!["https://discord/1".into(), "https://slack/1".into()])
        );
        assert_eq!(
            merged.posting.as_deref(),
            Some("Discord is unavailable; Slack is slow")
        );
        assert_eq!(merged.hint.as_deref(), Some("askrelay answer r"));
        assert_eq!(
            Accepted::default().merge(Accepted::default()),
            Accepted::default()
        );
    }

    #[test]
    fn an_accepted_detail_keeps_its_fields() {
        let accepted = Accepted {
            route: Some("ops".into()),
            message_links: Some(vec!["https://x/1".into()]),
            expires_in_secs: Some(60),
            ..Accepted::default()
        };
        let detail = Detail::new(&accepted);
        assert_eq!(detail.get(), accepted);
        assert_eq!(
            serde_json::to_string(&detail.get()).unwrap(),
            r#"{"route":"ops","message_links":["https://x/1"],"expires_in_secs":60}"#
        );
        assert_eq!(Detail::new(&Accepted::default()), Detail::default());
        assert!(Detail::default().get().is_empty());
    }
}
