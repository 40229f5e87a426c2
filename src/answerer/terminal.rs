//! The terminal answerer: people on the daemon's machine answer with `askrelay answer`.
//!
//! It needs no credentials, which is what makes the daemon useful out of the box. Taking a
//! request only means "a terminal may answer this"; the answers themselves arrive as socket
//! `answer` operations from the request's owner (or an operator) and go through the hub like
//! any other settlement.
//!
//! It shows the requests of the routes that name it (`answerers = ["discord", "terminal"]`,
//! or a route with no platform channel, which is the terminal's own), beside any chat
//! platform the route names; a request whose route names only chat platforms, or that no
//! route matches, it takes only when no other answerer does (the older waterfall's last
//! step). A request it takes keeps the route its scope matches, and that route's approval
//! policy applies at the terminal: its quorum, decisive labels, requester rule and expiry.

use crate::answerer::routing;
use crate::config::Config;
use crate::domain::quorum::Policy;
use crate::domain::request::Request;
use crate::domain::{Accepted, Answerer, AnswererContext, Claim, Delivery, Prepared, Proposal};
use async_trait::async_trait;
use std::sync::Arc;

/// The route label of a request that matched no route (as `/metrics` shows it).
const NO_ROUTE: &str = "none";

/// The terminal's answerer name, in `accepted.answerer`, the store and a route's `answerers`.
const NAME: &str = "terminal";

#[derive(Debug, Default)]
pub struct TerminalAnswerer {
    /// The routes and identities; the default config has none (every request first-wins).
    config: Arc<Config>,
}

impl TerminalAnswerer {
    pub fn new(config: Arc<Config>) -> TerminalAnswerer {
        TerminalAnswerer { config }
    }
}

fn hint(req: &Request) -> Accepted {
    Accepted {
        hint: Some(format!(
            "answer from a terminal: askrelay pending, then askrelay answer {} --question ID --select LABEL",
            req.request_id
        )),
        ..Accepted::default()
    }
}

#[async_trait]
impl Answerer for TerminalAnswerer {
    fn name(&self) -> &'static str {
        NAME
    }

    async fn claim(&self, proposal: &Proposal<'_>) -> Claim {
        let route = routing::matching(&self.config, proposal.scope);
        let (route_name, expiry) = (
            route.map(|r| r.name.clone()),
            route.and_then(|r| r.expiry_rule()),
        );
        match route {
            Some(r) if r.answered_by(NAME) => Claim::Take {
                route: route_name,
                posts: Vec::new(),
                expiry,
            },
            // The operator listed who shows this route's requests, and not the terminal.
            Some(r) if r.answerers.is_some() => Claim::Decline(format!(
                "route {:?} does not name \"terminal\" in its answerers",
                r.name
            )),
            // A chat platform's route (or none matches): the terminal stands in.
            _ => Claim::Fallback {
                route: route_name,
                posts: Vec::new(),
                expiry,
            },
        }
    }

    async fn deliver(
        &self,
        _ctx: &AnswererContext,
        req: &Request,
        _prepared: Option<Prepared>,
    ) -> Delivery {
        Delivery::Shown(hint(req))
    }

    async fn resume(
        &self,
        _ctx: &AnswererContext,
        req: &Request,
        _posts: &[crate::domain::request::Post],
    ) -> Accepted {
        hint(req)
    }

    fn terminal_may_answer(&self, _req: &Request) -> bool {
        true
    }

    fn policy(&self, req: &Request) -> Policy {
        match req
            .route
            .as_deref()
            .and_then(|n| routing::named(&self.config, n))
        {
            Some(r) => routing::policy(&self.config, r),
            // No route, or one since removed from the config: first wins, with the identities
            // (a requester is still told apart where a route asks it).
            None => Policy {
                identities: routing::identities(&self.config),
                ..Policy::default()
            },
        }
    }

    fn routes(&self) -> Option<Vec<String>> {
        let mut names: Vec<String> = self.config.routes.iter().map(|r| r.name.clone()).collect();
        names.push(NO_ROUTE.to_owned());
        Some(names)
    }
}
