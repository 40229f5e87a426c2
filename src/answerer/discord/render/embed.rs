//! The question's embed, as posted and as every edit keeps it: the title, the description (the
//! votes and confirmation lines, the question's number and text), a numbered field for each
//! described option and the footer, each cut to its fair share of the embed's fixed budget.

use super::limits::{
    EMBED_DESCRIPTION_MAX, EMBED_FIELD_NAME_MAX, EMBED_FIELD_VALUE_MAX, EMBED_FOOTER_MAX,
    EMBED_TITLE_MAX, EMBED_TOTAL_MAX, FOOTER_BUDGET, OPTION_FIELDS_MAX, OUTCOME_BUDGET,
};
use super::RenderContext;
use super::{header, inert, inert_plain, one_line, option_description, truncate, truncate_md};
use crate::domain::model::Question;
use serenity::builder::{CreateEmbed, CreateEmbedFooter};

/// The question's embed as posted (and kept by the edits).
pub fn question_embed(q: &Question, ctx: &RenderContext) -> CreateEmbed {
    build_embed(&embed_text(q, ctx), &[])
}

/// "**Typed confirmation:** Allow needs typing `prod-eu` to confirm." for a question with a
/// label of the route's `confirm_labels` (askrelay's own bold; the word is a plain word, see
/// [`crate::domain::confirm::is_word`], so a code span shows it as is); `None` elsewhere.
fn confirm_line(q: &Question, ctx: &RenderContext) -> Option<String> {
    let labels: Vec<String> = q
        .options
        .iter()
        .filter(|o| ctx.confirm_labels.contains(&o.label))
        .map(|o| inert(&one_line(&o.label)))
        .collect();
    if labels.is_empty() {
        return None;
    }
    let verb = if labels.len() == 1 { "needs" } else { "need" };
    Some(truncate_md(
        &format!(
            "**Typed confirmation:** {} {verb} typing `{}` to confirm.",
            labels.join(", "),
            ctx.confirm_word
        ),
        CONFIRM_LINE_MAX,
    ))
}

/// The most characters of the confirmation line.
const CONFIRM_LINE_MAX: usize = 400;

/// The most characters of the votes line.
const VOTES_MAX: usize = 300;

/// "**Approvals: 1 of 2** · alice: Allow" on a quorum route (askrelay's own bold, which agent
/// text cannot write), with each voter's choice; `None` elsewhere.
fn votes_line(q: &Question, ctx: &RenderContext) -> Option<String> {
    let missing = ctx.votes_missing()?;
    let needed = ctx.approvals as usize;
    let mut line = format!("**Approvals: {} of {needed}**", needed - missing);
    for v in ctx.votes {
        let mut what: Vec<String> = v
            .selected
            .iter()
            .filter_map(|&i| q.options.get(i))
            .map(|o| inert(&o.label))
            .collect();
        if let Some(c) = &v.custom {
            what.push(format!("“{}”", inert(c)));
        }
        line.push_str(&format!(" · {}: {}", inert(&v.name), what.join(", ")));
    }
    Some(truncate_md(&line, VOTES_MAX))
}

/// The texts of the question's embed, already cut to fit.
pub(super) struct EmbedText {
    title: String,
    description: String,
    fields: Vec<(String, String)>,
    footer: String,
}

pub(super) fn embed_text(q: &Question, ctx: &RenderContext) -> EmbedText {
    let title = truncate_md(&inert(header(q).unwrap_or("Question")), EMBED_TITLE_MAX);
    let footer = truncate(
        &inert_plain(&footer_text(ctx)),
        FOOTER_BUDGET.min(EMBED_FOOTER_MAX),
    );

    let mut description = String::new();
    if let Some(votes) = votes_line(q, ctx) {
        description.push_str(&votes);
        description.push('\n');
    }
    if let Some(line) = confirm_line(q, ctx) {
        description.push_str(&line);
        description.push('\n');
    }
    if ctx.question_count > 1 {
        description.push_str(&format!(
            "**Question {} of {}**\n",
            ctx.question_index.saturating_add(1),
            ctx.question_count
        ));
    }
    description.push_str(&inert(&q.question));

    // (number, label, description) of each option that has a description.
    let described: Vec<(usize, &str, &str)> = q
        .options
        .iter()
        .enumerate()
        .filter_map(|(i, o)| option_description(o, ctx).map(|d| (i + 1, o.label.as_str(), d)))
        .collect();
    // At most OPTION_FIELDS_MAX fields, numbered ("1. label", the dot escaped so that it is
    // never a list), so that no option can pose as an outcome field; past that, one field
    // lists the rest, a line each, each line starting with its number in bold, which agent
    // text cannot write.
    let field = |&(n, label, d): &(usize, &str, &str)| {
        (
            format!("{n}\\. {}", inert(label)),
            FieldText::Text(inert(d)),
        )
    };
    let mut wanted: Vec<(String, FieldText)> = Vec::new();
    if described.len() <= OPTION_FIELDS_MAX {
        wanted.extend(described.iter().map(field));
    } else {
        let keep = OPTION_FIELDS_MAX - 1;
        wanted.extend(described[..keep].iter().map(field));
        let rest = &described[keep..];
        let lines = rest
            .iter()
            .map(|&(n, label, d)| {
                (
                    format!("**{n}.** "),
                    format!("{}: {}", inert(label), inert(&one_line(d))),
                )
            })
            .collect();
        wanted.push((format!("…and {} more", rest.len()), FieldText::Lines(lines)));
    }

    // Share what is left of the embed total between the description and the fields.
    let body = EMBED_TOTAL_MAX - OUTCOME_BUDGET - title.chars().count() - footer.chars().count();
    let desc_need = description.chars().count().min(EMBED_DESCRIPTION_MAX);
    let needs: Vec<(usize, usize)> = wanted
        .iter()
        .map(|(n, v)| {
            (
                n.chars().count().min(EMBED_FIELD_NAME_MAX),
                v.len().min(EMBED_FIELD_VALUE_MAX),
            )
        })
        .collect();
    let fields_need: usize = needs.iter().map(|(n, v)| n + v).sum();
    let desc_budget = desc_need.min(body.saturating_sub(fields_need).max(body * 3 / 5));
    let fields_budget = body - desc_budget;
    let shares = fair_shares(
        &needs.iter().map(|(n, v)| n + v).collect::<Vec<_>>(),
        fields_budget,
    );
    let fields = wanted
        .iter()
        .zip(needs.iter().zip(shares))
        .filter_map(|((name, value), (&(name_need, value_need), share))| {
            let name_max = name_need.min((share / 2).max(share.saturating_sub(value_need)));
            let value_max = value_need.min(share - name_max);
            (name_max > 0 && value_max > 0)
                .then(|| (truncate_md(name, name_max), value.cut(value_max)))
        })
        .collect();

    EmbedText {
        title,
        description: truncate_md(&description, desc_budget),
        fields,
        footer,
    }
}

