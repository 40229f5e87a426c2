//! Slack as the chat layer's platform ([`crate::answerer::chat::Platform`]): a person from the
//! user Slack vouches for, with the user groups (of those the routes allow) they belong to, and
//! the facts of a route only Slack's config holds (its allowlists, its channel, the operators).
//!
//! Slack sends no groups with an interaction, so a group's members are read with
//! `usergroups.users.list` and kept for [`GROUP_TTL`]: a person added to a group may answer
//! within that time, and one removed may still answer within it (docs/security.md).

use super::route::{self, SlackRoute};
use super::web::Web;
use super::NAME;
use crate::answerer::chat::{Person, Platform};
use crate::config::Config;
use crate::domain::quorum::Policy;
use crate::domain::request::{Actor, Request, Via};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a user group's members are kept before they are read again.
pub const GROUP_TTL: Duration = Duration::from_secs(60);

/// User groups' members, as last read.
#[derive(Default)]
pub struct Groups(Mutex<HashMap<String, (Instant, Vec<String>)>>);

impl Groups {
    /// Of `groups`, those `user` is a member of; a group whose members cannot be read counts
    /// as not theirs (the press is refused, and they may press again).
    pub async fn of(&self, web: &Web, user: &str, groups: &[String]) -> Vec<String> {
        let mut member_of = Vec::new();
        for g in groups {
            let cached = self
                .0
                .lock()
                .unwrap()
                .get(g)
                .filter(|(at, _)| at.elapsed() < GROUP_TTL)
                .map(|(_, m)| m.clone());
            let members = match cached {
                Some(m) => m,
                None => match web.group_members(g).await {
                    Ok(m) => {
                        self.0
                            .lock()
                            .unwrap()
                            .insert(g.clone(), (Instant::now(), m.clone()));
                        m
                    }
                    Err(f) => {
                        tracing::warn!(group = %g, error = f.message(), "cannot read a Slack user group's members");
                        Vec::new()
                    }
                },
            };
            if members.iter().any(|m| m == user) {
                member_of.push(g.clone());
            }
        }
        member_of
    }
}

/// The person Slack vouches for: their user id and name, the groups of `groups` they are in,
/// and whether they are an operator (`slack.operator_user_ids`).
pub fn person(config: &Config, id: &str, name: &str, groups: Vec<String>) -> Person {
    Person {
        actor: Actor {
            via: Via::Slack,
            id: id.to_owned(),
            name: name.to_owned(),
            note: None,
        },
        groups,
        bot: false,
        operator: config.slack.operator_user_ids.iter().any(|u| u == id),
    }
}

/// The chat layer's questions, answered from the config.
pub struct Slack<'a>(pub &'a Config);

impl Slack<'_> {
    fn route(&self, req: &Request) -> SlackRoute {
        route::of_request(self.0, req)
    }
}

impl Platform for Slack<'_> {
    fn name(&self) -> &'static str {
        NAME
    }

    fn may_answer(&self, req: &Request, person: &Person, now_ms: i64) -> bool {
        self.route(req)
            .allows_at(&person.actor.id, &person.groups, req.created_at_ms, now_ms)
    }

    fn shows(&self, req: &Request, person: &Person, place: &str) -> bool {
        let r = self.route(req);
        !r.closed && r.channel == place && r.allows(&person.actor.id, &person.groups)
    }

    fn answers_at(&self, person: &Person, place: &str, name: Option<&str>) -> bool {
        route::all(self.0).iter().any(|r| {
            name.is_none_or(|n| r.name == n)
                && r.channel == place
                && r.allows(&person.actor.id, &person.groups)
        })
    }

    fn policy(&self, req: &Request) -> Policy {
        self.route(req).policy
    }

    fn host(&self) -> String {
        self.0.cluster.node()
    }
}
