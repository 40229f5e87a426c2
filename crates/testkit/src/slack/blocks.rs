//! The checks Slack makes on Block Kit (a message's `blocks`, a modal), against [`super::limits`],
//! with Slack's wording for its `errors` ("must be less than 3001 characters
//! [json-pointer:/blocks/0/text/text]"); whether slack-morphism's own types model what was sent
//! (`SlackBlock`, `SlackView`); and [`live_mentions`], which finds the control sequences Slack
//! would render live in a mrkdwn text.

use std::collections::HashSet;

use serde_json::Value;
use slack_morphism::prelude::{SlackBlock, SlackView};

use super::limits as lim;

/// One thing Slack would refuse: where (a JSON pointer), Slack's words, and the limit it breaks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Problem {
    pub(super) pointer: String,
    pub(super) message: String,
    /// The limit's name and value in `limits.rs`, or empty when it is a rule rather than a limit.
    pub(super) limit: String,
}

impl Problem {
    /// As Slack writes it in `errors`.
    pub(super) fn slack(&self) -> String {
        format!("{} [json-pointer:{}]", self.message, self.pointer)
    }

    /// As the stand-in records it.
    pub(super) fn violation(&self) -> String {
        if self.limit.is_empty() {
            self.message.clone()
        } else {
            format!("{} (limits::{})", self.message, self.limit)
        }
    }
}

/// Which surface the blocks are on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Surface {
    Message,
    View,
}

/// The block types Slack knows; anything else is refused.
const BLOCK_TYPES: &[&str] = &[
    "actions",
    "context",
    "divider",
    "file",
    "header",
    "image",
    "input",
    "markdown",
    "rich_text",
    "section",
    "table",
    "video",
];

/// The selects (single choice) Slack has; each works in section, actions and input blocks.
const SELECTS: &[&str] = &[
    "static_select",
    "external_select",
    "users_select",
    "conversations_select",
    "channels_select",
];

/// Whether an element of type `element` may sit in a `block` block, from each element's "Works
/// with block types" on <https://api.slack.com/reference/block-kit/block-elements>: multi-selects
/// and text inputs do not work in actions blocks, for one.
fn fits(block: &str, element: &str) -> bool {
    let multi = element.starts_with("multi_") && SELECTS.contains(&&element["multi_".len()..]);
    let anywhere = SELECTS.contains(&element)
        || matches!(
            element,
            "checkboxes" | "datepicker" | "radio_buttons" | "timepicker"
        );
    match block {
        "section" => {
            anywhere
                || multi
                || matches!(element, "button" | "image" | "overflow" | "workflow_button")
        }
        "actions" => {
            anywhere
                || matches!(
                    element,
                    "button" | "datetimepicker" | "overflow" | "workflow_button"
                )
        }
        "input" => {
            anywhere
                || multi
                || matches!(
                    element,
                    "datetimepicker"
                        | "email_text_input"
                        | "file_input"
                        | "number_input"
                        | "plain_text_input"
                        | "rich_text_input"
                        | "url_text_input"
                )
        }
        _ => true,
    }
}

#[derive(Default)]
struct Checker {
    out: Vec<Problem>,
}

macro_rules! limit {
    ($name:ident) => {
        (lim::$name, concat!(stringify!($name), " = "))
    };
}

impl Checker {
    fn problem(&mut self, pointer: &str, message: String, limit: String) {
        self.out.push(Problem {
            pointer: pointer.to_owned(),
            message,
            limit,
        });
    }

    /// A string at most `max` characters long (absent is fine).
    fn max_len(&mut self, v: Option<&Value>, pointer: &str, (max, name): (usize, &str)) {
        if let Some(s) = v.and_then(Value::as_str) {
            let n = s.chars().count();
            if n > max {
                self.problem(
                    pointer,
                    format!("must be less than {} characters", max + 1),
                    format!("{name}{max}, was {n}"),
                );
            }
        }
    }

    /// An array of at most `max` items (absent is fine).
    fn max_items(&mut self, v: Option<&Value>, pointer: &str, (max, name): (usize, &str)) {
        if let Some(items) = v.and_then(Value::as_array) {
            if items.len() > max {
                self.problem(
                    pointer,
                    format!("no more than {max} items allowed"),
                    format!("{name}{max}, was {}", items.len()),
                );
            }
        }
    }

