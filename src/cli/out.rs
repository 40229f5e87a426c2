//! Standard output for the client commands. A reader that goes away early (`askrelay pending |
//! head`) closes the pipe; Rust's `println!` then panics (exit 101, a backtrace on stderr).
//! Here a closed stdout ends the command quietly with status 0, as the reader asked for no
//! more; any other write error is reported once, as one line.

use std::fmt;
use std::io::{self, Write};

/// Writes one line ([`outln!`](crate::outln)); see the module comment for a closed stdout.
pub fn line(args: fmt::Arguments<'_>) {
    let mut out = io::stdout().lock();
    let written = out.write_fmt(args).and_then(|()| out.write_all(b"\n"));
    if let Err(e) = written {
        closed(&e);
    }
}

/// Standard output as a writer (for generators that take one), with the same rule.
pub struct Stdout;

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        io::stdout().lock().write(buf).inspect_err(closed)
    }

    fn flush(&mut self) -> io::Result<()> {
        io::stdout().lock().flush().inspect_err(closed)
    }
}

fn closed(e: &io::Error) {
    if e.kind() == io::ErrorKind::BrokenPipe {
        std::process::exit(0);
    }
    eprintln!("askrelay: cannot write to standard output: {e}");
    std::process::exit(1);
}

/// A table for people: no borders, columns two spaces apart, rows wrapped to fit the
/// terminal's width (or `COLUMNS`); in a pipe without `COLUMNS`, rows are not wrapped, so
/// that `grep` and `cut` see one row per line. The first `whole` columns (ids, states) are
/// never wrapped; the last takes what is left.
pub fn table(header: &[&str], whole: usize) -> comfy_table::Table {
    use comfy_table::{presets, ColumnConstraint, ContentArrangement, Table};
    let mut t = Table::new();
    t.load_style(presets::NOTHING)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_header(header.to_vec());
    if let Some(width) = width() {
        t.set_width(width);
    }
    for (i, column) in t.column_iter_mut().enumerate() {
        column.set_padding((0, 2));
        if i < whole {
            column.set_constraint(ColumnConstraint::ContentWidth);
        }
    }
    t
}

/// The narrowest the last column (a question) may get before the first (request ids) gives
/// way: below this a question wraps a word or two per line and cannot be read.
const LAST_MIN: usize = 28;

/// The narrowest a shortened id gets: enough to tell ids apart in most listings.
const FIRST_MIN: usize = 12;

/// Rows for a [`table`] whose first column holds ids and whose last one text: when a width is
/// known and the ids would leave the last column fewer than [`LAST_MIN`] characters, each line
/// of a first cell is cut to fit and ends in `…`. Returns whether any was cut (the caller says
/// where the whole ids are: `--json`).
pub fn fit_ids(rows: &mut [Vec<String>]) -> bool {
    let Some(width) = width() else {
        return false;
    };
    let widest = |column: usize| {
        rows.iter()
            .filter_map(|r| r.get(column))
            .flat_map(|cell| cell.lines())
            .map(|l| l.chars().count())
            .max()
            .unwrap_or(0)
    };
    let columns = rows.first().map_or(0, Vec::len);
    if columns < 2 {
        return false;
    }
    // Every column but the last is padded by 2 on the right (see `table`).
    let middle: usize = (1..columns - 1).map(|c| widest(c) + 2).sum();
    let room = usize::from(width)
        .saturating_sub(middle + 2 + LAST_MIN)
        .max(FIRST_MIN);
    if widest(0) <= room {
        return false;
    }
    for row in rows.iter_mut() {
        if let Some(cell) = row.first_mut() {
            *cell = cell
                .lines()
                .map(|l| shorten(l, room))
                .collect::<Vec<_>>()
                .join("\n");
        }
    }
    true
}

/// `s` in at most `max` characters, the last one `…` when it was cut.
fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let mut cut: String = s.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// Prints a [`table`], each line with its trailing spaces trimmed.
pub fn print_table(t: &comfy_table::Table) {
    for row in t.lines() {
        line(format_args!("{}", row.trim_end()));
    }
}

/// The width to fit: the terminal's, else `COLUMNS`, else none.
fn width() -> Option<u16> {
    if let Some((terminal_size::Width(w), _)) = terminal_size::terminal_size_of(io::stdout()) {
        return Some(w);
    }
    std::env::var("COLUMNS")
        .ok()?
        .trim()
        .parse()
        .ok()
        .filter(|w| *w > 0)
}

#[cfg(test)]
mod tests {
    use super::shorten;

    #[test]
    fn shorten_keeps_a_prefix_and_marks_the_cut() {
        assert_eq!(shorten("approve-0f9a8b7c", 20), "approve-0f9a8b7c");
        assert_eq!(shorten("approve-0f9a8b7c", 16), "approve-0f9a8b7c");
        assert_eq!(shorten("approve-0f9a8b7c", 10), "approve-0…");
        assert_eq!(shorten("éééé", 3), "éé…");
    }
}
