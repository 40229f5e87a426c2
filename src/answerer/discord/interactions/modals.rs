//! The forms (modals): opened from a click, audited as opened, and submitted: a typed answer,
//! a note with the draft, an edited command, a grant's pattern, or the typed word that
//! confirms a label of the route's `confirm_labels`.

use super::admit::copy_of;
use super::respond::Responder;
use super::{describe, not_saved, Admitted, Handler, Origin, Refusal, Reply, NO_SUCH_GRANT};
use crate::answerer::chat::confirm::WordFor;
use crate::answerer::chat::form::{self, FormStep, Sent};
use crate::answerer::discord::custom_id::{Action, Form, TEXT_INPUT_ID};
use crate::answerer::discord::render::{self, RenderContext};
use crate::domain::request::{AuditAction, AuditEntry, Request, Source};
use crate::domain::text::Escaped;
use serenity::all::{ActionRowComponent, ComponentInteraction, ModalInteraction};

impl Handler {
    /// Opens `modal` for the clicker, audited as opened (`open_modal`).
    pub(super) async fn open_modal(
        &self,
        ci: &ComponentInteraction,
        req: &Request,
        idx: usize,
        modal: serenity::builder::CreateModal,
    ) -> Reply {
        let opened = self
            .ctx
            .record(AuditEntry {
                request_key: Some(req.key),
                request_id: Some(req.request_id.clone()),
                question_idx: Some(idx),
                source: Source::Discord,
                actor: Some(describe(&ci.user)),
                action: AuditAction::OpenModal,
                detail: Some(format!("{:?}", Escaped(&ci.data.custom_id))),
                accepted: true,
            })
            .await;
        match opened {
            Ok(()) => Reply::Modal(modal),
            Err(e) => Reply::Tell(not_saved(&format!("{e:#}"))),
        }
    }

    /// A click on a label that needs the typed word (the route's `confirm_labels`) settles
    /// nothing: it opens the modal that asks for the word, audited as opened.
    pub(super) async fn open_confirm(
        &self,
        ci: &ComponentInteraction,
        a: &Admitted<Action>,
        form: Form,
    ) -> Reply {
        let (key, idx) = (a.req.key, a.id.question);
        let opened = self
            .ctx
            .record(AuditEntry {
                request_key: Some(key),
                request_id: Some(a.req.request_id.clone()),
                question_idx: Some(idx),
                source: Source::Discord,
                actor: Some(describe(&ci.user)),
                action: AuditAction::OpenModal,
                detail: Some(format!(
                    "{:?}: asks for the word that confirms it",
                    Escaped(&ci.data.custom_id)
                )),
                accepted: true,
            })
            .await;
        let ctx = RenderContext::of(&a.req, &a.route, idx);
        match opened {
            Ok(()) => Reply::Modal(render::confirm_modal(&a.req.questions[idx], &ctx, form)),
            Err(e) => Reply::Tell(not_saved(&format!("{e:#}"))),
        }
    }

    pub(super) async fn on_modal(&self, mi: ModalInteraction) {
        let origin = Origin {
            custom_id: &mi.data.custom_id,
            user: &mi.user,
            member: mi.member.as_ref(),
            guild: mi.guild_id,
            channel: mi.channel_id,
            // A modal names the message whose button opened it; it must be the question's.
            message: mi.message.as_ref().map(|m| m.id),
            ours: mi
                .message
                .as_ref()
                .map(|m| copy_of(&self.gateway, m))
                .unwrap_or_default(),
        };
        let work = async {
            match self.admit(&origin).await {
                Ok(a) => self.modal_action(&origin, &mi, a).await,
                Err(r) => self.refuse(&origin, r).await,
            }
        };
        self.answer(Responder::Modal(&mi), work).await;
    }

    async fn modal_action(
        &self,
        origin: &Origin<'_>,
        mi: &ModalInteraction,
        a: Admitted<Form>,
    ) -> Reply {
        let idx = a.id.question;
        let text = input_value(mi, TEXT_INPUT_ID);
        let sent = match a.id.action {
            Form::Other => Sent::Other,
            Form::Answer => Sent::Answer,
            Form::Note => Sent::Note,
            Form::Edit => Sent::Edit,
            Form::Confirm(i) => Sent::Word(WordFor::Choice(i)),
            Form::ConfirmDraft => Sent::Word(WordFor::Draft),
            Form::ConfirmGrant(g) => Sent::Word(WordFor::Grant(g)),
            Form::GrantPattern => Sent::GrantPattern,
            // Slack's preview form: Discord opens none, so one that names it was not ours.
            Form::SaveGrant(_) => {
                let r = Refusal::new(
                    AuditAction::Forged,
                    "This form is not one askrelay opened; nothing was recorded.",
                );
                return self.refuse(origin, r.about(&a.req, idx)).await;
            }
        };
        let word = (sent == Sent::Edit)
            .then(|| input_value(mi, render::CONFIRM_INPUT_ID))
            .flatten();
        let user = mi.user.id.to_string();
        let step = form::decide(
            &self.ctx,
            &self.kept,
            &a.req,
            idx,
            &a.route.policy,
            &user,
            sent,
            text,
            word,
        )
        .await;
        match step {
            FormStep::Settle { settlement, typed } => {
                crate::crash::point("clicked");
                self.settle(a, settlement, typed).await
            }
            // Discord offers no pattern where the word is needed: nothing is typed beside it.
            FormStep::Preview { pattern, .. } => self.preview_grant(origin, mi, a, pattern).await,
            FormStep::Empty => {
                self.refuse(
                    origin,
                    Refusal::new(
                        AuditAction::EmptyModal,
                        "The answer was empty; nothing was recorded.",
                    )
                    .about(&a.req, idx),
                )
                .await
            }
            FormStep::WordMismatch(word) => {
                self.ctx
                    .refuse(AuditEntry {
                        request_key: Some(a.req.key),
                        request_id: Some(a.req.request_id.clone()),
                        question_idx: Some(idx),
                        source: Source::Discord,
                        actor: Some(describe(origin.user)),
                        action: AuditAction::Forbidden,
                        detail: Some(format!(
                            "not confirmed (the word typed did not match): custom_id {:?}",
                            Escaped(origin.custom_id)
                        )),
                        accepted: false,
                    })
                    .await;
                Reply::Tell(format!(
                    "What you typed did not match `{word}`; nothing was recorded."
                ))
            }
            FormStep::NoSuchGrant => {
                self.refuse(
                    origin,
                    Refusal::new(AuditAction::Forged, NO_SUCH_GRANT).about(&a.req, idx),
                )
                .await
            }
            FormStep::NotSubmitted(e) => super::components::not_submitted(e),
        }
    }
}

/// The value of the modal's text input `id`, when it is not blank.
pub(super) fn input_value(mi: &ModalInteraction, id: &str) -> Option<String> {
    mi.data
        .components
        .iter()
        .flat_map(|row| row.components.iter())
        .find_map(|c| match c {
            ActionRowComponent::InputText(t) if t.custom_id == id => t.value.clone(),
            _ => None,
        })
        .filter(|t| !t.trim().is_empty())
}
