//! The harness of every integration test is `askrelay_testkit::harness` (crates/testkit): the
//! daemon in-process (`App`), the `askrelay` binary (`Bin`), and the helpers that drive them.
//! This names what only a test of the root package can know, where cargo built the binary
//! ([`BIN`]): [`Bin`] and [`askrelay_in`] start that one.

pub use askrelay_testkit::harness::*;
use std::path::Path;
use tokio::process::Command;

pub const BIN: &str = env!("CARGO_BIN_EXE_askrelay");

/// The binary cargo built for these tests.
pub struct Askrelay;

impl Binary for Askrelay {
    const PATH: &'static str = BIN;
}

/// The `askrelay` binary of these tests with a clean environment (see
/// `askrelay_testkit::harness::Bin`).
pub type Bin = askrelay_testkit::harness::Bin<Askrelay>;

/// `askrelay` with an empty environment (PATH only) whose every default place is inside `dir`:
/// the only way the tests start it (`isolation::`), so that no test ever reaches the developer's
/// own daemon at `/run/user/$UID/askrelay.sock`, or leaves a socket there. See
/// [`private_places`].
pub fn askrelay_in(dir: &Path) -> Command {
    askrelay_at(Path::new(BIN), dir)
}