    /// A text object: `{type: plain_text|mrkdwn, text}` with 1 to `max` characters.
    fn text(
        &mut self,
        v: Option<&Value>,
        pointer: &str,
        max: (usize, &str),
        plain_only: bool,
        required: bool,
    ) {
        let Some(v) = v else {
            if required {
                self.problem(pointer, "missing required field".to_owned(), String::new());
            }
            return;
        };
        let kind = v.get("type").and_then(Value::as_str);
        match kind {
            Some("plain_text") => {}
            Some("mrkdwn") if !plain_only => {}
            _ => {
                let wanted = if plain_only {
                    "plain_text"
                } else {
                    "plain_text or mrkdwn"
                };
                self.problem(
                    &format!("{pointer}/type"),
                    format!("must be a {wanted} text object"),
                    String::new(),
                );
                return;
            }
        }
        let text_ptr = format!("{pointer}/text");
        match v.get("text").and_then(Value::as_str) {
            None => self.problem(
                &text_ptr,
                "missing required field".to_owned(),
                String::new(),
            ),
            Some(t) if t.chars().count() < lim::TEXT_MIN => self.problem(
                &text_ptr,
                "must be more than 0 characters".to_owned(),
                format!("TEXT_MIN = {}", lim::TEXT_MIN),
            ),
            Some(_) => self.max_len(v.get("text"), &text_ptr, max),
        }
    }

    fn blocks(
        &mut self,
        blocks: &[Value],
        pointer: &str,
        surface: Surface,
        input_ids: &mut HashSet<String>,
    ) {
        let max = match surface {
            Surface::Message => limit!(MESSAGE_BLOCKS),
            Surface::View => limit!(VIEW_BLOCKS),
        };
        if blocks.len() > max.0 {
            self.problem(
                pointer,
                format!("no more than {} items allowed", max.0),
                format!("{}{}, was {}", max.1, max.0, blocks.len()),
            );
        }
        let mut block_ids = HashSet::new();
        for (i, b) in blocks.iter().enumerate() {
            let ptr = format!("{pointer}/{i}");
            if let Some(id) = b.get("block_id").and_then(Value::as_str) {
                self.max_len(
                    b.get("block_id"),
                    &format!("{ptr}/block_id"),
                    limit!(BLOCK_ID),
                );
                if !block_ids.insert(id.to_owned()) {
                    self.problem(
                        &format!("{ptr}/block_id"),
                        format!("duplicate block_id: {id}"),
                        String::new(),
                    );
                }
            }
            self.block(b, &ptr, input_ids);
        }
    }

    fn block(&mut self, b: &Value, ptr: &str, input_ids: &mut HashSet<String>) {
        let kind = b.get("type").and_then(Value::as_str).unwrap_or_default();
        match kind {
            "section" => {
                if b.get("text").is_none() && b.get("fields").is_none() {
                    self.problem(
                        ptr,
                        "must provide either text or fields".to_owned(),
                        String::new(),
                    );
                }
                self.text(
                    b.get("text"),
                    &format!("{ptr}/text"),
                    limit!(SECTION_TEXT),
                    false,
                    false,
                );
                self.max_items(
                    b.get("fields"),
                    &format!("{ptr}/fields"),
                    limit!(SECTION_FIELDS),
                );
                for (i, f) in array(b.get("fields")).iter().enumerate() {
                    let p = format!("{ptr}/fields/{i}");
                    self.text(Some(f), &p, limit!(SECTION_FIELD_TEXT), false, true);
                }
                if let Some(acc) = b.get("accessory") {
                    let p = format!("{ptr}/accessory");
                    self.element("section", acc, &p, &mut HashSet::new());
                }
            }
            "header" => self.text(
                b.get("text"),
                &format!("{ptr}/text"),
                limit!(HEADER_TEXT),
                true,
                true,
            ),
            "actions" => {
                let elements = array(b.get("elements"));
                if elements.is_empty() {
                    self.problem(
                        &format!("{ptr}/elements"),
                        "must provide at least 1 item".to_owned(),
                        String::new(),
                    );
                }
                self.max_items(
                    b.get("elements"),
                    &format!("{ptr}/elements"),
                    limit!(ACTIONS_ELEMENTS),
                );
                let mut ids = HashSet::new();
                for (i, e) in elements.iter().enumerate() {
                    self.element("actions", e, &format!("{ptr}/elements/{i}"), &mut ids);
                }
            }
            "context" => {
                self.max_items(
                    b.get("elements"),
                    &format!("{ptr}/elements"),
                    limit!(CONTEXT_ELEMENTS),
                );
                for (i, e) in array(b.get("elements")).iter().enumerate() {
                    if e.get("type").and_then(Value::as_str) != Some("image") {
                        let p = format!("{ptr}/elements/{i}");
                        self.text(Some(e), &p, (usize::MAX, ""), false, true);
                    }
                }
            }
            "input" => {
                self.text(
                    b.get("label"),
                    &format!("{ptr}/label"),
                    limit!(INPUT_LABEL),
                    true,
                    true,
                );
                self.text(
                    b.get("hint"),
                    &format!("{ptr}/hint"),
                    limit!(INPUT_HINT),
                    true,
                    false,
                );
                match b.get("element") {
                    Some(e) => self.element("input", e, &format!("{ptr}/element"), input_ids),
                    None => self.problem(
                        &format!("{ptr}/element"),
                        "missing required field".to_owned(),
                        String::new(),
                    ),
                }
            }
            k if BLOCK_TYPES.contains(&k) => {}
            other => self.problem(
                &format!("{ptr}/type"),
                format!("unknown block type: {other:?}"),
                String::new(),
            ),
        }
    }

