//! Text from agents and clients, made safe to print.
//!
//! A terminal obeys the control characters it is sent: ESC starts sequences that move the cursor,
//! recolour or erase what was printed, and OSC sequences can even write the clipboard. Bidi
//! controls reorder what a line appears to say. So agent-supplied text is never printed raw to a
//! terminal or a log: [`Escaped`] shows each such character as a visible escape instead.

use std::fmt;

/// Whether `c` changes how text around it is displayed: C0 and C1 controls, DEL, and the
/// Unicode bidi controls.
pub fn is_display_control(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{200E}' | '\u{200F}' | '\u{061C}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
        )
}

/// Displays a string with every display control escaped (`\n`, `\t`, `\r`, or `\u{1b}`).
/// With `{:?}` it is also quoted, like a string's `Debug`.
#[derive(Clone, Copy)]
pub struct Escaped<'a>(pub &'a str);

impl fmt::Debug for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"")?;
        for c in self.0.chars() {
            match c {
                '"' => f.write_str("\\\"")?,
                '\\' => f.write_str("\\\\")?,
                c => write_char(f, c)?,
            }
        }
        f.write_str("\"")
    }
}

fn write_char(f: &mut fmt::Formatter<'_>, c: char) -> fmt::Result {
    match c {
        '\n' => f.write_str("\\n"),
        '\t' => f.write_str("\\t"),
        '\r' => f.write_str("\\r"),
        c if is_display_control(c) => write!(f, "\\u{{{:x}}}", c as u32),
        c => fmt::Write::write_char(f, c),
    }
}

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.chars().try_for_each(|c| write_char(f, c))
    }
}

/// The escaped form as an owned string.
pub fn escape(s: &str) -> String {
    Escaped(s).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_become_visible() {
        assert_eq!(escape("plain text é 日本"), "plain text é 日本");
        assert_eq!(escape("a\nb\tc\r"), "a\\nb\\tc\\r");
        assert_eq!(
            escape("\u{1b}[2K\u{1b}]52;c;aGk=\u{7}"),
            "\\u{1b}[2K\\u{1b}]52;c;aGk=\\u{7}"
        );
        assert_eq!(escape("x\u{9b}y\u{7f}"), "x\\u{9b}y\\u{7f}");
        assert_eq!(escape("abc\u{202e}def"), "abc\\u{202e}def");
        assert_eq!(format!("{:?}", Escaped("a\"b\u{1b}")), "\"a\\\"b\\u{1b}\"");
    }
}
