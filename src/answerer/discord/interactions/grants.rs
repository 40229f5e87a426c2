//! Grants: the route's "Allow for …" settlements, and a grant the person writes ("Allow
//! matching…"): its pattern checked and shown in a preview, kept for the term, and saved with
//! "Save grant".

use super::modals::input_value;
use super::{describe, Admitted, Handler, Origin, Refusal, Reply};
use crate::answerer::discord::custom_id::{Action, Form};
use crate::answerer::discord::render::{self, RenderContext};
use crate::answerer::discord::route::ResolvedRoute;
use crate::domain::answer::{GrantTerms, Terms};
use crate::domain::request::{AuditAction, AuditEntry, EditState, Source};
use crate::domain::Settlement;
use serenity::all::ModalInteraction;
use std::collections::HashMap;

/// Grant patterns waiting for "Save grant", per Discord user: their newest previews (request
/// token, pattern, the route's grant length), oldest first. Each person's are bounded on their
/// own, so one person's previews never push out anyone else's.
#[derive(Debug, Default)]
pub(crate) struct WaitingPatterns(
    pub(super) HashMap<u64, std::collections::VecDeque<(String, String, usize)>>,
);

/// The most grant patterns one person may have waiting for "Save grant" at once (their oldest
/// is forgotten past it).
pub(super) const MAX_WAITING_PATTERNS_PER_USER: usize = 16;

impl WaitingPatterns {
    /// Keeps `user`'s preview of `pattern` for the request with `token`, replacing their
    /// earlier one for that request.
    pub(crate) fn insert(&mut self, token: &str, user: u64, pattern: String, g: usize) {
        let mine = self.0.entry(user).or_default();
        mine.retain(|(t, _, _)| t != token);
        if mine.len() >= MAX_WAITING_PATTERNS_PER_USER {
            mine.pop_front();
        }
        mine.push_back((token.to_owned(), pattern, g));
    }

    /// Takes `user`'s preview for the request with `token`: the pattern and grant length.
    pub(crate) fn take(&mut self, token: &str, user: u64) -> Option<(String, usize)> {
        let mine = self.0.get_mut(&user)?;
        let at = mine.iter().position(|(t, _, _)| t == token)?;
        let (_, pattern, g) = mine.remove(at)?;
        if mine.is_empty() {
            self.0.remove(&user);
        }
        Some((pattern, g))
    }
}

/// The reply to a grant button the route no longer has.
pub(super) const NO_SUCH_GRANT: &str = "This route gives no such grant (any more).";

/// "Allow for …" with the route's grant `i`: the first option (the front door's allow), with
/// the grant's terms.
pub(super) fn grant_settlement(route: &ResolvedRoute, i: usize) -> Option<Settlement> {
    let secs = *route.policy.grant_secs.get(i)?;
    Some(Settlement {
        selected: vec![0],
        custom: None,
        terms: Some(Terms {
            grant: Some(GrantTerms {
                secs,
                pattern: None,
                id: None,
            }),
            edited: None,
        }),
    })
}

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
        let g = crate::config::grant_secs(&length)
            .ok()
            .and_then(|secs| ctx.grant_secs.iter().position(|&s| s == secs));
        let lengths: Vec<String> = ctx
            .grant_secs
            .iter()
            .map(|&s| render::grant_length_short(s))
            .collect();
        let pattern = pattern.trim().to_owned();
        let why = match (ctx.approval, g) {
            (None, _) => Some("This request is not an approval; it takes no grant.".to_owned()),
            (_, None) => Some(format!(
                "This route's grants last {}; “{}” is not one of them. Nothing was saved.",
                lengths.join(" or "),
                render::inert(&render::one_line(&length))
            )),
            (Some(ap), Some(_)) => {
                if let Err(e) = crate::domain::model::check_line(
                    &pattern,
                    "pattern",
                    crate::domain::model::MAX_APPROVAL_COMMAND_CHARS,
                ) {
                    Some(format!(
                        "The {}. Nothing was saved.",
                        render::inert(&e.message)
                    ))
                } else if let Err(why) = crate::domain::glob::check_pattern(&pattern, &ap.command) {
                    Some(format!(
                        "Not a grant: {}. A pattern is matched on shell words: a `*` word stands \
                         for whole words. Nothing was saved.",
                        render::inert(&why)
                    ))
                } else {
                    None
                }
            }
        };
        if let Some(why) = why {
            return self
                .refuse(
                    origin,
                    Refusal::new(AuditAction::Forbidden, why).about(&a.req, idx),
                )
                .await;
        }
        let g = g.unwrap_or_default();
        let mut requester = match a.req.peer.uid {
            Some(uid) => format!("uid {uid}"),
            None => "the asking process".to_owned(),
        };
        if let Some(node) = &a.req.node {
            requester.push_str(&format!(" on {}", render::inert(node)));
        }
        if let Some(s) = ctx.approval.and_then(|ap| ap.session.as_deref()) {
            requester.push_str(&format!(
                " in session {}",
                render::inert(&render::one_line(s))
            ));
        }
        let (text, rows) = render::grant_preview(&ctx, &pattern, g, &requester);
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
                    pattern, ctx.grant_secs[g]
                )),
                accepted: true,
            })
            .await;
        self.patterns
            .lock()
            .unwrap()
            .insert(&a.req.token, mi.user.id.get(), pattern, g);
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
