//! The monkey: SIGKILL at random points, restart at once (a killed leader, at times, later).

use super::clients::says_it_leads;
use super::daemon::{describe, DaemonCtl};
use super::shared::Shared;
use super::{Rng, CRASH_POINTS, FAILOVER_LIMIT};
use crate::standin::StandIn;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::{sleep_until, timeout, timeout_at, Instant};

pub(super) struct Monkey {
    /// One per node (a single one on SQLite).
    pub(super) ds: Vec<DaemonCtl>,
    pub(super) rng: Rng,
    pub(super) crash_points: bool,
    /// How many questions the plan has.
    pub(super) questions: usize,
    pub(super) shared: Arc<Shared>,
    pub(super) deadline: Instant,
    /// In cluster mode, the stand-in: it shows when the next leader's gateway session is live.
    pub(super) cluster: Option<StandIn>,
    /// Set once the cluster faults are all injected and undone (at once without any): the
    /// monkey keeps restarting nodes until then, a skewed node's restarts included.
    pub(super) faults_done: watch::Receiver<bool>,
}

pub(super) enum Wake {
    /// The instance of node `.0` exited.
    Exited(usize, std::io::Result<ExitStatus>),
    Ready,
    Deadline,
}

/// The first node but `down` whose instance exits: at once for one that is not running.
pub(super) async fn any_exit(
    ds: &mut [DaemonCtl],
    down: Option<usize>,
) -> (usize, std::io::Result<ExitStatus>) {
    let watched = |i: usize| Some(i) != down;
    if let Some(i) = (0..ds.len()).find(|&i| watched(i) && ds[i].child.is_none()) {
        return (i, Ok(ExitStatus::default()));
    }
    let waits: Vec<_> = ds
        .iter_mut()
        .enumerate()
        .filter(|(i, _)| watched(*i))
        .filter_map(|(i, d)| {
            let child = d.child.as_mut()?;
            Some(Box::pin(async move { (i, child.wait().await) }))
        })
        .collect();
    if waits.is_empty() {
        return std::future::pending().await;
    }
    futures_util::future::select_all(waits).await.0
}

/// Returns once `cond` holds for the stand-in (the caller bounds the wait).
pub(super) async fn until(standin: &StandIn, cond: impl Fn(&StandIn) -> bool) {
    let mut changes = standin.subscribe();
    loop {
        if cond(standin) {
            return;
        }
        // A change between the look and the subscription is caught by the next look.
        let _ = timeout(Duration::from_millis(50), changes.changed()).await;
    }
}

