//! The answerer interface: how the core hands requests to platforms, and what a platform may do
//! in return.
//!
//! Every answerer is asked about a new request ([`Answerer::claim`]); each that takes it shows
//! its own copy (a route's `answerers`: Slack, Discord and the terminal at once), and the
//! outbox rows of all of them are stored with the request in one transaction. The first that
//! takes it, in the daemon's order of answerers, owns it (`requests.answerer`); an answerer
//! that only stands in ([`Claim::Fallback`], the terminal for a request no route names it on)
//! shows it when nobody else takes it. The first allowed answer on any copy settles a question.
//!
//! Each call gets an [`AnswererContext`]: the only way an answerer acts on the core (settle,
//! refuse, read and write its outbox). Nothing flows back up through the answerer: when
//! another surface settles or ends a request it shows, the hub tells it
//! ([`Answerer::settled`], [`Answerer::ended`]) so it can update what people see.

use super::answer::Settlement;
use super::cluster::Role;
use super::error::AskError;
use super::expiry::ExpiryRule;
use super::model::{Question, Scope};
use super::quorum::Policy;
use super::request::Source;
use super::request::{
    Actor, AuditEntry, Draft, DuePost, EditState, PlannedPost, Post, PostKey, Request, Settled,
    Status, Timer,
};
use super::store::{Page, Store, Visibility};
use anyhow::Result;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::future::Future;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// What [`Answerer::claim`] is shown of a new request.
#[derive(Debug, Clone)]
pub struct Proposal<'a> {
    pub token: &'a str,
    pub questions: &'a [Question],
    pub scope: &'a Scope,
    /// The request's context (what the agent attached), if any.
    pub context: Option<&'a crate::domain::model::Context>,
}

/// An answerer's reply to a new request.
#[derive(Debug, Clone, PartialEq)]
pub enum Claim {
    /// It takes the request: its route (if it has routes), the outbox rows to store with it,
    /// and the route's own expiry rule, which overrides the daemon's `[expiry]`.
    Take {
        route: Option<String>,
        posts: Vec<PlannedPost>,
        expiry: Option<ExpiryRule>,
    },
    /// It takes the request only if no other answerer does (what [`Claim::Take`] holds): the
    /// terminal for a request whose route does not name it, as the last step of the older
    /// waterfall.
    Fallback {
        route: Option<String>,
        posts: Vec<PlannedPost>,
        expiry: Option<ExpiryRule>,
    },
    /// It does not, and why; the reasons end up in `NO_ANSWERER` when nobody takes it.
    Decline(String),
}

/// What an answerer reports on taking a request, and what a waiting client reads in its
/// `accepted` event (the fields are flattened into that line; an absent one is left out).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Accepted {
    /// Discord: the route the request went to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route: Option<String>,
    /// Discord: the route's channel, as a snowflake string.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel_id: Option<String>,
    /// Discord: a link to each question's message posted so far (present, maybe empty, for
    /// every Discord request).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_links: Option<Vec<String>>,
    /// Why the questions are not posted yet, and when they will be.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub posting: Option<String>,
    /// The terminal: how to answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// Whole seconds until the request expires, when it has an expiry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_in_secs: Option<u64>,
    /// What its expiry does, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_expire: Option<String>,
}

impl Accepted {
    /// Whether it reports nothing at all.
    pub fn is_empty(&self) -> bool {
        *self == Accepted::default()
    }

    /// The first message link, if any question is posted.
    pub fn first_link(&self) -> Option<&str> {
        self.message_links.as_deref()?.first().map(String::as_str)
    }

    /// What a request shown by several answerers reports, one `accepted` line for all: `self`
    /// is the owner's (or what was merged so far), `other` the next copy's, in the daemon's
    /// order. The owner's route, channel and hint stand, and another's fills them only where
    /// the owner has none; message links are every copy's, in that order; `posting` says
    /// each copy's delay, joined with "; ". The expiry is the request's, added by the hub.
    pub fn merge(mut self, other: Accepted) -> Accepted {
        self.route = self.route.or(other.route);
        self.channel_id = self.channel_id.or(other.channel_id);
        self.message_links = match (self.message_links, other.message_links) {
            (Some(mut mine), Some(theirs)) => {
                mine.extend(theirs);
                Some(mine)
            }
            (mine, theirs) => mine.or(theirs),
        };
        self.posting = match (self.posting, other.posting) {
            (Some(mine), Some(theirs)) => Some(format!("{mine}; {theirs}")),
            (mine, theirs) => mine.or(theirs),
        };
        self.hint = self.hint.or(other.hint);
        self.expires_in_secs = self.expires_in_secs.or(other.expires_in_secs);
        self.on_expire = self.on_expire.or(other.on_expire);
        self
    }
}

