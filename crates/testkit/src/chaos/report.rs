//! What a chaos run reports: the counts, the bars they are held to, the cluster faults' table
//! (one [`FaultRow`] per kind), and the text `render` prints.

use std::path::PathBuf;
use std::time::Duration;

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
