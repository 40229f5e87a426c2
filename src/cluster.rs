//! Cluster mode's driver: beats (recording this node's heartbeat and renewing, taking or
//! losing the lead's lease), and turns other nodes' notices into the hub's work.
//!
//! The lead decides who talks to Discord: the hub's role changes, and the Discord answerer
//! starts or stops its platform work with it. Two tasks, so that a stalled database can never
//! hold up the one that ends a lead:
//! - the **lease** task beats every quarter of `cluster.failover_secs`, each beat bounded by
//!   its own deadline, and steps this node down when its term's `stop_at` passes without a
//!   renewal, or at once when the store refused a fenced write;
//! - the **work** task hears notices and polls (every `cluster.poll_interval_ms`) for what a
//!   lost notice would have said, and, while this node leads, ends the requests of nodes that
//!   stopped. A dropped connection delays an answer but never loses it.

use crate::config::ClusterConfig;
use crate::domain::clock::{clock_offset_ms, set_clock_offset_ms};
use crate::domain::cluster::{Beat, ClusterHandle, LeadStatus, LeaseTiming, Notice, Role};
use crate::domain::metrics::ClusterRecorder;
use crate::domain::Hub;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// A beat whose round trip took longer than this does not move the clock offset: its reading
/// of the database's time is off by up to half of it.
const CLOCK_READING_RTT: Duration = Duration::from_millis(200);

/// What the lease task works with: the cluster, the hub it tells, and where failovers are
/// counted.
#[derive(Clone)]
struct Driver {
    cluster: ClusterHandle,
    hub: Hub,
    recorder: Arc<dyn ClusterRecorder>,
}

/// Starts the driver after a first beat, so that the daemon serves knowing its role and the
/// database's clock; it gives the lead back at shutdown.
pub async fn spawn(
    cluster: ClusterHandle,
    hub: Hub,
    recorder: Arc<dyn ClusterRecorder>,
    config: &ClusterConfig,
    tasks: &TaskTracker,
    shutdown: CancellationToken,
) {
    let timing = LeaseTiming::new(Duration::from_secs(config.failover_secs));
    let poll = Duration::from_millis(config.poll_interval_ms);
    let driver = Driver {
        cluster: cluster.clone(),
        hub: hub.clone(),
        recorder,
    };
    // Beats that failed in a row (said once when they start and once when they end).
    let mut failed = 0u32;
    let stop_at = step(&driver, &timing, None, &mut failed).await;
    tasks.spawn(lease(driver, timing, (stop_at, failed), shutdown.clone()));
    tasks.spawn(work(cluster, hub, timing, poll, shutdown));
}

/// The lease task (see the module comment), from the first beat's `stop_at` and failures.
async fn lease(
    driver: Driver,
    timing: LeaseTiming,
    first: (Option<Instant>, u32),
    shutdown: CancellationToken,
) {
    let (cluster, hub) = (&driver.cluster, &driver.hub);
    let mut beats = tokio::time::interval_at(Instant::now() + timing.beat, timing.beat);
    beats.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // When this node must have stopped its Discord work, while it leads.
    let (mut stop_at, mut failed) = first;
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = beats.tick() => stop_at = step(&driver, &timing, stop_at, &mut failed).await,
            _ = until(stop_at) => {
                tracing::warn!(
                    failover_secs = timing.ttl.as_secs(),
                    "this node could not renew its lead in time; stopping its Discord work before the lease expires"
                );
                stop_at = None;
                cluster.step_down();
                hub.set_role(Role::Follower { leader: None });
            }
            _ = cluster.deposed() => {
                stop_at = None;
                hub.set_role(Role::Follower { leader: None });
                stop_at = step(&driver, &timing, stop_at, &mut failed).await;
            }
        }
    }
    // The lead is given back when the store closes, after the daemon's in-flight work (an edit
    // and its fenced record) has finished: ending the lease here would refuse that work's
    // writes. No beat runs meanwhile, so the term still ends at its `stop_at` at the latest.
    if hub.role().leads() {
        tracing::info!("giving the cluster's lead back once in-flight work is done");
    }
}

