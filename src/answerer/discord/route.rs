//! Routes (`[[routes]]`, docs/contract.md, "Answerers and routes"): which channel a request goes to and who may answer it there.
//!
//! Routes are tried in order; the first whose globs all match the request's scope wins, else
//! the default route (`discord.channel_id`) if it is set.

use crate::answerer::routing::{self, identities, policy};
use crate::config::{Config, EscalationStep, Route, Snowflake};
use crate::domain::quorum::Policy;
use crate::domain::request::Request;
use crate::domain::Scope;

/// The name of the route built from the `[discord]` section.
pub const DEFAULT_ROUTE: &str = "default";

/// A route with the `[discord]` defaults filled in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedRoute {
    pub name: String,
    pub channel_id: u64,
    pub allowed_user_ids: Vec<u64>,
    pub allowed_role_ids: Vec<u64>,
    pub mention_user_ids: Vec<u64>,
    pub mention_role_ids: Vec<u64>,
    /// The route's own expiry rule (else the daemon's `[expiry]` applies).
    pub expiry: Option<crate::domain::ExpiryRule>,
    /// Whether a person at a terminal (`askrelay answer`) may answer requests on this route.
    pub terminal_answers: bool,
    /// Nobody may answer: the route a request was posted through is gone from the config and
    /// there is no default to fall back on.
    pub closed: bool,
    /// Users who get each question in a DM too; they may answer there.
    pub dm_user_ids: Vec<u64>,
    pub remind: Option<Remind>,
    /// Escalation steps, in order of `after_secs`.
    pub escalate: Vec<Step>,
    /// Quorum, decisive labels and the requester rule.
    pub policy: Policy,
    /// Whether a session's requests go to a thread of its own.
    pub threads: crate::config::Threads,
}

pub use crate::answerer::routing::Remind;

/// An escalation step with the ids as numbers (see [`crate::config::EscalationStep`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub after_secs: u64,
    pub mention_role_ids: Vec<u64>,
    pub mention_user_ids: Vec<u64>,
    pub channel_id: Option<u64>,
    pub dm_user_ids: Vec<u64>,
    pub allowed_role_ids: Vec<u64>,
    pub allowed_user_ids: Vec<u64>,
}

impl ResolvedRoute {
    /// A member may answer when either list names them; both lists empty lets anyone who can
    /// see the channel answer.
    pub fn allows(&self, user_id: u64, role_ids: &[u64]) -> bool {
        if self.closed {
            return false;
        }
        if self.allowed_user_ids.is_empty() && self.allowed_role_ids.is_empty() {
            return true;
        }
        self.allowed_user_ids.contains(&user_id)
            || role_ids.iter().any(|r| self.allowed_role_ids.contains(r))
    }

    /// Whether this route posts in `channel`: its own channel, or an escalation step's.
    pub fn posts_in(&self, channel: u64) -> bool {
        !self.closed
            && (self.channel_id == channel
                || self.escalate.iter().any(|s| s.channel_id == Some(channel)))
    }

    /// Whether a member may see this route's requests listed in `channel`: only where the route
    /// posts ([`ResolvedRoute::posts_in`]), and only if they may answer on the route there
    /// (its allowlists, or those of an escalation step that posts in that channel). A listing
    /// shows no more than the route's own messages there do.
    pub fn shows_in(&self, channel: u64, user_id: u64, role_ids: &[u64]) -> bool {
        self.posts_in(channel)
            && (self.allows(user_id, role_ids)
                || self.escalate.iter().any(|s| {
                    s.channel_id == Some(channel)
                        && (s.allowed_user_ids.contains(&user_id)
                            || role_ids.iter().any(|r| s.allowed_role_ids.contains(r)))
                }))
    }

    /// [`ResolvedRoute::allows`], widened by what a request asked at `asked_at_ms` has reached
    /// by `now_ms`: the people it was sent to by DM (in a DM Discord sends no roles, so they
    /// are known by user id), and the allowlists of every escalation step that has begun.
    pub fn allows_at(&self, user_id: u64, role_ids: &[u64], asked_at_ms: i64, now_ms: i64) -> bool {
        if self.allows(user_id, role_ids) {
            return true;
        }
        if self.closed {
            return false;
        }
        if self.dm_user_ids.contains(&user_id) {
            return true;
        }
        self.escalate
            .iter()
            .take_while(|s| asked_at_ms.saturating_add(s.after_secs as i64 * 1000) <= now_ms)
            .any(|s| {
                s.allowed_user_ids.contains(&user_id)
                    || s.dm_user_ids.contains(&user_id)
                    || role_ids.iter().any(|r| s.allowed_role_ids.contains(r))
            })
    }
}

