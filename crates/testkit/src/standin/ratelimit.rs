//! The Discord-like rate limits of `StandInOptions::rate_limits`: fixed windows per channel (for
//! creating messages) and global (per second, interaction callbacks exempt), 429 replies with
//! Discord's headers and body, the counters behind `StandIn::rate_limited`, and the
//! `X-RateLimit-*` headers every successful reply carries.

use std::time::{Duration, Instant};

use serde_json::json;

use super::reply::Reply;
use super::{now_secs_f64, parse_snowflake, St};

/// A fixed rate-limit window: opens at the first request after the previous one closed.
#[derive(Clone, Copy)]
pub(super) struct Window {
    start: Instant,
    count: u32,
}

/// Takes one request from the window: `Ok((remaining, reset_after))` or `Err(retry_after)`.
fn take_window(
    w: &mut Option<Window>,
    now: Instant,
    limit: u32,
    len: Duration,
) -> Result<(u32, Duration), Duration> {
    let win = match w {
        Some(win) if now < win.start + len => win,
        _ => w.insert(Window {
            start: now,
            count: 0,
        }),
    };
    let left = (win.start + len).saturating_duration_since(now);
    if win.count >= limit {
        return Err(left);
    }
    win.count += 1;
    Ok((limit - win.count, left))
}

/// Seconds rounded up to the millisecond, so that a client that waits that long is never early.
fn secs_up(d: Duration) -> f64 {
    (d.as_secs_f64() * 1000.0).ceil() / 1000.0
}

/// With rate limits on: `Err(429)` for a request over a limit, else the `X-RateLimit-*` headers
/// of its bucket when it has a limited one (creating a channel message).
#[allow(clippy::result_large_err)]
pub(super) fn check_rate_limits(
    st: &mut St,
    method: &str,
    segs: &[&str],
) -> Result<Option<Vec<(String, String)>>, Reply> {
    let Some(limits) = st.rate_limits.clone() else {
        return Ok(None);
    };
    let now = Instant::now();
    // Interaction callbacks are exempt from the global limit, as on Discord.
    if segs.first() != Some(&"interactions") {
        if let Err(retry) = take_window(
            &mut st.global_window,
            now,
            limits.global_per_second,
            Duration::from_secs(1),
        ) {
            st.limited.global += 1;
            let retry = secs_up(retry);
            return Err(Reply {
                status: 429,
                body: Some(json!({
                    "message": "You are being rate limited.",
                    "retry_after": retry,
                    "global": true,
                })),
                headers: vec![
                    ("retry-after".to_string(), format!("{retry:.3}")),
                    ("x-ratelimit-global".to_string(), "true".to_string()),
                    ("x-ratelimit-scope".to_string(), "global".to_string()),
                ],
            });
        }
    }
    let ["channels", cid, "messages"] = segs else {
        return Ok(None);
    };
    if method != "POST" {
        return Ok(None);
    }
    let Some(cid) = parse_snowflake(cid) else {
        return Ok(None);
    };
    let bucket = hash_hex(&format!("POST channels/{cid}/messages"));
    let mut window = st.channel_windows.get(&cid).copied();
    let taken = take_window(
        &mut window,
        now,
        limits.channel_messages,
        limits.channel_window,
    );
    if let Some(w) = window {
        st.channel_windows.insert(cid, w);
    }
    let (remaining, reset_after) = match taken {
        Ok(t) => t,
        Err(retry) => (0, retry),
    };
    let reset_after = secs_up(reset_after);
    let mut headers = vec![
        (
            "x-ratelimit-limit".to_string(),
            limits.channel_messages.to_string(),
        ),
        ("x-ratelimit-remaining".to_string(), remaining.to_string()),
        (
            "x-ratelimit-reset".to_string(),
            format!("{:.3}", now_secs_f64() + reset_after),
        ),
        (
            "x-ratelimit-reset-after".to_string(),
            format!("{reset_after:.3}"),
        ),
        ("x-ratelimit-bucket".to_string(), bucket),
    ];
    if taken.is_err() {
        st.limited.channel += 1;
        headers.push(("retry-after".to_string(), format!("{reset_after:.3}")));
        headers.push(("x-ratelimit-scope".to_string(), "user".to_string()));
        return Err(Reply {
            status: 429,
            body: Some(json!({
                "message": "You are being rate limited.",
                "retry_after": reset_after,
                "global": false,
            })),
            headers,
        });
    }
    Ok(Some(headers))
}

pub(super) fn bucket_key(method: &str, segs: &[&str]) -> String {
    // Discord buckets by route with the major parameter (channel, webhook/token) kept.
    let major: Vec<&str> = segs.iter().take(3).copied().collect();
    format!("{method} {}", major.join("/"))
}

pub(super) fn ratelimit_headers(bucket: &str) -> Vec<(String, String)> {
    vec![
        ("x-ratelimit-limit".to_string(), "5".to_string()),
        ("x-ratelimit-remaining".to_string(), "4".to_string()),
        (
            "x-ratelimit-reset".to_string(),
            format!("{:.3}", now_secs_f64() + 1.0),
        ),
        ("x-ratelimit-reset-after".to_string(), "1.000".to_string()),
        ("x-ratelimit-bucket".to_string(), hash_hex(bucket)),
    ]
}

pub(super) fn hash_hex(s: &str) -> String {
    // FNV-1a, enough for a stable bucket id.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}
