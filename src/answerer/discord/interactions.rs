//! The one global interaction handler. It reads everything it needs from the custom_id and the
//! store, so it works for messages posted before a restart, and it answers every interaction
//! within Discord's 3-second window: the final rendering (the winning click), an
//! acknowledgement, a modal, or an ephemeral reply that says why nothing happened. Every
//! interaction is written to the audit log.
//!
//! An interaction goes through an ordered pipeline: admit → refusal or action → reply →
//! respond. Admission, in order: a person (not a bot); a custom_id askrelay made; a request
//! whose token it carries; the very message, channel and guild askrelay posted that question
//! in (or, in that channel and guild, a message by this bot that it could not record: a cluster
//! leader's post made again by its successor); an option the question has; a person the route allows; a request still pending and a
//! question still open. Only then does anything change, and nothing is said to be stored
//! before it is.
//!
//! Responding, last, is raced against the store ([`Rest::in_time_or_defer`]): when admission,
//! the action and its audit row are done within [`super::rest::DEFER_AFTER`] (the usual
//! case), the reply is the interaction's one callback (type 7 update, type 4 ephemeral reply,
//! type 9 modal, type 6 acknowledgement). When the store is slower (another writer holds the
//! lock), the interaction is acknowledged first with a deferred update (type 6, which shows
//! nothing and promises nothing), and the reply follows once the store answered: the settled
//! or re-counted message as an edit of askrelay's own message through the outbox (recorded,
//! like every outbox edit, once Discord confirmed it), any private reply (a refusal, "already
//! answered", "could not be saved, try again") as an ephemeral follow-up, and a form that can
//! no longer open as a follow-up that says to use the button again.
//!
//! A choice of a label that needs a typed word (the route's `confirm_labels`) opens a modal
//! that asks for it instead of settling; the modal's submission settles with the word, which
//! the core checks again.

use super::commands::Commands;
use super::custom_id::{self, Action, CustomId, Form, Kind, TEXT_INPUT_ID};
use super::gateway::Gateway;
use super::outbox::{record_edit_failed, Outbox};
use super::render::{self, answered_view, RenderContext};
use super::rest::{Rest, Timely};
use super::route::{self, ResolvedRoute};
use super::NAME;
use crate::config::Config;
use crate::domain::answer::{GrantTerms, Terms};
use crate::domain::request::{
    Actor, Answered, AuditAction, AuditEntry, EditState, Post, Request, Source, Status, Via,
};
use crate::domain::text::Escaped;
use crate::domain::{AnswererContext, QuestionAnswer, SettleOutcome, Settlement};
use async_trait::async_trait;
use serenity::all::{
    ActionRowComponent, ChannelId, ComponentInteraction, ComponentInteractionDataKind, Context,
    CreateInteractionResponse, CreateInteractionResponseMessage, Event, GuildId, Interaction,
    Member, MessageId, ModalInteraction, RawEventHandler, User,
};
use std::collections::HashMap;
use std::sync::Arc;

/// The gateway session's handler, built for one term of Discord work (see [`super::Lead`]).
pub(crate) struct Handler {
    pub config: Arc<Config>,
    pub rest: Arc<Rest>,
    /// The term's outbox: what is shown, and the edits after a click.
    pub outbox: Arc<Outbox>,
    pub gateway: Arc<Gateway>,
    pub commands: Arc<Commands>,
    pub ctx: AnswererContext,
    /// Grant patterns shown in a preview and not saved yet, by request token and Discord user:
    /// a pattern and the route's grant length. Kept for the term only (a restart forgets them:
    /// the person is told to write the pattern again).
    pub patterns: Arc<std::sync::Mutex<WaitingPatterns>>,
    /// Multi-select drafts whose save failed, by request key, question and Discord user: the
    /// person was told to choose again, and "Submit" is refused until a save succeeds, so that
    /// it never submits an older or empty selection in its place. Kept for the term only.
    pub unsaved_drafts: Arc<std::sync::Mutex<UnsavedDrafts>>,
}

/// Drafts whose save failed: (request key, question, Discord user).
pub(crate) type UnsavedDrafts = std::collections::HashSet<(i64, usize, String)>;

/// The follow-up of a draft whose save was slow (its update deferred).
const DRAFT_SAVED: &str = "Your selection was saved; press Submit to send it.";

/// What "Submit" says after the person's last selection failed to save.
const DRAFT_NOT_SAVED: &str = "Your last selection was not saved, so nothing was submitted: \
                               choose your options again, then Submit.";

/// Grant patterns waiting for "Save grant", per Discord user: their newest previews (request
/// token, pattern, the route's grant length), oldest first. Each person's are bounded on their
/// own, so one person's previews never push out anyone else's.
#[derive(Debug, Default)]
pub(crate) struct WaitingPatterns(
    HashMap<u64, std::collections::VecDeque<(String, String, usize)>>,
);

/// The most grant patterns one person may have waiting for "Save grant" at once (their oldest
/// is forgotten past it).
const MAX_WAITING_PATTERNS_PER_USER: usize = 16;

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

/// The most unsaved drafts remembered at once.
const MAX_UNSAVED_DRAFTS: usize = 1000;

