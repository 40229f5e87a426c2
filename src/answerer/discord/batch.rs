//! Batches from Discord (docs/approvals.md, "Batches"): `/askrelay pending` offers the pending
//! approvals its user may answer in a select menu, with "Allow selected" and "Deny selected".
//!
//! - A *pending approval* is a pending request with one open single-select question that has
//!   an option labelled "Deny" and an allow option, "Allow" or else "Allow once" (the labels of
//!   the front doors: `askrelay hook`, `askrelay approve`, Claude Code's permission requests).
//!   "Allow selected" picks the allow option, "Deny selected" picks "Deny".
//! - The menu lists at most 25 of them (Discord's limit), those the listing shows this person
//!   and that they may answer now: the route's allowlists (widened by escalation steps that
//!   began and by its DMs, as for a click), and not their own request on a route that excludes
//!   the requester.
//! - The selection lives in the message, not in memory: each choice in the menu is answered by
//!   updating the (ephemeral) message with the chosen options marked as its defaults, and a
//!   button reads the selection back from the message it is on. It survives a restart, and
//!   nothing is answered before a button is pressed.
//! - On a button, each selected request goes through the checks of a click on its own message
//!   (known token, listed to this person here, an approval, the route's allowlists, still
//!   pending), then [`crate::domain::AnswererContext::settle`] (quorum, requester exclusion, first
//!   wins) settles and audits it, and its messages are edited. The private reply lists what was
//!   done and what was refused, and why, one request a line, within Discord's 2000 characters.
//! - Every control is answered within Discord's 3 s however long the store takes: a selection
//!   or a refusal whose audit row is not written within [`super::rest::DEFER_AFTER`] is
//!   acknowledged first (type 6) and then shown through `@original` or told in an ephemeral
//!   follow-up; a batch that is slow to decide is deferred as a private reply (type 5) and its
//!   reply edited in.
//!
//! The custom_ids are not tied to one request: `ar:batch:pick`, `ar:batch:allow` and
//! `ar:batch:deny`. The request tokens are the menu's option values (20 characters each).

use super::commands::Caller;
use super::interactions::{already, Handler};
use super::render::{self, inert, inert_plain, one_line, truncate};
use super::rest::Timely;
use super::route;
use super::NAME;
use crate::config::Config;
use crate::domain::approval::{self, is_approval, Verdict, ALLOW_LABELS};
use crate::domain::clock::now_ms;
use crate::domain::request::{Actor, AuditAction, AuditEntry, Request, Source, Via};
use crate::domain::{SettleOutcome, Settlement, Status};
use serenity::all::{
    ActionRow, ActionRowComponent, ButtonStyle, ComponentInteraction, ComponentInteractionDataKind,
    CreateActionRow, CreateButton, CreateInteractionResponse, CreateInteractionResponseFollowup,
    CreateInteractionResponseMessage, CreateSelectMenu, CreateSelectMenuKind,
    CreateSelectMenuOption, EditInteractionResponse,
};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// At most this many requests in one batch: a select menu's options.
pub const BATCH_MAX: usize = render::SELECT_OPTIONS_MAX;
/// How much of the agent's name and of the question an option shows.
const AGENT_SHOWN: usize = 40;

/// What a batch control does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchId {
    /// The select menu of approvals: its values are request tokens.
    Pick,
    /// "Allow selected" or "Deny selected".
    Decide(Verdict),
}

impl Verdict {
    fn button(self) -> &'static str {
        match self {
            Verdict::Allow => "Allow selected",
            Verdict::Deny => "Deny selected",
        }
    }

    fn done(self) -> &'static str {
        match self {
            Verdict::Allow => "allowed",
            Verdict::Deny => "denied",
        }
    }
}

const PREFIX: &str = "ar:batch:";

impl fmt::Display for BatchId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let code = match self {
            BatchId::Pick => "pick",
            BatchId::Decide(Verdict::Allow) => "allow",
            BatchId::Decide(Verdict::Deny) => "deny",
        };
        write!(f, "{PREFIX}{code}")
    }
}

impl FromStr for BatchId {
    type Err = ();

