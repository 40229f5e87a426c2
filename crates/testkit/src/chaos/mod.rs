//! The fault harness: the real `askrelay` binary against the Discord stand-in, with every request
//! in flight at once, SIGKILLs and restarts at random points, aborts at the named crash points of
//! `src/crash.rs`, injected 5xx and 429 bursts, and gateway drops.
//!
//! - One client task per request asks with a fixed `request_id`; when the daemon goes away it
//!   reconnects (bounded backoff) and sends the same ask line again (a re-attach). It records
//!   every final line it sees, and keeps reading after its final line so that a second one on
//!   the same connection would be seen too.
//! - A clicker follows the messages the stand-in created and clicks one fixed option per
//!   question (a button, a single-select value, or a multi-select draft and then "Submit"), with
//!   a new interaction for every click. A click counts once Discord got a callback for it (type
//!   6), or an ephemeral "already answered", or once the request's answer reached its client;
//!   until then it is sent again after a restart or a timeout. A settling click answered with a
//!   deferred update (type 6: the store took longer than 2 s) is sent again half a second later.
//! - Quorum routes: some requests (by the seed, never the escalating ones) carry the scope label
//!   `quorum = "2"` or `"3"` and go to a route with `approvals = 2` (or 3, with "Hold" among its
//!   `decisive_labels`); the harness's own uid is the same person as one Discord account
//!   through `[[identities]]`. Each of their questions is clicked by a planned list of ballots:
//!   sometimes that requester first (it must be refused), sometimes a distinct person voting
//!   for another option (it must not count), then as many distinct people of a pool of six as
//!   the route needs, all for the same option(s), or one person for a decisive "Deny" or
//!   "Hold". A multi-select question is a draft and a Submit per voter. A ballot is done when
//!   its click got an update (type 7: the vote shown, or the settlement), an ephemeral "already
//!   voted" (the vote was stored before a restart or a failed callback) or, for the requester,
//!   the refusal; then the next person clicks. The crash points "voted" and "quorum" join the
//!   others.
//! - The asks start at random moments during a ramp (so posting goes on for a while); nothing is
//!   clicked before the ramp is over, so then every request is in flight at once.
//! - A monkey SIGKILLs the daemon when questions posted + questions settled crosses random
//!   thresholds (plus a random delay), so kills land while posts and clicks are in flight, and
//!   restarts it at once, sometimes with `ASKRELAY_TEST_CRASH_AT` set.
//! - A fault task injects 5xx and 429 bursts on posts, edits, channel checks and interaction
//!   callbacks, and drops the gateway, at random times.
//!
//! At the end every request is re-attached once more (it must replay the same final line), the
//! daemon is stopped with SIGTERM, and the report counts duplicates posted, answers lost,
//! requests ended twice and wrong answers, which must all be 0. Then the audit rows are read
//! back from the database: no question has two accepted `answer` rows, and every quorum
//! question settled with the planned answer, either by a decisive label or only once enough
//! distinct people had voted for that answer (the voters its `answer` row lists, each with an
//! earlier `vote` row for it, and as many counted from the `vote` rows alone), never with a vote
//! of the requester; "settled twice" and "quorum violations" must be 0 too.
//!
//! A cluster run (`nodes` > 1, on PostgreSQL) starts that many `askrelay serve` processes on
//! one database, each with its own node id (`node-1`, ...), socket and log. Each request asks
//! on one node, fixed by its index, and re-attaches there. A kill hits a random node, or the
//! leader (found through `health`) about half the time, and restarts it with the same node id
//! and socket: a follower's clients re-attach when it is back. A killed leader is restarted at
//! once half the time (it may take the lead back), and otherwise once another node leads. The
//! clicker clicks through the stand-in as before; only the leader holds a gateway session, and
//! a click waits until one is live. The report adds the leader kills and the failovers: from a
//! leader's SIGKILL to the next live gateway session (a new IDENTIFY).
//!
//! Cluster faults (`cluster_faults`, issue 27), one at a time when asked for: a node frozen
//! (SIGSTOP), cut off from PostgreSQL (its [`Proxy`] paused), the database stalled for every
//! node, a node's clock skewed (libfaketime). The report then gives, per fault kind, the
//! longest time the stand-in had no live gateway session (and two), duplicates, lost answers,
//! double settlements, wrong answers and clicks told "failed" that counted. With `dedup` off the
//! stand-in posts a repeated nonce again, so that a post sent twice shows.
//!
//! Randomness comes from the seed only (a tiny xorshift). Timing decides where the faults land,
//! never what counts as correct: every voter of a question clicks the same planned option, the
//! dissenting vote is never enough for a quorum, so any answer that differs is wrong whatever
//! the interleaving.
//!
//! Used by `examples/chaos.rs` (the full run) and `tests/it/chaos.rs` (small runs).
//!
//! The files, a part each: the config and the seed's [`Rng`] here; `plan.rs` (who clicks what),
//! `shared.rs` (what the tasks share), `daemon.rs` (one node's process), `monkey.rs` (kills and
//! restarts), `clients.rs` (asks and re-attaches), `clicker.rs`, `faults.rs` (REST and gateway
//! faults), `cluster_faults.rs`, `run.rs` (the run, start to end), then what is checked once it
//! is over: `outcomes.rs` (the cluster faults' figures), `audit.rs` (the audit rows),
//! `report.rs` (the report and its bars); `database.rs` opens the database the nodes share.

