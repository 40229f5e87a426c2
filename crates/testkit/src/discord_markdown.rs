//! A model of how Discord's client parses the markdown of a message or an embed, for tests: it
//! reports every construct that would be live (a link, a mention, a heading, a code block,
//! formatting…) and the text a person would see.
//!
//! Discord's parser is simple-markdown with Discord's own rules added. Parsing goes left to
//! right; at each position the first rule that matches takes its text, so a character consumed
//! by one rule (an escape, a code span) can never start another. The model follows that order:
//! - at the start of a line: block quotes (`> `, `>>> `), subtext (`-# `), headings (`# `
//!   to `### `) and list items (`- `, `* `, `1. `);
//! - code blocks (```` ``` ````, anywhere), then escapes (`\` before any character that is not a
//!   letter, digit or space shows that character), then `<…>` autolinks and mentions (user,
//!   role, channel, slash command, timestamp, custom emoji, guild navigation), bare
//!   `http(s)://` URLs, masked links `[text](url)`, `@everyone` / `@here`;
//! - formatting (`**`, `__`, `*`, `_`, `~~`, `||`), inline code, `:emoji:` names;
//! - anything else is one literal character.
//!
//! Where the model and Discord differ, the model errs towards "live": it takes ids of any
//! length, URLs in any letter case, a rule at every position (simple-markdown's text rule
//! skips some), and it applies every rule in every field (Discord renders less in titles and
//! field names). The formatting rules skip escaped characters where simple-markdown does
//! (`**`, `__`, `*`, `_`) and not where Discord's own rules do not (`~~`, `||`).
//!
//! It is used by the unit tests (as `markdown_model` in `answerer/discord/mod.rs`) and by the
//! integration tests.

/// A construct Discord would render as more than plain text.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Live {
    /// A masked link, a bare URL or an autolink, with its target.
    Link(String),
    /// `<@1>`, `<@!1>`, `<@&2>`, `<#3>`, `</cmd:4>`, `<12:browse>`, `@everyone`, `@here`, as
    /// written.
    Mention(String),
    /// `<t:5>`, `<t:5:R>`.
    Timestamp(String),
    /// A custom emoji `<:e:6>` / `<a:e:6>`, or an emoji name `:smile:`.
    Emoji(String),
    Heading,
    Subtext,
    BlockQuote,
    List,
    /// A fenced code block and its text.
    CodeBlock(String),
    /// An inline code span and its text.
    InlineCode(String),
    /// Bold, italic, underline, strike or spoiler, with the text it shows.
    Format(&'static str, String),
}

/// What a text renders as.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parsed {
    /// The live constructs, in order (an outer one before those inside it).
    pub live: Vec<Live>,
    /// The text a person sees, markup removed.
    pub display: String,
}

/// Parses `text` as Discord renders markdown.
pub fn parse(text: &str) -> Parsed {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Parsed::default();
    parse_into(&chars, &mut out);
    out
}

/// The live constructs of `text`.
pub fn live(text: &str) -> Vec<Live> {
    parse(text).live
}

