//! The answerer interface: how the core hands requests to platforms and tells them what happened.
//!
//! Answerers are tried in order (the "waterfall"); the first that accepts a request owns it and is
//! told when its questions are settled and when it ends, whoever settled them, so that it can
//! update what people see. Any answerer may settle any question through the hub; first wins.

use crate::store::{AnsweredBy, Outcome, StoredRequest};
use async_trait::async_trait;
use serde_json::{Map, Value};

/// An answerer's reply to a new request.
#[derive(Debug, Clone, PartialEq)]
pub enum Offer {
    /// It takes the request; the map is merged into the client's `accepted` event (links,
    /// channel, a hint on how to answer).
    Accept(Map<String, Value>),
    /// It does not take it, and why; the reasons end up in `NO_ANSWERER` when nobody accepts.
    Decline(String),
}

#[async_trait]
pub trait Answerer: Send + Sync + 'static {
    /// The stable name that appears in `accepted.answerer` and in the store.
    fn name(&self) -> &'static str;

    /// Offered a new, stored request. Must not block on people: post and return.
    async fn offer(&self, request: &StoredRequest) -> Offer;

    /// Called at start-up for each pending request this answerer owns.
    async fn resume(&self, _request: &StoredRequest) {}

    /// One question of a request this answerer owns was settled (by anyone).
    async fn question_settled(&self, _request: &StoredRequest, _index: usize, _by: &AnsweredBy) {}

    /// A request this answerer owns has ended (answered, cancelled, expired).
    async fn request_ended(&self, _request: &StoredRequest, _outcome: &Outcome) {}
}
