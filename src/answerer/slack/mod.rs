//! The Slack answerer (docs/slack.md).

pub mod render;
