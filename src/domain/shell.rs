//! Shell words: how a POSIX shell splits a simple command line into the words a program is
//! given, for grants (docs/approvals.md, "What a grant matches"). Only a *clean* line splits:
//! one simple command whose words the shell passes on exactly as written. A line that chains
//! or redirects (`;` `&` `|` `<` `>` `(` `)`), expands (`$`, backticks, `{a,b}`), continues
//! (a backslash at a line's end), holds a comment (`#` at a word's start), a line break, or an
//! unclosed quote does not split, so that nothing a grant matches can run more than its words.
//!
//! Quotes and backslashes are read as the shell reads them, so each word is the text the
//! program gets; every character remembers whether it was quoted, so a pattern's `*` and `?`
//! are wildcards only where they were written bare.

use std::fmt;

/// One word: its characters as the program gets them, each with whether it was quoted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word(Vec<(char, bool)>);

impl Word {
    /// The text the program gets.
    pub fn text(&self) -> String {
        self.0.iter().map(|&(c, _)| c).collect()
    }

    /// Whether it is a bare `*`: in a pattern, any number of whole words.
    fn is_star(&self) -> bool {
        self.0 == [('*', false)]
    }

    /// Whether it has a bare `*` or `?` (a wildcard in a pattern).
    pub fn has_wildcard(&self) -> bool {
        self.0.iter().any(|&(c, q)| !q && (c == '*' || c == '?'))
    }

    /// Whether this pattern word matches the command word `text`: a bare `*` stands for any run
    /// of characters and a bare `?` for one, within this word only; everything else for itself.
    fn matches(&self, text: &[char]) -> bool {
        let p = &self.0;
        // One backtrack point, the last `*`: linear in practice, never exponential.
        let (mut pi, mut ti) = (0, 0);
        let mut star: Option<(usize, usize)> = None;
        while ti < text.len() {
            match p.get(pi) {
                Some(&('*', false)) => {
                    star = Some((pi, ti));
                    pi += 1;
                }
                Some(&('?', false)) => {
                    pi += 1;
                    ti += 1;
                }
                Some(&(c, _)) if c == text[ti] => {
                    pi += 1;
                    ti += 1;
                }
                _ => match star {
                    Some((sp, st)) => {
                        pi = sp + 1;
                        ti = st + 1;
                        star = Some((sp, st + 1));
                    }
                    None => return false,
                },
            }
        }
        p[pi..].iter().all(|&w| w == ('*', false))
    }
}

/// Why a line does not split cleanly into words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unclean {
    /// Nothing but blanks.
    Empty,
    /// A quote that is never closed.
    Unclosed(char),
    /// `#` at the start of a word: the rest of the line is a comment the program never sees.
    Comment,
    /// A character that chains, redirects, groups or substitutes (`;`, `|`, a line break, …).
    Control(char),
    /// An expansion: `$`, a backtick, or braces with a `,` or `..` (`{a,b}`).
    Expansion(char),
    /// A backslash at the end of a line (a continuation) or of the text.
    TrailingBackslash,
}

impl fmt::Display for Unclean {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unclean::Empty => f.write_str("it is empty"),
            Unclean::Unclosed(q) => write!(f, "a {q} quote is never closed"),
            Unclean::Comment => f.write_str("it holds a comment (`#` at the start of a word)"),
            Unclean::Control('\n') => f.write_str("it holds a line break"),
            Unclean::Control(c) if c.is_control() => {
                write!(f, "it holds the control character U+{:04X}", u32::from(*c))
            }
            Unclean::Control(c) => write!(f, "it holds `{c}`, which chains or redirects commands"),
            Unclean::Expansion('{') => {
                f.write_str("it holds a brace expansion (`{a,b}`), which makes more words")
            }
            Unclean::Expansion(c) => write!(f, "it holds `{c}`, which the shell expands"),
            Unclean::TrailingBackslash => f.write_str("it ends in a backslash"),
        }
    }
}

/// The characters that end a simple command or start another construct, unquoted.
const CONTROL: &[char] = &[';', '&', '|', '<', '>', '(', ')'];

