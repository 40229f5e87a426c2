//! The cluster faults' figures, computed once the run is over: per fault kind, the stretches
//! without a live gateway session (or with two), duplicates, lost answers, double settlements,
//! wrong answers and clicks told "failed" that counted.

use super::clicker::ClickerOut;
use super::cluster_faults::{self, ClusterFault, Injected};
use super::plan::{Expect, PlannedRequest};
use super::report::{ChaosReport, FaultRow};
use super::shared::{ClickRec, Shared, Step};
use crate::standin::StandIn;
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Duration;
use tokio::time::Instant;

/// What the cluster fault figures are computed from, once the run is over.
pub(super) struct Outcomes<'a> {
    pub(super) injected: &'a [Injected],
    /// The kinds planned (a row each, even when none was injected).
    pub(super) planned: &'a [ClusterFault],
    pub(super) planned_count: usize,
    /// The live gateway sessions over time.
    pub(super) samples: &'a [(Instant, usize)],
    pub(super) measured_until: Instant,
    /// When each duplicate message was created.
    pub(super) duplicate_times: &'a [Instant],
    /// When each message with a reused nonce was created.
    pub(super) nonce_reuses: Vec<Instant>,
    /// Requests (plan indexes) whose answer was lost, wrong, settled twice.
    pub(super) lost: &'a [usize],
    pub(super) wrong: &'a [usize],
    pub(super) twice: &'a [usize],
    pub(super) clicked: Option<&'a ClickerOut>,
    pub(super) plan: &'a [PlannedRequest],
}

/// Discord shows "This interaction failed" when no callback came within this long.
pub(super) const DISCORD_CALLBACK_LIMIT: Duration = Duration::from_secs(3);

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

    pub(super) fn fill(&self, report: &mut ChaosReport, standin: &StandIn, shared: &Shared) {
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
