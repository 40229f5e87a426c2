//! Routes as Slack sees them (docs/slack.md, "Routes"): a request goes to the Slack channel of
//! the first `[[routes]]` entry its scope matches, when that route is answered by Slack and
//! names a `slack_channel_id`; a request no route matches goes to `slack.channel_id` (the
//! route named `default`). Who may answer comes from the route's Slack allowlists, else
//! `[slack]`'s, widened by the escalation steps that have begun; reminders and escalation
//! steps come from the route's keys, else `[slack]`'s.

use crate::answerer::routing::{self, identities, policy, Remind};
use crate::config::{Config, Route, SlackEscalationStep};
use crate::domain::quorum::Policy;
use crate::domain::request::Request;
use crate::domain::Scope;

/// The name of the route built from `[slack]`.
pub const DEFAULT_ROUTE: &str = "default";

/// A route with `[slack]`'s defaults filled in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlackRoute {
    pub name: String,
    /// The channel its questions are posted in.
    pub channel: String,
    pub allowed_user_ids: Vec<String>,
    pub allowed_usergroup_ids: Vec<String>,
    /// Who gets a copy of each question in a DM from the start, and may answer there.
    pub dm_user_ids: Vec<String>,
    /// The route's own expiry rule (else the daemon's `[expiry]` applies).
    pub expiry: Option<crate::domain::ExpiryRule>,
    /// Whether a person at a terminal may answer its requests: its `terminal_answers`, or
    /// "terminal" among its `answerers`.
    pub terminal_answers: bool,
    /// Nobody may answer: the route a request was posted through is gone from the config.
    pub closed: bool,
    pub policy: Policy,
    /// Who each reminder mentions: users (`<@U…>`) and user groups (`<!subteam^S…>`).
    pub mention_user_ids: Vec<String>,
    pub mention_usergroup_ids: Vec<String>,
    pub remind: Option<Remind>,
    /// Escalation steps, in order of `after_secs`.
    pub escalate: Vec<SlackStep>,
}

/// An escalation step ([`SlackEscalationStep`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlackStep {
    pub after_secs: u64,
    pub mention_user_ids: Vec<String>,
    pub mention_usergroup_ids: Vec<String>,
    /// Who gets a copy of each open question in a DM, and may answer from then on.
    pub dm_user_ids: Vec<String>,
    /// A channel that gets a linked copy of each open question.
    pub channel_id: Option<String>,
    pub allowed_user_ids: Vec<String>,
    pub allowed_usergroup_ids: Vec<String>,
}

impl SlackStep {
    /// Whether the step's note has anyone to mention.
    pub fn mentions(&self) -> bool {
        !self.mention_user_ids.is_empty() || !self.mention_usergroup_ids.is_empty()
    }
}

fn steps(steps: &[SlackEscalationStep]) -> Vec<SlackStep> {
    steps
        .iter()
        .map(|s| SlackStep {
            after_secs: s.after_secs,
            mention_user_ids: s.mention_user_ids.clone(),
            mention_usergroup_ids: s.mention_usergroup_ids.clone(),
            dm_user_ids: s.dm_user_ids.clone(),
            channel_id: s.channel_id.clone(),
            allowed_user_ids: s.allowed_user_ids.clone(),
            allowed_usergroup_ids: s.allowed_usergroup_ids.clone(),
        })
        .collect()
}

impl SlackRoute {
    /// Whether `user`, a member of `groups` (of this route's allowed groups), may answer here:
    /// on either list; both empty lets anyone who can see the channel answer.
    pub fn allows(&self, user: &str, groups: &[String]) -> bool {
        if self.closed {
            return false;
        }
        if self.allowed_user_ids.is_empty() && self.allowed_usergroup_ids.is_empty() {
            return true;
        }
        self.allowed_user_ids.iter().any(|u| u == user)
            || self.dm_user_ids.iter().any(|u| u == user)
            || groups
                .iter()
                .any(|g| self.allowed_usergroup_ids.contains(g))
    }

    /// The escalation steps of a request asked at `asked_at_ms` that have begun by `now_ms`.
    fn begun(&self, asked_at_ms: i64, now_ms: i64) -> impl Iterator<Item = &SlackStep> {
        self.escalate
            .iter()
            .take_while(move |s| asked_at_ms.saturating_add(s.after_secs as i64 * 1000) <= now_ms)
    }

    /// [`SlackRoute::allows`], widened by what a request asked at `asked_at_ms` has reached by
    /// `now_ms`: the people of every escalation step that has begun (those it sent the
    /// question to by DM, and its allowlists).
    pub fn allows_at(&self, user: &str, groups: &[String], asked_at_ms: i64, now_ms: i64) -> bool {
        if self.allows(user, groups) {
            return true;
        }
        !self.closed
            && self.begun(asked_at_ms, now_ms).any(|s| {
                s.dm_user_ids.iter().any(|u| u == user)
                    || s.allowed_user_ids.iter().any(|u| u == user)
                    || groups.iter().any(|g| s.allowed_usergroup_ids.contains(g))
            })
    }

