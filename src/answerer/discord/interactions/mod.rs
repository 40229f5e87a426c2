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
//!
//! The decisions are the chat layer's ([`crate::answerer::chat`]): the handler finds the
//! request and the message a press belongs to, turns the press into the chat layer's terms
//! (a [`crate::answerer::chat::Person`], an option, a form's text), and renders what it
//! decides as Discord's text, components and callbacks.
//!
//! The handler's parts, by what they make: this file holds the entry ([`Handler`]'s
//! `raw_event`), the pipeline's types ([`Origin`], [`Admitted`], [`Refusal`], [`Reply`]) and
//! the settling through the core; `admit.rs` admission and refusal; `respond.rs` the callback or
//! the deferral and follow-up; `components.rs` clicks and selects (and multi-select drafts);
//! `modals.rs` the forms, opened and submitted (and the typed word that confirms a label);
//! `grants.rs` the grants a person writes (preview, then "Save grant"); `batch.rs` the batch
//! controls of `/askrelay pending`.

mod admit;
mod batch;
mod components;
mod grants;
mod modals;
mod respond;

use super::commands::Commands;
use super::custom_id::CustomId;
use super::gateway::Gateway;
use super::outbox::Outbox;
use super::render::{self, answered_view, RenderContext};
use super::rest::Rest;
use super::route::ResolvedRoute;
use crate::answerer::chat::admit::{self as chat_admit, Refused};
use crate::answerer::chat::press::Kept;
use crate::answerer::chat::vote::{self, not_saved, Settle};
use crate::answerer::chat::Person;
use crate::config::Config;
use crate::domain::request::{Answered, AuditAction, AuditEntry, Post, Request, Source};
use crate::domain::text::Escaped;
use crate::domain::{AnswererContext, QuestionAnswer, Settlement};
use async_trait::async_trait;
use serenity::all::{
    ChannelId, Context, Event, GuildId, Interaction, Member, MessageId, RawEventHandler, User,
};
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
    /// What presses leave for later presses, kept for the term only (a restart forgets them):
    /// grant patterns shown in a preview and not saved yet (the person is told to write the
    /// pattern again), and multi-select drafts whose save failed ("Submit" is refused until a
    /// save succeeds, so that it never submits an older or empty selection in its place).
    pub kept: Arc<Kept>,
}

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

/// An interaction that passed admission.
struct Admitted<K> {
    id: CustomId<K>,
    req: Request,
    /// The message (of the question's own or one of its copies) that was used.
    post: Post,
    /// The request's other outbox rows: copies to edit when this one wins.
    others: Vec<Post>,
    route: ResolvedRoute,
    /// Who pressed, as the chat layer knows them.
    person: Person,
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

    /// The chat layer's refusal of a press on question `q`, as Discord says it.
    fn of(r: crate::answerer::chat::admit::Refusal, q: &crate::domain::Question) -> Refusal {
        let text = match r.why {
            Refused::Bot => BOT.to_owned(),
            Refused::NoSuchOption => "This button does not match any option.".to_owned(),
            Refused::NotAllowed => "You are not allowed to answer this question. Ask an admin to \
                                    add you (or one of your roles) to the route's \
                                    allowed_user_ids or allowed_role_ids."
                .to_owned(),
            // Who answered this question, and when, tells the late clicker more than "ended".
            Refused::Answered(a) => already(q, &a),
            Refused::Ended {
                withdrawn: Some(reason),
                ..
            } => chat_admit::withdrawn_text(reason).to_owned(),
            Refused::Ended { status, error, .. } => match (status, error) {
                (crate::domain::Status::Answered, _) => {
                    "This request has already been answered.".to_owned()
                }
                (status, Some(e)) => format!(
                    "This request has ended ({}): {}",
                    status.as_str(),
                    render::inert(&e)
                ),
                (status, None) => format!("This request has ended ({}).", status.as_str()),
            },
        };
        Refusal::new(r.action, text)
    }

    fn about(mut self, req: &Request, idx: usize) -> Refusal {
        self.about = Some((req.key, req.request_id.clone()));
        self.idx = Some(idx);
        self
    }
}

const UNKNOWN: &str = "This question is no longer known to askrelay; nothing was recorded.";

/// The reply to a press by a bot account.
const BOT: &str = "Bot accounts cannot answer askrelay questions.";

/// The reply to a grant button the route no longer has.
const NO_SUCH_GRANT: &str = "This route gives no such grant (any more).";

impl Handler {
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
        let settled = vote::settle(
            &self.ctx,
            &a.req,
            idx,
            settlement,
            a.person.actor.clone(),
            typed.as_deref().map(|w| (&a.route.policy, w)),
        )
        .await;
        // Whatever happened, what is shown of the request changed (or may have): read it again
        // at the next click.
        self.outbox.shown.forget(&a.req.token);
        match settled {
            Settle::Won(request) => {
                // The agent's `answered` line goes first; the callback has 3 s.
                tokio::task::yield_now().await;
                let answered: &Answered = request.answers[idx]
                    .as_ref()
                    .expect("a won settlement is recorded");
                let ctx = RenderContext::of(&request, &a.route, idx);
                let outcome = render::settled(q, &ctx, &answered_view(q, answered));
                // Its copies elsewhere (DMs, escalation) show the answer too.
                let copies: Vec<Post> = a
                    .others
                    .iter()
                    .filter(|p| p.idx == idx && !p.is_note() && p.message.is_some())
                    .cloned()
                    .collect();
                self.outbox.sync_edits(&self.ctx, &request, &copies);
                Reply::Update(Box::new((outcome, a.post, *request)))
            }
            Settle::Voted(request, _) => {
                // This copy shows the new count at once; the others follow.
                let ctx = RenderContext::of(&request, &a.route, idx);
                let shown = render::open(q, &ctx);
                let copies: Vec<Post> = a
                    .others
                    .iter()
                    .filter(|p| p.idx == idx && !p.is_note() && p.message.is_some())
                    .cloned()
                    .collect();
                self.outbox.show_votes(&self.ctx, &request, idx, &copies);
                Reply::Refresh(Box::new((shown, a.post, *request)))
            }
            Settle::AlreadyVoted(t) => Reply::Tell(format!(
                "You already voted for this answer ({} of {} approvals); it settles when {} \
                 more choose the same.",
                t.count,
                t.needed,
                t.needed.saturating_sub(t.count)
            )),
            Settle::AlreadyAnswered(prev) => Reply::Tell(already(q, &prev)),
            Settle::Ended(status) => Reply::Tell(format!(
                "This request has ended ({}); your answer did not count.",
                status.as_str()
            )),
            Settle::Unknown => Reply::Tell(UNKNOWN.into()),
            Settle::NotSaved(cause) => {
                tracing::warn!(
                    key,
                    question = idx,
                    "an answer could not be stored; the clicker is told to try again"
                );
                Reply::Tell(not_saved(&cause))
            }
            Settle::Refused(message) => Reply::Tell(format!(
                "Your answer was not recorded: {}",
                render::inert(&message)
            )),
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
    let view = answered_view(q, a);
    // "Already answered in the terminal by alice (uid 1000) …": who, and where.
    let by = match view.place {
        Some(place) => format!("{place} by {}", view.by),
        None => format!("by {}", view.by),
    };
    render::truncate_md(
        &format!(
            "Already answered {by} <t:{}:R>: {}",
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