fn steps(steps: &[EscalationStep]) -> Vec<Step> {
    steps
        .iter()
        .map(|s| Step {
            after_secs: s.after_secs,
            mention_role_ids: ids(&s.mention_role_ids),
            mention_user_ids: ids(&s.mention_user_ids),
            channel_id: s.channel_id.map(|c| c.0),
            dm_user_ids: ids(&s.dm_user_ids),
            allowed_role_ids: ids(&s.allowed_role_ids),
            allowed_user_ids: ids(&s.allowed_user_ids),
        })
        .collect()
}

fn ids(v: &[Snowflake]) -> Vec<u64> {
    v.iter().map(|s| s.0).collect()
}

/// The route with Discord's defaults filled in; `None` for a route without a channel (the
/// terminal or Slack answers it). A route whose `answerers` name Discord without a
/// `channel_id` posts in `discord.channel_id`.
fn from_route(config: &Config, r: &Route) -> Option<ResolvedRoute> {
    let d = &config.discord;
    let channel = match r.channel_id {
        Some(c) => c,
        None if r.answerers.is_some() && r.answered_by(super::NAME) => d.channel_id?,
        None => return None,
    };
    Some(ResolvedRoute {
        name: r.name.clone(),
        channel_id: channel.0,
        allowed_user_ids: ids(r.allowed_user_ids.as_deref().unwrap_or(&d.allowed_user_ids)),
        allowed_role_ids: ids(r.allowed_role_ids.as_deref().unwrap_or(&d.allowed_role_ids)),
        mention_user_ids: ids(r.mention_user_ids.as_deref().unwrap_or(&d.mention_user_ids)),
        mention_role_ids: ids(r.mention_role_ids.as_deref().unwrap_or(&d.mention_role_ids)),
        expiry: r.expiry_rule(),
        terminal_answers: r.terminal_answers.unwrap_or(d.terminal_answers),
        closed: false,
        dm_user_ids: ids(r.dm_user_ids.as_deref().unwrap_or(&d.dm_user_ids)),
        remind: Remind::of_route(r, d.remind_after_secs, d.remind_every_secs, d.remind_max),
        escalate: steps(r.escalate.as_deref().unwrap_or(&d.escalate)),
        policy: policy(config, r),
        threads: r.threads(),
    })
}

fn default_route(config: &Config) -> Option<ResolvedRoute> {
    let d = &config.discord;
    d.channel_id.map(|c| ResolvedRoute {
        name: DEFAULT_ROUTE.to_owned(),
        channel_id: c.0,
        allowed_user_ids: ids(&d.allowed_user_ids),
        allowed_role_ids: ids(&d.allowed_role_ids),
        mention_user_ids: ids(&d.mention_user_ids),
        mention_role_ids: ids(&d.mention_role_ids),
        expiry: None,
        terminal_answers: d.terminal_answers,
        closed: false,
        dm_user_ids: ids(&d.dm_user_ids),
        remind: Remind::new(d.remind_after_secs, d.remind_every_secs, d.remind_max),
        escalate: steps(&d.escalate),
        policy: Policy {
            identities: identities(config),
            ..Policy::default()
        },
        threads: crate::config::Threads::Off,
    })
}

/// The route for a request with `scope`, if any.
/// A request whose first matching route has no channel is not Discord's: it gets `None`, not
/// the default route (the terminal answers it).
pub fn resolve(config: &Config, scope: &Scope) -> Option<ResolvedRoute> {
    match routing::matching(config, scope) {
        Some(r) => from_route(config, r),
        None => default_route(config),
    }
}

/// The name of every route a request may be posted through: the `[[routes]]` in order, then
/// the default route when `discord.channel_id` is set.
pub fn names(config: &Config) -> Vec<String> {
    let configured = config
        .routes
        .iter()
        .filter(|r| from_route(config, r).is_some())
        .map(|r| r.name.clone());
    configured
        .chain(default_route(config).map(|r| r.name))
        .collect()
}

/// The route a request was posted through, by name; used for clicks, possibly after a restart.
/// A route that has since been removed from the config falls back to the default's lists.
pub fn by_name(config: &Config, name: &str) -> Option<ResolvedRoute> {
    routing::named(config, name)
        .and_then(|r| from_route(config, r))
        .or_else(|| default_route(config))
}

/// Every route a request can have now: the default and each `[[routes]]` with a channel.
pub fn all(config: &Config) -> Vec<ResolvedRoute> {
    let mut routes: Vec<ResolvedRoute> = config
        .routes
        .iter()
        .filter_map(|r| by_name(config, &r.name))
        .collect();
    if let Some(d) = resolve(config, &Default::default()).filter(|r| r.name == DEFAULT_ROUTE) {
        routes.insert(0, d);
    }
    routes
}

