//! Responding, the pipeline's last step: the reply as the interaction's one callback when it is
//! ready in time, else a deferral and, once the store answered, an outbox edit or an ephemeral
//! follow-up (see the parent module's comment).

use super::{Handler, Reply};
use crate::answerer::discord::outbox::record_edit_failed;
use crate::answerer::discord::render;
use crate::answerer::discord::rest::Timely;
use crate::domain::request::{EditState, Post};
use serenity::all::{
    ComponentInteraction, CreateInteractionResponse, CreateInteractionResponseMessage,
    ModalInteraction,
};

/// The follow-up of a draft whose save was slow (its update deferred).
const DRAFT_SAVED: &str = "Your selection was saved; press Submit to send it.";

/// An update-message callback (type 7) as JSON without `data.attachments`, so that the message
/// keeps the attachments it was posted with (the request's context).
fn update_keeping_attachments(resp: &CreateInteractionResponse) -> serde_json::Value {
    let mut body = serde_json::to_value(resp).unwrap_or_default();
    if let Some(data) = body
        .get_mut("data")
        .and_then(serde_json::Value::as_object_mut)
    {
        data.remove("attachments");
    }
    body
}

/// Whether an update (type 7) in reply to an interaction from message `clicked` edits `post`:
/// not when the interaction came from a copy of it that was never recorded (an interaction
/// that names no message is taken as from the recorded one).
fn post_clicked(post: &Post, clicked: Option<&str>) -> bool {
    clicked.is_none_or(|m| post.message.as_deref() == Some(m))
}

/// The follow-up when a form was due but the interaction had to be deferred first (a form can
/// only be the first response).
const FORM_TOO_LATE: &str =
    "askrelay was too slow to open the form (its database was busy); use the button again.";

impl Handler {
    /// Answers an interaction with what `work` (admission and the action, which may wait on
    /// the store) replies: as its callback when it is in time, else deferred and followed up
    /// (see the module comment).
    pub(super) async fn answer(
        &self,
        who: Responder<'_>,
        work: impl std::future::Future<Output = Reply>,
    ) {
        let deadline = std::time::Duration::from_millis(self.config.discord.callback_timeout_ms);
        let (id, token) = who.id_and_token();
        // The follow-ups name the application; the interaction says which it is.
        self.rest.http.set_application_id(who.application());
        let answered = self
            .rest
            .in_time_or_defer(
                deadline,
                id,
                token,
                &CreateInteractionResponse::Acknowledge,
                work,
            )
            .await;
        match answered {
            Timely::InTime(reply) => self.respond(who, reply).await,
            Timely::Deferred(reply, deferred) => self.follow_up(who, reply, deferred.is_ok()).await,
        }
    }

    /// The reply to an interaction already deferred (type 6): a message change goes as an
    /// outbox edit of askrelay's own message, anything private as an ephemeral follow-up.
    /// `deferred`: whether the deferral reached Discord (if not, the token is no use, and only
    /// the edits go).
    async fn follow_up(&self, who: Responder<'_>, reply: Reply, deferred: bool) {
        let deadline = std::time::Duration::from_millis(self.config.discord.callback_timeout_ms);
        let (_, token) = who.id_and_token();
        let (text, rows) = match reply {
            // Only a draft is acknowledged without a change; a slow one says that it was
            // saved, so that the person knows Submit will send it.
            Reply::Ack => (DRAFT_SAVED.to_owned(), Vec::new()),
            Reply::Update(won) => {
                let (outcome, post, req) = *won;
                self.outbox
                    .spawn_edit(&self.ctx, &req, &post, outcome, Some(EditState::Settled));
                return;
            }
            Reply::Refresh(shown) => {
                let (outcome, post, req) = *shown;
                self.outbox
                    .spawn_edit(&self.ctx, &req, &post, outcome, None);
                return;
            }
            Reply::Tell(text) => (text, Vec::new()),
            Reply::Modal(_) => (FORM_TOO_LATE.to_owned(), Vec::new()),
            Reply::Preview(text, rows) => (text, rows),
        };
        if !deferred {
            tracing::warn!("a private reply was lost: the interaction could not be deferred");
            return;
        }
        let message = serenity::builder::CreateInteractionResponseFollowup::new()
            .content(render::truncate_md(&text, render::CONTENT_MAX))
            .components(rows)
            .allowed_mentions(serenity::builder::CreateAllowedMentions::new());
        if let Err(f) = self.rest.follow_up(deadline, token, message).await {
            tracing::warn!(error = %f.message(), "cannot send the follow-up of a deferred interaction");
        }
    }