    /// Exactly what [`BatchId`]'s `Display` writes, nothing else.
    fn from_str(s: &str) -> Result<Self, ()> {
        match s.strip_prefix(PREFIX).ok_or(())? {
            "pick" => Ok(BatchId::Pick),
            "allow" => Ok(BatchId::Decide(Verdict::Allow)),
            "deny" => Ok(BatchId::Decide(Verdict::Deny)),
            _ => Err(()),
        }
    }
}

/// The Discord person as an answer's actor.
fn actor(user: &serenity::all::User) -> Actor {
    Actor {
        via: Via::Discord,
        id: user.id.to_string(),
        name: user.name.clone(),
        note: None,
    }
}

/// Whether the menu offers `req` to `caller` at `now`: a pending approval that they may answer
/// on its route (as a click would be admitted), and not one they asked themselves on a route
/// that excludes the requester.
pub(super) fn answerable(config: &Config, req: &Request, caller: &Caller, now: i64) -> bool {
    if req.answerer.as_deref() != Some(NAME) || !is_approval(req) {
        return false;
    }
    let route = route::of_request(config, req);
    let me = Actor {
        via: Via::Discord,
        id: caller.user.to_string(),
        name: String::new(),
        note: None,
    };
    route.allows_at(caller.user, &caller.roles, req.created_at_ms, now)
        && !route
            .policy
            .refuses_requester(req, &me, &config.cluster.node())
}

/// The batch controls for these approvals (the first [`BATCH_MAX`]): the menu, then the two
/// buttons. None without approvals.
pub(super) fn menu(approvals: &[&Request]) -> Vec<CreateActionRow> {
    if approvals.is_empty() {
        return Vec::new();
    }
    let offered = &approvals[..approvals.len().min(BATCH_MAX)];
    let placeholder = if approvals.len() > offered.len() {
        format!(
            "Approvals to answer at once (the first {} of {})",
            offered.len(),
            approvals.len()
        )
    } else {
        "Approvals to answer at once".to_owned()
    };
    let options = offered.iter().map(|r| option(r)).collect();
    rows(options, placeholder)
}

/// An approval as a menu option: "deploy-42 · agent-7" above "Approve: Run `terraform apply`…",
/// as plain text (an option shows no markdown), its value the request's token.
fn option(req: &Request) -> CreateSelectMenuOption {
    let agent = req.agent().unwrap_or("an agent");
    let label = format!(
        "{} · {}",
        one_line(&req.request_id),
        truncate(&one_line(agent), AGENT_SHOWN)
    );
    let q = &req.questions[0];
    let question = match q.header.as_deref().filter(|h| !h.trim().is_empty()) {
        Some(h) => format!("{}: {}", one_line(h), one_line(&q.question)),
        None => one_line(&q.question),
    };
    let text = |s: &str| truncate(&inert_plain(s), render::SELECT_OPTION_TEXT_MAX);
    let mut o = CreateSelectMenuOption::new(text(&label), req.token.clone());
    if !question.is_empty() {
        o = o.description(text(&question));
    }
    o
}

fn rows(options: Vec<CreateSelectMenuOption>, placeholder: String) -> Vec<CreateActionRow> {
    let n = options.len() as u8;
    let select = CreateSelectMenu::new(
        BatchId::Pick.to_string(),
        CreateSelectMenuKind::String { options },
    )
    .placeholder(truncate(&placeholder, render::SELECT_PLACEHOLDER_MAX))
    .min_values(1)
    .max_values(n);
    let button = |v: Verdict, style| {
        CreateButton::new(BatchId::Decide(v).to_string())
            .label(v.button())
            .style(style)
    };
    vec![
        CreateActionRow::SelectMenu(select),
        CreateActionRow::Buttons(vec![
            button(Verdict::Allow, ButtonStyle::Success),
            button(Verdict::Deny, ButtonStyle::Danger),
        ]),
    ]
}

/// The batch menu of a message, if it has one.
fn batch_menu(components: &[ActionRow]) -> Option<&serenity::all::SelectMenu> {
    components
        .iter()
        .flat_map(|row| row.components.iter())
        .find_map(|c| match c {
            ActionRowComponent::SelectMenu(m)
                if m.custom_id.as_deref() == Some(&BatchId::Pick.to_string()) =>
            {
                Some(m)
            }
            _ => None,
        })
}

