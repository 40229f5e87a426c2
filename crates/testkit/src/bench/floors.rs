//! The floors: what the ask and answer paths cannot beat (a Unix-socket round trip, a WebSocket
//! frame, one SQLite WAL commit of a similar row), measured without the daemon.

use super::helpers::{ask_line, bounded, floor_table, now_ms, open_pool};
use super::report::Latency;
use super::{CHANNEL, STEP_LIMIT};
use crate::fixtures::{self, Clicker};
use serde_json::{json, Value};
use std::time::Instant;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};

/// Floor of the ask path: the client writes the same `ask` line the daemon gets; a minimal
/// server reads the line, INSERTs a row like the daemon's request row (one WAL commit), and
/// writes a one-line reply that the client reads. Timed from the write to the read.
pub(super) async fn ask_floor(n: usize, warmup: usize) -> Latency {
    let dir = tempfile::tempdir().unwrap();
    let pool = open_pool(&dir.path().join("floor.db")).await;
    floor_table(&pool).await;
    let sock = dir.path().join("floor.sock");
    let listener = UnixListener::bind(&sock).unwrap();
    let server_pool = pool.clone();
    let server = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let (rd, mut wr) = stream.into_split();
        let mut rd = BufReader::new(rd);
        let mut line = String::new();
        while rd.read_line(&mut line).await.unwrap_or(0) > 0 {
            let v: Value = serde_json::from_str(&line).unwrap();
            sqlx::query(
                "INSERT INTO requests (request_id, questions_json, created_at) VALUES (?, ?, ?)",
            )
            .bind(v["request_id"].as_str().unwrap_or_default())
            .bind(v["questions"].to_string())
            .bind(now_ms())
            .execute(&server_pool)
            .await
            .unwrap();
            wr.write_all(b"{\"event\":\"stored\"}\n").await.unwrap();
            line.clear();
        }
    });
    let stream = UnixStream::connect(&sock).await.unwrap();
    let (rd, mut wr) = stream.into_split();
    let mut rd = BufReader::new(rd);
    let mut samples = Vec::with_capacity(n);
    let mut reply = String::new();
    for i in 0..warmup + n {
        let mut line = ask_line(&format!("floor-{i}"), None).to_string();
        line.push('\n');
        let t0 = Instant::now();
        wr.write_all(line.as_bytes()).await.unwrap();
        reply.clear();
        bounded("the floor reply", STEP_LIMIT, rd.read_line(&mut reply))
            .await
            .unwrap();
        if i >= warmup {
            samples.push(t0.elapsed());
        }
    }
    drop(wr);
    let _ = server.await;
    pool.close().await;
    Latency::of(samples)
}

/// Floor of the answer path: a WebSocket server sends the same INTERACTION_CREATE frame the
/// stand-in sends; a minimal client reads it, UPDATEs one row (one WAL commit) and writes one
/// line to a Unix socket, which the timing side reads. Timed from the frame's send to the read.
pub(super) async fn answer_floor(n: usize, warmup: usize) -> Latency {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;
    let dir = tempfile::tempdir().unwrap();
    let pool = open_pool(&dir.path().join("floor.db")).await;
    floor_table(&pool).await;
    for i in 0..(warmup + n) {
        sqlx::query(
            "INSERT INTO requests (request_id, questions_json, created_at) VALUES (?, ?, ?)",
        )
        .bind(format!("floor-{i}"))
        .bind(ask_line("x", None)["questions"].to_string())
        .bind(now_ms())
        .execute(&pool)
        .await
        .unwrap();
    }
    let sock = dir.path().join("floor.sock");
    let unix = UnixListener::bind(&sock).unwrap();
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = tcp.local_addr().unwrap();
    // The "daemon": a WebSocket client that commits and tells its agent.
    let client_pool = pool.clone();
    let daemon = tokio::spawn(async move {
        let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (mut ws, _) = tokio_tungstenite::client_async(format!("ws://{addr}/"), stream)
            .await
            .unwrap();
        let mut agent = UnixStream::connect(&sock).await.unwrap();
        while let Some(Ok(msg)) = ws.next().await {
            let Message::Text(text) = msg else { continue };
            let v: Value = serde_json::from_str(text.as_str()).unwrap();
            let id = v["d"]["data"]["custom_id"].as_str().unwrap_or_default();
            sqlx::query("UPDATE requests SET status = 'answered', answered_at = ?, result_json = ? WHERE request_id = ? AND status = 'pending'")
                .bind(now_ms())
                .bind(r#"{"answers":[{"id":"go","selected":["No, keep them"],"custom":null}]}"#)
                .bind(id)
                .execute(&client_pool)
                .await
                .unwrap();
            let mut line = json!({"event": "answered", "request_id": id,
                "result": {"answers": [{"id": "go", "selected": ["No, keep them"], "custom": null}]}})
                .to_string();
            line.push('\n');
            agent.write_all(line.as_bytes()).await.unwrap();
        }
    });
    let (ws_stream, _) = tcp.accept().await.unwrap();
    let mut ws = tokio_tungstenite::accept_async(ws_stream).await.unwrap();
    let (agent, _) = unix.accept().await.unwrap();
    let mut agent = BufReader::new(agent);
    let clicker = Clicker::new(42, "bench", &[]);
    let mut samples = Vec::with_capacity(n);
    let mut line = String::new();
    for i in 0..warmup + n {
        let at = fixtures::At {
            application_id: 1,
            guild_id: Some(2),
            channel_id: CHANNEL,
            message_id: 3,
        };
        let mut payload =
            fixtures::component_click(7_000_000 + i as u64, &at, &clicker, &format!("floor-{i}"));
        payload["message"]["content"] = json!("x".repeat(600));
        let frame = json!({"op": 0, "t": "INTERACTION_CREATE", "s": i + 2, "d": payload});
        let t0 = Instant::now();
        ws.send(Message::Text(frame.to_string().into()))
            .await
            .unwrap();
        line.clear();
        bounded(
            "the floor's answered line",
            STEP_LIMIT,
            agent.read_line(&mut line),
        )
        .await
        .unwrap();
        if i >= warmup {
            samples.push(t0.elapsed());
        }
    }
    drop(ws);
    daemon.abort();
    let _ = daemon.await;
    pool.close().await;
    Latency::of(samples)
}
