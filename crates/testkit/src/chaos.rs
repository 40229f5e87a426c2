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

mod cluster_faults;

pub use cluster_faults::{
    faketime_available, ClusterFault, Injected, CONNECT_SLACK, FAKETIME_LIB, HEARTBEAT,
};

use super::discord_schema::Validator;
use super::fixtures::{self, Clicker};
use super::standin::{Failure, Recorded, Stall, StandIn};
use crate::proxy::Proxy;
use crate::scratch::ScratchDb;
use askrelay::answerer::discord::custom_id::{self, Action};
use askrelay::client::Client;
use askrelay::protocol::{Event, Op};
use askrelay::store::redact_url;
use cluster_faults::NodeHandle;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::{oneshot, watch};
use tokio::time::{sleep, sleep_until, timeout, timeout_at, Instant};

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
/// (`cluster.failover_secs` is 10 by default); past it the failover counts as stuck.
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
    /// `cluster.failover_secs` for every node; `None` for the daemon's default (10).
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
        Duration::from_secs(self.failover_secs.unwrap_or(10))
    }
}

/// The figures of one fault kind (or of the time outside every cluster fault, `none`).
#[derive(Clone, Debug, Default)]
pub struct FaultRow {
    /// `freeze`, `partition`, `stall`, `skew`, or `none`: the rest of the run (start-up, kills,
    /// gateway drops).
    pub kind: String,
    pub injected: usize,
    /// The longest stretch with no live gateway session that began within one of its windows.
    pub longest_no_leader: Duration,
    /// Stretches longer than their fault's bar.
    pub over_bar: usize,
    /// The largest bar among its faults.
    pub bar: Option<Duration>,
    /// The longest stretch with two or more live sessions.
    pub longest_two_sessions: Duration,
    /// Messages beyond one per (request key, question, channel) created in its windows.
    pub duplicates: usize,
    /// Messages created with a nonce already used in their channel, in its windows.
    pub nonce_reuses: usize,
    /// Requests whose answer was lost, wrong, or settled twice, by when their last question
    /// was first clicked.
    pub lost: usize,
    pub wrong: usize,
    pub settled_twice: usize,
    /// Ballots that counted (the stored answer is theirs) though none of their clicks got a
    /// callback within 3 s: the person saw "This interaction failed".
    pub told_failed_counted: usize,
}

/// What happened. The bar: `duplicates_posted`, `answers_lost`, `ended_twice` and
/// `wrong_answers` are 0, and every request was answered.
#[derive(Clone, Debug, Default)]
pub struct ChaosReport {
    pub seed: u64,
    pub requests: usize,
    pub questions: usize,
    /// Distinct (request key, question) among the messages created in the channel.
    pub questions_posted: usize,
    /// Messages created beyond one per (request key, question, channel): the question's own
    /// message, and its escalation copy.
    pub duplicates_posted: usize,
    /// Of those, second copies made with Discord's nonce de-duplication off: the bound of
    /// issue 27 is at most one duplicate per request that was mid-post at a change of leader
    /// (the old leader's post in flight when it was frozen or cut off). A third copy, or any
    /// duplicate with de-duplication on, is over the bar.
    pub duplicates_within_bound: usize,
    /// Escalation copies posted (in the copies channel).
    pub copies_posted: usize,
    /// Requests whose client never got `answered` though every question was clicked.
    pub answers_lost: usize,
    /// Requests with two different final lines (a replay of the same line is fine).
    pub ended_twice: usize,
    /// Requests with an `answered` line whose result is not what the clicker clicked.
    pub wrong_answers: usize,
    /// Requests whose client got `answered`.
    pub answered: usize,
    /// Requests whose client got no final line at all.
    pub unfinished: usize,
    /// The most requests in flight at one time, sampled every 100 ms: asked (the ask line was
    /// sent) and without a final line yet.
    pub peak_pending: usize,
    pub kills_planned: usize,
    /// SIGKILLs sent by the harness.
    pub kills: usize,
    /// Instances that aborted at their `ASKRELAY_TEST_CRASH_AT` point.
    pub crash_aborts: usize,
    /// Starts after the first one.
    pub restarts: usize,
    /// 5xx answers the stand-in served because of injection.
    pub injected_5xx: usize,
    /// 429 answers the stand-in served because of injection.
    pub injected_429: usize,
    pub gateway_drops: usize,
    /// Calls held past the daemon's deadlines (hung calls).
    pub stalls: usize,
    /// Connections a client made after its first one, each re-sending its ask.
    pub reattaches: usize,
    /// Interactions sent (clicks, selections).
    pub clicks: usize,
    /// Clicks sent again because the first got no callback in time or the daemon restarted.
    pub clicks_repeated: usize,
    /// Request bodies Discord received, each checked against the OpenAPI spec and Discord's
    /// limits.
    pub bodies_checked: usize,
    /// Bodies that failed that check (each is also a problem).
    pub bodies_invalid: usize,
    /// Requests on a quorum route (`approvals` 2 or 3).
    pub quorum_requests: usize,
    /// Their questions.
    pub quorum_questions: usize,
    /// Ballots the clicker planned on them: votes (dissenting ones too), decisive clicks and
    /// the requester's refused clicks.
    pub ballots_planned: usize,
    /// Votes counted, from the audit (`vote` rows, accepted).
    pub votes: usize,
    /// Quorum questions settled once enough distinct people chose the same answer.
    pub settled_by_quorum: usize,
    /// Quorum questions settled by a decisive label ("Deny", or "Hold" on `quorum-3`) alone.
    pub settled_by_decisive: usize,
    /// The requester's clicks refused on a quorum route (`forbidden` rows).
    pub requester_refused: usize,
    /// Quorum questions whose audit rows break the rule: settled by fewer distinct voters of
    /// that answer than the route needs, settled with another answer than the quorum chose, a
    /// voter listed twice, the requester counted, or no settlement row for an answered one.
    pub quorum_violations: usize,
    /// Questions with more than one accepted `answer` row (settled twice).
    pub settled_twice: usize,
    /// Messages still showing their buttons at the end, after one graceful restart if needed
    /// (informational).
    pub messages_not_edited: usize,
    /// Lines the daemon logged at ERROR level (informational).
    pub daemon_error_lines: usize,
    /// `askrelay serve` processes sharing the database.
    pub nodes: usize,
    /// "SQLite", or PostgreSQL and which database.
    pub database: String,
    /// Whether the nodes ran in cluster mode (on PostgreSQL): then the leader rows are shown.
    pub cluster: bool,
    /// SIGKILLs that hit the node leading the cluster at that moment.
    pub leader_kills: usize,
    /// Leader kills followed by a new live gateway session (a new leader's, or the restarted
    /// node's once it led again).
    pub failovers: usize,
    /// Those after which another node led: every one where the killed node stayed down until
    /// another led, and those after an immediate restart where another node said (`health`)
    /// that it led. A lower bound: a new leader that aborted at its crash point before it
    /// answered is not counted. In the others the restarted node took the lead back.
    pub lead_moves: usize,
    /// The longest failover: the leader's SIGKILL → the next live gateway session.
    pub longest_failover: Option<Duration>,
    /// Cluster faults planned, and injected (a skew without libfaketime is skipped).
    pub cluster_faults_planned: usize,
    pub cluster_faults_injected: usize,
    /// What each cluster fault did, in order.
    pub injected: Vec<String>,
    /// Whether the stand-in de-duplicated creates by nonce.
    pub dedup: bool,
    /// `cluster.failover_secs`.
    pub failover_secs: u64,
    /// Per fault kind, then `none`: only in cluster mode.
    pub fault_rows: Vec<FaultRow>,
    /// The whole run (in cluster mode), from the first live session to the end of the faults.
    pub longest_no_leader: Option<Duration>,
    pub longest_two_sessions: Option<Duration>,
    /// Messages created with a nonce already used in their channel.
    pub nonce_reuses: usize,
    /// Ballots that counted though no click of theirs got its callback within 3 s (all of the
    /// run); and those where Discord itself failed or held the callback (injected), not counted
    /// in the former.
    pub told_failed_counted: usize,
    pub told_failed_by_discord: usize,
    pub elapsed: Duration,
    /// What went wrong, one line each; empty on a clean run. Anything here fails the run.
    pub problems: Vec<String>,
    /// Worth knowing but not a failure.
    pub notes: Vec<String>,
    /// The work directory, when it was kept.
    pub workdir: Option<PathBuf>,
}

impl ChaosReport {
    /// The bar: the four zeros, every request answered, every question posted, every planned
    /// kill done, and no problem seen by the harness.
    pub fn ok(&self) -> bool {
        self.duplicates_posted == self.duplicates_within_bound
            && self.answers_lost == 0
            && self.ended_twice == 0
            && self.wrong_answers == 0
            && self.answered == self.requests
            && self.unfinished == 0
            && self.questions_posted == self.questions
            && self.kills >= self.kills_planned
            && self.bodies_invalid == 0
            && self.quorum_violations == 0
            && self.settled_twice == 0
            && self.problems.is_empty()
            && self.cluster_faults_ok()
    }

    /// The bars of the cluster faults: every one planned was injected (a skipped skew is not
    /// planned), no stretch without a leader in a fault's window longer than its bar, and no
    /// click there told "failed" that counted.
    pub fn cluster_faults_ok(&self) -> bool {
        self.cluster_faults_injected >= self.cluster_faults_planned
            && self
                .fault_rows
                .iter()
                .filter(|r| r.kind != "none")
                .all(|r| r.over_bar == 0 && r.told_failed_counted == 0)
    }

    pub fn print(&self) {
        println!("{}", self.render());
    }

    /// The report as text, as [`ChaosReport::print`] shows it.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let mut row = |name: &str, value: String, bar: &str| {
            out.push_str(&format!("  {name:<24}{value:>10}{bar}\n"));
        };
        let zero = |n: usize| {
            if n == 0 {
                "   (bar: 0)"
            } else {
                "   (bar: 0) FAILED"
            }
        };
        row("requests", self.requests.to_string(), "");
        row("questions", self.questions.to_string(), "");
        row("questions posted", self.questions_posted.to_string(), "");
        row("escalation copies", self.copies_posted.to_string(), "");
        row(
            "duplicates posted",
            self.duplicates_posted.to_string(),
            zero(self.duplicates_posted - self.duplicates_within_bound),
        );
        if self.duplicates_within_bound > 0 {
            row(
                "  within the bound",
                self.duplicates_within_bound.to_string(),
                "",
            );
        }
        row(
            "answers lost",
            self.answers_lost.to_string(),
            zero(self.answers_lost),
        );
        row(
            "requests ended twice",
            self.ended_twice.to_string(),
            zero(self.ended_twice),
        );
        row(
            "wrong answers",
            self.wrong_answers.to_string(),
            zero(self.wrong_answers),
        );
        row(
            "invalid bodies",
            format!("{}/{}", self.bodies_invalid, self.bodies_checked),
            zero(self.bodies_invalid),
        );
        row(
            "settled twice",
            self.settled_twice.to_string(),
            zero(self.settled_twice),
        );
        row(
            "quorum violations",
            self.quorum_violations.to_string(),
            zero(self.quorum_violations),
        );
        row("answered", self.answered.to_string(), "");
        row("unfinished", self.unfinished.to_string(), "");
        row("peak in flight", self.peak_pending.to_string(), "");
        row(
            "kills (SIGKILL)",
            format!("{}/{}", self.kills, self.kills_planned),
            "",
        );
        row("crash-point aborts", self.crash_aborts.to_string(), "");
        row("restarts", self.restarts.to_string(), "");
        row("injected 5xx", self.injected_5xx.to_string(), "");
        row("injected 429", self.injected_429.to_string(), "");
        row("gateway drops", self.gateway_drops.to_string(), "");
        row("hung calls (stalls)", self.stalls.to_string(), "");
        row("re-attaches", self.reattaches.to_string(), "");
        row("quorum requests", self.quorum_requests.to_string(), "");
        row("quorum questions", self.quorum_questions.to_string(), "");
        row("  ballots planned", self.ballots_planned.to_string(), "");
        row("  votes counted", self.votes.to_string(), "");
        row(
            "  settled by quorum",
            self.settled_by_quorum.to_string(),
            "",
        );
        row(
            "  settled by decisive",
            self.settled_by_decisive.to_string(),
            "",
        );
        row(
            "  requester refused",
            self.requester_refused.to_string(),
            "",
        );
        row("clicks", self.clicks.to_string(), "");
        row("clicks repeated", self.clicks_repeated.to_string(), "");
        row(
            "messages not edited",
            self.messages_not_edited.to_string(),
            "",
        );
        row(
            "daemon ERROR lines",
            self.daemon_error_lines.to_string(),
            "",
        );
        if self.cluster {
            row("nodes", self.nodes.to_string(), "");
            row("leader kills", self.leader_kills.to_string(), "");
            row("failovers observed", self.failovers.to_string(), "");
            row("  to another node", self.lead_moves.to_string(), "");
            row(
                "longest failover",
                self.longest_failover
                    .map_or("-".into(), |d| format!("{:.2} s", d.as_secs_f64())),
                "",
            );
            let secs =
                |d: Option<Duration>| d.map_or("-".into(), |d| format!("{:.2} s", d.as_secs_f64()));
            row("failover_secs", self.failover_secs.to_string(), "");
            row("longest without leader", secs(self.longest_no_leader), "");
            row("longest two sessions", secs(self.longest_two_sessions), "");
            row(
                "nonce de-duplication",
                if self.dedup { "on" } else { "off" }.into(),
                "",
            );
            row("nonce reuses", self.nonce_reuses.to_string(), "");
            row(
                "told failed, counted",
                self.told_failed_counted.to_string(),
                "",
            );
            row(
                "  (Discord's own faults)",
                self.told_failed_by_discord.to_string(),
                "",
            );
            if self.cluster_faults_planned > 0 {
                row(
                    "cluster faults",
                    format!(
                        "{}/{}",
                        self.cluster_faults_injected, self.cluster_faults_planned
                    ),
                    "",
                );
            }
        }
        row(
            "elapsed",
            format!("{:.1} s", self.elapsed.as_secs_f64()),
            "",
        );
        if !self.fault_rows.is_empty() {
            out.push_str(&self.render_fault_rows());
        }
        let mut text = if self.cluster {
            format!(
                "askrelay chaos run, seed {}, {} node(s) on {}\n{out}",
                self.seed, self.nodes, self.database
            )
        } else {
            format!("askrelay chaos run, seed {}\n{out}", self.seed)
        };
        const SHOWN: usize = 40;
        for p in self.problems.iter().take(SHOWN) {
            text.push_str(&format!("problem: {p}\n"));
        }
        if self.problems.len() > SHOWN {
            text.push_str(&format!(
                "problem: ... and {} more (see `problems`)\n",
                self.problems.len() - SHOWN
            ));
        }
        for n in &self.notes {
            text.push_str(&format!("note: {n}\n"));
        }
        if let Some(dir) = &self.workdir {
            let what = if self.cluster {
                "node-<i>.log, one per node"
            } else {
                "daemon.log, askrelay.db"
            };
            text.push_str(&format!(
                "work directory kept: {} ({what})\n",
                dir.display()
            ));
        }
        text.push_str(if self.ok() {
            "RESULT: PASS"
        } else {
            "RESULT: FAIL"
        });
        text
    }
}