    /// The user groups whose members may answer a request asked at `asked_at_ms`, at
    /// `now_ms`: the route's, and those of the escalation steps that have begun.
    pub fn groups_at(&self, asked_at_ms: i64, now_ms: i64) -> Vec<String> {
        let mut groups = self.allowed_usergroup_ids.clone();
        for s in self.begun(asked_at_ms, now_ms) {
            for g in &s.allowed_usergroup_ids {
                if !groups.contains(g) {
                    groups.push(g.clone());
                }
            }
        }
        groups
    }
}

/// The route `r` as Slack answers it; `None` when Slack does not show its requests.
fn from_route(config: &Config, r: &Route) -> Option<SlackRoute> {
    if !r.answered_by(super::NAME) {
        return None;
    }
    let s = &config.slack;
    Some(SlackRoute {
        name: r.name.clone(),
        channel: r.slack_channel_id.clone()?,
        allowed_user_ids: r
            .slack_allowed_user_ids
            .clone()
            .unwrap_or_else(|| s.allowed_user_ids.clone()),
        allowed_usergroup_ids: r
            .slack_allowed_usergroup_ids
            .clone()
            .unwrap_or_else(|| s.allowed_usergroup_ids.clone()),
        dm_user_ids: r
            .slack_dm_user_ids
            .clone()
            .unwrap_or_else(|| s.dm_user_ids.clone()),
        expiry: r.expiry_rule(),
        terminal_answers: r.terminal_answers.unwrap_or(s.terminal_answers)
            || r.answerers
                .as_ref()
                .is_some_and(|a| a.iter().any(|n| n == "terminal")),
        closed: false,
        policy: policy(config, r),
        mention_user_ids: r
            .slack_mention_user_ids
            .clone()
            .unwrap_or_else(|| s.mention_user_ids.clone()),
        mention_usergroup_ids: r
            .slack_mention_usergroup_ids
            .clone()
            .unwrap_or_else(|| s.mention_usergroup_ids.clone()),
        remind: Remind::of_route(r, s.remind_after_secs, s.remind_every_secs, s.remind_max),
        escalate: steps(r.slack_escalate.as_deref().unwrap_or(&s.escalate)),
    })
}

fn default_route(config: &Config) -> Option<SlackRoute> {
    let s = &config.slack;
    Some(SlackRoute {
        name: DEFAULT_ROUTE.to_owned(),
        channel: s.channel_id.clone()?,
        allowed_user_ids: s.allowed_user_ids.clone(),
        allowed_usergroup_ids: s.allowed_usergroup_ids.clone(),
        dm_user_ids: s.dm_user_ids.clone(),
        expiry: None,
        terminal_answers: s.terminal_answers,
        closed: false,
        policy: Policy {
            identities: identities(config),
            ..Policy::default()
        },
        mention_user_ids: s.mention_user_ids.clone(),
        mention_usergroup_ids: s.mention_usergroup_ids.clone(),
        remind: Remind::new(s.remind_after_secs, s.remind_every_secs, s.remind_max),
        escalate: steps(&s.escalate),
    })
}

/// The route a new request with `scope` goes to, or why Slack does not take it.
pub fn resolve(config: &Config, scope: &Scope) -> Result<SlackRoute, String> {
    match routing::matching(config, scope) {
        Some(r) if !r.answered_by(super::NAME) => Err(format!(
            "route {:?} is not answered in Slack (its answerers: {})",
            r.name,
            r.answerers().join(", ")
        )),
        Some(r) => from_route(config, r)
            .ok_or_else(|| format!("route {:?} has no slack_channel_id", r.name)),
        None => default_route(config).ok_or_else(|| {
            "no route matches the request's scope and slack.channel_id is not set".to_owned()
        }),
    }
}

/// The name of every route Slack may post a request through.
pub fn names(config: &Config) -> Vec<String> {
    config
        .routes
        .iter()
        .filter_map(|r| from_route(config, r).map(|r| r.name))
        .chain(default_route(config).map(|r| r.name))
        .collect()
}

/// The route a request was posted through (by the name stored with it), else the one its
/// scope matches now, else a closed one: nobody may answer there (the route is gone).
pub fn of_request(config: &Config, req: &Request) -> SlackRoute {
    let by_name = req.route.as_deref().and_then(|n| {
        routing::named(config, n)
            .and_then(|r| from_route(config, r))
            .or_else(|| {
                (n == DEFAULT_ROUTE)
                    .then(|| default_route(config))
                    .flatten()
            })
    });
    by_name
        .or_else(|| resolve(config, &req.scope).ok())
        .unwrap_or_else(|| SlackRoute {
            name: "(removed)".to_owned(),
            channel: String::new(),
            allowed_user_ids: Vec::new(),
            allowed_usergroup_ids: Vec::new(),
            dm_user_ids: Vec::new(),
            expiry: None,
            terminal_answers: config.slack.terminal_answers,
            closed: true,
            policy: Policy::default(),
            mention_user_ids: Vec::new(),
            mention_usergroup_ids: Vec::new(),
            remind: None,
            escalate: Vec::new(),
        })
}

