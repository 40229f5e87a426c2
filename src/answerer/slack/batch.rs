//! Batches from Slack (docs/approvals.md, "Batches"): `/askrelay pending` offers, under its
//! listing, the pending approvals its user may answer in a `multi_static_select`, with "Allow
//! selected" and "Deny selected". This file holds the blocks, the reading of the selection and
//! the reply's markup (pure); which requests are approvals, who may answer them, each request's
//! checks and settlement and the reply's words are the chat layer's (`answerer::chat::batch`),
//! and the buttons are answered by `interactions/batch.rs`.
//!
//! - The menu lists at most [`BATCH_MAX`] approvals (Slack's 100 options), each option the
//!   request's id and agent above its question (agent text escaped, each cut to Slack's 75
//!   characters), its value the request's token.
//! - The selection is not stored anywhere: Slack keeps it in the person's client and sends it
//!   with the press of a button, in the payload's `state.values` ([`selected`]). Nothing is
//!   answered before a button is pressed; a choice in the menu is only audited.
//!
//! The action_ids are the chat layer's [`BatchId`]s (`ar:batch:pick`, `ar:batch:allow`,
//! `ar:batch:deny`), as on Discord; the blocks are [`MENU_BLOCK`] and [`BUTTONS_BLOCK`].

use super::render::{
    already, escape, inert, md, one_line, plain, span, truncate, OPTION_TEXT_MAX, PLACEHOLDER_MAX,
    SECTION_TEXT_MAX, SELECT_OPTIONS_MAX,
};
use crate::answerer::chat::batch::{button, selection, BatchId, Style};
use crate::domain::approval::Verdict;
use crate::domain::request::{Answered, Request};
use crate::domain::Question;
use slack_morphism::prelude::*;

/// At most this many requests in one batch: a select's options.
pub const BATCH_MAX: usize = SELECT_OPTIONS_MAX;
/// The block of the menu (a section with the menu as its accessory), and of the buttons.
pub const MENU_BLOCK: &str = "ar:batch:menu";
pub const BUTTONS_BLOCK: &str = "ar:batch:do";
/// How much of the agent's name an option shows.
const AGENT_SHOWN: usize = 30;

/// The batch blocks for these approvals (the first [`BATCH_MAX`]): a section with the menu,
/// then the two buttons. None without approvals.
pub fn blocks(approvals: &[&Request]) -> Vec<SlackBlock> {
    if approvals.is_empty() {
        return Vec::new();
    }
    let offered = &approvals[..approvals.len().min(BATCH_MAX)];
    let text = if approvals.len() > offered.len() {
        format!(
            "*Approvals to answer at once* (the first {} of {})",
            offered.len(),
            approvals.len()
        )
    } else {
        "*Approvals to answer at once*".to_owned()
    };
    let menu = SlackBlockMultiStaticSelectElement::new()
        .with_action_id(BatchId::Pick.to_string().into())
        .with_placeholder(plain(truncate("Choose approvals", PLACEHOLDER_MAX)))
        .with_options(offered.iter().map(|r| option(r)).collect())
        .with_max_selected_items(offered.len() as u64);
    let button = |v: Verdict, style| {
        SlackBlockButtonElement::new(plain(button(v)))
            .with_action_id(BatchId::Decide(v).to_string().into())
            .with_style(style)
            .into()
    };
    vec![
        SlackSectionBlock::new()
            .with_block_id(MENU_BLOCK.into())
            .with_text(md(text))
            .with_accessory(menu.into())
            .into(),
        SlackActionsBlock::new(vec![
            button(Verdict::Allow, SlackBlockButtonStyle::Primary),
            button(Verdict::Deny, SlackBlockButtonStyle::Danger),
        ])
        .with_block_id(BUTTONS_BLOCK.into())
        .into(),
    ]
}

/// An approval as an option: "deploy-42 · agent-7" above "Approve: Run terraform apply…", as
/// plain text with agent text escaped, its value the request's token.
fn option(req: &Request) -> SlackBlockChoiceItem<SlackBlockPlainTextOnly> {
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
    let item = SlackBlockChoiceItem::new(plain(inert(&label, OPTION_TEXT_MAX)), req.token.clone());
    if question.trim().is_empty() {
        item
    } else {
        item.with_description(plain(inert(&question, OPTION_TEXT_MAX)))
    }
}

/// The tokens selected in the batch menu, as Slack sends the message's state with a press: at
/// most [`BATCH_MAX`], each once, in the order sent.
pub fn selected(state: Option<&SlackActionState>) -> Vec<String> {
    let picked = state
        .and_then(|s| s.values.get(&MENU_BLOCK.into()))
        .and_then(|b| b.get(&BatchId::Pick.to_string().into()))
        .and_then(|v| v.selected_options.as_ref());
    selection(
        picked.into_iter().flatten().map(|o| o.value.clone()),
        BATCH_MAX,
    )
}

/// A listing's text as sections of at most Slack's 3,000 characters, cut between lines.
pub fn sections(text: &str) -> Vec<SlackBlock> {
    let mut out: Vec<String> = Vec::new();
    for line in text.lines() {
        let line = truncate(line, SECTION_TEXT_MAX);
        match out.last_mut() {
            Some(s) if s.chars().count() + 1 + line.chars().count() <= SECTION_TEXT_MAX => {
                s.push('\n');
                s.push_str(&line);
            }
            _ => out.push(line),
        }
    }
    out.into_iter()
        .map(|s| SlackSectionBlock::new().with_text(md(s)).into())
        .collect()
}

