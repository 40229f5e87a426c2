//! Crash points for the fault tests.
//!
//! With `ASKRELAY_TEST_CRASH_AT=<point>` in its environment the daemon aborts (no cleanup, like a
//! SIGKILL) when it reaches that point, so tests can prove that a crash between any two steps of
//! the ask path loses nothing and posts nothing twice. Without the variable this is one cached
//! comparison. The points are:
//! - `stored`: the request is stored, not yet offered to an answerer;
//! - `posted`: Discord (or Slack) confirmed a message, its id is not yet stored;
//! - `posted_extra`: Slack confirmed a reminder, an escalation step's note or a DM copy, its
//!   ts is not yet stored;
//! - `files shared`: Slack shared the context's files in the question's thread, their outbox
//!   row is not yet recorded;
//! - `clicked`: an interaction arrived (a press, a form sent, a batch's button, "Save grant"),
//!   the answer is not yet stored;
//! - `voted`: a vote toward a quorum is stored, nothing is shown yet;
//! - `quorum`: the vote that completes a quorum is stored, the settlement is not yet;
//! - `answered`: the answer is stored, the agent is not yet told.

use std::sync::OnceLock;

pub const ENV: &str = "ASKRELAY_TEST_CRASH_AT";

pub fn point(name: &str) {
    static AT: OnceLock<Option<String>> = OnceLock::new();
    let at = AT.get_or_init(|| std::env::var(ENV).ok().filter(|s| !s.is_empty()));
    if at.as_deref() == Some(name) {
        eprintln!("askrelay: {ENV}={name}: aborting here on purpose");
        std::process::abort();
    }
}
