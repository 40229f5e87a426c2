//! `/askrelay` on Slack: `pending [all]`, `history [n]`, `grants`, `cancel REQUEST [reason]`
//! (operators only: `slack.operator_user_ids`) and `revoke GRANT` (its approver or an
//! operator), as the chat layer runs them ([`crate::answerer::chat::command`]): who sees what is
//! the same as on Discord, the channel the command is used in being the place.
//!
//! Slack gives a command's arguments as one line of text, read here word by word. The reply is
//! ephemeral, in the envelope's ack (or the HTTP response) when it is ready within
//! [`super::ACK_AFTER`], else through the command's `response_url` once it is. Every use is
//! audited (`command`, with whether it was allowed). A `pending` that lists approvals this
//! person may answer offers them as a batch under the listing (`slack::batch`; its buttons are
//! `batch.rs`'s).

use super::admit::describe;
use super::{Handler, Reply};
use crate::answerer::chat::command::{self, Command, Done, Refused};
use crate::answerer::slack::batch;
use crate::answerer::slack::platform::Slack;
use crate::answerer::slack::render::{escape, one_line, truncate};
use crate::domain::clock::now_ms;
use crate::domain::expiry::human;
use crate::domain::grant::Grant;
use crate::domain::request::{AuditAction, AuditEntry, Post, Request, Source, Status};
use crate::domain::text::Escaped;
use crate::domain::QuestionAnswer;
use serde::Deserialize;
use slack_morphism::prelude::*;
use std::sync::Arc;
use std::time::Duration;

/// A slash command's payload: slack-morphism's event, and the user's name, which Slack sends and
/// the event leaves out.
#[derive(Debug, Deserialize)]
pub struct CommandPayload {
    #[serde(flatten)]
    pub event: SlackCommandEvent,
    #[serde(default)]
    pub user_name: Option<String>,
}

/// The ephemeral reply to a command: its text, and (a `pending` that offers a batch) blocks that
/// show the text and the batch's controls, the text then being the notification's.
#[derive(Debug, Clone)]
pub struct CommandReply {
    pub text: String,
    pub blocks: Option<Vec<SlackBlock>>,
}

impl CommandReply {
    /// As the ack (or the HTTP response) carries it: ephemeral.
    pub fn response(self) -> SlackCommandEventResponse {
        let mut content = SlackMessageContent::new().with_text(self.text);
        if let Some(blocks) = self.blocks {
            content = content.with_blocks(blocks);
        }
        SlackCommandEventResponse::new(content)
            .with_response_type(SlackMessageResponseType::Ephemeral)
    }
}

/// What `/askrelay help` (or an unknown use) says.
const USAGE: &str = "Use `/askrelay pending [all]`, `/askrelay history [n]`, `/askrelay grants`, \
                     `/askrelay cancel REQUEST [reason]` (operators) or `/askrelay revoke GRANT`.";

/// The most a reply shows (a message's text holds far more; a person reads far less).
const REPLY_MAX: usize = 3500;

/// The command in Slack's text: `None` for help or anything askrelay does not know.
pub(crate) fn parse(text: &str, user: &str, name: &str) -> Option<Command> {
    let mut words = text.split_whitespace();
    let sub = words.next().unwrap_or("pending");
    Some(match sub {
        "pending" => match words.next() {
            None => Command::Pending { all: false },
            Some("all") => Command::Pending { all: true },
            Some(_) => return None,
        },
        "cancel" => {
            let request = words.next()?.to_owned();
            let reason = words.collect::<Vec<_>>().join(" ");
            Command::Cancel {
                request,
                reason: if reason.is_empty() {
                    format!("cancelled by {name} (Slack user {user}) from Slack")
                } else {
                    reason
                },
            }
        }
        "history" => Command::History {
            n: match words.next() {
                None => 10,
                Some(n) => n.parse::<u32>().ok()?.clamp(1, 25),
            },
        },
        "grants" => Command::Grants,
        "revoke" => Command::Revoke {
            grant: words.next()?.to_owned(),
        },
        _ => return None,
    })
}