#[async_trait]
impl RawEventHandler for Handler {
    async fn raw_event(&self, _ctx: Context, event: Event) {
        match event {
            Event::Ready(r) => {
                // Said once at the default level; a reconnect is summarised by the gateway
                // watcher (one WARN when it drops, one INFO with the downtime when it is back).
                self.gateway.set_bot(r.ready.user.id.get());
                if self.gateway.first_ready() {
                    tracing::info!(
                        bot = %r.ready.user.name,
                        bot_id = %r.ready.user.id,
                        session = %r.ready.session_id,
                        "connected to the Discord gateway"
                    );
                    // Once per run: the bulk overwrite is idempotent, so a restart repeats it
                    // harmlessly, but a reconnect need not.
                    let commands = self.commands.clone();
                    let app = r.ready.application.id;
                    self.ctx
                        .spawn(async move { commands.register_commands(app).await });
                } else {
                    tracing::debug!(session = %r.ready.session_id, "identified to the Discord gateway again");
                }
                self.gateway.up();
                // After an outage: whatever could not be posted or edited goes now.
                self.outbox.repair_now.notify_one();
            }
            Event::Resumed(_) => {
                tracing::debug!("resumed the Discord gateway session");
                self.gateway.up();
                self.outbox.repair_now.notify_one();
            }
            // A cluster node whose lead ended (its lease lapsed while it was frozen or cut
            // off) leaves the interactions still reaching its old session alone: Discord has
            // told the person it failed or will, and counting it now would count a click they
            // were told failed. They click again, and the new leader answers.
            Event::InteractionCreate(e) if !self.ctx.holds_term() => {
                tracing::warn!(
                    "an interaction reached this node after its lead ended; left unanswered, \
                     the person clicks again on the new leader"
                );
                let (user, kind) = match &e.interaction {
                    Interaction::Component(ci) => (Some(&ci.user), "a click"),
                    Interaction::Modal(mi) => (Some(&mi.user), "a form"),
                    Interaction::Command(ci) => (Some(&ci.user), "a command"),
                    _ => (None, "an interaction"),
                };
                // Audited when the database answers (a frozen leader woken up: it does; a
                // node cut off from it: the write fails, and says so in the log).
                let entry = AuditEntry {
                    source: Source::Discord,
                    actor: user.map(describe),
                    action: AuditAction::NotReady,
                    detail: Some(format!(
                        "{kind} left unanswered: this node's lead had ended"
                    )),
                    accepted: false,
                    ..Default::default()
                };
                let ctx = self.ctx.clone();
                self.ctx.spawn(async move {
                    if let Err(e) = ctx.record(entry).await {
                        tracing::warn!(error = %format!("{e:#}"), "cannot audit an interaction left unanswered");
                    }
                });
            }
            Event::InteractionCreate(e) => match e.interaction {
                Interaction::Component(ci) => self.on_component(ci).await,
                Interaction::Modal(mi) => self.on_modal(mi).await,
                Interaction::Command(ci) => self.commands.on_command(&self.ctx, ci).await,
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
                tracing::warn!(
                    interaction_id = %Escaped(id),
                    custom_id = %Escaped(custom_id),
                    "received an INTERACTION_CREATE that serenity could not parse; it was not answered"
                );
            }
            _ => {}
        }
    }
}

/// What to answer an interaction with.
enum Reply {
    /// Acknowledge without changing anything visible (type 6).
    Ack,
    /// Replace the message with its final rendering (type 7): the winning click.
    Update(Box<(render::Outcome, Post, Request)>),
    /// Replace the message with its open rendering (type 7), its vote count changed: a vote
    /// on a quorum route.
    Refresh(Box<(render::Outcome, Post, Request)>),
    /// An ephemeral message (type 4, flag 64) to the clicking person only.
    Tell(String),
    /// Open a modal (type 9).
    Modal(serenity::builder::CreateModal),
    /// An ephemeral message with controls, to the clicking person only (a grant's preview).
    Preview(String, Vec<serenity::builder::CreateActionRow>),
}

/// Where an interaction came from.
struct Origin<'a> {
    custom_id: &'a str,
    user: &'a User,
    member: Option<&'a Member>,
    guild: Option<GuildId>,
    channel: ChannelId,
    /// The message whose component was used (for a modal: the one that opened it).
    message: Option<MessageId>,
    /// When that message is this bot's own (its author is the bot user): the questions (request
    /// token, question) its controls belong to.
    ours: Vec<(String, usize)>,
}

/// The questions whose controls `m` carries, when `m` is this bot's own message; none
/// otherwise.
fn copy_of(gateway: &Gateway, m: &serenity::all::Message) -> Vec<(String, usize)> {
    if !gateway.is_bot(m.author.id.get()) {
        return Vec::new();
    }
    m.components
        .iter()
        .flat_map(|row| row.components.iter())
        .filter_map(|c| match c {
            ActionRowComponent::Button(b) => match &b.data {
                serenity::all::ButtonKind::NonLink { custom_id, .. } => Some(custom_id.as_str()),
                _ => None,
            },
            ActionRowComponent::SelectMenu(m) => m.custom_id.as_deref(),
            _ => None,
        })
        .filter_map(custom_id::parse)
        .map(|id| (id.token, id.question))
        .collect()
}