impl Monkey {
    pub(super) async fn run(mut self, thresholds: Vec<usize>) -> Vec<DaemonCtl> {
        let mut progress = self.shared.progress.subscribe();
        let mut done = self.shared.all_done.subscribe();
        let planned = thresholds.len();
        for (k, threshold) in thresholds.into_iter().enumerate() {
            // Wait until the work is far enough along (or done), restarting an instance that
            // aborted at its crash point meanwhile.
            loop {
                if self.shared.is_fatal() {
                    return self.ds;
                }
                let wake = tokio::select! {
                    (i, s) = any_exit(&mut self.ds, None) => Wake::Exited(i, s),
                    _ = progress.wait_for(|&(p, s)| p + s >= threshold) => Wake::Ready,
                    _ = done.wait_for(|&d| d) => Wake::Ready,
                    _ = sleep_until(self.deadline) => Wake::Deadline,
                };
                match wake {
                    Wake::Exited(i, s) => {
                        if !self.exited(i, s).await {
                            return self.ds;
                        }
                    }
                    Wake::Ready => break,
                    Wake::Deadline => return self.ds,
                }
            }
            let target = self.target(k, planned).await;
            // A random moment: a little after the threshold, and not before the instance had a
            // moment to get going (it may still be resuming; that is a fine place to die too).
            let at = (self.ds[target].started_at + self.rng.millis(5, 400))
                .max(Instant::now() + self.rng.millis(0, 250));
            loop {
                let wake = tokio::select! {
                    (i, s) = any_exit(&mut self.ds, None) => Wake::Exited(i, s),
                    _ = sleep_until(at) => Wake::Ready,
                };
                match wake {
                    Wake::Exited(i, s) => {
                        if !self.exited(i, s).await {
                            return self.ds;
                        }
                    }
                    _ => break,
                }
            }
            let leader = match &self.cluster {
                Some(_) => self.ds[target].is_leader().await,
                None => false,
            };
            let identified = self.cluster.as_ref().map_or(0, |s| s.identify_count());
            let killed_at = Instant::now();
            self.ds[target].kill().await;
            let kills = self.shared.kills.fetch_add(1, Ordering::SeqCst) + 1;
            let (posted, settled) = *progress.borrow();
            let who = match &self.ds[target].node {
                Some(node) if leader => format!(" {node} (the leader)"),
                Some(node) => format!(" {node}"),
                None => String::new(),
            };
            self.shared.log(format!(
                "kill {kills}/{planned}{who}: {posted} questions posted, {settled} settled"
            ));
            if leader {
                self.shared.leader_kills.fetch_add(1, Ordering::SeqCst);
                // Restarted at once, the killed node often takes the lead back before the
                // others try (every failover_secs / 4): half the time it stays down until
                // another node leads, so that the takeover of every node's requests is tested
                // as well.
                let stay_down = self.ds.len() > 1 && self.rng.chance(1, 2);
                self.watch_failover(target, killed_at, identified, !stay_down);
                if stay_down {
                    match self.await_new_leader(target, identified).await {
                        None => return self.ds,
                        Some(true) => {
                            // Its node is down: the live session is another node's.
                            self.shared.lead_moves.fetch_add(1, Ordering::SeqCst);
                            self.shared.log(format!(
                                "another node leads; restarting{who} after {:.2} s",
                                killed_at.elapsed().as_secs_f64()
                            ));
                        }
                        // The failover watch reports it.
                        Some(false) => {}
                    }
                }
            }
            // The last instance never gets a crash point: the end of the run needs it. Once
            // every question is posted, only the points of the click path can still be reached.
            let points: &[&'static str] = if posted < self.questions {
                &CRASH_POINTS
            } else {
                &CRASH_POINTS[2..]
            };
            let crash = (k + 1 < planned && self.crash_points && self.rng.chance(2, 5))
                .then(|| points[self.rng.below(points.len() as u64) as usize]);
            if !self.restart(target, crash).await {
                return self.ds;
            }
        }
        // In a cluster another node may still carry a crash point it never reached, and could
        // abort during the final checks: restart it without one, gracefully.
        for i in 0..self.ds.len() {
            if self.shared.is_fatal() {
                return self.ds;
            }
            let d = &mut self.ds[i];
            if d.child.is_none() || d.crash_at.is_none() {
                continue;
            }
            self.shared.log(format!(
                "daemon {} still has crash point {:?}; restarting it without one",
                d.name(d.instance),
                d.crash_at
            ));
            if let Some(p) = d.terminate().await {
                self.shared.problem(p);
            }
            if !self.restart(i, None).await {
                return self.ds;
            }
        }
        // Every kill is done: keep the daemons up until the clients and the cluster faults are
        // all done.
        loop {
            if self.shared.is_fatal() {
                return self.ds;
            }
            let mut faults_done = self.faults_done.clone();
            let both = async {
                let _ = done.wait_for(|&d| d).await;
                let _ = faults_done.wait_for(|&d| d).await;
            };
            let wake = tokio::select! {
                (i, s) = any_exit(&mut self.ds, None) => Wake::Exited(i, s),
                _ = both => Wake::Ready,
                _ = sleep_until(self.deadline) => Wake::Deadline,
            };
            match wake {
                Wake::Exited(i, s) => {
                    if !self.exited(i, s).await {
                        return self.ds;
                    }
                }
                _ => return self.ds,
            }
        }
    }

    /// The node the next kill hits. Alone, the only one. In a cluster, the leader about half
    /// the time (and at the last kill if no kill hit it yet), so that failovers are tested as
    /// often as follower restarts; otherwise any node, the leader included.
    async fn target(&mut self, k: usize, planned: usize) -> usize {
        if self.ds.len() == 1 {
            return 0;
        }
        let aim = self.rng.chance(1, 2);
        let any = self.rng.below(self.ds.len() as u64) as usize;
        let none_yet = self.shared.leader_kills.load(Ordering::SeqCst) == 0;
        if aim || (k + 1 == planned && none_yet) {
            for (i, d) in self.ds.iter().enumerate() {
                if d.is_leader().await {
                    return i;
                }
            }
            self.shared
                .log("no node says it leads now; the kill hits any node");
        }
        any
    }

    /// With node `down` (the killed leader) down, waits until another node's gateway session
    /// is live, at most [`FAILOVER_LIMIT`] (the failover watch reports a stuck one), restarting
    /// nodes that exit meanwhile. Whether one became live; `None` when a restart failed.
    async fn await_new_leader(&mut self, down: usize, identified: usize) -> Option<bool> {
        let standin = self.cluster.clone()?;
        let led = timeout(
            FAILOVER_LIMIT,
            until(&standin, |s| {
                s.identify_count() > identified && s.live_sessions() > 0
            }),
        );
        tokio::pin!(led);
        loop {
            let wake = tokio::select! {
                (i, s) = any_exit(&mut self.ds, Some(down)) => Wake::Exited(i, s),
                r = &mut led => return Some(r.is_ok()),
            };
            if let Wake::Exited(i, s) = wake {
                if !self.exited(i, s).await {
                    return None;
                }
            }
        }
    }

