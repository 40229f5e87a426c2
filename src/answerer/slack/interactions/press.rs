//! block_actions: a button or a select on a question's message, in the chat layer's terms. A
//! choice settles; a multi-select saves the person's draft until Submit; Other…, Answer… and
//! "Submit with note…" open the form (`views.open`, at once, with the press's `trigger_id`).
//! A label of the route's `confirm_labels` opens the form for the confirm word instead of
//! settling; Edit… opens the command to approve; "Allow matching…" opens the form for a grant
//! with a pattern (its preview and "Save grant" are `forms.rs`'s).

use super::admit::describe;
use super::{not_saved, Admitted, Handler, Origin, Refusal, Reply};
use crate::answerer::chat::batch::BatchId;
use crate::answerer::chat::confirm::{self, WordFor};
use crate::answerer::chat::drafts::{self, NotSaved, NotSubmitted};
use crate::answerer::chat::press::{self, Form as ChatForm, Press, Refused, Step};
use crate::answerer::discord::custom_id::{parse_option_value, Action, Form};
use crate::answerer::slack::render::{self, FormPlace, View};
use crate::domain::request::{AuditAction, AuditEntry, Source};
use crate::domain::text::Escaped;
use slack_morphism::prelude::*;

/// "Save grant" with no preview of the person's waiting (a restart forgets them).
pub(super) const NO_PATTERN_WAITING: &str = "No pattern of yours is waiting to be saved here \
                                             (askrelay may have restarted); use Allow \
                                             matching… again. Nothing was recorded.";

/// What Submit says after the person's last selection failed to save.
const DRAFT_NOT_SAVED: &str = "Your last selection was not saved, so nothing was submitted: \
                               choose your options again, then Submit.";

impl Handler {
    pub(super) async fn on_actions(
        &self,
        ev: SlackInteractionBlockActionsEvent,
    ) -> SlackInteractionResponse {
        let (Some(user), Some(action)) = (&ev.user, ev.actions.as_ref().and_then(|a| a.first()))
        else {
            return SlackInteractionResponse::Empty;
        };
        let (channel, ts) = match &ev.container {
            SlackInteractionActionContainer::Message(m) => (
                m.channel_id
                    .as_ref()
                    .or(ev.channel.as_ref().map(|c| &c.id))
                    .map(|c| c.to_string()),
                Some(m.message_ts.to_string()),
            ),
            _ => (None, None),
        };
        let origin = Origin {
            user: user.id.to_string(),
            name: user
                .username
                .clone()
                .or_else(|| user.name.clone())
                .unwrap_or_else(|| user.id.to_string()),
            channel,
            ts,
            control: action.action_id.to_string(),
        };
        // The batch's controls (under `/askrelay pending`) name no request.
        if let Ok(id) = origin.control.parse::<BatchId>() {
            let reply = self.on_batch(&origin, id, action, ev.state.as_ref()).await;
            self.tell_via(ev.response_url.clone(), reply);
            return SlackInteractionResponse::Empty;
        }
        let reply = match self.admit::<Action>(&origin).await {
            Ok(a) => self.press(&origin, a, action, &ev.trigger_id).await,
            Err(r) => self.refuse(&origin, r).await,
        };
        self.tell_via(ev.response_url.clone(), reply);
        SlackInteractionResponse::Empty
    }

