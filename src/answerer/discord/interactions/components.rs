//! Clicks and selects on a question's message: a choice settles (or opens the form that asks
//! for the typed word), a multi-select saves the person's draft until "Submit", and the
//! buttons that need text open their form.

use super::admit::copy_of;
use super::respond::Responder;
use super::{describe, not_saved, Admitted, Handler, Origin, Refusal, Reply, NO_SUCH_GRANT};
use crate::answerer::chat::confirm::WordFor;
use crate::answerer::chat::drafts::{self, NotSaved, NotSubmitted};
use crate::answerer::chat::press::{self, Press, Refused, Step};
use crate::answerer::discord::batch::BatchId;
use crate::answerer::discord::custom_id::{self, Action, Form};
use crate::answerer::discord::render::{self, RenderContext};
use crate::domain::request::{AuditEntry, Source};
use serenity::all::{ComponentInteraction, ComponentInteractionDataKind};

/// What "Submit" says after the person's last selection failed to save.
const DRAFT_NOT_SAVED: &str = "Your last selection was not saved, so nothing was submitted: \
                               choose your options again, then Submit.";

/// What "Submit" says when the person's selection was made before askrelay's term began (a
/// restart, or another host took over): a later one may have failed to save.
const DRAFT_FROM_BEFORE: &str = "askrelay restarted or moved to another host since your last \
                                 selection, which may not have been saved, so nothing was \
                                 submitted: choose your options again, then Submit.";

impl Handler {
    pub(super) async fn on_component(&self, ci: ComponentInteraction) {
        // A batch control is not tied to one request: its requests are checked one by one.
        if let Ok(batch) = ci.data.custom_id.parse::<BatchId>() {
            return self.on_batch(&ci, batch).await;
        }
        let origin = Origin {
            custom_id: &ci.data.custom_id,
            user: &ci.user,
            member: ci.member.as_ref(),
            guild: ci.guild_id,
            channel: ci.channel_id,
            message: Some(ci.message.id),
            ours: copy_of(&self.gateway, &ci.message),
        };
        let work = async {
            match self.admit(&origin).await {
                Ok(a) => self.component_action(&origin, &ci, a).await,
                Err(r) => self.refuse(&origin, r).await,
            }
        };
        self.answer(Responder::Component(&ci), work).await;
    }