fn parse_into(c: &[char], out: &mut Parsed) {
    let mut i = 0;
    while i < c.len() {
        let line_start = i == 0 || c[i - 1] == '\n';
        if line_start {
            if let Some((kind, len)) = block_marker(&c[i..]) {
                out.live.push(kind);
                i += len;
                continue;
            }
        }
        if let Some(len) = code_block(&c[i..]) {
            let inner: String = c[i + 3..i + len - 3].iter().collect();
            out.display.push_str(&inner);
            out.live.push(Live::CodeBlock(inner));
            i += len;
            continue;
        }
        if c[i] == '\\' && c.get(i + 1).is_some_and(|&n| escapable(n)) {
            out.display.push(c[i + 1]);
            i += 2;
            continue;
        }
        if let Some((kind, len)) = angle(&c[i..]) {
            out.display.extend(&c[i..i + len]);
            out.live.push(kind);
            i += len;
            continue;
        }
        if let Some(len) = url(&c[i..]) {
            let target: String = c[i..i + len].iter().collect();
            out.display.push_str(&target);
            out.live.push(Live::Link(target));
            i += len;
            continue;
        }
        if let Some((text_len, target, len)) = masked_link(&c[i..]) {
            out.live.push(Live::Link(target));
            parse_into(&c[i + 1..i + 1 + text_len], out);
            i += len;
            continue;
        }
        if let Some(word) = ["@everyone", "@here"]
            .into_iter()
            .find(|w| starts(&c[i..], w))
        {
            out.display.push_str(word);
            out.live.push(Live::Mention(word.to_owned()));
            i += word.chars().count();
            continue;
        }
        if let Some((name, open, inner_len)) = format(&c[i..]) {
            let inner = &c[i + open..i + open + inner_len];
            let mut nested = Parsed::default();
            parse_into(inner, &mut nested);
            out.live.push(Live::Format(name, nested.display.clone()));
            out.live.extend(nested.live);
            out.display.push_str(&nested.display);
            i += open * 2 + inner_len;
            continue;
        }
        if let Some((run, inner_len)) = inline_code(&c[i..]) {
            let inner: String = c[i + run..i + run + inner_len].iter().collect();
            out.display.push_str(&inner);
            out.live.push(Live::InlineCode(inner));
            i += run * 2 + inner_len;
            continue;
        }
        if let Some(len) = emoji_name(&c[i..]) {
            let name: String = c[i..i + len].iter().collect();
            out.display.push_str(&name);
            out.live.push(Live::Emoji(name));
            i += len;
            continue;
        }
        out.display.push(c[i]);
        i += 1;
    }
}

/// What simple-markdown's escape rule takes after a backslash: anything but a letter, a digit
/// or white space.
fn escapable(c: char) -> bool {
    !c.is_ascii_alphanumeric() && !c.is_whitespace()
}

fn starts(c: &[char], s: &str) -> bool {
    let mut n = 0;
    for want in s.chars() {
        match c.get(n) {
            Some(&got) if got == want => n += 1,
            _ => return false,
        }
    }
    true
}

/// The number of characters of `c` while `f` holds.
fn run(c: &[char], f: impl Fn(char) -> bool) -> usize {
    c.iter().take_while(|&&x| f(x)).count()
}

/// A block marker at the start of a line, and its length: the construct's content follows.
fn block_marker(c: &[char]) -> Option<(Live, usize)> {
    let spaces = run(c, |x| x == ' ');
    let rest = &c[spaces..];
    // Content: one space or more after the marker, then a character on the same line.
    let has_content = |from: usize| {
        let s = run(&rest[from..], |x| x == ' ');
        s > 0 && rest.get(from + s).is_some_and(|&x| x != '\n')
    };
    if starts(rest, ">>> ") || starts(rest, "> ") {
        let len = if starts(rest, ">>> ") { 4 } else { 2 };
        return Some((Live::BlockQuote, spaces + len));
    }
    if spaces == 0 && starts(rest, "-#") && has_content(2) {
        return Some((Live::Subtext, 2));
    }
    let hashes = run(rest, |x| x == '#');
    if spaces == 0 && (1..=3).contains(&hashes) && has_content(hashes) {
        return Some((Live::Heading, hashes));
    }
    let bullet = if matches!(rest.first(), Some('-' | '*')) {
        1
    } else {
        let digits = run(rest, |x| x.is_ascii_digit());
        if digits > 0 && rest.get(digits) == Some(&'.') {
            digits + 1
        } else {
            0
        }
    };
    if bullet > 0 && rest.get(bullet) == Some(&' ') && has_content(bullet) {
        return Some((Live::List, spaces + bullet));
    }
    None
}

