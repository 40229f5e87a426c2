//! What a route posts while nobody answers (docs/slack.md, "Reminders and escalation"): a
//! note in the question's thread (a reminder, an escalation step's mentions) and a copy of the
//! question in a DM, with the same controls and a line that says why it is there.
//!
//! Mentions are askrelay's own: the ids come from the config, whose shapes are checked at load
//! (`U…`/`W…`, `S…`), so `<@…>` and `<!subteam^…>` can hold nothing else. Agent text goes
//! through the question's rendering, escaped as everywhere.

use super::{md, question, truncate, Message, View, MESSAGE_BLOCKS_MAX, SECTION_TEXT_MAX};
use crate::answerer::chat::admit::withdrawn_text;
use crate::domain::expiry::human;
use crate::domain::model::{Context, Question};
use crate::domain::request::WithdrawReason;
use slack_morphism::prelude::*;
use std::time::Duration;

/// The mentions of `users` and `groups`, as Slack writes them; `None` for nobody.
pub fn mentions(users: &[String], groups: &[String]) -> Option<String> {
    let all: Vec<String> = users
        .iter()
        .map(|u| format!("<@{u}>"))
        .chain(groups.iter().map(|g| format!("<!subteam^{g}>")))
        .collect();
    (!all.is_empty()).then(|| all.join(" "))
}

/// The first words of a reminder of a question that has `waited` so far, and still needs
/// `votes_missing` more approvals on a quorum route.
pub fn reminder_lead(waited: Duration, votes_missing: Option<usize>) -> String {
    let age = human(waited);
    match votes_missing {
        Some(n) => format!(
            "*Reminder:* this question has waited {age}; it needs {n} more approval{}.",
            if n == 1 { "" } else { "s" }
        ),
        None => format!("*Reminder:* this question has waited {age} for an answer."),
    }
}

/// The line above a route's DM copy: why it is here, and a link to the question in its
/// channel once that is posted.
pub fn dm_lead(original: Option<&str>) -> String {
    let link = original
        .map(|l| format!(" <{l}|See the question in its channel.>"))
        .unwrap_or_default();
    format!("*Asked of you directly*, as on its route.{link}")
}

/// The first words of an escalation step's note or copy, with a link to the question's own
/// message when there is one.
pub fn escalation_lead(waited: Duration, original: Option<&str>) -> String {
    let link = original
        .map(|l| format!(" <{l}|See the question in its channel.>"))
        .unwrap_or_default();
    format!("*Escalated:* no answer after {}.{link}", human(waited))
}

/// A note in a question's thread: `lead`, then the mentions; no controls, so it is never a
/// new question, and never edited but to say it is not needed any more.
pub fn note(lead: &str, mentions: Option<&str>) -> Message {
    let text = match mentions {
        Some(m) => format!("{lead} {m}"),
        None => lead.to_owned(),
    };
    let text = truncate(&text, SECTION_TEXT_MAX);
    Message {
        blocks: vec![SlackSectionBlock::new()
            .with_block_id("note".into())
            .with_text(md(text.clone()))
            .into()],
        text,
    }
}

/// A copy of question `q` (an escalation step's DM): `lead` above the question as its own
/// message shows it, with the same controls.
pub fn copy(q: &Question, view: &View, lead: &str, context: Option<&Context>) -> Message {
    let mut m = question(q, view, context);
    m.blocks.insert(
        0,
        SlackSectionBlock::new()
            .with_block_id("lead".into())
            .with_text(md(truncate(lead, SECTION_TEXT_MAX)))
            .into(),
    );
    m.blocks.truncate(MESSAGE_BLOCKS_MAX);
    m
}

/// A note of a request its agent went on without: nobody needs to come any more.
pub fn note_withdrawn(reason: WithdrawReason) -> Message {
    note(
        &format!("*No longer needed:* {}", withdrawn_text(reason)),
        None,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_note_mentions_users_and_groups_and_has_no_controls() {
        let m = mentions(&["U0ONCALL1".into()], &["S0ONCALL1".into()]);
        assert_eq!(m.as_deref(), Some("<@U0ONCALL1> <!subteam^S0ONCALL1>"));
        assert_eq!(mentions(&[], &[]), None);
        let lead = reminder_lead(Duration::from_secs(900), None);
        assert_eq!(
            lead,
            "*Reminder:* this question has waited 15m for an answer."
        );
        let n = note(&lead, m.as_deref());
        assert_eq!(n.text, format!("{lead} <@U0ONCALL1> <!subteam^S0ONCALL1>"));
        let json = serde_json::to_value(&n.blocks).unwrap();
        assert_eq!(json.as_array().unwrap().len(), 1);
        assert!(!json.to_string().contains("actions"), "{json}");
        assert_eq!(
            reminder_lead(Duration::from_secs(60), Some(1)),
            "*Reminder:* this question has waited 1m; it needs 1 more approval."
        );
        assert_eq!(
            escalation_lead(Duration::from_secs(1800), Some("https://slack.com/archives/C1/p1")),
            "*Escalated:* no answer after 30m. <https://slack.com/archives/C1/p1|See the question in its channel.>"
        );
    }
}
