//! Cluster mode's driver: keeps this node's heartbeat, takes (or confirms, or loses) the lead,
//! and turns other nodes' notices into the hub's work.
//!
//! The lead decides who talks to Discord: the hub's role changes, and the Discord answerer
//! starts or stops its platform work with it. Notices are the fast path; the poll (every
//! `cluster.poll_interval_ms`) catches what a lost notice would have said, so a dropped
//! connection delays an answer but never loses it.

use crate::config::ClusterConfig;
use crate::domain::cluster::{ClusterHandle, Notice, Role};
use crate::domain::Hub;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Starts the driver; it gives the lead back at shutdown.
pub fn spawn(
    cluster: ClusterHandle,
    hub: Hub,
    config: &ClusterConfig,
    tasks: &TaskTracker,
    shutdown: CancellationToken,
) {
    // A quarter of the failover bound: a dead leader's lock is free at once, and a follower
    // takes it at its next beat.
    let beat = Duration::from_millis(config.failover_secs * 1000 / 4);
    let poll = Duration::from_millis(config.poll_interval_ms);
    tasks.spawn(run(cluster, hub, beat, poll, shutdown));
}

async fn run(
    cluster: ClusterHandle,
    hub: Hub,
    beat: Duration,
    poll: Duration,
    shutdown: CancellationToken,
) {
    let mut notices = subscribe(&cluster).await;
    let mut beats = tokio::time::interval(beat);
    beats.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut polls = tokio::time::interval(poll);
    polls.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = beats.tick() => {
                step(&cluster, &hub).await;
                if notices.is_none() {
                    notices = subscribe(&cluster).await;
                }
            }
            // Lost outbox notices are the repair loop's (it runs every
            // discord.repair_interval_secs anyway); lost answers are this poll's.
            _ = polls.tick() => hub.catch_up().await,
            notice = next(&mut notices) => match notice {
                Some(Notice::Outbox) => hub.wake_answerers(),
                Some(Notice::Ended { key, node }) => {
                    if node == cluster.node() {
                        hub.ended_elsewhere(key).await;
                    }
                }
                Some(Notice::Resumed) => {
                    tracing::info!("cluster notices are back; catching up on what they missed");
                    hub.catch_up().await;
                    hub.wake_answerers();
                }
                None => {
                    tracing::warn!("the cluster notice stream ended; polling until it is back");
                    notices = None;
                }
            },
        }
    }
    if hub.role() == Role::Leader {
        tracing::info!("giving the cluster's lead back");
    }
    cluster.release_lead().await;
}

/// One beat: take or confirm the lead, record the heartbeat, and act on the role.
async fn step(cluster: &ClusterHandle, hub: &Hub) {
    let leads = match cluster.hold_lead().await {
        Ok(l) => l,
        Err(e) => {
            // Not confirmed is not held: better no leader for a moment than two.
            tracing::warn!(error = %format!("{e:#}"), "cannot confirm the cluster's lead; acting as a follower until the database answers");
            false
        }
    };
    if let Err(e) = cluster.heartbeat(leads).await {
        tracing::warn!(error = %format!("{e:#}"), "cannot record this node's heartbeat");
    }
    if leads {
        hub.set_role(Role::Leader);
        hub.reap_orphans().await;
    } else {
        let leader = match cluster.nodes().await {
            Ok(nodes) => nodes.into_iter().find(|n| n.leader).map(|n| n.node),
            Err(_) => None,
        };
        hub.set_role(Role::Follower { leader });
    }
}

async fn subscribe(cluster: &ClusterHandle) -> Option<mpsc::Receiver<Notice>> {
    match cluster.notices().await {
        Ok(rx) => Some(rx),
        Err(e) => {
            tracing::warn!(error = %format!("{e:#}"), "cannot listen for cluster notices; polling every poll_interval_ms until it can");
            None
        }
    }
}

/// The next notice, or never while there is no stream.
async fn next(notices: &mut Option<mpsc::Receiver<Notice>>) -> Option<Notice> {
    match notices {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}