/// A fenced code block: ```` ``` ````, at least one character, ```` ``` ````; its length.
fn code_block(c: &[char]) -> Option<usize> {
    if !starts(c, "```") {
        return None;
    }
    (4..c.len().saturating_sub(2))
        .find(|&k| starts(&c[k..], "```"))
        .map(|k| k + 3)
}

/// `<…>`: an autolink, or one of Discord's mentions; its kind and length.
fn angle(c: &[char]) -> Option<(Live, usize)> {
    if c.first() != Some(&'<') {
        return None;
    }
    let close = c.iter().position(|&x| x == '>' || x == '\n')?;
    if c[close] != '>' {
        return None;
    }
    let inner: String = c[1..close].iter().collect();
    let token: String = c[..=close].iter().collect();
    let digits = |s: &str| !s.is_empty() && s.chars().all(|x| x.is_ascii_digit());
    let word = |s: &str| !s.is_empty() && s.chars().all(|x| x.is_alphanumeric() || x == '_');
    let kind = if !inner.contains(' ') && inner.contains(":/") && !inner.starts_with(':') {
        Live::Link(inner.clone())
    } else if let Some(id) = inner.strip_prefix("@&") {
        digits(id).then(|| Live::Mention(token.clone()))?
    } else if let Some(id) = inner.strip_prefix('@') {
        digits(id.strip_prefix('!').unwrap_or(id)).then(|| Live::Mention(token.clone()))?
    } else if let Some(id) = inner.strip_prefix('#') {
        digits(id).then(|| Live::Mention(token.clone()))?
    } else if let Some(cmd) = inner.strip_prefix('/') {
        let (name, id) = cmd.rsplit_once(':')?;
        (!name.is_empty() && digits(id)).then(|| Live::Mention(token.clone()))?
    } else if let Some(t) = inner.strip_prefix("t:") {
        let (secs, style) = t.split_once(':').unwrap_or((t, ""));
        let secs = secs.strip_prefix('-').unwrap_or(secs);
        (digits(secs) && style.chars().count() <= 1).then(|| Live::Timestamp(token.clone()))?
    } else if inner.starts_with(':') || inner.starts_with("a:") {
        let rest = inner.strip_prefix('a').unwrap_or(&inner);
        let (name, id) = rest.strip_prefix(':')?.split_once(':')?;
        (word(name) && digits(id)).then(|| Live::Emoji(token.clone()))?
    } else if let Some((id, what)) = inner.split_once(':') {
        (digits(id) && !what.is_empty()).then(|| Live::Mention(token.clone()))?
    } else if !inner.contains(' ') && inner.contains('@') && !inner.starts_with('@') {
        Live::Link(format!("mailto:{inner}"))
    } else {
        return None;
    };
    Some((kind, close + 1))
}

/// A bare `http://` or `https://` URL (any letter case); its length.
fn url(c: &[char]) -> Option<usize> {
    let head: String = c.iter().take(8).collect::<String>().to_ascii_lowercase();
    let scheme = if head.starts_with("https://") {
        8
    } else if head.starts_with("http://") {
        7
    } else {
        return None;
    };
    let mut len = scheme + run(&c[scheme..], |x| !x.is_whitespace() && x != '<');
    while len > scheme && matches!(c[len - 1], '.' | ',' | ':' | ';' | '"' | '\'' | ')' | ']') {
        len -= 1;
    }
    (len > scheme).then_some(len)
}

/// `[text](target)`: the text's length, the target and the whole length. Like
/// simple-markdown, the text may hold one level of brackets and backslashes do not escape
/// them.
fn masked_link(c: &[char]) -> Option<(usize, String, usize)> {
    if c.first() != Some(&'[') {
        return None;
    }
    let mut depth = 0usize;
    let mut k = 1;
    let text_end = loop {
        match c.get(k)? {
            '[' => depth += 1,
            ']' if depth == 0 => break k,
            ']' => depth -= 1,
            _ => {}
        }
        k += 1;
    };
    if c.get(text_end + 1) != Some(&'(') {
        return None;
    }
    let mut depth = 0usize;
    let mut k = text_end + 2;
    let href_end = loop {
        match c.get(k)? {
            '(' => depth += 1,
            ')' if depth == 0 => break k,
            ')' => depth -= 1,
            '\\' => k += 1,
            _ => {}
        }
        k += 1;
    };
    let target: String = c[text_end + 2..href_end].iter().collect();
    Some((text_end - 1, target.trim().to_owned(), href_end + 1))
}