    /// An interactive element in a `block` block; `ids` are the action_ids already used in its
    /// block (or, for an input, in its view).
    fn element(&mut self, block: &str, e: &Value, ptr: &str, ids: &mut HashSet<String>) {
        let kind = e.get("type").and_then(Value::as_str).unwrap_or_default();
        if !fits(block, kind) {
            self.problem(
                &format!("{ptr}/type"),
                format!("{kind} cannot be used in {block} blocks"),
                String::new(),
            );
        }
        if let Some(id) = e.get("action_id").and_then(Value::as_str) {
            self.max_len(
                e.get("action_id"),
                &format!("{ptr}/action_id"),
                limit!(ACTION_ID),
            );
            if !ids.insert(id.to_owned()) {
                self.problem(
                    &format!("{ptr}/action_id"),
                    format!("duplicate action_id: {id}"),
                    String::new(),
                );
            }
        }
        if let Some(c) = e.get("confirm") {
            self.confirm(c, &format!("{ptr}/confirm"));
        }
        match kind {
            "button" => {
                self.text(
                    e.get("text"),
                    &format!("{ptr}/text"),
                    limit!(BUTTON_TEXT),
                    true,
                    true,
                );
                self.max_len(
                    e.get("value"),
                    &format!("{ptr}/value"),
                    limit!(BUTTON_VALUE),
                );
                self.max_len(e.get("url"), &format!("{ptr}/url"), limit!(URL));
                self.max_len(
                    e.get("accessibility_label"),
                    &format!("{ptr}/accessibility_label"),
                    limit!(BUTTON_ACCESSIBILITY_LABEL),
                );
                if let Some(style) = e.get("style").and_then(Value::as_str) {
                    if style != "primary" && style != "danger" {
                        self.problem(
                            &format!("{ptr}/style"),
                            "must be one of: primary, danger".to_owned(),
                            String::new(),
                        );
                    }
                }
            }
            "static_select" | "multi_static_select" => {
                self.text(
                    e.get("placeholder"),
                    &format!("{ptr}/placeholder"),
                    limit!(PLACEHOLDER),
                    true,
                    false,
                );
                let options = self.select_options(e, ptr);
                let initial: Vec<(&Value, String)> = match kind {
                    "static_select" => e
                        .get("initial_option")
                        .map(|o| (o, format!("{ptr}/initial_option")))
                        .into_iter()
                        .collect(),
                    _ => array(e.get("initial_options"))
                        .iter()
                        .enumerate()
                        .map(|(i, o)| (o, format!("{ptr}/initial_options/{i}")))
                        .collect(),
                };
                for (o, p) in initial {
                    if !options.iter().any(|x| x.get("value") == o.get("value")) {
                        self.problem(
                            &p,
                            "must match one of the options".to_owned(),
                            String::new(),
                        );
                    }
                }
                if kind == "multi_static_select" {
                    if let Some(n) = e.get("max_selected_items").and_then(Value::as_u64) {
                        if n < lim::MULTI_SELECT_MIN_MAX_SELECTED {
                            self.problem(
                                &format!("{ptr}/max_selected_items"),
                                format!("must be at least {}", lim::MULTI_SELECT_MIN_MAX_SELECTED),
                                format!(
                                    "MULTI_SELECT_MIN_MAX_SELECTED = {}, was {n}",
                                    lim::MULTI_SELECT_MIN_MAX_SELECTED
                                ),
                            );
                        }
                    }
                }
            }
            "checkboxes" | "radio_buttons" => {
                self.max_items(
                    e.get("options"),
                    &format!("{ptr}/options"),
                    limit!(CHOICE_OPTIONS),
                );
                for (i, o) in array(e.get("options")).iter().enumerate() {
                    self.option(o, &format!("{ptr}/options/{i}"), false);
                }
            }
            "overflow" => {
                self.max_items(
                    e.get("options"),
                    &format!("{ptr}/options"),
                    limit!(OVERFLOW_OPTIONS),
                );
                for (i, o) in array(e.get("options")).iter().enumerate() {
                    self.option(o, &format!("{ptr}/options/{i}"), true);
                }
            }
            "plain_text_input" => {
                self.text(
                    e.get("placeholder"),
                    &format!("{ptr}/placeholder"),
                    limit!(PLACEHOLDER),
                    true,
                    false,
                );
                let max = e.get("max_length").and_then(Value::as_u64);
                let min = e.get("min_length").and_then(Value::as_u64);
                for (key, v) in [("max_length", max), ("min_length", min)] {
                    if let Some(n) = v.filter(|&n| n > lim::TEXT_INPUT_LENGTH) {
                        self.problem(
                            &format!("{ptr}/{key}"),
                            format!("must be less than {}", lim::TEXT_INPUT_LENGTH + 1),
                            format!("TEXT_INPUT_LENGTH = {}, was {n}", lim::TEXT_INPUT_LENGTH),
                        );
                    }
                }
                if let (Some(min), Some(max)) = (min, max) {
                    if min > max {
                        self.problem(
                            &format!("{ptr}/min_length"),
                            "must be less than or equal to max_length".to_owned(),
                            String::new(),
                        );
                    }
                }
                if let (Some(v), Some(max)) = (e.get("initial_value").and_then(Value::as_str), max)
                {
                    if v.chars().count() as u64 > max {
                        self.problem(
                            &format!("{ptr}/initial_value"),
                            format!("must be less than {} characters", max + 1),
                            String::new(),
                        );
                    }
                }
            }
            _ => {}
        }
    }

