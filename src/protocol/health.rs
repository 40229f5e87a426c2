//! The reply to `health` (and the body of the HTTP `/healthz`): the daemon's parts, each up or
//! down, and what is overdue; and [`Hub::health`], which reads them from the hub, for the socket,
//! `/healthz` and the metrics alike.

use crate::domain::cluster::Role;
use crate::domain::Hub;
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
    /// The platform connections together (the Discord gateway, Slack's Socket Mode): connected
    /// only when every one is.
    #[serde(default)]
    pub gateway: GatewayHealth,
    /// Each platform connection by its answerer's name (`discord`, `slack`).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub connections: std::collections::BTreeMap<String, GatewayHealth>,
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

/// A platform connection (the Discord gateway, Slack's Socket Mode), as `health` sees it.
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

impl OutboxBacklog {
    /// The overdue outbox work, as the protocol reports it (`None`: the store did not say).
    pub async fn of(hub: &Hub) -> Option<OutboxBacklog> {
        match hub.outbox_overdue().await {
            Ok((overdue, oldest)) => Some(OutboxBacklog {
                overdue,
                oldest_secs: oldest.as_secs(),
            }),
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the outbox backlog");
                None
            }
        }
    }
}

/// How long `health` waits for the store (its write, and the outbox's backlog, side by side):
/// `health` and `/healthz` answer within a second whatever the database does, and a store that
/// has not answered by then is reported as failing.
pub const HEALTH_DEADLINE: std::time::Duration = std::time::Duration::from_millis(800);

impl Hub {
    /// What `health` and the HTTP `/healthz` say: healthy when the store takes a write and every
    /// platform connection (the Discord gateway) is up, or none is configured, or (a cluster's
    /// follower) another node holds it. In a cluster, also degraded when no node leads, when the
    /// leader's last renewal is older than `cluster.failover_secs`, or when outbox work is overdue
    /// (nobody is posting). Never waits longer than [`HEALTH_DEADLINE`] for the store; what it
    /// says of the lead comes from the last beat, not from asking the database.
    pub async fn health(&self) -> Health {
        let deadline = HEALTH_DEADLINE;
        let (store, outbox) = tokio::join!(
            tokio::time::timeout(deadline, self.store_writable()),
            tokio::time::timeout(deadline, OutboxBacklog::of(self)),
        );
        let store = match store {
            Ok(Ok(())) => StoreHealth::Ok,
            Ok(Err(e)) => StoreHealth::Failing(e),
            Err(_) => StoreHealth::Failing(format!(
                "the store did not take a write within {} ms",
                deadline.as_millis()
            )),
        };
        let outbox = outbox.ok().flatten().unwrap_or_default();
        let connections = self.connections();
        let role = self.role();
        let gateway = if connections.is_empty() {
            GatewayHealth::NotConfigured
        } else if !role.leads() {
            // The leader holds the session; a follower has none by design.
            GatewayHealth::HeldByLeader
        } else if connections.iter().all(|(_, c)| *c.borrow()) {
            GatewayHealth::Connected
        } else {
            GatewayHealth::Disconnected
        };
        let each = connections
            .iter()
            .map(|(name, c)| {
                let state = if !role.leads() {
                    GatewayHealth::HeldByLeader
                } else if *c.borrow() {
                    GatewayHealth::Connected
                } else {
                    GatewayHealth::Disconnected
                };
                ((*name).to_owned(), state)
            })
            .collect();
        let mut failing = Vec::new();
        if !store.is_ok() {
            failing.push(HealthPart::Store);
        }
        if gateway == GatewayHealth::Disconnected {
            failing.push(HealthPart::Gateway);
        }
        let cluster = self.node().map(|node| {
            let lead = self.lead_status();
            let age = lead.leader_age();
            let leader = match &role {
                Role::Follower { leader } => leader.clone(),
                _ => Some(node.to_owned()),
            };
            let stale = match (&leader, age) {
                (Some(_), Some(age)) => age > lead.failover,
                _ => true,
            };
            if stale {
                failing.push(HealthPart::Lead);
            }
            if outbox.overdue > 0 {
                failing.push(HealthPart::Outbox);
            }
            ClusterHealth {
                node: node.to_owned(),
                role: role.as_str().to_owned(),
                leader,
                epoch: lead.epoch,
                leader_heartbeat_ms: age.map(|a| a.as_millis() as u64),
            }
        });
        Health {
            version: env!("CARGO_PKG_VERSION").to_owned(),
            status: if failing.is_empty() {
                HealthStatus::Ok
            } else {
                HealthStatus::Degraded
            },
            failing,
            gateway,
            connections: each,
            pending: self.pending_count(),
            answerers: self
                .answerer_names()
                .into_iter()
                .map(str::to_owned)
                .collect(),
            store,
            outbox,
            cluster,
        }
    }
}
