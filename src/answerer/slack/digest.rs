//! The digest in Slack (`[digest] slack_channel_id`): on the digest's schedule, one message in
//! that channel listing every pending request it may see, oldest first, with its age, agent and
//! a link to its message, and the median time to an answer over the last day. It shows only the
//! requests that went to Slack through a route that posts in that channel, or that
//! `digest.routes` names; never a request only Discord or the terminal was asked. Nothing is
//! posted when none of those is pending.
//!
//! The schedule (stored as `slack-digest`, beside Discord's `digest`) and the median are the
//! chat layer's ([`crate::answerer::chat::digest`]). The post's `client_msg_id` comes from the
//! channel and the turn's due time, the same for every try of one turn; a try that failed
//! without knowing whether Slack posted it is looked for before the next (history.rs).

use super::interactions::command::pending_line;
use super::outbox::client_msg_id;
use super::render::{md, plain, SECTION_TEXT_MAX};
use super::route;
use super::web::{Failure, Web};
use super::NAME;
use crate::answerer::chat::digest as chat_digest;
use crate::config::Config;
use crate::domain::calendar::Schedule;
use crate::domain::clock::now_ms;
use crate::domain::request::Request;
use crate::domain::AnswererContext;
use slack_morphism::prelude::*;
use std::sync::Arc;
use std::time::Duration;

/// The schedule's name in the store.
pub(super) const SLACK_DIGEST: &str = "slack-digest";
/// Tries of one turn's post (Slack unreachable, a 429): then the turn is skipped, said in the log.
const POST_ATTEMPTS: u32 = 5;
/// The most sections of lines one digest holds (Block Kit allows 50 blocks a message).
const SECTIONS_MAX: usize = 40;

/// The Slack digest of one daemon: where it posts and when.
pub(super) struct Digest {
    config: Arc<Config>,
    web: Arc<Web>,
    channel: String,
    schedule: Schedule,
}

impl Digest {
    /// The digest from the config, if one is configured for Slack.
    pub fn new(config: Arc<Config>, web: Arc<Web>) -> Option<Digest> {
        let channel = config.digest.slack_channel_id.clone()?;
        let schedule = chat_digest::schedule(&config.digest)?;
        Some(Digest {
            config,
            web,
            channel,
            schedule,
        })
    }

    /// Runs the digest until `ctx` shuts down (the daemon's end, or this node's lead).
    pub fn spawn(self: Arc<Self>, ctx: &AnswererContext) {
        let schedule = self.schedule.clone();
        chat_digest::spawn(ctx, SLACK_DIGEST, schedule, move |ctx, due| {
            let me = self.clone();
            async move { me.post(&ctx, due).await }
        });
    }

    /// Posts one digest (due at `due`), unless nothing it may show is pending.
    async fn post(&self, ctx: &AnswererContext, due: i64) {
        let named = &self.config.digest.routes;
        let listed = |req: &Request| {
            req.shown_by(NAME) && {
                let route = route::of_request(&self.config, req);
                route.channel == self.channel || named.contains(&route.name)
            }
        };
        let Some((pending, median)) = chat_digest::read(ctx, listed).await else {
            return;
        };
        if pending.is_empty() {
            tracing::debug!("nothing the Slack digest's channel may see is pending; no digest");
            return;
        }
        let now = now_ms();
        let lines: Vec<String> = pending
            .iter()
            .map(|(req, posts)| pending_line(req, posts, now))
            .collect();
        let content = message(&lines, &median);
        let id = client_msg_id(&format!("digest {} {due}", self.channel), 0);
        let mut attempt = 0;
        // Set once a try failed without knowing whether Slack posted it: the next looks for
        // it first (see history.rs).
        let mut unsure = false;
        let sent = loop {
            attempt += 1;
            let found = match unsure {
                true => self.web.find_posted(&self.channel, None, &id, due).await,
                false => Ok(None),
            };
            let tried = match found {
                Ok(Some(ts)) => Ok(ts),
                Ok(None) | Err(Failure::Permanent(_)) => {
                    self.web
                        .post(&self.channel, content.clone(), &id, None)
                        .await
                }
                Err(f) => Err(f),
            };
            unsure |= tried.as_ref().is_err_and(Failure::unsure_whether_done);
            match tried {
                Ok(ts) => break Ok(ts),
                Err(Failure::Transient {
                    message,
                    retry_after,
                    ..
                }) if attempt < POST_ATTEMPTS => {
                    let wait = retry_after
                        .unwrap_or(Duration::from_secs(1 << attempt))
                        .min(Duration::from_secs(60));
                    tracing::warn!(channel = %self.channel, attempt, error = %message, retry_in_ms = wait.as_millis() as u64, "posting the Slack digest failed; retrying");
                    tokio::select! {
                        _ = ctx.shutdown().cancelled() => return,
                        _ = tokio::time::sleep(wait) => {}
                    }
                }
                Err(f) => break Err(f),
            }
        };
        match sent {
            Ok(_) => {
                tracing::info!(channel = %self.channel, pending = pending.len(), "posted the Slack digest")
            }
            Err(f) => {
                tracing::warn!(channel = %self.channel, error = %f.message(), "cannot post the Slack digest; the next comes on schedule")
            }
        }
    }
}

/// The digest's message: a header with the count, the lines in sections of at most Block Kit's
/// 3,000 characters (never a line cut in two; past [`SECTIONS_MAX`] the rest are counted), and
/// the median in a context line.
fn message(lines: &[String], median: &str) -> SlackMessageContent {
    let title = format!("{} question(s) waiting for an answer", lines.len());
    let mut sections: Vec<String> = Vec::new();
    let mut left_out = 0;
    for line in lines {
        let n = sections.len();
        match sections.last_mut() {
            Some(s) if s.chars().count() + 1 + line.chars().count() <= SECTION_TEXT_MAX => {
                s.push('\n');
                s.push_str(line);
            }
            _ if n < SECTIONS_MAX => sections.push(line.clone()),
            _ => left_out += 1,
        }
    }
    if left_out > 0 {
        sections.push(format!("…and {left_out} more (`/askrelay pending all`)."));
    }
    let mut blocks: Vec<SlackBlock> = vec![SlackHeaderBlock::new(plain(title.clone())).into()];
    blocks.extend(
        sections
            .into_iter()
            .map(|s| SlackSectionBlock::new().with_text(md(s)).into()),
    );
    blocks.push(
        SlackContextBlock::new(vec![SlackContextBlockElement::MarkDown(
            SlackBlockMarkDownText::new(median.to_owned()).with_verbatim(true),
        )])
        .into(),
    );
    SlackMessageContent::new()
        .with_text(title)
        .with_blocks(blocks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_digest_keeps_every_section_within_block_kit_and_counts_the_rest() {
        let line = "x".repeat(1000);
        let lines = vec![line; 200];
        let m = message(&lines, "no question was answered in the last day");
        let blocks = m.blocks.unwrap();
        assert!(blocks.len() <= 50, "{}", blocks.len());
        let json = serde_json::to_value(&blocks).unwrap();
        for b in json.as_array().unwrap() {
            if b["type"] == "section" {
                assert!(b["text"]["text"].as_str().unwrap().chars().count() <= SECTION_TEXT_MAX);
            }
        }
        // Two lines a section, 40 sections: 80 shown, 120 counted.
        assert!(json.to_string().contains("…and 120 more"), "{json}");
        assert_eq!(m.text.unwrap(), "200 question(s) waiting for an answer");
    }
}