impl ChaosReport {
    /// The table of the cluster faults: one row per kind, then `none` (the rest of the run).
    /// The bars: no-leader stretches within the bar, 0 clicks told "failed" that counted, and
    /// (for every row, as in the totals) 0 duplicates, lost, settled twice and wrong.
    fn render_fault_rows(&self) -> String {
        let mut out = String::from(
            "  per fault kind   faults  no leader (bar)         two sessions  dups  nonce  lost  \
             settled2x  wrong  told-failed-counted\n",
        );
        for r in &self.fault_rows {
            let bar = r
                .bar
                .map_or(String::new(), |b| format!("(<= {:.2} s)", b.as_secs_f64()));
            let failed = r.kind != "none" && (r.over_bar > 0 || r.told_failed_counted > 0);
            out.push_str(&format!(
                "    {:<14}{:>6}  {:>7.2} s {:<14}{:>9.2} s {:>5} {:>6} {:>5} {:>10} {:>6} {:>20}{}\n",
                r.kind,
                r.injected,
                r.longest_no_leader.as_secs_f64(),
                bar,
                r.longest_two_sessions.as_secs_f64(),
                r.duplicates,
                r.nonce_reuses,
                r.lost,
                r.settled_twice,
                r.wrong,
                r.told_failed_counted,
                if failed { "  FAILED" } else { "" }
            ));
        }
        for i in &self.injected {
            out.push_str(&format!("    fault: {i}\n"));
        }
        out
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

// ---------------------------------------------------------------------------------------------
// The plan: requests, questions and the answer the clicker gives each question

/// Who clicks: index 0 is the clicker of the first-wins questions, [`POOL`] the distinct
/// people who vote on the quorum routes, and [`REQUESTER`] the person who asked (its Discord
/// account is mapped to the harness's own uid by an `[[identities]]` entry, so a quorum route
/// must refuse it).
const POOL: std::ops::RangeInclusive<usize> = 1..=6;
const REQUESTER: usize = 7;

/// The clickers, by the index a ballot names.
fn people() -> Vec<Clicker> {
    let mut all = vec![Clicker::new(4_200_001, "chaos-clicker", &[])];
    for i in POOL {
        all.push(Clicker::new(
            4_200_100 + i as u64,
            &format!("voter-{i}"),
            &[],
        ));
    }
    all.push(Clicker::new(REQUESTER_DISCORD_ID, "requester", &[]));
    all
}

/// The Discord account of the person who asked (see [`REQUESTER`]).
const REQUESTER_DISCORD_ID: u64 = 4_200_099;

/// What the daemon should make of a ballot.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Expect {
    /// It settles the question (a first-wins click, the vote that completes the quorum, or a
    /// decisive label).
    Settles,
    /// A vote that does not settle yet.
    Votes,
    /// Refused: the requester on a quorum route.
    Refused,
}

/// One person's click (or draft and Submit) on a question.
#[derive(Clone, Debug)]
struct Ballot {
    /// Into [`people`].
    who: usize,
    /// The option indices chosen.
    pick: Vec<usize>,
    expect: Expect,
}

struct PlannedQuestion {
    id: String,
    labels: Vec<String>,
    multi: bool,
    /// The option indices the question settles with, in option order.
    expected: Vec<usize>,
    /// Whether `expected` is a decisive label (settles with one vote on a quorum route).
    decisive: bool,
    /// The clicks, in order: one on a first-wins route; on a quorum route maybe the requester
    /// (refused) and a dissenting vote, then enough distinct voters (or one decisive vote).
    ballots: Vec<Ballot>,
}

struct PlannedRequest {
    request_id: String,
    questions: Vec<PlannedQuestion>,
    ask_line: String,
    /// The exact `result` an `answered` line must carry.
    expected_result: String,
    /// The approvals its route needs: 1 (first wins), 2 or 3 (the quorum routes).
    approvals: usize,
}

/// The labels that settle with one vote on a quorum route: the front doors' "Deny" on both,
/// and `decisive_labels = ["Hold"]` on `quorum-3`. They repeat across questions, so they never
/// tell the clicker which question a message is.
const DECISIVE: [&str; 2] = ["Deny", "Hold"];

fn make_plan(cfg: &ChaosConfig, rng: &mut Rng) -> Vec<PlannedRequest> {
    (0..cfg.requests)
        .map(|i| {
            let request_id = format!("chaos-{}-{i:04}", cfg.seed);
            // Of the requests that do not escalate (every third does), 4 in 10 go to the route
            // that needs two approvals and 2 in 10 to the one that needs three: about 27 % and
            // 13 % of all.
            let approvals = if i % 3 == 0 {
                1
            } else {
                match rng.below(10) {
                    0..=3 => 2,
                    4..=5 => 3,
                    _ => 1,
                }
            };
            let count = rng.between(1, 3) as usize;
            let questions: Vec<PlannedQuestion> = (0..count)
                .map(|qi| plan_question(&request_id, qi, approvals, rng))
                .collect();
            let qs: Vec<Value> = questions
                .iter()
                .enumerate()
                .map(|(qi, q)| {
                    let options: Vec<Value> = q
                        .labels
                        .iter()
                        .map(|l| json!({"label": l, "description": format!("Pick {l}")}))
                        .collect();
                    json!({
                        "id": q.id,
                        "question": format!("Chaos question {qi} of {request_id}?"),
                        "header": format!("Chaos {qi}"),
                        "options": options,
                        "multiSelect": q.multi,
                    })
                })
                .collect();
            let scope = match approvals {
                1 if i % 3 == 0 => json!({"project": "chaos", "escalate": "yes"}),
                1 => json!({"project": "chaos"}),
                n => json!({"project": "chaos", "quorum": n.to_string()}),
            };
            let ask = json!({
                "op": "ask",
                "request_id": request_id,
                "caller": {"agent_id": "chaos-agent", "owner_agent_id": null},
                "scope": scope,
                "questions": qs,
            });
            let answers: Vec<Value> = questions
                .iter()
                .map(|q| {
                    let selected: Vec<&str> =
                        q.expected.iter().map(|&o| q.labels[o].as_str()).collect();
                    json!({"id": q.id, "selected": selected})
                })
                .collect();
            PlannedRequest {
                ask_line: format!("{ask}\n"),
                expected_result: json!({ "answers": answers }).to_string(),
                request_id,
                questions,
                approvals,
            }
        })
        .collect()
}

fn plan_question(request_id: &str, qi: usize, approvals: usize, rng: &mut Rng) -> PlannedQuestion {
    let quorum = approvals > 1;
    // On a quorum route, half the questions end in a decisive label, and half of those are
    // settled by it (one vote); a decisive answer is a single choice.
    let has_decisive = quorum && rng.chance(1, 2);
    let decisive = has_decisive && rng.chance(1, 2);
    let multi = !decisive && rng.chance(1, 4);
    // 2–5 options are buttons, 6–8 a select menu; multi-select is a menu.
    let n = if multi {
        rng.between(2, 6)
    } else {
        rng.between(2, 8)
    } as usize;
    let recommended = rng.chance(1, 2);
    // "Hold" is decisive on quorum-3 only.
    let decisive_label = if approvals == 3 && rng.chance(1, 2) {
        DECISIVE[1]
    } else {
        DECISIVE[0]
    };
    let labels: Vec<String> = (0..n)
        .map(|o| {
            if has_decisive && o == n - 1 {
                return decisive_label.to_owned();
            }
            let tag = if o == 0 && recommended {
                " (Recommended)"
            } else {
                ""
            };
            format!("{request_id} q{qi} o{o}{tag}")
        })
        .collect();
    // The options a vote may pick without deciding alone.
    let plain = if has_decisive { n - 1 } else { n };
    let expected = if decisive {
        vec![n - 1]
    } else if multi {
        (0..plain).filter(|_| rng.chance(1, 2)).collect()
    } else {
        vec![rng.below(plain as u64) as usize]
    };
    let mut ballots = Vec::new();
    if !quorum {
        ballots.push(Ballot {
            who: 0,
            pick: expected.clone(),
            expect: Expect::Settles,
        });
    } else {
        // The voters: distinct people of the pool, in a random order.
        let mut pool: Vec<usize> = POOL.collect();
        for k in (1..pool.len()).rev() {
            pool.swap(k, rng.below(k as u64 + 1) as usize);
        }
        let mut pool = pool.into_iter();
        if rng.chance(1, 4) {
            ballots.push(Ballot {
                who: REQUESTER,
                pick: expected.clone(),
                expect: Expect::Refused,
            });
        }
        // A vote for another plain option first: it must not count towards the quorum.
        if !decisive && !multi && plain >= 2 && rng.chance(1, 3) {
            let other = (expected[0] + 1 + rng.below(plain as u64 - 1) as usize) % plain;
            ballots.push(Ballot {
                who: pool.next().expect("a voter"),
                pick: vec![other],
                expect: Expect::Votes,
            });
        }
        let voters = if decisive { 1 } else { approvals };
        for k in 0..voters {
            ballots.push(Ballot {
                who: pool.next().expect("a voter"),
                pick: expected.clone(),
                expect: if k + 1 == voters {
                    Expect::Settles
                } else {
                    Expect::Votes
                },
            });
        }
    }
    PlannedQuestion {
        id: format!("q{qi}"),
        labels,
        multi,
        expected,
        decisive,
        ballots,
    }
}

// ---------------------------------------------------------------------------------------------
// State shared by the tasks

#[derive(Default)]
struct ReqState {
    /// Every final line the client saw, in order.
    finals: Vec<String>,
    /// The final line of the re-attach at the very end.
    replay: Option<String>,
    /// Final lines that came after a first one on the same connection.
    second_on_same_connection: usize,
    connects: usize,
    accepted: usize,
    finished: bool,
    /// Anything odd the client saw.
    odd: Vec<String>,
}

struct Shared {
    t0: Instant,
    verbose: bool,
    reqs: Mutex<Vec<ReqState>>,
    /// Starts of any node so far (1 after the first): a click sent before the last start may
    /// have gone to a process that is gone.
    epoch: AtomicU64,
    /// Requests whose client has a final line.
    finished: watch::Sender<usize>,
    /// What the clicker saw: (questions with a message, questions known to be settled). The
    /// kill points are thresholds on the sum, so about half fall while questions are posted
    /// and half while they are clicked.
    progress: watch::Sender<(usize, usize)>,
    /// Set once every request has a final line (or the deadline passed): the monkey does its
    /// last kills, the clicker and the fault task stop.
    all_done: watch::Sender<bool>,
    /// Set at the very end: the clients stop reading.
    stop: watch::Sender<bool>,
    problems: Mutex<Vec<String>>,
    notes: Mutex<Vec<String>>,
    kills: AtomicUsize,
    crash_aborts: AtomicUsize,
    restarts: AtomicUsize,
    gateway_drops: AtomicUsize,
    stalls: AtomicUsize,
    clicks: AtomicUsize,
    clicks_repeated: AtomicUsize,
    daemon_error_lines: AtomicUsize,
    daemon_errors: Mutex<Vec<String>>,
    fatal: AtomicBool,
    leader_kills: AtomicUsize,
    /// Failovers after which another node than the killed one led.
    lead_moves: AtomicUsize,
    /// Each leader kill's failover time, once the next gateway session was live.
    failovers: Mutex<Vec<Duration>>,
    /// The tasks timing failovers; the report waits for them.
    failover_watches: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    /// Every click by interaction id: when it reached a gateway session and what Discord heard
    /// back, for "told failed, counted".
    click_log: Mutex<HashMap<u64, ClickRec>>,
}

/// One click (interaction) and its callbacks.
struct ClickRec {
    iid: u64,
    request: usize,
    question: usize,
    ballot: usize,
    step: Step,
    /// When the stand-in handed it to a live gateway session: Discord's 3 s start then.
    dispatched: Option<Instant>,
    /// When the first successful type 7 or 6 callback (the message updated, or its update deferred: the vote shown or the
    /// question settled) came.
    updated: Option<Instant>,
    /// When the first other successful callback came that says nothing failed: a private
    /// "Already answered" or "you already voted" (type 4), or a form (type 9). Discord tells
    /// the person the interaction failed only when no callback comes within 3 s.
    replied: Option<Instant>,
    /// Discord itself failed (injected 5xx or 429) or held (a stall) a callback of it.
    discord_failed: bool,
}

impl ClickRec {
    /// Notes a callback of this click, as Discord hears it.
    fn note_callback(&mut self, r: &Recorded) {
        let at = Instant::from_std(r.at);
        let ok = (200..300).contains(&r.status);
        if r.status == 429 || r.status >= 500 {
            self.discord_failed = true;
        } else if ok
            // An update (7), or a deferred update (6) that the edit follows: either keeps
            // Discord from telling the person the interaction failed.
            && matches!(r.body.as_ref().and_then(|b| b["type"].as_u64()), Some(6 | 7))
        {
            self.updated = Some(self.updated.map_or(at, |u| u.min(at)));
        } else if ok {
            let text = r.body.as_ref().map_or(String::new(), |b| {
                b["data"]["content"].as_str().unwrap_or_default().to_owned()
            });
            let failed = ["could not be saved", "could not save", "was not saved"]
                .iter()
                .any(|f| text.contains(f));
            if !failed {
                self.replied = Some(self.replied.map_or(at, |u| u.min(at)));
            }
        }
    }
}

impl Shared {
    fn log(&self, what: impl AsRef<str>) {
        if self.verbose {
            eprintln!(
                "[chaos {:>7.2}s] {}",
                self.t0.elapsed().as_secs_f64(),
                what.as_ref()
            );
        }
    }

    fn problem(&self, what: String) {
        self.log(format!("PROBLEM: {what}"));
        let mut p = self.problems.lock().unwrap();
        if !p.contains(&what) {
            p.push(what);
        }
    }

    fn note(&self, what: String) {
        self.log(format!("note: {what}"));
        let mut n = self.notes.lock().unwrap();
        if !n.contains(&what) {
            n.push(what);
        }
    }

    fn fatal(&self, what: String) {
        self.problem(what);
        self.fatal.store(true, Ordering::SeqCst);
        self.all_done.send_replace(true);
    }

    fn is_fatal(&self) -> bool {
        self.fatal.load(Ordering::SeqCst)
    }

