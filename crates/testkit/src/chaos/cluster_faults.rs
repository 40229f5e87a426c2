//! The cluster's own faults, injected one at a time (issue 27): a node frozen (SIGSTOP, then
//! SIGCONT), a node cut off from the database (its [`Proxy`] paused), the database stalled for
//! everyone (every proxy paused), a node's clock skewed (restarted under libfaketime). And what
//! is measured from the outside, whatever the design of the lead: when the stand-in had no live
//! gateway session (no leader), or two.
//!
//! The faults run in sequence, each followed by a settling time (`failover_secs` + one beat +
//! 3 s), so that whatever happens between a fault's start and the end of its settling time is
//! put down to that fault, and nothing to two at once.

use super::clients::says_it_leads;
use super::shared::Shared;
use super::Rng;
use crate::proxy::Proxy;
use crate::standin::{StandIn, ZombieClose};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::{sleep, Instant};

/// Where Debian's `faketime` package puts the library.
pub const FAKETIME_LIB: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";

/// How far the skew fault moves a node's clock.
const SKEW: &str = "300s";

/// How long libfaketime keeps a timestamp file's offset before it reads the file again
/// (`FAKETIME_CACHE_DURATION`, whole seconds).
pub const FAKETIME_CACHE: Duration = Duration::from_secs(1);

/// The gateway heartbeat the stand-in asks for in a run with cluster faults: a frozen leader's
/// session ends (the stand-in closes it, as Discord closes a zombie) after four silent
/// intervals, and counts as gone from the heartbeat it missed, so within this much of the
/// freeze.
pub const HEARTBEAT: Duration = Duration::from_millis(500);

/// The slack on top of `failover_secs` + one beat in the no-leader bar: the new leader's gateway
/// connect and IDENTIFY (0.1 to 0.3 s in the release cluster runs of docs/reliability.md, where
/// a node restarted at once had its session live again after 0.1 to 0.3 s), the half second by
/// which [`HEARTBEAT`] can misplace a frozen leader's end, and scheduling on a busy 2-core
/// machine.
pub const CONNECT_SLACK: Duration = Duration::from_millis(1000);

/// A kind of cluster fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ClusterFault {
    /// SIGSTOP a node (the leader half the time), SIGCONT it 2 to 3 × `failover_secs` later.
    Freeze,
    /// Pause one node's database proxy (the leader half the time) for 2 to 3 × `failover_secs`.
    Partition,
    /// Pause every node's database proxy for 2 s to min(8 s, 2 × `failover_secs`).
    Stall,
    /// Move a node's wall clock (the leader half the time) 300 s ahead or behind for
    /// 2 × `failover_secs` + 2 s, then back. Every node runs under libfaketime with a timestamp
    /// file of its own ("+0"), which the fault rewrites: no restart, so the skew is the only
    /// change.
    Skew,
}

impl ClusterFault {
    pub const ALL: [ClusterFault; 4] = [
        ClusterFault::Freeze,
        ClusterFault::Partition,
        ClusterFault::Stall,
        ClusterFault::Skew,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ClusterFault::Freeze => "freeze",
            ClusterFault::Partition => "partition",
            ClusterFault::Stall => "stall",
            ClusterFault::Skew => "skew",
        }
    }
}

impl std::fmt::Display for ClusterFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for ClusterFault {
    type Err = String;

    fn from_str(s: &str) -> Result<ClusterFault, String> {
        ClusterFault::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                format!("unknown fault kind {s:?}: expected freeze, partition, stall or skew")
            })
    }
}

/// Whether libfaketime is installed (the skew fault needs it).
pub fn faketime_available() -> bool {
    Path::new(FAKETIME_LIB).exists()
}