/// Splits `line` into the words a POSIX shell would pass to the program, or says why it is not
/// one clean simple command.
pub fn split(line: &str) -> Result<Vec<Word>, Unclean> {
    let mut words = Vec::new();
    let mut cur: Vec<(char, bool)> = Vec::new();
    // Whether a word has begun (an empty quoted word `''` is a word).
    let mut started = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => {
                if started {
                    words.push(finish(std::mem::take(&mut cur))?);
                    started = false;
                }
            }
            '\'' => {
                started = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => cur.push((c, true)),
                        None => return Err(Unclean::Unclosed('\'')),
                    }
                }
            }
            '"' => {
                started = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('$') => return Err(Unclean::Expansion('$')),
                        Some('`') => return Err(Unclean::Expansion('`')),
                        Some('\\') => match chars.next() {
                            Some(e @ ('$' | '`' | '"' | '\\')) => cur.push((e, true)),
                            Some('\n') => return Err(Unclean::TrailingBackslash),
                            None => return Err(Unclean::Unclosed('"')),
                            // Before any other character the backslash is itself.
                            Some(other) => {
                                cur.push(('\\', true));
                                cur.push((other, true));
                            }
                        },
                        Some(c) => cur.push((c, true)),
                        None => return Err(Unclean::Unclosed('"')),
                    }
                }
            }
            '\\' => match chars.next() {
                Some('\n') | None => return Err(Unclean::TrailingBackslash),
                Some(e) => {
                    started = true;
                    cur.push((e, true));
                }
            },
            '#' if !started => return Err(Unclean::Comment),
            '$' | '`' => return Err(Unclean::Expansion(c)),
            c if CONTROL.contains(&c) => return Err(Unclean::Control(c)),
            c if c.is_control() => return Err(Unclean::Control(c)),
            c => {
                started = true;
                cur.push((c, false));
            }
        }
    }
    if started {
        words.push(finish(cur)?);
    }
    if words.is_empty() {
        return Err(Unclean::Empty);
    }
    Ok(words)
}

/// A finished word, unless its bare braces would expand it into more words (`{a,b}`,
/// `{1..3}`): the program would get other words than the ones shown.
fn finish(chars: Vec<(char, bool)>) -> Result<Word, Unclean> {
    let bare: String = chars
        .iter()
        .map(|&(c, q)| if q { '\u{0}' } else { c })
        .collect();
    if let Some(open) = bare.find('{') {
        if let Some(close) = bare[open..].find('}') {
            let inner = &bare[open + 1..open + close];
            if inner.contains(',') || inner.contains("..") {
                return Err(Unclean::Expansion('{'));
            }
        }
    }
    Ok(Word(chars))
}

/// Whether the pattern's words match the command's: a bare `*` word stands for any number of
/// whole words (none too), any other word for exactly one word ([`Word::matches`]).
pub fn words_match(pattern: &[Word], command: &[Word]) -> bool {
    let command: Vec<Vec<char>> = command.iter().map(|w| w.text().chars().collect()).collect();
    let (mut pi, mut ci) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ci < command.len() {
        match pattern.get(pi) {
            Some(w) if w.is_star() => {
                star = Some((pi, ci));
                pi += 1;
            }
            Some(w) if w.matches(&command[ci]) => {
                pi += 1;
                ci += 1;
            }
            _ => match star {
                Some((sp, sc)) => {
                    pi = sp + 1;
                    ci = sc + 1;
                    star = Some((sp, sc + 1));
                }
                None => return false,
            },
        }
    }
    pattern[pi..].iter().all(Word::is_star)
}

