//! The digest (`[digest]`): a summary of the questions still waiting, posted on a schedule to
//! a channel, so that a team lead gets a daily picture without asking.
//!
//! It lists the unanswered questions oldest first, with their ages and jump links, and the
//! median time to an answer over the last day. It shows only what its channel may see: the
//! requests that went to Discord through a route that posts in that channel, or that
//! `digest.routes` names; never a request only the terminal was asked. Nothing is posted when
//! none of those is pending. The schedule (stored as `digest`) and the median are the chat
//! layer's ([`crate::answerer::chat::digest`]); the post's nonce (from the due time) keeps a
//! retry from posting it twice.
//!
//! [`Digest`] exists only when a digest is configured, and owns its channel and schedule.

use super::render::truncate;
use super::rest::Rest;
use super::route;
use super::shown::NAME;
use crate::answerer::chat::digest as chat_digest;
use crate::config::Config;
use crate::domain::calendar::Schedule;
use crate::domain::clock::now_ms;
use crate::domain::request::Request;
use crate::domain::AnswererContext;
use serenity::all::{CreateAllowedMentions, CreateEmbed, CreateMessage, Nonce};
use std::sync::Arc;

/// The schedule's name in the store.
pub(super) const DIGEST: &str = "digest";

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
        let channel = config.digest.channel_id?.0;
        let schedule = chat_digest::schedule(&config.digest)?;
        Some(Digest {
            config,
            rest,
            channel,
            schedule,
        })
    }

    /// Runs the digest until shutdown, resuming the stored schedule.
    pub(super) fn spawn(self: Arc<Self>, ctx: &AnswererContext) {
        let schedule = self.schedule.clone();
        chat_digest::spawn(ctx, DIGEST, schedule, move |ctx, due| {
            let me = self.clone();
            async move { me.post_digest(&ctx, me.channel, due).await }
        });
    }

    /// Posts one digest (due at `due`), unless nothing is pending.
    async fn post_digest(&self, ctx: &AnswererContext, channel: u64, due: i64) {
        let named = &self.config.digest.routes;
        let listed = |req: &Request| {
            req.shown_by(NAME) && {
                let route = route::of_request(&self.config, req);
                route.posts_in(channel) || named.contains(&route.name)
            }
        };
        let Some((pending, median)) = chat_digest::read(ctx, listed).await else {
            return;
        };
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