    /// Records a final line for request `i`; `again` when the same connection already had one.
    fn record_final(&self, i: usize, line: &str, again: bool) {
        let first = {
            let mut reqs = self.reqs.lock().unwrap();
            let r = &mut reqs[i];
            r.finals.push(line.to_owned());
            if again {
                r.second_on_same_connection += 1;
            }
            let first = !r.finished;
            r.finished = true;
            first
        };
        if first {
            self.finished.send_modify(|n| *n += 1);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The daemon process

struct DaemonCtl {
    bin: PathBuf,
    socket: PathBuf,
    db_url: String,
    base_url: String,
    /// Its cluster node id (`cluster.node_id`), the same across its restarts; `None` alone on
    /// SQLite.
    node: Option<String>,
    log: Arc<Mutex<std::fs::File>>,
    child: Option<Child>,
    crash_at: Option<&'static str>,
    /// Set by the log reader when this instance said it aborts at its crash point.
    aborted_on_purpose: Arc<AtomicBool>,
    /// The task copying this instance's stderr to the log; it ends at the process's exit.
    pump: Option<tokio::task::JoinHandle<()>>,
    started_at: Instant,
    instance: u64,
    /// Set by the log reader while this instance says it leads the cluster ("leading the
    /// cluster" until "stepping down"): where the leader is when `health` does not answer.
    leading: Arc<AtomicBool>,
    /// What the cluster fault task needs of this node (pid, skew, proxy).
    handle: Arc<NodeHandle>,
    /// `cluster.failover_secs`, when the run sets it.
    failover_secs: Option<u64>,
    shared: Arc<Shared>,
}

impl DaemonCtl {
    /// How its log lines and messages name an instance: `#3`, or `node-2 #3` in a cluster.
    fn name(&self, instance: u64) -> String {
        match &self.node {
            Some(node) => format!("{node} #{instance}"),
            None => format!("#{instance}"),
        }
    }

    /// Starts `askrelay serve` and waits (bounded) until it says it listens.
    async fn start(&mut self, crash_at: Option<&'static str>) -> Result<(), String> {
        self.instance += 1;
        let n = self.instance;
        let name = self.name(n);
        self.shared.epoch.fetch_add(1, Ordering::SeqCst);
        let mut cmd = Command::new(&self.bin);
        cmd.arg("serve")
            .arg("--config")
            .arg(self.socket.with_file_name("chaos.toml"))
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("ASKRELAY_SOCKET_PATH", &self.socket)
            .env("ASKRELAY_DATABASE_URL", &self.db_url)
            .env(
                "ASKRELAY_DISCORD__TOKEN",
                "MTE4MDAwMDAwMDAwMDAwMDAwMQ.Gx1234.chaos-bot-token",
            )
            .env("ASKRELAY_DISCORD__API_BASE", &self.base_url)
            .env("ASKRELAY_DISCORD__CHANNEL_ID", CHANNEL.to_string())
            .env("ASKRELAY_DISCORD__RETRY_MAX_DELAY_MS", "200")
            // Short deadlines, so that the stall faults (longer than these) are met as
            // hung calls.
            .env(
                "ASKRELAY_DISCORD__REQUEST_TIMEOUT_MS",
                STALL_DEADLINE.as_millis().to_string(),
            )
            .env("ASKRELAY_DISCORD__CALLBACK_TIMEOUT_MS", "300")
            .env("ASKRELAY_DISCORD__REPAIR_INTERVAL_SECS", "1")
            .env("ASKRELAY_CANCEL_GRACE_SECS", "600")
            .env("ASKRELAY_RESTART_GRACE_SECS", "3600")
            .env("ASKRELAY_TERMINAL__ENABLED", "false")
            .env("ASKRELAY_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if let Some(node) = &self.node {
            cmd.env("ASKRELAY_CLUSTER__NODE_ID", node);
            if let Some(secs) = self.failover_secs {
                cmd.env("ASKRELAY_CLUSTER__FAILOVER_SECS", secs.to_string());
            }
        }
        if let Some(file) = &self.handle.faketime {
            // Under libfaketime, with the offset in a file the skew fault rewrites (read again
            // every second). The monotonic clock stays true: only the wall clock (what a lease
            // on local time would read) moves.
            cmd.env("LD_PRELOAD", FAKETIME_LIB)
                .env("FAKETIME_TIMESTAMP_FILE", file)
                .env(
                    "FAKETIME_CACHE_DURATION",
                    cluster_faults::FAKETIME_CACHE.as_secs().to_string(),
                )
                .env("FAKETIME_DONT_FAKE_MONOTONIC", "1");
        }
        if let Some(point) = crash_at {
            cmd.env(askrelay::crash::ENV, point);
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", self.bin.display()))?;
        let pid = child.id().unwrap_or(0);
        self.handle.pid.store(pid, Ordering::SeqCst);
        self.shared.log(format!(
            "daemon {name} started (pid {pid}{})",
            crash_at.map_or(String::new(), |p| format!(", crash point {p}"))
        ));
        let stderr = child.stderr.take().expect("stderr is piped");
        let (listening_tx, listening_rx) = oneshot::channel::<()>();
        let aborted = Arc::new(AtomicBool::new(false));
        self.aborted_on_purpose = aborted.clone();
        let leading = Arc::new(AtomicBool::new(false));
        self.leading = leading.clone();
        *self.handle.leading.lock().unwrap() = leading.clone();
        let log = self.log.clone();
        let shared = self.shared.clone();
        {
            let mut f = log.lock().unwrap();
            let _ = writeln!(
                f,
                "[{name}] ===== start (pid {pid}, crash point {crash_at:?}) ====="
            );
        }
        self.pump = Some(tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            let mut listening = Some(listening_tx);
            while let Ok(Some(line)) = lines.next_line().await {
                if line.contains(": listening") {
                    if let Some(tx) = listening.take() {
                        let _ = tx.send(());
                    }
                }
                if line.contains("aborting here on purpose") {
                    aborted.store(true, Ordering::SeqCst);
                }
                if line.contains("leading the cluster") {
                    leading.store(true, Ordering::SeqCst);
                } else if line.contains("stepping down") {
                    leading.store(false, Ordering::SeqCst);
                }
                if line.contains(" ERROR ") {
                    shared.daemon_error_lines.fetch_add(1, Ordering::Relaxed);
                    let mut e = shared.daemon_errors.lock().unwrap();
                    if e.len() < 10 {
                        e.push(format!("{name}: {line}"));
                    }
                }
                let mut f = log.lock().unwrap();
                let _ = writeln!(f, "[{name}] {line}");
            }
        }));
        self.child = Some(child);
        self.crash_at = crash_at;
        self.started_at = Instant::now();
        match timeout(START_LIMIT, listening_rx).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) => {
                let status = self.reap().await;
                Err(format!(
                    "daemon {} exited before listening ({status})",
                    self.name(n)
                ))
            }
            Err(_) => {
                self.kill().await;
                Err(format!(
                    "daemon {} did not say \"listening\" within {} s",
                    self.name(n),
                    START_LIMIT.as_secs()
                ))
            }
        }
    }

    /// Waits for an exiting child (bounded) and describes how it ended.
    async fn reap(&mut self) -> String {
        let Some(mut child) = self.child.take() else {
            return "not running".into();
        };
        self.handle.pid.store(0, Ordering::SeqCst);
        match timeout(Duration::from_secs(10), child.wait()).await {
            Ok(Ok(s)) => describe(s),
            Ok(Err(e)) => format!("wait failed: {e}"),
            Err(_) => {
                let _ = child.start_kill();
                let _ = timeout(Duration::from_secs(10), child.wait()).await;
                "did not exit; killed".into()
            }
        }
    }

    /// SIGKILL and wait until the process is gone.
    async fn kill(&mut self) {
        if let Some(child) = self.child.as_mut() {
            let _ = child.start_kill();
        }
        let status = self.reap().await;
        self.shared.log(format!(
            "daemon {} killed ({status})",
            self.name(self.instance)
        ));
    }

    /// SIGTERM, and SIGKILL if it does not stop in time. Returns a problem if it did not stop
    /// cleanly.
    async fn terminate(&mut self) -> Option<String> {
        let child = self.child.as_mut()?;
        let pid = child.id()?;
        let name = self.name(self.instance);
        let sent = std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status();
        if !sent.is_ok_and(|s| s.success()) {
            self.kill().await;
            return Some(format!("cannot send SIGTERM to daemon {name}"));
        }
        let mut child = self.child.take().expect("checked above");
        self.handle.pid.store(0, Ordering::SeqCst);
        match timeout(STOP_LIMIT, child.wait()).await {
            Ok(Ok(s)) if s.success() => None,
            Ok(Ok(s)) => Some(format!(
                "daemon {name} ended badly after SIGTERM: {}",
                describe(s)
            )),
            Ok(Err(e)) => Some(format!("waiting for daemon {name}: {e}")),
            Err(_) => {
                let _ = child.start_kill();
                let _ = timeout(Duration::from_secs(10), child.wait()).await;
                Some(format!(
                    "daemon {name} did not stop within {} s of SIGTERM",
                    STOP_LIMIT.as_secs()
                ))
            }
        }
    }

