//! Shared helpers for the integration tests. Each test crate uses only part of them.
#![allow(dead_code)]

pub mod bench;
pub mod chaos;
pub mod discord_markdown;
pub mod discord_schema;
pub mod fake_llm;
pub mod fixtures;
pub mod standin;