/// The message's batch controls again, with `values` (those among its options) as the menu's
/// selection. None when the message holds no batch menu.
pub(super) fn reselect(
    components: &[ActionRow],
    values: &[String],
) -> Option<Vec<CreateActionRow>> {
    let m = batch_menu(components)?;
    let options = m
        .options
        .iter()
        .map(|o| {
            let mut c = CreateSelectMenuOption::new(o.label.clone(), o.value.clone())
                .default_selection(values.contains(&o.value));
            if let Some(d) = &o.description {
                c = c.description(d.clone());
            }
            c
        })
        .collect();
    Some(rows(options, m.placeholder.clone().unwrap_or_default()))
}

/// The tokens selected in the message's batch menu (its default options), at most
/// [`BATCH_MAX`], each once, in the menu's order.
pub(super) fn selected(components: &[ActionRow]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for o in batch_menu(components).map_or(&[][..], |m| &m.options[..]) {
        if o.default && !out.contains(&o.value) && out.len() < BATCH_MAX {
            out.push(o.value.clone());
        }
    }
    out
}

/// What became of one selected request: done (what) or refused (why), as markdown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Item {
    /// The request's id (agent text, shown inert), when the request is known.
    pub request_id: Option<String>,
    pub outcome: Result<String, String>,
}

/// The batch's reply: a summary line, then one line per request, done first; cut to Discord's
/// 2000 characters with "… and N more".
pub(super) fn report(verdict: Verdict, items: &[Item]) -> String {
    let done = items.iter().filter(|i| i.outcome.is_ok()).count();
    let mut out = format!(
        "**{}**: {done} done, {} refused.",
        verdict.button(),
        items.len() - done
    );
    let mut ordered: Vec<&Item> = items.iter().filter(|i| i.outcome.is_ok()).collect();
    ordered.extend(items.iter().filter(|i| i.outcome.is_err()));
    let lines: Vec<String> = ordered
        .iter()
        .map(|i| {
            let id = i
                .request_id
                .as_deref()
                .map_or("**an unknown request**".to_owned(), |r| {
                    inert(&truncate(&one_line(r), 128))
                });
            match &i.outcome {
                Ok(what) => format!("**done** · {id} · {what}"),
                Err(why) => format!("**refused** · {id} · {why}"),
            }
        })
        .collect();
    for (n, line) in lines.iter().enumerate() {
        let more = format!("\n**… and {} more**", lines.len() - n);
        let budget = render::CONTENT_MAX - more.chars().count();
        if out.chars().count() + 1 + line.chars().count() > budget {
            out.push_str(&more);
            break;
        }
        out.push('\n');
        out.push_str(line);
    }
    out
}

/// What a batch control is answered with (see [`Handler::on_batch`]).
enum BatchStep {
    /// A private reply: a refusal, or a selection that could not be saved.
    Tell(String),
    /// The listing's controls with the selection marked as the menu's defaults.
    Show(Vec<CreateActionRow>),
    /// Allow or deny the selected requests (their tokens).
    Decide(Verdict, Vec<String>),
}

const NOT_LISTED: &str = "it is not one you are shown in this channel; nothing was recorded.";

