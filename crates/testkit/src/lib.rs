//! askrelay's test tooling, shared by the integration tests (`tests/it`), the unit tests, the
//! chaos harness and the benchmark (`examples/`): a dev-dependency of the root crate, so none of
//! it is in the daemon.
//!
//! - [`harness`]: the integration tests' harness: the daemon in-process ([`harness::App`]) or
//!   as the `askrelay` binary ([`harness::Bin`]), and the helpers that drive them;
//! - [`scratch`]: test databases (a SQLite file, or a PostgreSQL database of its own);
//! - [`standin`]: the Discord stand-in (REST, gateway, rate limits, TLS), with [`fixtures`]
//!   (interaction payloads), [`discord_schema`] (Discord's OpenAPI spec as a validator) and
//!   [`discord_markdown`] (a model of Discord's markdown parser);
//! - [`slack`]: the Slack stand-in (Web API, Socket Mode, Block Kit checks and limits, rate
//!   limits, TLS), with its interaction fixtures ([`slack::fixtures`]);
//! - [`proxy`]: a TCP proxy that pauses, resumes and cuts connections (a partition, a stalled
//!   database), between cluster nodes and PostgreSQL;
//! - [`pgbouncer`]: a PgBouncer in transaction mode in front of the test server, for
//!   `postgres.pooler_url`;
//! - [`chaos`]: the fault harness (`examples/chaos.rs`, `tests/it/chaos.rs`);
//! - [`bench`]: the benchmark (`examples/bench.rs`, `tests/it/bench_smoke.rs`);
//! - [`skipped`]: the list of what could not run here, which `tests/run` prints at the end.

pub mod bench;
pub mod chaos;
pub mod discord_markdown;
pub mod discord_schema;
pub mod fixtures;
pub mod harness;
pub mod pgbouncer;
pub mod proxy;
pub mod scratch;
pub mod skipped;
pub mod slack;
pub mod standin;
