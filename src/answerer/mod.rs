//! The answerers: platforms that show questions to people and turn their answers into
//! settlements. Each implements [`crate::domain::Answerer`].

pub mod chat;
pub mod discord;
pub mod routing;
pub mod slack;
pub mod terminal;
