//! Text from agents and clients, made safe to print, and made to show what it is.
//!
//! A terminal obeys the control characters it is sent: ESC starts sequences that move the cursor,
//! recolour or erase what was printed, and OSC sequences can even write the clipboard. Bidi
//! controls reorder what a line appears to say. So agent-supplied text is never printed raw to a
//! terminal or a log: [`Escaped`] shows each such character as a visible escape instead.
//!
//! What a person approves (a command line, a file path, a diff) needs more than that: a
//! zero-width space, a tag character or a no-break space changes what runs without changing
//! what is seen, and a byte that is not UTF-8 has no character to show at all. [`Reveal`] shows
//! every such character and byte as a visible escape (`⟨U+202E⟩`, `⟨0xFF⟩`) and remembers
//! which it met, so that the question can say so.

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

/// Unicode's Default_Ignorable_Code_Point (format characters that show nothing: zero-width
/// spaces and joiners, variation selectors, tag characters, …), and the blank Hangul fillers.
pub fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{034F}' | '\u{061C}' | '\u{115F}' | '\u{1160}' | '\u{17B4}' | '\u{17B5}'
        | '\u{180B}'..='\u{180F}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{206F}' | '\u{3164}' | '\u{FE00}'..='\u{FE0F}' | '\u{FEFF}'
        | '\u{FFA0}' | '\u{FFF0}'..='\u{FFF8}' | '\u{1BCA0}'..='\u{1BCA3}'
        | '\u{1D173}'..='\u{1D17A}' | '\u{E0000}'..='\u{E0FFF}')
}

/// Whether `c` does not show as what it is, in text a person reads to approve it: every
/// control character (C0 with `\n` and `\t`, DEL, C1), the bidi controls, the invisible
/// characters of [`is_invisible`], the other format characters (Unicode category Cf: the Arabic
/// number signs, the interlinear annotation marks, the Egyptian hieroglyph format controls, …),
/// every whitespace but the plain space (no-break and other spaces look like a space and are
/// not one; the line and paragraph separators break lines), the blank Braille pattern, and
/// what has no defined look at all: code points not assigned (as of the Unicode version of
/// `unicode-security`'s tables), private use and noncharacters (TR39's Not_Character).
/// [`Reveal`] decides about `\n` and `\t` with its [`Layout`].
pub fn is_hidden(c: char) -> bool {
    use unicode_security::general_security_profile::IdentifierType;
    use unicode_security::GeneralSecurityProfile;
    if c.is_ascii() {
        // Most of every command and file; no table to look in.
        return c.is_ascii_control();
    }
    is_display_control(c)
        || is_invisible(c)
        || matches!(
            c.identifier_type(),
            None | Some(IdentifierType::Default_Ignorable)
        )
        || (c.is_whitespace() && c != ' ')
        || matches!(c,
            '\u{0600}'..='\u{0605}' | '\u{06DD}' | '\u{070F}' | '\u{0890}' | '\u{0891}'
            | '\u{08E2}' | '\u{2800}' | '\u{FFF9}'..='\u{FFFB}' | '\u{110BD}' | '\u{110CD}'
            | '\u{13430}'..='\u{1343F}')
}

/// How [`Reveal`] shows line breaks and tabs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Text of several lines (a shell command, a diff, a description): `\n` and `\t` are shown
    /// as themselves, as in a script; they are not hidden there. A carriage return is escaped
    /// all the same: it can hide the start of a line.
    Lines,
    /// One line (a file path, a name, a host): `\n` and `\t` are escaped and flagged too.
    Line,
}

/// The character that opens every escape of [`Reveal`]. It is escaped itself where it occurs
/// (`⟨U+27E8⟩`), so that shown text reads back to exactly one original: a `⟨` on screen always
/// starts an escape.
pub const ESCAPE_OPEN: char = '⟨';

/// How many different escapes [`Reveal::flag`] lists before "…".
const FLAG_LIST_MAX: usize = 5;

/// Shows text that a person approves exactly: every hidden character ([`is_hidden`]) as
/// `⟨U+XXXX⟩` (its code point, at least four hex digits) and every byte that is not UTF-8 as
/// `⟨0xXX⟩`; `⟨` itself as `⟨U+27E8⟩`. Nothing is dropped. It remembers which escapes it
/// wrote (other than for `⟨`), so that the question can carry [`Reveal::flag`]. One value
/// reveals every part of one question and its context.
#[derive(Debug, Default)]
pub struct Reveal {
    /// The first few different escapes written, in order.
    found: Vec<String>,
    /// Whether there were more different escapes than `found` holds.
    more: bool,
}

impl Reveal {
    /// The escaping function: `bytes` (an argv word or a path may be any bytes) as text that
    /// shows what each character and byte is.
    pub fn bytes(&mut self, bytes: &[u8], layout: Layout) -> String {
        let mut out = String::with_capacity(bytes.len());
        for chunk in bytes.utf8_chunks() {
            for c in chunk.valid().chars() {
                let kept = layout == Layout::Lines && matches!(c, '\n' | '\t');
                if c == ESCAPE_OPEN {
                    out.push_str("⟨U+27E8⟩");
                } else if is_hidden(c) && !kept {
                    let at = out.len();
                    let _ = fmt::Write::write_fmt(&mut out, format_args!("⟨U+{:04X}⟩", c as u32));
                    self.note(&out[at..]);
                } else {
                    out.push(c);
                }
            }
            for b in chunk.invalid() {
                let at = out.len();
                let _ = fmt::Write::write_fmt(&mut out, format_args!("⟨0x{b:02X}⟩"));
                self.note(&out[at..]);
            }
        }
        out
    }