/// Batch controls, admitted by the interaction handler before any per-request check.
impl Handler {
    pub(super) async fn on_batch(&self, ci: &ComponentInteraction, id: BatchId) {
        let timeout = Duration::from_millis(self.config.discord.callback_timeout_ms);
        // What to answer waits on the store (an audit row, a refusal's): raced against
        // Discord's 3 s like a click on a question (see the interactions module).
        self.rest.http.set_application_id(ci.application_id);
        let step = self
            .rest
            .in_time_or_defer(
                timeout,
                ci.id,
                &ci.token,
                &CreateInteractionResponse::Acknowledge,
                self.batch_step(ci, id),
            )
            .await;
        let http = &self.rest.http;
        match step {
            Timely::InTime(BatchStep::Tell(text)) => self.tell(ci, text).await,
            Timely::InTime(BatchStep::Show(rows)) => {
                let update = CreateInteractionResponse::UpdateMessage(
                    CreateInteractionResponseMessage::new().components(rows),
                );
                if let Err(f) = self
                    .rest
                    .respond(timeout, ci.id, &ci.token, ci.create_response(http, update))
                    .await
                {
                    tracing::warn!(error = %f.message(), "cannot answer a batch selection");
                }
            }
            Timely::InTime(BatchStep::Decide(verdict, tokens)) => {
                let caller = Caller::of(&self.config, &ci.user, ci.member.as_ref());
                let work = self.decide(ci, &caller, verdict, tokens);
                self.answer_in_time(ci, work).await;
            }
            // Logged where it failed; without a deferral the token is of no use.
            Timely::Deferred(_, Err(_)) => {}
            Timely::Deferred(step, Ok(())) => {
                let text = match step {
                    BatchStep::Tell(text) => text,
                    BatchStep::Show(rows) => {
                        // The listing is the interaction's own (ephemeral) message: @original.
                        let edit = EditInteractionResponse::new().components(rows);
                        let edited = self
                            .rest
                            .retry("showing a batch selection", 3, || async {
                                self.rest
                                    .call(
                                        timeout * 4,
                                        http.edit_original_interaction_response(
                                            &ci.token,
                                            &edit,
                                            Vec::new(),
                                        ),
                                    )
                                    .await
                            })
                            .await;
                        if let Err(f) = edited {
                            tracing::warn!(error = %f.message(), "cannot show a batch selection");
                        }
                        return;
                    }
                    BatchStep::Decide(verdict, tokens) => {
                        let caller = Caller::of(&self.config, &ci.user, ci.member.as_ref());
                        self.decide(ci, &caller, verdict, tokens).await
                    }
                };
                let message = CreateInteractionResponseFollowup::new()
                    .content(render::truncate_md(&text, render::CONTENT_MAX))
                    .allowed_mentions(serenity::builder::CreateAllowedMentions::new());
                if let Err(f) = self.rest.follow_up(timeout, &ci.token, message).await {
                    tracing::warn!(error = %f.message(), "cannot follow up a batch control");
                }
            }
        }
    }

    /// What a batch control is answered with, its audit row written: a refusal, the
    /// selection shown, or the selected requests to decide.
    async fn batch_step(&self, ci: &ComponentInteraction, id: BatchId) -> BatchStep {
        let mut audit = AuditEntry {
            source: Source::Discord,
            actor: Some(describe(&ci.user)),
            detail: Some(format!("{id} in channel {}", ci.channel_id)),
            ..Default::default()
        };
        if ci.user.bot {
            audit.action = AuditAction::Bot;
            self.ctx.refuse(audit).await;
            return BatchStep::Tell("Bot accounts cannot answer askrelay questions.".into());
        }
        match id {
            BatchId::Pick => {
                let values: &[String] = match &ci.data.kind {
                    ComponentInteractionDataKind::StringSelect { values } => values,
                    _ => &[],
                };
                let Some(rows) = reselect(&ci.message.components, values) else {
                    audit.action = AuditAction::Forged;
                    self.ctx.refuse(audit).await;
                    return BatchStep::Tell(
                        "This control is not one askrelay knows; nothing was recorded.".into(),
                    );
                };
                // A selection changes no request: it is audited, then shown.
                audit.action = AuditAction::Draft;
                audit.accepted = true;
                audit.detail = Some(format!(
                    "batch selection of {} request(s) in channel {}",
                    values.len(),
                    ci.channel_id
                ));
                if let Err(e) = self.ctx.record(audit).await {
                    tracing::error!(error = %format!("{e:#}"), "cannot audit a batch selection");
                    return BatchStep::Tell(
                        "askrelay could not save your selection, try again.".into(),
                    );
                }
                BatchStep::Show(rows)
            }
            BatchId::Decide(verdict) => {
                let tokens = selected(&ci.message.components);
                if tokens.is_empty() {
                    audit.action = AuditAction::Command;
                    self.ctx.refuse(audit).await;
                    return BatchStep::Tell(
                        "Choose the requests in the menu first; nothing was answered.".into(),
                    );
                }
                BatchStep::Decide(verdict, tokens)
            }
        }
    }

