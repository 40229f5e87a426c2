//! What the hook reads of the file that an Edit or a Write would change, to show it in a diff:
//! a regular file of at most [`MAX_FILE_BYTES`], read within [`READ_DEADLINE`]. Anything else
//! is not read, and the question says why instead ([`NotShown`]).
//!
//! The path comes from the agent, so it can name anything: `/dev/zero` never ends, a FIFO
//! without a writer blocks its open (and then its read) forever, and a file on a hung network
//! mount blocks any call on it. So the file is opened with `O_NONBLOCK` (a FIFO's open returns
//! at once) and `O_NOCTTY`, and its type and size are taken from the opened file (`fstat`), not
//! from the path; the read stops one byte past the cap; and the whole look (stat, open, read)
//! runs on a thread of its own, which the hook stops waiting for at the deadline. A `stat` of
//! the path before the open spares opening what is plainly not a regular file (opening some
//! devices does something: a tape rewinds when it is closed); the `fstat` after it decides, so
//! a path swapped for a FIFO in between is still caught.

use std::fmt;
use std::fs::{File, Metadata};
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;
use std::time::Duration;

/// The largest file the hook reads to show a diff: 1 MiB, a context file's own limit.
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// How long the hook waits for a file to be read before it asks without it.
pub const READ_DEADLINE: Duration = Duration::from_secs(3);

/// Why a file's content is not shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotShown {
    /// There is no such file (for a Write: it makes a new one).
    Missing,
    /// A directory, a FIFO, a device or a socket (what it is).
    NotRegular(&'static str),
    /// Over [`MAX_FILE_BYTES`]: its size (at least, when it grew while being read).
    TooLarge(u64),
    /// Opening or reading it failed: the error.
    Unreadable(String),
    /// Its bytes are not UTF-8 text.
    NotText,
    /// It was not read within the deadline.
    TimedOut(Duration),
}

impl fmt::Display for NotShown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotShown::Missing => f.write_str("no such file"),
            NotShown::NotRegular(what) => write!(f, "not a regular file ({what})"),
            NotShown::TooLarge(size) => write!(
                f,
                "too large ({size} bytes; the hook reads at most {MAX_FILE_BYTES})"
            ),
            NotShown::Unreadable(e) => write!(f, "unreadable ({e})"),
            NotShown::NotText => f.write_str("not UTF-8 text"),
            NotShown::TimedOut(after) => {
                write!(f, "timed out (not read within {} s)", after.as_secs_f64())
            }
        }
    }
}

/// The content of the regular file at `path`, if it is one of at most [`MAX_FILE_BYTES`] of
/// UTF-8 text and is read within [`READ_DEADLINE`]; otherwise why not. It never blocks for
/// longer than the deadline.
pub fn read_text(path: &Path) -> Result<String, NotShown> {
    let path = path.to_path_buf();
    within(READ_DEADLINE, move || read_regular(&path, MAX_FILE_BYTES))
}

/// Runs `look` on a thread of its own and waits at most `deadline` for it. A look that is
/// still blocked then is left behind: its thread ends with the process, which exits once the
/// hook has answered.
fn within<T: Send + 'static>(
    deadline: Duration,
    look: impl FnOnce() -> Result<T, NotShown> + Send + 'static,
) -> Result<T, NotShown> {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    std::thread::Builder::new()
        .name("askrelay-read".into())
        .spawn(move || {
            let _ = tx.send(look());
        })
        .map_err(|e| NotShown::Unreadable(format!("no thread to read it on: {e}")))?;
    match rx.recv_timeout(deadline) {
        Ok(result) => result,
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => Err(NotShown::TimedOut(deadline)),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => Err(NotShown::Unreadable(
            "the read stopped without a result".into(),
        )),
    }
}

fn read_regular(path: &Path, cap: u64) -> Result<String, NotShown> {
    check(&std::fs::metadata(path).map_err(io_error)?, cap)?;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK | nix::libc::O_NOCTTY)
        .open(path)
        .map_err(io_error)?;
    read_opened(file, cap)
}