/// Formatting: its name, the length of its delimiter and of the text inside.
fn format(c: &[char]) -> Option<(&'static str, usize, usize)> {
    if starts(c, "**") {
        return closing(c, "**", true).map(|n| ("bold", 2, n));
    }
    if starts(c, "__") {
        return closing(c, "__", true).map(|n| ("underline", 2, n));
    }
    if starts(c, "~~") {
        return closing(c, "~~", false).map(|n| ("strike", 2, n));
    }
    if starts(c, "||") {
        return closing(c, "||", false).map(|n| ("spoiler", 2, n));
    }
    if starts(c, "*") {
        return em_star(c).map(|n| ("italic", 1, n));
    }
    if starts(c, "_") {
        return em_underscore(c).map(|n| ("italic", 1, n));
    }
    None
}

/// The length of the text between `delim` and the next `delim` (not followed by another of its
/// character when `escapes`, as in `**`'s rule), skipping escaped characters when `escapes`.
fn closing(c: &[char], delim: &str, escapes: bool) -> Option<usize> {
    let d = delim.chars().count();
    let first = delim.chars().next()?;
    let mut k = d;
    while k < c.len() {
        if escapes && c[k] == '\\' && k + 1 < c.len() {
            k += 2;
            continue;
        }
        if k > d && starts(&c[k..], delim) && !(escapes && c.get(k + d) == Some(&first)) {
            return Some(k - d);
        }
        k += 1;
    }
    None
}

/// simple-markdown's `*italic*`: a non-space after the opening `*`; the closing `*` (not `**`)
/// follows a unit of text: `**`, an escape, white space and then a non-space, or a character
/// other than space, `*` and `\`.
fn em_star(c: &[char]) -> Option<usize> {
    if c.get(1).is_none_or(|x| x.is_whitespace()) {
        return None;
    }
    let mut k = 1;
    let mut units = 0;
    loop {
        let ch = *c.get(k)?;
        if units > 0 && ch == '*' && c.get(k + 1) != Some(&'*') {
            return Some(k - 1);
        }
        if starts(&c[k..], "**") {
            k += 2;
        } else if ch == '\\' {
            c.get(k + 1)?;
            k += 2;
        } else if ch.is_whitespace() {
            let m = k + run(&c[k..], char::is_whitespace);
            let next = *c.get(m)?;
            if (next == '\\' && m + 1 < c.len()) || starts(&c[m..], "**") {
                k = m + 2;
            } else if next != '*' && next != '\\' {
                k = m + 1;
            } else {
                return None;
            }
        } else if ch != '*' {
            k += 1;
        } else {
            return None;
        }
        units += 1;
    }
}

/// simple-markdown's `_italic_`: closed by a `_` that no word character follows.
fn em_underscore(c: &[char]) -> Option<usize> {
    let mut k = 1;
    let mut units = 0;
    loop {
        let ch = *c.get(k)?;
        if units > 0
            && ch == '_'
            && !c
                .get(k + 1)
                .is_some_and(|&x| x.is_alphanumeric() || x == '_')
        {
            return Some(k - 1);
        }
        if starts(&c[k..], "__") || (ch == '\\' && k + 1 < c.len()) {
            k += 2;
        } else if ch != '_' && ch != '\\' {
            k += 1;
        } else {
            return None;
        }
        units += 1;
    }
}

