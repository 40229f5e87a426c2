//! A full disk heals: what the SQLite store does after a write found no room.
//!
//! SQLite appends every page a transaction changes to the WAL, and copies them into the
//! database only at a checkpoint. `wal_autocheckpoint` waits for 1,000 pages (4 MiB), and
//! nothing makes the WAL file shorter again but a `TRUNCATE` checkpoint (or the last
//! connection's close): on a small disk the whole database lives in a WAL several times its
//! size, and the space an operator frees is taken again by the next writes' frames (and the
//! health probe's) before anything is checkpointed. Every write then failed with SQLITE_FULL
//! until a restart (docs/reliability.md has the sizes).
//!
//! So once a write fails for want of space ([`Full::noticed`]), the store is *full*: every
//! write first runs `PRAGMA wal_checkpoint(TRUNCATE)` on the write connection
//! ([`Full::heal`]) and is refused while that cannot finish, so the WAL does not grow back
//! into freed space; the health check does the same, and says the store fails until it went
//! through; and a task retries it in the background ([`RETRY_FIRST`] doubling to
//! [`RETRY_MAX`]) so that the store heals, and says so in the log, with nobody writing. While
//! the disk is fine none of this runs: a write reads one flag.

use super::free_space;
use anyhow::{anyhow, Result};
use sqlx::{SqliteConnection, SqlitePool};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

/// The first background retry of the checkpoint after a write found the disk full.
const RETRY_FIRST: Duration = Duration::from_millis(500);

/// The longest wait between two background retries.
const RETRY_MAX: Duration = Duration::from_secs(5);

/// SQLite's primary result codes that a full disk gives (the extended codes carry them in
/// their low byte).
const SQLITE_IOERR: i32 = 10;
const SQLITE_FULL: i32 = 13;

pub(super) struct Full {
    /// Set by a write that failed for want of space; cleared by the checkpoint that went
    /// through after it.
    set: AtomicBool,
    /// The store's write connection (a pool of one), for the background retry.
    writer: SqlitePool,
    /// The database file; `None` in memory.
    db: Option<PathBuf>,
}

impl Full {
    pub(super) fn new(writer: SqlitePool, db: Option<PathBuf>) -> Arc<Full> {
        Arc::new(Full {
            set: AtomicBool::new(false),
            writer,
            db,
        })
    }

    /// Whether a write found the disk full and no checkpoint has gone through since.
    pub(super) fn is_set(&self) -> bool {
        self.set.load(Ordering::Acquire)
    }

    /// Called with the error of a write that failed: when it says the disk is full
    /// (SQLITE_FULL, or an I/O error while the disk has no room), the store is full until a
    /// checkpoint goes through, and a task starts retrying it.
    pub(super) fn noticed(self: &Arc<Self>, e: &anyhow::Error) {
        if !self.says_full(e) || self.set.swap(true, Ordering::AcqRel) {
            return;
        }
        tracing::warn!(
            wal_bytes = self.wal_len(),
            "the disk holding the database is full; writes are refused until there is room \
             to checkpoint the WAL"
        );
        let full = Arc::downgrade(self);
        tokio::spawn(retry(full));
    }

    /// Checkpoints the WAL on `conn` (the write connection) if the store is full: `Ok` once it
    /// is not (any more), else why not, as one line that starts "the disk holding the
    /// database is full" (what health shows).
    pub(super) async fn heal(&self, conn: &mut SqliteConnection) -> Result<()> {
        if !self.is_set() {
            return Ok(());
        }
        let wal_before = self.wal_len();
        let done: Result<(i64, i64, i64), sqlx::Error> =
            sqlx::query_as("PRAGMA wal_checkpoint(TRUNCATE)")
                .fetch_one(&mut *conn)
                .await;
        let why = match done {
            Ok((0, _, _)) => None,
            // A reader kept a snapshot the WAL's frames belong to, past the busy timeout.
            Ok(_) => Some(anyhow!("a reader kept the WAL in use")),
            Err(e) => Some(anyhow::Error::new(e)),
        };
        if let Some(why) = why {
            let room = match self.db.as_deref().map(free_space) {
                Some(Ok((dir, free))) => {
                    format!("{} KiB free in {}; ", free / 1024, dir.display())
                }
                _ => String::new(),
            };
            return Err(why.context(format!(
                "the disk holding the database is full: {room}writes resume once the WAL \
                 ({} KiB) can be checkpointed",
                wal_before / 1024
            )));
        }
        if self.set.swap(false, Ordering::AcqRel) {
            let freed = wal_before.saturating_sub(self.wal_len());
            tracing::info!(
                wal_bytes_freed = freed,
                "the disk has room again; checkpointed the WAL ({freed} bytes freed)"
            );
        }
        Ok(())
    }

    /// Whether a write's error says the disk is full.
    fn says_full(&self, e: &anyhow::Error) -> bool {
        let code = e
            .chain()
            .find_map(|c| match c.downcast_ref::<sqlx::Error>() {
                Some(sqlx::Error::Database(db)) => db.code()?.parse::<i32>().ok(),
                _ => None,
            });
        match code.map(|c| c & 0xff) {
            Some(SQLITE_FULL) => true,
            // An I/O error (a write, the WAL index growing) counts when the disk has no room.
            Some(SQLITE_IOERR) => match self.db.as_deref().map(free_space) {
                Some(Ok((_, free))) => free < super::MIN_FREE_BYTES,
                _ => false,
            },
            _ => false,
        }
    }

    /// The WAL file's size in bytes (0 when there is none).
    fn wal_len(&self) -> u64 {
        let Some(db) = &self.db else {
            return 0;
        };
        let mut wal = db.as_os_str().to_os_string();
        wal.push("-wal");
        std::fs::metadata(wal).map(|m| m.len()).unwrap_or(0)
    }
}

/// Retries the checkpoint until it goes through (here, or on a write that came first), or the
/// store is closed or dropped.
async fn retry(full: Weak<Full>) {
    let mut wait = RETRY_FIRST;
    loop {
        tokio::time::sleep(wait).await;
        let Some(full) = full.upgrade() else {
            return;
        };
        if !full.is_set() {
            return;
        }
        let Ok(mut conn) = full.writer.acquire().await else {
            return; // closed
        };
        match full.heal(&mut conn).await {
            Ok(()) => return,
            Err(e) => {
                tracing::debug!(error = %format!("{e:#}"), "the WAL cannot be checkpointed yet")
            }
        }
        wait = (wait * 2).min(RETRY_MAX);
    }
}
