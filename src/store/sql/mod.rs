//! The SQL both backends run, written once. The SQLite and PostgreSQL schemas have the same
//! tables and columns (`migrations/` and `migrations/postgres/`), and SQLite reads PostgreSQL's
//! numbered placeholders (`$1`) as PostgreSQL does, so a statement that means the same on both
//! is one text here, bound and read by one generic function over the sqlx driver ([`Driver`]).
//!
//! What is left in a backend is what really differs: SQLite's one-call transactions (each
//! write, its audit row hashed beforehand from the store's tip, and the `COMMIT` sent together)
//! and PostgreSQL's row locks, fence and notices, with the statements whose text differs
//! (PostgreSQL's arrays against SQLite's `json_each`, the listings, the health probe).
//!
//! [`rows`] turns columns into the core's values, [`select`] reads a request with its answers
//! in one query, [`reads`] holds the shared reads and [`writes`] the shared steps of a write
//! transaction.

pub(super) mod reads;
pub(super) mod rows;
pub(super) mod select;
pub(super) mod writes;

use sqlx::Database;
use std::sync::OnceLock;

/// Which SQL a backend speaks, where the shared code must tell them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Dialect {
    Sqlite,
    Postgres,
}

/// A sqlx driver the shared code runs on, with its [`Dialect`].
pub(super) trait Driver: Database {
    const DIALECT: Dialect;

    /// The rows a statement changed (sqlx gives each driver's result its own type).
    fn rows_affected(result: &Self::QueryResult) -> u64;
}

impl Driver for sqlx::Sqlite {
    const DIALECT: Dialect = Dialect::Sqlite;

    fn rows_affected(result: &Self::QueryResult) -> u64 {
        result.rows_affected()
    }
}

impl Driver for sqlx::Postgres {
    const DIALECT: Dialect = Dialect::Postgres;

    fn rows_affected(result: &Self::QueryResult) -> u64 {
        result.rows_affected()
    }
}

/// One statement that both backends run as it is written (`$1`, `$2`… placeholders).
pub(super) struct Statement {
    text: &'static str,
    /// [`Statement::committed`], made on first use.
    committed: OnceLock<String>,
}

impl Statement {
    pub(super) const fn new(text: &'static str) -> Statement {
        Statement {
            text,
            committed: OnceLock::new(),
        }
    }

    pub(super) fn text(&self) -> &'static str {
        self.text
    }

    /// SQLite's form of a statement that is a transaction of its own, sent to the connection's
    /// worker thread in one call: `BEGIN IMMEDIATE; <statement>; COMMIT` (see the module
    /// comment of [`crate::store::sqlite`]).
    pub(super) fn committed(&'static self) -> &'static str {
        self.committed
            .get_or_init(|| format!("BEGIN IMMEDIATE; {}; COMMIT", self.text))
    }
}

/// Sets a post's message, once it was posted: `$1` message, `$2` time, `$3` guild and `$4`
/// channel (each kept when NULL), then the post's key ([`writes::bind_post`]) in `$5` to `$8`.
pub(super) static RECORD_POST: Statement = Statement::new(
    "UPDATE posts SET message = $1, posted_at = $2, attempts = attempts + 1, \
     last_error = NULL, guild = COALESCE($3, guild), channel = COALESCE($4, channel) \
     WHERE request_key = $5 AND idx = $6 AND answerer = $7 AND slot = $8",
);

/// Counts a failed post: `$1` the error, then the post's key in `$2` to `$5`.
pub(super) static RECORD_POST_FAILURE: Statement = Statement::new(
    "UPDATE posts SET attempts = attempts + 1, last_error = $1 \
     WHERE request_key = $2 AND idx = $3 AND answerer = $4 AND slot = $5",
);

/// Moves a post to another channel: `$1` the channel, then the post's key in `$2` to `$5`.
pub(super) static PLACE_POST: Statement = Statement::new(
    "UPDATE posts SET channel = $1 \
     WHERE request_key = $2 AND idx = $3 AND answerer = $4 AND slot = $5",
);

/// Keeps a session's thread: `$1` answerer, `$2` channel, `$3` agent, `$4` session, `$5` the
/// thread, `$6` the time.
pub(super) static KEEP_SESSION_THREAD: Statement = Statement::new(
    "INSERT INTO session_threads (answerer, channel, agent, session, thread, created_at) \
     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (answerer, channel, agent, session) \
     DO UPDATE SET thread = EXCLUDED.thread, created_at = EXCLUDED.created_at",
);

/// Records a post's edit: `$1` its state, then the post's key in `$2` to `$5`.
pub(super) static RECORD_EDIT: Statement = Statement::new(
    "UPDATE posts SET edited = $1 \
     WHERE request_key = $2 AND idx = $3 AND answerer = $4 AND slot = $5",
);

/// A person's draft selection on a question, replacing the one before.
pub(super) static SAVE_DRAFT: Statement = Statement::new(
    "INSERT INTO drafts (request_key, idx, user_id, selected_json, updated_at) \
     VALUES ($1, $2, $3, $4, $5) ON CONFLICT (request_key, idx, user_id) \
     DO UPDATE SET selected_json = EXCLUDED.selected_json, updated_at = EXCLUDED.updated_at",
);

/// The query of `Store::voted_pending`.
pub(super) const VOTED_PENDING: &str = "SELECT DISTINCT r.key FROM requests r \
     JOIN questions q ON q.request_key = r.key \
     WHERE r.status = 'pending' AND q.answered_at IS NULL \
     AND q.votes_json IS NOT NULL AND q.votes_json <> '[]' ORDER BY r.key";