    async fn component_action(
        &self,
        origin: &Origin<'_>,
        ci: &ComponentInteraction,
        a: Admitted<Action>,
    ) -> Reply {
        let idx = a.id.question;
        let q = &a.req.questions[idx];
        let values: &[String] = match &ci.data.kind {
            ComponentInteractionDataKind::StringSelect { values } => values,
            _ => &[],
        };
        // Select menus send option indices; anything else is forged.
        let picked: Option<Vec<usize>> = values
            .iter()
            .map(|v| custom_id::parse_option_value(v, q.options.len()))
            .collect();
        let user = ci.user.id.to_string();
        let pressed = match a.id.action {
            Action::Choose(i) => Press::Choose(i),
            Action::SelectOne => Press::SelectOne(picked),
            Action::Draft => Press::Draft(picked),
            Action::Grant(g) => Press::Grant(g),
            Action::Edit => Press::Edit,
            Action::GrantPattern => Press::GrantPattern,
            Action::SaveGrant(g) => Press::SaveGrant(g),
            Action::Submit => Press::Submit,
            Action::Other => Press::Other,
            Action::Answer => Press::Answer,
            Action::SubmitWithNote => Press::SubmitWithNote,
        };
        let shown = {
            let ctx = RenderContext::of(&a.req, &a.route, idx);
            press::Shown {
                editable: ctx.editable.map(str::to_owned),
                grantable: render::offers_pattern(q, &ctx),
            }
        };
        let step = press::decide(
            &self.ctx,
            &self.kept,
            &a.req,
            idx,
            &a.route.policy,
            &user,
            pressed,
            shown,
        )
        .await;
        match step {
            Step::Settle(settlement) => {
                crate::crash::point("clicked");
                self.settle(a, settlement, None).await
            }
            Step::SaveGrant { settlement, .. } => self.save_grant(a, settlement).await,
            Step::AskWord(w) => {
                let form = match w {
                    WordFor::Draft => Form::ConfirmDraft,
                    WordFor::Grant(g) => Form::ConfirmGrant(g),
                    WordFor::Choice(i) => Form::Confirm(i),
                };
                self.open_confirm(ci, &a, form).await
            }
            Step::Open(form) => {
                let ctx = RenderContext::of(&a.req, &a.route, idx);
                let modal = match form {
                    press::Form::Other => render::modal(q, &ctx, Form::Other),
                    press::Form::Answer => render::modal(q, &ctx, Form::Answer),
                    press::Form::Note => render::modal(q, &ctx, Form::Note),
                    press::Form::Edit(command) => render::edit_modal(q, &ctx, &command),
                    press::Form::GrantPattern => {
                        let asked = ctx.approval.map_or("", |ap| ap.command.as_str());
                        render::grant_pattern_modal(q, &ctx, asked)
                    }
                };
                self.open_modal(ci, &a.req, idx, modal).await
            }
            Step::SaveDraft(p) => self.save_draft(ci, &a, &user, p).await,
            Step::Refuse(r) => {
                let action = r.action();
                let text = match r {
                    Refused::BadSelection => {
                        "That selection does not match the options.".to_owned()
                    }
                    Refused::NoSuchGrant => NO_SUCH_GRANT.to_owned(),
                    Refused::NotEditable => "This command cannot be edited here.".to_owned(),
                    Refused::NoPatternWaiting => "No pattern of yours is waiting to be saved \
                                                 here (askrelay may have restarted); use Allow \
                                                 matching… again."
                        .to_owned(),
                    Refused::NoteNeedsWord { labels, word } => {
                        let labels: Vec<String> = labels.iter().map(|l| render::inert(l)).collect();
                        format!(
                            "{} needs typing `{word}` to confirm, and a note cannot go with it: \
                             use **Submit**, which asks for the word. Nothing was recorded.",
                            labels.join(", ")
                        )
                    }
                };
                self.refuse(origin, Refusal::new(action, text).about(&a.req, idx))
                    .await
            }
            Step::NotSubmitted(e) => not_submitted(e),
        }
    }

    /// Keeps the person's selection `p` of a multi-select as their draft, audited.
    async fn save_draft(
        &self,
        ci: &ComponentInteraction,
        a: &Admitted<Action>,
        user: &str,
        p: Vec<usize>,
    ) -> Reply {
        let audit = AuditEntry {
            source: Source::Discord,
            actor: Some(describe(&ci.user)),
            ..Default::default()
        };
        let saved = drafts::save(
            &self.ctx,
            &self.kept.unsaved,
            &a.req,
            a.id.question,
            user,
            p,
            audit,
        )
        .await;
        match saved {
            Ok(()) => Reply::Ack,
            Err(NotSaved::Audit(cause)) => Reply::Tell(not_saved(&cause)),
            Err(NotSaved::Draft(e)) => {
                tracing::error!(error = %format!("{e:#}"), "cannot save a draft");
                Reply::Tell("askrelay could not save your selection, try again.".into())
            }
        }
    }
}

/// What the person is told when their draft cannot be submitted.
pub(super) fn not_submitted(e: NotSubmitted) -> Reply {
    match e {
        NotSubmitted::LastNotSaved => Reply::Tell(DRAFT_NOT_SAVED.into()),
        NotSubmitted::EarlierTerm => Reply::Tell(DRAFT_FROM_BEFORE.into()),
        NotSubmitted::Unreadable(cause) => Reply::Tell(not_saved(&cause)),
    }
}