/// How the batch's reply is written in Slack: mrkdwn, request ids in code spans, and the
/// route's Slack allowlists named.
pub struct SlackReply;

impl Style for SlackReply {
    /// The most the reply shows (a message's text holds far more; a person reads far less).
    const REPLY_MAX: usize = 3500;

    fn bold(&self, text: &str) -> String {
        format!("*{text}*")
    }

    fn request_id(&self, id: Option<&str>) -> String {
        id.map_or("an unknown request".to_owned(), |r| {
            format!("`{}`", span(r))
        })
    }

    fn not_allowed(&self) -> &'static str {
        "you are not allowed to answer it (the route's slack_allowed_user_ids and \
         slack_allowed_usergroup_ids)."
    }

    fn already(&self, q: &Question, a: &Answered) -> String {
        already(q, a)
    }

    fn inert(&self, text: &str) -> String {
        escape(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::answerer::chat::batch::{report, Item};
    use crate::domain::approval::fixtures::{question, request};

    fn approvals(n: usize) -> Vec<Request> {
        (0..n)
            .map(|i| {
                request(
                    crate::answerer::slack::NAME,
                    &format!("req-{i} <!channel> <@U1>"),
                    &format!("{i:020x}"),
                    vec![question(&["Allow", "Deny"])],
                )
            })
            .collect()
    }

    #[test]
    fn the_menu_holds_at_most_100_inert_options_of_75_characters() {
        let reqs = approvals(120);
        let refs: Vec<&Request> = reqs.iter().collect();
        let json = serde_json::to_value(blocks(&refs)).unwrap();
        let menu = &json[0]["accessory"];
        assert_eq!(menu["type"], "multi_static_select");
        assert_eq!(menu["action_id"], "ar:batch:pick");
        let options = menu["options"].as_array().unwrap();
        assert_eq!(options.len(), 100);
        assert_eq!(menu["max_selected_items"], 100);
        assert!(json[0]["text"]["text"]
            .as_str()
            .unwrap()
            .contains("the first 100 of 120"));
        for o in options {
            for t in [&o["text"]["text"], &o["description"]["text"]] {
                let t = t.as_str().unwrap();
                assert!(t.chars().count() <= 75, "{t}");
                assert!(!t.contains('<'), "{t}");
            }
        }
        assert_eq!(options[3]["value"], format!("{:020x}", 3));
        let ids: Vec<&str> = json[1]["elements"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["action_id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["ar:batch:allow", "ar:batch:deny"]);
        assert!(blocks(&[]).is_empty());
    }

    #[test]
    fn the_selection_is_read_from_the_state_slack_sends() {
        let state: SlackActionState = serde_json::from_value(serde_json::json!({"values": {
            "ar:batch:menu": {"ar:batch:pick": {"type": "multi_static_select", "selected_options": [
                {"text": {"type": "plain_text", "text": "a"}, "value": "t1"},
                {"text": {"type": "plain_text", "text": "b"}, "value": "t2"},
                {"text": {"type": "plain_text", "text": "a"}, "value": "t1"}
            ]}},
            "other": {"x": {"type": "static_select", "selected_option": null}}
        }}))
        .unwrap();
        assert_eq!(selected(Some(&state)), ["t1", "t2"]);
        assert!(selected(None).is_empty());
    }

    #[test]
    fn the_report_puts_what_was_done_first_and_keeps_ids_inert() {
        let items = [
            Item {
                request_id: Some("b`2 <!here>".into()),
                outcome: Err("you are not allowed to answer it.".into()),
            },
            Item {
                request_id: Some("b-1".into()),
                outcome: Ok("allowed".into()),
            },
        ];
        assert_eq!(
            report(Verdict::Allow, &items, &SlackReply),
            "*Allow selected*: 1 done, 1 refused.\n*done* · `b-1` · allowed\n\
             *refused* · `bˋ2 &lt;!here&gt;` · you are not allowed to answer it."
        );
        let many: Vec<Item> = (0..300)
            .map(|i| Item {
                request_id: Some(format!("request-{i}")),
                outcome: Ok("denied".into()),
            })
            .collect();
        let text = report(Verdict::Deny, &many, &SlackReply);
        assert!(
            text.chars().count() <= SlackReply::REPLY_MAX,
            "{}",
            text.len()
        );
        assert!(text.ends_with("more*"), "{text}");
    }

    #[test]
    fn a_long_listing_is_cut_into_sections_between_lines() {
        let text = (0..40)
            .map(|i| format!("line {i} {}", "x".repeat(200)))
            .collect::<Vec<_>>()
            .join("\n");
        let json = serde_json::to_value(sections(&text)).unwrap();
        let parts = json.as_array().unwrap();
        assert!(parts.len() >= 3, "{}", parts.len());
        for p in parts {
            let t = p["text"]["text"].as_str().unwrap();
            assert!(t.chars().count() <= SECTION_TEXT_MAX);
            assert!(t.starts_with("line "), "{t}");
        }
    }
}