/// What an answerer made of a request while the store committed it ([`Answerer::prepare`]),
/// handed back to its [`Answerer::deliver`]; opaque to the hub.
pub struct Prepared(Box<dyn std::any::Any + Send>);

impl Prepared {
    pub fn new<T: std::any::Any + Send>(work: T) -> Prepared {
        Prepared(Box::new(work))
    }

    /// The work, if it is a `T`.
    pub fn take<T: std::any::Any>(self) -> Option<T> {
        self.0.downcast().ok().map(|b| *b)
    }
}

/// What became of showing a stored request.
#[derive(Debug, Clone, PartialEq)]
pub enum Delivery {
    /// Shown (or being shown), with what the client's `accepted` event says.
    Shown(Accepted),
    /// It cannot be shown after all: the request ends with this error.
    Failed(AskError),
}

#[async_trait]
pub trait Answerer: Send + Sync + 'static {
    /// The stable name that appears in `accepted.answerer` and in the store.
    fn name(&self) -> &'static str;

    /// Whether it takes a new request, and where it would show it. Changes nothing.
    async fn claim(&self, proposal: &Proposal<'_>) -> Claim;

    /// Starts its background work (a gateway connection, repairs) with its context. Called
    /// once, before any other call.
    async fn start(&self, _ctx: AnswererContext) -> Result<()> {
        Ok(())
    }

    /// Work on a request it took that needs nothing but the request as it is about to be
    /// stored (rendering its messages). The hub runs it while the store commits the request,
    /// and hands the result to [`Answerer::deliver`], which must not rely on getting it. Must
    /// not touch the store or the platform; it runs even if the commit then fails.
    fn prepare(&self, _req: &Request) -> Option<Prepared> {
        None
    }

    /// Shows a request it took, just stored, with what [`Answerer::prepare`] made of it. Must
    /// not block on people: post and return.
    async fn deliver(
        &self,
        ctx: &AnswererContext,
        req: &Request,
        prepared: Option<Prepared>,
    ) -> Delivery;

    /// At start-up, a pending request it shows, with its own outbox rows (only this
    /// answerer's). Returns what clients that re-attach are told in `accepted` (merged with
    /// the other copies', [`Accepted::merge`]).
    async fn resume(&self, _ctx: &AnswererContext, _req: &Request, _posts: &[Post]) -> Accepted {
        Accepted::default()
    }

    /// Another surface settled (or voted on) question `idx` of a request it shows (`req`
    /// includes it).
    async fn settled(&self, _ctx: &AnswererContext, _req: &Request, _idx: usize) {}

    /// A request it shows ended without an answer (`req.outcome` says how).
    async fn ended(&self, _ctx: &AnswererContext, _req: &Request) {}

    /// Whether a person at a terminal (the socket `answer` operation) may settle this request,
    /// which it shows. The terminal may answer a request when any answerer that shows it says
    /// so (the terminal itself, or a route's `terminal_answers`).
    fn terminal_may_answer(&self, _req: &Request) -> bool {
        false
    }

    /// The approval policy of a request it shows (its route's quorum, decisive labels and
    /// requester rule); first-wins by default. The hub asks the owner.
    fn policy(&self, _req: &Request) -> Policy {
        Policy::default()
    }

    /// Whether its platform connection is up now, for answerers that keep one (a gateway);
    /// `None` for those that do not. Health checks and readiness wait on it.
    fn connection(&self) -> Option<tokio::sync::watch::Receiver<bool>> {
        None
    }

    /// The routes it may take a request through ([`Claim::Take`]'s `route`), known before any
    /// request is: the pending gauge of `/metrics` shows each at 0 from start-up. `None` for
    /// an answerer that has no routes (its requests have none).
    fn routes(&self) -> Option<Vec<String>> {
        None
    }

    /// Outbox work may be due that another cluster node stored: look now rather than at the
    /// next periodic pass.
    fn wake(&self) {}
}

