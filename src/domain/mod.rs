//! The domain, the core of askrelay: requests, questions, answers, first-wins, the answerer order and who may do what.
//!
//! Nothing here knows about Discord, sockets or SQL. Front ends call the [`hub::Hub`]; answerers
//! implement [`answerer::Answerer`] and act through an [`answerer::AnswererContext`]; a backend
//! implements [`store::Store`].

pub mod access;
pub mod answer;
pub mod answerer;
pub mod approval;
pub mod audit;
pub mod calendar;
pub mod clock;
pub mod cluster;
pub mod confirm;
pub mod error;
pub mod expiry;
pub mod glob;
pub mod grant;
pub mod hub;
pub mod metrics;
pub mod model;
pub mod once_grant;
pub mod quorum;
pub mod request;
pub mod shell;
pub mod store;
pub mod text;
pub mod vote;

pub use access::{LocalUser, Operators};
pub use answer::{AskResult, QuestionAnswer, Settlement};
pub use answerer::{
    Accepted, Answerer, AnswererContext, Claim, Core, Delivery, Prepared, Proposal,
};
pub use error::{AskError, ErrorCode};
pub use expiry::{Expiry, ExpiryRule, OnExpire};
pub use hub::{Attachment, Detail, Hub, HubSettings, Phase};
pub use model::{
    Approval, Ask, Caller, Context, ContextFile, Question, QuestionKind, QuestionOption, Scope,
};
pub use request::{Actor, Outcome, Peer, Request, SettleOutcome, Settled, Status, Via};
