//! Agent text made inert for Discord and cut to a budget: every character that could start
//! markup is escaped the way Discord's renderer parses it, and text is cut on characters,
//! never inside an escape.

/// Cuts `s` to at most `max_chars` characters (not bytes). A cut string ends in "…", which counts
/// toward `max_chars`.
pub fn truncate(s: &str, max_chars: usize) -> String {
    if s.chars().count() <= max_chars {
        return s.to_owned();
    }
    if max_chars == 0 {
        return String::new();
    }
    let mut out: String = s.chars().take(max_chars - 1).collect();
    let trimmed = out.trim_end().len();
    out.truncate(trimmed);
    out.push('…');
    out
}

/// [`truncate`] for markdown askrelay made: an escape (a backslash and the character after it)
/// is never cut in two, so the cut text cannot end in a backslash that would escape the "…" or
/// whatever askrelay writes after it.
pub fn truncate_md(s: &str, max_chars: usize) -> String {
    if s.chars().count() <= max_chars {
        return s.to_owned();
    }
    if max_chars == 0 {
        return String::new();
    }
    let mut out = String::new();
    let mut n = 0;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        let escaped = if c == '\\' { chars.next() } else { None };
        let len = 1 + usize::from(escaped.is_some());
        if n + len > max_chars - 1 {
            break;
        }
        out.push(c);
        out.extend(escaped);
        n += len;
    }
    let trimmed = out.trim_end().len();
    out.truncate(trimmed);
    // A backslash left last (one that escaped white space, which no escape does) goes too.
    if out.chars().rev().take_while(|&c| c == '\\').count() % 2 == 1 {
        out.pop();
    }
    out.push('…');
    out
}

/// Makes agent and client text inert where Discord renders markdown (message content, embed
/// titles, descriptions and fields): every ASCII punctuation character gets a backslash.
///
/// Discord's escape rule (simple-markdown's: a backslash before any character that is not a
/// letter, a digit or white space) shows that character as it is and consumes it, so no other
/// rule can start at it. Every piece of markup starts at, or needs, ASCII punctuation: links
/// (`[`, and the `:` of `https://`), mentions, timestamps and custom emoji (`<`, `@`), code
/// (`` ` ``), formatting (`*`, `_`, `~`, `|`), and at the start of a line headings, subtext,
/// quotes and lists (`#`, `-#`, `>`, `-`, `*`, `1.`). Letters, digits, white space and other
/// characters start no rule. Nothing is tracked across the text (no code spans), so no input
/// can switch the escaping off, and the text reads exactly as written.
///
/// Besides, `@everyone` and `@here` get a zero-width space after the `@`, for whoever reads
/// the raw text; and control and bidi characters other than newline and tab are dropped: they
/// show nothing, and a bidi override would turn askrelay's own text later on the line around.
pub fn inert(s: &str) -> String {
    let chars: Vec<char> = shown_chars(s).collect();
    let mut out = String::with_capacity(s.len() + s.len() / 4);
    for (i, &c) in chars.iter().enumerate() {
        if c.is_ascii_punctuation() {
            out.push('\\');
        }
        out.push(c);
        if c == '@' && mentions_everyone(&chars[i + 1..]) {
            out.push('\u{200B}');
        }
    }
    out
}

/// [`inert`] for places Discord shows as plain text (footers, button labels, select options,
/// modal titles and placeholders), where a backslash would show: nothing renders there, and
/// still a zero-width space goes after a `<` that could begin a mention, after the `@` of
/// `@everyone` / `@here`, between `:` and `//` and between `]` and `(`, so that the text reads
/// the same and cannot be taken for a mention or a link. Control and bidi characters other
/// than newline and tab are dropped, as in [`inert`].
pub fn inert_plain(s: &str) -> String {
    let chars: Vec<char> = shown_chars(s).collect();
    let mut out = String::with_capacity(s.len() + 8);
    for (i, &c) in chars.iter().enumerate() {
        out.push(c);
        let rest = &chars[i + 1..];
        let next = rest.first().copied();
        let break_after = match c {
            '<' => next.is_some_and(|n| {
                matches!(n, '@' | '#' | '/' | ':' | 't' | 'a') || n.is_ascii_digit()
            }),
            '@' => mentions_everyone(rest),
            ':' => rest.starts_with(&['/', '/']),
            ']' => next == Some('('),
            _ => false,
        };
        if break_after {
            out.push('\u{200B}');
        }
    }
    out
}

/// The characters of `s` as they are shown: control and bidi characters other than newline and
/// tab become visible escapes (`\u{202e}`), as on a terminal, so that none reorders or hides
/// what follows and none is dropped without a trace.
pub(super) fn shown_chars(s: &str) -> impl Iterator<Item = char> + '_ {
    s.chars().flat_map(|c| {
        let visible = c == '\n' || c == '\t' || !crate::domain::text::is_display_control(c);
        let shown = if visible {
            c.to_string()
        } else {
            crate::domain::text::escape(&c.to_string())
        };
        shown.chars().collect::<Vec<_>>()
    })
}

/// Whether the text after an `@` makes it `@everyone` or `@here` (any letter case).
pub(super) fn mentions_everyone(rest: &[char]) -> bool {
    starts_with_at(rest, "everyone") || starts_with_at(rest, "here")
}

pub(super) fn starts_with_at(rest: &[char], word: &str) -> bool {
    let w: Vec<char> = word.chars().collect();
    rest.len() >= w.len()
        && rest[..w.len()]
            .iter()
            .zip(&w)
            .all(|(a, b)| a.eq_ignore_ascii_case(b))
}

pub fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}
