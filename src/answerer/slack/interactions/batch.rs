//! The batch's controls on Slack (`ar:batch:pick`, `ar:batch:allow`, `ar:batch:deny`; see
//! [`crate::answerer::slack::batch`]): a choice in the menu is audited and changes nothing; a
//! button reads the selection from the payload's `state.values`, and each selected request
//! goes through the chat layer's checks of a press on its own message and the core's
//! settlement ([`crate::answerer::chat::batch::decide_one`]); its messages are edited
//! (`chat.update`, through the outbox) and the person is told what was done and what was
//! refused, and why, through the press's `response_url`.

use super::admit::describe;
use super::{Handler, Origin, Reply};
use crate::answerer::chat::batch::{self as chat_batch, BatchId, Decided, Item};
use crate::answerer::chat::vote::Settle;
use crate::answerer::chat::Person;
use crate::answerer::slack::batch::{selected, SlackReply};
use crate::answerer::slack::platform::Slack;
use crate::domain::approval::Verdict;
use crate::domain::clock::now_ms;
use crate::domain::request::{AuditAction, AuditEntry, Post, Source};
use crate::domain::text::Escaped;
use slack_morphism::prelude::*;

impl Handler {
    /// A batch control: the person is told what came of it (nothing for a choice in the menu).
    pub(super) async fn on_batch(
        &self,
        origin: &Origin,
        id: BatchId,
        action: &SlackInteractionActionInfo,
        state: Option<&SlackActionState>,
    ) -> Reply {
        let place = origin.channel.clone().unwrap_or_default();
        let mut audit = AuditEntry {
            source: Source::Slack,
            actor: Some(describe(&origin.user, &origin.name)),
            detail: Some(format!("{id} in channel {}", Escaped(&place))),
            ..Default::default()
        };
        match id {
            BatchId::Pick => {
                // A choice is kept by Slack in the person's client until a button sends it;
                // it changes no request, and is audited as Discord's is.
                let n = action.selected_options.as_ref().map_or(0, Vec::len);
                audit.action = AuditAction::Draft;
                audit.accepted = true;
                audit.detail = Some(format!(
                    "batch selection of {n} request(s) in channel {}",
                    Escaped(&place)
                ));
                if let Err(e) = self.ctx.record(audit).await {
                    tracing::error!(error = %format!("{e:#}"), "cannot audit a Slack batch selection");
                }
                Reply::Quiet
            }
            BatchId::Decide(verdict) => {
                let tokens = selected(state);
                if tokens.is_empty() || place.is_empty() {
                    audit.action = AuditAction::Command;
                    self.ctx.refuse(audit).await;
                    return Reply::Tell(
                        "Choose the requests in the menu first; nothing was answered.".into(),
                    );
                }
                let person = self.person_anywhere(&origin.user, &origin.name).await;
                let mut items = Vec::with_capacity(tokens.len());
                for token in &tokens {
                    items.push(
                        self.decide_one(&person, &place, verdict, token, &audit)
                            .await,
                    );
                }
                let done = items.iter().filter(|i| i.outcome.is_ok()).count();
                // Each request's answer or refusal is audited already; this row ties them
                // together.
                audit.action = AuditAction::Command;
                audit.accepted = true;
                audit.detail = Some(format!(
                    "{id} in channel {}: {done} done, {} refused",
                    Escaped(&place),
                    items.len() - done
                ));
                if let Err(e) = self.ctx.record(audit).await {
                    tracing::error!(error = %format!("{e:#}"), "cannot audit a Slack batch");
                }
                Reply::Tell(chat_batch::report(verdict, &items, &SlackReply))
            }
        }
    }

    /// One selected request: the chat layer's checks and settlement, then its messages edited.
    async fn decide_one(
        &self,
        person: &Person,
        place: &str,
        verdict: Verdict,
        token: &str,
        audit: &AuditEntry,
    ) -> Item {
        let decided = chat_batch::decide_one(
            &self.ctx,
            &Slack(&self.config),
            person,
            place,
            verdict,
            token,
            audit,
            now_ms(),
        )
        .await;
        if let Decided::Read {
            posts,
            outcome: Ok(settled),
            ..
        } = &decided
        {
            self.show_one(posts, settled);
        }
        chat_batch::item(&decided, verdict, &SlackReply)
    }

    /// The request's Slack messages after a settlement, edited as a press's are.
    fn show_one(&self, posts: &[Post], settled: &Settle) {
        match settled {
            Settle::Won(request) => {
                self.outbox
                    .sync_edits_after(&self.ctx, request, posts, Some(0))
            }
            Settle::Voted(request, _) => self.outbox.show_votes(&self.ctx, request, 0, posts),
            _ => {}
        }
    }
}
