//! The plan: the requests, their questions, and the answer the clicker gives each question (the
//! ballots of a quorum question, the people who cast them), all drawn from the seed.

use super::{ChaosConfig, Rng};
use crate::fixtures::Clicker;
use serde_json::{json, Value};

/// Who clicks: index 0 is the clicker of the first-wins questions, [`POOL`] the distinct
/// people who vote on the quorum routes, and [`REQUESTER`] the person who asked (its Discord
/// account is mapped to the harness's own uid by an `[[identities]]` entry, so a quorum route
/// must refuse it).
pub(super) const POOL: std::ops::RangeInclusive<usize> = 1..=6;
pub(super) const REQUESTER: usize = 7;

/// The clickers, by the index a ballot names.
pub(super) fn people() -> Vec<Clicker> {
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
pub(super) const REQUESTER_DISCORD_ID: u64 = 4_200_099;

/// What the daemon should make of a ballot.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Expect {
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
pub(super) struct Ballot {
    /// Into [`people`].
    pub(super) who: usize,
    /// The option indices chosen.
    pub(super) pick: Vec<usize>,
    pub(super) expect: Expect,
}

pub(super) struct PlannedQuestion {
    id: String,
    pub(super) labels: Vec<String>,
    pub(super) multi: bool,
    /// The option indices the question settles with, in option order.
    pub(super) expected: Vec<usize>,
    /// Whether `expected` is a decisive label (settles with one vote on a quorum route).
    pub(super) decisive: bool,
    /// The clicks, in order: one on a first-wins route; on a quorum route maybe the requester
    /// (refused) and a dissenting vote, then enough distinct voters (or one decisive vote).
    pub(super) ballots: Vec<Ballot>,
}

pub(super) struct PlannedRequest {
    pub(super) request_id: String,
    pub(super) questions: Vec<PlannedQuestion>,
    pub(super) ask_line: String,
    /// The exact `result` an `answered` line must carry.
    pub(super) expected_result: String,
    /// The approvals its route needs: 1 (first wins), 2 or 3 (the quorum routes).
    pub(super) approvals: usize,
}

/// The labels that settle with one vote on a quorum route: the front doors' "Deny" on both,
/// and `decisive_labels = ["Hold"]` on `quorum-3`. They repeat across questions, so they never
/// tell the clicker which question a message is.
pub(super) const DECISIVE: [&str; 2] = ["Deny", "Hold"];

pub(super) fn make_plan(cfg: &ChaosConfig, rng: &mut Rng) -> Vec<PlannedRequest> {
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

pub(super) fn plan_question(
    request_id: &str,
    qi: usize,
    approvals: usize,
    rng: &mut Rng,
) -> PlannedQuestion {
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
