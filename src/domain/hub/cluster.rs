//! Cluster mode: the role, the work notices bring (another node's ends, the outbox), the
//! catch-up of what ended elsewhere, and reaping the requests of nodes that stopped.

use super::Hub;
use crate::domain::cluster::LeadStatus;
use crate::domain::error::AskError;
use crate::domain::request::{Post, Request, Source, Status};
use crate::domain::text::Escaped;
use anyhow::Result;

impl Hub {
    /// What the cluster driver last learned of the lead.
    pub fn lead_status(&self) -> LeadStatus {
        self.inner.lead.lock().unwrap().clone()
    }

    /// Records what a beat learned (the cluster driver).
    pub fn set_lead_status(&self, status: LeadStatus) {
        *self.inner.lead.lock().unwrap() = status;
    }

    /// Whether `req` was asked through this daemon (always, without a cluster): a uid on
    /// another node is somebody else.
    pub(super) fn owned_here(&self, req: &Request) -> bool {
        req.node.as_deref() == self.node()
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

    pub(super) fn publish_stored_end(&self, req: Request) {
        if req.status == Status::Pending {
            return;
        }
        if let Some(outcome) = req.outcome {
            if self.is_pending(&req.request_id) {
                tracing::info!(request_id = %Escaped(&req.request_id), status = req.status.as_str(), "request ended on another node");
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
        let orphans = match cluster.orphans(grace).await {
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
            tracing::info!(request_id = %Escaped(&req.request_id), %node, "cancelling a request of a node that stopped");
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
}
