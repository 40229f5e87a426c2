//! The `/askrelay` slash command, so that a team can supervise its agents from the chat where
//! the questions arrive: `pending [all]`, `cancel request [reason]` and `history [n]`.
//!
//! - It is registered once per run, when the gateway is first ready, with the bulk-overwrite
//!   endpoint (so registering again changes nothing): in each of `discord.guild_ids` (visible at
//!   once), else globally.
//! - `pending` and `history` are for anyone allowed to answer in the channel they are used in.
//!   A route's requests are listed only in the channels where the route posts (its channel and
//!   its escalation steps' channels), to those who may answer on it there, so that a listing
//!   never shows more than the route's own messages in that channel do; `pending` without
//!   `all` lists only the requests with a message in this channel. Operators
//!   (`discord.operator_role_ids`, `discord.operator_user_ids`) see every route's requests, in
//!   any channel, and alone may `cancel`. A request only the terminal was asked is never
//!   listed: it never went to Discord.
//! - `pending` also offers the approvals it lists that its user may answer, in a menu with
//!   "Allow selected" and "Deny selected" (see [`super::batch`]).
//! - Every use is audited (`command`, with whether it was allowed). The reply is private
//!   (ephemeral). It is sent within Discord's 3 s: when the answer takes longer than
//!   [`super::rest::DEFER_AFTER`] (2 s) the interaction is deferred first and the answer
//!   edited in.

use super::batch;
use super::platform::{self, Discord};
use super::render::{inert, one_line, truncate, truncate_md};
use super::rest::Rest;
use super::shown::NAME;
use crate::answerer::chat::command::{self, Command, Done, Refused};
use crate::answerer::chat::Person;
use crate::config::Config;
use crate::domain::clock::now_ms;
use crate::domain::expiry::human;
use crate::domain::request::{AuditAction, AuditEntry, Post, Request, Source};
use crate::domain::text::Escaped;
use crate::domain::{AnswererContext, QuestionAnswer, Status};
use serenity::all::{
    ApplicationId, Command as SlashCommand, CommandInteraction, CommandOptionType, CreateActionRow,
    CreateCommand, CreateCommandOption, CreateEmbed, CreateInteractionResponseMessage,
    EditInteractionResponse, GuildId, ResolvedValue,
};
use std::sync::Arc;
use std::time::Duration;

/// The command's name.
pub const COMMAND: &str = "askrelay";
/// An embed description holds at most 4096 characters.
const LIST_MAX: usize = 4000;

/// The command as registered.
pub fn definition() -> CreateCommand {
    CreateCommand::new(COMMAND)
        .description("Supervise the questions agents ask through askrelay")
        .dm_permission(false)
        .add_option(
            CreateCommandOption::new(
                CommandOptionType::SubCommand,
                "pending",
                "The questions waiting for an answer in this channel",
            )
            .add_sub_option(CreateCommandOption::new(
                CommandOptionType::Boolean,
                "all",
                "All requests of this channel's routes, posted here or not (operators: every route)",
            )),
        )
        .add_option(
            CreateCommandOption::new(
                CommandOptionType::SubCommand,
                "cancel",
                "Cancel a pending request; its agent gets ABORTED (operators only)",
            )
            .add_sub_option(
                CreateCommandOption::new(
                    CommandOptionType::String,
                    "request",
                    "The request id (see /askrelay pending)",
                )
                .required(true)
                .max_length(200),
            )
            .add_sub_option(
                CreateCommandOption::new(
                    CommandOptionType::String,
                    "reason",
                    "Why; the agent is told",
                )
                .max_length(500),
            ),
        )
        .add_option(CreateCommandOption::new(
            CommandOptionType::SubCommand,
            "grants",
            "The live grants (\"Allow for 30 min\") of this channel's routes",
        ))
        .add_option(
            CreateCommandOption::new(
                CommandOptionType::SubCommand,
                "revoke",
                "End a grant now (its approver or an operator)",
            )
            .add_sub_option(
                CreateCommandOption::new(
                    CommandOptionType::String,
                    "grant",
                    "The grant id (see /askrelay grants)",
                )
                .required(true)
                .max_length(20),
            ),
        )
        .add_option(
            CreateCommandOption::new(
                CommandOptionType::SubCommand,
                "history",
                "The last requests that ended",
            )
            .add_sub_option(
                CreateCommandOption::new(CommandOptionType::Integer, "n", "How many (default 10)")
                    .min_int_value(1)
                    .max_int_value(25),
            ),
        )
}