/// What the fault task and the monkey share about one node; the monkey's [`super::DaemonCtl`]
/// keeps it up to date across restarts.
pub(super) struct NodeHandle {
    pub name: String,
    pub socket: PathBuf,
    /// The running instance's pid; 0 while none runs.
    pub pid: AtomicU32,
    /// The running instance's "leading the cluster" flag, from its log.
    pub leading: Mutex<Arc<AtomicBool>>,
    /// The libfaketime timestamp file the node runs with (`FAKETIME_TIMESTAMP_FILE`), when the
    /// run has the skew fault: `+0`, or the skew.
    pub faketime: Option<PathBuf>,
    /// Its way to the database.
    pub proxy: Option<Proxy>,
}

impl NodeHandle {
    async fn is_leader(&self) -> bool {
        if self.pid.load(Ordering::SeqCst) == 0 {
            return false;
        }
        match says_it_leads(&self.socket).await {
            Some(leads) => leads,
            None => self.leading.lock().unwrap().load(Ordering::SeqCst),
        }
    }
}

/// One fault as it was injected.
#[derive(Clone, Debug)]
pub struct Injected {
    pub kind: ClusterFault,
    /// What was done, for the log and the report.
    pub what: String,
    pub start: Instant,
    /// When it was undone.
    pub end: Instant,
    /// Until when what happens is put down to it.
    pub settled: Instant,
    /// The longest time without a leader allowed within its window.
    pub bar: Duration,
}

impl Injected {
    /// A fault held from `start` to now: what happens until the cluster has had time to settle
    /// after it is put down to it, and it may leave the cluster without a leader for the usual
    /// bar plus `extra`.
    fn ended(
        kind: ClusterFault,
        what: String,
        start: Instant,
        failover: Duration,
        extra: Duration,
    ) -> Injected {
        let end = Instant::now();
        Injected {
            kind,
            what,
            start,
            end,
            settled: end + settle_time(failover),
            bar: no_leader_bar(failover) + extra,
        }
    }
}

/// The plan: the kinds, in the order they are injected (every kind once per round, the order
/// shuffled by the seed), `count` of them in all.
pub(super) fn order(kinds: &[ClusterFault], count: usize, rng: &mut Rng) -> Vec<ClusterFault> {
    let mut out = Vec::new();
    while out.len() < count && !kinds.is_empty() {
        let mut round = kinds.to_vec();
        for k in (1..round.len()).rev() {
            round.swap(k, rng.below(k as u64 + 1) as usize);
        }
        out.extend(round);
    }
    out.truncate(count);
    out
}

/// The settling time after a fault, and the no-leader bar: `failover_secs` + one beat + slack.
pub(super) fn settle_time(failover: Duration) -> Duration {
    failover + failover / 4 + Duration::from_secs(3)
}

pub(super) fn no_leader_bar(failover: Duration) -> Duration {
    failover + failover / 4 + CONNECT_SLACK
}

/// About how long `kinds` take, for spreading the clicks over them.
pub(super) fn schedule_length(kinds: &[ClusterFault], failover: Duration) -> Duration {
    kinds
        .iter()
        .map(|k| {
            let hold = match k {
                ClusterFault::Freeze | ClusterFault::Partition => failover * 5 / 2,
                ClusterFault::Stall => failover.min(Duration::from_secs(4)) * 3 / 2,
                ClusterFault::Skew => failover * 2 + Duration::from_secs(4),
            };
            hold + settle_time(failover)
        })
        .sum()
}

fn signal(pid: u32, sig: &str) -> bool {
    pid != 0
        && std::process::Command::new("kill")
            .args([sig, &pid.to_string()])
            .status()
            .is_ok_and(|s| s.success())
}

/// What the fault task runs.
pub(super) struct Schedule {
    /// The faults, in order.
    pub kinds: Vec<ClusterFault>,
    pub nodes: Vec<Arc<NodeHandle>>,
    pub failover: Duration,
    /// When the first one starts.
    pub from: Instant,
    /// Freeze, partition and skew always hit the leader.
    pub at_leader: bool,
}

