//! The store interface: what the core needs persisted, and nothing about how.
//!
//! The hub is handed one `Arc<dyn Store>`; `crate::store` provides the backends. Every method is
//! one transaction, and every state change is conditional on the state it changes from, so that
//! two answerers (or two daemons sharing a database) racing on a question can never both win.
//! A method that returns `Err` has changed nothing: a backend rolls back, and never lets a
//! connection that failed mid-transaction serve anything else.

use super::answer::Settlement;
use super::audit::{AuditPage, ChainStart};
use super::cluster::ClusterHandle;
use super::error::AskError;
use super::grant::Grant;
use super::once_grant::OnceGrant;
use super::request::{
    Actor, AuditEntry, AuditRow, Created, Draft, DuePost, EditState, NewPost, NewRequest,
    PlannedPost, Post, PostKey, Request, SessionPlace, SettleOutcome, Status, Timer,
    WithdrawReason,
};
use anyhow::Result;
use async_trait::async_trait;
use std::collections::HashMap;

/// Which requests a listing may show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Visibility {
    /// Every request (an operator), of every node.
    All,
    /// Only those asked by this uid on this node (a uid means someone else on another host).
    Owner(u32),
}

/// One page of a listing: at most `limit` requests, after (for pending: newer than; for
/// history: older than) the request with key `after`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    pub limit: u32,
    pub after: Option<i64>,
}

/// Who holds a database: the daemon that took its lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    pub pid: u32,
    pub host: String,
    /// Its node id in a cluster (`cluster.node_id`); a backend one daemon holds ignores it.
    pub node: String,
}

/// What [`Store::prune`] deleted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pruned {
    pub requests: u64,
    pub audit: u64,
}

/// Builds the audit row of a one-use grant's use from the grant used, inside
/// [`Store::use_once_grant`]'s transaction (the store picks the grant).
pub type OnceAudit<'a> = &'a (dyn Fn(&OnceGrant) -> AuditEntry + Send + Sync);

/// Builds the result (docs/contract.md, "Result JSON") from the settlements of every question, in order. Passed to
/// [`Store::settle`] so that the result is written in the same transaction as the last answer,
/// while its JSON stays the core's business.
pub type Finish<'a> = &'a (dyn Fn(&[Settlement]) -> String + Send + Sync);

/// An answer to store with [`Store::settle`]: question `idx` of request `key`, what was chosen,
/// who chose it and when, and its audit row.
pub struct NewAnswer<'a> {
    pub key: i64,
    pub idx: usize,
    pub settlement: &'a Settlement,
    pub actor: &'a Actor,
    pub at_ms: i64,
    /// Written with the answer, `accepted` set to whether it won.
    pub audit: &'a AuditEntry,
    /// The request's result when this answer completes it and the caller could build it
    /// (every other question was answered when it read the request).
    pub result_if_last: Option<String>,
    /// Builds the result from the stored settlements otherwise.
    pub finish: Finish<'a>,
    /// The grant the answer creates (its terms asked for one), stored if it wins.
    pub grant: Option<&'a Grant>,
}