/// The command as the chat layer takes it, from the interaction (a cancel without a reason
/// says who cancelled it from Discord).
fn parse(ci: &CommandInteraction) -> Option<Command> {
    let options = ci.data.options();
    let first = options.first()?;
    let ResolvedValue::SubCommand(args) = &first.value else {
        return None;
    };
    let string = |name: &str| {
        args.iter()
            .find(|o| o.name == name)
            .and_then(|o| match o.value {
                ResolvedValue::String(s) => Some(s.to_owned()),
                _ => None,
            })
    };
    Some(match first.name {
        "pending" => Command::Pending {
            all: args
                .iter()
                .any(|o| o.name == "all" && matches!(o.value, ResolvedValue::Boolean(true))),
        },
        "cancel" => Command::Cancel {
            request: string("request")?,
            reason: string("reason")
                .filter(|r| !r.trim().is_empty())
                .unwrap_or_else(|| {
                    format!(
                        "cancelled by {} (Discord user {}) from Discord",
                        ci.user.name, ci.user.id
                    )
                }),
        },
        "history" => Command::History {
            n: args
                .iter()
                .find_map(|o| match (o.name, &o.value) {
                    ("n", ResolvedValue::Integer(n)) => Some((*n).clamp(1, 25) as u32),
                    _ => None,
                })
                .unwrap_or(10),
        },
        "grants" => Command::Grants,
        "revoke" => Command::Revoke {
            grant: string("grant")?,
        },
        _ => return None,
    })
}

/// The command's registration and what its listings need besides the store: the routes and
/// the jump links.
pub(super) struct Commands {
    config: Arc<Config>,
    rest: Arc<Rest>,
}

impl Commands {
    pub fn new(config: Arc<Config>, rest: Arc<Rest>) -> Commands {
        Commands { config, rest }
    }

    /// Registers `/askrelay` (bulk overwrite: idempotent) in the configured guilds, else
    /// globally. A failure is logged; questions work without the command.
    pub(super) async fn register_commands(&self, app: ApplicationId) {
        self.rest.http.set_application_id(app);
        let http = &self.rest.http;
        let guilds = &self.config.discord.guild_ids;
        let timeout = Duration::from_millis(self.config.discord.request_timeout_ms);
        let done = if guilds.is_empty() {
            self.rest
                .paced(
                    timeout,
                    SlashCommand::set_global_commands(http, vec![definition()]),
                )
                .await
                .map(|_| "globally".to_owned())
        } else {
            let mut result = Ok(format!("in {} guild(s)", guilds.len()));
            for g in guilds {
                let set = GuildId::new(g.0).set_commands(http, vec![definition()]);
                if let Err(f) = self.rest.paced(timeout, set).await {
                    result = Err(f);
                    break;
                }
            }
            result
        };
        match done {
            Ok(where_) => tracing::info!("registered the /askrelay command {where_}"),
            Err(f) => {
                tracing::warn!(error = %f.message(), "cannot register the /askrelay command; questions still work")
            }
        }
    }

    /// [`pending_line`], with jump links to this Discord.
    pub(super) fn pending_line(&self, req: &Request, posts: &[Post], now: i64) -> String {
        pending_line(req, posts, now, |c, m| self.rest.link(c, m))
    }
}