    /// Settles each selected request on its own and says what became of each.
    async fn decide(
        &self,
        ci: &ComponentInteraction,
        caller: &Caller,
        verdict: Verdict,
        tokens: Vec<String>,
    ) -> String {
        let mut items = Vec::with_capacity(tokens.len());
        for token in &tokens {
            items.push(self.decide_one(ci, caller, verdict, token).await);
        }
        let done = items.iter().filter(|i| i.outcome.is_ok()).count();
        // Each request's answer or refusal is audited already; this row ties them together.
        let summary = self
            .ctx
            .record(AuditEntry {
                source: Source::Discord,
                actor: Some(describe(&ci.user)),
                action: AuditAction::Command,
                detail: Some(format!(
                    "{} in channel {}: {done} done, {} refused",
                    BatchId::Decide(verdict),
                    ci.channel_id,
                    items.len() - done
                )),
                accepted: true,
                ..Default::default()
            })
            .await;
        if let Err(e) = summary {
            tracing::error!(error = %format!("{e:#}"), "cannot audit a batch");
        }
        report(verdict, &items)
    }

    /// One request of a batch: the checks of a click, then the core's settlement.
    async fn decide_one(
        &self,
        ci: &ComponentInteraction,
        caller: &Caller,
        verdict: Verdict,
        token: &str,
    ) -> Item {
        let found = if super::custom_id::is_token(token) {
            self.ctx.by_token(token).await
        } else {
            Ok(None)
        };
        let (req, posts) = match found {
            Ok(Some(found)) => found,
            Ok(None) => {
                self.refuse_one(ci, None, AuditAction::Stale, verdict).await;
                return Item {
                    request_id: None,
                    outcome: Err("it is no longer known to askrelay; nothing was recorded.".into()),
                };
            }
            Err(e) => {
                tracing::error!(error = %format!("{e:#}"), "cannot read a request for a batch");
                return Item {
                    request_id: None,
                    outcome: Err("askrelay could not read it; try again.".into()),
                };
            }
        };
        let q = &req.questions[0];
        let now = now_ms();
        let refusal = if !caller.sees(&self.config, ci.channel_id.get(), &req) {
            Some((AuditAction::Stale, NOT_LISTED.to_owned()))
        } else if req.questions.len() != 1 || q.multi_select || verdict.option(q).is_none() {
            Some((
                AuditAction::Forged,
                format!(
                    "it is not an approval with a “{}” option; answer it on its message.",
                    match verdict {
                        Verdict::Allow => ALLOW_LABELS[0],
                        Verdict::Deny => approval::DENY,
                    }
                ),
            ))
        } else if !route::of_request(&self.config, &req).allows_at(
            caller.user,
            &caller.roles,
            req.created_at_ms,
            now,
        ) {
            Some((
                AuditAction::Denied,
                "you are not allowed to answer it (the route's allowed_user_ids and \
                 allowed_role_ids)."
                    .to_owned(),
            ))
        } else if let Some(Some(a)) = req.answers.first() {
            Some((AuditAction::Late, already(q, a)))
        } else if req.status != Status::Pending {
            Some((
                AuditAction::Late,
                format!("it has ended ({}).", req.status.as_str()),
            ))
        } else {
            None
        };
        let outcome = match refusal {
            Some((action, why)) => {
                self.refuse_one(ci, Some(&req), action, verdict).await;
                Err(why)
            }
            None => self.settle_one(&req, &posts, verdict, &ci.user).await,
        };
        Item {
            request_id: Some(req.request_id.clone()),
            outcome,
        }
    }