/// An interaction that passed admission.
struct Admitted<K> {
    id: CustomId<K>,
    req: Request,
    /// The message (of the question's own or one of its copies) that was used.
    post: Post,
    /// The request's other outbox rows: copies to edit when this one wins.
    others: Vec<Post>,
    route: ResolvedRoute,
    actor: Actor,
}

/// Why an interaction changes nothing: its audit action, the ephemeral text, and what it was
/// about when that is known.
struct Refusal {
    action: AuditAction,
    text: String,
    /// The request's key and id.
    about: Option<(i64, String)>,
    idx: Option<usize>,
}

impl Refusal {
    fn new(action: AuditAction, text: impl Into<String>) -> Refusal {
        Refusal {
            action,
            text: text.into(),
            about: None,
            idx: None,
        }
    }

    fn about(mut self, req: &Request, idx: usize) -> Refusal {
        self.about = Some((req.key, req.request_id.clone()));
        self.idx = Some(idx);
        self
    }
}

const UNKNOWN: &str = "This question is no longer known to askrelay; nothing was recorded.";
/// An update-message callback (type 7) as JSON without `data.attachments`, so that the message
/// keeps the attachments it was posted with (the request's context).
fn update_keeping_attachments(resp: &CreateInteractionResponse) -> serde_json::Value {
    let mut body = serde_json::to_value(resp).unwrap_or_default();
    if let Some(data) = body
        .get_mut("data")
        .and_then(serde_json::Value::as_object_mut)
    {
        data.remove("attachments");
    }
    body
}

/// Whether an update (type 7) in reply to an interaction from message `clicked` edits `post`:
/// not when the interaction came from a copy of it that was never recorded (an interaction
/// that names no message is taken as from the recorded one).
fn post_clicked(post: &Post, clicked: Option<&str>) -> bool {
    clicked.is_none_or(|m| post.message.as_deref() == Some(m))
}

/// The reply when the store refused or failed a write, naming the cause's class (never its
/// text, which may carry paths or URLs): one line.
fn not_saved(cause: &str) -> String {
    let lower = cause.to_ascii_lowercase();
    let class = if [
        "locked",
        "busy",
        "lock timeout",
        "statement timeout",
        "timed out",
    ]
    .iter()
    .any(|w| lower.contains(w))
    {
        "askrelay's database was busy"
    } else {
        "askrelay's database failed"
    };
    format!("Your answer could not be saved, try again ({class}). Nothing was recorded.")
}

/// The follow-up when a form was due but the interaction had to be deferred first (a form can
/// only be the first response).
const FORM_TOO_LATE: &str =
    "askrelay was too slow to open the form (its database was busy); use the button again.";

impl Handler {
    /// Answers an interaction with what `work` (admission and the action, which may wait on
    /// the store) replies: as its callback when it is in time, else deferred and followed up
    /// (see the module comment).
    async fn answer(&self, who: Responder<'_>, work: impl std::future::Future<Output = Reply>) {
        let deadline = std::time::Duration::from_millis(self.config.discord.callback_timeout_ms);
        let (id, token) = who.id_and_token();
        // The follow-ups name the application; the interaction says which it is.
        self.rest.http.set_application_id(who.application());
        let answered = self
            .rest
            .in_time_or_defer(
                deadline,
                id,
                token,
                &CreateInteractionResponse::Acknowledge,
                work,
            )
            .await;
        match answered {
            Timely::InTime(reply) => self.respond(who, reply).await,
            Timely::Deferred(reply, deferred) => self.follow_up(who, reply, deferred.is_ok()).await,
        }
    }

    /// The reply to an interaction already deferred (type 6): a message change goes as an
    /// outbox edit of askrelay's own message, anything private as an ephemeral follow-up.
    /// `deferred`: whether the deferral reached Discord (if not, the token is no use, and only
    /// the edits go).
    async fn follow_up(&self, who: Responder<'_>, reply: Reply, deferred: bool) {
        let deadline = std::time::Duration::from_millis(self.config.discord.callback_timeout_ms);
        let (_, token) = who.id_and_token();
        let (text, rows) = match reply {
            // Only a draft is acknowledged without a change; a slow one says that it was
            // saved, so that the person knows Submit will send it.
            Reply::Ack => (DRAFT_SAVED.to_owned(), Vec::new()),
            Reply::Update(won) => {
                let (outcome, post, req) = *won;
                self.outbox
                    .spawn_edit(&self.ctx, &req, &post, outcome, Some(EditState::Settled));
                return;
            }
            Reply::Refresh(shown) => {
                let (outcome, post, req) = *shown;
                self.outbox
                    .spawn_edit(&self.ctx, &req, &post, outcome, None);
                return;
            }
            Reply::Tell(text) => (text, Vec::new()),
            Reply::Modal(_) => (FORM_TOO_LATE.to_owned(), Vec::new()),
            Reply::Preview(text, rows) => (text, rows),
        };
        if !deferred {
            tracing::warn!("a private reply was lost: the interaction could not be deferred");
            return;
        }
        let message = serenity::builder::CreateInteractionResponseFollowup::new()
            .content(render::truncate_md(&text, render::CONTENT_MAX))
            .components(rows)
            .allowed_mentions(serenity::builder::CreateAllowedMentions::new());
        if let Err(f) = self.rest.follow_up(deadline, token, message).await {
            tracing::warn!(error = %f.message(), "cannot send the follow-up of a deferred interaction");
        }
    }