/// Slash commands, admitted by the interaction handler and answered here with the context it
/// hands in.
impl Commands {
    pub(super) async fn on_command(&self, ctx: &AnswererContext, ci: CommandInteraction) {
        if ci.data.name != COMMAND {
            return;
        }
        let caller = platform::person(&self.config, &ci.user, ci.member.as_deref());
        let sub = parse(&ci);
        let work = async {
            let (embed, rows, _) = self.command_reply(ctx, &ci, &caller, sub.clone()).await;
            let msg = CreateInteractionResponseMessage::new()
                .embed(embed.clone())
                .components(rows.clone())
                .ephemeral(true)
                .allowed_mentions(serenity::builder::CreateAllowedMentions::new());
            (
                msg,
                EditInteractionResponse::new().embed(embed).components(rows),
            )
        };
        let timeout = Duration::from_millis(self.config.discord.callback_timeout_ms);
        let sent = self
            .rest
            .answer_in_time(timeout, ci.id, &ci.token, "answering /askrelay", work)
            .await;
        if let Err(f) = sent {
            tracing::warn!(error = %f.message(), "cannot answer /askrelay");
        }
    }

    /// The reply to a command (an embed, and the batch controls of a `pending` that lists
    /// approvals), audited, and whether it was allowed.
    async fn command_reply(
        &self,
        ctx: &AnswererContext,
        ci: &CommandInteraction,
        caller: &Person,
        sub: Option<Command>,
    ) -> (CreateEmbed, Vec<CreateActionRow>, bool) {
        let (text, rows, allowed, title) = match &sub {
            None => (
                "This command is not one askrelay knows.".to_owned(),
                Vec::new(),
                false,
                "askrelay",
            ),
            Some(_) if ci.user.bot => (
                "Bot accounts cannot use askrelay's commands.".to_owned(),
                Vec::new(),
                false,
                "askrelay",
            ),
            Some(sub) => match self.run_command(ctx, ci, caller, sub).await {
                Ok((title, text, rows)) => (text, rows, true, title),
                Err(text) => (text, Vec::new(), false, "askrelay"),
            },
        };
        let detail = sub.as_ref().map_or_else(
            || format!("{:?}", Escaped(&ci.data.name)),
            Command::describe,
        );
        ctx.refuse(AuditEntry {
            source: Source::Discord,
            actor: Some(crate::domain::audit::actor(
                "discord",
                &ci.user.id.to_string(),
                Some(&ci.user.name),
                None,
            )),
            action: AuditAction::Command,
            detail: Some(format!("{detail} in channel {}", ci.channel_id)),
            accepted: allowed,
            ..Default::default()
        })
        .await;
        (
            CreateEmbed::new()
                .title(title)
                .description(truncate_md(&text, LIST_MAX)),
            rows,
            allowed,
        )
    }

    /// Runs the command through the chat layer and renders what it did: a title, the text
    /// and, for a `pending` that lists approvals, the batch controls; or why not.
    async fn run_command(
        &self,
        ctx: &AnswererContext,
        ci: &CommandInteraction,
        caller: &Person,
        sub: &Command,
    ) -> Result<(&'static str, String, Vec<CreateActionRow>), String> {
        let place = ci.channel_id.to_string();
        let done = command::run(&Discord(&self.config), ctx, caller, &place, sub)
            .await
            .map_err(refused)?;
        Ok(match done {
            Done::Cancelled { request, reason } => {
                ("Cancelled", cancelled_reply(&request, &reason), Vec::new())
            }
            Done::Revoked(g) => (
                "Grant revoked",
                format!(
                    "{} ended now; matching requests go to people again.",
                    grant_line(&g)
                ),
                Vec::new(),
            ),
            Done::Pending {
                all,
                listed,
                offered,
            } => {
                let now = now_ms();
                let shown: Vec<String> = listed
                    .iter()
                    .map(|(req, posts)| self.pending_line(req, posts, now))
                    .collect();
                let approvals: Vec<&Request> = offered.iter().collect();
                let title = if all {
                    "Pending questions (all channels)"
                } else {
                    "Pending questions (this channel)"
                };
                (
                    title,
                    listing(&shown, "Nothing is waiting for an answer."),
                    batch::menu(&approvals),
                )
            }
            Done::Grants(grants) => {
                let shown: Vec<String> = grants.iter().map(grant_line).collect();
                (
                    "Live grants",
                    listing(&shown, "No grant is live."),
                    Vec::new(),
                )
            }
            Done::History(recent) => {
                let shown: Vec<String> = recent.iter().map(history_line).collect();
                (
                    "Recent requests",
                    listing(&shown, "No request has ended yet."),
                    Vec::new(),
                )
            }
        })
    }
}