/// Runs the faults in order, one at a time; each is undone before the next starts. Returns
/// what was injected; sets `done` at the end.
pub(super) async fn run(
    schedule: Schedule,
    shared: Arc<Shared>,
    mut rng: Rng,
    done: watch::Sender<bool>,
) -> Vec<Injected> {
    let Schedule {
        kinds,
        nodes,
        failover,
        from,
        at_leader,
    } = schedule;
    let mut out = Vec::new();
    tokio::time::sleep_until(from).await;
    for kind in kinds {
        if shared.is_fatal() {
            break;
        }
        let injected = match kind {
            ClusterFault::Freeze => freeze(&nodes, &shared, &mut rng, failover, at_leader).await,
            ClusterFault::Partition => {
                partition(&nodes, &shared, &mut rng, failover, at_leader).await
            }
            ClusterFault::Stall => stall(&nodes, &shared, &mut rng, failover).await,
            ClusterFault::Skew => skew(&nodes, &shared, &mut rng, failover, at_leader).await,
        };
        if let Some(i) = injected {
            shared.log(format!(
                "{kind} undone after {:.2} s: {}",
                (i.end - i.start).as_secs_f64(),
                i.what
            ));
            sleep_until_or_fatal(i.settled, &shared).await;
            out.push(i);
        }
    }
    done.send_replace(true);
    out
}

async fn sleep_until_or_fatal(at: Instant, shared: &Shared) {
    while Instant::now() < at && !shared.is_fatal() {
        sleep((at - Instant::now()).min(Duration::from_millis(200))).await;
    }
}

/// The node a fault hits: the leader half the time (always with `at_leader`), when one says
/// so; any node otherwise.
async fn pick(nodes: &[Arc<NodeHandle>], rng: &mut Rng, at_leader: bool) -> (usize, bool) {
    let aim = rng.chance(1, 2) || at_leader;
    let any = rng.below(nodes.len() as u64) as usize;
    let mut leader = None;
    for (i, n) in nodes.iter().enumerate() {
        if n.is_leader().await {
            leader = Some(i);
            break;
        }
    }
    match leader {
        Some(l) if aim => (l, true),
        l => (any, l == Some(any)),
    }
}

fn who(n: &NodeHandle, leader: bool) -> String {
    if leader {
        format!("{} (the leader)", n.name)
    } else {
        n.name.clone()
    }
}

async fn freeze(
    nodes: &[Arc<NodeHandle>],
    shared: &Shared,
    rng: &mut Rng,
    failover: Duration,
    at_leader: bool,
) -> Option<Injected> {
    let (i, leader) = pick(nodes, rng, at_leader).await;
    let n = &nodes[i];
    let hold = rng.millis(
        failover.as_millis() as u64 * 2,
        failover.as_millis() as u64 * 3,
    );
    let pid = n.pid.load(Ordering::SeqCst);
    let start = Instant::now();
    if !signal(pid, "-STOP") {
        shared.note(format!("freeze: cannot SIGSTOP {} (pid {pid})", n.name));
        return None;
    }
    let what = format!("froze {} for {:.1} s", who(n, leader), hold.as_secs_f64());
    shared.log(format!("freeze: {what}"));
    sleep(hold).await;
    // The same pid: if the monkey killed it meanwhile, this fails harmlessly.
    signal(pid, "-CONT");
    Some(Injected::ended(
        ClusterFault::Freeze,
        what,
        start,
        failover,
        Duration::ZERO,
    ))
}

async fn partition(
    nodes: &[Arc<NodeHandle>],
    shared: &Shared,
    rng: &mut Rng,
    failover: Duration,
    at_leader: bool,
) -> Option<Injected> {
    let (i, leader) = pick(nodes, rng, at_leader).await;
    let n = &nodes[i];
    let proxy = n.proxy.as_ref()?;
    let hold = rng.millis(
        failover.as_millis() as u64 * 2,
        failover.as_millis() as u64 * 3,
    );
    let what = format!(
        "cut {} off from the database for {:.1} s ({} connection(s) held)",
        who(n, leader),
        hold.as_secs_f64(),
        proxy.connections()
    );
    shared.log(format!("partition: {what}"));
    let start = Instant::now();
    proxy.pause();
    sleep(hold).await;
    proxy.resume();
    Some(Injected::ended(
        ClusterFault::Partition,
        what,
        start,
        failover,
        Duration::ZERO,
    ))
}

