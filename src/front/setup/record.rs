//! What `askrelay setup` changed, so that `--remove` can give each file back byte for byte.
//!
//! Before setup writes a file it records the file's bytes as they were before askrelay's first
//! setup (or that it did not exist, with the directories it had to create) and a digest of what
//! it wrote. `--remove` gives the original back only while the file is exactly what setup last
//! wrote; a file changed since (by the user, or by the agent itself, as Claude Code does to
//! `~/.claude.json`) gets the structural removal instead, which keeps those changes.
//!
//! One record per file, `<state>/setup/<sha256 of the path>.json` (`<state>`:
//! [`crate::config::state_dir`]), owner-only: the directory 0700, the file 0600. It holds a
//! copy of the file, which may hold what the user keeps private there.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The record of one file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct Record {
    /// The file, as setup names it (not through a link).
    pub path: PathBuf,
    /// Its text before askrelay's first setup; `None`: it did not exist.
    pub original: Option<String>,
    /// The directories setup created for it (deepest first), removed again when empty.
    #[serde(default)]
    pub created_dirs: Vec<PathBuf>,
    /// sha256 (hex) of what setup last wrote.
    pub written: String,
}

/// sha256 of `text`, in hex.
pub(super) fn digest(text: &str) -> String {
    format!("{:x}", Sha256::digest(text.as_bytes()))
}

/// The directories of the records.
pub(super) struct Records {
    dir: PathBuf,
}

impl Records {
    /// The records kept in askrelay's state directory.
    pub fn new() -> Records {
        Records::in_dir(crate::config::state_dir().join("setup"))
    }

    pub fn in_dir(dir: PathBuf) -> Records {
        Records { dir }
    }

    /// Where `path`'s record is: named by a digest of the path, so that any path makes a
    /// plain file name.
    fn file_for(&self, path: &Path) -> PathBuf {
        let bytes = std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str());
        self.dir.join(format!("{:x}.json", Sha256::digest(bytes)))
    }

    /// `path`'s record, when there is one that reads (one that does not is as none).
    pub fn get(&self, path: &Path) -> Option<Record> {
        let text = std::fs::read_to_string(self.file_for(path)).ok()?;
        serde_json::from_str::<Record>(&text)
            .ok()
            .filter(|r| r.path == path)
    }

    /// `path`'s record while the file is still exactly what setup last wrote (`current` is its
    /// text now; `None`, missing). A file setup created counts only while it is a regular
    /// file, so that a link put in its place is never deleted.
    pub fn unchanged(&self, path: &Path, current: Option<&str>) -> Option<Record> {
        let r = self.get(path)?;
        let same = current.is_some_and(|c| digest(c) == r.written);
        let plain = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_file());
        (same && (r.original.is_some() || plain)).then_some(r)
    }

    /// Writes `record` (owner-only, through a temporary file and a rename).
    pub fn put(&self, record: &Record) -> Result<(), String> {
        use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
        let cannot = |e: std::io::Error| {
            format!(
                "cannot keep the record of {} in {}: {e}",
                record.path.display(),
                self.dir.display()
            )
        };
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)
            .map_err(cannot)?;
        std::fs::set_permissions(&self.dir, std::fs::Permissions::from_mode(0o700))
            .map_err(cannot)?;
        let text = serde_json::to_string_pretty(record).map_err(|e| cannot(e.into()))?;
        // tempfile creates it 0600, with O_EXCL under a random name.
        let mut tmp = tempfile::NamedTempFile::new_in(&self.dir).map_err(cannot)?;
        tmp.write_all(text.as_bytes()).map_err(cannot)?;
        tmp.as_file().sync_all().map_err(cannot)?;
        tmp.persist(self.file_for(&record.path))
            .map_err(|e| cannot(e.error))?;
        Ok(())
    }

    /// Drops `path`'s record, if any.
    pub fn forget(&self, path: &Path) {
        let _ = std::fs::remove_file(self.file_for(path));
    }
}

/// The directories that writing `path` would create, deepest first.
pub(super) fn missing_dirs(path: &Path) -> Vec<PathBuf> {
    path.ancestors()
        .skip(1)
        .filter(|d| !d.as_os_str().is_empty())
        .take_while(|d| std::fs::symlink_metadata(d).is_err())
        .map(Path::to_path_buf)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_record_is_owner_only_and_matches_only_what_setup_wrote() {
        let state = tempfile::tempdir().unwrap();
        let records = Records::in_dir(state.path().join("askrelay/setup"));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        std::fs::write(&path, "new").unwrap();
        let r = Record {
            path: path.clone(),
            original: Some("{\n    \"a\": 1}".into()),
            created_dirs: Vec::new(),
            written: digest("new"),
        };
        records.put(&r).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&state.path().join("askrelay/setup")), 0o700);
        let file = records.file_for(&path);
        assert_eq!(mode(&file), 0o600);
        assert_eq!(records.get(&path), Some(r.clone()));
        assert_eq!(records.unchanged(&path, Some("new")), Some(r));
        assert_eq!(records.unchanged(&path, Some("new ")), None);
        assert_eq!(records.unchanged(&path, None), None);
        // Another path has no record.
        assert_eq!(records.get(&dir.path().join("other.json")), None);
        records.forget(&path);
        assert_eq!(records.get(&path), None);
    }

    #[test]
    fn a_file_setup_created_is_only_deleted_while_it_is_a_regular_file() {
        let state = tempfile::tempdir().unwrap();
        let records = Records::in_dir(state.path().to_owned());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hooks.json");
        let r = Record {
            path: path.clone(),
            original: None,
            created_dirs: Vec::new(),
            written: digest("{}\n"),
        };
        records.put(&r).unwrap();
        std::fs::write(dir.path().join("elsewhere"), "{}\n").unwrap();
        std::os::unix::fs::symlink(dir.path().join("elsewhere"), &path).unwrap();
        assert_eq!(records.unchanged(&path, Some("{}\n")), None);
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, "{}\n").unwrap();
        assert_eq!(records.unchanged(&path, Some("{}\n")), Some(r));
    }

    #[test]
    fn the_missing_directories_are_listed_deepest_first() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b/c.json");
        assert_eq!(
            missing_dirs(&path),
            [dir.path().join("a/b"), dir.path().join("a")]
        );
        assert!(missing_dirs(&dir.path().join("c.json")).is_empty());
    }
}
