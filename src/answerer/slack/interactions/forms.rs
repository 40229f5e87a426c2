//! view_submission: the form of Other…, Answer…, "Submit with note…", Edit…, the confirm
//! word or "Allow matching…" sent back, or the grant preview's "Save grant". It is admitted
//! like a press on the message that opened it (its `private_metadata`), then the chat layer
//! decides what its text comes to. A blank form, a confirm word that does not match, or a
//! pattern the chat layer refuses stays open with Slack's error under the input; a pattern it
//! takes pushes its preview over the form (`response_action: push`: "Back" returns to the
//! form, "Save grant" saves and closes both with `clear`); anything else closes it, and what
//! the person is told comes as an ephemeral message in the question's channel (a form has no
//! `response_url`).

use super::admit::describe;
use super::press::{not_submitted, NO_PATTERN_WAITING};
use super::{Admitted, Handler, Origin, Refusal, Reply};
use crate::answerer::chat::confirm::WordFor;
use crate::answerer::chat::form::{self, FormStep, Sent};
use crate::answerer::chat::grant::{self, PatternRefused, Waiting};
use crate::answerer::chat::press::{self, Press, Refused, Shown, Step};
use crate::answerer::discord::custom_id::Form;
use crate::answerer::slack::render::{
    self, escape, FormPlace, View, LENGTH_ACTION, LENGTH_BLOCK, TEXT_ACTION, TEXT_BLOCK,
    WORD_ACTION, WORD_BLOCK,
};
use crate::domain::request::{AuditAction, AuditEntry, Request, Source};
use crate::domain::text::Escaped;
use crate::domain::Settlement;
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
        let state = |block: &str, action: &str| {
            ev.view
                .state_params
                .state
                .as_ref()
                .and_then(|s| s.values.get(&block.into()))
                .and_then(|b| b.get(&action.into()))
        };
        let input = |block: &str, action: &str| state(block, action).and_then(|v| v.value.clone());
        let text = input(TEXT_BLOCK, TEXT_ACTION);
        let word = input(WORD_BLOCK, WORD_ACTION);
        let length = state(LENGTH_BLOCK, LENGTH_ACTION)
            .and_then(|v| v.selected_option.as_ref())
            .map(|o| o.value.clone())
            .unwrap_or_default();
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
                    Form::GrantPattern => Sent::GrantPattern,
                    // The preview's "Save grant": both forms close, whatever it came to.
                    Form::SaveGrant(g) => {
                        let reply = self.save_grant(&origin, a, g).await;
                        self.closed(&origin, reply);
                        return clear();
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
                    // The word beside an edit or a pattern, when the allow label needs it.
                    word.filter(|_| matches!(sent, Sent::Edit | Sent::GrantPattern)),
                )
                .await;
                match step {
                    FormStep::Settle { settlement, typed } => {
                        crate::crash::point("clicked");
                        self.settle(a, settlement, typed).await
                    }
                    // Slack keeps the form open and shows why under the input.
                    FormStep::Empty if sent == Sent::GrantPattern => {
                        return error(TEXT_BLOCK, "Write the pattern first.")
                    }
                    FormStep::Empty => return error(TEXT_BLOCK, "Write your answer first."),
                    FormStep::NotSubmitted(e) => not_submitted(e),
                    FormStep::Preview { pattern, typed } => {
                        return match place {
                            Some(place) => {
                                self.preview_grant(&origin, a, &place, &length, pattern, typed)
                                    .await
                            }
                            None => SlackInteractionResponse::Empty,
                        };
                    }
                    FormStep::NoSuchGrant => Reply::Tell(
                        "This route no longer gives that grant; nothing was recorded.".into(),
                    ),
                    // The form stays open, saying what to type; the attempt is audited.
                    FormStep::WordMismatch(word) => {
                        self.word_mismatch(&origin, &a.req, a.id.question).await;
                        // The pattern's form has the word in an input of its own.
                        let block = match sent {
                            Sent::GrantPattern => WORD_BLOCK,
                            _ => TEXT_BLOCK,
                        };
                        return mismatch(block, &word);
                    }
                }
            }
        };
        self.closed(&origin, reply)
    }

    /// "Allow matching…" sent with a pattern (and the word, checked, when needed): the chat
    /// layer's preview of it pushed over the form, kept until "Save grant"; a pattern or length
    /// it refuses keeps the form open saying why under its input, audited as on Discord.
    async fn preview_grant(
        &self,
        origin: &Origin,
        a: Admitted<Form>,
        place: &FormPlace,
        length: &str,
        pattern: String,
        typed: Option<String>,
    ) -> SlackInteractionResponse {
        let idx = a.id.question;
        let view = View::of(&a.req, &a.route.policy, idx);
        let p = match grant::preview(&a.req, view.grant_secs, length, &pattern) {
            Ok(p) => p,
            Err(refused) => {
                let (block, why) = match refused {
                    PatternRefused::NotApproval => (
                        TEXT_BLOCK,
                        "This request is not an approval; it takes no grant.".to_owned(),
                    ),
                    PatternRefused::Length => {
                        let lengths: Vec<String> =
                            view.grant_secs.iter().map(|&s| grant::length(s)).collect();
                        (
                            LENGTH_BLOCK,
                            format!(
                                "This route's grants last {}: pick one of them.",
                                lengths.join(" or ")
                            ),
                        )
                    }
                    PatternRefused::Line(message) => {
                        (TEXT_BLOCK, format!("The {}.", escape(&message)))
                    }
                    PatternRefused::NotAGrant(why) => (
                        TEXT_BLOCK,
                        format!(
                            "Not a grant: {}. A pattern is matched on shell words: a * word \
                             stands for whole words.",
                            escape(&why)
                        ),
                    ),
                };
                let r = Refusal::new(AuditAction::Forbidden, why.clone()).about(&a.req, idx);
                let _ = self.refuse(origin, r).await;
                return error(block, &why);
            }
        };
        let requester = p.requester.describe(|s| escape(&render::one_line(s)));
        let audit = AuditEntry {
            request_key: Some(a.req.key),
            request_id: Some(a.req.request_id.clone()),
            question_idx: Some(idx),
            source: Source::Slack,
            actor: Some(describe(&origin.user, &origin.name)),
            action: AuditAction::Draft,
            detail: Some(format!(
                "grant pattern {:?} for {} s, not saved yet",
                p.pattern, p.secs
            )),
            accepted: true,
        };
        if let Err(e) = self.ctx.record(audit).await {
            tracing::warn!(error = %format!("{e:#}"), "cannot audit a Slack grant preview");
        }
        let preview = render::grant_preview_modal(&view, place, &p, &requester);
        self.kept.patterns.lock().unwrap().insert(
            &a.req.token,
            &origin.user,
            Waiting {
                pattern: p.pattern,
                g: p.g,
                typed,
            },
        );
        SlackInteractionResponse::ViewSubmission(SlackViewSubmissionResponse::Push(
            SlackViewSubmissionPushResponse::new(preview),
        ))
    }

    /// The preview's "Save grant": the pattern this person previewed (and the word typed beside
    /// it) settles like a press on the question, whose message is then edited; they are told
    /// what was saved.
    async fn save_grant(&self, origin: &Origin, a: Admitted<Form>, g: usize) -> Reply {
        let idx = a.id.question;
        let step = press::decide(
            &self.ctx,
            &self.kept,
            &a.req,
            idx,
            &a.route.policy,
            &origin.user,
            Press::SaveGrant(g),
            Shown::default(),
        )
        .await;
        let (settlement, typed): (Settlement, Option<String>) = match step {
            Step::SaveGrant { settlement, typed } => (settlement, typed),
            Step::Refuse(r) => {
                let text = match r {
                    Refused::NoPatternWaiting => NO_PATTERN_WAITING,
                    _ => "This route no longer gives that grant; nothing was recorded.",
                };
                let r = Refusal::new(r.action(), text).about(&a.req, idx);
                return self.refuse(origin, r).await;
            }
            _ => return Reply::Quiet,
        };
        crate::crash::point("clicked");
        match self.settle(a, settlement, typed).await {
            Reply::Quiet => {
                Reply::Tell("Saved: the grant is live, and this request is allowed.".into())
            }
            other => other,
        }
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

/// The form stays open, saying which word to type under the input `block`.
fn mismatch(block: &str, word: &str) -> SlackInteractionResponse {
    error(
        block,
        &format!(
            "That is not the word: type {} exactly (case matters). Nothing was recorded.",
            escape(word)
        ),
    )
}

/// The form stays open, with `why` under the input `block`.
fn error(block: &str, why: &str) -> SlackInteractionResponse {
    SlackInteractionResponse::ViewSubmission(SlackViewSubmissionResponse::Errors(
        SlackViewSubmissionErrorsResponse::new(HashMap::from([(block.to_owned(), why.to_owned())])),
    ))
}

/// Every form of the stack closes (the pattern's form under its preview too).
fn clear() -> SlackInteractionResponse {
    SlackInteractionResponse::ViewSubmission(SlackViewSubmissionResponse::Clear(
        SlackViewSubmissionClearResponse::new(),
    ))
}
