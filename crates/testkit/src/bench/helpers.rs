//! Helpers every item shares: the ask and answer lines, bounded waits, a client's connect and
//! its events, and the SQLite file the floors write to.

use super::STEP_LIMIT;
use askrelay::client::Client;
use serde_json::{json, Value};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use std::path::Path;
use std::str::FromStr;
use std::time::{Duration, Instant};

/// A one-question yes/no ask, like an agent's.
pub(super) fn ask_line(request_id: &str, project: Option<&str>) -> Value {
    let mut v = json!({
        "op": "ask",
        "request_id": request_id,
        "caller": {"agent_id": "bench-agent", "owner_agent_id": null},
        "questions": [{
            "id": "go",
            "question": format!("Proceed with the destructive cleanup for {request_id}?"),
            "header": "Confirm",
            "options": [
                {"label": "Yes, delete them (Recommended)", "description": "Removes the three stale files."},
                {"label": "No, keep them", "description": "Aborts the cleanup."}
            ],
            "multiSelect": false
        }]
    });
    if let Some(p) = project {
        v["scope"] = json!({ "project": p });
    }
    v
}

pub(super) fn answer_line(request_id: &str) -> Value {
    json!({"op": "answer", "request_id": request_id, "question": "go",
           "select": ["No, keep them"], "by": "bench"})
}

pub(super) async fn bounded<T>(
    what: &str,
    limit: Duration,
    fut: impl std::future::Future<Output = T>,
) -> T {
    match tokio::time::timeout(limit, fut).await {
        Ok(v) => v,
        Err(_) => panic!(
            "bench: gave up after {} s waiting for {what}",
            limit.as_secs()
        ),
    }
}

/// Reads events until `name`; panics on an error event, EOF or after `STEP_LIMIT`.
pub(super) async fn expect_event(c: &mut Client, name: &str) -> Value {
    bounded(&format!("a {name:?} event"), STEP_LIMIT, async {
        loop {
            let ev = c
                .recv_json()
                .await
                .unwrap_or_else(|e| panic!("bench: reading while waiting for {name}: {e:#}"))
                .unwrap_or_else(|| panic!("bench: the daemon closed while waiting for {name}"));
            if ev["event"] == name {
                return ev;
            }
            if ev["event"] == "error" {
                panic!("bench: expected {name}, got {ev}");
            }
        }
    })
    .await
}

/// Connects, retrying while the socket is missing or its backlog is full.
pub(super) async fn connect(path: &Path) -> Client {
    let deadline = Instant::now() + STEP_LIMIT;
    loop {
        match Client::connect(path).await {
            Ok(c) => return c,
            Err(_) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            Err(e) => panic!("bench: cannot connect to {}: {e}", path.display()),
        }
    }
}

/// The pool settings of src/store.rs: WAL, synchronous NORMAL.
pub(super) async fn open_pool(path: &Path) -> sqlx::SqlitePool {
    let options = SqliteConnectOptions::from_str(&format!("sqlite://{}", path.display()))
        .unwrap()
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal)
        .foreign_keys(true)
        .busy_timeout(Duration::from_secs(10));
    SqlitePoolOptions::new()
        .max_connections(4)
        .connect_with(options)
        .await
        .expect("bench: open the floor database")
}

pub(super) async fn floor_table(pool: &sqlx::SqlitePool) {
    sqlx::query(
        "CREATE TABLE requests (key INTEGER PRIMARY KEY AUTOINCREMENT, request_id TEXT NOT NULL \
         UNIQUE, questions_json TEXT NOT NULL, status TEXT NOT NULL DEFAULT 'pending', \
         created_at INTEGER NOT NULL, answered_at INTEGER, result_json TEXT)",
    )
    .execute(pool)
    .await
    .expect("bench: floor table");
}

pub(super) fn now_ms() -> i64 {
    askrelay::domain::clock::now_ms()
}

/// The question text of [`ask_line`], which the message shows: how a follower's client finds
/// the message the leader posted (its `accepted` has no link).
pub(super) fn question_of(request_id: &str) -> String {
    format!("Proceed with the destructive cleanup for {request_id}?")
}

/// Whether `message` shows `question` (as a person reads it: agent text is escaped).
pub(super) fn shows(message: &Value, question: &str) -> bool {
    message["embeds"][0]["description"]
        .as_str()
        .is_some_and(|d| crate::discord_markdown::shown(d) == question)
}
