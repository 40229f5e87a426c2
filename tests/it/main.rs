//! The integration tests, as one test binary: the real daemon (in-process and as the
//! `askrelay` binary), a real Unix socket, SQLite files in temp dirs, and the Discord stand-in
//! on 127.0.0.1. One binary compiles the shared harness once; the stand-ins, fixtures, scratch
//! databases and the chaos and benchmark harnesses are in `askrelay_testkit` (crates/testkit).

mod fake_llm;
mod harness;
mod hook_failures;

mod agents;
mod answerers;
mod approvals;
mod auto_mode;
mod batch;
mod bench_smoke;
mod chaos;
mod cli;
mod cluster;
mod commands;
mod confirm;
mod context;
mod defer;
mod digest;
mod discord;
mod discord_schema_selftest;
mod docs;
mod faults;
mod fulldisk;
mod grants;
mod hostile;
mod isolation;
mod limits;
mod mcp;
mod metrics;
mod oncall;
mod once_grants;
mod ops;
mod outbox;
mod quorum;
mod setup;
mod slack;
mod slack_standin_selftest;
mod socket;
mod standin_selftest;
mod stop_replies;
mod threads;
mod trust;
mod withdraw;
