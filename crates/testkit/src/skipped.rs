//! What could not run on this machine, and why: each line goes to stderr and to
//! `target/skipped-tests.txt`, which `tests/run` prints at the end (sorted, without repeats), so
//! that a skip is never read as a pass.

use std::io::Write;
use std::path::{Path, PathBuf};

/// The list's file: `skipped-tests.txt` in the repository's `target/` (where `tests/run` reads
/// it, whatever `CARGO_TARGET_DIR` says).
pub fn file() -> PathBuf {
    // This crate is crates/testkit in the repository.
    let repository = Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2);
    repository
        .unwrap_or(Path::new("."))
        .join("target/skipped-tests.txt")
}

/// Records that `what` did not run here, and why.
pub fn record(what: &str, why: &str) {
    let line = format!("skipped: {what}: {why}");
    eprintln!("{line}");
    let path = file();
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = writeln!(f, "{line}");
    }
}
