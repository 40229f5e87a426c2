//! askrelay's test tooling, shared by the integration tests (`tests/it`), the unit tests, the
//! chaos harness and the benchmark (`examples/`): a dev-dependency of the root crate, so none of
//! it is in the daemon.

pub mod scratch;
