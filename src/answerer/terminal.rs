//! The terminal answerer: people on the daemon's machine answer with `askrelay answer`.
//!
//! It needs no credentials, which is what makes the daemon useful out of the box. Taking a
//! request only means "a terminal may answer this"; the answers themselves arrive as socket
//! `answer` operations from the request's owner (or an operator) and go through the hub like
//! any other settlement.

use crate::domain::request::Request;
use crate::domain::{Accepted, Answerer, AnswererContext, Claim, Delivery, Prepared, Proposal};
use async_trait::async_trait;

#[derive(Debug, Default)]
pub struct TerminalAnswerer;

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

    async fn claim(&self, _proposal: &Proposal<'_>) -> Claim {
        Claim::Take {
            route: None,
            posts: Vec::new(),
            expiry: None,
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
}
