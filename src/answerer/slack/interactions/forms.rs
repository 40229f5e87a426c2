//! view_submission: the form of Other…, Answer…, "Submit with note…", Edit… or the confirm
//! word sent back. It is
//! admitted like a press on the message that opened it (its `private_metadata`), then the chat
//! layer decides what its text comes to. A blank form, or a confirm word that does not match,
//! stays open with Slack's error under the input; anything else closes it, and what the person is told comes as an ephemeral message
//! in the question's channel (a form has no `response_url`).

use super::admit::describe;
use super::press::not_submitted;
use super::{not_yet, Handler, Origin, Refusal, Reply};
use crate::answerer::chat::confirm::WordFor;
use crate::answerer::chat::form::{self, FormStep, Sent};
use crate::answerer::discord::custom_id::Form;
use crate::answerer::slack::render::{
    escape, FormPlace, TEXT_ACTION, TEXT_BLOCK, WORD_ACTION, WORD_BLOCK,
};
use crate::domain::request::{AuditAction, AuditEntry, Request, Source};
use crate::domain::text::Escaped;
use slack_morphism::prelude::*;
use std::collections::HashMap;

impl Handler {
    pub(super) async fn on_submission(
        &self,
        ev: SlackInteractionViewSubmissionEvent,
    ) -> SlackInteractionResponse {
        let SlackView::Modal(modal) = &ev.view.view else {
            return SlackInteractionResponse::Empty;
        };
        let place = modal.private_metadata.as_deref().and_then(FormPlace::parse);
        let origin = Origin {
            user: ev.user.id.to_string(),
            name: ev
                .user
                .username
                .clone()
                .or_else(|| ev.user.name.clone())
                .unwrap_or_else(|| ev.user.id.to_string()),
            channel: place.as_ref().map(|p| p.channel.clone()),
            ts: place.as_ref().map(|p| p.ts.clone()),
            control: modal
                .callback_id
                .as_ref()
                .map(|c| c.to_string())
                .unwrap_or_default(),
        };
        let input = |block: &str, action: &str| {
            ev.view
                .state_params
                .state
                .as_ref()
                .and_then(|s| s.values.get(&block.into()))
                .and_then(|b| b.get(&action.into()))
                .and_then(|v| v.value.clone())
        };
        let text = input(TEXT_BLOCK, TEXT_ACTION);
        let word = input(WORD_BLOCK, WORD_ACTION);
        let reply = match self.admit::<Form>(&origin).await {
            Err(r) => self.refuse(&origin, r).await,
            Ok(a) => {
                let sent = match a.id.action {
                    Form::Other => Sent::Other,
                    Form::Answer => Sent::Answer,
                    Form::Note => Sent::Note,
                    Form::Edit => Sent::Edit,
                    Form::Confirm(i) => Sent::Word(WordFor::Choice(i)),
                    Form::ConfirmDraft => Sent::Word(WordFor::Draft),
                    Form::ConfirmGrant(g) => Sent::Word(WordFor::Grant(g)),
                    // Slack opens no other form: one that names another was not ours.
                    _ => {
                        let r = Refusal::new(
                            AuditAction::Forged,
                            "This form is not one askrelay opened; nothing was recorded.",
                        );
                        let r = r.about(&a.req, a.id.question);
                        let reply = self.refuse(&origin, r).await;
                        return self.closed(&origin, reply);
                    }
                };
                let step = form::decide(
                    &self.ctx,
                    &self.kept,
                    &a.req,
                    a.id.question,
                    &a.route.policy,
                    &origin.user,
                    sent,
                    text,
                    // The edit form's word, when the allow label needs it.
                    word.filter(|_| sent == Sent::Edit),
                )
                .await;
                match step {
                    FormStep::Settle { settlement, typed } => {
                        self.settle(a, settlement, typed).await
                    }
                    // Slack keeps the form open and shows why under the input.
                    FormStep::Empty => return blank(),
                    FormStep::NotSubmitted(e) => not_submitted(e),
                    FormStep::Preview(_) => Reply::Tell(not_yet("A grant with a pattern")),
                    FormStep::NoSuchGrant => Reply::Tell(
                        "This route no longer gives that grant; nothing was recorded.".into(),
                    ),
                    // The form stays open, saying what to type; the attempt is audited.
                    FormStep::WordMismatch(word) => {
                        self.word_mismatch(&origin, &a.req, a.id.question).await;
                        return mismatch(&word);
                    }
                }
            }
        };
        self.closed(&origin, reply)
    }

    /// A confirm word that did not match, audited as Discord's is (nothing is recorded).
    async fn word_mismatch(&self, origin: &Origin, req: &Request, idx: usize) {
        self.ctx
            .refuse(AuditEntry {
                request_key: Some(req.key),
                request_id: Some(req.request_id.clone()),
                question_idx: Some(idx),
                source: Source::Slack,
                actor: Some(describe(&origin.user, &origin.name)),
                action: AuditAction::Forbidden,
                detail: Some(format!(
                    "not confirmed (the word typed did not match): callback_id {:?}",
                    Escaped(&origin.control)
                )),
                accepted: false,
            })
            .await;
    }

    /// The form closes; the person is told in the question's channel.
    fn closed(&self, origin: &Origin, reply: Reply) -> SlackInteractionResponse {
        match &origin.channel {
            Some(channel) => self.tell_in(channel, &origin.user, reply),
            None => {
                if let Reply::Tell(t) = reply {
                    tracing::warn!(reply = %t, "a Slack form without its message: the person cannot be told");
                }
            }
        }
        SlackInteractionResponse::Empty
    }
}

/// The form stays open, saying which word to type.
fn mismatch(word: &str) -> SlackInteractionResponse {
    SlackInteractionResponse::ViewSubmission(SlackViewSubmissionResponse::Errors(
        SlackViewSubmissionErrorsResponse::new(HashMap::from([(
            TEXT_BLOCK.to_owned(),
            format!(
                "That is not the word: type {} exactly (case matters). Nothing was recorded.",
                escape(word)
            ),
        )])),
    ))
}

/// The form stays open, saying that the text is missing.
fn blank() -> SlackInteractionResponse {
    SlackInteractionResponse::ViewSubmission(SlackViewSubmissionResponse::Errors(
        SlackViewSubmissionErrorsResponse::new(HashMap::from([(
            TEXT_BLOCK.to_owned(),
            "Write your answer first.".to_owned(),
        )])),
    ))
}