/// Reads an opened file, if what was opened (by `fstat`) is a regular file within `cap`.
fn read_opened(file: File, cap: u64) -> Result<String, NotShown> {
    let meta = file.metadata().map_err(io_error)?;
    check(&meta, cap)?;
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(io_error)?;
    if bytes.len() as u64 > cap {
        return Err(NotShown::TooLarge(meta.len().max(bytes.len() as u64)));
    }
    String::from_utf8(bytes).map_err(|_| NotShown::NotText)
}

fn check(meta: &Metadata, cap: u64) -> Result<(), NotShown> {
    let t = meta.file_type();
    if !t.is_file() {
        return Err(NotShown::NotRegular(if t.is_dir() {
            "a directory"
        } else if t.is_fifo() {
            "a FIFO"
        } else if t.is_char_device() {
            "a character device"
        } else if t.is_block_device() {
            "a block device"
        } else if t.is_socket() {
            "a socket"
        } else {
            "not a file"
        }));
    }
    if meta.len() > cap {
        return Err(NotShown::TooLarge(meta.len()));
    }
    Ok(())
}

fn io_error(e: std::io::Error) -> NotShown {
    if e.kind() == std::io::ErrorKind::NotFound {
        NotShown::Missing
    } else {
        NotShown::Unreadable(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_text_files_within_the_cap_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f.txt");
        std::fs::write(&file, "hello\n").unwrap();
        assert_eq!(read_text(&file).unwrap(), "hello\n");
        assert_eq!(read_text(&dir.path().join("none")), Err(NotShown::Missing));
        assert_eq!(
            read_text(dir.path()),
            Err(NotShown::NotRegular("a directory"))
        );
        assert_eq!(
            read_text(Path::new("/dev/zero")),
            Err(NotShown::NotRegular("a character device"))
        );
        std::fs::write(&file, [b'a', 0xFF]).unwrap();
        assert_eq!(read_text(&file), Err(NotShown::NotText));
        // Exactly the cap is read; one byte over is not.
        std::fs::write(&file, "x".repeat(10)).unwrap();
        assert_eq!(read_regular(&file, 10).unwrap().len(), 10);
        assert_eq!(read_regular(&file, 9), Err(NotShown::TooLarge(10)));
    }

    /// The type that counts is the opened file's: a FIFO that a path check would have missed
    /// (swapped in after it) is opened without blocking and refused by its fstat.
    #[test]
    fn the_opened_file_decides_and_a_fifo_opens_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let opened = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(nix::libc::O_NONBLOCK | nix::libc::O_NOCTTY)
            .open(&fifo)
            .unwrap();
        assert_eq!(
            read_opened(opened, MAX_FILE_BYTES),
            Err(NotShown::NotRegular("a FIFO"))
        );
        let zero = File::open("/dev/zero").unwrap();
        assert_eq!(
            read_opened(zero, MAX_FILE_BYTES),
            Err(NotShown::NotRegular("a character device"))
        );
    }

    /// A look that blocks (a hung mount) is given up at the deadline.
    #[test]
    fn a_read_that_blocks_is_given_up_at_the_deadline() {
        let (hold, blocked) = std::sync::mpsc::channel::<()>();
        let deadline = Duration::from_millis(50);
        let started = std::time::Instant::now();
        let r: Result<String, NotShown> = within(deadline, move || {
            let _ = blocked.recv();
            Ok("never".into())
        });
        assert_eq!(r, Err(NotShown::TimedOut(deadline)));
        assert!(started.elapsed() >= deadline);
        drop(hold); // lets the left-behind thread end
        assert_eq!(
            within(Duration::from_secs(30), || -> Result<(), NotShown> {
                panic!("a bug")
            }),
            Err(NotShown::Unreadable(
                "the read stopped without a result".into()
            ))
        );
    }
}
