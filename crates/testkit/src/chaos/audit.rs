//! The audit check at the end of a run: every request's audit rows read back from the
//! database, at most one accepted answer per question, and every quorum question settled as
//! planned by enough distinct people.

use super::plan::{PlannedRequest, REQUESTER_DISCORD_ID};
use super::report::ChaosReport;
use super::shared::Shared;
use std::collections::{HashMap, HashSet};

/// Reads every request's audit rows back once the daemons are stopped, and checks the
/// settlements: one accepted `answer` row per question at most, and on a quorum route the
/// answer the plan says, settled either by a decisive label or only once enough distinct people
/// (never the requester) had voted for that answer; the voters the `answer` row lists each
/// have an earlier `vote` row for it, and so do enough distinct people counted from the `vote`
/// rows alone (each person's last vote before the settlement). Returns the quorum figures and
/// the counts of the two bars; each break is also a problem.
pub(super) async fn check_audit(
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