impl Handler {
    /// A use of `/askrelay`: the ephemeral reply to put in the ack, or `None` when it was not
    /// ready in time (it then comes through the command's `response_url`).
    pub async fn on_command(self: &Arc<Self>, ev: CommandPayload) -> Option<CommandReply> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let me = self.clone();
        let url = ev.event.response_url.clone();
        self.ctx.spawn(async move {
            let reply = me.command_reply(&ev).await;
            if let Err(reply) = tx.send(reply) {
                // The ack went without it: the person is told through response_url.
                let reply = match reply.blocks {
                    Some(blocks) => Reply::Show(reply.text, blocks),
                    None => Reply::Tell(reply.text),
                };
                me.tell_via(Some(url), reply);
            }
        });
        tokio::time::timeout(super::ACK_AFTER, rx).await.ok()?.ok()
    }

    /// Runs the command for the user Slack vouches for, audited, and says what it did.
    async fn command_reply(&self, payload: &CommandPayload) -> CommandReply {
        let ev = &payload.event;
        let user = ev.user_id.to_string();
        let name = payload
            .user_name
            .clone()
            .unwrap_or_else(|| ev.user_id.to_string());
        let place = ev.channel_id.to_string();
        let sub = parse(&ev.text.clone().unwrap_or_default(), &user, &name);
        let (reply, allowed) = match &sub {
            None => (
                CommandReply {
                    text: USAGE.to_owned(),
                    blocks: None,
                },
                false,
            ),
            Some(sub) => {
                let person = self.person_anywhere(&user, &name).await;
                match command::run(&Slack(&self.config), &self.ctx, &person, &place, sub).await {
                    Ok(done) => (shown(done), true),
                    Err(why) => (
                        CommandReply {
                            text: refused(why),
                            blocks: None,
                        },
                        false,
                    ),
                }
            }
        };
        let detail = sub.as_ref().map_or_else(
            || format!("{:?}", Escaped(ev.text.as_deref().unwrap_or_default())),
            Command::describe,
        );
        self.ctx
            .refuse(AuditEntry {
                source: Source::Slack,
                actor: Some(describe(&user, &name)),
                action: AuditAction::Command,
                detail: Some(format!("{detail} in channel {}", Escaped(&place))),
                accepted: allowed,
                ..Default::default()
            })
            .await;
        reply
    }
}

/// What a command did, as Slack shows it (mrkdwn; agent text inert): a `pending` that offers
/// approvals to answer at once shows its listing in sections, then the batch's controls.
fn shown(done: Done) -> CommandReply {
    let offered: Vec<Request> = match &done {
        Done::Pending { offered, .. } => offered.clone(),
        _ => Vec::new(),
    };
    let text = truncate(&shown_text(done), REPLY_MAX);
    let batch = batch::blocks(&offered.iter().collect::<Vec<_>>());
    let blocks = (!batch.is_empty()).then(|| {
        let mut blocks = batch::sections(&text);
        blocks.extend(batch);
        blocks
    });
    CommandReply { text, blocks }
}

/// What a command did, as text.
fn shown_text(done: Done) -> String {
    match done {
        Done::Cancelled { request, reason } => format!(
            "Cancelled `{}`: its agent was told “{}”.",
            code(&request),
            escape(&one_line(&reason))
        ),
        Done::Revoked(g) => format!(
            "{} ended now; matching requests go to people again.",
            grant_line(&g)
        ),
        Done::Pending { all, listed, .. } => {
            let now = now_ms();
            let lines: Vec<String> = listed
                .iter()
                .map(|(req, posts)| pending_line(req, posts, now))
                .collect();
            let title = if all {
                "*Pending questions (all channels)*"
            } else {
                "*Pending questions (this channel)*"
            };
            listing(title, &lines, "Nothing is waiting for an answer.")
        }
        Done::Grants(grants) => listing(
            "*Live grants*",
            &grants.iter().map(grant_line).collect::<Vec<_>>(),
            "No grant is live.",
        ),
        Done::History(recent) => listing(
            "*Recent requests*",
            &recent.iter().map(history_line).collect::<Vec<_>>(),
            "No request has ended yet.",
        ),
    }
}

/// Why a command did nothing, as the person is told it.
fn refused(why: Refused) -> String {
    match why {
        Refused::NotOperator => {
            "Only askrelay operators (slack.operator_user_ids) may cancel requests.".into()
        }
        Refused::NoSuchRequest(request) => format!("No request `{}` is known.", code(&request)),
        Refused::Ended(request, Some(status)) => format!(
            "Request `{}` has already ended ({}).",
            code(&request),
            status.as_str()
        ),
        Refused::Ended(request, None) => format!("Request `{}` has already ended.", code(&request)),
        Refused::Revoke(message) => escape(&message),
        Refused::NotHere => "You are not allowed to answer questions in this channel, so askrelay \
                             shows you none here."
            .into(),
        Refused::StoreFailed => "askrelay could not read its requests; try again.".into(),
    }
}

/// A title, then one line each, or `empty`.
fn listing(title: &str, lines: &[String], empty: &str) -> String {
    if lines.is_empty() {
        return format!("{title}\n{empty}");
    }
    format!("{title}\n{}", lines.join("\n"))
}

/// Agent text inside `…`: inert, on one line, and unable to close the code span.
fn code(s: &str) -> String {
    crate::answerer::slack::render::span(s)
}

