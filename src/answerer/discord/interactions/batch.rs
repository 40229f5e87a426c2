//! Batch controls (`ar:batch:pick`, `ar:batch:allow`, `ar:batch:deny`; see
//! [`crate::answerer::discord::batch`]): a selection is shown in the (ephemeral) message, and a
//! verdict checks each selected request as a press on its own message
//! ([`crate::answerer::chat::batch::check`]), settles it through the core and edits its
//! messages. Every control is answered within Discord's 3 s however long the store takes.

use super::{describe, Handler};
use crate::answerer::chat::batch::{self as chat_batch, Decided, Item};
use crate::answerer::chat::vote::Settle;
use crate::answerer::chat::Person;
use crate::answerer::discord::batch::{reselect, selected, BatchId, DiscordReply};
use crate::answerer::discord::platform::{self, Discord};
use crate::answerer::discord::render;
use crate::answerer::discord::rest::Timely;
use crate::answerer::discord::shown::NAME;
use crate::domain::approval::Verdict;
use crate::domain::clock::now_ms;
use crate::domain::request::{AuditAction, AuditEntry, Post, Request, Source};
use serenity::all::{
    ComponentInteraction, ComponentInteractionDataKind, CreateActionRow, CreateInteractionResponse,
    CreateInteractionResponseFollowup, CreateInteractionResponseMessage, EditInteractionResponse,
};
use std::time::Duration;

/// What a batch control is answered with (see [`Handler::on_batch`]).
enum BatchStep {
    /// A private reply: a refusal, or a selection that could not be saved.
    Tell(String),
    /// The listing's controls with the selection marked as the menu's defaults.
    Show(Vec<CreateActionRow>),
    /// Allow or deny the selected requests (their tokens).
    Decide(Verdict, Vec<String>),
}

/// Batch controls, admitted by the interaction handler before any per-request check.
impl Handler {
    pub(super) async fn on_batch(&self, ci: &ComponentInteraction, id: BatchId) {
        let timeout = Duration::from_millis(self.config.discord.callback_timeout_ms);
        // What to answer waits on the store (an audit row, a refusal's): raced against
        // Discord's 3 s like a click on a question (see the interactions module).
        self.rest.http.set_application_id(ci.application_id);
        let step = self
            .rest
            .in_time_or_defer(
                timeout,
                ci.id,
                &ci.token,
                &CreateInteractionResponse::Acknowledge,
                self.batch_step(ci, id),
            )
            .await;
        let http = &self.rest.http;
        match step {
            Timely::InTime(BatchStep::Tell(text)) => self.tell(ci, text).await,
            Timely::InTime(BatchStep::Show(rows)) => {
                let update = CreateInteractionResponse::UpdateMessage(
                    CreateInteractionResponseMessage::new().components(rows),
                );
                if let Err(f) = self
                    .rest
                    .respond(timeout, ci.id, &ci.token, ci.create_response(http, update))
                    .await
                {
                    tracing::warn!(error = %f.message(), "cannot answer a batch selection");
                }
            }
            Timely::InTime(BatchStep::Decide(verdict, tokens)) => {
                let caller = platform::person(&self.config, &ci.user, ci.member.as_ref());
                let work = self.decide(ci, &caller, verdict, tokens);
                self.answer_in_time(ci, work).await;
            }
            // Logged where it failed; without a deferral the token is of no use.
            Timely::Deferred(_, Err(_)) => {}
            Timely::Deferred(step, Ok(())) => {
                let text = match step {
                    BatchStep::Tell(text) => text,
                    BatchStep::Show(rows) => {
                        // The listing is the interaction's own (ephemeral) message: @original.
                        let edit = EditInteractionResponse::new().components(rows);
                        let edited = self
                            .rest
                            .retry("showing a batch selection", 3, || async {
                                self.rest
                                    .call(
                                        timeout * 4,
                                        http.edit_original_interaction_response(
                                            &ci.token,
                                            &edit,
                                            Vec::new(),
                                        ),
                                    )
                                    .await
                            })
                            .await;
                        if let Err(f) = edited {
                            tracing::warn!(error = %f.message(), "cannot show a batch selection");
                        }
                        return;
                    }
                    BatchStep::Decide(verdict, tokens) => {
                        let caller = platform::person(&self.config, &ci.user, ci.member.as_ref());
                        self.decide(ci, &caller, verdict, tokens).await
                    }
                };
                let message = CreateInteractionResponseFollowup::new()
                    .content(render::truncate_md(&text, render::CONTENT_MAX))
                    .allowed_mentions(serenity::builder::CreateAllowedMentions::new());
                if let Err(f) = self.rest.follow_up(timeout, &ci.token, message).await {
                    tracing::warn!(error = %f.message(), "cannot follow up a batch control");
                }
            }
        }
    }