/// A field's value before it is cut to its share.
enum FieldText {
    Text(String),
    /// Lines, each as (its start, the rest): a line is cut in its rest, so that every line
    /// keeps its start.
    Lines(Vec<(String, String)>),
}

impl FieldText {
    fn len(&self) -> usize {
        match self {
            FieldText::Text(t) => t.chars().count(),
            FieldText::Lines(lines) => {
                let chars: usize = lines
                    .iter()
                    .map(|(a, b)| a.chars().count() + b.chars().count())
                    .sum();
                chars + lines.len().saturating_sub(1)
            }
        }
    }

    /// The value in at most `max` characters.
    fn cut(&self, max: usize) -> String {
        let lines = match self {
            FieldText::Text(t) => return truncate_md(t, max),
            FieldText::Lines(lines) => lines,
        };
        let whole = || {
            let all: Vec<String> = lines.iter().map(|(a, b)| format!("{a}{b}")).collect();
            all.join("\n")
        };
        if self.len() <= max {
            return whole();
        }
        let needs: Vec<usize> = lines
            .iter()
            .map(|(a, b)| a.chars().count() + b.chars().count())
            .collect();
        let shares = fair_shares(&needs, max.saturating_sub(lines.len().saturating_sub(1)));
        let mut out = Vec::with_capacity(lines.len());
        for (((start, rest), need), share) in lines.iter().zip(needs).zip(shares) {
            let start_len = start.chars().count();
            if share >= need {
                out.push(format!("{start}{rest}"));
            } else if share > start_len + 1 {
                out.push(format!("{start}{}", truncate_md(rest, share - start_len)));
            } else {
                // Too little room to keep each line's start: cut the whole.
                return truncate_md(&whole(), max);
            }
        }
        out.join("\n")
    }
}

fn footer_text(ctx: &RenderContext) -> String {
    let mut parts = vec![format!("request {}", ctx.request_id)];
    if let Some(agent) = ctx.agent.filter(|a| !a.trim().is_empty()) {
        parts.push(format!("agent {agent}"));
    }
    if !ctx.scope.is_empty() {
        // `call` is the hooks' key for one tool call (what `withdraw` matches), not for people.
        let labels: Vec<String> = ctx
            .scope
            .iter()
            .filter(|(k, _)| k.as_str() != "call")
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        if !labels.is_empty() {
            parts.push(labels.join(" "));
        }
    }
    parts.join(" · ")
}

/// Max-min fair shares of `budget` for the given needs; no share exceeds its need and the shares
/// never add up to more than `budget`.
fn fair_shares(needs: &[usize], budget: usize) -> Vec<usize> {
    let mut shares = vec![0; needs.len()];
    let mut order: Vec<usize> = (0..needs.len()).collect();
    order.sort_by_key(|&i| needs[i]);
    let mut left = budget;
    for (done, i) in order.into_iter().enumerate() {
        let share = needs[i].min(left / (needs.len() - done));
        shares[i] = share;
        left -= share;
    }
    shares
}

pub(super) fn build_embed(text: &EmbedText, outcome: &[(String, String)]) -> CreateEmbed {
    let mut embed = CreateEmbed::new()
        .title(text.title.clone())
        .footer(CreateEmbedFooter::new(text.footer.clone()));
    if !text.description.is_empty() {
        embed = embed.description(text.description.clone());
    }
    embed.fields(
        text.fields
            .iter()
            .chain(outcome)
            .map(|(n, v)| (n.clone(), v.clone(), false)),
    )
}