/// An inline code span: a run of backticks, text ending in a non-backtick, and a run of exactly
/// as many; the run's length and the text's.
fn inline_code(c: &[char]) -> Option<(usize, usize)> {
    let open = run(c, |x| x == '`');
    if open == 0 {
        return None;
    }
    let mut k = open + 1;
    while k < c.len() {
        if c[k] == '`' {
            let close = run(&c[k..], |x| x == '`');
            if close == open && c[k - 1] != '`' {
                return Some((open, k - open));
            }
            k += close;
        } else {
            k += 1;
        }
    }
    None
}

/// `:name:` (letters, digits, `_`, `+`, `-`; two or more), which Discord shows as that emoji.
fn emoji_name(c: &[char]) -> Option<usize> {
    if c.first() != Some(&':') {
        return None;
    }
    let n = run(&c[1..], |x| {
        x.is_ascii_alphanumeric() || matches!(x, '_' | '+' | '-')
    });
    (n >= 2 && c.get(n + 1) == Some(&':')).then_some(n + 2)
}

/// The markdown texts of a message body (a create, an edit, an interaction callback's `data`):
/// the content and each embed's title, description, field names and values, with where each
/// is.
pub fn markdown_texts(body: &serde_json::Value) -> Vec<(String, String)> {
    let body = body.get("data").filter(|d| d.is_object()).unwrap_or(body);
    let mut out = Vec::new();
    let mut push = |at: String, v: &serde_json::Value| {
        if let Some(s) = v.as_str() {
            out.push((at, s.to_owned()));
        }
    };
    push("content".into(), &body["content"]);
    for (e, embed) in body["embeds"].as_array().into_iter().flatten().enumerate() {
        push(format!("embeds[{e}].title"), &embed["title"]);
        push(format!("embeds[{e}].description"), &embed["description"]);
        for (f, field) in embed["fields"].as_array().into_iter().flatten().enumerate() {
            push(format!("embeds[{e}].fields[{f}].name"), &field["name"]);
            push(format!("embeds[{e}].fields[{f}].value"), &field["value"]);
        }
    }
    out
}

/// The plain texts of a message body, where Discord renders no markdown: footers, button
/// labels, select options and placeholders, a modal's title and inputs.
pub fn plain_texts(body: &serde_json::Value) -> Vec<String> {
    let body = body.get("data").filter(|d| d.is_object()).unwrap_or(body);
    let mut out = Vec::new();
    for embed in body["embeds"].as_array().into_iter().flatten() {
        out.extend(embed["footer"]["text"].as_str().map(str::to_owned));
    }
    if body.get("custom_id").is_some() {
        out.extend(body["title"].as_str().map(str::to_owned));
    }
    fn walk(v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, v) in m {
                    match (k.as_str(), v) {
                        ("label" | "placeholder" | "description", serde_json::Value::String(s)) => {
                            out.push(s.clone())
                        }
                        _ => walk(v, out),
                    }
                }
            }
            serde_json::Value::Array(a) => a.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    walk(&body["components"], &mut out);
    out
}

/// Every live construct in the markdown texts of a body, with where it is.
pub fn live_in(body: &serde_json::Value) -> Vec<(String, Live)> {
    markdown_texts(body)
        .into_iter()
        .flat_map(|(at, text)| live(&text).into_iter().map(move |l| (at.clone(), l)))
        .collect()
}

/// Whether a plain text (shown without markdown) holds nothing a person could take for a
/// mention or a link: no `<` right before a mention's next character, no `@everyone` /
/// `@here`, no `://` and no `](`.
pub fn plain_is_inert(s: &str) -> bool {
    let lower = s.to_lowercase();
    let chars: Vec<char> = s.chars().collect();
    let mention = chars.windows(2).any(|w| {
        w[0] == '<' && (matches!(w[1], '@' | '#' | '/' | ':' | 't' | 'a') || w[1].is_ascii_digit())
    });
    !mention
        && !lower.contains("@everyone")
        && !lower.contains("@here")
        && !s.contains("://")
        && !s.contains("](")
}

