//! The clock every stored timestamp is read from: milliseconds since the Unix epoch, corrected
//! in a cluster to the database's clock, and how those times are written for people (RFC 3339).
//!
//! The offset is one per process, like the host clock it corrects: the cluster driver sets it
//! from its beats ([`set_clock_offset_ms`]); a daemon alone leaves it at 0.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// What this process adds to its own clock to read the shared one: 0 for a daemon alone, and
/// in a cluster the database's clock minus this host's, as the cluster driver measured it.
/// One per process, like the clock it corrects (the daemons of one test process share a host,
/// so their measurements agree to within a round trip).
static CLOCK_OFFSET_MS: AtomicI64 = AtomicI64::new(0);

/// Milliseconds since the Unix epoch, the unit of every stored timestamp; in a cluster, on the
/// database's clock, so that a node whose own clock is wrong stamps requests, deadlines and
/// heartbeats as the others read them.
pub fn now_ms() -> i64 {
    host_ms() + CLOCK_OFFSET_MS.load(Ordering::Relaxed)
}

/// Milliseconds since the Unix epoch on this host's own clock, without the cluster's offset:
/// what the offset is measured against.
pub fn host_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// A millisecond time as RFC 3339 in UTC, to the second (the fraction is dropped, not
/// rounded): `2026-12-05T07:21:14Z`. Times before the epoch read as the epoch, and times past
/// the last second jiff holds (`9999-12-30T22:00:00Z`) as that second.
pub fn rfc3339(ms: i64) -> String {
    let secs = (ms.max(0) / 1000).min(jiff::Timestamp::MAX.as_second());
    jiff::Timestamp::from_second(secs)
        .unwrap_or(jiff::Timestamp::UNIX_EPOCH)
        .to_string()
}

/// Sets what [`now_ms`] adds to this host's clock (the cluster driver, from its beats).
pub fn set_clock_offset_ms(offset: i64) {
    CLOCK_OFFSET_MS.store(offset, Ordering::Relaxed);
}

/// What [`now_ms`] adds to this host's clock.
pub fn clock_offset_ms() -> i64 {
    CLOCK_OFFSET_MS.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::rfc3339;

    #[test]
    fn times_are_rfc3339_seconds_and_never_before_1970() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(-5_000), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_764_460_800_999), "2025-11-30T00:00:00Z");
        assert_eq!(rfc3339(1_796_455_274_500), "2026-12-05T07:21:14Z");
        // Past what a timestamp holds: its last second, not a panic.
        assert_eq!(rfc3339(i64::MAX), "9999-12-30T22:00:00Z");
    }
}
