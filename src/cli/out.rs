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