mod audit;
mod clicker;
mod clients;
mod cluster_faults;
mod daemon;
mod database;
mod faults;
mod monkey;
mod outcomes;
mod plan;
mod report;
mod run;
mod shared;
#[cfg(test)]
mod tests;

pub use cluster_faults::{
    faketime_available, ClusterFault, Injected, CONNECT_SLACK, FAKETIME_LIB, HEARTBEAT,
};
pub use report::{ChaosReport, FaultRow};
pub use run::run;

use plan::REQUESTER_DISCORD_ID;
use std::time::Duration;

/// The channel every question goes to.
const CHANNEL: u64 = 7_700;
/// Where the escalating route posts its copies (every third request escalates).
const COPIES: u64 = 7_701;
/// The config file of every instance: a route that escalates one second after the ask with a
/// linked copy of each open question in [`COPIES`]; two quorum routes (two approvals, and three
/// with "Hold" decisive too) in the same channel; and the harness's own local account (`uid`,
/// which asks every question) as the same person as the Discord account [`REQUESTER`] clicks
/// with, so that the quorum routes refuse that account.
fn config_toml(uid: u32) -> String {
    format!(
        "[[routes]]\nname = \"escalating\"\nmatch = {{ escalate = \"yes\" }}\n\
         channel_id = {CHANNEL}\n[[routes.escalate]]\nafter_secs = 1\nchannel_id = {COPIES}\n\n\
         [[routes]]\nname = \"quorum-2\"\nmatch = {{ quorum = \"2\" }}\n\
         channel_id = {CHANNEL}\napprovals = 2\n\n\
         [[routes]]\nname = \"quorum-3\"\nmatch = {{ quorum = \"3\" }}\n\
         channel_id = {CHANNEL}\napprovals = 3\ndecisive_labels = [\"Hold\"]\n\n\
         [[identities]]\nname = \"chaos-requester\"\nuids = [{uid}]\n\
         discord_user_ids = [\"{REQUESTER_DISCORD_ID}\"]\n"
    )
}

/// The crash points of `src/crash.rs`, those of posting first; "voted" (a vote stored) and
/// "quorum" (the vote that completes a quorum stored, the question not settled yet) are
/// reached on the quorum routes only.
const CRASH_POINTS: [&str; 6] = ["stored", "posted", "clicked", "answered", "voted", "quorum"];
/// How long a daemon gets to say "listening".
const START_LIMIT: Duration = Duration::from_secs(30);
/// A click with no callback is sent again after this long even without a restart.
const CLICK_TIMEOUT: Duration = Duration::from_secs(4);
/// Sending one interaction waits this long at most for a live gateway session (the stand-in
/// itself would panic after 30 s).
const SEND_LIMIT: Duration = Duration::from_secs(25);
/// The bound on the final re-attach of every request.
const REPLAY_LIMIT: Duration = Duration::from_secs(20);
/// How long SIGTERM gets before SIGKILL at the end.
const STOP_LIMIT: Duration = Duration::from_secs(20);
/// A cluster whose leader was killed must have a live gateway session again within this long
/// (`cluster.failover_secs` is 3 by default); past it the failover counts as stuck.
const FAILOVER_LIMIT: Duration = Duration::from_secs(60);
/// How long a `health` call may take when the monkey looks for the leader.
const HEALTH_LIMIT: Duration = Duration::from_secs(2);