    /// The options of a select (flat or in groups), checked; returns them all.
    fn select_options<'v>(&mut self, e: &'v Value, ptr: &str) -> Vec<&'v Value> {
        let mut all = Vec::new();
        match (e.get("options"), e.get("option_groups")) {
            (Some(_), Some(_)) => self.problem(
                ptr,
                "must provide either options or option_groups, not both".to_owned(),
                String::new(),
            ),
            (None, None) => self.problem(
                &format!("{ptr}/options"),
                "must provide either options or option_groups".to_owned(),
                String::new(),
            ),
            _ => {}
        }
        self.max_items(
            e.get("options"),
            &format!("{ptr}/options"),
            limit!(SELECT_OPTIONS),
        );
        for (i, o) in array(e.get("options")).iter().enumerate() {
            self.option(o, &format!("{ptr}/options/{i}"), true);
            all.push(o);
        }
        self.max_items(
            e.get("option_groups"),
            &format!("{ptr}/option_groups"),
            limit!(SELECT_OPTION_GROUPS),
        );
        for (g, group) in array(e.get("option_groups")).iter().enumerate() {
            let gp = format!("{ptr}/option_groups/{g}");
            self.text(
                group.get("label"),
                &format!("{gp}/label"),
                limit!(OPTION_GROUP_LABEL),
                true,
                true,
            );
            self.max_items(
                group.get("options"),
                &format!("{gp}/options"),
                limit!(SELECT_OPTIONS),
            );
            for (i, o) in array(group.get("options")).iter().enumerate() {
                self.option(o, &format!("{gp}/options/{i}"), true);
                all.push(o);
            }
        }
        all
    }

    fn option(&mut self, o: &Value, ptr: &str, plain_only: bool) {
        self.text(
            o.get("text"),
            &format!("{ptr}/text"),
            limit!(OPTION_TEXT),
            plain_only,
            true,
        );
        match o.get("value").and_then(Value::as_str) {
            Some(_) => self.max_len(
                o.get("value"),
                &format!("{ptr}/value"),
                limit!(OPTION_VALUE),
            ),
            None => self.problem(
                &format!("{ptr}/value"),
                "missing required field".to_owned(),
                String::new(),
            ),
        }
        self.text(
            o.get("description"),
            &format!("{ptr}/description"),
            limit!(OPTION_DESCRIPTION),
            true,
            false,
        );
        self.max_len(o.get("url"), &format!("{ptr}/url"), limit!(URL));
    }

    fn confirm(&mut self, c: &Value, ptr: &str) {
        self.text(
            c.get("title"),
            &format!("{ptr}/title"),
            limit!(CONFIRM_TITLE),
            true,
            true,
        );
        self.text(
            c.get("text"),
            &format!("{ptr}/text"),
            limit!(CONFIRM_TEXT),
            false,
            true,
        );
        for key in ["confirm", "deny"] {
            self.text(
                c.get(key),
                &format!("{ptr}/{key}"),
                limit!(CONFIRM_BUTTON),
                true,
                true,
            );
        }
    }
}