/// Why a command did nothing, as the person is told it.
fn refused(why: Refused) -> String {
    match why {
        Refused::NotOperator => "Only askrelay operators (discord.operator_role_ids, discord.operator_user_ids) may cancel requests.".into(),
        Refused::NoSuchRequest(request) => format!("No request “{}” is known.", inert(&request)),
        Refused::Ended(request, Some(status)) => format!(
            "Request “{}” has already ended ({}).",
            inert(&request),
            status.as_str()
        ),
        Refused::Ended(request, None) => {
            format!("Request “{}” has already ended.", inert(&request))
        }
        Refused::Revoke(message) => inert(&message),
        Refused::NotHere => "You are not allowed to answer questions in this channel, so askrelay shows you none here.".into(),
        Refused::StoreFailed => "askrelay could not read its requests; try again.".into(),
    }
}

/// One live grant as `/askrelay grants` lists it: "`g-…` · route **infra** · Bash `cargo
/// test` (exact command) · for uid 1000 · by alice · until <t:…:f>".
fn grant_line(g: &crate::domain::grant::Grant) -> String {
    let mut line = format!(
        "`{}` · route {} · {} `{}` ({}) · for uid {}",
        g.id,
        shown(&g.route, 40),
        shown(&g.tool, 40),
        one_line(&truncate(&g.pattern, 200)).replace('`', "ˋ"),
        g.kind(),
        g.uid
    );
    if let Some(h) = &g.host {
        line.push_str(&format!(" on {}", shown(h, 40)));
    }
    if let Some(s) = &g.session {
        line.push_str(&format!(", session {}", shown(s, 40)));
    }
    line.push_str(&format!(
        " · by {} · until <t:{}:f>",
        shown(&g.approver, 120),
        g.ends_at_ms / 1000
    ));
    line
}

/// How much of each agent text a listing line shows (characters, before escaping), so that
/// one line can never fill a whole list. A request id is shown whole (128 characters at most,
/// on one line already), so that it can be copied into `/askrelay cancel`.
const AGENT_SHOWN: usize = 40;
const HEADER_SHOWN: usize = 40;
const SCOPE_KEY_SHOWN: usize = 24;
const SCOPE_VALUE_SHOWN: usize = 40;

/// Agent text as a listing line shows it: on one line, cut to `max` characters, inert. No code
/// span: one could not hold an escape, and a backtick in the text would close it.
fn shown(text: &str, max: usize) -> String {
    inert(&truncate(&one_line(text), max))
}

/// One pending request as `/askrelay pending` and the digest list it:
/// "**12m** · deploy-42 · agent-7 (project=infra) · Confirm: Proceed…? · [jump](…) ·
/// **escalation step 1**". Agent text is inert (see [`shown`]); askrelay's own facts are in
/// bold or a link, which agent text cannot be (docs/security.md).
pub(super) fn pending_line(
    req: &Request,
    posts: &[Post],
    now: i64,
    link: impl Fn(u64, u64) -> String,
) -> String {
    let age = human(Duration::from_secs(
        ((now - req.created_at_ms).max(0) / 1000) as u64,
    ));
    let open = (0..req.questions.len()).find(|&i| req.answers.get(i).is_some_and(Option::is_none));
    let q = &req.questions[open.unwrap_or(0)];
    let mut line = format!(
        "**{age}** · {} · {} · {}",
        inert(&req.request_id),
        who_asked(req),
        question_text(q, 80)
    );
    if req.questions.len() > 1 {
        line.push_str(&format!(
            " · **question {} of {}**",
            open.unwrap_or(0) + 1,
            req.questions.len()
        ));
    }
    let main = posts
        .iter()
        .find(|p| p.is_main() && Some(p.idx) == open && p.answerer == NAME);
    if let Some((c, m)) = main.and_then(super::shown::placed) {
        line.push_str(&format!(" · [jump]({})", link(c, m)));
    } else if main.is_some() {
        line.push_str(" · **not posted yet**");
    }
    if let Some(step) = posts.iter().filter_map(|p| p.slot.step()).max() {
        line.push_str(&format!(" · **escalation step {step}**"));
    }
    line
}