/// What the core does for answerers; the hub implements it. Answerers see it only through
/// [`AnswererContext`], so the core depends on the answerer interface and not the other way.
#[async_trait]
pub trait Core: Send + Sync + 'static {
    /// First-wins settlement of question `idx` of `req`, as loaded by the caller.
    async fn settle(
        &self,
        req: &Request,
        idx: usize,
        settlement: Settlement,
        actor: Actor,
    ) -> Result<Settled, AskError>;

    /// [`Core::settle`] under `policy`, the approval policy the answerer holds for `req`, with
    /// the word typed to confirm a label that needs it.
    async fn settle_confirmed(
        &self,
        req: &Request,
        idx: usize,
        settlement: Settlement,
        actor: Actor,
        policy: &Policy,
        typed: Option<&str>,
    ) -> Result<Settled, AskError>;

    /// Ends a pending request with an error; false if it had already ended.
    async fn end(&self, req: &Request, status: Status, error: AskError) -> bool;

    /// Cancels a pending request on behalf of a person the platform vouches for (`actor`, as
    /// the audit log names them); its clients get `ABORTED` with `reason`. False if it had
    /// already ended.
    async fn cancel_as(&self, req: &Request, reason: &str, source: Source, actor: String) -> bool;

    /// Appends an audit row (a failure is logged).
    async fn audit(&self, entry: AuditEntry);

    /// Settles the questions of `req` whose votes reached their quorum before a crash cut the
    /// settlement off (a new cluster leader's takeover, like a restart, repairs them).
    async fn settle_reached_quorums(&self, req: &Request);

    /// Settles every pending question, of any cluster node, whose stored votes reached their
    /// quorum (the leader's repair pass: a vote committed after its caller gave up).
    async fn sweep_reached_quorums(&self);

    /// Ends a grant early, for its approver or an operator (see `Hub::revoke_grant`).
    async fn revoke_grant(
        &self,
        id: &str,
        actor: &Actor,
        operator: bool,
    ) -> Result<crate::domain::grant::Grant, AskError>;

    /// Whether the request is still pending.
    async fn is_pending(&self, req: &Request) -> bool;

    /// Whether the request was stored here and its answerer is still being handed it
    /// ([`Answerer::deliver`] has not returned): that call does its first posting.
    fn is_being_delivered(&self, request_id: &str) -> bool;

    fn store(&self) -> &Arc<dyn Store>;

    fn shutdown(&self) -> &CancellationToken;

    fn tasks(&self) -> &TaskTracker;

    /// This daemon's role in its cluster, as it changes.
    fn roles(&self) -> tokio::sync::watch::Receiver<Role>;

    /// Pending requests of every cluster node, with their outbox rows.
    async fn pending_everywhere(&self) -> Result<Vec<(Request, Vec<Post>)>>;
}

/// What an answerer may do: settle through first-wins, record refusals, and keep its own
/// outbox. One per answerer; cheap to clone.
#[derive(Clone)]
pub struct AnswererContext {
    core: Arc<dyn Core>,
    name: &'static str,
    /// Cancelled when the work this context was handed for stops: the daemon's shutdown, or a
    /// narrower token (a leader's term, see [`AnswererContext::for_term`]).
    shutdown: CancellationToken,
}

impl AnswererContext {
    pub fn new(core: Arc<dyn Core>, name: &'static str) -> AnswererContext {
        let shutdown = core.shutdown().clone();
        AnswererContext {
            core,
            name,
            shutdown,
        }
    }

    /// A context whose [`AnswererContext::shutdown`] is cancelled when `term` ends as well as
    /// at shutdown: what a leader's platform work runs under, so that stepping down stops it.
    pub fn for_term(&self, term: CancellationToken) -> AnswererContext {
        AnswererContext {
            core: self.core.clone(),
            name: self.name,
            shutdown: term,
        }
    }

    /// This daemon's role in its cluster (`Solo` without one), as it changes.
    pub fn roles(&self) -> tokio::sync::watch::Receiver<Role> {
        self.core.roles()
    }

    /// Pending requests of every cluster node (of this daemon without a cluster), oldest first,
    /// with their outbox rows: what a new leader takes over.
    pub async fn pending_everywhere(&self) -> Result<Vec<(Request, Vec<Post>)>> {
        self.core.pending_everywhere().await
    }

    fn store(&self) -> &Arc<dyn Store> {
        self.core.store()
    }

    /// Settles question `idx` of `req` (first wins). A storage failure is `Err` with the cause;
    /// nothing was stored then.
    pub async fn settle(
        &self,
        req: &Request,
        idx: usize,
        settlement: Settlement,
        actor: Actor,
    ) -> Result<Settled, AskError> {
        self.core.settle(req, idx, settlement, actor).await
    }

    /// [`AnswererContext::settle`] under `policy`, the approval policy this answerer holds for
    /// `req` (its route's), with the word the person typed to confirm (a route's
    /// `confirm_labels`).
    pub async fn settle_confirmed(
        &self,
        req: &Request,
        idx: usize,
        settlement: Settlement,
        actor: Actor,
        policy: &Policy,
        typed: Option<&str>,
    ) -> Result<Settled, AskError> {
        self.core
            .settle_confirmed(req, idx, settlement, actor, policy, typed)
            .await
    }