/// Every route a request can have now: the default and each route Slack answers.
pub fn all(config: &Config) -> Vec<SlackRoute> {
    default_route(config)
        .into_iter()
        .chain(config.routes.iter().filter_map(|r| from_route(config, r)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn config() -> Config {
        let mut c = Config::default();
        c.slack.channel_id = Some("C0DEFAULT".into());
        c.slack.allowed_user_ids = vec!["U0ALICE".into()];
        let ops = Route {
            matches: BTreeMap::from([("project".into(), "ops-*".into())]),
            channel_id: None,
            slack_channel_id: Some("C0OPS".into()),
            slack_allowed_usergroup_ids: Some(vec!["S0ONCALL".into()]),
            ..Route::new("ops", 1)
        };
        let discord_only = Route {
            matches: BTreeMap::from([("project".into(), "web".into())]),
            ..Route::new("web", 2)
        };
        let no_channel = Route {
            matches: BTreeMap::from([("project".into(), "odd".into())]),
            channel_id: None,
            answerers: Some(vec!["slack".into()]),
            ..Route::new("odd", 3)
        };
        c.routes = vec![ops, discord_only, no_channel];
        c
    }

    fn scope(project: &str) -> Scope {
        Scope::from([("project".into(), project.into())])
    }

    #[test]
    fn a_request_goes_to_its_routes_slack_channel_or_the_default() {
        let c = config();
        let ops = resolve(&c, &scope("ops-db")).unwrap();
        assert_eq!((ops.name.as_str(), ops.channel.as_str()), ("ops", "C0OPS"));
        // The route's group list, and [slack]'s user list where the route sets none.
        assert_eq!(ops.allowed_usergroup_ids, ["S0ONCALL"]);
        assert_eq!(ops.allowed_user_ids, ["U0ALICE"]);
        assert!(ops.allows("U0BOB", &["S0ONCALL".into()]) && ops.allows("U0ALICE", &[]));
        assert!(!ops.allows("U0BOB", &["S0OTHER".into()]));
        let default = resolve(&c, &scope("elsewhere")).unwrap();
        assert_eq!(
            (default.name.as_str(), default.channel.as_str()),
            ("default", "C0DEFAULT")
        );
        // A route Discord alone answers, and one that names Slack without a channel.
        let web = resolve(&c, &scope("web")).unwrap_err();
        assert!(
            web.contains("not answered in Slack (its answerers: discord)"),
            "{web}"
        );
        let odd = resolve(&c, &scope("odd")).unwrap_err();
        assert_eq!(odd, "route \"odd\" has no slack_channel_id");
        assert_eq!(names(&c), ["ops", "default"]);
        let mut none = c.clone();
        none.slack.channel_id = None;
        assert!(resolve(&none, &scope("elsewhere"))
            .unwrap_err()
            .contains("slack.channel_id"));
    }

    #[test]
    fn an_escalation_steps_people_may_answer_once_it_has_begun() {
        let mut c = config();
        c.slack.escalate = vec![SlackEscalationStep {
            after_secs: 60,
            dm_user_ids: vec!["U0LEAD001".into()],
            allowed_usergroup_ids: vec!["S0LEADS01".into()],
            mention_user_ids: vec!["U0MENTION".into()],
            ..Default::default()
        }];
        let r = resolve(&c, &scope("elsewhere")).unwrap();
        let asked = 1_000;
        let (before, after) = (asked + 59_999, asked + 60_000);
        assert!(!r.allows_at("U0LEAD001", &[], asked, before));
        assert!(r.allows_at("U0LEAD001", &[], asked, after));
        assert!(r.allows_at("U0BOB0001", &["S0LEADS01".into()], asked, after));
        // Mentioned is not allowed.
        assert!(!r.allows_at("U0MENTION", &[], asked, after));
        assert_eq!(r.groups_at(asked, before), Vec::<String>::new());
        assert_eq!(r.groups_at(asked, after), ["S0LEADS01"]);
        // A route with its own steps does not take [slack]'s.
        let ops = resolve(&c, &scope("ops-db")).unwrap();
        assert_eq!(ops.escalate.len(), 1);
        c.routes[0].slack_escalate = Some(vec![]);
        assert!(resolve(&c, &scope("ops-db")).unwrap().escalate.is_empty());
    }
}
