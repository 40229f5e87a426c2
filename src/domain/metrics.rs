//! What the core and the answerers count, and nothing about how it is exported.
//!
//! The hub reports what happens to requests (asked, answered after so long, failed with a code)
//! and the store wrapper reports failed store calls, through one [`Recorder`]; an answerer's
//! REST client reports its calls through a [`RestRecorder`]. The daemon hands in the
//! implementation that feeds its Prometheus registry ([`crate::metrics`]), so that the
//! answerers never name it; tests and tools that do not care get [`Silent`]. Each daemon has its
//! own recorder, so several daemons in one process (the tests) never mix their numbers.

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

/// Receives the outcome of each call an answerer's REST client makes to its platform.
pub trait RestRecorder: Send + Sync + 'static {
    /// A call ended: `status` is the HTTP status of a failure, "2xx" for a success, "timeout"
    /// or "network" for no answer, "other" for anything else.
    fn rest_response(&self, _status: &str) {}
}

/// Receives the cluster driver's counts (cluster mode only).
pub trait ClusterRecorder: Send + Sync + 'static {
    /// This node took the lead from `takeover.from` (a failover).
    fn took_over(&self, _takeover: &super::cluster::Takeover) {}
}

/// A recorder that keeps nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct Silent;

impl Recorder for Silent {}

impl RestRecorder for Silent {}

impl ClusterRecorder for Silent {}