fn array(v: Option<&Value>) -> &[Value] {
    v.and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// What Slack would refuse in a message's `blocks` (at `pointer`, e.g. `/blocks`).
pub(super) fn check_message_blocks(blocks: &[Value], pointer: &str) -> Vec<Problem> {
    let mut c = Checker::default();
    c.blocks(blocks, pointer, Surface::Message, &mut HashSet::new());
    c.out
}

/// What Slack would refuse in a view object (at `pointer`, e.g. `/view`).
pub(super) fn check_view(view: &Value, pointer: &str) -> Vec<Problem> {
    let mut c = Checker::default();
    let kind = view.get("type").and_then(Value::as_str);
    if kind != Some("modal") && kind != Some("home") {
        c.problem(
            &format!("{pointer}/type"),
            "must be one of: modal, home".to_owned(),
            String::new(),
        );
    }
    if kind == Some("modal") {
        c.text(
            view.get("title"),
            &format!("{pointer}/title"),
            limit!(MODAL_TITLE),
            true,
            true,
        );
        for key in ["submit", "close"] {
            c.text(
                view.get(key),
                &format!("{pointer}/{key}"),
                limit!(MODAL_BUTTON),
                true,
                false,
            );
        }
    }
    c.max_len(
        view.get("callback_id"),
        &format!("{pointer}/callback_id"),
        limit!(VIEW_CALLBACK_ID),
    );
    c.max_len(
        view.get("private_metadata"),
        &format!("{pointer}/private_metadata"),
        limit!(VIEW_PRIVATE_METADATA),
    );
    c.max_len(
        view.get("external_id"),
        &format!("{pointer}/external_id"),
        limit!(VIEW_EXTERNAL_ID),
    );
    match view.get("blocks").and_then(Value::as_array) {
        Some(blocks) => {
            c.blocks(
                blocks,
                &format!("{pointer}/blocks"),
                Surface::View,
                &mut HashSet::new(),
            );
            let has_input = blocks.iter().any(|b| b["type"] == "input");
            if kind == Some("modal") && has_input && view.get("submit").is_none() {
                c.problem(
                    &format!("{pointer}/submit"),
                    "must provide submit when there are input blocks".to_owned(),
                    String::new(),
                );
            }
        }
        None => c.problem(
            &format!("{pointer}/blocks"),
            "missing required field".to_owned(),
            String::new(),
        ),
    }
    c.out
}

/// Where slack-morphism's `SlackBlock` cannot model a block (it fails, or falls back to
/// `SlackBlock::Unknown`): the daemon would not read back what it sent.
pub(super) fn unmodelled_blocks(blocks: &[Value], pointer: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, b) in blocks.iter().enumerate() {
        match serde_json::from_value::<SlackBlock>(b.clone()) {
            Ok(SlackBlock::Unknown(_)) => out.push(format!(
                "{pointer}/{i}: slack-morphism's SlackBlock reads this block only as Unknown"
            )),
            Ok(_) => {}
            Err(e) => out.push(format!(
                "{pointer}/{i}: slack-morphism's SlackBlock cannot read this block: {e}"
            )),
        }
    }
    out
}