/// What to run.
#[derive(Clone, Debug)]
pub struct ChaosConfig {
    /// Requests, all in flight together; each has 1 to 3 questions.
    pub requests: usize,
    /// SIGKILLs (each followed by a restart).
    pub kills: usize,
    pub seed: u64,
    /// The bound on waiting for every request's final line.
    pub deadline: Duration,
    /// Also start some instances with `ASKRELAY_TEST_CRASH_AT` at a random point.
    pub crash_points: bool,
    /// Inject 5xx and 429 bursts and gateway drops.
    pub faults: bool,
    /// The asks start at random moments within this time from the start, so that posting goes
    /// on while the daemon is killed. Nothing is clicked before it is over: then every request
    /// is in flight at once.
    pub ramp: Duration,
    /// After the ramp, each question is clicked a random delay up to this long after its
    /// message appears.
    pub click_spread: Duration,
    /// The mean time between two injected faults (each a burst or a gateway drop).
    pub fault_every: Duration,
    /// Progress lines on stderr.
    pub verbose: bool,
    /// Keep the work directory (daemon log, database) when the run fails.
    pub keep_dir_on_failure: bool,
    /// Keep it in any case.
    pub keep_dir: bool,
    /// `askrelay serve` processes sharing the database (a cluster when more than 1).
    pub nodes: usize,
    /// The database: `None` for a SQLite file in the work directory (a single node) or, with
    /// more than one node, a scratch database on the test server; `"postgres"` for a scratch
    /// database in any case; a `postgres://` URL for that database as it is. A scratch database
    /// is dropped at the end (kept with the work directory).
    pub database: Option<String>,
    /// The cluster faults to inject (cluster mode only), one at a time, each kind once per
    /// round in an order the seed shuffles; see `chaos/cluster_faults.rs`. With any, every node
    /// reaches PostgreSQL through a [`Proxy`] of its own and the stand-in asks for a heartbeat
    /// every 0.5 s and closes silent sessions.
    pub cluster_faults: Vec<ClusterFault>,
    /// How many cluster faults in all; 0 for one of each kind.
    pub cluster_fault_count: usize,
    /// The stand-in de-duplicates message creates by nonce (as Discord does); off, a post sent
    /// twice shows as two messages.
    pub dedup: bool,
    /// `cluster.failover_secs` for every node; `None` for the daemon's default (3).
    pub failover_secs: Option<u64>,
    /// Freeze, partition and skew always hit the leader (otherwise half the time): for a
    /// short run with one fault of each kind, where a follower hit would show little.
    pub faults_at_leader: bool,
}

impl ChaosConfig {
    pub fn new(requests: usize, kills: usize, seed: u64) -> ChaosConfig {
        ChaosConfig {
            requests,
            kills,
            seed,
            deadline: Duration::from_secs(600),
            crash_points: true,
            faults: true,
            ramp: Duration::from_secs(5),
            click_spread: Duration::from_secs(15),
            fault_every: Duration::from_millis(350),
            verbose: false,
            keep_dir_on_failure: false,
            keep_dir: false,
            nodes: 1,
            database: None,
            cluster_faults: Vec::new(),
            cluster_fault_count: 0,
            dedup: true,
            failover_secs: None,
            faults_at_leader: false,
        }
    }

    /// The failover time the nodes run with.
    pub fn failover(&self) -> Duration {
        Duration::from_secs(self.failover_secs.unwrap_or(3))
    }
}
/// A tiny seeded PRNG (splitmix64 to seed, xorshift64* to draw): reproducible, no dependency.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        Rng(if z == 0 { 0x2545_F491_4F6C_DD1D } else { z })
    }

    /// An independent stream for a task.
    pub fn fork(&mut self) -> Rng {
        Rng::new(self.next_u64())
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// In `0..n`; 0 when `n` is 0.
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }

    /// In `lo..=hi`.
    pub fn between(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi.saturating_sub(lo) + 1)
    }

    pub fn chance(&mut self, num: u64, den: u64) -> bool {
        self.below(den) < num
    }

    pub fn millis(&mut self, lo: u64, hi: u64) -> Duration {
        Duration::from_millis(self.between(lo, hi))
    }
}