/// "Confirm: Proceed with the cleanup?": the header and the question, each cut.
fn question_text(q: &crate::domain::Question, max: usize) -> String {
    let header = q
        .header
        .as_deref()
        .filter(|h| !h.trim().is_empty())
        .map(|h| format!("{}: ", shown(h, HEADER_SHOWN)))
        .unwrap_or_default();
    format!("{header}{}", shown(&q.question, max))
}

/// "agent-7 (project=infra, session=…)".
fn who_asked(req: &Request) -> String {
    let agent = req
        .agent()
        .map_or("an agent".to_owned(), |a| shown(a, AGENT_SHOWN));
    let scope: Vec<String> = req
        .scope
        .iter()
        .filter(|(k, _)| k.as_str() != "agent")
        .map(|(k, v)| {
            format!(
                "{}={}",
                shown(k, SCOPE_KEY_SHOWN),
                shown(v, SCOPE_VALUE_SHOWN)
            )
        })
        .collect();
    if scope.is_empty() {
        agent
    } else {
        format!("{agent} ({})", scope.join(", "))
    }
}

/// "**answered** · deploy-42 · Confirm: Proceed…? · **by** @alice: No, keep them ·
/// **after 3m**".
fn history_line(req: &Request) -> String {
    let q = &req.questions[0];
    let mut line = format!(
        "**{}** · {} · {}",
        req.status.as_str(),
        inert(&req.request_id),
        question_text(q, 60)
    );
    match (req.status, req.answers.first().and_then(Option::as_ref)) {
        (Status::Answered, Some(a)) => {
            let qa = QuestionAnswer::build(q, &a.settlement);
            let mut what = qa.selected.join(", ");
            if let Some(c) = qa.custom {
                what = if what.is_empty() {
                    c
                } else {
                    format!("{what}; {c}")
                };
            }
            let by = match a.actor.via {
                crate::domain::Via::Discord if a.actor.id.parse::<u64>().is_ok() => {
                    format!("<@{}>", a.actor.id)
                }
                crate::domain::Via::Discord => shown(&a.actor.name, 80),
                _ => shown(&a.actor.describe(), 80),
            };
            line.push_str(&format!(" · **by** {by}: {}", shown(&what, 80)));
        }
        _ => {
            if let Some(e) = req.error() {
                line.push_str(&format!(" · {}", shown(&e.message, 80)));
            }
        }
    }
    if req.questions.len() > 1 {
        line.push_str(&format!(" · **+{} more**", req.questions.len() - 1));
    }
    if let Some(end) = req.ended_at_ms {
        let took = human(Duration::from_secs(
            ((end - req.created_at_ms).max(0) / 1000) as u64,
        ));
        line.push_str(&format!(" · **after {took}**"));
    }
    line
}

/// The reply to a cancel that ended the request.
fn cancelled_reply(request: &str, reason: &str) -> String {
    format!(
        "Request “{}” is cancelled; its agent got ABORTED: {}",
        inert(request),
        inert(reason)
    )
}

