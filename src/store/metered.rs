//! A store that counts its failures: it wraps a backend and reports every call that returns an
//! error to the daemon's [`Recorder`] (`askrelay_store_errors_total`), whoever made the call
//! (the hub, an answerer's outbox, the health check). It changes nothing else.

use crate::domain::audit::{AuditPage, ChainStart};
use crate::domain::cluster::Fenced;
use crate::domain::error::AskError;
use crate::domain::grant::Grant;
use crate::domain::metrics::Recorder;
use crate::domain::request::{
    AuditEntry, AuditRow, Created, DuePost, EditState, NewRequest, PlannedPost, Post, PostKey,
    Request, SettleOutcome, Status, Timer,
};
use crate::domain::store::{Holder, NewAnswer, Page, Pruned, Store, Visibility};
use anyhow::Result;
use async_trait::async_trait;
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

#[async_trait]
impl Store for Metered {
    async fn acquire_lease(&self, me: &Holder) -> Result<()> {
        self.count(self.inner.acquire_lease(me).await)
    }

    fn cluster(&self) -> Option<crate::domain::cluster::ClusterHandle> {
        self.inner.cluster()
    }

    async fn create(
        &self,
        new: &NewRequest,
        posts: &[PlannedPost],
        audit: &AuditEntry,
    ) -> Result<Created> {
        self.count(self.inner.create(new, posts, audit).await)
    }

    async fn by_id(&self, request_id: &str) -> Result<Option<Request>> {
        self.count(self.inner.by_id(request_id).await)
    }

    async fn by_key(&self, key: i64) -> Result<Option<Request>> {
        self.count(self.inner.by_key(key).await)
    }

    async fn voted_pending(&self) -> Result<Vec<i64>> {
        self.count(self.inner.voted_pending().await)
    }

    async fn by_token(&self, token: &str) -> Result<Option<(Request, Vec<Post>)>> {
        self.count(self.inner.by_token(token).await)
    }

    async fn all_pending(&self) -> Result<Vec<(Request, Vec<Post>)>> {
        self.count(self.inner.all_pending().await)
    }

    async fn pending(&self, who: Visibility, page: Page) -> Result<Vec<Request>> {
        self.count(self.inner.pending(who, page).await)
    }

    async fn history(&self, who: Visibility, page: Page) -> Result<Vec<Request>> {
        self.count(self.inner.history(who, page).await)
    }

    async fn settle(&self, answer: NewAnswer<'_>) -> Result<SettleOutcome> {
        let r = self.inner.settle(answer).await;
        self.count(r)
    }

    async fn end(
        &self,
        key: i64,
        status: Status,
        error: &AskError,
        audit: &AuditEntry,
    ) -> Result<bool> {
        self.count(self.inner.end(key, status, error, audit).await)
    }

    async fn audit(&self, entry: &AuditEntry) -> Result<()> {
        self.count(self.inner.audit(entry).await)
    }

    async fn audit_rows(&self, request_key: Option<i64>) -> Result<Vec<AuditRow>> {
        self.count(self.inner.audit_rows(request_key).await)
    }

    async fn audit_start(&self, since_ms: Option<i64>) -> Result<ChainStart> {
        self.count(self.inner.audit_start(since_ms).await)
    }

    async fn audit_chain(&self, after: i64, limit: u32) -> Result<AuditPage> {
        self.count(self.inner.audit_chain(after, limit).await)
    }

    async fn posts(&self, keys: &[i64]) -> Result<HashMap<i64, Vec<Post>>> {
        self.count(self.inner.posts(keys).await)
    }

    async fn plan_posts(&self, key: i64, answerer: &str, posts: &[PlannedPost]) -> Result<()> {
        self.count(self.inner.plan_posts(key, answerer, posts).await)
    }

    async fn record_post(
        &self,
        post: &PostKey<'_>,
        message: &str,
        channel: Option<&str>,
        guild: Option<&str>,
    ) -> Result<()> {
        let r = self.inner.record_post(post, message, channel, guild).await;
        self.count(r)
    }

    async fn record_post_failure(&self, post: &PostKey<'_>, error: &str) -> Result<()> {
        self.count(self.inner.record_post_failure(post, error).await)
    }

    async fn claim_post(&self, post: &PostKey<'_>) -> Result<()> {
        self.count(self.inner.claim_post(post).await)
    }

    async fn record_edit(&self, post: &PostKey<'_>, edit: EditState) -> Result<()> {
        self.count(self.inner.record_edit(post, edit).await)
    }

    async fn timers(&self, answerer: &str) -> Result<Vec<Timer>> {
        self.count(self.inner.timers(answerer).await)
    }

    async fn schedule_due(&self, name: &str) -> Result<Option<i64>> {
        self.count(self.inner.schedule_due(name).await)
    }

    async fn advance_schedule(&self, name: &str, from: Option<i64>, to: i64) -> Result<bool> {
        self.count(self.inner.advance_schedule(name, from, to).await)
    }

    async fn advance_timer(
        &self,
        key: i64,
        answerer: &str,
        from: Option<u32>,
        to: &Timer,
        posts: &[PlannedPost],
    ) -> Result<bool> {
        let r = self
            .inner
            .advance_timer(key, answerer, from, to, posts)
            .await;
        self.count(r)
    }

    async fn outbox_due(&self, answerer: Option<&str>) -> Result<Vec<DuePost>> {
        self.count(self.inner.outbox_due(answerer).await)
    }

    async fn with_posts_by_key(&self, key: i64) -> Result<Option<(Request, Vec<Post>)>> {
        self.count(self.inner.with_posts_by_key(key).await)
    }

    async fn vote(
        &self,
        key: i64,
        idx: usize,
        expected: Option<&str>,
        votes_json: &str,
        audit: &AuditEntry,
    ) -> Result<bool> {
        self.count(self.inner.vote(key, idx, expected, votes_json, audit).await)
    }

    async fn save_draft(&self, key: i64, idx: usize, user: &str, selected: &[usize]) -> Result<()> {
        self.count(self.inner.save_draft(key, idx, user, selected).await)
    }

    async fn draft(&self, key: i64, idx: usize, user: &str) -> Result<Vec<usize>> {
        self.count(self.inner.draft(key, idx, user).await)
    }

    async fn live_grants(&self, route: &str, uid: u32, now_ms: i64) -> Result<Vec<Grant>> {
        self.count(self.inner.live_grants(route, uid, now_ms).await)
    }

    async fn grants(&self, now_ms: i64, limit: u32) -> Result<Vec<Grant>> {
        self.count(self.inner.grants(now_ms, limit).await)
    }

    async fn grant(&self, id: &str) -> Result<Option<Grant>> {
        self.count(self.inner.grant(id).await)
    }

    async fn revoke_grant(
        &self,
        id: &str,
        by: &str,
        at_ms: i64,
        audit: &AuditEntry,
    ) -> Result<bool> {
        self.count(self.inner.revoke_grant(id, by, at_ms, audit).await)
    }

    async fn writable(&self) -> Result<()> {
        self.count(self.inner.writable().await)
    }

    async fn prune(
        &self,
        ended_before_ms: Option<i64>,
        audit_before_ms: Option<i64>,
    ) -> Result<Pruned> {
        self.count(self.inner.prune(ended_before_ms, audit_before_ms).await)
    }

    async fn close(&self) {
        self.inner.close().await
    }
}
