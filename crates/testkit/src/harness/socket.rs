//! A client's side of the socket in a test: ask lines, tool inputs, and reading the events the
//! daemon sends, each read with a deadline.

use super::within;
use askrelay::client::Client;
use serde_json::{json, Value};

/// A one-question yes/no tool input.
pub fn yes_no(id: &str) -> Value {
    json!({"questions": [{
        "id": id,
        "question": "Proceed with the destructive cleanup?",
        "header": "Confirm",
        "options": [
            {"label": "Yes, delete them (Recommended)", "description": "Removes the three stale files."},
            {"label": "No, keep them", "description": "Aborts the cleanup."}
        ],
        "multiSelect": false
    }]})
}

/// `n` options labelled "Option 0" …
pub fn options(n: usize) -> Vec<Value> {
    (0..n)
        .map(|i| json!({"label": format!("Option {i}")}))
        .collect()
}

/// An `ask` line for `input` with `request_id`.
pub fn ask_line(request_id: &str, input: &Value) -> Value {
    let mut v = input.clone();
    v["op"] = json!("ask");
    v["request_id"] = json!(request_id);
    v
}

/// The next line, parsed; fails the test on EOF, a read error, or after [`WAIT`](super::WAIT).
pub async fn recv(c: &mut Client, what: &str) -> Value {
    within(what, c.recv_json())
        .await
        .unwrap_or_else(|e| panic!("reading while waiting for {what}: {e:#}"))
        .unwrap_or_else(|| panic!("the daemon closed the connection while waiting for {what}"))
}

/// Reads events until one with `event` == `name`; fails on EOF, on an error event (unless
/// that is what is awaited) or after [`WAIT`](super::WAIT).
pub async fn expect_event(c: &mut Client, name: &str) -> Value {
    within(&format!("a {name:?} event"), async {
        loop {
            let ev = c
                .recv_json()
                .await
                .unwrap_or_else(|e| panic!("reading while waiting for {name}: {e:#}"))
                .unwrap_or_else(|| panic!("connection closed while waiting for {name}"));
            if ev["event"] == name {
                return ev;
            }
            if ev["event"] == "error" && name != "error" {
                panic!("expected {name}, got {ev}");
            }
        }
    })
    .await
}

/// Expects the daemon to close the connection next (EOF), with nothing before it.
pub async fn expect_eof(c: &mut Client, why: &str) {
    match within(why, c.recv_line()).await {
        Ok(None) => {}
        Ok(Some(line)) => panic!("{why}: expected the connection to close, got {line}"),
        Err(e) => panic!("{why}: expected a clean close, got {e:#}"),
    }
}