    /// Whether this instance leads its cluster now: what its `health` says, or, when it does
    /// not answer in time, what its log last said.
    async fn is_leader(&self) -> bool {
        if self.child.is_none() {
            return false;
        }
        match says_it_leads(&self.socket).await {
            Some(leads) => leads,
            None => self.leading.load(Ordering::SeqCst),
        }
    }
}

/// Whether the daemon on `socket` says (`health`) that it leads its cluster; `None` when it
/// does not answer within [`HEALTH_LIMIT`].
async fn says_it_leads(socket: &Path) -> Option<bool> {
    let asked = timeout(HEALTH_LIMIT, async {
        let mut c = Client::connect(socket).await.ok()?;
        match c.call(&Op::Health).await.ok()? {
            Event::Health(h) => Some(h),
            _ => None,
        }
    })
    .await;
    match asked {
        Ok(Some(h)) => Some(h.cluster.is_some_and(|c| c.role == "leader")),
        _ => None,
    }
}

fn describe(s: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (s.code(), s.signal()) {
        (Some(c), _) => format!("exit code {c}"),
        (None, Some(sig)) => format!("signal {sig}"),
        _ => "unknown status".into(),
    }
}

// ---------------------------------------------------------------------------------------------
// The monkey: SIGKILL at random points, restart at once (a killed leader, at times, later)

struct Monkey {
    /// One per node (a single one on SQLite).
    ds: Vec<DaemonCtl>,
    rng: Rng,
    crash_points: bool,
    /// How many questions the plan has.
    questions: usize,
    shared: Arc<Shared>,
    deadline: Instant,
    /// In cluster mode, the stand-in: it shows when the next leader's gateway session is live.
    cluster: Option<StandIn>,
    /// Set once the cluster faults are all injected and undone (at once without any): the
    /// monkey keeps restarting nodes until then, a skewed node's restarts included.
    faults_done: watch::Receiver<bool>,
}

enum Wake {
    /// The instance of node `.0` exited.
    Exited(usize, std::io::Result<ExitStatus>),
    Ready,
    Deadline,
}

/// The first node but `down` whose instance exits: at once for one that is not running.
async fn any_exit(
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
async fn until(standin: &StandIn, cond: impl Fn(&StandIn) -> bool) {
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
    async fn run(mut self, thresholds: Vec<usize>) -> Vec<DaemonCtl> {
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

// ---------------------------------------------------------------------------------------------
// Clients: ask, re-attach after every restart, record the final lines

/// The socket of the node request `i` asks on: requests are dealt to the nodes in turn, and
/// each stays with its node (it owns the request).
fn node_socket(sockets: &[PathBuf], i: usize) -> &Path {
    &sockets[i % sockets.len()]
}

async fn client(
    i: usize,
    line: String,
    socket: PathBuf,
    shared: Arc<Shared>,
    mut rng: Rng,
    start: Instant,
) {
    let mut stop = shared.stop.subscribe();
    tokio::select! {
        _ = sleep_until(start) => {}
        _ = stop.wait_for(|&s| s) => return,
    }
    let mut backoff = 10u64;
    loop {
        if *stop.borrow() {
            return;
        }
        let connected = timeout(Duration::from_secs(5), Client::connect(&socket)).await;
        let mut c = match connected {
            Ok(Ok(c)) => c,
            _ => {
                let wait = Duration::from_millis(backoff + rng.below(backoff / 2 + 1));
                backoff = (backoff * 2).min(300);
                tokio::select! {
                    _ = sleep(wait) => continue,
                    _ = stop.wait_for(|&s| s) => return,
                }
            }
        };
        if c.send_raw(line.as_bytes()).await.is_err() {
            continue;
        }
        shared.reqs.lock().unwrap()[i].connects += 1;
        let mut final_here = false;
        loop {
            let got = tokio::select! {
                r = c.recv_line() => r,
                _ = stop.wait_for(|&s| s) => return,
            };
            let text = match got {
                Ok(Some(t)) => t,
                Ok(None) | Err(_) => break,
            };
            let v: Value = match serde_json::from_str(&text) {
                Ok(v) => v,
                Err(_) => {
                    shared.reqs.lock().unwrap()[i]
                        .odd
                        .push(format!("not JSON: {text}"));
                    continue;
                }
            };
            match v["event"].as_str() {
                Some("accepted") => {
                    backoff = 10;
                    let mut reqs = shared.reqs.lock().unwrap();
                    reqs[i].accepted += 1;
                    if final_here {
                        reqs[i]
                            .odd
                            .push(format!("accepted after the final line: {text}"));
                    }
                }
                Some("answered") | Some("error") => {
                    shared.record_final(i, &text, final_here);
                    final_here = true;
                }
                // A graceful stop (a cluster node restarted without its crash point): the
                // request stays pending, the connection closes, and the client re-attaches.
                Some("shutting_down") if !final_here => {}
                _ => shared.reqs.lock().unwrap()[i]
                    .odd
                    .push(format!("unexpected line: {text}")),
            }
        }
        if final_here || shared.reqs.lock().unwrap()[i].finished {
            return;
        }
        let wait = Duration::from_millis(backoff + rng.below(backoff / 2 + 1));
        backoff = (backoff * 2).min(300);
        tokio::select! {
            _ = sleep(wait) => {}
            _ = stop.wait_for(|&s| s) => return,
        }
    }
}

/// At the end: every request once more, on its node; an ended request replays its final line
/// only.
async fn replay_all(plan: &Arc<Vec<PlannedRequest>>, sockets: &[PathBuf], shared: &Arc<Shared>) {
    let mut tasks = Vec::new();
    for i in 0..plan.len() {
        let plan = plan.clone();
        let socket = node_socket(sockets, i).to_path_buf();
        let shared = shared.clone();
        tasks.push(tokio::spawn(async move {
            let rid = plan[i].request_id.clone();
            let work = async {
                let mut c = Client::connect(&socket)
                    .await
                    .map_err(|e| format!("cannot connect: {e}"))?;
                c.send_raw(plan[i].ask_line.as_bytes())
                    .await
                    .map_err(|e| format!("cannot send: {e}"))?;
                let mut seen = Vec::new();
                loop {
                    match c.recv_line().await {
                        Ok(Some(text)) => {
                            let v: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
                            match v["event"].as_str() {
                                Some("answered") | Some("error") => return Ok((text, seen)),
                                _ => seen.push(text),
                            }
                        }
                        Ok(None) => return Err(format!("the connection closed after {seen:?}")),
                        Err(e) => return Err(format!("{e:#}")),
                    }
                }
            };
            match timeout(REPLAY_LIMIT, work).await {
                Ok(Ok((text, before))) => {
                    if !before.is_empty() {
                        shared.problem(format!(
                            "{rid}: the re-attach after the end got {before:?} before its final line \
                             (an ended request replays its final line only)"
                        ));
                    }
                    let mut reqs = shared.reqs.lock().unwrap();
                    reqs[i].replay = Some(text);
                }
                Ok(Err(e)) => shared.problem(format!("{rid}: the final re-attach failed: {e}")),
                Err(_) => shared.problem(format!(
                    "{rid}: the final re-attach got no final line within {} s",
                    REPLAY_LIMIT.as_secs()
                )),
            }
        }));
    }
    for t in tasks {
        if let Err(e) = t.await {
            shared.problem(format!("a re-attach task failed: {e}"));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The clicker

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Step {
    /// Multi-select only: record the draft (the select menu).
    Draft,
    /// The click that settles: a button, a single-select pick, or "Submit".
    Settle,
}

enum Kind {
    Button(String),
    SelectOne(String, String),
    Multi {
        draft: String,
        submit: String,
        values: Vec<String>,
    },
}

struct InFlight {
    iid: u64,
    epoch: u64,
    sent: Instant,
}

struct Target {
    token: String,
    channel: u64,
    message: u64,
    /// The control of each ballot of the question, in the plan's order.
    kinds: Vec<Kind>,
    /// The ballot being clicked; the question is done after the last.
    ballot: usize,
    step: Step,
    not_before: Instant,
    inflight: Option<InFlight>,
    confirmed: bool,
    /// The request ended without an answer: nothing more to click.
    dead: bool,
    /// A draft whose save was slow (its update deferred): the person reads its follow-up
    /// ("saved", or "could not save, try again") before pressing Submit.
    awaiting_draft: Option<u64>,
}

/// How long the person waits for a slow draft's follow-up before choosing again.
const DRAFT_FOLLOW_UP_WAIT: Duration = Duration::from_secs(20);

struct ClickerOut {
    /// (request, question) that got at least one settling click, and when the first was sent.
    settle_clicked: HashMap<(usize, usize), Instant>,
    /// (request, question) → request key, from the messages.
    keys: HashMap<(usize, usize), String>,
}

struct ClickerTask {
    standin: StandIn,
    plan: Arc<Vec<PlannedRequest>>,
    shared: Arc<Shared>,
    rng: Rng,
    click_spread: Duration,
    /// No click before this: the end of the ramp.
    clicks_from: Instant,
    /// Everyone who clicks, by the index a ballot names ([`people`]).
    people: Vec<Clicker>,
    /// Every option label → (request, question, option).
    labels: HashMap<String, (usize, usize, usize)>,
    targets: BTreeMap<(usize, usize), Target>,
    /// Interaction id → (request, question, step, ballot).
    iids: HashMap<u64, (usize, usize, Step, usize)>,
    next_iid: u64,
    message_cursor: usize,
    request_cursor: usize,
    finished_seen: Vec<bool>,
    settle_clicked: HashMap<(usize, usize), Instant>,
    confirmed_count: usize,
    unexpected_replies: usize,
}

impl ClickerTask {
    async fn run(mut self) -> ClickerOut {
        let mut changes = self.standin.subscribe();
        let mut done = self.shared.all_done.subscribe();
        loop {
            if *done.borrow() {
                break;
            }
            self.scan_messages();
            self.scan_requests();
            self.scan_finals();
            self.click_due();
            let now = (self.targets.len(), self.confirmed_count);
            self.shared.progress.send_if_modified(|p| {
                let changed = *p != now;
                *p = now;
                changed
            });
            tokio::select! {
                _ = changes.changed() => {}
                _ = sleep(Duration::from_millis(50)) => {}
                _ = done.wait_for(|&d| d) => {}
            }
            // Let a burst of changes collect before the next scan.
            sleep(Duration::from_millis(5)).await;
        }
        if self.unexpected_replies > 0 {
            self.shared.note(format!(
                "{} interaction replies were neither an acknowledgement nor \"already answered\"",
                self.unexpected_replies
            ));
        }
        ClickerOut {
            settle_clicked: self.settle_clicked,
            keys: self
                .targets
                .iter()
                .map(|(k, t)| (*k, t.token.clone()))
                .collect(),
        }
    }

    /// New messages in the channel: one target per question (the first message for it).
    fn scan_messages(&mut self) {
        let new = self.standin.created_messages_from(self.message_cursor);
        self.message_cursor += new.len();
        for m in new {
            let Some(found) = self.target_of(&m) else {
                continue;
            };
            let (rq, target) = found;
            match self.targets.entry(rq) {
                std::collections::btree_map::Entry::Vacant(e) => {
                    e.insert(target);
                }
                // The question posted again in the same channel (a duplicate; with the
                // stand-in's nonce de-duplication off it stays one): a person would click the
                // newest, and so does the clicker, so that a duplicate shows as a duplicate
                // and not also as a lost answer.
                std::collections::btree_map::Entry::Occupied(mut e) => {
                    let t = e.get_mut();
                    if t.channel == target.channel && !t.confirmed && !t.dead {
                        t.message = target.message;
                    }
                }
            }
        }
    }

    fn target_of(&mut self, m: &Value) -> Option<((usize, usize), Target)> {
        let message: u64 = m["id"].as_str()?.parse().ok()?;
        let channel: u64 = m["channel_id"].as_str()?.parse().ok()?;
        let mut ids: Vec<(custom_id::CustomId, String)> = Vec::new();
        let mut rq = None;
        for row in m["components"].as_array().into_iter().flatten() {
            for c in row["components"].as_array().into_iter().flatten() {
                let Some(raw) = c["custom_id"].as_str() else {
                    continue;
                };
                let Some(id) = custom_id::parse(raw) else {
                    self.shared.problem(format!(
                        "message {message}: a custom_id that does not parse: {raw:?}"
                    ));
                    continue;
                };
                ids.push((id, raw.to_owned()));
                let mut labels: Vec<&str> = c["label"].as_str().into_iter().collect();
                for o in c["options"].as_array().into_iter().flatten() {
                    labels.extend(o["label"].as_str());
                }
                for l in labels {
                    if let Some(&(r, q, _)) = self.labels.get(l) {
                        rq = Some((r, q));
                    }
                }
            }
        }
        let Some((r, q)) = rq else {
            self.shared.problem(format!(
                "message {message} in channel {channel} shows no option of any planned question"
            ));
            return None;
        };
        let pq = &self.plan[r].questions[q];
        let token = ids.first()?.0.token.clone();
        if ids
            .iter()
            .any(|(id, _)| id.token != token || id.question != q)
        {
            self.shared.problem(format!(
                "message {message} for {} question {q} carries custom_ids of another question: {:?}",
                self.plan[r].request_id,
                ids.iter().map(|(_, s)| s).collect::<Vec<_>>()
            ));
        }
        let find = |want: &dyn Fn(Action) -> bool| {
            ids.iter()
                .find(|(id, _)| want(id.action))
                .map(|(_, s)| s.clone())
        };
        let kind_of = |pick: &[usize]| {
            if pq.multi {
                find(&|a| a == Action::Draft)
                    .zip(find(&|a| a == Action::Submit))
                    .map(|(draft, submit)| Kind::Multi {
                        draft,
                        submit,
                        values: pick.iter().map(|o| o.to_string()).collect(),
                    })
            } else if pq.labels.len() <= 5 {
                let want = pick[0];
                find(&|a| a == Action::Choose(want)).map(Kind::Button)
            } else {
                find(&|a| a == Action::SelectOne).map(|id| Kind::SelectOne(id, pick[0].to_string()))
            }
        };
        let kinds: Option<Vec<Kind>> = pq.ballots.iter().map(|b| kind_of(&b.pick)).collect();
        let Some(kinds) = kinds else {
            self.shared.problem(format!(
                "message {message} for {} question {q} lacks a control the harness clicks: {:?}",
                self.plan[r].request_id,
                ids.iter().map(|(_, s)| s).collect::<Vec<_>>()
            ));
            return None;
        };
        let delay = self.rng.below(self.click_spread.as_millis() as u64 + 1);
        Some((
            (r, q),
            Target {
                token,
                channel,
                message,
                step: if pq.multi { Step::Draft } else { Step::Settle },
                kinds,
                ballot: 0,
                not_before: Instant::now().max(self.clicks_from) + Duration::from_millis(delay),
                inflight: None,
                confirmed: false,
                dead: false,
                awaiting_draft: None,
            },
        ))
    }

    /// A follow-up of a slow draft: "saved" moves the person on to Submit; anything else
    /// ("could not save your selection, try again") has them choose again.
    fn note_follow_up(&mut self, r: &Recorded) {
        let Some(iid) = r
            .path
            .rsplit('/')
            .next()
            .and_then(|t| t.strip_prefix("tok"))
            .and_then(|t| t.parse::<u64>().ok())
        else {
            return;
        };
        let Some(&(ri, qi, _, _)) = self.iids.get(&iid) else {
            return;
        };
        let Some(t) = self.targets.get_mut(&(ri, qi)) else {
            return;
        };
        if t.awaiting_draft != Some(iid) {
            return;
        }
        t.awaiting_draft = None;
        let content = r
            .body
            .as_ref()
            .and_then(|b| b["content"].as_str())
            .unwrap_or_default();
        if content.contains("selection was saved") {
            t.step = Step::Settle;
            t.not_before = Instant::now();
        } else {
            t.step = Step::Draft;
            t.not_before = Instant::now() + Duration::from_millis(300);
        }
    }

    /// New REST requests: the callbacks of our interactions, and the follow-ups of slow
    /// drafts.
    fn scan_requests(&mut self) {
        let new = self.standin.requests_from(self.request_cursor);
        self.request_cursor += new.len();
        for r in new {
            let segs: Vec<&str> = r.path.split('/').collect();
            if r.method == "POST" && segs.contains(&"webhooks") {
                self.note_follow_up(&r);
                continue;
            }
            let Some(at) = segs.iter().position(|s| *s == "interactions") else {
                continue;
            };
            if segs.last() != Some(&"callback") {
                continue;
            }
            let Some(iid) = segs.get(at + 1).and_then(|s| s.parse::<u64>().ok()) else {
                continue;
            };
            let Some(&(ri, qi, step, ballot)) = self.iids.get(&iid) else {
                continue;
            };
            if let Some(rec) = self.shared.click_log.lock().unwrap().get_mut(&iid) {
                rec.note_callback(&r);
            }
            let Some(t) = self.targets.get_mut(&(ri, qi)) else {
                continue;
            };
            let current = t.inflight.as_ref().is_some_and(|f| f.iid == iid);
            if !(200..300).contains(&r.status) {
                // Discord failed the callback (injected): the click may or may not have counted.
                if current {
                    t.inflight = None;
                    t.not_before = Instant::now() + Duration::from_millis(100);
                }
                continue;
            }
            let body = r.body.clone().unwrap_or(Value::Null);
            let kind = body["type"].as_u64();
            let content = body["data"]["content"].as_str().unwrap_or("");
            if t.confirmed || t.dead {
                continue;
            }
            let already_answered = content.starts_with("Already answered")
                || content.contains("already been answered");
            if ballot != t.ballot {
                // A late reply to a click of a ballot that is done already.
                if kind == Some(4) && already_answered {
                    t.confirmed = true;
                    self.confirmed_count += 1;
                }
                continue;
            }
            let pq = &self.plan[ri].questions[qi];
            let rid = &self.plan[ri].request_id;
            let expect = pq.ballots[ballot].expect;
            let who = &self.people[pq.ballots[ballot].who].username;
            // The message still shows its controls: the question is open.
            let open = body["data"]["components"]
                .as_array()
                .is_some_and(|c| !c.is_empty());
            // Whether this ballot is done: a draft is acknowledged (type 6); a vote or the
            // settling click updates the message (type 7), a vote showing the count so far.
            let done = match kind {
                Some(6) if step == Step::Draft => {
                    if t.step == Step::Draft && current {
                        let dispatched = self
                            .shared
                            .click_log
                            .lock()
                            .unwrap()
                            .get(&iid)
                            .and_then(|c| c.dispatched);
                        let slow = dispatched.is_some_and(|d| {
                            Instant::from_std(r.at).saturating_duration_since(d)
                                >= Duration::from_millis(1500)
                        });
                        t.inflight = None;
                        if slow {
                            // Deferred: its follow-up says whether the selection was saved.
                            t.awaiting_draft = Some(iid);
                            t.not_before = Instant::now() + DRAFT_FOLLOW_UP_WAIT;
                        } else {
                            t.step = Step::Settle;
                            t.not_before = Instant::now();
                        }
                    }
                    false
                }
                Some(7) if step == Step::Settle => {
                    match expect {
                        Expect::Refused => self.shared.problem(format!(
                            "{rid} question {qi}: the requester's click on a quorum route was \
                             taken: {body}"
                        )),
                        Expect::Votes if !open => self.shared.problem(format!(
                            "{rid} question {qi}: {who}'s vote (ballot {} of {}) settled the \
                             question before the quorum of {} was reached",
                            ballot + 1,
                            pq.ballots.len(),
                            self.plan[ri].approvals
                        )),
                        Expect::Settles if open => self.shared.problem(format!(
                            "{rid} question {qi}: {who}'s vote completes the quorum, and the \
                             question is still open"
                        )),
                        _ => {}
                    }
                    true
                }
                Some(4) if already_answered => {
                    t.confirmed = true;
                    self.confirmed_count += 1;
                    false
                }
                // A deferred update: the store took longer than 2 s, and what became of the
                // click follows as an edit or a follow-up. Click again a moment later, as a
                // person would: "already answered" or "already voted" if it counted.
                Some(6) => {
                    if current {
                        t.inflight = None;
                        t.not_before = Instant::now() + Duration::from_millis(500);
                    }
                    false
                }
                // The vote was stored before: a click repeated after a restart or a failed
                // callback. The last one may have completed the quorum without settling it
                // (a crash between the two): the next start settles it.
                Some(4) if content.contains("already voted") && expect != Expect::Refused => true,
                Some(4) if content.contains("another person must answer it") => {
                    if expect != Expect::Refused {
                        self.shared.problem(format!(
                            "{rid} question {qi}: {who} was refused as the requester: {content:?}"
                        ));
                    }
                    true
                }
                Some(4) if content.contains("has ended") => {
                    t.dead = true;
                    false
                }
                // "Submit" after a draft that failed to save (its deferred update said so in
                // a follow-up): choose again, as a person would, then Submit.
                Some(4) if content.contains("selection was not saved") => {
                    if current {
                        t.step = Step::Draft;
                        t.inflight = None;
                        t.not_before = Instant::now() + Duration::from_millis(500);
                    }
                    false
                }
                _ => {
                    self.unexpected_replies += 1;
                    self.shared.log(format!(
                        "unexpected reply to {who}'s click on {rid} question {qi}: {body}"
                    ));
                    if current {
                        t.inflight = None;
                        t.not_before = Instant::now() + Duration::from_millis(500);
                    }
                    false
                }
            };
            if done {
                t.ballot += 1;
                t.inflight = None;
                if t.ballot >= pq.ballots.len() {
                    t.confirmed = true;
                    self.confirmed_count += 1;
                } else {
                    // The next person clicks a moment later.
                    t.step = if pq.multi { Step::Draft } else { Step::Settle };
                    t.not_before = Instant::now() + self.rng.millis(0, 300);
                }
            }
        }
    }

    /// Requests whose client has its final line: their questions need no more clicks.
    fn scan_finals(&mut self) {
        let newly: Vec<(usize, bool)> = {
            let reqs = self.shared.reqs.lock().unwrap();
            reqs.iter()
                .enumerate()
                .filter(|(i, r)| r.finished && !self.finished_seen[*i])
                .map(|(i, r)| {
                    let answered = r
                        .finals
                        .first()
                        .is_some_and(|l| l.starts_with("{\"event\":\"answered\""));
                    (i, answered)
                })
                .collect()
        };
        for (i, answered) in newly {
            self.finished_seen[i] = true;
            for q in 0..self.plan[i].questions.len() {
                match self.targets.get_mut(&(i, q)) {
                    Some(t) if !t.confirmed => {
                        if answered {
                            t.confirmed = true;
                            self.confirmed_count += 1;
                        } else {
                            t.dead = true;
                        }
                    }
                    _ => {}
                }
            }
        }
    }

    fn click_due(&mut self) {
        let now = Instant::now();
        let epoch = self.shared.epoch.load(Ordering::SeqCst);
        let due: Vec<(usize, usize, bool)> = self
            .targets
            .iter()
            .filter(|(_, t)| !t.confirmed && !t.dead && now >= t.not_before)
            .filter_map(|(k, t)| match &t.inflight {
                None => Some((k.0, k.1, false)),
                Some(f)
                    if (f.epoch != epoch && now >= f.sent + Duration::from_millis(300))
                        || now >= f.sent + CLICK_TIMEOUT =>
                {
                    Some((k.0, k.1, true))
                }
                Some(_) => None,
            })
            .collect();
        for (r, q, repeat) in due {
            if repeat {
                self.shared.clicks_repeated.fetch_add(1, Ordering::Relaxed);
            }
            self.click(r, q, epoch, now);
        }
    }

    fn click(&mut self, r: usize, q: usize, epoch: u64, now: Instant) {
        let iid = self.next_iid;
        self.next_iid += 1;
        let app = self.standin.application_id();
        let guild = self.standin.guild_id();
        let t = self.targets.get_mut(&(r, q)).expect("a target");
        let at = fixtures::At {
            application_id: app,
            guild_id: Some(guild),
            channel_id: t.channel,
            message_id: t.message,
        };
        let ballot = &self.plan[r].questions[q].ballots[t.ballot];
        let who = &self.people[ballot.who];
        let payload = match (&t.kinds[t.ballot], t.step) {
            (Kind::Button(id), _) => fixtures::component_click(iid, &at, who, id),
            (Kind::SelectOne(id, value), _) => {
                fixtures::select_values(iid, &at, who, id, &[value.as_str()])
            }
            (Kind::Multi { draft, values, .. }, Step::Draft) => {
                let values: Vec<&str> = values.iter().map(String::as_str).collect();
                fixtures::select_values(iid, &at, who, draft, &values)
            }
            (Kind::Multi { submit, .. }, Step::Settle) => {
                fixtures::component_click(iid, &at, who, submit)
            }
        };
        // The question counts as clicked once its last ballot's settling click is sent.
        let last = t.ballot + 1 == self.plan[r].questions[q].ballots.len();
        if t.step == Step::Settle && last {
            self.settle_clicked.entry((r, q)).or_insert(now);
        }
        t.inflight = Some(InFlight {
            iid,
            epoch,
            sent: now,
        });
        self.iids.insert(iid, (r, q, t.step, t.ballot));
        self.shared.click_log.lock().unwrap().insert(
            iid,
            ClickRec {
                iid,
                request: r,
                question: q,
                ballot: t.ballot,
                step: t.step,
                dispatched: None,
                updated: None,
                replied: None,
                discord_failed: false,
            },
        );
        self.shared.clicks.fetch_add(1, Ordering::Relaxed);
        let standin = self.standin.clone();
        let shared = self.shared.clone();
        tokio::spawn(async move {
            let sent = timeout(SEND_LIMIT, standin.send_interaction(payload)).await;
            if sent.is_ok() {
                if let Some(rec) = shared.click_log.lock().unwrap().get_mut(&iid) {
                    rec.dispatched = Some(Instant::now());
                }
            }
            if sent.is_err() {
                shared.problem(format!(
                    "no live gateway session for {} s to deliver a click to",
                    SEND_LIMIT.as_secs()
                ));
            }
        });
    }
}

// ---------------------------------------------------------------------------------------------
// Faults: 5xx and 429 bursts, gateway drops

/// The daemon's REST deadline in this harness; a stall fault holds a call longer than this.
const STALL_DEADLINE: Duration = Duration::from_millis(500);
/// How long a stall fault holds a call: past every deadline.
const STALL: Duration = Duration::from_millis(900);

/// The kinds of REST call the faults hit.
#[derive(Clone, Copy, Debug)]
enum FaultOn {
    /// `POST /channels/{id}/messages`: posting a question.
    Post,
    /// `PATCH /channels/{id}/messages/{id}`: editing a settled or ended question.
    Edit,
    /// `GET /channels/{id}`: the channel check of the first offer after a start.
    Channel,
    /// `POST /interactions/{id}/{token}/callback`: answering a click.
    Callback,
}

impl FaultOn {
    /// The `fail_next` arguments.
    fn rule(self) -> (&'static str, &'static str) {
        match self {
            FaultOn::Post => ("POST", "/messages"),
            FaultOn::Edit => ("PATCH", "/messages/"),
            FaultOn::Channel => ("GET", "/channels/"),
            FaultOn::Callback => ("POST", "/callback"),
        }
    }

    /// Which kind a recorded request is.
    fn of(method: &str, path: &str) -> Option<FaultOn> {
        match method {
            "POST" if path.ends_with("/callback") => Some(FaultOn::Callback),
            "POST" if path.contains("/channels/") && path.ends_with("/messages") => {
                Some(FaultOn::Post)
            }
            "PATCH" if path.contains("/messages/") => Some(FaultOn::Edit),
            "GET" if path.contains("/channels/") && !path.contains("/messages") => {
                Some(FaultOn::Channel)
            }
            _ => None,
        }
    }
}

/// Injected failures, paced so that every outage ends: a failure waits in the stand-in until a
/// matching request takes it, and the next burst for a kind is queued only once the last one was
/// all served and a request of that kind succeeded after it. Otherwise a lone retrying post
/// could meet injected failures forever.
struct FaultQueue {
    injected: [usize; 4],
    served: [usize; 4],
    /// A request of the kind succeeded since its last burst was served.
    recovered: [bool; 4],
    /// When the last stall of the kind began holding a request.
    stall_taken: [Option<std::time::Instant>; 4],
    /// A request of the kind succeeded after its last stall was taken.
    stall_recovered: [bool; 4],
    cursor: usize,
    held_cursor: usize,
}

impl FaultQueue {
    fn new() -> FaultQueue {
        FaultQueue {
            injected: [0; 4],
            served: [0; 4],
            recovered: [true; 4],
            stall_taken: [None; 4],
            stall_recovered: [true; 4],
            cursor: 0,
            held_cursor: 0,
        }
    }

    /// Follows what the stand-in answered since the last look.
    fn refresh(&mut self, standin: &StandIn) {
        let held = standin.held_from(self.held_cursor);
        self.held_cursor += held.len();
        for h in held {
            if let Some(t) = FaultOn::of(&h.method, &h.path) {
                self.stall_taken[t as usize] = Some(h.at);
            }
        }
        let new = standin.requests_from(self.cursor);
        self.cursor += new.len();
        for r in new {
            let Some(t) = FaultOn::of(&r.method, &r.path) else {
                continue;
            };
            let t = t as usize;
            if r.status == 429 || r.status >= 500 {
                self.served[t] += 1;
            } else if r.status < 300 {
                if self.served[t] >= self.injected[t] {
                    self.recovered[t] = true;
                }
                if self.stall_taken[t].is_some_and(|taken| r.at > taken) {
                    self.stall_recovered[t] = true;
                }
            }
        }
    }

    /// Queues `times` failures for `target`, unless its last burst is not over yet.
    fn inject(&mut self, standin: &StandIn, target: FaultOn, failure: Failure, times: usize) {
        self.refresh(standin);
        let t = target as usize;
        if !self.recovered[t] || self.served[t] < self.injected[t] {
            return;
        }
        let (method, path) = target.rule();
        standin.fail_next(method, path, failure, times);
        self.injected[t] += times;
        self.recovered[t] = false;
    }

    /// Holds the next request of `target` past the daemon's deadlines, unless a stall is still
    /// waiting or the last one of the kind was not followed by a success yet (a lone click
    /// retried every few seconds would otherwise meet a stall every time). Returns whether it
    /// was queued.
    fn stall(&mut self, standin: &StandIn, target: FaultOn) -> bool {
        self.refresh(standin);
        let t = target as usize;
        if standin.stalls_waiting() > 0 || !self.stall_recovered[t] {
            return false;
        }
        let (method, path) = target.rule();
        standin.stall_next(method, path, Stall::For(STALL), 1);
        self.stall_recovered[t] = false;
        true
    }
}

/// Queued before the first ask, so that every run (however short) meets each kind of failure.
fn first_faults(standin: &StandIn, queue: &mut FaultQueue) {
    let limited = Failure::RateLimited {
        retry_after_secs: 0.05,
        global: false,
    };
    queue.inject(standin, FaultOn::Channel, Failure::Status(500), 1);
    queue.inject(standin, FaultOn::Post, Failure::Status(503), 2);
    queue.inject(standin, FaultOn::Edit, limited, 2);
    queue.inject(standin, FaultOn::Callback, Failure::Status(500), 1);
}

async fn faults(
    standin: StandIn,
    shared: Arc<Shared>,
    mut rng: Rng,
    every: Duration,
    mut queue: FaultQueue,
) {
    let mut done = shared.all_done.subscribe();
    let every = every.as_millis().max(4) as u64;
    let mut first = true;
    loop {
        let wait = rng.millis(every / 4, every * 7 / 4);
        tokio::select! {
            _ = sleep(wait) => {}
            _ = done.wait_for(|&d| d) => return,
        }
        let status = Failure::Status([500, 502, 503][rng.below(3) as usize]);
        let limited = Failure::RateLimited {
            retry_after_secs: rng.between(20, 500) as f64 / 1000.0,
            global: rng.chance(1, 4),
        };
        // The first faults are a gateway drop and a hung post, so that every run has them.
        let pick = if std::mem::take(&mut first) {
            14
        } else if shared.stalls.load(Ordering::SeqCst) == 0 {
            11
        } else {
            rng.below(15)
        };
        let times = rng.between(1, 4) as usize;
        match pick {
            0..=3 => queue.inject(&standin, FaultOn::Post, status, times),
            4..=5 => queue.inject(&standin, FaultOn::Post, limited, times.min(3)),
            6 => queue.inject(&standin, FaultOn::Edit, status, times.min(3)),
            7 => queue.inject(&standin, FaultOn::Edit, limited, 1),
            8 => queue.inject(&standin, FaultOn::Channel, status, 1),
            9 => queue.inject(&standin, FaultOn::Callback, status, 1),
            10 => queue.inject(&standin, FaultOn::Callback, limited, 1),
            11..=13 => {
                let on = [FaultOn::Post, FaultOn::Edit, FaultOn::Callback][pick as usize - 11];
                if queue.stall(&standin, on) {
                    let n = shared.stalls.fetch_add(1, Ordering::SeqCst) + 1;
                    shared.log(format!("stall {n} ({on:?})"));
                }
            }
            _ => {
                let drop = timeout(Duration::from_secs(20), standin.drop_gateway());
                tokio::select! {
                    r = drop => {
                        if r.is_ok() {
                            let n = shared.gateway_drops.fetch_add(1, Ordering::SeqCst) + 1;
                            shared.log(format!("gateway drop {n}"));
                        }
                    }
                    _ = done.wait_for(|&d| d) => return,
                }
            }
        }
    }
}

/// The ids of the created messages that still show components, once none is left or after
/// `limit`.
async fn showing_buttons(standin: &StandIn, limit: Duration) -> Vec<u64> {
    let deadline = Instant::now() + limit;
    let mut changes = standin.subscribe();
    loop {
        let left: Vec<u64> = standin
            .created_messages_from(0)
            .iter()
            .filter_map(|m| m["id"].as_str()?.parse::<u64>().ok())
            .filter(|&id| {
                standin
                    .message(id)
                    .is_some_and(|m| m["components"].as_array().is_some_and(|c| !c.is_empty()))
            })
            .collect();
        if left.is_empty() || Instant::now() >= deadline {
            return left;
        }
        let _ = timeout_at(deadline, changes.changed()).await;
        sleep(Duration::from_millis(20)).await;
    }
}

// ---------------------------------------------------------------------------------------------
// The run

/// Runs the harness with `daemon_bin` (the `askrelay` binary) and returns what it saw. Every
/// wait is bounded; a run that cannot finish says why in `problems` instead of hanging.
pub async fn run(cfg: ChaosConfig, daemon_bin: &Path) -> ChaosReport {
    let t0 = Instant::now();
    let deadline = t0 + cfg.deadline;
    let mut rng = Rng::new(cfg.seed);
    let plan = Arc::new(make_plan(&cfg, &mut rng));
    let total_questions: usize = plan.iter().map(|r| r.questions.len()).sum();
    let standin = StandIn::start().await;
    let dir = tempfile::Builder::new()
        .prefix("askrelay-chaos-")
        .tempdir()
        .expect("chaos: cannot create a temp dir");
    let database = match open_database(&cfg, dir.path()).await {
        Ok(db) => db,
        Err(e) => {
            return ChaosReport {
                seed: cfg.seed,
                requests: cfg.requests,
                nodes: cfg.nodes,
                problems: vec![e],
                ..ChaosReport::default()
            }
        }
    };
    let nodes = cfg.nodes;
    // The cluster faults: a proxy in front of the database per node, a heartbeat the stand-in
    // enforces (so that a frozen leader's session ends), and the plan. A skew without
    // libfaketime is skipped, and said so.
    let mut fault_kinds: Vec<ClusterFault> = Vec::new();
    let mut early_notes = Vec::new();
    if !cfg.cluster_faults.is_empty() && !database.cluster {
        early_notes.push("cluster faults need a cluster on PostgreSQL; none injected".to_owned());
    }
    if database.cluster {
        for k in &cfg.cluster_faults {
            if *k == ClusterFault::Skew && !faketime_available() {
                early_notes.push(format!(
                    "the skew fault is skipped: libfaketime is not installed ({FAKETIME_LIB} is \
                     missing; on Debian, apt-get install faketime)"
                ));
                continue;
            }
            if !fault_kinds.contains(k) {
                fault_kinds.push(*k);
            }
        }
    }
    let faults_on = !fault_kinds.is_empty();
    let failover = cfg.failover();
    let fault_plan = if faults_on {
        let count = if cfg.cluster_fault_count == 0 {
            fault_kinds.len()
        } else {
            cfg.cluster_fault_count
        };
        cluster_faults::order(&fault_kinds, count, &mut rng)
    } else {
        Vec::new()
    };
    let mut proxies: Vec<Option<Proxy>> = vec![None; nodes];
    if faults_on {
        for p in &mut proxies {
            match Proxy::for_postgres(&database.url).await {
                Ok((proxy, _)) => *p = Some(proxy),
                Err(e) => {
                    return ChaosReport {
                        seed: cfg.seed,
                        requests: cfg.requests,
                        nodes: cfg.nodes,
                        problems: vec![format!("cannot start a database proxy: {e}")],
                        ..ChaosReport::default()
                    }
                }
            }
        }
        standin.enforce_heartbeats(cluster_faults::HEARTBEAT);
    }
    if !cfg.dedup {
        standin.set_nonce_dedup(false);
    }
    // Alone: askrelay.sock and daemon.log, as always. In a cluster: node-<i>.sock and
    // node-<i>.log.
    let node_ids: Vec<Option<String>> = (1..=nodes)
        .map(|i| database.cluster.then(|| format!("node-{i}")))
        .collect();
    let sockets: Vec<PathBuf> = node_ids
        .iter()
        .map(|n| match n {
            Some(n) => dir.path().join(format!("{n}.sock")),
            None => dir.path().join("askrelay.sock"),
        })
        .collect();
    // The uid the clients ask as: the owner of the directory this process just created.
    let uid = std::os::unix::fs::MetadataExt::uid(
        &std::fs::metadata(dir.path()).expect("chaos: cannot stat the work directory"),
    );
    std::fs::write(dir.path().join("chaos.toml"), config_toml(uid))
        .expect("chaos: cannot write chaos.toml");
    let (finished, _) = watch::channel(0usize);
    let (progress, _) = watch::channel((0usize, 0usize));
    let (all_done, _) = watch::channel(false);
    let (stop, _) = watch::channel(false);
    let shared = Arc::new(Shared {
        t0,
        verbose: cfg.verbose,
        reqs: Mutex::new((0..cfg.requests).map(|_| ReqState::default()).collect()),
        epoch: AtomicU64::new(0),
        finished,
        progress,
        all_done,
        stop,
        problems: Mutex::new(Vec::new()),
        notes: Mutex::new(Vec::new()),
        kills: AtomicUsize::new(0),
        crash_aborts: AtomicUsize::new(0),
        restarts: AtomicUsize::new(0),
        gateway_drops: AtomicUsize::new(0),
        stalls: AtomicUsize::new(0),
        clicks: AtomicUsize::new(0),
        clicks_repeated: AtomicUsize::new(0),
        daemon_error_lines: AtomicUsize::new(0),
        daemon_errors: Mutex::new(Vec::new()),
        fatal: AtomicBool::new(false),
        leader_kills: AtomicUsize::new(0),
        lead_moves: AtomicUsize::new(0),
        failovers: Mutex::new(Vec::new()),
        failover_watches: Mutex::new(Vec::new()),
        click_log: Mutex::new(HashMap::new()),
    });
    for n in early_notes {
        shared.note(n);
    }
    let handles: Vec<Arc<NodeHandle>> = node_ids
        .iter()
        .zip(&sockets)
        .zip(&proxies)
        .map(|((node, socket), proxy)| {
            Arc::new(NodeHandle {
                name: node.clone().unwrap_or_else(|| "daemon".into()),
                socket: socket.clone(),
                pid: AtomicU32::new(0),
                leading: Mutex::new(Arc::new(AtomicBool::new(false))),
                faketime: fault_kinds.contains(&ClusterFault::Skew).then(|| {
                    let file = dir
                        .path()
                        .join(format!("{}.faketime", node.as_deref().unwrap_or("daemon")));
                    std::fs::write(&file, "+0\n").expect("chaos: cannot write a faketime file");
                    file
                }),
                proxy: proxy.clone(),
            })
        })
        .collect();
    let mut daemons: Vec<DaemonCtl> = node_ids
        .iter()
        .zip(&sockets)
        .zip(&handles)
        .map(|((node, socket), handle)| {
            let file = match node {
                Some(n) => format!("{n}.log"),
                None => "daemon.log".into(),
            };
            let log = std::fs::File::create(dir.path().join(&file))
                .unwrap_or_else(|e| panic!("chaos: cannot create {file}: {e}"));
            DaemonCtl {
                bin: daemon_bin.to_path_buf(),
                socket: socket.clone(),
                // Through its own proxy when there are cluster faults.
                db_url: match &handle.proxy {
                    Some(p) => p.postgres_url(&database.url).expect("a postgres URL"),
                    None => database.url.clone(),
                },
                base_url: standin.base_url.clone(),
                node: node.clone(),
                log: Arc::new(Mutex::new(log)),
                child: None,
                crash_at: None,
                aborted_on_purpose: Arc::new(AtomicBool::new(false)),
                pump: None,
                started_at: Instant::now(),
                instance: 0,
                leading: Arc::new(AtomicBool::new(false)),
                handle: handle.clone(),
                failover_secs: cfg.failover_secs,
                shared: shared.clone(),
            }
        })
        .collect();
    // In a cluster, the live gateway sessions from now on: leaders seen from the outside.
    let (stop_sessions, stop_sessions_rx) = watch::channel(false);
    let sessions = database
        .cluster
        .then(|| cluster_faults::watch_sessions(standin.clone(), stop_sessions_rx));
    let wall0 = std::time::SystemTime::now();
    shared.log(format!(
        "{} requests, {total_questions} questions, {} kills, seed {}, {nodes} node(s) on {}, \
         work dir {}",
        cfg.requests,
        cfg.kills,
        cfg.seed,
        database.label,
        dir.path().display()
    ));
    // One after the other: the first takes the lead, and its log shows it.
    for d in &mut daemons {
        if let Err(e) = d.start(None).await {
            shared.fatal(e);
            break;
        }
    }

    // Kill points: thresholds on questions posted + questions settled, spread over the run.
    let mut thresholds: Vec<usize> = (0..cfg.kills)
        .map(|_| rng.below((total_questions * 2 * 19 / 20) as u64 + 1) as usize)
        .collect();
    thresholds.sort_unstable();

    let mut queue = FaultQueue::new();
    if cfg.faults {
        first_faults(&standin, &mut queue);
    }
    let mut clients = Vec::new();
    if !shared.is_fatal() {
        for (i, r) in plan.iter().enumerate() {
            let start = t0 + Duration::from_millis(rng.below(cfg.ramp.as_millis() as u64 + 1));
            clients.push(tokio::spawn(client(
                i,
                r.ask_line.clone(),
                node_socket(&sockets, i).to_path_buf(),
                shared.clone(),
                rng.fork(),
                start,
            )));
        }
    }
    let mut labels = HashMap::new();
    for (ri, r) in plan.iter().enumerate() {
        for (qi, q) in r.questions.iter().enumerate() {
            for (oi, l) in q.labels.iter().enumerate() {
                // "Deny" and "Hold" are on many questions: they never say which one.
                if DECISIVE.contains(&l.as_str()) {
                    continue;
                }
                labels.insert(l.clone(), (ri, qi, oi));
            }
        }
    }
    // The clicks go on through every cluster fault: spread them over the schedule.
    let mut click_spread = cfg.click_spread;
    if faults_on {
        let schedule = cluster_faults::schedule_length(&fault_plan, failover);
        if schedule > click_spread {
            shared.log(format!(
                "clicks spread over {:.0} s, the length of the cluster faults",
                schedule.as_secs_f64()
            ));
            click_spread = schedule;
        }
    }
    let clicker = tokio::spawn(
        ClickerTask {
            standin: standin.clone(),
            plan: plan.clone(),
            shared: shared.clone(),
            rng: rng.fork(),
            click_spread,
            clicks_from: t0 + cfg.ramp,
            people: people(),
            labels,
            targets: BTreeMap::new(),
            iids: HashMap::new(),
            next_iid: 3_000_000_000,
            message_cursor: 0,
            request_cursor: 0,
            finished_seen: vec![false; cfg.requests],
            settle_clicked: HashMap::new(),
            confirmed_count: 0,
            unexpected_replies: 0,
        }
        .run(),
    );
    let fault_task = cfg.faults.then(|| {
        tokio::spawn(faults(
            standin.clone(),
            shared.clone(),
            rng.fork(),
            cfg.fault_every,
            queue,
        ))
    });
    let (faults_done, faults_done_rx) = watch::channel(!faults_on);
    let fault_runner = faults_on.then(|| {
        let schedule = cluster_faults::Schedule {
            kinds: fault_plan.clone(),
            nodes: handles.clone(),
            failover,
            // Once the asks are in and the first clicks are going.
            from: t0 + cfg.ramp + Duration::from_secs(2),
            at_leader: cfg.faults_at_leader,
        };
        tokio::spawn(cluster_faults::run(
            schedule,
            shared.clone(),
            rng.fork(),
            faults_done,
        ))
    });
    let monkey = tokio::spawn(
        Monkey {
            ds: daemons,
            rng: rng.fork(),
            crash_points: cfg.crash_points,
            questions: total_questions,
            shared: shared.clone(),
            deadline,
            cluster: database.cluster.then(|| standin.clone()),
            faults_done: faults_done_rx,
        }
        .run(thresholds),
    );

    // Progress, until every request has its final line or the deadline passes.
    let mut peak_pending = 0;
    {
        let mut finished = shared.finished.subscribe();
        let mut last_report = Instant::now();
        loop {
            let pending = {
                let reqs = shared.reqs.lock().unwrap();
                reqs.iter()
                    .filter(|r| r.connects > 0 && !r.finished)
                    .count()
            };
            peak_pending = peak_pending.max(pending);
            let n = *finished.borrow();
            if n >= cfg.requests || shared.is_fatal() {
                break;
            }
            if Instant::now() >= deadline {
                shared.problem(format!(
                    "only {n} of {} requests got a final line within {} s",
                    cfg.requests,
                    cfg.deadline.as_secs()
                ));
                break;
            }
            if last_report.elapsed() >= Duration::from_secs(5) {
                last_report = Instant::now();
                let (posted, settled) = *shared.progress.borrow();
                shared.log(format!(
                    "progress: {n}/{} requests ended, {posted}/{total_questions} questions \
                     posted, {settled} settled, {} kills",
                    cfg.requests,
                    shared.kills.load(Ordering::SeqCst)
                ));
            }
            let _ = timeout_at(
                deadline.min(Instant::now() + Duration::from_millis(100)),
                finished.changed(),
            )
            .await;
        }
    }
    shared.all_done.send_replace(true);
    shared.log("every request has a final line; finishing the kills");
    let monkey_limit = Duration::from_secs(60 + 5 * cfg.kills as u64)
        + if faults_on {
            cluster_faults::schedule_length(&fault_plan, failover) * 2
        } else {
            Duration::ZERO
        };
    let mut daemons = match timeout(monkey_limit, monkey).await {
        Ok(Ok(d)) => d,
        Ok(Err(e)) => {
            shared.problem(format!("the kill task failed: {e}"));
            Vec::new()
        }
        Err(_) => {
            shared.problem("the kill task did not finish in time".into());
            Vec::new()
        }
    };
    // The failovers of the last leader kills may still be under way; each watch is bounded.
    let watches = std::mem::take(&mut *shared.failover_watches.lock().unwrap());
    for w in watches {
        if timeout(FAILOVER_LIMIT + Duration::from_secs(10), w)
            .await
            .is_err()
        {
            shared.problem("a failover watch did not end in time".into());
        }
    }
    // The cluster faults are over (the monkey waited for them): stop watching the sessions
    // before the final restarts and stops, which are no failure of the lead.
    let injected: Vec<Injected> = match fault_runner {
        Some(f) => match timeout(Duration::from_secs(120), f).await {
            Ok(Ok(v)) => v,
            _ => {
                shared.problem("the cluster fault task did not end in time".into());
                Vec::new()
            }
        },
        None => Vec::new(),
    };
    let measured_until = Instant::now();
    stop_sessions.send_replace(true);
    let session_samples = match sessions {
        Some(h) => timeout(Duration::from_secs(10), h)
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default(),
        None => Vec::new(),
    };
    let clicked = match timeout(Duration::from_secs(30), clicker).await {
        Ok(Ok(out)) => Some(out),
        Ok(Err(e)) => {
            shared.problem(format!("the clicker failed: {e}"));
            None
        }
        Err(_) => {
            shared.problem("the clicker did not stop in time".into());
            None
        }
    };
    if let Some(f) = fault_task {
        if let Err(e) = timeout(Duration::from_secs(30), f).await {
            shared.problem(format!("the fault task did not stop in time: {e}"));
        }
    }
    standin.clear_failures();

    // Every request once more: an ended request replays the same final line.
    let all_up = !daemons.is_empty() && daemons.iter().all(|d| d.child.is_some());
    if all_up && !shared.is_fatal() {
        shared.log("re-attaching every request once more");
        replay_all(&plan, &sockets, &shared).await;
    }
    shared.stop.send_replace(true);
    for c in clients {
        if timeout(Duration::from_secs(10), c).await.is_err() {
            shared.problem("a client did not stop in time".into());
        }
    }
    // Every message should lose its buttons. An edit cut short by a kill, or given up during an
    // injected outage, is finished at the next start: restart once, gracefully, if one is left.
    // In a cluster every node restarts (the next leader takes the edits over).
    let mut not_edited = showing_buttons(&standin, Duration::from_secs(5)).await;
    if all_up && !not_edited.is_empty() && !shared.is_fatal() {
        shared.log(format!(
            "{} message(s) still show buttons; restarting once, gracefully",
            not_edited.len()
        ));
        for d in &mut daemons {
            if let Some(p) = d.terminate().await {
                shared.problem(p);
            }
        }
        let mut started = true;
        for d in &mut daemons {
            shared.restarts.fetch_add(1, Ordering::SeqCst);
            if let Err(e) = d.start(None).await {
                shared.problem(e);
                started = false;
            }
        }
        if started {
            not_edited = showing_buttons(&standin, Duration::from_secs(10)).await;
        }
    }
    // All at once: a node stopping while the others run would hand them the lead.
    let stops = daemons.iter_mut().map(|d| d.terminate());
    for p in futures_util::future::join_all(stops)
        .await
        .into_iter()
        .flatten()
    {
        shared.problem(p);
    }

    // ---- the report
    let mut twice_requests = Vec::new();
    let audit = check_audit(&database.url, &plan, &shared, &mut twice_requests).await;
    let failovers = shared.failovers.lock().unwrap().clone();
    let mut report = ChaosReport {
        seed: cfg.seed,
        requests: cfg.requests,
        questions: total_questions,
        kills_planned: cfg.kills,
        kills: shared.kills.load(Ordering::SeqCst),
        crash_aborts: shared.crash_aborts.load(Ordering::SeqCst),
        restarts: shared.restarts.load(Ordering::SeqCst),
        gateway_drops: shared.gateway_drops.load(Ordering::SeqCst),
        stalls: shared.stalls.load(Ordering::SeqCst),
        clicks: shared.clicks.load(Ordering::SeqCst),
        clicks_repeated: shared.clicks_repeated.load(Ordering::SeqCst),
        daemon_error_lines: shared.daemon_error_lines.load(Ordering::SeqCst),
        peak_pending,
        nodes,
        database: database.label.clone(),
        cluster: database.cluster,
        leader_kills: shared.leader_kills.load(Ordering::SeqCst),
        lead_moves: shared.lead_moves.load(Ordering::SeqCst),
        failovers: failovers.len(),
        longest_failover: failovers.iter().max().copied(),
        ..audit
    };
    // None: the spec is absent and the check skipped (said once, on stderr and in the list of
    // skipped tests).
    let validator = Validator::load_or_skip();
    if let Err(e) = &validator {
        shared.problem(format!("cannot check the bodies Discord received: {e}"));
    }
    for r in standin.requests_from(0) {
        match r.status {
            500..=599 => report.injected_5xx += 1,
            429 => report.injected_429 += 1,
            _ => {}
        }
        // Every body, also those of retries, reposts after a kill and edits at start-up.
        if let (Ok(Some(v)), Some(body)) = (&validator, &r.body) {
            report.bodies_checked += 1;
            if let Err(why) = v.check(&r.method, &r.path, body) {
                report.bodies_invalid += 1;
                shared.problem(format!(
                    "{} {} sent an invalid body: {}",
                    r.method,
                    r.path,
                    why.join("; ")
                ));
            }
        }
    }

    // Posted messages: one per (request key, question), never more.
    let created = standin.created_messages_from(0);
    let mut per_question: BTreeMap<(String, usize, u64), Vec<u64>> = BTreeMap::new();
    for m in &created {
        let id: u64 = m["id"].as_str().and_then(|s| s.parse().ok()).unwrap_or(0);
        let channel: u64 = m["channel_id"]
            .as_str()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let key = m["components"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|row| row["components"].as_array().into_iter().flatten())
            .find_map(|c| c["custom_id"].as_str().and_then(custom_id::parse))
            .map(|c| (c.token, c.question, channel));
        match key {
            Some(k) => per_question.entry(k).or_default().push(id),
            None => shared.problem(format!("message {id} was created without any custom_id")),
        }
    }
    report.questions_posted = per_question.keys().filter(|k| k.2 == CHANNEL).count();
    report.copies_posted = per_question.keys().filter(|k| k.2 == COPIES).count();
    // When a message was created, from its snowflake (the stand-in's wall clock).
    let created_at = |id: u64| -> Instant {
        let wall0_ms = wall0
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let ms = (id >> 22) + 1_420_070_400_000;
        t0 + Duration::from_millis(ms.saturating_sub(wall0_ms))
    };
    let mut duplicate_times = Vec::new();
    for ((key, q, channel), ids) in &per_question {
        if ids.len() > 1 {
            duplicate_times.extend(ids[1..].iter().map(|&id| created_at(id)));
            report.duplicates_posted += ids.len() - 1;
            let what = format!(
                "request key {key} question {q} was posted {} times in channel {channel}: messages {ids:?}",
                ids.len()
            );
            if !cfg.dedup && ids.len() == 2 {
                report.duplicates_within_bound += 1;
                shared.note(format!(
                    "{what} (de-duplication off: one copy more, within the bound)"
                ));
            } else {
                shared.problem(what);
            }
        }
    }
    report.messages_not_edited = not_edited.len();
    if !not_edited.is_empty() {
        shared.note(format!(
            "{} message(s) still show their buttons after a graceful restart: {not_edited:?}",
            not_edited.len()
        ));
    }

    // Final lines per request.
    let clicked_all = |ri: usize| {
        clicked.as_ref().is_some_and(|c| {
            (0..plan[ri].questions.len()).all(|q| c.settle_clicked.contains_key(&(ri, q)))
        })
    };
    let mut lost_requests = Vec::new();
    let mut wrong_requests = Vec::new();
    {
        let reqs = shared.reqs.lock().unwrap();
        for (ri, (p, st)) in plan.iter().zip(reqs.iter()).enumerate() {
            report.reattaches += st.connects.saturating_sub(1);
            let distinct: Vec<&String> = {
                let mut seen = Vec::new();
                for l in st.finals.iter().chain(st.replay.iter()) {
                    if !seen.contains(&l) {
                        seen.push(l);
                    }
                }
                seen
            };
            let key = clicked
                .as_ref()
                .and_then(|c| (0..p.questions.len()).find_map(|q| c.keys.get(&(ri, q)).cloned()));
            let who = match key {
                Some(k) => format!("{} (request token {k})", p.request_id),
                None => format!("{} (never posted)", p.request_id),
            };
            if st.finals.is_empty() {
                report.unfinished += 1;
                shared.problem(format!(
                    "{who}: no final line; {} connection(s), {} accepted",
                    st.connects, st.accepted
                ));
            }
            if distinct.len() > 1 {
                report.ended_twice += 1;
                shared.problem(format!("{who} ended twice: {distinct:?}"));
            } else if st.second_on_same_connection > 0 {
                shared.problem(format!(
                    "{who}: the same final line came twice on one connection"
                ));
            }
            let is_answer = |l: &&String| l.starts_with("{\"event\":\"answered\"");
            let answered: Vec<&&String> = distinct.iter().filter(|l| is_answer(l)).collect();
            if st.finals.iter().any(|l| is_answer(&l)) {
                report.answered += 1;
            } else if clicked_all(ri) {
                report.answers_lost += 1;
                lost_requests.push(ri);
                shared.problem(format!(
                    "{who}: every question was clicked but its client never got an answer; \
                     it saw {:?}, the final re-attach {:?}",
                    st.finals.first(),
                    st.replay
                ));
            } else if !st.finals.is_empty() {
                shared.problem(format!(
                    "{who}: ended without an answer before every question was clicked: {:?}",
                    st.finals.first()
                ));
            }
            if !answered.is_empty() {
                let wrong = answered.iter().any(|l| {
                    let v: Value = serde_json::from_str(l).unwrap_or(Value::Null);
                    v["request_id"] != p.request_id.as_str()
                        || serde_json::to_string(&v["result"]).ok().as_deref()
                            != Some(p.expected_result.as_str())
                });
                if wrong {
                    report.wrong_answers += 1;
                    wrong_requests.push(ri);
                    shared.problem(format!(
                        "{who}: wrong answer {answered:?}, expected result {}",
                        p.expected_result
                    ));
                }
            }
            for o in &st.odd {
                shared.problem(format!("{who}: {o}"));
            }
        }
    }
    if database.cluster {
        let outcomes = Outcomes {
            injected: &injected,
            planned: &fault_kinds,
            planned_count: fault_plan.len(),
            samples: &session_samples,
            measured_until,
            duplicate_times: &duplicate_times,
            nonce_reuses: standin
                .nonce_reuses()
                .iter()
                .map(|n| created_at(n.message_id))
                .collect(),
            lost: &lost_requests,
            wrong: &wrong_requests,
            twice: &twice_requests,
            clicked: clicked.as_ref(),
            plan: &plan,
        };
        outcomes.fill(&mut report, &standin, &shared);
        report.dedup = cfg.dedup;
        report.failover_secs = failover.as_secs();
    }
    report.elapsed = t0.elapsed();
    {
        let errors = shared.daemon_errors.lock().unwrap();
        for e in errors.iter() {
            shared.note(format!("daemon error line: {e}"));
        }
    }
    report.problems = shared.problems.lock().unwrap().clone();
    report.notes = shared.notes.lock().unwrap().clone();
    let keep = cfg.keep_dir || (cfg.keep_dir_on_failure && !report.ok());
    if let Some(scratch) = database.scratch {
        if keep {
            report.notes.push(format!(
                "the scratch database {} was kept; drop it with `DROP DATABASE \"{}\"`",
                redact_url(&scratch.url),
                scratch.name
            ));
            // Not dropped: Drop would drop it.
            std::mem::forget(scratch);
        } else if let Err(e) = scratch.drop_now().await {
            report
                .notes
                .push(format!("cannot drop the scratch database: {e:#}"));
        }
    }
    if keep {
        report.workdir = Some(dir.keep());
    }
    report
}

/// What the cluster fault figures are computed from, once the run is over.
struct Outcomes<'a> {
    injected: &'a [Injected],
    /// The kinds planned (a row each, even when none was injected).
    planned: &'a [ClusterFault],
    planned_count: usize,
    /// The live gateway sessions over time.
    samples: &'a [(Instant, usize)],
    measured_until: Instant,
    /// When each duplicate message was created.
    duplicate_times: &'a [Instant],
    /// When each message with a reused nonce was created.
    nonce_reuses: Vec<Instant>,
    /// Requests (plan indexes) whose answer was lost, wrong, settled twice.
    lost: &'a [usize],
    wrong: &'a [usize],
    twice: &'a [usize],
    clicked: Option<&'a ClickerOut>,
    plan: &'a [PlannedRequest],
}

/// Discord shows "This interaction failed" when no callback came within this long.
const DISCORD_CALLBACK_LIMIT: Duration = Duration::from_secs(3);

impl Outcomes<'_> {
    /// The window (an index into `injected`) a moment falls in, if any.
    fn window(&self, t: Instant) -> Option<usize> {
        self.injected
            .iter()
            .position(|i| i.start <= t && t < i.settled)
    }

    /// The window a stretch overlaps most, if any: a frozen leader's session counts as gone
    /// from the heartbeat it missed, which may be a moment before the SIGSTOP, and so in the
    /// last moments of the window before.
    fn window_over(&self, a: Instant, b: Instant) -> Option<usize> {
        self.injected
            .iter()
            .enumerate()
            .map(|(w, i)| {
                (
                    w,
                    b.min(i.settled).saturating_duration_since(a.max(i.start)),
                )
            })
            .filter(|&(_, overlap)| overlap > Duration::ZERO)
            .max_by_key(|&(_, overlap)| overlap)
            .map(|(w, _)| w)
    }

    /// The row of a window: its kind's row, or the last (`none`).
    fn row(&self, w: Option<usize>, kinds: &[ClusterFault]) -> usize {
        w.and_then(|w| kinds.iter().position(|k| *k == self.injected[w].kind))
            .unwrap_or(kinds.len())
    }

    /// The row of the fault at `t`.
    fn row_of(&self, t: Instant, kinds: &[ClusterFault]) -> usize {
        self.row(self.window(t), kinds)
    }

    /// When request `ri`'s last question was first clicked to settle: where its outcome is put.
    fn request_time(&self, ri: usize) -> Option<Instant> {
        let c = self.clicked?;
        (0..self.plan[ri].questions.len())
            .filter_map(|q| c.settle_clicked.get(&(ri, q)).copied())
            .max()
    }

    fn fill(&self, report: &mut ChaosReport, standin: &StandIn, shared: &Shared) {
        let kinds: Vec<ClusterFault> = self.planned.to_vec();
        let mut rows: Vec<FaultRow> = kinds
            .iter()
            .map(|k| FaultRow {
                kind: k.name().into(),
                ..FaultRow::default()
            })
            .chain(std::iter::once(FaultRow {
                kind: "none".into(),
                ..FaultRow::default()
            }))
            .collect();
        for i in self.injected {
            let r = kinds
                .iter()
                .position(|k| *k == i.kind)
                .unwrap_or(kinds.len());
            rows[r].injected += 1;
            rows[r].bar = rows[r].bar.max(Some(i.bar));
        }
        report.cluster_faults_planned = self.planned_count;
        report.cluster_faults_injected = self.injected.len();
        report.injected = self
            .injected
            .iter()
            .map(|i| {
                format!(
                    "{} at {:.1} s: {}",
                    i.kind,
                    (i.start - shared.t0).as_secs_f64(),
                    i.what
                )
            })
            .collect();

        // Leaders from the outside: from the first live session to the end of the faults.
        if let Some(&(first, _)) = self.samples.iter().find(|s| s.1 > 0) {
            let (none, two) = cluster_faults::session_gaps(
                self.samples,
                &standin.zombie_closes(),
                first,
                self.measured_until,
            );
            for z in standin.zombie_closes() {
                shared.log(format!(
                    "the stand-in closed a silent gateway connection ({}live) at {:.2} s, silent \
                     from {:.2} s",
                    if z.was_live { "" } else { "not " },
                    (Instant::from_std(z.closed_at) - shared.t0).as_secs_f64(),
                    (Instant::from_std(z.silent_from) - shared.t0).as_secs_f64()
                ));
            }
            for &(a, b) in none.iter().chain(&two) {
                if b - a >= Duration::from_millis(200) {
                    shared.log(format!(
                        "{} from {:.2} s to {:.2} s",
                        if none.contains(&(a, b)) {
                            "no leader"
                        } else {
                            "two sessions"
                        },
                        (a - shared.t0).as_secs_f64(),
                        (b - shared.t0).as_secs_f64()
                    ));
                }
            }
            for (a, b) in none {
                let d = b - a;
                report.longest_no_leader = report.longest_no_leader.max(Some(d));
                let w = self.window_over(a, b);
                let r = self.row(w, &kinds);
                rows[r].longest_no_leader = rows[r].longest_no_leader.max(d);
                if let Some(w) = w {
                    let fault = &self.injected[w];
                    if d > fault.bar {
                        rows[r].over_bar += 1;
                        shared.problem(format!(
                            "no leader for {:.2} s from {:.2} s on, during or after the {} fault \
                             ({}); the bar is {:.2} s",
                            d.as_secs_f64(),
                            (a - shared.t0).as_secs_f64(),
                            fault.kind,
                            fault.what,
                            fault.bar.as_secs_f64()
                        ));
                    }
                }
            }
            for (a, b) in two {
                let d = b - a;
                report.longest_two_sessions = report.longest_two_sessions.max(Some(d));
                let r = self.row(self.window_over(a, b), &kinds);
                rows[r].longest_two_sessions = rows[r].longest_two_sessions.max(d);
            }
        }
        for &t in self.duplicate_times {
            let r = self.row_of(t, &kinds);
            rows[r].duplicates += 1;
        }
        report.nonce_reuses = self.nonce_reuses.len();
        for &t in &self.nonce_reuses {
            let r = self.row_of(t, &kinds);
            rows[r].nonce_reuses += 1;
        }
        let none = kinds.len();
        let at = |ri: usize| {
            self.request_time(ri)
                .map_or(none, |t| self.row_of(t, &kinds))
        };
        for &ri in self.lost {
            rows[at(ri)].lost += 1;
        }
        for &ri in self.wrong {
            rows[at(ri)].wrong += 1;
        }
        for &ri in self.twice {
            rows[at(ri)].settled_twice += 1;
        }

        // Clicks told "failed" that counted: a ballot for the stored answer (the request was
        // answered as planned) none of whose clicks got its update within 3 s of reaching a
        // session. Discord's own injected callback failures are counted apart.
        let mut log = shared.click_log.lock().unwrap();
        // The callbacks that came after the clicker stopped reading (the run ends as soon as
        // every request has its final line): Discord heard them all the same.
        for r in standin.requests() {
            let segs: Vec<&str> = r.path.split('/').collect();
            let iid = segs
                .iter()
                .position(|s| *s == "interactions")
                .and_then(|at| segs.get(at + 1))
                .and_then(|s| s.parse::<u64>().ok());
            if let (Some(iid), Some(&"callback")) = (iid, segs.last()) {
                if let Some(rec) = log.get_mut(&iid) {
                    rec.note_callback(&r);
                }
            }
        }
        let held: Vec<String> = standin
            .held_from(0)
            .into_iter()
            .filter(|h| h.path.ends_with("/callback"))
            .map(|h| h.path)
            .collect();
        // (request, question, ballot) → its clicks.
        let mut ballots: BTreeMap<(usize, usize, usize), Vec<&ClickRec>> = BTreeMap::new();
        for rec in log.values() {
            if rec.step == Step::Settle {
                ballots
                    .entry((rec.request, rec.question, rec.ballot))
                    .or_default()
                    .push(rec);
            }
        }
        let answered_right = |ri: usize| {
            let reqs = shared.reqs.lock().unwrap();
            let p = &self.plan[ri];
            reqs[ri].finals.first().is_some_and(|l| {
                let v: Value = serde_json::from_str(l).unwrap_or(Value::Null);
                v["event"] == "answered"
                    && serde_json::to_string(&v["result"]).ok().as_deref()
                        == Some(p.expected_result.as_str())
            })
        };
        for ((ri, qi, bi), clicks) in ballots {
            let pq = &self.plan[ri].questions[qi];
            let b = &pq.ballots[bi];
            if b.expect == Expect::Refused || b.pick != pq.expected || !answered_right(ri) {
                continue;
            }
            let told = clicks.iter().any(|c| {
                match (
                    c.dispatched,
                    [c.updated, c.replied].into_iter().flatten().min(),
                ) {
                    (Some(d), Some(u)) => u.saturating_duration_since(d) <= DISCORD_CALLBACK_LIMIT,
                    // Updated before the sender noted the dispatch: quick.
                    (None, Some(_)) => true,
                    _ => false,
                }
            });
            if told {
                continue;
            }
            let by_discord = clicks.iter().any(|c| {
                c.discord_failed
                    || held
                        .iter()
                        .any(|p| p.contains(&format!("/interactions/{}/", c.iid)))
            });
            if by_discord {
                report.told_failed_by_discord += 1;
                continue;
            }
            report.told_failed_counted += 1;
            let first = clicks.iter().filter_map(|c| c.dispatched).min();
            let r = first.map_or(none, |t| self.row_of(t, &kinds));
            rows[r].told_failed_counted += 1;
            shared.log(format!(
                "{} question {qi} ballot {}: counted, but none of its {} click(s) got an update \
                 within 3 s",
                self.plan[ri].request_id,
                bi + 1,
                clicks.len()
            ));
            if r < none {
                // Each click: when it reached a session, and how long its update took.
                let at = |t: Option<Instant>| {
                    t.map_or("-".to_owned(), |t| {
                        format!(
                            "{:.2}s",
                            t.saturating_duration_since(shared.t0).as_secs_f64()
                        )
                    })
                };
                let detail: Vec<String> = clicks
                    .iter()
                    .map(|c| {
                        format!(
                            "interaction {} dispatched {} updated {} replied {}",
                            c.iid,
                            at(c.dispatched),
                            at(c.updated),
                            at(c.replied)
                        )
                    })
                    .collect();
                shared.problem(format!(
                    "{} question {qi}: a click counted though Discord told the person it failed \
                     (no update within 3 s), during or after the {} fault: {}",
                    self.plan[ri].request_id,
                    kinds[r],
                    detail.join("; ")
                ));
            }
        }
        report.fault_rows = rows;
    }
}

/// Reads every request's audit rows back once the daemons are stopped, and checks the
/// settlements: one accepted `answer` row per question at most, and on a quorum route the
/// answer the plan says, settled either by a decisive label or only once enough distinct people
/// (never the requester) had voted for that answer; the voters the `answer` row lists each
/// have an earlier `vote` row for it, and so do enough distinct people counted from the `vote`
/// rows alone (each person's last vote before the settlement). Returns the quorum figures and
/// the counts of the two bars; each break is also a problem.
async fn check_audit(
    db_url: &str,
    plan: &[PlannedRequest],
    shared: &Shared,
    settled_twice: &mut Vec<usize>,
) -> ChaosReport {
    let mut out = ChaosReport::default();
    let store = match askrelay::store::open(
        db_url,
        &askrelay::config::PostgresConfig::default(),
        &askrelay::store::StoreHooks::default(),
    )
    .await
    {
        Ok(s) => s,
        Err(e) => {
            shared.problem(format!(
                "cannot open the database to check the audit rows: {e:#}"
            ));
            return out;
        }
    };
    // The audit log names a Discord user `discord:ID name=NAME` (askrelay::domain::audit::actor).
    let requester = format!("discord:{REQUESTER_DISCORD_ID} ");
    for (pi, p) in plan.iter().enumerate() {
        let rid = &p.request_id;
        let quorum = p.approvals > 1;
        if quorum {
            out.quorum_requests += 1;
            out.quorum_questions += p.questions.len();
            out.ballots_planned += p.questions.iter().map(|q| q.ballots.len()).sum::<usize>();
        }
        let req = match store.by_id(rid).await {
            Ok(Some(r)) => r,
            Ok(None) => {
                shared.problem(format!("{rid}: not in the database"));
                continue;
            }
            Err(e) => {
                shared.problem(format!("{rid}: cannot read it back: {e:#}"));
                continue;
            }
        };
        let rows = match store.audit_rows(Some(req.key)).await {
            Ok(rows) => rows,
            Err(e) => {
                shared.problem(format!("{rid}: cannot read its audit rows: {e:#}"));
                continue;
            }
        };
        let route = format!("quorum-{}", p.approvals);
        if quorum && req.route.as_deref() != Some(route.as_str()) {
            out.quorum_violations += 1;
            shared.problem(format!(
                "{rid}: asked for route {route}, went to {:?}",
                req.route
            ));
            continue;
        }
        for (qi, q) in p.questions.iter().enumerate() {
            let of_q = |action: &'static str| {
                rows.iter()
                    .filter(move |r| r.action == action && r.question_idx == Some(qi as i64))
            };
            let won: Vec<_> = of_q("answer").filter(|r| r.accepted).collect();
            if won.len() > 1 {
                out.settled_twice += 1;
                settled_twice.push(pi);
                shared.problem(format!(
                    "{rid} question {qi} was settled {} times: {:?}",
                    won.len(),
                    won.iter().map(|r| &r.detail).collect::<Vec<_>>()
                ));
            }
            if !quorum {
                continue;
            }
            let votes: Vec<_> = of_q("vote").filter(|r| r.accepted).collect();
            out.votes += votes.len();
            out.requester_refused += of_q("forbidden").count();
            let mut wrong: Vec<String> = Vec::new();
            let by_requester =
                |a: &Option<String>| a.as_deref().is_some_and(|a| a.starts_with(&requester));
            if votes.iter().any(|v| by_requester(&v.actor)) {
                wrong.push("a vote of the requester was counted".into());
            }
            let Some(ans) = won.first() else {
                if req.answers.get(qi).is_some_and(Option::is_some) {
                    wrong.push("answered, with no accepted answer row".into());
                }
                if !wrong.is_empty() {
                    out.quorum_violations += 1;
                    shared.problem(format!("{rid} question {qi}: {}", wrong.join("; ")));
                }
                continue;
            };
            // The audit detail names the options by their labels.
            let chosen = serde_json::to_string(&serde_json::json!({
                "selected": q.expected.iter().map(|&o| q.labels[o].as_str()).collect::<Vec<_>>()
            }))
            .unwrap_or_default();
            let detail = ans.detail.as_deref().unwrap_or("");
            if !detail.starts_with(&chosen) {
                wrong.push(format!(
                    "settled as {detail:?}, where the voters chose {chosen}"
                ));
            }
            if by_requester(&ans.actor) {
                wrong.push("settled by the requester".into());
            }
            // "discord:4200101 name=voter-1, discord:4200102 name=voter-2"
            let listed: Vec<&str> = detail
                .split_once(" voters: ")
                .map(|(_, v)| v.split(", ").collect())
                .unwrap_or_default();
            if q.decisive {
                if wrong.is_empty() {
                    out.settled_by_decisive += 1;
                }
            } else {
                let mut distinct = HashSet::new();
                for v in &listed {
                    let id = v.split(' ').next().unwrap_or(v);
                    if !distinct.insert(id) {
                        wrong.push(format!("{v} is listed twice among the voters"));
                    }
                    let own = format!("{id} ");
                    let last = votes
                        .iter()
                        .filter(|r| r.id < ans.id)
                        .rfind(|r| r.actor.as_deref().is_some_and(|a| a.starts_with(&own)));
                    if !last.is_some_and(|r| {
                        r.detail.as_deref().is_some_and(|d| d.starts_with(&chosen))
                    }) {
                        wrong.push(format!(
                            "{v} is listed, but their last vote before the settlement was {:?}",
                            last.map(|r| &r.detail)
                        ));
                    }
                }
                if distinct.len() < p.approvals {
                    wrong.push(format!(
                        "{} voter(s) listed, {} needed: {detail:?}",
                        distinct.len(),
                        p.approvals
                    ));
                }
                // From the vote rows alone: each person's last vote before the settlement.
                let mut latest: HashMap<&str, &str> = HashMap::new();
                for r in votes.iter().filter(|r| r.id < ans.id) {
                    if let (Some(a), Some(d)) = (r.actor.as_deref(), r.detail.as_deref()) {
                        latest.insert(a, d);
                    }
                }
                let agreeing = latest.values().filter(|d| d.starts_with(&chosen)).count();
                if agreeing < p.approvals {
                    wrong.push(format!(
                        "{agreeing} distinct voter(s) chose it before it settled, {} needed",
                        p.approvals
                    ));
                }
                if wrong.is_empty() {
                    out.settled_by_quorum += 1;
                }
            }
            if !wrong.is_empty() {
                out.quorum_violations += 1;
                shared.problem(format!("{rid} question {qi}: {}", wrong.join("; ")));
            }
        }
    }
    out
}

/// The database the nodes share, as [`ChaosConfig::database`] asks.
struct Database {
    url: String,
    /// What the report calls it.
    label: String,
    /// PostgreSQL: the nodes run in cluster mode, each with a node id.
    cluster: bool,
    /// A database this run created on the test server, to be dropped at the end.
    scratch: Option<ScratchDb>,
}

async fn open_database(cfg: &ChaosConfig, dir: &Path) -> Result<Database, String> {
    if cfg.nodes == 0 {
        return Err("nodes: at least 1".into());
    }
    let sqlite = || Database {
        url: format!("sqlite://{}", dir.join("askrelay.db").display()),
        label: "SQLite".into(),
        cluster: false,
        scratch: None,
    };
    match cfg.database.as_deref() {
        None | Some("sqlite") if cfg.nodes == 1 => Ok(sqlite()),
        Some("sqlite") => Err(format!(
            "{} nodes cannot share a SQLite file; use --database postgres",
            cfg.nodes
        )),
        None | Some("postgres" | "postgresql") => {
            let scratch = ScratchDb::create()
                .await
                .map_err(|e| format!("cannot create a scratch database for the cluster: {e:#}"))?;
            Ok(Database {
                url: scratch.url.clone(),
                label: format!("PostgreSQL (scratch database {})", scratch.name),
                cluster: true,
                scratch: Some(scratch),
            })
        }
        Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
            Ok(Database {
                url: url.to_owned(),
                label: format!("PostgreSQL ({})", redact_url(url)),
                cluster: true,
                scratch: None,
            })
        }
        Some(other) => Err(format!(
            "database {other:?}: expected \"postgres\" (a scratch database), a postgres:// URL \
             or \"sqlite\""
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plan's quorum questions can only settle as planned: the ballots that agree are
    /// distinct people of the pool, as many as the route needs (or one decisive vote, last),
    /// the requester's ballot is expected to be refused, and a dissenting vote picks another
    /// option that does not decide alone.
    #[test]
    fn quorum_ballots_are_distinct_people_enough_for_the_route() {
        let cfg = ChaosConfig::new(300, 0, 26);
        let plan = make_plan(&cfg, &mut Rng::new(cfg.seed));
        let (mut by_quorum, mut decisive, mut dissent, mut refused) = (0, 0, 0, 0);
        for p in &plan {
            for q in &p.questions {
                if p.approvals == 1 {
                    assert_eq!(q.ballots.len(), 1);
                    assert_eq!(q.ballots[0].who, 0);
                    continue;
                }
                let agreeing: Vec<&Ballot> = (q.ballots.iter())
                    .filter(|b| b.pick == q.expected && b.expect != Expect::Refused)
                    .collect();
                let people: HashSet<usize> = q
                    .ballots
                    .iter()
                    .filter(|b| b.expect != Expect::Refused)
                    .map(|b| b.who)
                    .collect();
                assert_eq!(
                    people.len(),
                    q.ballots.len() - usize::from(q.ballots[0].expect == Expect::Refused),
                    "one ballot per person: {:?}",
                    q.ballots
                );
                assert!(people.iter().all(|w| POOL.contains(w)));
                assert_eq!(q.ballots.last().unwrap().expect, Expect::Settles);
                if q.decisive {
                    decisive += 1;
                    assert!(DECISIVE.contains(&q.labels[q.expected[0]].as_str()));
                    assert_eq!(agreeing.len(), 1);
                } else {
                    by_quorum += 1;
                    assert_eq!(agreeing.len(), p.approvals, "{:?}", q.ballots);
                    assert!(q
                        .expected
                        .iter()
                        .all(|&o| !DECISIVE.contains(&q.labels[o].as_str())));
                }
                for b in &q.ballots {
                    match b.expect {
                        Expect::Refused => {
                            refused += 1;
                            assert_eq!(b.who, REQUESTER);
                        }
                        _ if b.pick != q.expected => {
                            dissent += 1;
                            assert_eq!(b.expect, Expect::Votes);
                            assert!(!DECISIVE.contains(&q.labels[b.pick[0]].as_str()));
                        }
                        _ => {}
                    }
                }
            }
        }
        assert!(
            by_quorum > 0 && decisive > 0 && dissent > 0 && refused > 0,
            "{by_quorum} {decisive} {dissent} {refused}"
        );
        // Both quorum routes are in the mix, and never on an escalating request.
        assert!(plan.iter().any(|p| p.approvals == 2));
        assert!(plan.iter().any(|p| p.approvals == 3));
        assert!(plan.iter().step_by(3).all(|p| p.approvals == 1));
    }
}
