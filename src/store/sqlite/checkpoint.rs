//! The WAL checkpoint, off the request path.
//!
//! SQLite copies the WAL's pages back into the database at a checkpoint. By default the connection
//! whose `COMMIT` takes the WAL past 1,000 pages runs it, inside that `COMMIT`, with an `fsync` of
//! the WAL and one of the database: on the 2-core test machine's ext4 disk that put several
//! milliseconds on at least one ask or answer in a hundred, their whole p99 (docs/performance.md,
//! 2026-12-06). So every connection of the store runs with `wal_autocheckpoint = 0`, and this task
//! checkpoints instead, on a connection of its own: once [`EVERY_WRITES`] writes went by since the
//! last checkpoint, or [`IDLE_AFTER`] after the last write. Its `fsync` still held up a write made
//! meanwhile (on ext4 here; not on tmpfs, where nothing is synced), so a checkpoint that is due
//! waits for [`QUIET`] without a write first, for at most [`MAX_DEFER`]. `PASSIVE` waits for no
//! one: the write connection keeps appending to the WAL while the pages before are copied, and
//! readers keep their snapshots; what could not be copied yet is copied next time, and once a
//! checkpoint copied everything SQLite starts the WAL file over from its beginning at the next
//! write, as it does after an automatic one.
//!
//! What is durable when does not change: with `synchronous = NORMAL` a commit reaches the WAL file
//! at once (a crash of the process loses nothing), and the WAL is synced at each checkpoint,
//! wherever it runs. A disk that filled up is healed by [`super::full`], on the write connection,
//! as before.

use sqlx::SqlitePool;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio::sync::Notify;

/// Writes between two checkpoints under load (each appends the pages it changed to the WAL; a
/// checkpoint copies each page once, however often it was written).
pub(super) const EVERY_WRITES: u64 = 100;

/// How long after the last write a checkpoint runs anyway, so that an idle daemon's WAL is
/// copied into the database and synced.
pub(super) const IDLE_AFTER: Duration = Duration::from_secs(1);

/// How long no write may start before a checkpoint that is due runs.
const QUIET: Duration = Duration::from_millis(10);

/// The longest a due checkpoint waits for [`QUIET`].
const MAX_DEFER: Duration = Duration::from_millis(500);

/// How long the WAL may be after a `PASSIVE` checkpoint (frames of 4 KiB pages: 64 MiB)
/// before the next one takes the write connection's turn ([`restart`]).
const RESTART_FRAMES: i64 = 16_384;

/// Counts the store's writes and wakes the checkpoint task.
pub(super) struct Checkpointer {
    /// Writes since the checkpoint task last started one.
    writes: AtomicU64,
    wake: Notify,
    /// Checkpoints done, and a signal after each (for tests to wait on).
    done: AtomicU64,
    checkpointed: Notify,
}

impl Checkpointer {
    /// Starts the task on `conn`, a pool of one connection kept for it (and `writer`, the
    /// store's write connection, for [`restart`]); it ends when the store drops the returned
    /// handle or the pool closes.
    pub(super) fn start(conn: SqlitePool, writer: SqlitePool) -> Arc<Checkpointer> {
        Self::start_with(conn, writer, RESTART_FRAMES)
    }

    fn start_with(conn: SqlitePool, writer: SqlitePool, restart_frames: i64) -> Arc<Checkpointer> {
        let this = Arc::new(Checkpointer {
            writes: AtomicU64::new(0),
            wake: Notify::new(),
            done: AtomicU64::new(0),
            checkpointed: Notify::new(),
        });
        tokio::spawn(run(Arc::downgrade(&this), conn, writer, restart_frames));
        this
    }

    /// Waits until `n` checkpoints were done since the store opened.
    #[cfg(test)]
    pub(super) async fn checkpoints(&self, n: u64) {
        loop {
            let signal = self.checkpointed.notified();
            if self.done.load(Ordering::Acquire) >= n {
                return;
            }
            signal.await;
        }
    }

    /// Called as each write starts: wakes the task every [`EVERY_WRITES`] writes.
    pub(super) fn wrote(&self) {
        if self.writes.fetch_add(1, Ordering::Relaxed) + 1 == EVERY_WRITES {
            self.wake.notify_one();
        }
    }
}

async fn run(this: Weak<Checkpointer>, conn: SqlitePool, writer: SqlitePool, restart_frames: i64) {
    loop {
        let Some(cp) = this.upgrade() else { return };
        // Woken by the count, or IDLE_AFTER after a quiet spell with writes to copy.
        let woken = tokio::time::timeout(IDLE_AFTER, cp.wake.notified()).await;
        if woken.is_err() && cp.writes.load(Ordering::Relaxed) == 0 {
            continue;
        }
        // Its fsync would hold up a write made meanwhile (on ext4 here), so it waits for a
        // moment without writes: up to MAX_DEFER, or until the WAL took another EVERY_WRITES.
        let started = tokio::time::Instant::now();
        loop {
            let seen = cp.writes.load(Ordering::Relaxed);
            tokio::time::sleep(QUIET).await;
            let now = cp.writes.load(Ordering::Relaxed);
            if now == seen || now >= 2 * EVERY_WRITES || started.elapsed() >= MAX_DEFER {
                break;
            }
        }
        cp.writes.store(0, Ordering::Relaxed);
        drop(cp);
        if conn.is_closed() {
            return;
        }
        let done: Result<(i64, i64, i64), sqlx::Error> =
            sqlx::query_as("PRAGMA wal_checkpoint(PASSIVE)")
                .fetch_one(&conn)
                .await;
        match done {
            Ok((_, wal_frames, copied)) => {
                tracing::trace!(wal_frames, copied, "checkpointed the WAL");
                if wal_frames >= restart_frames {
                    restart(&writer, wal_frames).await;
                }
                if let Some(cp) = this.upgrade() {
                    cp.done.fetch_add(1, Ordering::Release);
                    cp.checkpointed.notify_waiters();
                }
            }
            // A full disk is the write connection's to heal (super::full); anything else is
            // tried again at the next wake-up.
            Err(e) if conn.is_closed() => {
                tracing::debug!(error = %e, "the checkpoint connection closed");
                return;
            }
            Err(e) => tracing::debug!(error = %e, "cannot checkpoint the WAL yet"),
        }
    }
}

/// Writes that never pause for [`QUIET`] leave a `PASSIVE` checkpoint behind them: frames
/// appended while it copied keep the WAL from starting over, and the file grows. Past
/// [`RESTART_FRAMES`], the checkpoint takes the write connection's turn (the writes wait for
/// it, once) and copies everything, so that the next write starts the WAL over.
async fn restart(writer: &SqlitePool, wal_frames: i64) {
    let Ok(mut conn) = writer.acquire().await else {
        return; // closed
    };
    let done: Result<(i64, i64, i64), sqlx::Error> =
        sqlx::query_as("PRAGMA wal_checkpoint(RESTART)")
            .fetch_one(&mut *conn)
            .await;
    match done {
        Ok((0, _, _)) => tracing::info!(
            wal_frames,
            "the WAL grew past {RESTART_FRAMES} frames under writes without a pause; \
             checkpointed it in the writes' turn"
        ),
        Ok(_) => tracing::debug!(wal_frames, "a reader kept the WAL from starting over"),
        Err(e) => tracing::debug!(error = %e, "cannot checkpoint the WAL yet"),
    }
}
