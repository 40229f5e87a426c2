//! What the core counts, and nothing about how it is exported.
//!
//! The hub reports what happens to requests (asked, answered after so long, failed with a code)
//! and the store wrapper reports failed store calls, through one [`Recorder`]. The daemon hands
//! in the implementation that feeds its Prometheus registry ([`crate::metrics`]); tests and
//! tools that do not care get [`Silent`]. Each daemon has its own recorder, so several daemons
//! in one process (the tests) never mix their numbers.

use super::error::ErrorCode;
use std::fmt::Debug;
use std::time::Duration;

/// Receives the core's counts. Every method is cheap and never fails.
pub trait Recorder: Debug + Send + Sync + 'static {
    /// A new request was stored and handed to `answerer`.
    fn asked(&self, _answerer: &str) {}

    /// A request of `answerer` was answered (its last open question settled), `waited` after
    /// it was asked.
    fn answered(&self, _answerer: &str, _waited: Duration) {}

    /// An ask got an error: it was refused, or its request ended with this code.
    fn failed(&self, _code: ErrorCode) {}

    /// A call to the store failed.
    fn store_failed(&self) {}
}

/// A recorder that keeps nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct Silent;

impl Recorder for Silent {}