    async fn respond(&self, ci_or_mi: Responder<'_>, reply: Reply) {
        let update = matches!(reply, Reply::Update(..) | Reply::Refresh(..));
        let (resp, edited) = match reply {
            Reply::Ack => (CreateInteractionResponse::Acknowledge, None),
            Reply::Refresh(shown) => (
                CreateInteractionResponse::UpdateMessage(shown.0.update()),
                None,
            ),
            Reply::Update(won) => (
                CreateInteractionResponse::UpdateMessage(won.0.update()),
                Some(won),
            ),
            Reply::Tell(text) => (
                CreateInteractionResponse::Message(
                    CreateInteractionResponseMessage::new()
                        .content(render::truncate_md(&text, render::CONTENT_MAX))
                        .ephemeral(true)
                        .allowed_mentions(serenity::builder::CreateAllowedMentions::new()),
                ),
                None,
            ),
            Reply::Modal(m) => (CreateInteractionResponse::Modal(m), None),
            Reply::Preview(text, rows) => (
                CreateInteractionResponse::Message(
                    CreateInteractionResponseMessage::new()
                        .content(text)
                        .components(rows)
                        .ephemeral(true)
                        .allowed_mentions(serenity::builder::CreateAllowedMentions::new()),
                ),
                None,
            ),
        };
        // The message the interaction came from, which an update (type 7) edits.
        let clicked = match &ci_or_mi {
            Responder::Component(ci) => Some(ci.message.id.to_string()),
            Responder::Modal(mi) => mi.message.as_ref().map(|m| m.id.to_string()),
        };
        let http = &self.rest.http;
        // A callback must land within Discord's 3 s: one that hangs is given up on in time for
        // the fallback below.
        let deadline = std::time::Duration::from_millis(self.config.discord.callback_timeout_ms);
        let rest = &self.rest;
        let sent = match (ci_or_mi, update) {
            // serenity writes `"attachments": []` into every update, which would strip the
            // context files off the message; left out, Discord keeps them.
            (Responder::Component(ci), true) => {
                let body = update_keeping_attachments(&resp);
                rest.respond(
                    deadline,
                    ci.id,
                    &ci.token,
                    http.create_interaction_response(ci.id, &ci.token, &body, Vec::new()),
                )
                .await
            }
            (Responder::Modal(mi), true) => {
                let body = update_keeping_attachments(&resp);
                rest.respond(
                    deadline,
                    mi.id,
                    &mi.token,
                    http.create_interaction_response(mi.id, &mi.token, &body, Vec::new()),
                )
                .await
            }
            (Responder::Component(ci), false) => {
                rest.respond(deadline, ci.id, &ci.token, ci.create_response(http, resp))
                    .await
            }
            (Responder::Modal(mi), false) => {
                rest.respond(deadline, mi.id, &mi.token, mi.create_response(http, resp))
                    .await
            }
        };
        match (sent, edited) {
            (Ok(()), Some(won)) if post_clicked(&won.1, clicked.as_deref()) => {
                let (_, post, req) = *won;
                if let Err(e) = self
                    .ctx
                    .record_edit(req.key, &post, EditState::Settled)
                    .await
                {
                    record_edit_failed(&e);
                }
            }
            (Ok(()), Some(won)) => {
                // The click came from an unrecorded copy of the message (see `admit`): the
                // update edited the copy, and the recorded message still asks.
                let (outcome, post, req) = *won;
                self.outbox
                    .spawn_edit(&self.ctx, &req, &post, outcome, Some(EditState::Settled));
            }
            (Err(f), edited) => {
                tracing::warn!(error = %f.message(), update, "cannot answer the interaction");
                // The answer is stored; the message still shows the question: edit it instead.
                if let Some(won) = edited {
                    let (outcome, post, req) = *won;
                    self.outbox.spawn_edit(
                        &self.ctx,
                        &req,
                        &post,
                        outcome,
                        Some(EditState::Settled),
                    );
                }
            }
            _ => {}
        }
    }
}

#[derive(Clone, Copy)]
pub(super) enum Responder<'a> {
    Component(&'a ComponentInteraction),
    Modal(&'a ModalInteraction),
}

impl Responder<'_> {
    fn id_and_token(&self) -> (serenity::all::InteractionId, &str) {
        match self {
            Responder::Component(ci) => (ci.id, &ci.token),
            Responder::Modal(mi) => (mi.id, &mi.token),
        }
    }

    fn application(&self) -> serenity::all::ApplicationId {
        match self {
            Responder::Component(ci) => ci.application_id,
            Responder::Modal(mi) => mi.application_id,
        }
    }
}