    /// Records a refused interaction in the audit log.
    pub async fn refuse(&self, entry: AuditEntry) {
        self.core.audit(entry).await;
    }

    /// Records an accepted interaction that changes no answer (a draft, opening a form).
    pub async fn record(&self, entry: AuditEntry) -> Result<()> {
        self.store().audit(&entry).await
    }

    /// A request by its id.
    pub async fn by_id(&self, request_id: &str) -> Result<Option<Request>> {
        self.store().by_id(request_id).await
    }

    /// A request by the token its controls carry, with its outbox rows.
    pub async fn by_token(&self, token: &str) -> Result<Option<(Request, Vec<Post>)>> {
        self.store().by_token(token).await
    }

    pub async fn outbox(&self, req: &Request) -> Result<Vec<Post>> {
        let mut all = self.store().posts(&[req.key]).await?;
        let mine = all.remove(&req.key).unwrap_or_default();
        Ok(mine
            .into_iter()
            .filter(|p| p.answerer == self.name)
            .collect())
    }

    pub async fn plan_posts(&self, req: &Request, posts: &[PlannedPost]) -> Result<()> {
        self.store().plan_posts(req.key, self.name, posts).await
    }

    /// Whether this daemon may make a platform call now: always alone; in a cluster, while its
    /// lead's term runs by its own clock. Checked right before a post or an edit, after the
    /// fenced [`AnswererContext::claim_post`] (a frozen leader wakes between the two).
    pub fn holds_term(&self) -> bool {
        self.store().cluster().is_none_or(|c| c.holds_term())
    }

    /// Claims `post` before the platform call that posts or edits it: in a cluster, refused
    /// (with [`crate::domain::cluster::Fenced`]) once this node no longer leads, and then the
    /// call must not be made.
    pub async fn claim_post(&self, key: i64, post: &Post) -> Result<()> {
        self.store().claim_post(&self.key_of(key, post)).await
    }

    /// Records the message the platform confirmed for `post` (in `channel` when the post only
    /// learned it then, e.g. a DM it opened).
    pub async fn record_post(
        &self,
        req: &Request,
        post: &Post,
        message: &str,
        channel: Option<&str>,
        guild: Option<&str>,
    ) -> Result<()> {
        self.store()
            .record_post(&self.key_of(req.key, post), message, channel, guild)
            .await
    }

    /// Moves `post`, not posted yet, to `channel` (its session's thread).
    pub async fn place_post(&self, key: i64, post: &Post, channel: &str) -> Result<()> {
        self.store()
            .place_post(&self.key_of(key, post), channel)
            .await
    }

    /// The thread this answerer keeps for `agent`'s `session` in `channel`, if any.
    pub async fn session_thread(
        &self,
        channel: &str,
        agent: &str,
        session: &str,
    ) -> Result<Option<String>> {
        self.store()
            .session_thread(&self.place_of(channel, agent, session))
            .await
    }

    /// Keeps `thread` as the thread of `agent`'s `session` in `channel`.
    pub async fn keep_session_thread(
        &self,
        channel: &str,
        agent: &str,
        session: &str,
        thread: &str,
    ) -> Result<()> {
        self.store()
            .keep_session_thread(&self.place_of(channel, agent, session), thread)
            .await
    }

