//! Clicks and selects on a question's message: a choice settles (or opens the form that asks
//! for the typed word), a multi-select saves the person's draft until "Submit", and the
//! buttons that need text open their form.

use super::admit::copy_of;
use super::respond::Responder;
use super::{describe, not_saved, Admitted, Handler, Origin, Refusal, Reply, NO_SUCH_GRANT};
use crate::answerer::chat::confirm::{self, Pressed, WordFor};
use crate::answerer::chat::drafts::{self, NotSubmitted};
use crate::answerer::chat::{edit, grant};
use crate::answerer::discord::batch::BatchId;
use crate::answerer::discord::custom_id::{self, Action, Form};
use crate::answerer::discord::render::{self, RenderContext};
use crate::domain::request::{AuditAction, AuditEntry, Request, Source};
use crate::domain::Settlement;
use serenity::all::{ComponentInteraction, ComponentInteractionDataKind};

/// What "Submit" says after the person's last selection failed to save.
const DRAFT_NOT_SAVED: &str = "Your last selection was not saved, so nothing was submitted: \
                               choose your options again, then Submit.";

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
        let (key, idx) = (a.req.key, a.id.question);
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
        let settlement = match (a.id.action, picked) {
            (Action::Choose(i), _) => Settlement::choice(i),
            (Action::SelectOne, Some(p)) if p.len() == 1 => Settlement::choice(p[0]),
            (Action::Draft, Some(p)) => {
                let saved = self.ctx.save_draft(&a.req, idx, &user, &p).await;
                let audit = AuditEntry {
                    request_key: Some(key),
                    request_id: Some(a.req.request_id.clone()),
                    question_idx: Some(idx),
                    source: Source::Discord,
                    actor: Some(describe(&ci.user)),
                    action: AuditAction::Draft,
                    detail: Some(crate::domain::audit::settlement_detail(
                        q,
                        &Settlement {
                            selected: p.clone(),
                            ..Settlement::default()
                        },
                    )),
                    accepted: true,
                };
                let reply = match saved {
                    Ok(()) => match self.ctx.record(audit).await {
                        Ok(()) => Reply::Ack,
                        Err(e) => Reply::Tell(not_saved(&format!("{e:#}"))),
                    },
                    Err(e) => {
                        tracing::error!(error = %format!("{e:#}"), "cannot save a draft");
                        Reply::Tell("askrelay could not save your selection, try again.".into())
                    }
                };
                self.unsaved_drafts
                    .mark(key, idx, &user, matches!(reply, Reply::Ack));
                return reply;
            }
            (Action::SelectOne | Action::Draft, _) => {
                return self
                    .refuse(
                        origin,
                        Refusal::new(
                            AuditAction::Forged,
                            "That selection does not match the options.",
                        )
                        .about(&a.req, idx),
                    )
                    .await;
            }
            (Action::Grant(i), _) => match grant::settlement(&a.route.policy, i) {
                Some(s) => s,
                None => {
                    return self
                        .refuse(
                            origin,
                            Refusal::new(AuditAction::Forged, NO_SUCH_GRANT).about(&a.req, idx),
                        )
                        .await;
                }
            },
            (Action::Edit, _) => {
                let ctx = RenderContext::of(&a.req, &a.route, idx);
                let Some(asked) = ctx.editable else {
                    return self
                        .refuse(
                            origin,
                            Refusal::new(
                                AuditAction::Forged,
                                "This command cannot be edited here.",
                            )
                            .about(&a.req, idx),
                        )
                        .await;
                };
                // On a quorum route the form starts from the edit others voted for last, so
                // that a second approver approves the same edited command.
                let command = edit::starting_command(&a.req, idx, asked);
                return self
                    .open_modal(ci, &a.req, idx, render::edit_modal(q, &ctx, &command))
                    .await;
            }
            (Action::GrantPattern, _) => {
                let ctx = RenderContext::of(&a.req, &a.route, idx);
                let Some(asked) = ctx.approval.filter(|_| !ctx.grant_secs.is_empty()) else {
                    return self
                        .refuse(
                            origin,
                            Refusal::new(AuditAction::Forged, NO_SUCH_GRANT).about(&a.req, idx),
                        )
                        .await;
                };
                return self
                    .open_modal(
                        ci,
                        &a.req,
                        idx,
                        render::grant_pattern_modal(q, &ctx, &asked.command),
                    )
                    .await;
            }
            (Action::SaveGrant(g), _) => {
                let waiting = self.patterns.lock().unwrap().take(&a.req.token, &user);
                let Some((pattern, _)) = waiting.filter(|(_, w)| *w == g) else {
                    return self
                        .refuse(
                            origin,
                            Refusal::new(
                                AuditAction::Stale,
                                "No pattern of yours is waiting to be saved here (askrelay may \
                                 have restarted); use Allow matching… again.",
                            )
                            .about(&a.req, idx),
                        )
                        .await;
                };
                let Some(settlement) = grant::saved(&a.route.policy, g, pattern) else {
                    return self
                        .refuse(
                            origin,
                            Refusal::new(AuditAction::Forged, NO_SUCH_GRANT).about(&a.req, idx),
                        )
                        .await;
                };
                return self.save_grant(a, settlement).await;
            }
            (Action::Submit, _) => match self.draft(&a.req, idx, &user).await {
                Ok(s) => s,
                Err(r) => return r,
            },
            (Action::Other | Action::Answer | Action::SubmitWithNote, _) => {
                if a.id.action == Action::SubmitWithNote {
                    if let Some(r) = self.note_needs_word(origin, &a, &user).await {
                        return r;
                    }
                }
                let form = match a.id.action {
                    Action::Other => Form::Other,
                    Action::Answer => Form::Answer,
                    _ => Form::Note,
                };
                let ctx = RenderContext::of(&a.req, &a.route, idx);
                return self
                    .open_modal(ci, &a.req, idx, render::modal(q, &ctx, form))
                    .await;
            }
        };
        if let Some(form) = confirm_form(&a, &settlement) {
            return self.open_confirm(ci, &a, form).await;
        }
        crate::crash::point("clicked");
        self.settle(a, settlement, None).await
    }

    /// The settlement of the person's saved selection of question `idx`, to submit; or the
    /// reply refusing it: their last selection failed to save, or it cannot be read now (never
    /// an older or an empty selection in its place).
    pub(super) async fn draft(
        &self,
        req: &Request,
        idx: usize,
        user: &str,
    ) -> Result<Settlement, Reply> {
        drafts::submitted(&self.ctx, &self.unsaved_drafts, req, idx, user)
            .await
            .map_err(|e| match e {
                NotSubmitted::LastNotSaved => Reply::Tell(DRAFT_NOT_SAVED.into()),
                NotSubmitted::Unreadable(cause) => Reply::Tell(not_saved(&cause)),
            })
    }
}

/// The form that asks for the typed word, when `settlement` (a click's choice, or Submit's
/// draft) has a label of the route's `confirm_labels`.
fn confirm_form(a: &Admitted<Action>, settlement: &Settlement) -> Option<Form> {
    let q = &a.req.questions[a.id.question];
    let pressed = match a.id.action {
        Action::Submit => Pressed::Submit,
        Action::Grant(g) => Pressed::Grant(g),
        _ => Pressed::Choice,
    };
    Some(
        match confirm::asks_word(&a.route.policy, q, settlement, pressed)? {
            WordFor::Draft => Form::ConfirmDraft,
            WordFor::Grant(g) => Form::ConfirmGrant(g),
            WordFor::Choice(i) => Form::Confirm(i),
        },
    )
}