    /// Times the failover after the leader (node `i`) was SIGKILLed at `killed_at`, when the
    /// stand-in had seen `identified` IDENTIFYs: until the next gateway session is live. With
    /// `attribute` (the killed node was restarted at once), it then asks the other nodes
    /// whether one of them leads, to count the lead as moved.
    fn watch_failover(&self, i: usize, killed_at: Instant, identified: usize, attribute: bool) {
        let Some(standin) = self.cluster.clone() else {
            return;
        };
        let shared = self.shared.clone();
        let who = self.ds[i].node.clone().unwrap_or_default();
        let others: Vec<(String, PathBuf)> = (self.ds.iter().enumerate())
            .filter(|&(j, _)| j != i)
            .map(|(_, d)| (d.node.clone().unwrap_or_default(), d.socket.clone()))
            .collect();
        let watch = tokio::spawn(async move {
            // The dead leader's session ends once the stand-in sees its socket close. The
            // IDENTIFYs counted after that are a live node's.
            let gone = timeout(
                Duration::from_secs(5),
                until(&standin, |s| s.live_sessions() == 0),
            )
            .await
            .is_ok();
            let before = if gone {
                standin.identify_count()
            } else {
                shared.note(format!(
                    "a gateway session was still live 5 s after the leader {who} was killed \
                     (another node held one too, or the next leader was that quick)"
                ));
                identified
            };
            let back = timeout_at(
                killed_at + FAILOVER_LIMIT,
                until(&standin, |s| {
                    s.identify_count() > before && s.live_sessions() > 0
                }),
            )
            .await;
            match back {
                Ok(()) => {
                    let took = killed_at.elapsed();
                    shared.failovers.lock().unwrap().push(took);
                    // The restarted node may have taken the lead back before any other tried.
                    // A new leader that aborts at its crash point before it answers is not
                    // counted: the count is a lower bound.
                    let mut by = "(the monkey waited for another node)".to_owned();
                    if attribute {
                        by = format!("{who}, restarted, or a node that did not answer");
                        for (node, socket) in &others {
                            if says_it_leads(socket).await == Some(true) {
                                shared.lead_moves.fetch_add(1, Ordering::SeqCst);
                                by = node.clone();
                                break;
                            }
                        }
                    }
                    shared.log(format!(
                        "failover after killing the leader {who}: a gateway session is live \
                         again after {:.2} s; leader: {by}",
                        took.as_secs_f64()
                    ));
                }
                Err(_) => shared.problem(format!(
                    "no gateway session was live within {} s of killing the leader {who}: the \
                     failover is stuck",
                    FAILOVER_LIMIT.as_secs()
                )),
            }
        });
        self.shared.failover_watches.lock().unwrap().push(watch);
    }

    /// The instance of node `i` exited on its own: fine at its crash point, a problem
    /// otherwise. Restarts it without a crash point; false when that failed.
    async fn exited(&mut self, i: usize, status: std::io::Result<ExitStatus>) -> bool {
        let d = &mut self.ds[i];
        let name = d.name(d.instance);
        d.child = None;
        // Read the rest of its log first: it says whether this was its crash point.
        if let Some(pump) = d.pump.take() {
            let _ = timeout(Duration::from_secs(5), pump).await;
        }
        let status = match status {
            Ok(s) => describe(s),
            Err(e) => format!("wait failed: {e}"),
        };
        if d.aborted_on_purpose.load(Ordering::SeqCst) {
            self.shared.crash_aborts.fetch_add(1, Ordering::SeqCst);
            self.shared.log(format!(
                "daemon {name} aborted at crash point {:?} ({status})",
                d.crash_at
            ));
        } else {
            self.shared.problem(format!(
                "daemon {name} exited on its own ({status}) without reaching a crash point; see \
                 its log lines marked [{name}]"
            ));
        }
        self.restart(i, None).await
    }

    /// Starts the next instance of node `i`; an instance that aborts at its crash point before
    /// it listens is replaced by one without. False (and a fatal problem) when the daemon
    /// cannot start.
    async fn restart(&mut self, i: usize, crash: Option<&'static str>) -> bool {
        let d = &mut self.ds[i];
        self.shared.restarts.fetch_add(1, Ordering::SeqCst);
        match d.start(crash).await {
            Ok(()) => true,
            Err(e) if crash.is_some() && d.aborted_on_purpose.load(Ordering::SeqCst) => {
                self.shared.crash_aborts.fetch_add(1, Ordering::SeqCst);
                self.shared
                    .log(format!("{e}: it aborted at its crash point"));
                self.shared.restarts.fetch_add(1, Ordering::SeqCst);
                match d.start(None).await {
                    Ok(()) => true,
                    Err(e) => {
                        self.shared.fatal(e);
                        false
                    }
                }
            }
            Err(e) => {
                self.shared.fatal(e);
                false
            }
        }
    }
}
