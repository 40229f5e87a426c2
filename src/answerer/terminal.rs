//! The terminal answerer: people on the daemon's machine answer with `askrelay answer`.
//!
//! It needs no credentials, which is what makes the daemon useful out of the box. Accepting only
//! means "a terminal may answer this"; the answers themselves arrive as socket `answer`
//! operations and go through the hub like any other settlement.

use crate::core::{Answerer, Offer};
use crate::store::StoredRequest;
use async_trait::async_trait;
use serde_json::{json, Map};

#[derive(Debug, Default)]
pub struct TerminalAnswerer;

#[async_trait]
impl Answerer for TerminalAnswerer {
    fn name(&self) -> &'static str {
        "terminal"
    }

    async fn offer(&self, request: &StoredRequest) -> Offer {
        let mut detail = Map::new();
        detail.insert(
            "hint".into(),
            json!(format!(
                "answer from a terminal: askrelay pending, then askrelay answer {} --question ID --select LABEL",
                request.request_id
            )),
        );
        Offer::Accept(detail)
    }
}
