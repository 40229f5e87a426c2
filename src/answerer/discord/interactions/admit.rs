//! Admission: the checks every interaction goes through before anything changes (see the
//! parent module's comment), and the refusal, audited, when one fails.

use super::{describe, Admitted, Handler, Origin, Refusal, Reply, BOT, UNKNOWN};
use crate::answerer::chat::admit as chat_admit;
use crate::answerer::discord::custom_id::{self, CustomId, Kind};
use crate::answerer::discord::gateway::Gateway;
use crate::answerer::discord::platform::{self, Discord};
use crate::answerer::discord::route;
use crate::answerer::discord::shown::NAME;
use crate::domain::request::{AuditAction, AuditEntry, Post, Source, Status};
use crate::domain::text::Escaped;
use serenity::all::ActionRowComponent;
use std::sync::Arc;

/// The questions whose controls `m` carries, when `m` is this bot's own message; none
/// otherwise.
pub(super) fn copy_of(gateway: &Gateway, m: &serenity::all::Message) -> Vec<(String, usize)> {
    if !gateway.is_bot(m.author.id.get()) {
        return Vec::new();
    }
    m.components
        .iter()
        .flat_map(|row| row.components.iter())
        .filter_map(|c| match c {
            ActionRowComponent::Button(b) => match &b.data {
                serenity::all::ButtonKind::NonLink { custom_id, .. } => Some(custom_id.as_str()),
                _ => None,
            },
            ActionRowComponent::SelectMenu(m) => m.custom_id.as_deref(),
            _ => None,
        })
        .filter_map(custom_id::parse)
        .map(|id| (id.token, id.question))
        .collect()
}

impl Handler {
    pub(super) async fn refuse(&self, origin: &Origin<'_>, r: Refusal) -> Reply {
        self.ctx
            .refuse(AuditEntry {
                request_key: r.about.as_ref().map(|a| a.0),
                request_id: r.about.map(|a| a.1),
                question_idx: r.idx,
                source: Source::Discord,
                actor: Some(describe(origin.user)),
                action: r.action,
                detail: Some(format!(
                    "custom_id {:?} in channel {} message {}",
                    Escaped(origin.custom_id),
                    origin.channel,
                    origin.message.map_or("none".into(), |m| m.to_string())
                )),
                accepted: false,
            })
            .await;
        Reply::Tell(r.text)
    }

    /// The checks every interaction goes through (see the module comment).
    pub(super) async fn admit<K: Kind>(&self, o: &Origin<'_>) -> Result<Admitted<K>, Refusal> {
        let person = platform::person(&self.config, o.user, o.member);
        if let Err(r) = chat_admit::person(&person) {
            return Err(Refusal::new(r.action, BOT));
        }
        let id = CustomId::<K>::parse(o.custom_id).ok_or_else(|| {
            Refusal::new(
                AuditAction::Forged,
                "This control is not one askrelay knows; nothing was recorded.",
            )
        })?;
        let shown = match self.outbox.shown.get(&id.token) {
            Some(shown) => Ok(Some(shown)),
            None => self.ctx.by_token(&id.token).await.map(|found| {
                found.map(|(req, posts)| {
                    if req.status == Status::Pending {
                        self.outbox.shown.insert(req.clone(), posts.clone());
                    }
                    Arc::new((req, posts))
                })
            }),
        };
        let (req, posts) = match shown {
            Ok(Some(found)) => (found.0.clone(), found.1.clone()),
            Ok(None) => return Err(Refusal::new(AuditAction::Stale, UNKNOWN)),
            Err(e) => {
                tracing::error!(error = %format!("{e:#}"), "cannot read a request for an interaction");
                // What the person needs to know is that their answer did not count.
                return Err(Refusal::new(
                    AuditAction::StoreError,
                    super::not_saved(&format!("{e:#}")),
                ));
            }
        };
        let (key, idx) = (req.key, id.question);
        // The question's message or one of its copies (never a note, which has no controls).
        let (mut mine, mut others): (Vec<Post>, Vec<Post>) = posts.into_iter().partition(|p| {
            if p.idx != idx || p.answerer != NAME || p.is_note() {
                return false;
            }
            let guild = o.guild.map(|g| g.to_string());
            match (&p.message, o.message) {
                // A preview of the clicker's own (ephemeral) in the question's channel.
                (Some(_), Some(_)) if id.action.off_message() => {
                    p.channel == o.channel.to_string() && p.guild == guild
                }
                (Some(m), Some(clicked)) => {
                    *m == clicked.to_string()
                        && p.channel == o.channel.to_string()
                        && p.guild == guild
                }
                // A message Discord confirmed a moment ago may not be recorded yet; the token
                // already binds it to this request. A DM not recorded yet: a DM (no guild) with
                // the very user it was sent to. Otherwise the channel, and the guild once known
                // (a channel belongs to one guild).
                (None, Some(_)) => match route::dm_user(&p.channel) {
                    Some(user) => o.guild.is_none() && o.user.id.get() == user,
                    None => {
                        p.channel == o.channel.to_string()
                            && (p.guild.is_none() || p.guild == guild)
                    }
                },
                (_, None) => false,
            }
        });
        let a_copy = o.ours.iter().any(|(t, q)| *t == id.token && *q == idx);
        if mine.is_empty() && a_copy && o.message.is_some() {
            // A copy this bot posted of this very question (its controls are this question's)
            // but could not record: a leader that was frozen or cut off between its post and
            // the record, whose successor posted the question again
            // (without Discord's nonce de-duplication, two messages). The click is as good as
            // one on the recorded message of the same channel, which is the one edited.
            let guild = o.guild.map(|g| g.to_string());
            let (copies, rest): (Vec<Post>, Vec<Post>) = others.into_iter().partition(|p| {
                p.idx == idx
                    && p.answerer == NAME
                    && !p.is_note()
                    && p.message.is_some()
                    && p.channel == o.channel.to_string()
                    && p.guild == guild
            });
            if !copies.is_empty() {
                tracing::info!(key, question = idx, message = ?o.message, "a click on an unrecorded copy of a question's message");
            }
            mine = copies;
            others = rest;
        }
        if mine.len() > 1 {
            // Two rows in one channel, one not recorded yet: the recorded one is the match.
            mine.sort_by_key(|p| p.message.is_none());
        }
        let Some(post) = mine.into_iter().next() else {
            return Err(Refusal::new(AuditAction::Stale, UNKNOWN).about(&req, idx));
        };
        let route = route::of_request(&self.config, &req);
        let now = crate::domain::clock::now_ms();
        chat_admit::press(
            &Discord(&self.config),
            &req,
            idx,
            id.action.option(),
            &person,
            now,
        )
        .map_err(|r| Refusal::of(r, &req.questions[idx]).about(&req, idx))?;
        Ok(Admitted {
            person,
            id,
            req,
            post,
            others,
            route,
        })
    }
}
