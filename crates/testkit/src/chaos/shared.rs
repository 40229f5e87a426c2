//! The state the tasks of a run share: each request's final lines, the clicks and what came of
//! them, the problems seen, the kills and failovers.

use crate::standin::Recorded;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// Which click of a question a [`ClickRec`] is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Step {
    /// Multi-select only: record the draft (the select menu).
    Draft,
    /// The click that settles: a button, a single-select pick, or "Submit".
    Settle,
}

#[derive(Default)]
pub(super) struct ReqState {
    /// Every final line the client saw, in order.
    pub(super) finals: Vec<String>,
    /// The final line of the re-attach at the very end.
    pub(super) replay: Option<String>,
    /// Final lines that came after a first one on the same connection.
    pub(super) second_on_same_connection: usize,
    pub(super) connects: usize,
    pub(super) accepted: usize,
    pub(super) finished: bool,
    /// Anything odd the client saw.
    pub(super) odd: Vec<String>,
}

pub(super) struct Shared {
    pub(super) t0: Instant,
    pub(super) verbose: bool,
    pub(super) reqs: Mutex<Vec<ReqState>>,
    /// Starts of any node so far (1 after the first): a click sent before the last start may
    /// have gone to a process that is gone.
    pub(super) epoch: AtomicU64,
    /// Requests whose client has a final line.
    pub(super) finished: watch::Sender<usize>,
    /// What the clicker saw: (questions with a message, questions known to be settled). The
    /// kill points are thresholds on the sum, so about half fall while questions are posted
    /// and half while they are clicked.
    pub(super) progress: watch::Sender<(usize, usize)>,
    /// Set once every request has a final line (or the deadline passed): the monkey does its
    /// last kills, the clicker and the fault task stop.
    pub(super) all_done: watch::Sender<bool>,
    /// Set at the very end: the clients stop reading.
    pub(super) stop: watch::Sender<bool>,
    pub(super) problems: Mutex<Vec<String>>,
    pub(super) notes: Mutex<Vec<String>>,
    pub(super) kills: AtomicUsize,
    pub(super) crash_aborts: AtomicUsize,
    pub(super) restarts: AtomicUsize,
    pub(super) gateway_drops: AtomicUsize,
    pub(super) stalls: AtomicUsize,
    pub(super) clicks: AtomicUsize,
    pub(super) clicks_repeated: AtomicUsize,
    pub(super) daemon_error_lines: AtomicUsize,
    pub(super) daemon_errors: Mutex<Vec<String>>,
    pub(super) fatal: AtomicBool,
    pub(super) leader_kills: AtomicUsize,
    /// Failovers after which another node than the killed one led.
    pub(super) lead_moves: AtomicUsize,
    /// Each leader kill's failover time, once the next gateway session was live.
    pub(super) failovers: Mutex<Vec<Duration>>,
    /// The tasks timing failovers; the report waits for them.
    pub(super) failover_watches: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    /// Every click by interaction id: when it reached a gateway session and what Discord heard
    /// back, for "told failed, counted".
    pub(super) click_log: Mutex<HashMap<u64, ClickRec>>,
}

/// One click (interaction) and its callbacks.
pub(super) struct ClickRec {
    pub(super) iid: u64,
    pub(super) request: usize,
    pub(super) question: usize,
    pub(super) ballot: usize,
    pub(super) step: Step,
    /// When the stand-in handed it to a live gateway session: Discord's 3 s start then.
    pub(super) dispatched: Option<Instant>,
    /// When the first successful type 7 or 6 callback (the message updated, or its update deferred: the vote shown or the
    /// question settled) came.
    pub(super) updated: Option<Instant>,
    /// When the first other successful callback came that says nothing failed: a private
    /// "Already answered" or "you already voted" (type 4), or a form (type 9). Discord tells
    /// the person the interaction failed only when no callback comes within 3 s.
    pub(super) replied: Option<Instant>,
    /// Discord itself failed (injected 5xx or 429) or held (a stall) a callback of it.
    pub(super) discord_failed: bool,
}

impl ClickRec {
    /// Notes a callback of this click, as Discord hears it.
    pub(super) fn note_callback(&mut self, r: &Recorded) {
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
    pub(super) fn log(&self, what: impl AsRef<str>) {
        if self.verbose {
            eprintln!(
                "[chaos {:>7.2}s] {}",
                self.t0.elapsed().as_secs_f64(),
                what.as_ref()
            );
        }
    }

    pub(super) fn problem(&self, what: String) {
        self.log(format!("PROBLEM: {what}"));
        let mut p = self.problems.lock().unwrap();
        if !p.contains(&what) {
            p.push(what);
        }
    }

    pub(super) fn note(&self, what: String) {
        self.log(format!("note: {what}"));
        let mut n = self.notes.lock().unwrap();
        if !n.contains(&what) {
            n.push(what);
        }
    }

    pub(super) fn fatal(&self, what: String) {
        self.problem(what);
        self.fatal.store(true, Ordering::SeqCst);
        self.all_done.send_replace(true);
    }

    pub(super) fn is_fatal(&self) -> bool {
        self.fatal.load(Ordering::SeqCst)
    }

    /// Records a final line for request `i`; `again` when the same connection already had one.
    pub(super) fn record_final(&self, i: usize, line: &str, again: bool) {
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
