//! The core: requests, questions, answers, first-wins and the answerer order.
//!
//! Nothing here knows about Discord or sockets. Front ends call the [`hub::Hub`]; answerers
//! implement [`answerer::Answerer`].

pub mod answer;
pub mod answerer;
pub mod error;
pub mod hub;
pub mod model;

pub use answer::{AskResult, QuestionAnswer, Settlement};
pub use answerer::{Answerer, Offer};
pub use error::{AskError, ErrorCode};
pub use hub::{Attachment, Hub, Peer, Phase};
pub use model::{Ask, Caller, Question, QuestionKind, QuestionOption, Scope};
