//! The one global interaction handler. It reads everything it needs from the custom_id and the
//! store, so it works for messages posted before a restart, and it answers every interaction
//! within Discord's 3-second window: an acknowledgement, a modal, or an ephemeral reply that
//! says why nothing happened. Every interaction is written to the audit log.

use super::custom_id::{self, Action, CustomId, TEXT_INPUT_ID};
use super::render::{self, ModalKind};
use super::{DiscordAnswerer, NAME};
use crate::core::{QuestionAnswer, Settlement};
use crate::store::{AuditEntry, SettleOutcome, Status, StoredRequest};
use async_trait::async_trait;
use serenity::all::{
    ActionRowComponent, ComponentInteraction, ComponentInteractionDataKind, Context,
    CreateInteractionResponse, CreateInteractionResponseMessage, Event, Interaction,
    ModalInteraction, RawEventHandler, User,
};
use std::sync::Arc;

pub(crate) struct Handler {
    pub answerer: Arc<DiscordAnswerer>,
}

#[async_trait]
impl RawEventHandler for Handler {
    async fn raw_event(&self, _ctx: Context, event: Event) {
        match event {
            Event::Ready(r) => tracing::info!(
                bot = %r.ready.user.name,
                bot_id = %r.ready.user.id,
                session = %r.ready.session_id,
                "connected to the Discord gateway"
            ),
            Event::Resumed(_) => tracing::info!("resumed the Discord gateway session"),
            Event::InteractionCreate(e) => match e.interaction {
                Interaction::Component(ci) => self.answerer.on_component(ci).await,
                Interaction::Modal(mi) => self.answerer.on_modal(mi).await,
                other => {
                    tracing::debug!(kind = ?other.kind(), "ignoring an interaction askrelay does not use")
                }
            },
            Event::Unknown(u) if u.kind == "INTERACTION_CREATE" => {
                // serenity could not parse it; Discord would show "This interaction failed".
                let id = u.value.get("id").and_then(|v| v.as_str()).unwrap_or("?");
                let custom_id = u
                    .value
                    .pointer("/data/custom_id")
                    .and_then(|v| v.as_str())
                    .unwrap_or("?");
                tracing::warn!(interaction_id = id, custom_id, "received an INTERACTION_CREATE that serenity could not parse; it was not answered");
            }
            _ => {}
        }
    }
}

/// Who clicked, as the store and the edited message show it.
fn who(user: &User) -> String {
    format!("{} <@{}>", user.name, user.id)
}

/// What to answer an interaction with.
enum Reply {
    /// Acknowledge without changing anything visible (type 6); the message edit follows.
    Ack,
    /// An ephemeral message (type 4, flag 64) to the clicking person only.
    Tell(String),
    /// Open a modal (type 9).
    Modal(serenity::builder::CreateModal),
}

impl DiscordAnswerer {
    async fn respond_component(&self, ci: &ComponentInteraction, reply: Reply) {
        let resp = response(reply);
        if let Err(e) = ci.create_response(&self.http, resp).await {
            tracing::warn!(interaction_id = %ci.id, error = %super::classify(&e).message(), "cannot answer the interaction");
        }
    }

    async fn respond_modal(&self, mi: &ModalInteraction, reply: Reply) {
        let resp = response(reply);
        if let Err(e) = mi.create_response(&self.http, resp).await {
            tracing::warn!(interaction_id = %mi.id, error = %super::classify(&e).message(), "cannot answer the interaction");
        }
    }

    async fn audit(
        &self,
        key: Option<i64>,
        idx: Option<usize>,
        actor: &str,
        action: &'static str,
        detail: String,
        accepted: bool,
    ) {
        if let Some(hub) = self.hub() {
            hub.audit(AuditEntry {
                request_key: key,
                question_idx: idx.map(|i| i as i64),
                source: NAME,
                actor: Some(actor.to_owned()),
                action,
                detail: Some(detail),
                accepted,
            })
            .await;
        }
    }