    async fn respond(&self, ci_or_mi: Responder<'_>, reply: Reply) {
        let update = matches!(reply, Reply::Update(..) | Reply::Refresh(..));
        let (resp, edited) = match reply {
            Reply::Ack => (CreateInteractionResponse::Acknowledge, None),
            Reply::Refresh(shown) => (
                CreateInteractionResponse::UpdateMessage(shown.0.update()),
                None,
            ),
            Reply::Update(won) => (
                CreateInteractionResponse::UpdateMessage(won.0.update()),
                Some(won),
            ),
            Reply::Tell(text) => (
                CreateInteractionResponse::Message(
                    CreateInteractionResponseMessage::new()
                        .content(render::truncate_md(&text, render::CONTENT_MAX))
                        .ephemeral(true)
                        .allowed_mentions(serenity::builder::CreateAllowedMentions::new()),
                ),
                None,
            ),
            Reply::Modal(m) => (CreateInteractionResponse::Modal(m), None),
            Reply::Preview(text, rows) => (
                CreateInteractionResponse::Message(
                    CreateInteractionResponseMessage::new()
                        .content(text)
                        .components(rows)
                        .ephemeral(true)
                        .allowed_mentions(serenity::builder::CreateAllowedMentions::new()),
                ),
                None,
            ),
        };
        // The message the interaction came from, which an update (type 7) edits.
        let clicked = match &ci_or_mi {
            Responder::Component(ci) => Some(ci.message.id.to_string()),
            Responder::Modal(mi) => mi.message.as_ref().map(|m| m.id.to_string()),
        };
        let http = &self.rest.http;
        // A callback must land within Discord's 3 s: one that hangs is given up on in time for
        // the fallback below.
        let deadline = std::time::Duration::from_millis(self.config.discord.callback_timeout_ms);
        let rest = &self.rest;
        let sent = match (ci_or_mi, update) {
            // serenity writes `"attachments": []` into every update, which would strip the
            // context files off the message; left out, Discord keeps them.
            (Responder::Component(ci), true) => {
                let body = update_keeping_attachments(&resp);
                rest.respond(
                    deadline,
                    ci.id,
                    &ci.token,
                    http.create_interaction_response(ci.id, &ci.token, &body, Vec::new()),
                )
                .await
            }
            (Responder::Modal(mi), true) => {
                let body = update_keeping_attachments(&resp);
                rest.respond(
                    deadline,
                    mi.id,
                    &mi.token,
                    http.create_interaction_response(mi.id, &mi.token, &body, Vec::new()),
                )
                .await
            }
            (Responder::Component(ci), false) => {
                rest.respond(deadline, ci.id, &ci.token, ci.create_response(http, resp))
                    .await
            }
            (Responder::Modal(mi), false) => {
                rest.respond(deadline, mi.id, &mi.token, mi.create_response(http, resp))
                    .await
            }
        };
        match (sent, edited) {
            (Ok(()), Some(won)) if post_clicked(&won.1, clicked.as_deref()) => {
                let (_, post, req) = *won;
                if let Err(e) = self
                    .ctx
                    .record_edit(req.key, &post, EditState::Settled)
                    .await
                {
                    record_edit_failed(&e);
                }
            }
            (Ok(()), Some(won)) => {
                // The click came from an unrecorded copy of the message (see `admit`): the
                // update edited the copy, and the recorded message still asks.
                let (outcome, post, req) = *won;
                self.outbox
                    .spawn_edit(&self.ctx, &req, &post, outcome, Some(EditState::Settled));
            }
            (Err(f), edited) => {
                tracing::warn!(error = %f.message(), update, "cannot answer the interaction");
                // The answer is stored; the message still shows the question: edit it instead.
                if let Some(won) = edited {
                    let (outcome, post, req) = *won;
                    self.outbox.spawn_edit(
                        &self.ctx,
                        &req,
                        &post,
                        outcome,
                        Some(EditState::Settled),
                    );
                }
            }
            _ => {}
        }
    }

    async fn refuse(&self, origin: &Origin<'_>, r: Refusal) -> Reply {
        self.ctx
            .refuse(AuditEntry {
                request_key: r.about.as_ref().map(|a| a.0),
                request_id: r.about.map(|a| a.1),
                question_idx: r.idx,
                source: Source::Discord,
                actor: Some(describe(origin.user)),
                action: r.action,
                detail: Some(format!(
                    "custom_id {:?} in channel {} message {}",
                    Escaped(origin.custom_id),
                    origin.channel,
                    origin.message.map_or("none".into(), |m| m.to_string())
                )),
                accepted: false,
            })
            .await;
        Reply::Tell(r.text)
    }

