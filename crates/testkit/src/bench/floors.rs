//! The floors: what the ask and answer paths cannot beat (a Unix-socket round trip, a WebSocket
//! frame, one SQLite WAL commit of a similar row), measured without the daemon.
//!
//! Each floor is a rig that stays up beside the daemon of items 1 and 2, and gives one sample
//! at a time: the paths take a floor sample, then a path sample, then a floor sample again
//! (A B A B), so that a machine that slows down mid-run slows both alike and the ratio holds.

use super::helpers::{ask_line, bounded, floor_table, now_ms, open_pool};
use super::CHANNEL;
use super::STEP_LIMIT;
use crate::fixtures::{self, Clicker};
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpStream, UnixListener, UnixStream};
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

const INSERT: &str =
    "INSERT INTO requests (request_id, questions_json, created_at) VALUES (?, ?, ?)";

/// Floor of the ask path: the client writes the same `ask` line the daemon gets; a minimal
/// server reads the line, INSERTs a row like the daemon's request row (one WAL commit), and
/// writes a one-line reply that the client reads. Timed from the write to the read.
pub(super) struct AskFloor {
    _dir: tempfile::TempDir,
    pool: sqlx::SqlitePool,
    server: JoinHandle<()>,
    wr: OwnedWriteHalf,
    rd: BufReader<OwnedReadHalf>,
    reply: String,
    next: usize,
}

impl AskFloor {
    pub(super) async fn start() -> AskFloor {
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
                sqlx::query(INSERT)
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
        let (rd, wr) = UnixStream::connect(&sock).await.unwrap().into_split();
        AskFloor {
            _dir: dir,
            pool,
            server,
            wr,
            rd: BufReader::new(rd),
            reply: String::new(),
            next: 0,
        }
    }

    /// One round trip.
    pub(super) async fn sample(&mut self) -> Duration {
        let mut line = ask_line(&format!("floor-{}", self.next), None).to_string();
        self.next += 1;
        line.push('\n');
        let t0 = Instant::now();
        self.wr.write_all(line.as_bytes()).await.unwrap();
        self.reply.clear();
        bounded(
            "the floor reply",
            STEP_LIMIT,
            self.rd.read_line(&mut self.reply),
        )
        .await
        .unwrap();
        t0.elapsed()
    }

    pub(super) async fn stop(self) {
        drop(self.wr);
        let _ = self.server.await;
        self.pool.close().await;
    }
}

/// Floor of the answer path: a WebSocket server sends the same INTERACTION_CREATE frame the
/// stand-in sends; a minimal client reads it, UPDATEs one row (one WAL commit) and writes one
/// line to a Unix socket, which the timing side reads. Timed from the frame's send to the read.
pub(super) struct AnswerFloor {
    _dir: tempfile::TempDir,
    pool: sqlx::SqlitePool,
    daemon: JoinHandle<()>,
    ws: WebSocketStream<TcpStream>,
    agent: BufReader<UnixStream>,
    clicker: Clicker,
    line: String,
    next: usize,
}

impl AnswerFloor {
    pub(super) async fn start() -> AnswerFloor {
        let dir = tempfile::tempdir().unwrap();
        let pool = open_pool(&dir.path().join("floor.db")).await;
        floor_table(&pool).await;
        let sock = dir.path().join("floor.sock");
        let unix = UnixListener::bind(&sock).unwrap();
        let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = tcp.local_addr().unwrap();
        // The "daemon": a WebSocket client that commits and tells its agent.
        let client_pool = pool.clone();
        let daemon = tokio::spawn(async move {
            let stream = TcpStream::connect(addr).await.unwrap();
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
        let ws = tokio_tungstenite::accept_async(ws_stream).await.unwrap();
        let (agent, _) = unix.accept().await.unwrap();
        AnswerFloor {
            _dir: dir,
            pool,
            daemon,
            ws,
            agent: BufReader::new(agent),
            clicker: Clicker::new(42, "bench", &[]),
            line: String::new(),
            next: 0,
        }
    }

    /// One frame → commit → line; the row it answers is stored first, untimed.
    pub(super) async fn sample(&mut self) -> Duration {
        let i = self.next;
        self.next += 1;
        let id = format!("floor-{i}");
        sqlx::query(INSERT)
            .bind(&id)
            .bind(ask_line("x", None)["questions"].to_string())
            .bind(now_ms())
            .execute(&self.pool)
            .await
            .unwrap();
        let at = fixtures::At {
            application_id: 1,
            guild_id: Some(2),
            channel_id: CHANNEL,
            message_id: 3,
        };
        let mut payload = fixtures::component_click(7_000_000 + i as u64, &at, &self.clicker, &id);
        payload["message"]["content"] = json!("x".repeat(600));
        let frame = json!({"op": 0, "t": "INTERACTION_CREATE", "s": i + 2, "d": payload});
        let t0 = Instant::now();
        self.ws
            .send(Message::Text(frame.to_string().into()))
            .await
            .unwrap();
        self.line.clear();
        bounded(
            "the floor's answered line",
            STEP_LIMIT,
            self.agent.read_line(&mut self.line),
        )
        .await
        .unwrap();
        t0.elapsed()
    }

    pub(super) async fn stop(self) {
        drop(self.ws);
        self.daemon.abort();
        let _ = self.daemon.await;
        self.pool.close().await;
    }
}
