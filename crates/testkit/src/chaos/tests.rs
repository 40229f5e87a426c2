//! The plan's own unit tests.

use super::plan::{make_plan, Ballot, Expect, DECISIVE, POOL, REQUESTER};
use super::{ChaosConfig, Rng};
use std::collections::HashSet;

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