    /// The checks every interaction goes through: a custom_id of ours, a known request and
    /// question, an allowed person, a pending request, an open question. `Err` is the
    /// ephemeral text and the audit action.
    async fn gate(
        &self,
        raw_custom_id: &str,
        user: &User,
        role_ids: &[u64],
    ) -> Result<(CustomId, StoredRequest), (Option<i64>, Option<usize>, &'static str, String)> {
        let Some(id) = custom_id::parse(raw_custom_id) else {
            return Err((
                None,
                None,
                "forged",
                "This control is not one askrelay knows; nothing was recorded.".into(),
            ));
        };
        let (key, idx) = (Some(id.request_key), Some(id.question));
        let Some(hub) = self.hub() else {
            return Err((
                key,
                idx,
                "not_ready",
                "askrelay is starting up; try again in a moment.".into(),
            ));
        };
        let req = match hub.store().request_by_key(id.request_key).await {
            Ok(Some(r)) => r,
            Ok(None) => return Err((
                key,
                idx,
                "unknown_request",
                "This question is not known to askrelay (it may come from another installation)."
                    .into(),
            )),
            Err(e) => {
                tracing::error!(error = %format!("{e:#}"), "cannot read a request for an interaction");
                return Err((
                    key,
                    idx,
                    "error",
                    "askrelay could not read this question; try again.".into(),
                ));
            }
        };
        let Some(q) = req.questions.get(id.question) else {
            return Err((
                key,
                idx,
                "unknown_question",
                "This question is not part of its request.".into(),
            ));
        };
        if let Action::Choose(i) = id.action {
            if i >= q.options.len() {
                return Err((
                    key,
                    idx,
                    "forged",
                    "This button does not match any option.".into(),
                ));
            }
        }
        let route = self.route_of(&req);
        let allowed = route
            .as_ref()
            .is_some_and(|r| r.allows(user.id.get(), role_ids));
        if !allowed {
            return Err((key, idx, "denied", "You are not allowed to answer this question. Ask an admin to add you (or one of your roles) to the route's allowed_user_ids or allowed_role_ids.".into()));
        }
        if req.status != Status::Pending {
            let why = match (&req.status, &req.outcome) {
                (Status::Answered, _) => "This request has already been answered.".to_owned(),
                (_, Some(crate::store::Outcome::Error(e))) => format!(
                    "This request has ended ({}): {}",
                    req.status.as_str(),
                    e.message
                ),
                _ => format!("This request has ended ({}).", req.status.as_str()),
            };
            return Err((key, idx, "late", why));
        }
        if let Some(Some(a)) = req.answers.get(id.question) {
            return Err((key, idx, "late", already(q, a)));
        }
        Ok((id, req))
    }

    /// Runs [`Self::gate`] for the person who interacted; a refusal is audited and becomes the
    /// ephemeral reply. On success also returns who they are, as the store records it.
    async fn admit(
        &self,
        raw_custom_id: &str,
        user: &User,
        member: Option<&serenity::all::Member>,
    ) -> Result<(CustomId, StoredRequest, String), Reply> {
        let roles: Vec<u64> = member
            .map(|m| m.roles.iter().map(|r| r.get()).collect())
            .unwrap_or_default();
        let actor = who(user);
        match self.gate(raw_custom_id, user, &roles).await {
            Ok((id, req)) => Ok((id, req, actor)),
            Err((key, idx, action, text)) => {
                self.audit(
                    key,
                    idx,
                    &actor,
                    action,
                    format!("custom_id {raw_custom_id:?}"),
                    false,
                )
                .await;
                Err(Reply::Tell(text))
            }
        }
    }

    pub(crate) async fn on_component(self: &Arc<Self>, ci: ComponentInteraction) {
        let (id, req, actor) = match self
            .admit(&ci.data.custom_id, &ci.user, ci.member.as_ref())
            .await
        {
            Ok(admitted) => admitted,
            Err(reply) => return self.respond_component(&ci, reply).await,
        };
        let q = &req.questions[id.question];
        let values: &[String] = match &ci.data.kind {
            ComponentInteractionDataKind::StringSelect { values } => values,
            _ => &[],
        };
        // Select menus send option indices; anything else is forged.
        let picked: Option<Vec<usize>> = values
            .iter()
            .map(|v| custom_id::parse_option_value(v, q.options.len()))
            .collect();
        let picked = match (id.action, picked) {
            (Action::SelectOne, Some(p)) if p.len() == 1 => p,
            (Action::Draft, Some(p)) => p,
            (Action::SelectOne | Action::Draft, _) => {
                self.audit(
                    Some(req.key),
                    Some(id.question),
                    &actor,
                    "forged",
                    format!("select values {values:?}"),
                    false,
                )
                .await;
                let text = "That selection does not match the options.".to_owned();
                return self.respond_component(&ci, Reply::Tell(text)).await;
            }
            _ => Vec::new(),
        };
        let settlement = match id.action {
            Action::Choose(i) => Settlement::choice(i),
            Action::SelectOne => Settlement::choice(picked[0]),
            Action::Draft => {
                let saved = match self.hub() {
                    Some(hub) => {
                        hub.store()
                            .save_draft(req.key, id.question, &ci.user.id.to_string(), &picked)
                            .await
                    }
                    None => Ok(()),
                };
                let ok = saved.is_ok();
                self.audit(
                    Some(req.key),
                    Some(id.question),
                    &actor,
                    "draft",
                    format!("{picked:?}"),
                    ok,
                )
                .await;
                let reply = if ok {
                    Reply::Ack
                } else {
                    Reply::Tell("askrelay could not save your selection; try again.".into())
                };
                return self.respond_component(&ci, reply).await;
            }
            Action::Submit => Settlement {
                selected: self.draft(&req, id.question, &ci.user).await,
                custom: None,
            },
            Action::Other | Action::Answer | Action::SubmitWithNote => {
                let kind = match id.action {
                    Action::Other => ModalKind::Other,
                    Action::Answer => ModalKind::Answer,
                    _ => ModalKind::Note,
                };
                let Some(route) = self.route_of(&req) else {
                    return;
                };
                let ctx = self.ctx(&req, &route, id.question);
                self.audit(
                    Some(req.key),
                    Some(id.question),
                    &actor,
                    "open_modal",
                    format!("{:?}", ci.data.custom_id),
                    true,
                )
                .await;
                return self
                    .respond_component(&ci, Reply::Modal(render::modal(q, &ctx, kind)))
                    .await;
            }
            Action::ModalOther | Action::ModalAnswer | Action::ModalNote => {
                self.audit(
                    Some(req.key),
                    Some(id.question),
                    &actor,
                    "forged",
                    "a modal id on a component".into(),
                    false,
                )
                .await;
                return self
                    .respond_component(
                        &ci,
                        Reply::Tell("This control is not one askrelay knows.".into()),
                    )
                    .await;
            }
        };
        crate::crash::point("clicked");
        let reply = self.settle(&req, id.question, settlement, &actor).await;
        self.respond_component(&ci, reply).await;
    }