/// Whether a pattern's words end in one bare `*` after words without wildcards: a prefix.
pub fn is_prefix(pattern: &[Word]) -> bool {
    match pattern.split_last() {
        Some((last, rest)) => last.is_star() && !rest.iter().any(Word::has_wildcard),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(line: &str) -> Vec<String> {
        split(line).unwrap().iter().map(Word::text).collect()
    }

    #[test]
    fn words_are_what_the_program_gets() {
        assert_eq!(texts("git clean -fd"), ["git", "clean", "-fd"]);
        assert_eq!(
            texts("  echo   'two  words' three "),
            ["echo", "two  words", "three"]
        );
        assert_eq!(texts(r#"echo "a \"b\" \\ \q""#), ["echo", r#"a "b" \ \q"#]);
        assert_eq!(texts(r"echo a\ b"), ["echo", "a b"]);
        assert_eq!(texts("echo ''"), ["echo", ""]);
        assert_eq!(texts("echo a#b '#c' \\#d"), ["echo", "a#b", "#c", "#d"]);
        assert_eq!(
            texts("find . -name x -exec rm {} \\;"),
            ["find", ".", "-name", "x", "-exec", "rm", "{}", ";"]
        );
    }

    #[test]
    fn lines_that_are_more_than_one_simple_command_do_not_split() {
        assert_eq!(split("git clean -fdx # --dry-run"), Err(Unclean::Comment));
        assert_eq!(split("#x"), Err(Unclean::Comment));
        assert_eq!(split("a; b"), Err(Unclean::Control(';')));
        assert_eq!(split("a && b"), Err(Unclean::Control('&')));
        assert_eq!(split("a | b"), Err(Unclean::Control('|')));
        assert_eq!(split("a > f"), Err(Unclean::Control('>')));
        assert_eq!(split("a\nb"), Err(Unclean::Control('\n')));
        assert_eq!(split("a\rb"), Err(Unclean::Control('\r')));
        assert_eq!(split("echo $(id)"), Err(Unclean::Expansion('$')));
        assert_eq!(split("echo \"$(id)\""), Err(Unclean::Expansion('$')));
        assert_eq!(split("echo \"`id`\""), Err(Unclean::Expansion('`')));
        assert_eq!(split("echo `id`"), Err(Unclean::Expansion('`')));
        assert_eq!(split("echo {a,b}"), Err(Unclean::Expansion('{')));
        assert_eq!(split("echo x{1..3}"), Err(Unclean::Expansion('{')));
        assert_eq!(split("echo 'a"), Err(Unclean::Unclosed('\'')));
        assert_eq!(split("echo \"a"), Err(Unclean::Unclosed('"')));
        assert_eq!(split("echo a\\"), Err(Unclean::TrailingBackslash));
        assert_eq!(split("echo a\\\nb"), Err(Unclean::TrailingBackslash));
        assert_eq!(split("   "), Err(Unclean::Empty));
        // Quoted, they are only text.
        assert_eq!(
            texts("echo ';' '$(id)' \\| '{a,b}'"),
            ["echo", ";", "$(id)", "|", "{a,b}"]
        );
    }

    fn m(pattern: &str, command: &str) -> bool {
        words_match(&split(pattern).unwrap(), &split(command).unwrap())
    }

    #[test]
    fn a_star_word_stands_for_whole_words() {
        assert!(m("git * --dry-run", "git clean -fd --dry-run"));
        assert!(m("git * --dry-run", "git --dry-run"));
        assert!(!m("git * --dry-run", "git clean -fd '# --dry-run'"));
        assert!(!m("git * --dry-run", "git clean -fd x--dry-run"));
        assert!(m("cargo test *", "cargo test"));
        assert!(m("cargo test *", "cargo   test --all 'a b'"));
        assert!(!m("cargo test *", "cargo build"));
        assert!(m("ls ?", "ls a"));
        assert!(!m("ls ?", "ls ab"));
        assert!(m("rm *.tmp", "rm a.tmp"));
        assert!(!m("rm *.tmp", "rm a.tmp b.tmp"));
        // A quoted wildcard is only itself.
        assert!(m("echo '*'", "echo '*'"));
        assert!(!m("echo '*'", "echo x"));
        assert!(m("a * b * c", "a x b y b z c"));
        assert!(!m("a * b * c", "a x c"));
    }

    #[test]
    fn a_prefix_is_plain_words_then_one_star() {
        let p = |s: &str| is_prefix(&split(s).unwrap());
        assert!(p("cargo test *"));
        assert!(!p("git * --dry-run"));
        assert!(!p("cargo test"));
        assert!(!p("cargo t?st *"));
        assert!(!p("cargo test '*'"));
    }
}
