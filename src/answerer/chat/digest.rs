//! The digest (`[digest]`) as every chat platform runs it: its schedule, resumed from the store
//! and taken turn by turn, and the median time to an answer it shows. The platform says which
//! requests its channel may see, renders the lines and posts them.
//!
//! The next due time is stored (`schedules`, under the platform's own name): a restart resumes
//! the schedule, and a turn is taken by a conditional update from the due time that was read,
//! so it is never taken twice. A turn is taken before its post; a crash between the two skips
//! that one digest (the next comes on schedule).

use crate::config::DigestConfig;
use crate::domain::calendar::{self, Schedule};
use crate::domain::clock::now_ms;
use crate::domain::expiry::human;
use crate::domain::request::{Post, Request};
use crate::domain::{AnswererContext, Status};
use std::future::Future;
use std::time::Duration;

const DAY_MS: i64 = 86_400_000;

/// The digest's schedule from the config: every `every_secs` (daily by default), anchored to
/// `at` in `timezone` (UTC by default). `None` when the time zone is unknown (the config's
/// check refuses it first).
pub fn schedule(d: &DigestConfig) -> Option<Schedule> {
    let zone = match d.timezone.as_deref() {
        Some(tz) => calendar::zone(tz).ok()?,
        None => jiff::tz::TimeZone::UTC,
    };
    Some(Schedule {
        every_secs: d.every_secs.unwrap_or(86_400),
        at: d
            .at
            .as_deref()
            .and_then(|a| calendar::parse_time_of_day(a).ok()),
        zone,
    })
}

/// Runs the schedule stored as `name` until shutdown: at each turn it takes (and only then),
/// `turn` is called with the turn's due time.
pub fn spawn<F, Fut>(ctx: &AnswererContext, name: &'static str, schedule: Schedule, turn: F)
where
    F: Fn(AnswererContext, i64) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send,
{
    let task_ctx = ctx.clone();
    ctx.spawn(async move {
        let ctx = task_ctx;
        loop {
            let due = match ctx.schedule_due(name).await {
                Ok(Some(due)) => due,
                Ok(None) => {
                    let first = schedule.next_after(now_ms());
                    match ctx.advance_schedule(name, None, first).await {
                        Ok(_) => continue,
                        Err(e) => {
                            tracing::error!(schedule = name, error = %format!("{e:#}"), "cannot start the digest schedule; retrying in a minute");
                            first.min(now_ms() + 60_000)
                        }
                    }
                }
                Err(e) => {
                    tracing::error!(schedule = name, error = %format!("{e:#}"), "cannot read the digest schedule; retrying in a minute");
                    now_ms() + 60_000
                }
            };
            let wait = Duration::from_millis((due - now_ms()).clamp(0, 60_000) as u64);
            tokio::select! {
                _ = ctx.shutdown().cancelled() => return,
                _ = tokio::time::sleep(wait) => {}
            }
            if now_ms() < due {
                continue;
            }
            match ctx
                .advance_schedule(name, Some(due), schedule.next_after(now_ms()))
                .await
            {
                Ok(true) => turn(ctx.clone(), due).await,
                Ok(false) => {} // another run took this turn
                Err(e) => {
                    tracing::error!(schedule = name, error = %format!("{e:#}"), "cannot take the digest's turn");
                    tokio::select! {
                        _ = ctx.shutdown().cancelled() => return,
                        _ = tokio::time::sleep(Duration::from_secs(60)) => {}
                    }
                }
            }
        }
    });
}

/// What one turn lists: the pending requests `listed` lets its channel see, and the line
/// with the median time to an answer over the last day of those it would list. `None`: the
/// store could not be read (logged).
#[allow(clippy::type_complexity)] // the store's own pairs
pub async fn read(
    ctx: &AnswererContext,
    listed: impl Fn(&Request) -> bool,
) -> Option<(Vec<(Request, Vec<Post>)>, String)> {
    let (pending, recent) = match (ctx.pending_all(1000).await, ctx.history_all(1000).await) {
        (Ok(p), Ok(h)) => (p, h),
        (Err(e), _) | (_, Err(e)) => {
            tracing::error!(error = %format!("{e:#}"), "cannot read the requests for the digest");
            return None;
        }
    };
    let pending: Vec<_> = pending.into_iter().filter(|(req, _)| listed(req)).collect();
    let now = now_ms();
    let mut took: Vec<i64> = recent
        .iter()
        .filter(|(r, _)| r.status == Status::Answered && listed(r))
        .filter_map(|(r, _)| {
            r.ended_at_ms
                .filter(|&end| end >= now - DAY_MS)
                .map(|end| end - r.created_at_ms)
        })
        .collect();
    took.sort_unstable();
    let median = match took.len() {
        0 => "no question was answered in the last day".to_owned(),
        n => format!(
            "median time to an answer over the last day: {} ({n} answered)",
            human(Duration::from_secs((took[n / 2].max(0) / 1000) as u64))
        ),
    };
    Some((pending, median))
}