    pub(crate) async fn on_modal(self: &Arc<Self>, mi: ModalInteraction) {
        let (id, req, actor) = match self
            .admit(&mi.data.custom_id, &mi.user, mi.member.as_ref())
            .await
        {
            Ok(admitted) => admitted,
            Err(reply) => return self.respond_modal(&mi, reply).await,
        };
        let text = mi
            .data
            .components
            .iter()
            .flat_map(|row| row.components.iter())
            .find_map(|c| match c {
                ActionRowComponent::InputText(t) if t.custom_id == TEXT_INPUT_ID => t.value.clone(),
                _ => None,
            })
            .filter(|t| !t.trim().is_empty());
        let Some(text) = text else {
            self.audit(
                Some(req.key),
                Some(id.question),
                &actor,
                "empty_modal",
                String::new(),
                false,
            )
            .await;
            return self
                .respond_modal(
                    &mi,
                    Reply::Tell("The answer was empty; nothing was recorded.".into()),
                )
                .await;
        };
        let settlement = match id.action {
            Action::ModalOther | Action::ModalAnswer => Settlement::text(text),
            Action::ModalNote => Settlement {
                selected: self.draft(&req, id.question, &mi.user).await,
                custom: Some(text),
            },
            _ => {
                self.audit(
                    Some(req.key),
                    Some(id.question),
                    &actor,
                    "forged",
                    "a component id on a modal".into(),
                    false,
                )
                .await;
                return self
                    .respond_modal(
                        &mi,
                        Reply::Tell("This form is not one askrelay knows.".into()),
                    )
                    .await;
            }
        };
        crate::crash::point("clicked");
        let reply = self.settle(&req, id.question, settlement, &actor).await;
        self.respond_modal(&mi, reply).await;
    }

    async fn draft(&self, req: &StoredRequest, idx: usize, user: &User) -> Vec<usize> {
        match self.hub() {
            Some(hub) => hub
                .store()
                .draft(req.key, idx, &user.id.to_string())
                .await
                .unwrap_or_else(|e| {
                    tracing::error!(error = %format!("{e:#}"), "cannot read a draft");
                    Vec::new()
                }),
            None => Vec::new(),
        }
    }

    /// Settles through the hub (first wins) and says what to answer the interaction with.
    async fn settle(
        &self,
        req: &StoredRequest,
        idx: usize,
        settlement: Settlement,
        actor: &str,
    ) -> Reply {
        let Some(hub) = self.hub() else {
            return Reply::Tell("askrelay is starting up; try again in a moment.".into());
        };
        match hub.settle(req.key, idx, settlement, actor, NAME).await {
            Ok(SettleOutcome::Won { .. }) => Reply::Ack,
            Ok(SettleOutcome::AlreadyAnswered(a)) => Reply::Tell(already(&req.questions[idx], &a)),
            Ok(SettleOutcome::Ended(status)) => Reply::Tell(format!(
                "This request has ended ({}); your answer did not count.",
                status.as_str()
            )),
            Ok(SettleOutcome::Unknown) => {
                Reply::Tell("This question is not known to askrelay.".into())
            }
            Err(e) => Reply::Tell(format!("Your answer was not recorded: {}", e.message)),
        }
    }
}

fn already(q: &crate::core::Question, a: &crate::store::AnsweredBy) -> String {
    let qa = QuestionAnswer::build(q, &a.settlement);
    let mut what = qa.selected.join(", ");
    if let Some(c) = qa.custom {
        if !what.is_empty() {
            what.push_str("; ");
        }
        what.push_str(&c);
    }
    render::truncate(
        &format!(
            "Already answered by {} <t:{}:R>: {}",
            a.by,
            a.at_ms / 1000,
            if what.is_empty() {
                "(nothing selected)".into()
            } else {
                what
            }
        ),
        1900,
    )
}

fn response(reply: Reply) -> CreateInteractionResponse {
    match reply {
        Reply::Ack => CreateInteractionResponse::Acknowledge,
        Reply::Tell(text) => CreateInteractionResponse::Message(
            CreateInteractionResponseMessage::new()
                .content(render::truncate(&text, 2000))
                .ephemeral(true)
                .allowed_mentions(serenity::builder::CreateAllowedMentions::new()),
        ),
        Reply::Modal(m) => CreateInteractionResponse::Modal(m),
    }
}