    async fn press(
        &self,
        origin: &Origin,
        a: Admitted<Action>,
        action: &SlackInteractionActionInfo,
        trigger: &SlackTriggerId,
    ) -> Reply {
        let idx = a.id.question;
        let options = a.req.questions[idx].options.len();
        let one = |v: &str| parse_option_value(v, options);
        let picked: Option<Vec<usize>> = match (&action.selected_option, &action.selected_options) {
            (Some(o), _) => one(&o.value).map(|i| vec![i]),
            (None, Some(os)) => os.iter().map(|o| one(&o.value)).collect(),
            (None, None) => None,
        };
        let pressed = match a.id.action {
            Action::Choose(i) => Press::Choose(i),
            Action::SelectOne => Press::SelectOne(picked),
            // An emptied multi-select sends no options: an empty draft.
            Action::Draft => Press::Draft(picked.or(Some(Vec::new()))),
            Action::Submit => Press::Submit,
            Action::SubmitWithNote => Press::SubmitWithNote,
            Action::Other => Press::Other,
            Action::Answer => Press::Answer,
            Action::Grant(g) => Press::Grant(g),
            Action::Edit => Press::Edit,
            Action::GrantPattern => Press::GrantPattern,
            // Slack saves a pattern from its preview form (forms.rs), never from a button.
            Action::SaveGrant(_) => {
                let r = Refusal::new(
                    AuditAction::Forged,
                    "This control is not one askrelay shows on Slack; nothing was recorded.",
                );
                return self.refuse(origin, r.about(&a.req, idx)).await;
            }
        };
        let shown = View::of(&a.req, &a.route.policy, idx);
        let step = press::decide(
            &self.ctx,
            &self.kept,
            &a.req,
            idx,
            &a.route.policy,
            &origin.user,
            pressed,
            // What the message offers: Edit… (with the command it edits), Allow matching….
            press::Shown {
                editable: shown
                    .editable
                    .then_some(shown.command)
                    .flatten()
                    .map(str::to_owned),
                grantable: shown.grant_pattern,
            },
        )
        .await;
        match step {
            Step::Settle(settlement) => {
                crate::crash::point("clicked");
                self.settle(a, settlement, None).await
            }
            Step::Open(form @ (ChatForm::Other | ChatForm::Answer | ChatForm::Note)) => {
                let form = match form {
                    ChatForm::Answer => Form::Answer,
                    ChatForm::Note => Form::Note,
                    _ => Form::Other,
                };
                let q = &a.req.questions[idx];
                let view = View::of(&a.req, &a.route.policy, idx);
                let open = |place: &FormPlace| render::text_modal(q, &view, form, place);
                self.open_form(origin, &a, open, trigger).await
            }
            Step::Open(ChatForm::Edit(command)) => {
                let q = &a.req.questions[idx];
                let view = View::of(&a.req, &a.route.policy, idx);
                // Approving needs the word too when the allow label is one of confirm_labels.
                let word = q
                    .options
                    .first()
                    .filter(|o| a.route.policy.confirm.covers(&o.label))
                    .map(|_| confirm::word(&a.route.policy, &a.req));
                let open = |place: &FormPlace| render::edit_modal(q, &view, place, &command, word);
                self.open_form(origin, &a, open, trigger).await
            }
            Step::Open(ChatForm::GrantPattern) => {
                let q = &a.req.questions[idx];
                let view = View::of(&a.req, &a.route.policy, idx);
                // Filled in with the command asked, as on Discord; the word beside it when the
                // allow label needs it.
                let command = view.command.unwrap_or_default();
                let word = confirm::allow_needs_word(&a.route.policy, q)
                    .then(|| confirm::word(&a.route.policy, &a.req));
                let open =
                    |place: &FormPlace| render::grant_pattern_modal(q, &view, place, command, word);
                self.open_form(origin, &a, open, trigger).await
            }
            // Only a SaveGrant press comes to this, and Slack refuses those above.
            Step::SaveGrant { .. } => Reply::Quiet,
            Step::AskWord(w) => {
                let q = &a.req.questions[idx];
                let (form, what) = match w {
                    WordFor::Choice(i) => (
                        Form::Confirm(i),
                        q.options.get(i).map_or("", |o| o.label.as_str()),
                    ),
                    WordFor::Draft => (Form::ConfirmDraft, "Your selection"),
                    WordFor::Grant(g) => (Form::ConfirmGrant(g), ""),
                };
                let granted;
                let what = match w {
                    WordFor::Grant(g) => {
                        let secs = a
                            .route
                            .policy
                            .grant_secs
                            .get(g)
                            .copied()
                            .unwrap_or_default();
                        granted = crate::answerer::chat::grant::label(secs);
                        granted.as_str()
                    }
                    _ => what,
                };
                let word = confirm::word(&a.route.policy, &a.req);
                let view = View::of(&a.req, &a.route.policy, idx);
                let open =
                    |place: &FormPlace| render::word_modal(q, &view, form, place, what, word);
                self.open_form(origin, &a, open, trigger).await
            }
            Step::SaveDraft(p) => self.save_draft(origin, &a, p).await,
            Step::Refuse(r) => {
                let action = r.action();
                let text = match r {
                    Refused::BadSelection => {
                        "That selection does not match the options.".to_owned()
                    }
                    Refused::NotEditable => "This command cannot be edited here.".to_owned(),
                    Refused::NoSuchGrant => {
                        "This route no longer gives that grant; nothing was recorded.".to_owned()
                    }
                    Refused::NoPatternWaiting => NO_PATTERN_WAITING.to_owned(),
                    Refused::NoteNeedsWord { labels, word } => format!(
                        "{} needs typing `{}` to confirm, and a note cannot go with it: use \
                         *Submit*. Nothing was recorded.",
                        render::escape(&labels.join(", ")),
                        render::escape(&word)
                    ),
                };
                self.refuse(origin, Refusal::new(action, text).about(&a.req, idx))
                    .await
            }
            Step::NotSubmitted(e) => not_submitted(e),
        }
    }

