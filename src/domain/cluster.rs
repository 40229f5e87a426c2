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
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// What this daemon does in its database's cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// It holds its database alone (SQLite): it does everything.
    Solo,
    /// It holds the lead of a shared database, in term `epoch` (one more at every change of
    /// leader): a new epoch is a new term, whose Discord work starts afresh.
    Leader { epoch: i64 },
    /// Another node leads (`leader`, when known); this one stores and serves, and posts nothing.
    Follower { leader: Option<String> },
}

impl Role {
    /// Whether this daemon does the platforms' work (a gateway, posts, edits, timers).
    pub fn leads(&self) -> bool {
        matches!(self, Role::Solo | Role::Leader { .. })
    }

    pub fn as_str(&self) -> &'static str {
        match self {
            Role::Solo => "solo",
            Role::Leader { .. } => "leader",
            Role::Follower { .. } => "follower",
        }
    }
}

/// How the lead's lease is timed (from `cluster.failover_secs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseTiming {
    /// How long a renewal holds the lead, on the database's clock: `failover_secs`.
    pub ttl: Duration,
    /// How often every node beats (renews, or tries to take an expired lease): a quarter of
    /// `ttl`.
    pub beat: Duration,
    /// The longest one database call on the lead's path may take (connecting included): half
    /// a beat, so that a check never outlasts the next one.
    pub call: Duration,
}

impl LeaseTiming {
    pub fn new(failover: Duration) -> LeaseTiming {
        let beat = failover / 4;
        LeaseTiming {
            ttl: failover,
            beat,
            call: beat / 2,
        }
    }

    /// When a leader whose renewal was sent at `sent` must have stopped its Discord work: half
    /// a beat before the lease can expire (it expires no sooner than `sent + ttl` on the
    /// database's clock, which read the time after `sent`), leaving the time to stop.
    pub fn stop_at(&self, sent: Instant) -> Instant {
        sent + self.ttl - self.call
    }
}

/// The lead as one beat found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Beat {
    /// This node's term, when the beat renewed or took the lead.
    pub term: Option<Term>,
    /// The node that holds an unexpired lease (this one, when `term` is set).
    pub leader: Option<String>,
    /// The lease's epoch as stored (0: nobody ever led).
    pub epoch: i64,
    /// How long ago the lease was last renewed, on the database's clock.
    pub renewed_ms_ago: Option<i64>,
    /// The database's clock minus this node's, as measured by the beat (±half its round trip).
    pub clock_offset_ms: i64,
    /// Set when this beat began a term of this node in place of an earlier one (of another
    /// node, or of this one that lapsed): a failover, and how long it left the cluster without
    /// a leader.
    pub takeover: Option<Takeover>,
}

/// A change of leader, as the node that took the lead saw it in the lease it replaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Takeover {
    /// The node that held the lead before (this one, when its own lease lapsed).
    pub from: String,
    /// Whether that node gave the lead back (a clean shutdown) rather than stop renewing it
    /// (a death, a freeze, a partition, a stall).
    pub released: bool,
    /// From the old leader's last sign of leading to this take, on the database's clock: its
    /// release, or else its last renewal. An upper bound of the time nobody led, short of the
    /// new leader's gateway connect.
    pub gap: Duration,
}

/// A term of this node's lead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Term {
    pub epoch: i64,
    /// When this node must have stopped its Discord work unless a later beat renews the lease.
    pub stop_at: Instant,
}

/// What the cluster driver last learned of the lead, for `health` and `/metrics` (which must
/// answer at once, whatever the database does, so they read this instead of asking it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeadStatus {
    /// The lease's epoch (0: not known yet).
    pub epoch: i64,
    /// The node holding an unexpired lease, when the last beat saw one.
    pub leader: Option<String>,
    /// How long before the last good beat the leader last renewed, in ms.
    pub renewed_ms_ago: Option<i64>,
    /// When this node's last beat succeeded.
    pub beat_ok_at: Option<Instant>,
    /// `cluster.failover_secs`: a leader silent for longer is as good as none.
    pub failover: Duration,
}

impl LeadStatus {
    /// How long ago the leader last renewed its lease, now, as far as this node can tell: its
    /// last good beat's reading plus the time since that beat. `None` before a good beat or
    /// when that beat saw no leader.
    pub fn leader_age(&self) -> Option<Duration> {
        let ok = self.beat_ok_at?;
        let then = Duration::from_millis(u64::try_from(self.renewed_ms_ago?).unwrap_or(0));
        Some(then + ok.elapsed())
    }
}

/// A write made for an answerer's platform work by a node that no longer leads (its lease ended
/// or another node took it): refused by the store, and the node steps down.
#[derive(Debug, thiserror::Error)]
#[error("this node no longer leads the cluster (its lease ended or another node took it); the write was refused")]
pub struct Fenced;

/// One node as registered in the database.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NodeInfo {
    pub node: String,
    pub host: String,
    pub pid: u32,
    pub version: String,
    /// When it last beat (ms since the epoch, the database's clock).
    pub heartbeat_at_ms: i64,
    /// Whether it holds an unexpired lease.
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

    /// One beat, on the database's clock and within `timing.call`: records this node's
    /// heartbeat, and renews its lease, or takes the lease if it has expired. A leader whose
    /// beat fails keeps its term only until [`Term::stop_at`].
    async fn beat(&self, timing: &LeaseTiming) -> Result<Beat>;

    /// Whether this node's term is still running by its own clock (no database call): checked
    /// right before each platform call, so that a leader that was frozen between its fenced
    /// claim and the call does not make it when it wakes.
    fn holds_term(&self) -> bool;

    /// Forgets this node's term: from now on its fenced writes are refused without asking the
    /// database (the driver calls it when the term's `stop_at` passes).
    fn step_down(&self);

    /// Resolves when a fenced write (one the leader makes for Discord) was refused because the
    /// lease names another node or epoch, or has expired: this node must step down at once.
    async fn deposed(&self);

    /// Ends this node's lease at once (shutdown), so that another node takes the lead at its
    /// next beat instead of waiting for the lease to expire.
    async fn release_lead(&self);

    /// The registered nodes, the leader first.
    async fn nodes(&self) -> Result<Vec<NodeInfo>>;

    /// Pending requests of every node, oldest first, with their outbox rows (a new leader's
    /// takeover).
    async fn all_pending_everywhere(&self) -> Result<Vec<(Request, Vec<Post>)>>;

    /// Pending requests of other nodes whose last heartbeat is older than `grace`, on the
    /// database's clock (a node whose own clock is wrong must not reap live requests).
    async fn orphans(&self, grace: Duration) -> Result<Vec<Request>>;

    /// Those of `keys` that have ended, as stored now.
    async fn ended_among(&self, keys: &[i64]) -> Result<Vec<Request>>;

    /// When a question was last posted anywhere in the cluster (ms, the database's clock), if
    /// ever: how long the outbox has gone without progress.
    async fn last_post_ms(&self) -> Result<Option<i64>>;

    /// Notices from other nodes, until the receiver is dropped. The stream reconnects on its
    /// own after a cut, and then sends [`Notice::Resumed`].
    async fn notices(&self) -> Result<mpsc::Receiver<Notice>>;
}

/// Names the node only.
impl std::fmt::Debug for dyn Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("node", &self.node())
            .finish()
    }
}

/// A shared handle to a cluster.
pub type ClusterHandle = Arc<dyn Cluster>;
