//! Grants a person writes ("Allow matching…"): the pattern and length from the form, checked
//! by the chat layer ([`crate::answerer::chat::grant`]) and shown in a preview with "Save
//! grant"; and "Save grant" pressed, which settles like a click on the question.

use super::modals::input_value;
use super::{describe, Admitted, Handler, Origin, Refusal, Reply};
use crate::answerer::chat::grant::{self, PatternRefused};
use crate::answerer::discord::custom_id::{Action, Form};
use crate::answerer::discord::render::{self, RenderContext};
use crate::domain::request::{AuditAction, AuditEntry, EditState, Source};
use crate::domain::Settlement;
use serenity::all::ModalInteraction;

impl Handler {
    /// The grant form was submitted: the pattern must match the command asked and the length
    /// be one of the route's; then it is shown, with "Save grant", and kept until pressed.
    pub(super) async fn preview_grant(
        &self,
        origin: &Origin<'_>,
        mi: &ModalInteraction,
        a: Admitted<Form>,
        pattern: String,
    ) -> Reply {
        let (key, idx) = (a.req.key, a.id.question);
        let ctx = RenderContext::of(&a.req, &a.route, idx);
        let length = input_value(mi, render::LENGTH_INPUT_ID).unwrap_or_default();
        let p = match grant::preview(&a.req, ctx.grant_secs, &length, &pattern) {
            Ok(p) => p,
            Err(refused) => {
                let why = match refused {
                    PatternRefused::NotApproval => {
                        "This request is not an approval; it takes no grant.".to_owned()
                    }
                    PatternRefused::Length => {
                        let lengths: Vec<String> = ctx
                            .grant_secs
                            .iter()
                            .map(|&s| render::grant_length_short(s))
                            .collect();
                        format!(
                            "This route's grants last {}; “{}” is not one of them. Nothing was \
                             saved.",
                            lengths.join(" or "),
                            render::inert(&render::one_line(&length))
                        )
                    }
                    PatternRefused::Line(message) => {
                        format!("The {}. Nothing was saved.", render::inert(&message))
                    }
                    PatternRefused::NotAGrant(why) => format!(
                        "Not a grant: {}. A pattern is matched on shell words: a `*` word stands \
                         for whole words. Nothing was saved.",
                        render::inert(&why)
                    ),
                };
                return self
                    .refuse(
                        origin,
                        Refusal::new(AuditAction::Forbidden, why).about(&a.req, idx),
                    )
                    .await;
            }
        };
        let requester = p
            .requester
            .describe(|s| render::inert(&render::one_line(s)));
        let (text, rows) = render::grant_preview(&ctx, &p, &requester);
        let _ = self
            .ctx
            .record(AuditEntry {
                request_key: Some(key),
                request_id: Some(a.req.request_id.clone()),
                question_idx: Some(idx),
                source: Source::Discord,
                actor: Some(describe(&mi.user)),
                action: AuditAction::Draft,
                detail: Some(format!(
                    "grant pattern {:?} for {} s, not saved yet",
                    p.pattern, p.secs
                )),
                accepted: true,
            })
            .await;
        self.kept.patterns.lock().unwrap().insert(
            &a.req.token,
            &mi.user.id.to_string(),
            grant::Waiting {
                pattern: p.pattern,
                g: p.g,
                typed: None,
            },
        );
        Reply::Preview(text, rows)
    }

    /// "Save grant", pressed on the preview: settles like a click on the question, whose
    /// message (and copies) are then edited, and tells the person what was saved.
    pub(super) async fn save_grant(&self, a: Admitted<Action>, settlement: Settlement) -> Reply {
        let (req, post) = (a.req.clone(), a.post.clone());
        crate::crash::point("clicked");
        match self.settle(a, settlement, None).await {
            Reply::Update(won) => {
                let (outcome, post, req) = *won;
                self.outbox
                    .spawn_edit(&self.ctx, &req, &post, outcome, Some(EditState::Settled));
                Reply::Tell("Saved: the grant is live, and this request is allowed.".into())
            }
            Reply::Refresh(shown) => {
                self.outbox
                    .spawn_edit(&self.ctx, &req, &post, shown.0, None);
                Reply::Tell(
                    "Your vote for this grant is recorded; it is saved when enough approvers \
                     choose it too."
                        .into(),
                )
            }
            other => other,
        }
    }
}
