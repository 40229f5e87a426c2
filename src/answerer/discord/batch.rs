//! Batches from Discord (docs/approvals.md, "Batches"): `/askrelay pending` offers the pending
//! approvals its user may answer in a select menu, with "Allow selected" and "Deny selected".
//! This file holds the controls and the reply's markup (pure); which requests are approvals, who
//! may answer them, each request's checks and the reply's words are the chat layer's
//! (`answerer::chat::batch`), and the controls are answered by `interactions/batch.rs`.
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

use super::render::{self, inert, inert_plain, one_line, truncate};
pub use crate::answerer::chat::batch::BatchId;
use crate::answerer::chat::batch::{button, selection, Style};
pub use crate::domain::approval::Verdict;
use crate::domain::request::{Answered, Request};
use crate::domain::Question;
use serenity::all::{
    ActionRow, ActionRowComponent, ButtonStyle, CreateActionRow, CreateButton, CreateSelectMenu,
    CreateSelectMenuKind, CreateSelectMenuOption,
};

/// At most this many requests in one batch: a select menu's options.
pub const BATCH_MAX: usize = render::SELECT_OPTIONS_MAX;
/// How much of the agent's name and of the question an option shows.
const AGENT_SHOWN: usize = 40;

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
            .label(button(v))
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
    let options = batch_menu(components).map_or(&[][..], |m| &m.options[..]);
    selection(
        options
            .iter()
            .filter(|o| o.default)
            .map(|o| o.value.clone()),
        BATCH_MAX,
    )
}

/// How the batch's reply is written in Discord: markdown, within a message's 2000 characters,
/// and the route's Discord allowlists named.
pub(super) struct DiscordReply;

impl Style for DiscordReply {
    const REPLY_MAX: usize = render::CONTENT_MAX;

    fn bold(&self, text: &str) -> String {
        format!("**{text}**")
    }

    fn request_id(&self, id: Option<&str>) -> String {
        id.map_or(self.bold("an unknown request"), |r| {
            inert(&truncate(&one_line(r), 128))
        })
    }

    fn not_allowed(&self) -> &'static str {
        "you are not allowed to answer it (the route's allowed_user_ids and allowed_role_ids)."
    }

    fn already(&self, q: &Question, a: &Answered) -> String {
        super::interactions::already(q, a)
    }

    fn inert(&self, text: &str) -> String {
        inert(text)
    }
}

#[cfg(test)]
mod tests {
    use super::super::shown::NAME;
    use super::*;
    use crate::answerer::chat::batch::{report, Item};
    use crate::domain::approval::fixtures::question;
    use crate::domain::model::Question;

    fn request(id: &str, token: &str, questions: Vec<Question>) -> Request {
        crate::domain::approval::fixtures::request(NAME, id, token, questions)
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
        let text = report(Verdict::Allow, &items, &DiscordReply);
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
        let short = report(Verdict::Deny, &items[..2], &DiscordReply);
        assert_eq!(
            short,
            "**Deny selected**: 1 done, 1 refused.\n**done** · request0\\*x\\* · allowed\n\
             **refused** · request1\\*x\\* · you are not allowed to answer it."
        );
    }
}
