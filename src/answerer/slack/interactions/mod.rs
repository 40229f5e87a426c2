//! The one interaction handler for Slack (docs/slack.md, "Interactions"): block_actions (a
//! button, a select) and view_submission (a form, or a grant's preview pushed over its form;
//! its ack may carry a `response_action`), whether they come through a
//! Socket Mode envelope ([`super::socket`]) or later the HTTP Events API.
//!
//! It reads everything from the action_id (or the form's callback_id) and the store, so it
//! works for messages posted before a restart. Admission, in order (`admit.rs`): a control
//! askrelay made; a request whose token it carries; the very message and channel askrelay
//! posted that question in; an option the question has; a person the route allows; a request
//! still pending and a question still open. The decisions past admission are the chat layer's
//! ([`crate::answerer::chat`]): `press.rs` turns a press into its terms and renders what it
//! decides, `forms.rs` does the same for a form.
//!
//! **The ack comes after the commit.** slack-morphism acknowledges the envelope when the
//! handler returns, and the handler returns once the press is stored (or refused and audited).
//! Slack wants the ack within 3 s: past [`ACK_AFTER`] the envelope is acknowledged anyway and
//! the work goes on; what the person is told comes, as always, as an ephemeral message through
//! the interaction's `response_url` (a form's, which has none, through `chat.postEphemeral`)
//! once the store answered. A form is opened (`views.open`) before the ack, while the
//! interaction's `trigger_id` is valid. The winning press's edit of the message (`chat.update`)
//! goes through the outbox in the background, recorded once Slack confirmed it.
//!
//! `/askrelay` is `command.rs`'s: the same command as Discord's, through the chat layer; the
//! batch its `pending` offers ("Allow selected", "Deny selected", whose action_ids name no
//! request) is `batch.rs`'s, dispatched before admission.
//!
//! Every press, refusal and late press is audited as Discord's are (the same actions; the
//! actor is `slack:USER name=NAME`, the source `slack`).

mod admit;
mod batch;
pub(super) mod command;
mod forms;
mod press;

pub(crate) use command::CommandPayload;

use super::outbox::Outbox;
use super::platform::Groups;
use super::route::SlackRoute;
use super::web::Web;
use crate::answerer::chat::press::Kept;
use crate::answerer::chat::vote::{self, not_saved, Settle};
use crate::answerer::chat::Person;
use crate::answerer::discord::custom_id::CustomId;
use crate::config::Config;
use crate::domain::request::{AuditAction, Post, Request};
use crate::domain::text::Escaped;
use crate::domain::{AnswererContext, Settlement};
use slack_morphism::prelude::*;
use std::sync::Arc;
use std::time::Duration;

/// How long the handler may work before the envelope is acknowledged anyway (Slack's window is
/// 3 s; the rest is for the ack's way back).
pub const ACK_AFTER: Duration = Duration::from_millis(2500);

/// The Slack interaction handler of one term of Slack work.
pub(crate) struct Handler {
    pub config: Arc<Config>,
    pub web: Arc<Web>,
    pub outbox: Arc<Outbox>,
    pub groups: Arc<Groups>,
    pub ctx: AnswererContext,
    /// What presses leave for later presses, kept for the term only (multi-select drafts whose
    /// save failed, so that Submit never sends an older selection).
    pub kept: Arc<Kept>,
}

/// Where a press came from, as Slack says.
struct Origin {
    /// The Slack user id and name.
    user: String,
    name: String,
    /// The channel and the message (`ts`) of the control: for a form, of the message that
    /// opened it.
    channel: Option<String>,
    ts: Option<String>,
    /// The action_id (or the form's callback_id).
    control: String,
}

/// A press that passed admission.
struct Admitted<K> {
    id: CustomId<K>,
    req: Request,
    /// The question's message that was pressed.
    post: Post,
    /// Every outbox row of the request (its other messages are edited when it settles).
    posts: Vec<Post>,
    route: SlackRoute,
    person: Person,
}

/// Why a press changes nothing: its audit action, the ephemeral text, and the request and
/// question it was about, when known.
struct Refusal {
    action: AuditAction,
    text: String,
    about: Option<(i64, String, usize)>,
}

impl Refusal {
    fn new(action: AuditAction, text: impl Into<String>) -> Refusal {
        Refusal {
            action,
            text: text.into(),
            about: None,
        }
    }

    fn about(mut self, req: &Request, idx: usize) -> Refusal {
        self.about = Some((req.key, req.request_id.clone(), idx));
        self
    }
}

/// What the person who pressed is told: nothing (the message shows it), a private line, or a
/// private message with blocks (the text is its notification's).
enum Reply {
    Quiet,
    Tell(String),
    Show(String, Vec<SlackBlock>),
}

const UNKNOWN: &str = "This question is no longer known to askrelay; nothing was recorded.";