async fn stall(
    nodes: &[Arc<NodeHandle>],
    shared: &Shared,
    rng: &mut Rng,
    failover: Duration,
) -> Option<Injected> {
    let most = (failover.as_millis() as u64 * 2).clamp(2000, 8000);
    let hold = rng.millis(2000, most);
    let what = format!(
        "stalled the database for every node for {:.1} s",
        hold.as_secs_f64()
    );
    shared.log(format!("stall: {what}"));
    let start = Instant::now();
    for n in nodes {
        if let Some(p) = &n.proxy {
            p.pause();
        }
    }
    sleep(hold).await;
    for n in nodes {
        if let Some(p) = &n.proxy {
            p.resume();
        }
    }
    // No node can lead without the database: the part of the stall beyond failover_secs is
    // allowed on top of the usual bar.
    Some(Injected::ended(
        ClusterFault::Stall,
        what,
        start,
        failover,
        hold.saturating_sub(failover),
    ))
}

async fn skew(
    nodes: &[Arc<NodeHandle>],
    shared: &Shared,
    rng: &mut Rng,
    failover: Duration,
    at_leader: bool,
) -> Option<Injected> {
    if !faketime_available() {
        shared.note(format!(
            "skew skipped: libfaketime is not installed ({FAKETIME_LIB} is missing; on Debian: \
             apt-get install faketime)"
        ));
        return None;
    }
    let (i, leader) = pick(nodes, rng, at_leader).await;
    let n = &nodes[i];
    let file = n.faketime.as_ref()?;
    let offset = format!("{}{SKEW}", if rng.chance(1, 2) { "+" } else { "-" });
    let hold = failover * 2 + Duration::from_secs(2);
    let what = format!(
        "moved the clock of {} {offset} for {:.1} s",
        who(n, leader),
        hold.as_secs_f64()
    );
    shared.log(format!("skew: {what}"));
    let start = Instant::now();
    if let Err(e) = std::fs::write(file, format!("{offset}\n")) {
        shared.problem(format!("skew: cannot write {}: {e}", file.display()));
        return None;
    }
    // libfaketime reads the file again after FAKETIME_CACHE_DURATION (1 s).
    sleep(hold + FAKETIME_CACHE).await;
    if let Err(e) = std::fs::write(file, "+0\n") {
        shared.problem(format!("skew: cannot write {}: {e}", file.display()));
    }
    sleep(FAKETIME_CACHE).await;
    Some(Injected::ended(
        ClusterFault::Skew,
        what,
        start,
        failover,
        Duration::ZERO,
    ))
}

// ---------------------------------------------------------------------------------------------
// Leaders seen from the outside: the stand-in's live gateway sessions

/// Records how many gateway sessions are live at every change of the stand-in, until stopped.
pub(super) fn watch_sessions(
    standin: StandIn,
    stop: watch::Receiver<bool>,
) -> tokio::task::JoinHandle<Vec<(Instant, usize)>> {
    tokio::spawn(async move {
        let mut stop = stop;
        let mut changes = standin.subscribe();
        let mut samples: Vec<(Instant, usize)> = Vec::new();
        loop {
            let n = standin.live_sessions();
            if samples.last().is_none_or(|&(_, last)| last != n) {
                samples.push((Instant::now(), n));
            }
            if *stop.borrow() {
                return samples;
            }
            tokio::select! {
                _ = changes.changed() => {}
                _ = sleep(Duration::from_millis(20)) => {}
                _ = stop.changed() => {}
            }
        }
    })
}

