//! Cluster mode: many daemons (nodes) sharing one database, one of which (the leader) talks to
//! the platforms.
//!
//! A backend that can be shared (PostgreSQL) gives the hub a [`Cluster`]; one that a single
//! daemon holds (SQLite) gives none, and that daemon is [`Role::Solo`]. The rules:
//! - every node serves its local socket and stores its own requests (they carry its node id);
//! - exactly one node holds the lead, and only the leader runs an answerer's platform work
//!   (the Discord gateway, posting, editing, reminders, the digest);
//! - what a node changes that the leader must act on (a new request, an answer, an end) wakes
//!   the leader, and an answer to another node's request wakes that node, through
//!   [`Cluster::notices`]; a periodic poll covers a lost notice.

use super::request::{Post, Request};
use anyhow::Result;
use async_trait::async_trait;
use serde::Serialize;
use std::sync::Arc;
use tokio::sync::mpsc;

/// What this daemon does in its database's cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// It holds its database alone (SQLite): it does everything.
    Solo,
    /// It holds the lead of a shared database.
    Leader,
    /// Another node leads (`leader`, when known); this one stores and serves, and posts nothing.
    Follower { leader: Option<String> },
}

impl Role {
    /// Whether this daemon does the platforms' work (a gateway, posts, edits, timers).
    pub fn leads(&self) -> bool {
        matches!(self, Role::Solo | Role::Leader)
    }

    pub fn as_str(&self) -> &'static str {
        match self {
            Role::Solo => "solo",
            Role::Leader => "leader",
            Role::Follower { .. } => "follower",
        }
    }
}

/// One node as registered in the database.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NodeInfo {
    pub node: String,
    pub host: String,
    pub pid: u32,
    pub version: String,
    /// When it last beat (ms since the epoch, its own clock).
    pub heartbeat_at_ms: i64,
    /// Whether it holds the lead, as it last recorded.
    pub leader: bool,
}

/// What another node tells this one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// Outbox work may be due (a request was stored, answered or ended): for the leader.
    Outbox,
    /// The request with this key was answered or ended: for the node that owns it.
    Ended { key: i64, node: String },
    /// The notice stream was cut and is back; notices may have been lost meanwhile.
    Resumed,
}

#[async_trait]
pub trait Cluster: Send + Sync + 'static {
    /// This node's id (`cluster.node_id`).
    fn node(&self) -> &str;

    /// Records that this node is alive (and whether it leads).
    async fn heartbeat(&self, leading: bool) -> Result<()>;

    /// Takes the lead if nobody holds it; true while this node holds it. The lead lives on a
    /// connection of its own, so it ends with this process or that connection, whichever
    /// ends first, and a caller that held it learns of a loss here (false).
    async fn hold_lead(&self) -> Result<bool>;

    /// Gives the lead back (shutdown).
    async fn release_lead(&self);

    /// The registered nodes, the leader first.
    async fn nodes(&self) -> Result<Vec<NodeInfo>>;

    /// Pending requests of every node, oldest first, with their outbox rows (a new leader's
    /// takeover).
    async fn all_pending_everywhere(&self) -> Result<Vec<(Request, Vec<Post>)>>;

    /// Pending requests of other nodes whose last heartbeat is older than `before_ms`.
    async fn orphans(&self, before_ms: i64) -> Result<Vec<Request>>;

    /// Those of `keys` that have ended, as stored now.
    async fn ended_among(&self, keys: &[i64]) -> Result<Vec<Request>>;

    /// Notices from other nodes, until the receiver is dropped. The stream reconnects on its
    /// own after a cut, and then sends [`Notice::Resumed`].
    async fn notices(&self) -> Result<mpsc::Receiver<Notice>>;
}

/// A shared handle to a cluster.
pub type ClusterHandle = Arc<dyn Cluster>;
