//! Items 1 and 2 through `askrelay mcp`, and the floor of the MCP hop: the same `tools/call`
//! made to a minimal rmcp server on stdio (`examples/mcp_echo.rs`) that answers at once, one
//! echo sample before each call (A B A B, as the other floors).

use super::helpers::bounded;
use super::paths::{click_first_button, created_since, dispatched, wait_callback};
use super::report::Latency;
use super::STEP_LIMIT;
use crate::fixtures::Clicker;
use crate::standin::StandIn;
use serde_json::{json, Value};
use std::path::Path;
use std::process::Stdio;
use std::time::Instant;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// The figures of the MCP rows.
pub(super) struct McpPaths {
    /// `tools/call` written → the create POST.
    pub(super) ask: Latency,
    /// INTERACTION_CREATE → the tool result read.
    pub(super) answer: Latency,
    /// The floor: `tools/call` written → its result read, through the echo server; `None`
    /// without its binary.
    pub(super) echo: Option<Latency>,
}

/// An MCP server on the other end of a child's stdin and stdout, initialized.
struct StdioServer {
    child: Child,
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
    next_id: u64,
}

impl StdioServer {
    async fn start(mut command: Command) -> StdioServer {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("bench: cannot start {command:?}: {e}"));
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut server = StdioServer {
            child,
            stdin,
            stdout,
            next_id: 0,
        };
        server
            .send(
                &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "bench", "version": "1"}}}),
            )
            .await;
        server.reply(0).await;
        server
            .send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        server
    }

    async fn send(&mut self, v: &Value) {
        let mut line = v.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).await.unwrap();
    }

    /// The `tools/call` of the benchmark's question, marked with `marker`; returns its id.
    fn call(&mut self, marker: &str) -> (u64, Value) {
        self.next_id += 1;
        let call = json!({"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call", "params": {
        "name": "ask_user_question", "arguments": {"questions": [{
            "id": "go", "question": question(marker), "header": "Confirm",
            "options": [{"label": "Yes, delete them (Recommended)"}, {"label": "No, keep them"}]
        }]}}});
        (self.next_id, call)
    }

    /// Reads lines until the reply to `id`.
    async fn reply(&mut self, id: u64) -> Value {
        bounded("an MCP reply", STEP_LIMIT, async {
            loop {
                let line = self
                    .stdout
                    .next_line()
                    .await
                    .unwrap()
                    .expect("bench: the MCP server exited");
                let v: Value = serde_json::from_str(&line).unwrap();
                if v["id"] == id {
                    return v;
                }
            }
        })
        .await
    }

    /// Closes stdin and waits for the exit.
    async fn stop(self) {
        let StdioServer {
            mut child, stdin, ..
        } = self;
        drop(stdin);
        let _ = child.wait().await;
    }
}

fn question(marker: &str) -> String {
    format!("Proceed for {marker}?")
}

/// Items 1 and 2 through `askrelay mcp` (`bin`) on the daemon at `socket`: a `tools/call`
/// written to its stdin → the create POST; the click → the tool result read from its stdout.
/// Before each call, with `echo` (the echo server's binary), one round trip through it.
pub(super) async fn mcp_paths(
    standin: &StandIn,
    socket: &Path,
    bin: &Path,
    echo: Option<&Path>,
    n: usize,
    warmup: usize,
    clicker: &Clicker,
) -> McpPaths {
    let mut command = Command::new(bin);
    command
        .arg("mcp")
        .env_clear()
        .env("ASKRELAY_SOCKET_PATH", socket)
        .env("ASKRELAY_LOG", "warn");
    let mut server = StdioServer::start(command).await;
    let mut echo = match echo {
        Some(path) => Some(StdioServer::start(Command::new(path)).await),
        None => None,
    };
    let mut asks = Vec::with_capacity(n);
    let mut answers = Vec::with_capacity(n);
    let mut echoes = Vec::with_capacity(n);
    for i in 0..warmup + n {
        standin.forget_history();
        let marker = format!("mcp-{i}");
        if let Some(echo) = &mut echo {
            let (id, call) = echo.call(&marker);
            let t0 = Instant::now();
            echo.send(&call).await;
            let result = echo.reply(id).await;
            let time = t0.elapsed();
            assert_eq!(result["result"]["isError"], false, "bench: {result}");
            if i >= warmup {
                echoes.push(time);
            }
        }
        let (id, call) = server.call(&marker);
        let t0 = Instant::now();
        server.send(&call).await;
        let want = question(&marker);
        let (ask_time, mid, message) = created_since(standin, &want, t0).await;
        let iid = 9_000_000 + i as u64;
        click_first_button(standin, &message, mid, iid, clicker).await;
        let result = server.reply(id).await;
        let answer_time = dispatched(standin).elapsed();
        assert_eq!(result["result"]["isError"], false, "bench: {result}");
        wait_callback(standin, iid).await;
        if i >= warmup {
            asks.push(ask_time);
            answers.push(answer_time);
        }
    }
    server.stop().await;
    if let Some(echo) = echo {
        echo.stop().await;
    }
    McpPaths {
        ask: Latency::of(asks),
        answer: Latency::of(answers),
        echo: (!echoes.is_empty()).then(|| Latency::of(echoes)),
    }
}