/// Lines that fit one embed description, with how many more there are.
pub(super) fn listing(lines: &[String], empty: &str) -> String {
    if lines.is_empty() {
        return empty.to_owned();
    }
    let mut out = String::new();
    for (i, l) in lines.iter().enumerate() {
        let more = format!("\n**… and {} more**", lines.len() - i);
        if out.chars().count() + l.chars().count() + 3 + more.len() > LIST_MAX {
            out.push_str(&more);
            break;
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str("• ");
        out.push_str(l);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::markdown_model::{self, agent_text, visible};
    use super::*;
    use crate::domain::model::{Caller, Question, QuestionOption};
    use crate::domain::request::{Actor, Answered, EditState, NewRequest, Outcome, Peer, Via};
    use crate::domain::{AskError, ErrorCode, Settlement};
    use proptest::prelude::*;
    use std::sync::Arc;

    /// A request with `text` as every piece of agent text, asked a minute ago.
    fn request(text: &str, questions: usize) -> Request {
        let q = Question {
            id: "q".into(),
            question: text.into(),
            header: Some(text.into()),
            options: vec![
                QuestionOption {
                    label: text.into(),
                    description: Some(text.into()),
                },
                QuestionOption {
                    label: format!("2{text}"),
                    description: None,
                },
            ],
            multi_select: false,
        };
        let new = NewRequest {
            request_id: text.into(),
            token: "0123456789abcdef0123".into(),
            questions: Arc::from(vec![q; questions]),
            context: None,
            caller: Caller {
                agent_id: Some(text.into()),
                owner_agent_id: None,
            },
            scope: [
                ("team".to_owned(), text.to_owned()),
                (text.to_owned(), "v".to_owned()),
            ]
            .into(),
            peer: Peer::default(),
            answerer: NAME.into(),
            answerers: vec![NAME.into()],
            route: Some("default".into()),
            created_at_ms: 1_000,
            expiry: None,
            node: None,
        };
        Request::created(1, &new)
    }

    fn post(slot: &str, message: Option<&str>) -> Post {
        Post {
            idx: 0,
            answerer: NAME.into(),
            slot: slot.parse().unwrap(),
            channel: "100".into(),
            guild: Some("1".into()),
            nonce: "n".into(),
            message: message.map(str::to_owned),
            attempts: 0,
            last_error: None,
            edited: EditState::None,
        }
    }

    /// Every listing askrelay shows in Discord for `text`: (name, markdown).
    fn surfaces(text: &str, questions: usize) -> Vec<(&'static str, String)> {
        let link = |c: u64, m: u64| format!("https://discord.com/channels/1/{c}/{m}");
        let pending = request(text, questions);
        let placed = [post("", Some("200")), post("e1", Some("201"))];
        let unplaced = [post("", None)];
        let mut answered = request(text, questions);
        answered.status = Status::Answered;
        answered.ended_at_ms = Some(61_000);
        answered.answers[0] = Some(Answered {
            actor: Actor {
                via: Via::Terminal,
                id: "1000".into(),
                name: text.into(),
                note: Some(text.into()),
            },
            at_ms: 61_000,
            settlement: Settlement {
                selected: vec![0, 1],
                custom: Some(text.into()),
                terms: None,
            },
        });
        let mut cancelled = request(text, questions);
        cancelled.status = Status::Cancelled;
        cancelled.ended_at_ms = Some(61_000);
        cancelled.outcome = Some(Outcome::Error(AskError::new(ErrorCode::Aborted, text)));
        let lines = vec![
            pending_line(&pending, &placed, 61_000, link),
            pending_line(&pending, &unplaced, 61_000, link),
        ];
        let history = vec![history_line(&answered), history_line(&cancelled)];
        vec![
            ("pending and digest", listing(&lines, "")),
            ("history", listing(&history, "")),
            ("cancel", cancelled_reply(text, text)),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 256,
            failure_persistence: None,
            // Deterministic: the same cases every run (a property that fails fails always).
            rng_seed: proptest::test_runner::RngSeed::Fixed(20261202),
            ..ProptestConfig::default()
        })]

        /// Metamorphic: the listings (`/askrelay pending` and the digest, `history`, a
        /// cancel's reply) show the same live constructs whatever the agent wrote, as with a
        /// plain placeholder.
        #[test]
        fn agent_text_adds_no_markup_to_a_listing(
            s in agent_text().prop_filter("visible", |s| !visible(s).trim().is_empty()),
            questions in 1usize..=2,
        ) {
            for ((name, random), (_, reference)) in
                surfaces(&s, questions).iter().zip(&surfaces("placeholder", questions))
            {
                prop_assert_eq!(
                    markdown_model::live(random),
                    markdown_model::live(reference),
                    "{}: {}", name, random
                );
            }
        }
    }

    #[test]
    fn a_listing_line_shows_the_request_as_written() {
        let text = "x` [Open](https://evil.example) <@&1> `";
        let lines = surfaces(text, 2);
        let shown = markdown_model::shown(&lines[0].1);
        assert!(shown.starts_with(&format!("• 1m · {text} · ")), "{shown}");
        let history = markdown_model::shown(&lines[1].1);
        assert!(history.starts_with("• answered · "), "{history}");
        assert!(history.contains("· by "), "{history}");
        assert!(history.contains("· after 1m"), "{history}");
    }
}