/// Where slack-morphism's `SlackView` cannot model a view.
pub(super) fn unmodelled_view(view: &Value, pointer: &str) -> Vec<String> {
    let mut out = Vec::new();
    if let Err(e) = serde_json::from_value::<SlackView>(view.clone()) {
        out.push(format!(
            "{pointer}: slack-morphism's SlackView cannot read this view: {e}"
        ));
    }
    if let Some(blocks) = view.get("blocks").and_then(Value::as_array) {
        out.extend(unmodelled_blocks(blocks, &format!("{pointer}/blocks")));
    }
    out
}

/// The control sequences Slack would render live in a mrkdwn text: every `<…>` (a mention
/// `<@U…>`, a channel `<#C…>`, `<!here>`/`<!channel>`/`<!everyone>`/`<!subteam^…>`, a link
/// `<http…|…>`), in order. Text meant to show as written has its `<`, `>` and `&` escaped as
/// `&lt;`, `&gt;` and `&amp;`, so it has none. Errs towards live: a `<` that a `>` follows
/// anywhere later, even across lines, counts.
pub fn live_mentions(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('<') {
        let after = &rest[open + 1..];
        let Some(close) = after.find('>') else { break };
        let inner = &after[..close];
        if !inner.is_empty() {
            out.push(format!("<{inner}>"));
        }
        rest = &after[close + 1..];
    }
    out
}

