//! Discord as the chat layer's platform ([`crate::answerer::chat::Platform`]): a person from
//! the user and member Discord vouches for, and the facts of a route that only Discord's
//! config holds (its allowlists, widened by DMs and escalation; the channels it posts in; the
//! operators).

use super::route;
use super::shown::NAME;
use crate::answerer::chat::{Person, Platform};
use crate::config::Config;
use crate::domain::quorum::Policy;
use crate::domain::request::{Actor, Request, Via};
use serenity::all::{Member, User};

/// The chat layer's questions, answered from the config.
pub(super) struct Discord<'a>(pub &'a Config);

/// The person Discord vouches for, with their roles here (as groups), and whether they are an
/// operator (`discord.operator_role_ids`, `discord.operator_user_ids`; never a bot).
pub(super) fn person(config: &Config, user: &User, member: Option<&Member>) -> Person {
    let roles: Vec<u64> = member
        .map(|m| m.roles.iter().map(|r| r.get()).collect())
        .unwrap_or_default();
    let d = &config.discord;
    let id = user.id.get();
    Person {
        actor: Actor {
            via: Via::Discord,
            id: id.to_string(),
            name: user.name.clone(),
            note: None,
        },
        operator: !user.bot
            && (d.operator_user_ids.iter().any(|u| u.0 == id)
                || roles
                    .iter()
                    .any(|r| d.operator_role_ids.iter().any(|o| o.0 == *r))),
        groups: roles.iter().map(u64::to_string).collect(),
        bot: user.bot,
    }
}

/// The person's user id and role ids, as the routes compare them.
fn ids(p: &Person) -> (u64, Vec<u64>) {
    (
        p.actor.id.parse().unwrap_or_default(),
        p.groups.iter().filter_map(|g| g.parse().ok()).collect(),
    )
}

/// A channel id (0, which no route posts in, when it is not one).
fn channel(place: &str) -> u64 {
    place.parse().unwrap_or_default()
}

impl Platform for Discord<'_> {
    fn name(&self) -> &'static str {
        NAME
    }

    fn may_answer(&self, req: &Request, person: &Person, now_ms: i64) -> bool {
        let (user, roles) = ids(person);
        route::of_request(self.0, req).allows_at(user, &roles, req.created_at_ms, now_ms)
    }

    fn shows(&self, req: &Request, person: &Person, place: &str) -> bool {
        let (user, roles) = ids(person);
        route::of_request(self.0, req).shows_in(channel(place), user, &roles)
    }

    fn answers_at(&self, person: &Person, place: &str, name: Option<&str>) -> bool {
        let (user, roles) = ids(person);
        route::all(self.0)
            .iter()
            .any(|r| name.is_none_or(|n| r.name == n) && r.shows_in(channel(place), user, &roles))
    }

    fn policy(&self, req: &Request) -> Policy {
        route::of_request(self.0, req).policy
    }

    fn host(&self) -> String {
        self.0.cluster.node()
    }
}