    /// The checks every interaction goes through (see the module comment).
    async fn admit<K: Kind>(&self, o: &Origin<'_>) -> Result<Admitted<K>, Refusal> {
        if o.user.bot {
            return Err(Refusal::new(
                AuditAction::Bot,
                "Bot accounts cannot answer askrelay questions.",
            ));
        }
        let id = CustomId::<K>::parse(o.custom_id).ok_or_else(|| {
            Refusal::new(
                AuditAction::Forged,
                "This control is not one askrelay knows; nothing was recorded.",
            )
        })?;
        let shown = match self.outbox.shown.get(&id.token) {
            Some(shown) => Ok(Some(shown)),
            None => self.ctx.by_token(&id.token).await.map(|found| {
                found.map(|(req, posts)| {
                    if req.status == Status::Pending {
                        self.outbox.shown.insert(req.clone(), posts.clone());
                    }
                    Arc::new((req, posts))
                })
            }),
        };
        let (req, posts) = match shown {
            Ok(Some(found)) => (found.0.clone(), found.1.clone()),
            Ok(None) => return Err(Refusal::new(AuditAction::Stale, UNKNOWN)),
            Err(e) => {
                tracing::error!(error = %format!("{e:#}"), "cannot read a request for an interaction");
                return Err(Refusal::new(
                    AuditAction::StoreError,
                    "askrelay could not read this question, try again.",
                ));
            }
        };
        let (key, idx) = (req.key, id.question);
        // The question's message or one of its copies (never a note, which has no controls).
        let (mut mine, mut others): (Vec<Post>, Vec<Post>) = posts.into_iter().partition(|p| {
            if p.idx != idx || p.answerer != NAME || p.is_note() {
                return false;
            }
            let guild = o.guild.map(|g| g.to_string());
            match (&p.message, o.message) {
                // A preview of the clicker's own (ephemeral) in the question's channel.
                (Some(_), Some(_)) if id.action.off_message() => {
                    p.channel == o.channel.to_string() && p.guild == guild
                }
                (Some(m), Some(clicked)) => {
                    *m == clicked.to_string()
                        && p.channel == o.channel.to_string()
                        && p.guild == guild
                }
                // A message Discord confirmed a moment ago may not be recorded yet; the token
                // already binds it to this request. A DM not recorded yet: a DM (no guild) with
                // the very user it was sent to. Otherwise the channel, and the guild once known
                // (a channel belongs to one guild).
                (None, Some(_)) => match super::route::dm_user(&p.channel) {
                    Some(user) => o.guild.is_none() && o.user.id.get() == user,
                    None => {
                        p.channel == o.channel.to_string()
                            && (p.guild.is_none() || p.guild == guild)
                    }
                },
                (_, None) => false,
            }
        });
        let a_copy = o.ours.iter().any(|(t, q)| *t == id.token && *q == idx);
        if mine.is_empty() && a_copy && o.message.is_some() {
            // A copy this bot posted of this very question (its controls are this question's)
            // but could not record: a leader that was frozen or cut off between its post and
            // the record, whose successor posted the question again
            // (without Discord's nonce de-duplication, two messages). The click is as good as
            // one on the recorded message of the same channel, which is the one edited.
            let guild = o.guild.map(|g| g.to_string());
            let (copies, rest): (Vec<Post>, Vec<Post>) = others.into_iter().partition(|p| {
                p.idx == idx
                    && p.answerer == NAME
                    && !p.is_note()
                    && p.message.is_some()
                    && p.channel == o.channel.to_string()
                    && p.guild == guild
            });
            if !copies.is_empty() {
                tracing::info!(key, question = idx, message = ?o.message, "a click on an unrecorded copy of a question's message");
            }
            mine = copies;
            others = rest;
        }
        if mine.len() > 1 {
            // Two rows in one channel, one not recorded yet: the recorded one is the match.
            mine.sort_by_key(|p| p.message.is_none());
        }
        let Some(post) = mine.into_iter().next() else {
            return Err(Refusal::new(AuditAction::Stale, UNKNOWN).about(&req, idx));
        };
        let q = &req.questions[idx];
        if let Some(i) = id.action.option() {
            if i >= q.options.len() {
                return Err(Refusal::new(
                    AuditAction::Forged,
                    "This button does not match any option.",
                )
                .about(&req, idx));
            }
        }
        let route = route::of_request(&self.config, &req);
        let roles: Vec<u64> = o
            .member
            .map(|m| m.roles.iter().map(|r| r.get()).collect())
            .unwrap_or_default();
        let now = crate::domain::request::now_ms();
        if !route.allows_at(o.user.id.get(), &roles, req.created_at_ms, now) {
            return Err(Refusal::new(AuditAction::Denied, "You are not allowed to answer this question. Ask an admin to add you (or one of your roles) to the route's allowed_user_ids or allowed_role_ids.").about(&req, idx));
        }
        // Who answered this question, and when, tells the late clicker more than "ended".
        if let Some(Some(a)) = req.answers.get(idx) {
            return Err(Refusal::new(AuditAction::Late, already(q, a)).about(&req, idx));
        }
        if req.status != Status::Pending {
            let why = match (req.status, req.error()) {
                (Status::Answered, _) => "This request has already been answered.".to_owned(),
                (status, Some(e)) => format!(
                    "This request has ended ({}): {}",
                    status.as_str(),
                    render::inert(&e.message)
                ),
                (status, None) => format!("This request has ended ({}).", status.as_str()),
            };
            return Err(Refusal::new(AuditAction::Late, why).about(&req, idx));
        }
        Ok(Admitted {
            actor: Actor {
                via: Via::Discord,
                id: o.user.id.to_string(),
                name: o.user.name.clone(),
                note: None,
            },
            id,
            req,
            post,
            others,
            route,
        })
    }