/// Markup pieces, the dangerous ones in particular, for random agent text.
pub const PIECES: &[&str] = &[
    "`",
    "``",
    "```",
    "````",
    "```rust\n",
    "[x](y)",
    "[Open the runbook](https://evil.example)",
    "](",
    "<@1>",
    "<@!1>",
    "<@&2>",
    "<#3>",
    "</cmd:4>",
    "<t:5>",
    "<t:5:R>",
    "<:e:6>",
    "<a:e:6>",
    "<12:browse>",
    "@everyone",
    "@here",
    "@HERE",
    "https://x.y",
    "http://x.y/z",
    "<https://x.y>",
    "<a@b.c>",
    "# ",
    "## ",
    "### ",
    "-# ",
    "> ",
    ">>> ",
    "* ",
    "- ",
    "1. ",
    "*",
    "**",
    "_",
    "__",
    "~",
    "~~",
    "|",
    "||",
    "\\",
    "\\\\",
    "\n",
    "\n\n",
    " ",
    "  ",
    ":",
    ":smile:",
    "(",
    ")",
    "[",
    "]",
    "<",
    ">",
    "@",
    "#",
    "\u{202E}",
    "\u{200B}",
    "\r\n",
    "\t",
    "…",
];

/// Random agent text: markup pieces, words and other characters.
pub fn agent_text() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    let piece = prop_oneof![
        5 => prop::sample::select(PIECES).prop_map(str::to_owned),
        3 => "[a-zA-Z0-9]{1,8}",
        1 => "\\PC{1,3}",
    ];
    prop::collection::vec(piece, 0..24).prop_map(|v| v.concat())
}

/// What a person should see of agent text `s`: control and bidi characters (other than newline
/// and tab) as visible escapes (`\r`, `\u{202e}`), zero-width spaces not at all.
pub fn visible(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars().filter(|&c| c != '\u{200B}') {
        match c {
            '\r' => out.push_str("\\r"),
            c if hidden(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// A control or bidi character other than newline and tab.
fn hidden(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(
            c,
            '\u{200E}' | '\u{200F}' | '\u{061C}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
        )
}

/// What a person sees of a markdown text, without zero-width spaces.
pub fn shown(text: &str) -> String {
    parse(text).display.replace('\u{200B}', "")
}

/// A live construct as two renderings are compared: what a code block holds is left out (a
/// context's text is agent text, shown as code).
pub fn comparable(l: &Live) -> Live {
    match l {
        Live::CodeBlock(_) => Live::CodeBlock(String::new()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_finds_what_discord_renders() {
        let l = live("Deploy? ` [Open the runbook](https://evil.example) <@&123>");
        assert_eq!(
            l,
            vec![
                Live::Link("https://evil.example".into()),
                Live::Mention("<@&123>".into()),
            ]
        );
        assert_eq!(live("\\[x\\](y) \\<@1\\> https\\://x\\.y"), vec![]);
        assert_eq!(parse("a\\*b").display, "a*b");
        assert_eq!(
            live("# h\n-# s\n> q\n- l\n1. n"),
            vec![
                Live::Heading,
                Live::Subtext,
                Live::BlockQuote,
                Live::List,
                Live::List,
            ]
        );
        assert_eq!(live("x # h"), vec![]);
        assert_eq!(live("```\na\n```"), vec![Live::CodeBlock("\na\n".into())]);
        assert_eq!(live("``a` b``"), vec![Live::InlineCode("a` b".into())]);
        assert_eq!(
            live("**b** *i* _u_ ~~s~~ ||p||"),
            vec![
                Live::Format("bold", "b".into()),
                Live::Format("italic", "i".into()),
                Live::Format("italic", "u".into()),
                Live::Format("strike", "s".into()),
                Live::Format("spoiler", "p".into()),
            ]
        );
        assert_eq!(live("**a\\*\\*b**").len(), 1);
        assert_eq!(live("<t:5:R> <:e:6> </cmd:4> <#3> @here :smile:").len(), 6);
    }
}
