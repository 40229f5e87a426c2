//! The terminal answerer: people on the daemon's machine answer with `askrelay answer`.
//!
//! It needs no credentials, which is what makes the daemon useful out of the box. Taking a
//! request only means "a terminal may answer this"; the answers themselves arrive as socket
//! `answer` operations from the request's owner (or an operator) and go through the hub like
//! any other settlement.
//!
//! A request it takes keeps the route its scope matches (`[[routes]]`, with or without a
//! Discord channel: a route without one is the terminal's own), and that route's approval
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
        "terminal"
    }

    async fn claim(&self, proposal: &Proposal<'_>) -> Claim {
        let route = routing::matching(&self.config, proposal.scope);
        Claim::Take {
            route: route.map(|r| r.name.clone()),
            posts: Vec::new(),
            expiry: route.and_then(|r| r.expiry_rule()),
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
