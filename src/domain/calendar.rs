//! Wall-clock schedules: "every day at 09:00 in Europe/Berlin", for the digest.
//!
//! A schedule is `every` seconds, optionally anchored to a time of day in a time zone: the due
//! times are that day's anchor plus whole multiples of `every` (a daily digest at 09:00 stays at
//! 09:00 local time across daylight-saving changes when `every` is a whole number of days, as
//! each due time is computed from the local date). Time zones come from the IANA database that
//! is built into the binary, so a host without /usr/share/zoneinfo still has them.

use jiff::civil::Time;
use jiff::tz::TimeZone;
use jiff::{Timestamp, ToSpan, Zoned};

/// "09:00" or "9:30" → a time of day.
pub fn parse_time_of_day(s: &str) -> Result<Time, String> {
    let (h, m) = s
        .split_once(':')
        .ok_or_else(|| format!("{s:?} is not a time like \"09:00\""))?;
    let h: i8 = h
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a time like \"09:00\""))?;
    let m: i8 = m
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a time like \"09:00\""))?;
    Time::new(h, m, 0, 0).map_err(|_| format!("{s:?} is not a time of day (00:00 to 23:59)"))
}

/// An IANA time zone by name ("UTC", "Europe/Berlin").
pub fn zone(name: &str) -> Result<TimeZone, String> {
    TimeZone::get(name).map_err(|_| format!("{name:?} is not a known IANA time zone"))
}

/// A digest schedule.
#[derive(Debug, Clone)]
pub struct Schedule {
    pub every_secs: u64,
    pub at: Option<Time>,
    pub zone: TimeZone,
}

impl Schedule {
    /// The first due time strictly after `now_ms` (Unix milliseconds).
    pub fn next_after(&self, now_ms: i64) -> i64 {
        let every = self.every_secs.max(1) as i64;
        let now = Timestamp::from_millisecond(now_ms).unwrap_or(Timestamp::UNIX_EPOCH);
        let Some(at) = self.at else {
            return now_ms.saturating_add(every * 1000);
        };
        let today: Zoned = now.to_zoned(self.zone.clone());
        // Whole days step by local date (so 09:00 stays 09:00 across DST); other periods by
        // seconds from today's anchor.
        let anchor = today.date().to_datetime(at);
        let days = every % 86_400 == 0;
        let mut k: i64 = -1;
        loop {
            let candidate = if days {
                anchor
                    .checked_add((k * (every / 86_400)).days())
                    .ok()
                    .and_then(|dt| dt.to_zoned(self.zone.clone()).ok())
            } else {
                anchor
                    .to_zoned(self.zone.clone())
                    .ok()
                    .and_then(|z| z.checked_add((k * every).seconds()).ok())
            };
            match candidate {
                Some(z) if z.timestamp().as_millisecond() > now_ms => {
                    return z.timestamp().as_millisecond()
                }
                Some(_) => k += 1,
                None => return now_ms.saturating_add(every * 1000),
            }
            if k > 100_000 {
                return now_ms.saturating_add(every * 1000);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(s: &str) -> i64 {
        s.parse::<Timestamp>().unwrap().as_millisecond()
    }

    #[test]
    fn times_of_day_and_zones_parse_or_say_why() {
        assert_eq!(
            parse_time_of_day("09:00").unwrap(),
            Time::new(9, 0, 0, 0).unwrap()
        );
        assert_eq!(
            parse_time_of_day("9:30").unwrap(),
            Time::new(9, 30, 0, 0).unwrap()
        );
        assert!(parse_time_of_day("25:00")
            .unwrap_err()
            .contains("time of day"));
        assert!(parse_time_of_day("nine").is_err());
        assert!(zone("Europe/Berlin").is_ok());
        assert!(zone("Mars/Olympus").unwrap_err().contains("IANA"));
    }

    #[test]
    fn a_daily_digest_keeps_its_local_time() {
        let s = Schedule {
            every_secs: 86_400,
            at: Some(parse_time_of_day("09:00").unwrap()),
            zone: zone("Europe/Berlin").unwrap(),
        };
        // Before 09:00 Berlin (CET, UTC+1): today at 08:00 UTC.
        assert_eq!(
            s.next_after(ms("2026-01-10T07:00:00Z")),
            ms("2026-01-10T08:00:00Z")
        );
        // After it: tomorrow.
        assert_eq!(
            s.next_after(ms("2026-01-10T08:00:00Z")),
            ms("2026-01-11T08:00:00Z")
        );
        // Across the spring change (29 March 2026): 09:00 CEST is 07:00 UTC.
        assert_eq!(
            s.next_after(ms("2026-03-28T09:00:00Z")),
            ms("2026-03-29T07:00:00Z")
        );
    }

    #[test]
    fn without_an_anchor_it_is_every_n_seconds_from_now() {
        let s = Schedule {
            every_secs: 60,
            at: None,
            zone: TimeZone::UTC,
        };
        assert_eq!(s.next_after(1_000), 61_000);
        let hourly = Schedule {
            every_secs: 3_600,
            at: Some(parse_time_of_day("00:30").unwrap()),
            zone: TimeZone::UTC,
        };
        assert_eq!(
            hourly.next_after(ms("2026-01-10T10:45:00Z")),
            ms("2026-01-10T11:30:00Z")
        );
    }
}