    fn place_of<'a>(
        &'a self,
        channel: &'a str,
        agent: &'a str,
        session: &'a str,
    ) -> crate::domain::request::SessionPlace<'a> {
        crate::domain::request::SessionPlace {
            answerer: self.name,
            channel,
            agent,
            session,
        }
    }

    pub async fn record_post_failure(&self, req: &Request, post: &Post, error: &str) -> Result<()> {
        self.store()
            .record_post_failure(&self.key_of(req.key, post), error)
            .await
    }

    pub async fn record_edit(&self, key: i64, post: &Post, edit: EditState) -> Result<()> {
        self.store()
            .record_edit(&self.key_of(key, post), edit)
            .await
    }

    /// This answerer's outbox row `post` of the request `key`.
    fn key_of<'a>(&'a self, key: i64, post: &'a Post) -> PostKey<'a> {
        PostKey {
            key,
            idx: post.idx,
            answerer: self.name,
            slot: &post.slot,
        }
    }

    /// This answerer's timers that are still due, on pending requests (start-up).
    pub async fn timers(&self) -> Result<Vec<Timer>> {
        self.store().timers(self.name).await
    }

    /// Takes one step of a timer (see [`Store::advance_timer`]): false when another run took
    /// it, or the request ended.
    pub async fn advance_timer(
        &self,
        req: &Request,
        from: Option<u32>,
        to: &Timer,
        posts: &[PlannedPost],
    ) -> Result<bool> {
        self.store()
            .advance_timer(req.key, self.name, from, to, posts)
            .await
    }

    /// This answerer's outbox work that is due (questions to post, messages to edit).
    pub async fn outbox_due(&self) -> Result<Vec<DuePost>> {
        self.store().outbox_due(Some(self.name)).await
    }

    /// A request by key, with its outbox rows.
    pub async fn with_posts(&self, key: i64) -> Result<Option<(Request, Vec<Post>)>> {
        self.store().with_posts_by_key(key).await
    }

    pub async fn save_draft(
        &self,
        req: &Request,
        idx: usize,
        user: &str,
        selected: &[usize],
    ) -> Result<()> {
        self.store().save_draft(req.key, idx, user, selected).await
    }

    pub async fn draft(&self, req: &Request, idx: usize, user: &str) -> Result<Option<Draft>> {
        self.store().draft(req.key, idx, user).await
    }

    /// Whether the request is still pending (from memory).
    pub async fn is_pending(&self, req: &Request) -> bool {
        self.core.is_pending(req).await
    }

    /// Ends a request it cannot show after all (`NO_ANSWERER` with the cause).
    pub async fn fail(&self, req: &Request, error: AskError) -> bool {
        self.core.end(req, Status::Failed, error).await
    }

    /// Cancels a request for a person the platform vouches for (an operator's slash command).
    pub async fn cancel(&self, req: &Request, reason: &str, source: Source, actor: String) -> bool {
        self.core.cancel_as(req, reason, source, actor).await
    }

    /// Settles the questions whose votes reached their quorum before a crash.
    pub async fn settle_reached_quorums(&self, req: &Request) {
        self.core.settle_reached_quorums(req).await
    }

    /// Settles every pending question whose stored votes reached their quorum.
    pub async fn sweep_reached_quorums(&self) {
        self.core.sweep_reached_quorums().await
    }

    /// The live grants, the newest first.
    pub async fn live_grants(&self) -> Result<Vec<crate::domain::grant::Grant>> {
        self.store()
            .grants(
                crate::domain::clock::now_ms(),
                crate::domain::grant::GRANTS_LISTED,
            )
            .await
    }

    /// Ends a grant early, for its approver or an operator.
    pub async fn revoke_grant(
        &self,
        id: &str,
        actor: &Actor,
        operator: bool,
    ) -> Result<crate::domain::grant::Grant, AskError> {
        self.core.revoke_grant(id, actor, operator).await
    }

    /// When the schedule `name` is due next (see [`Store::schedule_due`]).
    pub async fn schedule_due(&self, name: &str) -> Result<Option<i64>> {
        self.store().schedule_due(name).await
    }

    /// Takes a turn of schedule `name` (see [`Store::advance_schedule`]).
    pub async fn advance_schedule(&self, name: &str, from: Option<i64>, to: i64) -> Result<bool> {
        self.store().advance_schedule(name, from, to).await
    }

    /// Pending requests of every owner, oldest first (at most `limit`), with their outbox rows:
    /// what a platform's own listing shows to the people it lets see them.
    pub async fn pending_all(&self, limit: u32) -> Result<Vec<(Request, Vec<Post>)>> {
        let reqs = self
            .store()
            .pending(Visibility::All, Page { limit, after: None })
            .await?;
        self.store().with_posts(reqs).await
    }

    /// Requests of every owner, newest first (at most `limit`), with their outbox rows.
    pub async fn history_all(&self, limit: u32) -> Result<Vec<(Request, Vec<Post>)>> {
        let reqs = self
            .store()
            .history(Visibility::All, Page { limit, after: None })
            .await?;
        self.store().with_posts(reqs).await
    }

    /// Whether [`Answerer::deliver`] is still at work on the request (it posts it itself).
    pub fn is_being_delivered(&self, request_id: &str) -> bool {
        self.core.is_being_delivered(request_id)
    }

    /// Cancelled when the daemon shuts down (or the term this context was made for ends).
    pub fn shutdown(&self) -> &CancellationToken {
        &self.shutdown
    }

    /// Runs `task` in the background; the daemon waits for it at shutdown.
    pub fn spawn<F>(&self, task: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.core.tasks().spawn(task);
    }
}