/// A stretch of time: from, to.
pub(super) type Stretch = (Instant, Instant);

/// Stretches this close together count as one.
const JOIN: Duration = Duration::from_millis(50);

/// The intervals, between `from` and `to`, with no live session (no leader) and with two or
/// more. A session the stand-in closed for silence counts as gone from the heartbeat it missed.
pub(super) fn session_gaps(
    samples: &[(Instant, usize)],
    zombies: &[ZombieClose],
    from: Instant,
    to: Instant,
) -> (Vec<Stretch>, Vec<Stretch>) {
    // Change points: the samples, and each zombie's silent stretch (one session fewer).
    let mut points: Vec<Instant> = samples.iter().map(|s| s.0).collect();
    let silent: Vec<(Instant, Instant)> = zombies
        .iter()
        .filter(|z| z.was_live && z.silent_from < z.closed_at)
        .map(|z| {
            (
                Instant::from_std(z.silent_from),
                Instant::from_std(z.closed_at),
            )
        })
        .collect();
    for &(a, b) in &silent {
        points.push(a);
        points.push(b);
    }
    points.push(from);
    points.push(to);
    points.retain(|&t| t >= from && t <= to);
    points.sort();
    points.dedup();
    let count_at = |t: Instant| -> i64 {
        let sampled = samples
            .iter()
            .take_while(|s| s.0 <= t)
            .last()
            .map_or(0, |s| s.1) as i64;
        let silent_now = silent.iter().filter(|&&(a, b)| a <= t && t < b).count() as i64;
        sampled - silent_now
    };
    let mut none = Vec::new();
    let mut two = Vec::new();
    for w in points.windows(2) {
        let (a, b) = (w[0], w[1]);
        let n = count_at(a);
        // The stand-in times a silent session's close, the sampler the count that follows it, a
        // few ms apart: stretches that close a gap are one.
        let push = |v: &mut Vec<Stretch>| match v.last_mut() {
            Some(last) if a.saturating_duration_since(last.1) <= JOIN => last.1 = b,
            _ => v.push((a, b)),
        };
        if n <= 0 {
            push(&mut none);
        } else if n >= 2 {
            push(&mut two);
        }
    }
    (none, two)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_count_a_silent_session_as_gone() {
        let t = Instant::now();
        let s = |ms: u64| t + Duration::from_millis(ms);
        // One session live from 0, silent from 2000 (its heartbeat due then never came),
        // closed by the stand-in at 4000; the next leader's live from 4200; a second one from
        // 5000 to 6000; none from 8000 to 8500.
        let mut samples = vec![
            (s(0), 1),
            (s(4000), 0),
            (s(4200), 1),
            (s(5000), 2),
            (s(6000), 1),
            (s(8000), 0),
            (s(8500), 1),
        ];
        // The sampler saw the close 3 ms after the stand-in made it.
        samples[1].0 = s(4003);
        let zombies = vec![ZombieClose {
            was_live: true,
            last_heard: s(1500).into_std(),
            silent_from: s(2000).into_std(),
            closed_at: s(4000).into_std(),
        }];
        let (none, two) = session_gaps(&samples, &zombies, s(0), s(10_000));
        assert_eq!(none, vec![(s(2000), s(4200)), (s(8000), s(8500))]);
        assert_eq!(two, vec![(s(5000), s(6000))]);
    }

    #[test]
    fn kinds_parse_and_every_round_has_each() {
        assert_eq!("stall".parse::<ClusterFault>(), Ok(ClusterFault::Stall));
        assert!("nap".parse::<ClusterFault>().is_err());
        let planned = order(&ClusterFault::ALL, 8, &mut Rng::new(3));
        for round in planned.chunks(4) {
            let mut r = round.to_vec();
            r.sort();
            assert_eq!(r, ClusterFault::ALL.to_vec());
        }
    }
}
