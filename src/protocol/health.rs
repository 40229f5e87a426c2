//! The reply to `health` (and the body of the HTTP `/healthz`): the daemon's parts, each up or
//! down, and what is overdue.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The reply to `health` (also the body of the HTTP `/healthz`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Health {
    pub version: String,
    /// `ok`, or `degraded` when a part named in `failing` is down.
    #[serde(default)]
    pub status: HealthStatus,
    /// The parts that are down.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failing: Vec<HealthPart>,
    /// The Discord gateway.
    #[serde(default)]
    pub gateway: GatewayHealth,
    pub pending: usize,
    pub answerers: Vec<String>,
    /// `ok`, or why a write to the store fails.
    pub store: StoreHealth,
    pub outbox: OutboxBacklog,
    /// In cluster mode: this node, its role and who leads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterHealth>,
}

/// The daemon as a whole: healthy, or with a part down.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HealthStatus {
    #[default]
    Ok,
    Degraded,
}

impl HealthStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            HealthStatus::Ok => "ok",
            HealthStatus::Degraded => "degraded",
        }
    }
}

/// A part of the daemon that can be down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HealthPart {
    Store,
    Gateway,
    /// In a cluster: no node leads, or the leader's last renewal is older than
    /// `cluster.failover_secs`.
    Lead,
    /// In a cluster: outbox work is overdue (questions not posted or not edited in time).
    Outbox,
}

impl HealthPart {
    pub fn as_str(self) -> &'static str {
        match self {
            HealthPart::Store => "store",
            HealthPart::Gateway => "gateway",
            HealthPart::Lead => "lead",
            HealthPart::Outbox => "outbox",
        }
    }
}

/// The Discord gateway, as `health` sees it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum GatewayHealth {
    #[serde(rename = "connected")]
    Connected,
    #[serde(rename = "disconnected")]
    Disconnected,
    /// No platform connection is configured (no Discord token).
    #[default]
    #[serde(rename = "not configured")]
    NotConfigured,
    /// A cluster's follower: the leader holds the session, by design.
    #[serde(rename = "held by the leader")]
    HeldByLeader,
}

impl GatewayHealth {
    pub fn as_str(self) -> &'static str {
        match self {
            GatewayHealth::Connected => "connected",
            GatewayHealth::Disconnected => "disconnected",
            GatewayHealth::NotConfigured => "not configured",
            GatewayHealth::HeldByLeader => "held by the leader",
        }
    }
}

/// The store: it takes a write, or why not. On the wire `"ok"`, or the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreHealth {
    Ok,
    Failing(String),
}

impl StoreHealth {
    pub fn is_ok(&self) -> bool {
        matches!(self, StoreHealth::Ok)
    }
}

impl fmt::Display for StoreHealth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreHealth::Ok => f.write_str("ok"),
            StoreHealth::Failing(why) => f.write_str(why),
        }
    }
}

impl Serialize for StoreHealth {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for StoreHealth {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Ok(if s == "ok" {
            StoreHealth::Ok
        } else {
            StoreHealth::Failing(s)
        })
    }
}

/// A node's place in its cluster, as `health` reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterHealth {
    pub node: String,
    /// "leader" or "follower".
    pub role: String,
    /// The leader's node id, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leader: Option<String>,
    /// The lease's epoch: one more at every change of leader.
    #[serde(default)]
    pub epoch: i64,
    /// How long ago the leader last renewed its lease, in ms, as far as this node can tell
    /// (unknown when no node leads, or before this node's first beat).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leader_heartbeat_ms: Option<u64>,
}

/// Outbox work due for longer than it should take: questions not posted yet and messages not
/// edited to their final state (Discord down or failing).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutboxBacklog {
    pub overdue: usize,
    /// How long the oldest overdue item has been due, in seconds.
    pub oldest_secs: u64,
}