    /// Settles an admitted approval through the core (which applies the quorum and the
    /// requester rule, and audits), then edits its messages as a click's copies are.
    async fn settle_one(
        &self,
        req: &Request,
        posts: &[crate::domain::request::Post],
        verdict: Verdict,
        user: &serenity::all::User,
    ) -> Result<String, String> {
        let q = &req.questions[0];
        let i = verdict.option(q).expect("checked: an approval");
        crate::crash::point("clicked");
        let settled = self
            .ctx
            .settle(req, 0, Settlement::choice(i), actor(user))
            .await;
        self.outbox.shown.forget(&req.token);
        let mine: Vec<_> = posts
            .iter()
            .filter(|p| p.idx == 0 && p.answerer == NAME && !p.is_note())
            .cloned()
            .collect();
        match settled {
            Ok(s) => match s.outcome {
                SettleOutcome::Won { .. } => {
                    self.outbox.sync_edits(&self.ctx, &s.request, &mine);
                    Ok(verdict.done().to_owned())
                }
                SettleOutcome::Voted(t) => {
                    self.outbox.show_votes(&self.ctx, &s.request, 0, &mine);
                    Ok(format!(
                        "vote recorded, {} of {} approvals",
                        t.count, t.needed
                    ))
                }
                SettleOutcome::AlreadyVoted(t) => Err(format!(
                    "you already voted for this answer ({} of {} approvals).",
                    t.count, t.needed
                )),
                SettleOutcome::AlreadyAnswered(prev) => Err(already(q, &prev)),
                SettleOutcome::Ended(status) => Err(format!(
                    "it has ended ({}); your answer did not count.",
                    status.as_str()
                )),
                SettleOutcome::Unknown => {
                    Err("it is no longer known to askrelay; nothing was recorded.".into())
                }
            },
            Err(e) if e.code == crate::domain::ErrorCode::Internal => {
                Err("the answer could not be saved; try again. Nothing was recorded.".into())
            }
            // The core's refusal (the requester on a route that excludes them, …), audited there.
            Err(e) => Err(inert(&e.message)),
        }
    }

    async fn refuse_one(
        &self,
        ci: &ComponentInteraction,
        req: Option<&Request>,
        action: AuditAction,
        verdict: Verdict,
    ) {
        self.ctx
            .refuse(AuditEntry {
                request_key: req.map(|r| r.key),
                request_id: req.map(|r| r.request_id.clone()),
                question_idx: req.map(|_| 0),
                source: Source::Discord,
                actor: Some(describe(&ci.user)),
                action,
                detail: Some(format!(
                    "{} in channel {}",
                    BatchId::Decide(verdict),
                    ci.channel_id
                )),
                accepted: false,
            })
            .await;
    }

    /// A private reply (type 4).
    async fn tell(&self, ci: &ComponentInteraction, text: String) {
        let timeout = Duration::from_millis(self.config.discord.callback_timeout_ms);
        let http = &self.rest.http;
        let msg = CreateInteractionResponse::Message(private(&text));
        if let Err(f) = self
            .rest
            .respond(timeout, ci.id, &ci.token, ci.create_response(http, msg))
            .await
        {
            tracing::warn!(error = %f.message(), "cannot answer a batch control");
        }
    }

    /// Answers with what `work` says, within Discord's 3 s: at once if it is quick, else the
    /// interaction is deferred first and the answer edited in (as `/askrelay` is).
    async fn answer_in_time(
        &self,
        ci: &ComponentInteraction,
        work: impl std::future::Future<Output = String>,
    ) {
        let timeout = Duration::from_millis(self.config.discord.callback_timeout_ms);
        let work = async {
            let text = work.await;
            let edit = EditInteractionResponse::new()
                .content(render::truncate_md(&text, render::CONTENT_MAX))
                .allowed_mentions(serenity::builder::CreateAllowedMentions::new());
            (private(&text), edit)
        };
        let sent = self
            .rest
            .answer_in_time(timeout, ci.id, &ci.token, "answering a batch", work)
            .await;
        if let Err(f) = sent {
            tracing::warn!(error = %f.message(), "cannot answer a batch");
        }
    }
}

/// An ephemeral message that mentions nobody.
fn private(text: &str) -> CreateInteractionResponseMessage {
    CreateInteractionResponseMessage::new()
        .content(render::truncate_md(text, render::CONTENT_MAX))
        .ephemeral(true)
        .allowed_mentions(serenity::builder::CreateAllowedMentions::new())
}