impl Handler {
    /// The person Slack vouches for, with every user group of every route they are in: for a
    /// command or a batch, which span routes.
    async fn person_anywhere(&self, user: &str, name: &str) -> Person {
        let groups: Vec<String> = super::route::all(&self.config)
            .iter()
            .flat_map(|r| r.allowed_usergroup_ids.iter().cloned())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let groups = self.groups.of(&self.web, user, &groups).await;
        super::platform::person(&self.config, user, name, groups)
    }

    /// An interaction, answered within Slack's window: what the envelope's ack carries
    /// (always nothing today: replies are ephemeral messages, forms are opened by `views.open`).
    pub async fn on_interaction(
        self: &Arc<Self>,
        ev: SlackInteractionEvent,
    ) -> SlackInteractionResponse {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let me = self.clone();
        // The work runs on its own, so that a slow store does not hold the ack past Slack's
        // window; the person is told through response_url whenever it ends.
        self.ctx.spawn(async move {
            let r = match ev {
                SlackInteractionEvent::BlockActions(a) => me.on_actions(a).await,
                SlackInteractionEvent::ViewSubmission(s) => me.on_submission(s).await,
                other => {
                    tracing::debug!(kind = ?std::mem::discriminant(&other), "ignoring a Slack interaction askrelay does not use");
                    SlackInteractionResponse::Empty
                }
            };
            let _ = tx.send(r);
        });
        match tokio::time::timeout(ACK_AFTER, rx).await {
            Ok(Ok(r)) => r,
            Ok(Err(_)) => SlackInteractionResponse::Empty,
            Err(_) => {
                tracing::warn!(
                    "a Slack interaction took longer than {} ms (the store is slow); acknowledged, \
                     the person is told through response_url once it is done",
                    ACK_AFTER.as_millis()
                );
                SlackInteractionResponse::Empty
            }
        }
    }

    /// Tells the person who pressed, through the interaction's `response_url`, in the
    /// background (never delays the ack).
    fn tell_via(&self, response_url: Option<SlackResponseUrl>, reply: Reply) {
        let (text, blocks) = match reply {
            Reply::Quiet => return,
            Reply::Tell(text) => (text, None),
            Reply::Show(text, blocks) => (text, Some(blocks)),
        };
        let Some(url) = response_url else {
            tracing::warn!("a Slack interaction without response_url: the person cannot be told");
            return;
        };
        let web = self.web.clone();
        self.ctx.spawn(async move {
            if let Err(f) = web.respond(&url, &text, blocks.as_deref()).await {
                tracing::warn!(
                    error = f.message(),
                    "cannot send an ephemeral reply to Slack"
                );
            }
        });
    }

    /// Tells `user` privately in `channel` (`chat.postEphemeral`), in the background.
    fn tell_in(&self, channel: &str, user: &str, reply: Reply) {
        let (Reply::Tell(text) | Reply::Show(text, _)) = reply else {
            return;
        };
        let web = self.web.clone();
        let (channel, user) = (channel.to_owned(), user.to_owned());
        self.ctx.spawn(async move {
            if let Err(f) = web.ephemeral(&channel, &user, &text).await {
                tracing::warn!(
                    error = f.message(),
                    "cannot send an ephemeral message in Slack"
                );
            }
        });
    }

    /// Settles through the core (first wins, the route's policy) and says what to tell the
    /// person; the winner's messages are edited to the outcome by the outbox.
    async fn settle<K>(
        &self,
        a: Admitted<K>,
        settlement: Settlement,
        typed: Option<String>,
    ) -> Reply {
        let idx = a.id.question;
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
        match settled {
            Settle::Won(request) => {
                self.outbox
                    .sync_edits_after(&self.ctx, &request, &a.posts, Some(idx));
                Reply::Quiet
            }
            Settle::Voted(request, t) => {
                self.outbox.show_votes(&self.ctx, &request, idx, &a.posts);
                Reply::Tell(format!(
                    "Your vote counted ({} of {} approvals); it settles when {} more choose the same.",
                    t.count,
                    t.needed,
                    t.needed.saturating_sub(t.count)
                ))
            }
            Settle::AlreadyVoted(t) => Reply::Tell(format!(
                "You already voted for this answer ({} of {} approvals).",
                t.count, t.needed
            )),
            Settle::AlreadyAnswered(prev) => Reply::Tell(super::render::already(q, &prev)),
            Settle::Ended(status) => Reply::Tell(format!(
                "This request has ended ({}); your answer did not count.",
                status.as_str()
            )),
            Settle::Unknown => Reply::Tell(UNKNOWN.into()),
            Settle::NotSaved(cause) => {
                tracing::warn!(request_id = %Escaped(&a.req.request_id), question = idx, "a Slack answer could not be stored; the person is told to try again");
                Reply::Tell(not_saved(&cause))
            }
            Settle::Refused(m) => Reply::Tell(format!(
                "Your answer was not recorded: {}",
                super::render::escape(&m)
            )),
        }
    }
}