    /// What a batch control is answered with, its audit row written: a refusal, the
    /// selection shown, or the selected requests to decide.
    async fn batch_step(&self, ci: &ComponentInteraction, id: BatchId) -> BatchStep {
        let mut audit = AuditEntry {
            source: Source::Discord,
            actor: Some(describe(&ci.user)),
            detail: Some(format!("{id} in channel {}", ci.channel_id)),
            ..Default::default()
        };
        if ci.user.bot {
            audit.action = AuditAction::Bot;
            self.ctx.refuse(audit).await;
            return BatchStep::Tell("Bot accounts cannot answer askrelay questions.".into());
        }
        match id {
            BatchId::Pick => {
                let values: &[String] = match &ci.data.kind {
                    ComponentInteractionDataKind::StringSelect { values } => values,
                    _ => &[],
                };
                let Some(rows) = reselect(&ci.message.components, values) else {
                    audit.action = AuditAction::Forged;
                    self.ctx.refuse(audit).await;
                    return BatchStep::Tell(
                        "This control is not one askrelay knows; nothing was recorded.".into(),
                    );
                };
                // A selection changes no request: it is audited, then shown.
                audit.action = AuditAction::Draft;
                audit.accepted = true;
                audit.detail = Some(format!(
                    "batch selection of {} request(s) in channel {}",
                    values.len(),
                    ci.channel_id
                ));
                if let Err(e) = self.ctx.record(audit).await {
                    tracing::error!(error = %format!("{e:#}"), "cannot audit a batch selection");
                    return BatchStep::Tell(
                        "askrelay could not save your selection, try again.".into(),
                    );
                }
                BatchStep::Show(rows)
            }
            BatchId::Decide(verdict) => {
                let tokens = selected(&ci.message.components);
                if tokens.is_empty() {
                    audit.action = AuditAction::Command;
                    self.ctx.refuse(audit).await;
                    return BatchStep::Tell(
                        "Choose the requests in the menu first; nothing was answered.".into(),
                    );
                }
                BatchStep::Decide(verdict, tokens)
            }
        }
    }

    /// Settles each selected request on its own and says what became of each.
    async fn decide(
        &self,
        ci: &ComponentInteraction,
        caller: &Person,
        verdict: Verdict,
        tokens: Vec<String>,
    ) -> String {
        let mut items = Vec::with_capacity(tokens.len());
        for token in &tokens {
            items.push(self.decide_one(ci, caller, verdict, token).await);
        }
        let done = items.iter().filter(|i| i.outcome.is_ok()).count();
        // Each request's answer or refusal is audited already; this row ties them together.
        let summary = self
            .ctx
            .record(AuditEntry {
                source: Source::Discord,
                actor: Some(describe(&ci.user)),
                action: AuditAction::Command,
                detail: Some(format!(
                    "{} in channel {}: {done} done, {} refused",
                    BatchId::Decide(verdict),
                    ci.channel_id,
                    items.len() - done
                )),
                accepted: true,
                ..Default::default()
            })
            .await;
        if let Err(e) = summary {
            tracing::error!(error = %format!("{e:#}"), "cannot audit a batch");
        }
        chat_batch::report(verdict, &items, &DiscordReply)
    }

    /// One request of a batch: the checks of a click, then the core's settlement (the chat
    /// layer's), and its messages edited.
    async fn decide_one(
        &self,
        ci: &ComponentInteraction,
        caller: &Person,
        verdict: Verdict,
        token: &str,
    ) -> Item {
        let audit = AuditEntry {
            source: Source::Discord,
            actor: Some(describe(&ci.user)),
            detail: Some(format!(
                "{} in channel {}",
                BatchId::Decide(verdict),
                ci.channel_id
            )),
            ..Default::default()
        };
        let decided = chat_batch::decide_one(
            &self.ctx,
            &Discord(&self.config),
            caller,
            &ci.channel_id.to_string(),
            verdict,
            token,
            &audit,
            now_ms(),
        )
        .await;
        if let Decided::Read {
            req,
            posts,
            outcome: Ok(settled),
        } = &decided
        {
            self.show_one(req, posts, settled);
        }
        chat_batch::item(&decided, verdict, &DiscordReply)
    }

    /// The request's messages after a settlement, edited as a click's copies are.
    fn show_one(&self, req: &Request, posts: &[Post], settled: &Settle) {
        self.outbox.shown.forget(&req.token);
        let mine: Vec<_> = posts
            .iter()
            .filter(|p| p.idx == 0 && p.answerer == NAME && !p.is_note())
            .cloned()
            .collect();
        match settled {
            Settle::Won(request) => self.outbox.sync_edits(&self.ctx, request, &mine),
            Settle::Voted(request, _) => self.outbox.show_votes(&self.ctx, request, 0, &mine),
            _ => {}
        }
    }

    /// A private reply (type 4).
    async fn tell(&self, ci: &ComponentInteraction, text: String) {
        let timeout = Duration::from_millis(self.config.discord.callback_timeout_ms);
        let http = &self.rest.http;
        let msg = CreateInteractionResponse::Message(private(&text));
        if let Err(f) = self
            .rest
            .respond(timeout, ci.id, &ci.token, ci.create_response(http, msg))
            .await
        {
            tracing::warn!(error = %f.message(), "cannot answer a batch control");
        }
    }

    /// Answers with what `work` says, within Discord's 3 s: at once if it is quick, else the
    /// interaction is deferred first and the answer edited in (as `/askrelay` is).
    async fn answer_in_time(
        &self,
        ci: &ComponentInteraction,
        work: impl std::future::Future<Output = String>,
    ) {
        let timeout = Duration::from_millis(self.config.discord.callback_timeout_ms);
        let work = async {
            let text = work.await;
            let edit = EditInteractionResponse::new()
                .content(render::truncate_md(&text, render::CONTENT_MAX))
                .allowed_mentions(serenity::builder::CreateAllowedMentions::new());
            (private(&text), edit)
        };
        let sent = self
            .rest
            .answer_in_time(timeout, ci.id, &ci.token, "answering a batch", work)
            .await;
        if let Err(f) = sent {
            tracing::warn!(error = %f.message(), "cannot answer a batch");
        }
    }
}

/// An ephemeral message that mentions nobody.
fn private(text: &str) -> CreateInteractionResponseMessage {
    CreateInteractionResponseMessage::new()
        .content(render::truncate_md(text, render::CONTENT_MAX))
        .ephemeral(true)
        .allowed_mentions(serenity::builder::CreateAllowedMentions::new())
}