    /// Opens the form `modal` makes for the message it is opened from, with the press's
    /// `trigger_id` (valid for 3 s, so at once), audited as opened.
    async fn open_form(
        &self,
        origin: &Origin,
        a: &Admitted<Action>,
        modal: impl FnOnce(&FormPlace) -> SlackView,
        trigger: &SlackTriggerId,
    ) -> Reply {
        let idx = a.id.question;
        let Some(ts) = a.post.message.clone().or_else(|| origin.ts.clone()) else {
            return Reply::Tell("This message is not posted yet; try again in a moment.".into());
        };
        let place = FormPlace {
            channel: a.post.channel.clone(),
            ts,
        };
        if let Err(f) = self.web.open_view(trigger, modal(&place)).await {
            tracing::warn!(error = f.message(), "Slack did not open a form");
            return Reply::Tell(format!(
                "Slack did not open the form ({}); press the button again.",
                f.message()
            ));
        }
        let opened = self
            .ctx
            .record(AuditEntry {
                request_key: Some(a.req.key),
                request_id: Some(a.req.request_id.clone()),
                question_idx: Some(idx),
                source: Source::Slack,
                actor: Some(describe(&origin.user, &origin.name)),
                action: AuditAction::OpenModal,
                detail: Some(format!("{:?}", Escaped(&origin.control))),
                accepted: true,
            })
            .await;
        if let Err(e) = opened {
            tracing::warn!(error = %format!("{e:#}"), "cannot audit a Slack form opened");
        }
        Reply::Quiet
    }

    /// Keeps the person's selection `p` of a multi-select as their draft, audited.
    async fn save_draft(&self, origin: &Origin, a: &Admitted<Action>, p: Vec<usize>) -> Reply {
        let audit = AuditEntry {
            source: Source::Slack,
            actor: Some(describe(&origin.user, &origin.name)),
            ..Default::default()
        };
        let saved = drafts::save(
            &self.ctx,
            &self.kept.unsaved,
            &a.req,
            a.id.question,
            &origin.user,
            p,
            audit,
        )
        .await;
        match saved {
            Ok(()) => Reply::Quiet,
            Err(NotSaved::Audit(cause)) => Reply::Tell(not_saved(&cause)),
            Err(NotSaved::Draft(e)) => {
                tracing::error!(error = %format!("{e:#}"), "cannot save a Slack draft");
                Reply::Tell("askrelay could not save your selection, try again.".into())
            }
        }
    }
}

/// What Submit says when the person's selection was made before askrelay's term began (a
/// restart, or another host took over): a later one may have failed to save.
const DRAFT_FROM_BEFORE: &str = "askrelay restarted or moved to another host since your last \
                                 selection, which may not have been saved, so nothing was \
                                 submitted: choose your options again, then Submit.";

/// What the person is told when their draft cannot be submitted.
pub(super) fn not_submitted(e: NotSubmitted) -> Reply {
    match e {
        NotSubmitted::LastNotSaved => Reply::Tell(DRAFT_NOT_SAVED.into()),
        NotSubmitted::EarlierTerm => Reply::Tell(DRAFT_FROM_BEFORE.into()),
        NotSubmitted::Unreadable(cause) => Reply::Tell(not_saved(&cause)),
    }
}