/// Every text of a message or view that Slack reads as mrkdwn: a message's top-level `text` and
/// every `mrkdwn` text object within, in document order. For [`live_mentions`].
pub fn mrkdwn_texts(v: &Value) -> Vec<String> {
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(o) => {
                if o.get("type").and_then(Value::as_str) == Some("mrkdwn") {
                    if let Some(t) = o.get("text").and_then(Value::as_str) {
                        out.push(t.to_owned());
                    }
                }
                for (k, child) in o {
                    if k != "text" || child.is_object() {
                        walk(child, out);
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|i| walk(i, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    if let Some(t) = v.get("text").and_then(Value::as_str) {
        out.push(t.to_owned());
    }
    walk(v, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn section(text: &str) -> Value {
        json!({"type": "section", "text": {"type": "mrkdwn", "text": text}})
    }

    fn button(action_id: &str, text: &str) -> Value {
        json!({"type": "button", "action_id": action_id,
               "text": {"type": "plain_text", "text": text}, "value": "v"})
    }

    fn option(value: &str, text: &str) -> Value {
        json!({"text": {"type": "plain_text", "text": text}, "value": value})
    }

    fn pointers(p: &[Problem]) -> Vec<&str> {
        p.iter().map(|p| p.pointer.as_str()).collect()
    }

    #[test]
    fn a_section_at_the_limit_passes_and_one_past_it_is_refused() {
        let ok = section(&"a".repeat(lim::SECTION_TEXT));
        assert!(check_message_blocks(&[ok], "/blocks").is_empty());
        let long = section(&"a".repeat(lim::SECTION_TEXT + 1));
        let p = check_message_blocks(&[long], "/blocks");
        assert_eq!(pointers(&p), ["/blocks/0/text/text"]);
        assert_eq!(
            p[0].slack(),
            "must be less than 3001 characters [json-pointer:/blocks/0/text/text]"
        );
        assert!(p[0].violation().contains("SECTION_TEXT = 3000, was 3001"));
    }

    #[test]
    fn block_counts_per_surface() {
        let fifty: Vec<Value> = (0..lim::MESSAGE_BLOCKS).map(|_| section("x")).collect();
        assert!(check_message_blocks(&fifty, "/blocks").is_empty());
        let mut fifty_one = fifty.clone();
        fifty_one.push(section("x"));
        let p = check_message_blocks(&fifty_one, "/blocks");
        assert_eq!(p[0].message, "no more than 50 items allowed");
        let view = json!({"type": "modal", "title": {"type": "plain_text", "text": "T"},
                          "blocks": fifty_one});
        assert!(check_view(&view, "/view").is_empty());
    }

    #[test]
    fn buttons_ids_and_selects_are_checked() {
        let actions = json!({"type": "actions", "block_id": "b", "elements": [
            button("a", &"x".repeat(lim::BUTTON_TEXT + 1)),
            button("a", "ok"),
            {"type": "static_select", "action_id": "s",
             "options": [option("1", "one"), option(&"v".repeat(lim::OPTION_VALUE + 1), "two")],
             "initial_option": option("9", "nine")},
            {"type": "multi_static_select", "action_id": "m", "max_selected_items": 0,
             "options": [option("1", "one")]},
        ]});
        let accessory = json!({"type": "section", "block_id": "c",
            "text": {"type": "mrkdwn", "text": "t"},
            "accessory": {"type": "multi_static_select", "action_id": "m",
                          "options": [option("1", "one")]}});
        let header = json!({"type": "header", "block_id": "b",
                            "text": {"type": "mrkdwn", "text": "h"}});
        let p = check_message_blocks(&[actions, header, accessory], "/blocks");
        assert_eq!(
            pointers(&p),
            [
                "/blocks/0/elements/0/text/text",
                "/blocks/0/elements/1/action_id",
                "/blocks/0/elements/2/options/1/value",
                "/blocks/0/elements/2/initial_option",
                "/blocks/0/elements/3/type",
                "/blocks/0/elements/3/max_selected_items",
                "/blocks/1/block_id",
                "/blocks/1/text/type",
            ]
        );
        assert_eq!(
            p[4].message,
            "multi_static_select cannot be used in actions blocks"
        );
    }

    #[test]
    fn a_modal_is_checked_and_its_inputs_share_action_ids() {
        let input = |action_id: &str| {
            json!({"type": "input", "label": {"type": "plain_text", "text": "L"},
                   "element": {"type": "plain_text_input", "action_id": action_id,
                               "max_length": lim::TEXT_INPUT_LENGTH + 1}})
        };
        let view = json!({
            "type": "modal",
            "title": {"type": "plain_text", "text": "x".repeat(lim::MODAL_TITLE + 1)},
            "private_metadata": "m".repeat(lim::VIEW_PRIVATE_METADATA + 1),
            "blocks": [input("i"), input("i")],
        });
        let p = check_view(&view, "/view");
        assert_eq!(
            pointers(&p),
            [
                "/view/title/text",
                "/view/private_metadata",
                "/view/blocks/0/element/max_length",
                "/view/blocks/1/element/action_id",
                "/view/blocks/1/element/max_length",
                "/view/submit",
            ]
        );
    }

    #[test]
    fn slack_morphism_reads_known_blocks_and_says_which_it_cannot() {
        let known = [section("x"), json!({"type": "divider"})];
        assert!(unmodelled_blocks(&known, "/blocks").is_empty());
        let odd = [json!({"type": "section", "text": "not an object"})];
        let out = unmodelled_blocks(&odd, "/blocks");
        assert_eq!(out.len(), 1, "{out:?}");
        assert!(out[0].starts_with("/blocks/0:"), "{out:?}");
    }

    #[test]
    fn live_mentions_finds_each_control_sequence() {
        assert_eq!(
            live_mentions("hi <!here> and <@U123|bob>, see <#C1> <https://x.test|x> <!channel>"),
            [
                "<!here>",
                "<@U123|bob>",
                "<#C1>",
                "<https://x.test|x>",
                "<!channel>"
            ]
        );
        assert!(live_mentions("a &lt;!here&gt; b &amp; c > d").is_empty());
        assert!(live_mentions("a < b").is_empty());
        assert_eq!(live_mentions("<!everyone\n>"), ["<!everyone\n>"]);
    }

    #[test]
    fn mrkdwn_texts_takes_the_text_and_mrkdwn_objects_only() {
        let m = json!({"text": "top", "blocks": [
            section("sec"),
            {"type": "header", "text": {"type": "plain_text", "text": "plain"}},
            {"type": "context", "elements": [{"type": "mrkdwn", "text": "ctx"}]},
        ]});
        assert_eq!(mrkdwn_texts(&m), ["top", "sec", "ctx"]);
    }
}