#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// Takes the database for this daemon, or fails naming the daemon that has it. Held until
    /// [`Store::close`] or the process ends. A shared backend registers the node instead, and
    /// refuses a second daemon with the same node id.
    async fn acquire_lease(&self, me: &Holder) -> Result<()>;

    /// The cluster this store is shared in, for a backend that can be shared; `None` when one
    /// daemon holds it alone. Requests stored through it are owned by this node: `all_pending`
    /// and `Visibility::Owner` see this node's requests only.
    fn cluster(&self) -> Option<ClusterHandle> {
        None
    }

    /// Stores a new request with its questions, the outbox rows of every answerer that shows
    /// it (each row under its answerer's name) and its audit row, in one transaction; or
    /// returns the request already stored under the id (then nothing is written).
    async fn create(
        &self,
        new: &NewRequest,
        posts: &[NewPost],
        audit: &AuditEntry,
    ) -> Result<Created>;

    async fn by_id(&self, request_id: &str) -> Result<Option<Request>>;

    async fn by_key(&self, key: i64) -> Result<Option<Request>>;

    /// A request by its token, with its outbox rows: what a click needs, in one read.
    async fn by_token(&self, token: &str) -> Result<Option<(Request, Vec<Post>)>>;

    /// Every pending request, oldest first, with its outbox rows (start-up).
    async fn all_pending(&self) -> Result<Vec<(Request, Vec<Post>)>>;

    /// The keys of pending requests, of every cluster node, with votes on an open question,
    /// oldest first: what the sweep of reached quorums reads (a vote stored after its caller
    /// gave up on the database is settled by it).
    async fn voted_pending(&self) -> Result<Vec<i64>>;

    /// Pending requests, oldest first.
    async fn pending(&self, who: Visibility, page: Page) -> Result<Vec<Request>>;

    /// Requests of any status, newest first.
    async fn history(&self, who: Visibility, page: Page) -> Result<Vec<Request>>;

    /// Settles question `idx` if it is open and its request pending: the one conditional write
    /// that decides first-wins. The audit row is written with it (with `accepted` set to
    /// whether it won). When the answer completes the request, the request is marked answered
    /// with its result, atomically with the answer: `result_if_last` when the caller could
    /// build it, else `finish` builds it from the stored settlements.
    async fn settle(&self, answer: NewAnswer<'_>) -> Result<SettleOutcome>;

    /// Replaces the votes of question `idx` (a JSON array, see `migrations/0012_votes.sql`) if
    /// they are still `expected` (`None`: no vote yet), the question open and its request
    /// pending, with `audit`, in one transaction: a compare-and-swap, so that two votes at
    /// once never lose one. False if anything changed meanwhile (nothing is written).
    async fn vote(
        &self,
        key: i64,
        idx: usize,
        expected: Option<&str>,
        votes_json: &str,
        audit: &AuditEntry,
    ) -> Result<bool>;

    /// Ends a pending request with an error outcome (and, for a withdrawal, why), and audits
    /// it. False if it had already ended (the audit row then says it was not accepted).
    async fn end(
        &self,
        key: i64,
        status: Status,
        error: &AskError,
        withdrawn: Option<WithdrawReason>,
        audit: &AuditEntry,
    ) -> Result<bool>;

    async fn audit(&self, entry: &AuditEntry) -> Result<()>;

    /// Audit rows, oldest first; all of them, or those of one request.
    async fn audit_rows(&self, request_key: Option<i64>) -> Result<Vec<AuditRow>>;

    /// Where an export of the audit chain starts: its newest checkpoint (the chain's start, or
    /// the last row retention deleted), or with `since_ms` the row before the first row written
    /// at or after it (the head when there is none).
    async fn audit_start(&self, since_ms: Option<i64>) -> Result<ChainStart>;

    /// The audit rows of the chain after row `after`, oldest first, at most `limit`, with
    /// their hashes, and the chain's head as it stood when they were read (one snapshot).
    async fn audit_chain(&self, after: i64, limit: u32) -> Result<AuditPage>;

    /// The outbox rows of the given requests.
    async fn posts(&self, keys: &[i64]) -> Result<HashMap<i64, Vec<Post>>>;

    /// `reqs`, each with its outbox rows (one read for all of them).
    async fn with_posts(&self, reqs: Vec<Request>) -> Result<Vec<(Request, Vec<Post>)>> {
        let keys: Vec<i64> = reqs.iter().map(|r| r.key).collect();
        let mut posts = self.posts(&keys).await?;
        Ok(reqs
            .into_iter()
            .map(|r| {
                let p = posts.remove(&r.key).unwrap_or_default();
                (r, p)
            })
            .collect())
    }

    /// Adds outbox rows for questions an earlier run never planned (a crash in between).
    async fn plan_posts(&self, key: i64, answerer: &str, posts: &[PlannedPost]) -> Result<()>;

    /// Claims an outbox row before the platform call that posts or edits it. In a cluster the
    /// claim is fenced: it fails, and the caller must not make the call, when this node no
    /// longer leads (see `store/postgres/cluster.rs`). A store a single daemon holds has
    /// nothing to check.
    async fn claim_post(&self, post: &PostKey<'_>) -> Result<()>;

    /// Records a message the platform confirmed; `channel` when it was only known then (a DM
    /// opened for it).
    async fn record_post(
        &self,
        post: &PostKey<'_>,
        message: &str,
        channel: Option<&str>,
        guild: Option<&str>,
    ) -> Result<()>;

    async fn record_post_failure(&self, post: &PostKey<'_>, error: &str) -> Result<()>;

    /// Moves a post not posted yet to `channel` (its session's thread), before the platform
    /// call: a click that comes before the post is recorded is checked against it.
    async fn place_post(&self, post: &PostKey<'_>, channel: &str) -> Result<()>;

    /// The thread kept for an agent session, if any.
    async fn session_thread(&self, at: &SessionPlace<'_>) -> Result<Option<String>>;

    /// Keeps `thread` as the session's thread (in place of one that is gone).
    async fn keep_session_thread(&self, at: &SessionPlace<'_>, thread: &str) -> Result<()>;

    async fn record_edit(&self, post: &PostKey<'_>, edit: EditState) -> Result<()>;

    /// The timers of one answerer on pending requests that are still due at some point.
    async fn timers(&self, answerer: &str) -> Result<Vec<Timer>>;

    /// Moves a timer of a pending request from having fired `from` times (`None`: it has no
    /// row yet) to `to`, and adds the outbox rows that step posts, in one transaction. False,
    /// with nothing written, when the timer is not where the caller read it (another run took
    /// the step) or the request has ended.
    async fn advance_timer(
        &self,
        key: i64,
        answerer: &str,
        from: Option<u32>,
        to: &Timer,
        posts: &[PlannedPost],
    ) -> Result<bool>;

    /// Outbox work that is due, of one answerer or of all: questions of pending requests not
    /// posted yet, and posted messages whose confirmed edit is behind their question's state.
    async fn outbox_due(&self, answerer: Option<&str>) -> Result<Vec<DuePost>>;

    /// A request by key, with its outbox rows.
    async fn with_posts_by_key(&self, key: i64) -> Result<Option<(Request, Vec<Post>)>>;

    async fn save_draft(&self, key: i64, idx: usize, user: &str, selected: &[usize]) -> Result<()>;

    /// A person's draft for a question, as last saved; `None` when none was.
    async fn draft(&self, key: i64, idx: usize, user: &str) -> Result<Option<Draft>>;

    /// When the schedule `name` (the digest) is due next, if it was ever started.
    async fn schedule_due(&self, name: &str) -> Result<Option<i64>>;

    /// Moves schedule `name` from due at `from` (`None`: not started) to `to`. False, with
    /// nothing written, when it is not where the caller read it (another run took the turn).
    async fn advance_schedule(&self, name: &str, from: Option<i64>, to: i64) -> Result<bool>;

    /// The grants on `route` for `uid` that are live at `now_ms` (docs/approvals.md,
    /// "Grants"); the caller matches the rest.
    async fn live_grants(&self, route: &str, uid: u32, now_ms: i64) -> Result<Vec<Grant>>;

    /// The grants live at `now_ms`, the newest first, at most `limit`.
    async fn grants(&self, now_ms: i64, limit: u32) -> Result<Vec<Grant>>;

    /// One grant, live or not.
    async fn grant(&self, id: &str) -> Result<Option<Grant>>;

    /// Ends grant `id` at `at_ms` (revoked by `by`) if it is live then, with `audit`
    /// (`accepted` set to whether it was), in one transaction.
    async fn revoke_grant(
        &self,
        id: &str,
        by: &str,
        at_ms: i64,
        audit: &AuditEntry,
    ) -> Result<bool>;

    /// Stores the one-use grant `g` unless one was minted from its request already, with
    /// `audit` (accepted as the insert decided) in the same transaction. Whether it was stored.
    async fn mint_once_grant(&self, g: &OnceGrant, audit: &AuditEntry) -> Result<bool>;

    /// Uses the oldest live one-use grant of `uid` for `call` of `session`: marks it used at
    /// `now_ms`, with the audit row `audit` builds from it, in one transaction. The grant as it
    /// was used, or `None` when there is none (then nothing is written).
    async fn use_once_grant(
        &self,
        uid: u32,
        session: &str,
        call: &str,
        now_ms: i64,
        audit: OnceAudit<'_>,
    ) -> Result<Option<OnceGrant>>;

    /// The one-use grant minted from request `request_key`, if any.
    async fn once_grant_of(&self, request_key: i64) -> Result<Option<OnceGrant>>;

    /// Whether a write goes through now (the health check).
    async fn writable(&self) -> Result<()>;

    /// Retention: deletes the requests that ended before `ended_before_ms` with everything
    /// stored about them but their audit rows (questions, answers, drafts, outbox rows,
    /// timers), and the audit rows written before `audit_before_ms`. Pending requests are never
    /// touched. Each part is one transaction.
    async fn prune(
        &self,
        ended_before_ms: Option<i64>,
        audit_before_ms: Option<i64>,
    ) -> Result<Pruned>;

    async fn close(&self);
}
