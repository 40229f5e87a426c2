//! What a `[[routes]]` entry means to every answerer (docs/contract.md, "Answerers and
//! routes"): which requests it takes (the first route whose `match` globs all match the
//! request's scope) and its approval policy (quorum, decisive labels, the requester rule,
//! grants, edits, the typed confirmation). Discord adds its channel and people to a route
//! (`discord::route`); a route without `channel_id` is answered from the terminal, under the
//! same policy.

use crate::config::{Config, Route};
use crate::domain::glob::matches as glob_match;
use crate::domain::quorum::{Identity, Policy};
use crate::domain::Scope;
use std::sync::Arc;

/// Reminders: a reply after `after_secs`, then every `every_secs`, at most `max` in all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Remind {
    pub after_secs: u64,
    pub every_secs: u64,
    pub max: u32,
}

impl Remind {
    /// The reminders `after`, `every` and `max` say (`None`: no `after`, no reminders).
    pub fn new(after: Option<u64>, every: Option<u64>, max: Option<u32>) -> Option<Remind> {
        let after_secs = after?;
        Some(Remind {
            after_secs,
            every_secs: every.unwrap_or(after_secs),
            max: max.unwrap_or(3),
        })
    }

    /// A route's reminders: its own keys, each unset one as its platform's section says
    /// (`after`, `every`, `max`: `[discord]`'s or `[slack]`'s).
    pub fn of_route(
        r: &Route,
        after: Option<u64>,
        every: Option<u64>,
        max: Option<u32>,
    ) -> Option<Remind> {
        if r.remind_after_secs.is_some() {
            Remind::new(r.remind_after_secs, r.remind_every_secs, r.remind_max)
        } else {
            Remind::new(after, r.remind_every_secs.or(every), r.remind_max.or(max))
        }
    }
}

/// The first route whose globs all match `scope`.
pub fn matching<'c>(config: &'c Config, scope: &Scope) -> Option<&'c Route> {
    config.routes.iter().find(|r| {
        r.matches
            .iter()
            .all(|(label, pattern)| scope.get(label).is_some_and(|v| glob_match(pattern, v)))
    })
}

/// The route named `name`.
/// How an answerer takes an agent's end of turn (a `Stop` request; `None` for anything
/// else): on the route it resolved, `route`, only when that route opted in with
/// `stop_replies`, waiting `stop_wait_secs` for a reply (`Ok`); else why it declines (`Err`).
pub fn turn_end(
    config: &Config,
    scope: &Scope,
    route: &str,
) -> Option<Result<crate::domain::expiry::ExpiryRule, String>> {
    if scope.get("tool").map(String::as_str) != Some(crate::answerer::discord::STOP_TOOL) {
        return None;
    }
    Some(
        match matching(config, scope).filter(|r| r.name == route && r.stop_replies()) {
            Some(r) => Ok(crate::domain::expiry::ExpiryRule {
                after_secs: Some(r.stop_wait_secs()),
                ..Default::default()
            }),
            None => Err(format!(
                "route {route:?} does not take replies at the end of a turn (stop_replies is off)"
            )),
        },
    )
}

pub fn named<'c>(config: &'c Config, name: &str) -> Option<&'c Route> {
    config.routes.iter().find(|r| r.name == name)
}

/// A route's approval policy, with every `[[identities]]` entry.
pub fn policy(config: &Config, r: &Route) -> Policy {
    let approvals = r.approvals.unwrap_or(1).max(1);
    Policy {
        approvals,
        decisive: r.decisive_labels.clone().unwrap_or_default(),
        custom_decides: r.custom_decides.unwrap_or(approvals <= 1),
        exclude_requester: r.exclude_requester.unwrap_or(approvals > 1),
        identities: identities(config),
        // Checked when the configuration was loaded.
        grant_secs: r
            .grant_durations
            .iter()
            .flatten()
            .filter_map(|d| crate::config::grant_secs(d).ok())
            .collect(),
        allow_edits: r.allow_edits.unwrap_or(false),
        confirm: crate::domain::confirm::Confirm {
            labels: r.confirm_labels.clone().unwrap_or_default(),
            // Checked at load; a word that no longer parses asks for the default.
            word: r
                .confirm_word
                .as_deref()
                .and_then(|w| w.parse().ok())
                .unwrap_or_default(),
        },
    }
}

/// Every `[[identities]]` entry, as the policy compares people.
pub fn identities(config: &Config) -> Arc<[Identity]> {
    config
        .identities
        .iter()
        .map(|i| Identity {
            name: i.name.clone(),
            uids: i.uids.clone(),
            hosts: i.hosts.clone(),
            platform_ids: i
                .discord_user_ids
                .iter()
                .map(|s| s.0.to_string())
                .chain(i.slack_user_ids.iter().cloned())
                .collect(),
            sessions: i.sessions.clone(),
        })
        .collect()
}