    async fn on_component(&self, ci: ComponentInteraction) {
        // A batch control is not tied to one request: its requests are checked one by one.
        if let Ok(batch) = ci.data.custom_id.parse::<super::batch::BatchId>() {
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
                self.mark_draft(key, idx, &user, matches!(reply, Reply::Ack));
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
            (Action::Grant(i), _) => match grant_settlement(&a.route, i) {
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
                let command = a.req.votes[idx]
                    .iter()
                    .rev()
                    .find_map(|v| v.terms.as_ref().and_then(|t| t.edited.clone()))
                    .unwrap_or_else(|| asked.to_owned());
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
                let waiting = self
                    .patterns
                    .lock()
                    .unwrap()
                    .take(&a.req.token, ci.user.id.get());
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
                let Some(mut settlement) = grant_settlement(&a.route, g) else {
                    return self
                        .refuse(
                            origin,
                            Refusal::new(AuditAction::Forged, NO_SUCH_GRANT).about(&a.req, idx),
                        )
                        .await;
                };
                if let Some(t) = settlement.terms.as_mut().and_then(|t| t.grant.as_mut()) {
                    t.pattern = Some(pattern);
                }
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

    /// Opens `modal` for the clicker, audited as opened (`open_modal`).
    async fn open_modal(
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
    async fn open_confirm(
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

    /// "Submit with note…" with a label in the draft that needs the typed word: the note's
    /// form has no room for the word, so it is refused and Submit (which asks for it) named.
    async fn note_needs_word(
        &self,
        origin: &Origin<'_>,
        a: &Admitted<Action>,
        user: &str,
    ) -> Option<Reply> {
        let idx = a.id.question;
        let q = &a.req.questions[idx];
        let draft = match self.draft(&a.req, idx, user).await {
            Ok(s) => s,
            Err(r) => return Some(r),
        };
        let needed = a.route.policy.confirm.needed(q, &draft);
        if needed.is_empty() {
            return None;
        }
        let labels: Vec<String> = needed.iter().map(|l| render::inert(l)).collect();
        let word = a.route.policy.confirm.word.resolve(&a.req.scope);
        let text = format!(
            "{} needs typing `{word}` to confirm, and a note cannot go with it: use **Submit**, \
             which asks for the word. Nothing was recorded.",
            labels.join(", ")
        );
        Some(
            self.refuse(
                origin,
                Refusal::new(AuditAction::Forbidden, text).about(&a.req, idx),
            )
            .await,
        )
    }

    /// The confirm modal was submitted: the word, trimmed, must be the one the question shows
    /// (case matters); then it settles through the core, which checks it again.
    async fn confirmed(
        &self,
        origin: &Origin<'_>,
        mi: &ModalInteraction,
        a: Admitted<Form>,
        typed: String,
    ) -> Reply {
        let (key, idx) = (a.req.key, a.id.question);
        let word = a.route.policy.confirm.word.resolve(&a.req.scope);
        if !crate::domain::confirm::matches(word, &typed) {
            self.ctx
                .refuse(AuditEntry {
                    request_key: Some(key),
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
            return Reply::Tell(format!(
                "What you typed did not match `{word}`; nothing was recorded."
            ));
        }
        let settlement = match a.id.action {
            Form::Confirm(i) => Settlement::choice(i),
            Form::ConfirmGrant(g) => match grant_settlement(&a.route, g) {
                Some(s) => s,
                None => {
                    return self
                        .refuse(
                            origin,
                            Refusal::new(AuditAction::Forged, NO_SUCH_GRANT).about(&a.req, idx),
                        )
                        .await
                }
            },
            _ => match self.draft(&a.req, idx, &mi.user.id.to_string()).await {
                Ok(s) => s,
                Err(r) => return r,
            },
        };
        crate::crash::point("clicked");
        self.settle(a, settlement, Some(typed)).await
    }

    async fn on_modal(&self, mi: ModalInteraction) {
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
            return self
                .refuse(
                    origin,
                    Refusal::new(
                        AuditAction::EmptyModal,
                        "The answer was empty; nothing was recorded.",
                    )
                    .about(&a.req, idx),
                )
                .await;
        };
        let settlement = match a.id.action {
            Form::Other | Form::Answer => Settlement::text(text),
            Form::Note => match self.draft(&a.req, idx, &mi.user.id.to_string()).await {
                Ok(s) => Settlement {
                    custom: Some(text),
                    ..s
                },
                Err(r) => return r,
            },
            Form::Edit => {
                let asked = a
                    .req
                    .context
                    .as_deref()
                    .and_then(|c| c.approval.as_ref())
                    .map(|ap| ap.command.as_str());
                // The command as asked, unchanged, is a plain allow.
                let edited = (asked != Some(text.as_str())).then_some(text);
                Settlement {
                    selected: vec![0],
                    custom: None,
                    terms: edited.map(|e| Terms {
                        grant: None,
                        edited: Some(e),
                    }),
                }
            }
            Form::Confirm(_) | Form::ConfirmDraft | Form::ConfirmGrant(_) => {
                return self.confirmed(origin, mi, a, text).await
            }
            Form::GrantPattern => return self.preview_grant(origin, mi, a, text).await,
        };
        // An edit of a label that needs the word carries it in its second input.
        let typed = (a.id.action == Form::Edit)
            .then(|| input_value(mi, render::CONFIRM_INPUT_ID))
            .flatten();
        crate::crash::point("clicked");
        self.settle(a, settlement, typed).await
    }

    /// The grant form was submitted: the pattern must match the command asked and the length
    /// be one of the route's; then it is shown, with "Save grant", and kept until pressed.
    async fn preview_grant(
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
                } else if let Err(why) = crate::domain::grant::check_pattern(&pattern, &ap.command)
                {
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
    async fn save_grant(&self, a: Admitted<Action>, settlement: Settlement) -> Reply {
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

    /// Notes whether the person's last draft of question `idx` was saved (see
    /// [`Handler::unsaved_drafts`]).
    fn mark_draft(&self, key: i64, idx: usize, user: &str, saved: bool) {
        let mut unsaved = self.unsaved_drafts.lock().unwrap();
        let id = (key, idx, user.to_owned());
        if saved {
            unsaved.remove(&id);
        } else if unsaved.len() < MAX_UNSAVED_DRAFTS {
            unsaved.insert(id);
        }
    }

    fn draft_unsaved(&self, key: i64, idx: usize, user: &str) -> bool {
        self.unsaved_drafts
            .lock()
            .unwrap()
            .contains(&(key, idx, user.to_owned()))
    }

    /// The settlement of the person's saved selection of question `idx`, to submit; or the
    /// reply refusing it: their last selection failed to save, or it cannot be read now (never
    /// an older or an empty selection in its place).
    async fn draft(&self, req: &Request, idx: usize, user: &str) -> Result<Settlement, Reply> {
        if self.draft_unsaved(req.key, idx, user) {
            return Err(Reply::Tell(DRAFT_NOT_SAVED.into()));
        }
        let selected = self.ctx.draft(req, idx, user).await.map_err(|e| {
            tracing::error!(error = %format!("{e:#}"), "cannot read a draft");
            Reply::Tell(not_saved(&format!("{e:#}")))
        })?;
        Ok(Settlement {
            selected,
            ..Settlement::default()
        })
    }

    /// Settles through the core (first wins) and says what to answer the interaction with:
    /// the winner sees the message change to its final state.
    /// `typed`: the word typed to confirm a label of the route's `confirm_labels`.
    async fn settle<K>(
        &self,
        a: Admitted<K>,
        settlement: Settlement,
        typed: Option<String>,
    ) -> Reply {
        let (key, idx) = (a.req.key, a.id.question);
        let q = &a.req.questions[idx];
        let settled = self
            .ctx
            .settle_confirmed(&a.req, idx, settlement, a.actor.clone(), typed.as_deref())
            .await;
        // Whatever happened, what is shown of the request changed (or may have): read it again
        // at the next click.
        self.outbox.shown.forget(&a.req.token);
        match settled {
            Ok(settled) => match settled.outcome {
                SettleOutcome::Won { .. } => {
                    // The agent's `answered` line goes first; the callback has 3 s.
                    tokio::task::yield_now().await;
                    let answered: &Answered = settled.request.answers[idx]
                        .as_ref()
                        .expect("a won settlement is recorded");
                    let ctx = RenderContext::of(&settled.request, &a.route, idx);
                    let outcome = render::settled(q, &ctx, &answered_view(q, answered));
                    // Its copies elsewhere (DMs, escalation) show the answer too.
                    let copies: Vec<Post> = a
                        .others
                        .iter()
                        .filter(|p| p.idx == idx && !p.is_note() && p.message.is_some())
                        .cloned()
                        .collect();
                    self.outbox.sync_edits(&self.ctx, &settled.request, &copies);
                    Reply::Update(Box::new((outcome, a.post, settled.request)))
                }
                SettleOutcome::Voted(_) => {
                    // This copy shows the new count at once; the others follow.
                    let ctx = RenderContext::of(&settled.request, &a.route, idx);
                    let shown = render::open(q, &ctx);
                    let copies: Vec<Post> = a
                        .others
                        .iter()
                        .filter(|p| p.idx == idx && !p.is_note() && p.message.is_some())
                        .cloned()
                        .collect();
                    self.outbox
                        .show_votes(&self.ctx, &settled.request, idx, &copies);
                    Reply::Refresh(Box::new((shown, a.post, settled.request)))
                }
                SettleOutcome::AlreadyVoted(t) => Reply::Tell(format!(
                    "You already voted for this answer ({} of {} approvals); it settles when {} \
                     more choose the same.",
                    t.count,
                    t.needed,
                    t.needed.saturating_sub(t.count)
                )),
                SettleOutcome::AlreadyAnswered(prev) => Reply::Tell(already(q, &prev)),
                SettleOutcome::Ended(status) => Reply::Tell(format!(
                    "This request has ended ({}); your answer did not count.",
                    status.as_str()
                )),
                SettleOutcome::Unknown => Reply::Tell(UNKNOWN.into()),
            },
            Err(e) if e.code == crate::domain::ErrorCode::Internal => {
                tracing::warn!(
                    key,
                    question = idx,
                    "an answer could not be stored; the clicker is told to try again"
                );
                Reply::Tell(not_saved(&e.message))
            }
            Err(e) => Reply::Tell(format!(
                "Your answer was not recorded: {}",
                render::inert(&e.message)
            )),
        }
    }
}

/// The form that asks for the typed word, when `settlement` (a click's choice, or Submit's
/// draft) has a label of the route's `confirm_labels`.
/// The reply to a grant button the route no longer has.
const NO_SUCH_GRANT: &str = "This route gives no such grant (any more).";

/// "Allow for …" with the route's grant `i`: the first option (the front door's allow), with
/// the grant's terms.
fn grant_settlement(route: &ResolvedRoute, i: usize) -> Option<Settlement> {
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

/// The value of the modal's text input `id`, when it is not blank.
fn input_value(mi: &ModalInteraction, id: &str) -> Option<String> {
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

fn confirm_form(a: &Admitted<Action>, settlement: &Settlement) -> Option<Form> {
    let q = &a.req.questions[a.id.question];
    if a.route.policy.confirm.needed(q, settlement).is_empty() {
        return None;
    }
    Some(match a.id.action {
        Action::Submit => Form::ConfirmDraft,
        Action::Grant(g) => Form::ConfirmGrant(g),
        _ => Form::Confirm(*settlement.selected.first()?),
    })
}

#[derive(Clone, Copy)]
enum Responder<'a> {
    Component(&'a ComponentInteraction),
    Modal(&'a ModalInteraction),
}

impl Responder<'_> {
    fn id_and_token(&self) -> (serenity::all::InteractionId, &str) {
        match self {
            Responder::Component(ci) => (ci.id, &ci.token),
            Responder::Modal(mi) => (mi.id, &mi.token),
        }
    }

    fn application(&self) -> serenity::all::ApplicationId {
        match self {
            Responder::Component(ci) => ci.application_id,
            Responder::Modal(mi) => mi.application_id,
        }
    }
}

/// Who interacted, for the audit log: the user name and id Discord vouches for.
fn describe(user: &User) -> String {
    crate::domain::audit::actor("discord", &user.id.to_string(), Some(&user.name), None)
}

/// Why an answer to a question already settled did not count: by whom, when, and what.
pub(super) fn already(q: &crate::domain::Question, a: &Answered) -> String {
    let qa = QuestionAnswer::build(q, &a.settlement);
    let mut what = qa.selected.join(", ");
    if let Some(c) = qa.custom {
        if !what.is_empty() {
            what.push_str("; ");
        }
        what.push_str(&c);
    }
    let by = answered_view(q, a).by;
    render::truncate_md(
        &format!(
            "Already answered by {by} <t:{}:R>: {}",
            a.at_ms / 1000,
            if what.is_empty() {
                "(nothing selected)".into()
            } else {
                render::inert(&what)
            }
        ),
        1900,
    )
}

#[cfg(test)]
mod tests {
    use super::{not_saved, WaitingPatterns, MAX_WAITING_PATTERNS_PER_USER};

    #[test]
    fn one_persons_grant_previews_never_push_out_anyone_elses() {
        let mut w = WaitingPatterns::default();
        w.insert("t-alice", 1, "cargo test *".into(), 0);
        for i in 0..5_000 {
            w.insert(&format!("t-{i}"), 2, format!("p{i}"), 1);
        }
        assert_eq!(w.take("t-alice", 1), Some(("cargo test *".into(), 0)));
        // Mallory keeps only her newest.
        assert_eq!(w.0[&2].len(), MAX_WAITING_PATTERNS_PER_USER);
        assert_eq!(w.take("t-4999", 2), Some(("p4999".into(), 1)));
        assert_eq!(w.take("t-0", 2), None);
        // A preview is taken once, by its own author, and a new one replaces an older one.
        assert_eq!(w.take("t-alice", 1), None);
        w.insert("t", 3, "a".into(), 0);
        w.insert("t", 3, "b".into(), 1);
        assert_eq!(w.take("t", 2), None);
        assert_eq!(w.take("t", 3), Some(("b".into(), 1)));
        assert!(!w.0.contains_key(&3));
    }

    #[test]
    fn not_saved_names_the_class_of_the_cause_and_never_its_text() {
        let busy = not_saved(
            "the answer could not be saved (storage error: error returned from database: (code: 5) database is locked); nothing changed, try again",
        );
        assert_eq!(
            busy,
            "Your answer could not be saved, try again (askrelay's database was busy). Nothing was recorded."
        );
        assert!(not_saved("canceling statement due to lock timeout").contains("was busy"));
        let failed = not_saved("disk I/O error at /var/lib/askrelay/askrelay.db");
        assert!(failed.contains("askrelay's database failed"), "{failed}");
        assert!(!failed.contains("/var/lib"), "{failed}");
        assert_eq!(failed.lines().count(), 1);
    }
}
