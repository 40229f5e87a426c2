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
