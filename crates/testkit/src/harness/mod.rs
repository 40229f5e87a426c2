//! One harness for every integration test (`tests/it`):
//! - [`App`] (`app.rs`): the real daemon in-process (socket and SQLite file in a temp dir),
//!   optionally with the Discord stand-in, and helpers that click, select and submit modals the
//!   way Discord does;
//! - `discord.rs`: interactions sent through a stand-in, and what a message or a callback shows
//!   (its controls, its markdown as a person sees it, the bodies' validity);
//! - `socket.rs`: ask lines and reading events from a client, each read with a deadline;
//! - [`Bin`] (`binary.rs`): the real `askrelay` binary, for what only a process shows (signals,
//!   exit codes, stderr, crashes, another uid), always started with private default places.
//!
//! Every wait has a deadline and says what it waited for when it runs out, so a broken
//! behaviour fails the test instead of hanging it.
//!
//! The store is a SQLite file in the test's temp dir, or, with `ASKRELAY_TEST_BACKEND=postgres`,
//! a fresh PostgreSQL database per test ([`TestDb`]): the same tests, run twice by `.ci/run`.
//!
//! Only a test of the root package knows where cargo built the binary
//! (`env!("CARGO_BIN_EXE_askrelay")`), so [`Bin`] takes it as a [`Binary`] type parameter and
//! `tests/it/harness.rs` names it.

mod app;
mod binary;
mod discord;
mod socket;

pub use app::App;
pub use binary::{askrelay_at, private_places, signal, Asker, Bin, Binary, Served};
pub use discord::{
    alice, assert_bodies_valid, assert_markup_is_ours, at_on, bob, channel_of, control, controls,
    ephemeral, final_state, id_of, interact_on, is_ephemeral, next_interaction_id, original_edit,
    press_on, select_id, shown, shown_body,
};
pub use socket::{ask_line, expect_eof, expect_event, options, recv, yes_no};

use crate::scratch::TestDb;
use askrelay::config::Config;
use std::future::Future;
use std::path::Path;
use std::time::Duration;

/// The default route's channel in the stand-in.
pub const CHANNEL: u64 = 100;
/// How long any single wait may take before the test fails.
pub const WAIT: Duration = Duration::from_secs(30);

/// Awaits `f`, failing the test with `what` if it takes longer than [`WAIT`].
pub async fn within<T>(what: &str, f: impl Future<Output = T>) -> T {
    match tokio::time::timeout(WAIT, f).await {
        Ok(v) => v,
        Err(_) => panic!("gave up after {} s waiting for {what}", WAIT.as_secs()),
    }
}

/// Ends a test that cannot run here, saying so: on stderr, and in `target/skipped-tests.txt`,
/// which `tests/run` prints at the end, so that a skip is never mistaken for a pass.
pub fn skip(test: &str, why: &str) {
    crate::skipped::record(test, why);
}

/// A config rooted in `dir`, with the terminal answerer on and no Discord.
pub fn test_config(dir: &Path) -> Config {
    let mut config = Config {
        socket_path: dir.join("askrelay.sock"),
        database_url: TestDb::new(&dir.join("state/askrelay.db")).leak(),
        ..Config::default()
    };
    config.terminal.enabled = Some(true);
    config
}