/// One beat, and what it means for the role; returns the term's new `stop_at`.
async fn step(
    driver: &Driver,
    timing: &LeaseTiming,
    stop_at: Option<Instant>,
    failed: &mut u32,
) -> Option<Instant> {
    let (cluster, hub) = (&driver.cluster, &driver.hub);
    let sent = Instant::now();
    let beat = match cluster.beat(timing).await {
        Ok(b) => b,
        Err(e) => {
            // A leader keeps its term until `stop_at`: a later beat may still renew it.
            *failed += 1;
            tracing::warn!(error = %format!("{e:#}"), failed = *failed, "cannot beat; the lead is decided again at the next beat");
            return stop_at;
        }
    };
    if *failed > 0 {
        tracing::info!(
            failed = *failed,
            leads = beat.term.is_some(),
            "this node beats again"
        );
        *failed = 0;
    }
    read_clock(&beat, sent.elapsed());
    if let Some(t) = &beat.takeover {
        tracing::info!(
            from = %t.from,
            cause = if t.released { "released" } else { "expired" },
            gap_ms = t.gap.as_millis() as u64,
            "took over the cluster's lead"
        );
        driver.recorder.took_over(t);
    }
    hub.set_lead_status(LeadStatus {
        epoch: beat.epoch,
        leader: beat.leader.clone(),
        renewed_ms_ago: beat.renewed_ms_ago,
        beat_ok_at: Some(Instant::now()),
        failover: timing.ttl,
    });
    match beat.term {
        Some(term) => {
            hub.set_role(Role::Leader { epoch: term.epoch });
            Some(term.stop_at)
        }
        None => {
            hub.set_role(Role::Follower {
                leader: beat.leader,
            });
            None
        }
    }
}

/// Moves this process's clock offset to the database's, from a beat that came back quickly.
fn read_clock(beat: &Beat, round_trip: Duration) {
    if round_trip > CLOCK_READING_RTT {
        return;
    }
    let before = clock_offset_ms();
    if (beat.clock_offset_ms - before).abs() > 1000 {
        tracing::warn!(
            offset_ms = beat.clock_offset_ms,
            "this host's clock differs from the database's; cluster timing follows the database's"
        );
    }
    set_clock_offset_ms(beat.clock_offset_ms);
}

/// The work task (see the module comment).
async fn work(
    cluster: ClusterHandle,
    hub: Hub,
    timing: LeaseTiming,
    poll: Duration,
    shutdown: CancellationToken,
) {
    let mut notices = subscribe(&cluster, &timing).await;
    let mut polls = tokio::time::interval(poll);
    polls.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            // Lost outbox notices are the repair loop's (it runs every
            // discord.repair_interval_secs anyway); lost answers are this poll's.
            _ = polls.tick() => {
                hub.catch_up().await;
                if matches!(hub.role(), Role::Leader { .. }) {
                    hub.reap_orphans().await;
                }
                if notices.is_none() {
                    notices = subscribe(&cluster, &timing).await;
                }
            }
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
}

/// Listens for notices, within a beat's call deadline (the next poll tries again).
async fn subscribe(
    cluster: &ClusterHandle,
    timing: &LeaseTiming,
) -> Option<mpsc::Receiver<Notice>> {
    match tokio::time::timeout(timing.beat, cluster.notices()).await {
        // The store says what it listens on, and when (behind a pooler, only while leading).
        Ok(Ok(rx)) => Some(rx),
        Ok(Err(e)) => {
            tracing::warn!(error = %format!("{e:#}"), "cannot listen for cluster notices; polling every poll_interval_ms until it can");
            None
        }
        Err(_) => {
            tracing::warn!("cannot listen for cluster notices: the database did not answer in time; polling every poll_interval_ms until it can");
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

/// Resolves at `at`, or never without one.
async fn until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