    /// [`Reveal::bytes`] of a string.
    pub fn text(&mut self, s: &str, layout: Layout) -> String {
        self.bytes(s.as_bytes(), layout)
    }

    /// [`Reveal::bytes`] of an OS string (argv, a path), byte for byte.
    pub fn os(&mut self, s: &std::ffi::OsStr, layout: Layout) -> String {
        self.bytes(std::os::unix::ffi::OsStrExt::as_bytes(s), layout)
    }

    fn note(&mut self, escape: &str) {
        if !self.found.iter().any(|f| f == escape) {
            if self.found.len() < FLAG_LIST_MAX {
                self.found.push(escape.to_owned());
            } else {
                self.more = true;
            }
        }
    }

    /// Whether anything revealed so far had a hidden character or a byte that is not UTF-8.
    pub fn found(&self) -> bool {
        !self.found.is_empty()
    }

    /// The line that flags a question, when anything was hidden:
    /// `⚠ This contains hidden characters, shown as ⟨U+202E⟩ ⟨0xFF⟩`.
    pub fn flag(&self) -> Option<String> {
        self.found().then(|| {
            format!(
                "⚠ This contains hidden characters, shown as {}{}",
                self.found.join(" "),
                if self.more { " …" } else { "" }
            )
        })
    }
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

    #[test]
    fn reveal_escapes_every_hidden_character_and_flags_it() {
        let hidden = concat!(
            "\u{0}\u{1b}\r\u{7f}\u{85}\u{9b}",                    // controls
            "\u{200E}\u{061C}\u{202A}\u{202E}\u{2066}\u{2069}",   // bidi
            "\u{200B}\u{200D}\u{2060}\u{FEFF}\u{00AD}\u{034F}",   // zero-width
            "\u{115F}\u{1160}\u{3164}\u{FFA0}",                   // Hangul fillers
            "\u{E0001}\u{E0041}\u{E007F}\u{FE0F}\u{E0100}",       // tags, variation selectors
            "\u{00A0}\u{2007}\u{202F}\u{3000}\u{2028}\u{2029}",   // not the plain space
            "\u{0600}\u{FFF9}\u{13430}\u{2800}\u{180E}\u{1D173}", // other format, blank
            "\u{0378}\u{E000}\u{F8FF}\u{FFFF}\u{FDD0}\u{10FFFF}", // no defined look
        );
        for c in hidden.chars() {
            let mut r = Reveal::default();
            let shown = r.text(&format!("a{c}b"), Layout::Lines);
            assert_eq!(shown, format!("a⟨U+{:04X}⟩b", c as u32), "{c:?}");
            assert!(r.found(), "{c:?}");
            assert!(!shown.chars().any(is_hidden), "{c:?}");
        }
        // What is not hidden stays, unflagged.
        let mut r = Reveal::default();
        let plain = "ls -la ~/é e\u{301} Ж عربي 日本 👍 ½ ™ ← ∑ \"quoted\" $HOME ⟩";
        assert_eq!(r.text(plain, Layout::Lines), plain);
        assert_eq!(r.flag(), None);
        // A joiner is escaped even inside an emoji: in a command, the bytes are what counts.
        assert_eq!(r.text("👩\u{200D}💻", Layout::Lines), "👩⟨U+200D⟩💻");
    }

    #[test]
    fn reveal_keeps_lines_in_lines_and_escapes_them_in_a_line() {
        let mut r = Reveal::default();
        assert_eq!(r.text("a\n\tb", Layout::Lines), "a\n\tb");
        assert!(!r.found());
        // A carriage return is never a line break here: it could hide the start of a line.
        assert_eq!(
            r.text("safe\rrm -rf ~", Layout::Lines),
            "safe⟨U+000D⟩rm -rf ~"
        );
        let mut r = Reveal::default();
        assert_eq!(r.text("a\n\tb", Layout::Line), "a⟨U+000A⟩⟨U+0009⟩b");
        assert_eq!(
            r.flag().as_deref(),
            Some("⚠ This contains hidden characters, shown as ⟨U+000A⟩ ⟨U+0009⟩")
        );
    }

    #[test]
    fn reveal_shows_bytes_that_are_not_utf8_and_reads_back_to_one_original() {
        let mut r = Reveal::default();
        assert_eq!(
            r.bytes(b"caf\xE9 \xFF\xFEx", Layout::Line),
            "caf⟨0xE9⟩ ⟨0xFF⟩⟨0xFE⟩x"
        );
        assert_eq!(
            r.flag().as_deref(),
            Some("⚠ This contains hidden characters, shown as ⟨0xE9⟩ ⟨0xFF⟩ ⟨0xFE⟩")
        );
        // A literal escape in the text is not taken for one: its `⟨` is escaped, unflagged.
        let mut r = Reveal::default();
        assert_eq!(r.text("⟨U+202E⟩", Layout::Line), "⟨U+27E8⟩U+202E⟩");
        assert!(!r.found());
        let mut r = Reveal::default();
        assert_ne!(
            r.text("\u{202E}", Layout::Line),
            Reveal::default().text("⟨U+202E⟩", Layout::Line)
        );
        // The flag lists the first five different escapes, then "…".
        let mut r = Reveal::default();
        r.text(
            "\u{200B}\u{200B}\u{200C}\u{200D}\u{2060}\u{2061}",
            Layout::Line,
        );
        assert!(r.flag().unwrap().ends_with("⟨U+2061⟩"));
        r.text("\u{2062}", Layout::Line);
        assert!(r.flag().unwrap().ends_with("⟨U+2061⟩ …"));
    }
}
