//! A store that counts its failures: it wraps a backend and reports every call that returns an
//! error to the daemon's [`Recorder`] (`askrelay_store_errors_total`), whoever made the call
//! (the hub, an answerer's outbox, the health check). It changes nothing else.

use crate::domain::audit::{AuditPage, ChainStart};
use crate::domain::cluster::Fenced;
use crate::domain::error::AskError;
use crate::domain::grant::Grant;
use crate::domain::metrics::Recorder;
use crate::domain::once_grant::OnceGrant;
use crate::domain::request::{
    AuditEntry, AuditRow, Created, Draft, DuePost, EditState, NewPost, NewRequest, PlannedPost,
    Post, PostKey, Request, SessionPlace, SettleOutcome, Status, Timer, WithdrawReason,
};
use crate::domain::store::{Holder, NewAnswer, OnceAudit, Page, Pruned, Store, Visibility};
use anyhow::Result;
use std::collections::HashMap;
use std::sync::Arc;

pub struct Metered {
    inner: Arc<dyn Store>,
    recorder: Arc<dyn Recorder>,
}

impl Metered {
    pub fn new(inner: Arc<dyn Store>, recorder: Arc<dyn Recorder>) -> Metered {
        Metered { inner, recorder }
    }

    fn count<T>(&self, r: Result<T>) -> Result<T> {
        // A fenced write is this node's lead ending, not the store failing.
        if r.as_ref().is_err_and(|e| !e.is::<Fenced>()) {
            self.recorder.store_failed();
        }
        r
    }
}

/// The `Store` impl of [`Metered`]: each method listed calls the same method of the inner
/// store and counts its error. `cluster` and `close`, which cannot fail, are passed through.
macro_rules! counted {
    ($(async fn $name:ident(&self $(, $arg:ident: $ty:ty)*) -> $ret:ty;)*) => {
        #[async_trait::async_trait]
        impl Store for Metered {
            $(
                async fn $name(&self $(, $arg: $ty)*) -> $ret {
                    let r = self.inner.$name($($arg),*).await;
                    self.count(r)
                }
            )*

            fn cluster(&self) -> Option<crate::domain::cluster::ClusterHandle> {
                self.inner.cluster()
            }

            async fn close(&self) {
                self.inner.close().await
            }
        }
    };
}

counted! {
    async fn acquire_lease(&self, me: &Holder) -> Result<()>;
    async fn create(&self, new: &NewRequest, posts: &[NewPost], audit: &AuditEntry)
        -> Result<Created>;
    async fn by_id(&self, request_id: &str) -> Result<Option<Request>>;
    async fn by_key(&self, key: i64) -> Result<Option<Request>>;
    async fn voted_pending(&self) -> Result<Vec<i64>>;
    async fn by_token(&self, token: &str) -> Result<Option<(Request, Vec<Post>)>>;
    async fn all_pending(&self) -> Result<Vec<(Request, Vec<Post>)>>;
    async fn pending(&self, who: Visibility, page: Page) -> Result<Vec<Request>>;
    async fn history(&self, who: Visibility, page: Page) -> Result<Vec<Request>>;
    async fn settle(&self, answer: NewAnswer<'_>) -> Result<SettleOutcome>;
    async fn end(
        &self,
        key: i64,
        status: Status,
        error: &AskError,
        withdrawn: Option<WithdrawReason>,
        audit: &AuditEntry
    ) -> Result<bool>;
    async fn audit(&self, entry: &AuditEntry) -> Result<()>;
    async fn audit_rows(&self, request_key: Option<i64>) -> Result<Vec<AuditRow>>;
    async fn audit_start(&self, since_ms: Option<i64>) -> Result<ChainStart>;
    async fn audit_chain(&self, after: i64, limit: u32) -> Result<AuditPage>;
    async fn posts(&self, keys: &[i64]) -> Result<HashMap<i64, Vec<Post>>>;
    async fn plan_posts(&self, key: i64, answerer: &str, posts: &[PlannedPost]) -> Result<()>;
    async fn record_post(
        &self,
        post: &PostKey<'_>,
        message: &str,
        channel: Option<&str>,
        guild: Option<&str>
    ) -> Result<()>;
    async fn record_post_failure(&self, post: &PostKey<'_>, error: &str) -> Result<()>;
    async fn place_post(&self, post: &PostKey<'_>, channel: &str) -> Result<()>;
    async fn session_thread(&self, at: &SessionPlace<'_>) -> Result<Option<String>>;
    async fn keep_session_thread(&self, at: &SessionPlace<'_>, thread: &str) -> Result<()>;
    async fn claim_post(&self, post: &PostKey<'_>) -> Result<()>;
    async fn record_edit(&self, post: &PostKey<'_>, edit: EditState) -> Result<()>;
    async fn timers(&self, answerer: &str) -> Result<Vec<Timer>>;
    async fn schedule_due(&self, name: &str) -> Result<Option<i64>>;
    async fn advance_schedule(&self, name: &str, from: Option<i64>, to: i64) -> Result<bool>;
    async fn advance_timer(
        &self,
        key: i64,
        answerer: &str,
        from: Option<u32>,
        to: &Timer,
        posts: &[PlannedPost]
    ) -> Result<bool>;
    async fn outbox_due(&self, answerer: Option<&str>) -> Result<Vec<DuePost>>;
    async fn with_posts_by_key(&self, key: i64) -> Result<Option<(Request, Vec<Post>)>>;
    async fn vote(
        &self,
        key: i64,
        idx: usize,
        expected: Option<&str>,
        votes_json: &str,
        audit: &AuditEntry
    ) -> Result<bool>;
    async fn save_draft(&self, key: i64, idx: usize, user: &str, selected: &[usize]) -> Result<()>;
    async fn draft(&self, key: i64, idx: usize, user: &str) -> Result<Option<Draft>>;
    async fn live_grants(&self, route: &str, uid: u32, now_ms: i64) -> Result<Vec<Grant>>;
    async fn grants(&self, now_ms: i64, limit: u32) -> Result<Vec<Grant>>;
    async fn grant(&self, id: &str) -> Result<Option<Grant>>;
    async fn revoke_grant(&self, id: &str, by: &str, at_ms: i64, audit: &AuditEntry)
        -> Result<bool>;
    async fn mint_once_grant(&self, g: &OnceGrant, audit: &AuditEntry) -> Result<bool>;
    async fn use_once_grant(
        &self,
        uid: u32,
        session: &str,
        call: &str,
        now_ms: i64,
        audit: OnceAudit<'_>
    ) -> Result<Option<OnceGrant>>;
    async fn once_grant_of(&self, request_key: i64) -> Result<Option<OnceGrant>>;
    async fn writable(&self) -> Result<()>;
    async fn prune(&self, ended_before_ms: Option<i64>, audit_before_ms: Option<i64>)
        -> Result<Pruned>;
}