/// Who used a control, for the audit log.
fn describe(user: &serenity::all::User) -> String {
    crate::domain::audit::actor("discord", &user.id.to_string(), Some(&user.name), None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::model::{Caller as AgentCaller, Question, QuestionOption};
    use crate::domain::request::{NewRequest, Peer};
    use std::sync::Arc;

    fn question(labels: &[&str]) -> Question {
        Question {
            id: "permission".into(),
            question: "Run `rm -rf build`?".into(),
            header: Some("Approve".into()),
            options: labels
                .iter()
                .map(|l| QuestionOption {
                    label: (*l).into(),
                    description: None,
                })
                .collect(),
            multi_select: false,
        }
    }

    fn request(id: &str, token: &str, questions: Vec<Question>) -> Request {
        let new = NewRequest {
            request_id: id.into(),
            token: token.into(),
            questions: Arc::from(questions),
            context: None,
            caller: AgentCaller {
                agent_id: Some("agent-7".into()),
                owner_agent_id: None,
            },
            scope: Default::default(),
            peer: Peer::default(),
            answerer: NAME.into(),
            route: Some("default".into()),
            created_at_ms: 1_000,
            expiry: None,
            node: None,
        };
        Request::created(1, &new)
    }

    #[test]
    fn the_custom_ids_read_back_and_nothing_else_does() {
        for id in [
            BatchId::Pick,
            BatchId::Decide(Verdict::Allow),
            BatchId::Decide(Verdict::Deny),
        ] {
            let s = id.to_string();
            assert!(s.len() <= super::super::custom_id::MAX_CUSTOM_ID_CHARS);
            assert_eq!(s.parse::<BatchId>(), Ok(id));
            // Never taken for a question's control.
            assert!(
                super::super::custom_id::CustomId::<super::super::custom_id::Action>::parse(&s)
                    .is_none()
            );
        }
        for bad in [
            "ar:batch:",
            "ar:batch:Allow",
            "ar:batch:allow:1",
            "batch:allow",
            "",
        ] {
            assert!(bad.parse::<BatchId>().is_err(), "{bad}");
        }
    }

    /// The menu as Discord would send it back in a later interaction's message.
    fn as_received(rows: &[CreateActionRow]) -> Vec<ActionRow> {
        serde_json::from_value(serde_json::to_value(rows).unwrap()).unwrap()
    }

    #[test]
    fn the_selection_is_kept_in_the_message_and_read_back_from_it() {
        let reqs: Vec<Request> = (0..30)
            .map(|i| {
                request(
                    &format!("req-{i} <@&1> [x](https://evil.example)"),
                    &format!("{i:020x}"),
                    vec![question(&["Allow", "Deny"])],
                )
            })
            .collect();
        let refs: Vec<&Request> = reqs.iter().collect();
        let rows = menu(&refs);
        let json = serde_json::to_value(&rows).unwrap();
        let options = json[0]["components"][0]["options"].as_array().unwrap();
        assert_eq!(options.len(), BATCH_MAX);
        assert_eq!(json[0]["components"][0]["max_values"], 25);
        assert!(json[0]["components"][0]["placeholder"]
            .as_str()
            .unwrap()
            .contains("first 25 of 30"));
        for o in options {
            let label = o["label"].as_str().unwrap();
            assert!(
                label.chars().count() <= 100 && !label.contains("<@&"),
                "{label}"
            );
            assert!(!label.contains("https://"), "{label}");
        }
        let received = as_received(&rows);
        assert!(selected(&received).is_empty(), "nothing chosen yet");
        let chosen = vec![
            format!("{:020x}", 3),
            format!("{:020x}", 7),
            "forged".to_owned(),
        ];
        let again = as_received(&reselect(&received, &chosen).unwrap());
        assert_eq!(selected(&again), chosen[..2].to_vec());
        // A message without the menu has no batch.
        assert!(reselect(&[], &chosen).is_none());
        assert!(menu(&[]).is_empty());
    }

    #[test]
    fn the_report_fits_a_message_and_says_how_many_more() {
        let items: Vec<Item> = (0..200)
            .map(|i| Item {
                request_id: Some(format!("request{i}*x*")),
                outcome: if i % 2 == 0 {
                    Ok("allowed".into())
                } else {
                    Err("you are not allowed to answer it.".into())
                },
            })
            .collect();
        let text = report(Verdict::Allow, &items);
        assert!(
            text.chars().count() <= render::CONTENT_MAX,
            "{}",
            text.len()
        );
        assert!(
            text.starts_with("**Allow selected**: 100 done, 100 refused."),
            "{text}"
        );
        assert!(
            text.contains("**done** · request0\\*x\\* · allowed"),
            "{text}"
        );
        assert!(text.ends_with("more**"), "{text}");
        let short = report(Verdict::Deny, &items[..2]);
        assert_eq!(
            short,
            "**Deny selected**: 1 done, 1 refused.\n**done** · request0\\*x\\* · allowed\n\
             **refused** · request1\\*x\\* · you are not allowed to answer it."
        );
    }
}