/// A question's text for a listing: its header and text, inert, on one line.
fn question_text(req: &Request, idx: usize, max: usize) -> String {
    let q = &req.questions[idx];
    let text = match q.header.as_deref().filter(|h| !h.trim().is_empty()) {
        Some(h) => format!("{h}: {}", q.question),
        None => q.question.clone(),
    };
    escape(&one_line(&truncate(&text, max)))
}

/// "*5 min* · `req-1` · agent · Proceed? · <link|message>".
pub(crate) fn pending_line(req: &Request, posts: &[Post], now: i64) -> String {
    let age = human(Duration::from_secs(
        ((now - req.created_at_ms).max(0) / 1000) as u64,
    ));
    let open = (0..req.questions.len())
        .find(|&i| req.answers.get(i).is_some_and(Option::is_none))
        .unwrap_or(0);
    let mut line = format!(
        "*{age}* · `{}` · {}",
        code(&req.request_id),
        question_text(req, open, 80)
    );
    if let Some(agent) = req.agent() {
        line.push_str(&format!(
            " · agent {}",
            escape(&one_line(&truncate(agent, 60)))
        ));
    }
    if req.questions.len() > 1 {
        line.push_str(&format!(
            " · question {} of {}",
            open + 1,
            req.questions.len()
        ));
    }
    let message = posts.iter().find(|p| {
        p.answerer == crate::answerer::slack::NAME && !p.is_note() && p.message.is_some()
    });
    if let Some(p) = message {
        let ts = p.message.as_deref().unwrap_or_default();
        line.push_str(&format!(
            " · <{}|message>",
            crate::answerer::slack::link(&p.channel, ts)
        ));
    }
    line
}

/// "*answered* · `req-1` · Proceed? · No, keep them, by <@U…>".
fn history_line(req: &Request) -> String {
    let q = &req.questions[0];
    let mut line = format!(
        "*{}* · `{}` · {}",
        req.status.as_str(),
        code(&req.request_id),
        question_text(req, 0, 60)
    );
    if let (Status::Answered, Some(a)) = (req.status, req.answers.first().and_then(Option::as_ref))
    {
        let qa = QuestionAnswer::build(q, &a.settlement);
        let mut what = qa.selected.join(", ");
        if let Some(c) = qa.custom {
            what = if what.is_empty() {
                c
            } else {
                format!("{what}; {c}")
            };
        }
        line.push_str(&format!(
            " · {}, by {}",
            escape(&one_line(&truncate(&what, 80))),
            crate::answerer::slack::render::who(&a.actor)
        ));
    }
    line
}

/// "`g-…` · route infra · Bash `cargo test` (exact command) · for uid 1000 · by alice".
fn grant_line(g: &Grant) -> String {
    format!(
        "`{}` · route {} · {} `{}` ({}) · for uid {} · by {} · ends in {}",
        code(&g.id),
        escape(&one_line(&truncate(&g.route, 40))),
        escape(&one_line(&truncate(&g.tool, 40))),
        code(&g.pattern),
        g.kind(),
        g.uid,
        escape(&one_line(&truncate(&g.approver, 120))),
        human(Duration::from_millis(
            (g.ends_at_ms - now_ms()).max(0) as u64
        ))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_is_read_word_by_word() {
        let p = |t: &str| parse(t, "U1", "alice");
        assert_eq!(p(""), Some(Command::Pending { all: false }));
        assert_eq!(p("pending"), Some(Command::Pending { all: false }));
        assert_eq!(p(" pending  all "), Some(Command::Pending { all: true }));
        assert_eq!(p("pending everything"), None);
        assert_eq!(
            p("cancel req-1 the build is broken"),
            Some(Command::Cancel {
                request: "req-1".into(),
                reason: "the build is broken".into()
            })
        );
        assert_eq!(
            p("cancel req-1"),
            Some(Command::Cancel {
                request: "req-1".into(),
                reason: "cancelled by alice (Slack user U1) from Slack".into()
            })
        );
        assert_eq!(p("cancel"), None);
        assert_eq!(p("history"), Some(Command::History { n: 10 }));
        assert_eq!(p("history 99"), Some(Command::History { n: 25 }));
        assert_eq!(p("history ten"), None);
        assert_eq!(p("grants"), Some(Command::Grants));
        assert_eq!(
            p("revoke g-1"),
            Some(Command::Revoke {
                grant: "g-1".into()
            })
        );
        assert_eq!(p("help"), None);
    }

    #[test]
    fn agent_text_in_a_code_span_cannot_close_it_or_mention() {
        assert_eq!(code("a`b <!channel>"), "aˋb &lt;!channel&gt;");
    }
}
