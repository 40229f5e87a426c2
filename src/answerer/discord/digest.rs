//! The digest (`[digest]`): a summary of the questions still waiting, posted on a schedule to
//! a channel, so that a team lead gets a daily picture without asking.
//!
//! It lists the unanswered questions oldest first, with their ages and jump links, and the
//! median time to an answer over the last day. It shows only what its channel may see: the
//! requests that went to Discord through a route that posts in that channel, or that
//! `digest.routes` names; never a request only the terminal was asked. Nothing is posted when
//! none of those is pending. The
//! next due time is stored (`schedules`, name `digest`): a restart resumes the schedule, and a
//! turn is taken by a conditional update from the due time that was read, so it is never taken
//! twice. A turn is taken before its post; a crash between the two skips that one digest (the
//! next comes on schedule), and the post's nonce (from the due time) keeps a retry from posting
//! it twice.
//!
//! [`Digest`] exists only when a digest is configured, and owns its channel and schedule.

use super::render::truncate;
use super::rest::Rest;
use super::route;
use super::shown::NAME;
use crate::config::Config;
use crate::domain::calendar::{self, Schedule};
use crate::domain::clock::now_ms;
use crate::domain::expiry::human;
use crate::domain::request::Request;
use crate::domain::{AnswererContext, Status};
use serenity::all::{CreateAllowedMentions, CreateEmbed, CreateMessage, Nonce};
use std::sync::Arc;
use std::time::Duration;

/// The schedule's name in the store.
pub(super) const DIGEST: &str = "digest";
const DAY_MS: i64 = 86_400_000;

/// The digest of one daemon: where it posts and when.
pub(super) struct Digest {
    config: Arc<Config>,
    rest: Arc<Rest>,
    channel: u64,
    schedule: Schedule,
}

impl Digest {
    /// The digest from the config, if one is configured.
    pub fn new(config: Arc<Config>, rest: Arc<Rest>) -> Option<Digest> {
        let d = &config.digest;
        let channel = d.channel_id?.0;
        let zone = match d.timezone.as_deref() {
            Some(tz) => calendar::zone(tz).ok()?,
            None => jiff::tz::TimeZone::UTC,
        };
        let schedule = Schedule {
            every_secs: d.every_secs.unwrap_or(86_400),
            at: d
                .at
                .as_deref()
                .and_then(|a| calendar::parse_time_of_day(a).ok()),
            zone,
        };
        Some(Digest {
            config,
            rest,
            channel,
            schedule,
        })
    }

    /// Runs the digest until shutdown, resuming the stored schedule.
    pub(super) fn spawn(self: Arc<Self>, ctx: &AnswererContext) {
        let (channel, schedule) = (self.channel, self.schedule.clone());
        let me = self;
        let task_ctx = ctx.clone();
        ctx.spawn(async move {
            let ctx = task_ctx;
            loop {
                let due = match ctx.schedule_due(DIGEST).await {
                    Ok(Some(due)) => due,
                    Ok(None) => {
                        let first = schedule.next_after(now_ms());
                        match ctx.advance_schedule(DIGEST, None, first).await {
                            Ok(_) => continue,
                            Err(e) => {
                                tracing::error!(error = %format!("{e:#}"), "cannot start the digest schedule; retrying in a minute");
                                first.min(now_ms() + 60_000)
                            }
                        }
                    }
                    Err(e) => {
                        tracing::error!(error = %format!("{e:#}"), "cannot read the digest schedule; retrying in a minute");
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
                    .advance_schedule(DIGEST, Some(due), schedule.next_after(now_ms()))
                    .await
                {
                    Ok(true) => me.post_digest(&ctx, channel, due).await,
                    Ok(false) => {} // another run took this turn
                    Err(e) => {
                        tracing::error!(error = %format!("{e:#}"), "cannot take the digest's turn");
                        tokio::select! {
                            _ = ctx.shutdown().cancelled() => return,
                            _ = tokio::time::sleep(Duration::from_secs(60)) => {}
                        }
                    }
                }
            }
        });
    }

    /// Posts one digest (due at `due`), unless nothing is pending.
    async fn post_digest(&self, ctx: &AnswererContext, channel: u64, due: i64) {
        let (pending, recent) = match (ctx.pending_all(1000).await, ctx.history_all(1000).await) {
            (Ok(p), Ok(h)) => (p, h),
            (Err(e), _) | (_, Err(e)) => {
                tracing::error!(error = %format!("{e:#}"), "cannot read the requests for the digest");
                return;
            }
        };
        let named = &self.config.digest.routes;
        let listed = |req: &Request| {
            req.shown_by(NAME) && {
                let route = route::of_request(&self.config, req);
                route.posts_in(channel) || named.contains(&route.name)
            }
        };
        let pending: Vec<_> = pending.iter().filter(|(req, _)| listed(req)).collect();
        if pending.is_empty() {
            tracing::debug!("nothing the digest's channel may see is pending; no digest");
            return;
        }
        let now = now_ms();
        let lines: Vec<String> = pending
            .iter()
            .map(|(req, posts)| {
                super::commands::pending_line(req, posts, now, |c, m| self.rest.link(c, m))
            })
            .collect();
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
        let description = super::commands::listing(&lines, "");
        let message = CreateMessage::new()
            .embed(
                CreateEmbed::new()
                    .title(format!(
                        "{} question(s) waiting for an answer",
                        pending.len()
                    ))
                    .description(description)
                    .footer(serenity::all::CreateEmbedFooter::new(truncate(
                        &median, 200,
                    ))),
            )
            .allowed_mentions(CreateAllowedMentions::new())
            .nonce(Nonce::String(format!("digest{due}")))
            .enforce_nonce(true);
        let sent = self
            .rest
            .retry("posting the digest", 5, || async {
                self.rest.check_channel(channel, 1).await?;
                self.rest
                    .send(channel, message.clone(), &|| ctx.holds_term())
                    .await
            })
            .await;
        match sent {
            Ok(_) => tracing::info!(channel, pending = pending.len(), "posted the digest"),
            Err(f) => tracing::warn!(channel, error = %f.message(), "cannot post the digest"),
        }
    }
}