/// The route a request was posted through (by the name stored with it), else the one its
/// scope matches now, else [`closed`].
pub fn of_request(config: &Config, req: &Request) -> ResolvedRoute {
    req.route
        .as_deref()
        .and_then(|n| by_name(config, n))
        .or_else(|| resolve(config, &req.scope))
        .unwrap_or_else(|| closed(config))
}

/// The route of a request whose route is gone and that has no default: nobody may answer
/// there (an operator can still cancel the request).
pub fn closed(config: &Config) -> ResolvedRoute {
    ResolvedRoute {
        name: "(removed)".to_owned(),
        channel_id: 0,
        allowed_user_ids: Vec::new(),
        allowed_role_ids: Vec::new(),
        mention_user_ids: Vec::new(),
        mention_role_ids: Vec::new(),
        expiry: None,
        terminal_answers: config.discord.terminal_answers,
        closed: true,
        dm_user_ids: Vec::new(),
        remind: None,
        escalate: Vec::new(),
        policy: Policy::default(),
        threads: crate::config::Threads::Off,
    }
}

pub use crate::domain::glob::matches as glob_match;

/// The user of a DM row whose channel is not opened yet: a route's DM copies are planned
/// with the placeholder channel `@<user id>` until the DM channel is opened.
pub(super) fn dm_user(channel: &str) -> Option<u64> {
    channel.strip_prefix('@')?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn globs() {
        assert!(glob_match("infra-*", "infra-prod"));
        assert!(glob_match("*", ""));
        assert!(glob_match("a?c", "abc"));
        assert!(glob_match("*-prod", "web-prod"));
        assert!(glob_match("a*b*c", "axxbyyc"));
        assert!(!glob_match("infra-*", "web"));
        assert!(!glob_match("a?c", "ac"));
        assert!(glob_match("exact", "exact"));
        assert!(!glob_match("exact", "exactly"));
    }

    fn config() -> Config {
        let mut c = Config::default();
        c.discord.channel_id = Some(Snowflake(1));
        c.discord.allowed_user_ids = vec![Snowflake(10)];
        c.routes.push(Route {
            matches: BTreeMap::from([("project".into(), "infra-*".into())]),
            allowed_role_ids: Some(vec![Snowflake(7)]),
            mention_role_ids: Some(vec![Snowflake(7)]),
            ..Route::new("infra", 2)
        });
        c
    }

    #[test]
    fn routes_match_in_order_then_default() {
        let c = config();
        let infra = resolve(&c, &Scope::from([("project".into(), "infra-db".into())])).unwrap();
        assert_eq!((infra.name.as_str(), infra.channel_id), ("infra", 2));
        assert_eq!(infra.allowed_user_ids, vec![10]);
        assert_eq!(infra.allowed_role_ids, vec![7]);
        let other = resolve(&c, &Scope::from([("project".into(), "web".into())])).unwrap();
        assert_eq!(other.name, DEFAULT_ROUTE);
        assert_eq!(resolve(&c, &Scope::new()).unwrap().channel_id, 1);
        let mut none = c.clone();
        none.discord.channel_id = None;
        assert!(resolve(&none, &Scope::new()).is_none());
    }

    #[test]
    fn access_needs_either_list() {
        let r = resolve(
            &config(),
            &Scope::from([("project".into(), "infra-x".into())]),
        )
        .unwrap();
        assert!(r.allows(10, &[]));
        assert!(r.allows(99, &[7]));
        assert!(!r.allows(99, &[8]));
        let open = ResolvedRoute {
            allowed_user_ids: vec![],
            allowed_role_ids: vec![],
            ..r
        };
        assert!(open.allows(1, &[]));
    }

    #[test]
    fn a_route_is_shown_only_where_it_posts() {
        let mut c = config();
        c.routes[0].escalate = Some(vec![EscalationStep {
            after_secs: 60,
            mention_role_ids: vec![],
            mention_user_ids: vec![],
            channel_id: Some(Snowflake(3)),
            dm_user_ids: vec![],
            allowed_role_ids: vec![],
            allowed_user_ids: vec![Snowflake(55)],
        }]);
        let infra = by_name(&c, "infra").unwrap();
        assert!(infra.posts_in(2) && infra.posts_in(3) && !infra.posts_in(1));
        // Role 7 may answer on infra: in its channels, not in the default's.
        assert!(infra.shows_in(2, 99, &[7]) && infra.shows_in(3, 99, &[7]));
        assert!(!infra.shows_in(1, 99, &[7]));
        // The step's own allowlist counts in the step's channel only.
        assert!(infra.shows_in(3, 55, &[]) && !infra.shows_in(2, 55, &[]));
        assert!(!closed(&c).posts_in(0));
    }
}
