//! `askrelay mcp` as MCP clients use it: the real binary on stdio, newline-delimited JSON-RPC
//! (`initialize`, `tools/list`, `tools/call`), forwarding to a real daemon started in-process.
//! Every wait is on a line read or a daemon event, bounded by `WAIT` so a hang fails loudly.

use crate::harness::{askrelay_in, private_places, yes_no, App, Bin, BIN};
use askrelay::domain::{Outcome, Status};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

const WAIT: Duration = Duration::from_secs(30);
const PROTOCOL_VERSION: &str = "2025-06-18";

/// One `askrelay mcp` process and the client end of its stdio.
struct Mcp {
    child: Child,
    stdin: Option<ChildStdin>,
    out: Lines<BufReader<ChildStdout>>,
    /// Every message read so far, in order.
    seen: Vec<Value>,
}

impl Mcp {
    fn spawn(socket: &Path, args: &[&str], env: &[(&str, &str)]) -> Mcp {
        let mut cmd = askrelay_in(socket.parent().expect("a socket in a directory"));
        cmd.arg("mcp")
            .args(args)
            .env("ASKRELAY_SOCKET_PATH", socket)
            .env(
                "ASKRELAY_LOG",
                std::env::var("ASKRELAY_TEST_LOG").unwrap_or_else(|_| "error".into()),
            )
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        let mut child = cmd.spawn().unwrap();
        let stdin = child.stdin.take();
        let out = BufReader::new(child.stdout.take().unwrap()).lines();
        Mcp {
            child,
            stdin,
            out,
            seen: Vec::new(),
        }
    }

    async fn send(&mut self, message: Value) {
        let mut line = serde_json::to_vec(&message).unwrap();
        line.push(b'\n');
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(&line).await.unwrap();
        stdin.flush().await.unwrap();
    }

    /// The next message from the server.
    async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(WAIT, self.out.next_line())
            .await
            .expect("no message from askrelay mcp in time")
            .unwrap()
            .unwrap_or_else(|| panic!("askrelay mcp closed stdout; it said: {:?}", self.seen));
        let v: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout carried a line that is not JSON ({e}): {line}"));
        assert_eq!(v["jsonrpc"], "2.0", "{v}");
        self.seen.push(v.clone());
        v
    }

    /// Reads until the response to request `id`; returns it with the messages read before it.
    async fn response(&mut self, id: u64) -> (Value, Vec<Value>) {
        let mut before = Vec::new();
        loop {
            let v = self.next().await;
            if v["id"] == id && v.get("method").is_none() {
                return (v, before);
            }
            before.push(v);
        }
    }

    async fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        self.response(id).await.0
    }

    async fn initialize(&mut self) -> Value {
        let reply = self
            .request(
                1,
                "initialize",
                json!({
                    "protocolVersion": PROTOCOL_VERSION,
                    "capabilities": {},
                    "clientInfo": {"name": "askrelay-tests", "version": "0"}
                }),
            )
            .await;
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        reply
    }

    /// Sends `tools/call` for ask_user_question without waiting for the result.
    async fn call(&mut self, id: u64, arguments: Value, progress_token: Option<&str>) {
        let mut params = json!({"name": "ask_user_question", "arguments": arguments});
        if let Some(t) = progress_token {
            params["_meta"] = json!({"progressToken": t});
        }
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}))
            .await;
    }

    /// Reads the next progress notification; a response first is a failure.
    async fn progress(&mut self) -> Value {
        loop {
            let v = self.next().await;
            if v["method"] == "notifications/progress" {
                return v["params"].clone();
            }
            assert!(v.get("id").is_none(), "expected progress, got {v}");
        }
    }

    /// The result of call `id`, which must be a tool result with one text block.
    async fn result(&mut self, id: u64) -> (bool, String) {
        let (v, _) = self.response(id).await;
        tool_text(&v)
    }

    async fn exit_status(&mut self) -> std::process::ExitStatus {
        tokio::time::timeout(WAIT, self.child.wait())
            .await
            .expect("askrelay mcp did not exit")
            .unwrap()
    }
}

/// `(isError, text)` of a tools/call response holding exactly one text block.
fn tool_text(response: &Value) -> (bool, String) {
    let result = &response["result"];
    let content = result["content"].as_array().unwrap_or_else(|| {
        panic!("not a tool result: {response}");
    });
    assert_eq!(content.len(), 1, "one content block: {response}");
    assert_eq!(content[0]["type"], "text", "{response}");
    (
        result["isError"] == true,
        content[0]["text"].as_str().unwrap().to_owned(),
    )
}

/// The one pending request in the daemon, through the socket's `pending` operation.
async fn only_pending(app: &App) -> Value {
    let reply = app
        .client()
        .await
        .call_json(&json!({"op": "pending"}))
        .await
        .unwrap();
    let requests = reply["requests"].as_array().unwrap();
    assert_eq!(requests.len(), 1, "{reply}");
    requests[0].clone()
}

/// Waits, by polling the `pending` operation, until one request is pending. Only for calls made
/// without a progress token, which give the test no event to wait on.
async fn poll_pending(app: &App) -> Value {
    tokio::time::timeout(WAIT, async {
        loop {
            let reply = app
                .client()
                .await
                .call_json(&json!({"op": "pending"}))
                .await
                .unwrap();
            if let Some(r) = reply["requests"].as_array().and_then(|r| r.first()) {
                return r.clone();
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the request never became pending")
}

async fn ended_with(app: &App, request_id: &str) -> (Status, Outcome) {
    tokio::time::timeout(WAIT, app.wait_ended(request_id))
        .await
        .expect("the request did not end");
    let stored = app.hub().request(request_id).await.unwrap();
    (
        stored.status,
        stored.outcome.expect("an ended request has an outcome"),
    )
}

#[tokio::test]
async fn initialize_and_tools_list_show_the_spec_schema() {
    let app = App::start().await;
    let mut mcp = Mcp::spawn(&app.socket(), &[], &[]);
    let init = mcp.initialize().await;
    let r = &init["result"];
    assert_eq!(r["protocolVersion"], PROTOCOL_VERSION, "{init}");
    assert_eq!(r["serverInfo"]["name"], "askrelay", "{init}");
    assert!(r["capabilities"]["tools"].is_object(), "{init}");

    let list = mcp.request(2, "tools/list", json!({})).await;
    let tools = list["result"]["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 1, "{list}");
    let tool = &tools[0];
    assert_eq!(tool["name"], "ask_user_question");
    let description = tool["description"].as_str().unwrap();
    for needle in [" (Recommended)", "multiSelect", "free text", "`id`"] {
        assert!(description.contains(needle), "{needle:?} in {description}");
    }

    let schema = &tool["inputSchema"];
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["required"], json!(["questions"]));
    assert_eq!(schema["additionalProperties"], false);
    let questions = &schema["properties"]["questions"];
    assert_eq!(questions["type"], "array");
    assert_eq!(questions["minItems"], 1);
    let q = &questions["items"];
    assert_eq!(q["required"], json!(["id", "question"]));
    assert_eq!(q["additionalProperties"], false);
    let props = &q["properties"];
    assert_eq!(props["id"]["maxLength"], 64);
    assert_eq!(props["question"]["maxLength"], 4000);
    assert_eq!(props["header"]["maxLength"], 80);
    assert_eq!(props["multiSelect"]["type"], "boolean");
    assert_eq!(props["options"]["maxItems"], 25);
    assert!(props["options"]["description"]
        .as_str()
        .unwrap()
        .contains(" (Recommended)"));
    assert!(props["multiSelect"]["description"]
        .as_str()
        .unwrap()
        .contains("several"));
    let o = &props["options"]["items"];
    assert_eq!(o["required"], json!(["label"]));
    assert_eq!(o["properties"]["label"]["maxLength"], 200);
    assert_eq!(o["properties"]["description"]["maxLength"], 1000);
    assert!(o["properties"]["label"]["description"]
        .as_str()
        .unwrap()
        .contains(" (Recommended)"));

    // The example of docs/contract.md, "Tool input" is valid input; a typo the daemon would reject is invalid.
    let validator = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(schema)
        .unwrap();
    assert!(validator.is_valid(&yes_no("cleanup")));
    assert!(validator.is_valid(&json!({"questions": [{"id": "n", "question": "Name?"}]})));
    assert!(!validator.is_valid(&json!({"questions": []})));
    assert!(!validator
        .is_valid(&json!({"questions": [{"id": "n", "question": "Name?", "multiselect": true}]})));
}

#[tokio::test]
async fn a_call_is_answered_from_the_terminal_with_the_exact_result() {
    let app = App::start().await;
    let mut mcp = Mcp::spawn(&app.socket(), &[], &[]);
    mcp.initialize().await;

    // With a progress token: a progress notification says where the question went.
    mcp.call(2, yes_no("cleanup"), Some("tok-1")).await;
    let progress = mcp.progress().await;
    assert_eq!(progress["progressToken"], "tok-1");
    assert!(progress["progress"].as_f64().unwrap() > 0.0, "{progress}");
    let pending = only_pending(&app).await;
    let id = pending["request_id"].as_str().unwrap().to_owned();
    let message = progress["message"].as_str().unwrap();
    assert!(
        message.contains("via terminal") && message.contains(&id),
        "{message}"
    );
    let reply = app.answer(&id, "cleanup", &["No, keep them"]).await;
    assert_eq!(reply["event"], "answer_accepted", "{reply}");
    let (is_error, text) = mcp.result(2).await;
    assert!(!is_error);
    assert_eq!(
        text,
        r#"{"answers":[{"id":"cleanup","selected":["No, keep them"]}]}"#
    );

    // Without a progress token: no notifications, and a multi-select plus a free-text answer.
    mcp.call(
        3,
        json!({"questions": [
            {"id": "targets", "question": "Deploy where?", "multiSelect": true,
             "options": [{"label": "web (Recommended)"}, {"label": "db"}, {"label": "cache"}]},
            {"id": "name", "question": "What should the release be called?"}
        ]}),
        None,
    )
    .await;
    let pending = poll_pending(&app).await;
    let id = pending["request_id"].as_str().unwrap().to_owned();
    let mut c = app.client().await;
    for (question, select, custom) in [
        (
            "targets",
            json!(["db", "web (Recommended)"]),
            json!("and the canary"),
        ),
        ("name", json!([]), json!("v2")),
    ] {
        let reply = c
            .call_json(
                &json!({"op": "answer", "request_id": id, "question": question,
                "select": select, "custom": custom, "by": "tester"}),
            )
            .await
            .unwrap();
        assert_eq!(reply["event"], "answer_accepted", "{reply}");
    }
    let (response, before) = mcp.response(3).await;
    assert!(before.is_empty(), "no token, no notifications: {before:?}");
    let (is_error, text) = tool_text(&response);
    assert!(!is_error);
    assert_eq!(
        text,
        r#"{"answers":[{"id":"targets","selected":["web (Recommended)","db"],"custom":"and the canary"},{"id":"name","selected":[],"custom":"v2"}]}"#
    );
}

#[tokio::test]
async fn notifications_cancelled_aborts_the_request_in_the_daemon() {
    let app = App::start().await;
    let mut mcp = Mcp::spawn(&app.socket(), &[], &[]);
    mcp.initialize().await;
    mcp.call(2, yes_no("cleanup"), Some("t")).await;
    mcp.progress().await;
    let id = only_pending(&app).await["request_id"]
        .as_str()
        .unwrap()
        .to_owned();

    mcp.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 2, "reason": "the user pressed Esc"}}),
    )
    .await;
    let (status, outcome) = ended_with(&app, &id).await;
    assert_eq!(status, Status::Cancelled);
    let Outcome::Error(e) = outcome else {
        panic!("expected ABORTED, got {outcome:?}")
    };
    assert_eq!(e.code.as_str(), "ABORTED");
    assert!(
        e.message.contains("cancelled the tool call"),
        "{}",
        e.message
    );

    // The server goes on serving, and (as MCP says) sends no response for the cancelled call.
    let (pong, before) = {
        mcp.send(json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}))
            .await;
        mcp.response(3).await
    };
    assert_eq!(pong["result"], json!({}), "{pong}");
    assert!(before.iter().all(|m| m["id"] != 2), "{before:?}");
}

#[tokio::test]
async fn closing_stdin_cancels_the_request_and_exits() {
    let app = App::start().await;
    let mut mcp = Mcp::spawn(&app.socket(), &[], &[]);
    mcp.initialize().await;
    mcp.call(2, yes_no("cleanup"), Some("t")).await;
    mcp.progress().await;
    let id = only_pending(&app).await["request_id"]
        .as_str()
        .unwrap()
        .to_owned();

    drop(mcp.stdin.take());
    let (status, outcome) = ended_with(&app, &id).await;
    assert_eq!(status, Status::Cancelled);
    let Outcome::Error(e) = outcome else {
        panic!("expected ABORTED, got {outcome:?}")
    };
    assert_eq!(e.code.as_str(), "ABORTED");
    assert!(e.message.contains("stdin closed"), "{}", e.message);
    assert!(mcp.exit_status().await.success());
}

#[tokio::test]
async fn a_daemon_that_is_not_running_gives_a_tool_error_saying_how_to_start_it() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("askrelay.sock");
    let mut mcp = Mcp::spawn(&socket, &[], &[]);
    mcp.initialize().await;
    let list = mcp.request(2, "tools/list", json!({})).await;
    assert_eq!(list["result"]["tools"][0]["name"], "ask_user_question");
    mcp.call(3, yes_no("cleanup"), Some("t")).await;
    let (is_error, text) = mcp.result(3).await;
    assert!(is_error);
    let prefix = format!(
        "INTERNAL: cannot reach the askrelay daemon at {}",
        socket.display()
    );
    assert!(text.starts_with(&prefix), "{text}");
    assert!(text.contains("start it with `askrelay serve`"), "{text}");
}

/// Two daemons at default places, as a login shell and a short environment leave them: one on
/// `$XDG_RUNTIME_DIR` (`run_user`, which stands in for `/run/user/$UID`) and one in
/// `$TMPDIR/askrelay-$UID`. A client with no socket configured cannot choose between them.
struct TwoDaemons {
    dir: tempfile::TempDir,
    run_user: std::path::PathBuf,
    tmp: std::path::PathBuf,
    login: Bin,
    other: Bin,
    _served: (crate::harness::Served, crate::harness::Served),
}

impl TwoDaemons {
    async fn start() -> TwoDaemons {
        let dir = tempfile::tempdir().unwrap();
        let run_user = dir.path().join("run-user");
        let tmp = dir.path().join("tmp");
        for d in [&run_user, &tmp] {
            std::fs::create_dir_all(d).unwrap();
            std::fs::set_permissions(d, std::os::unix::fs::PermissionsExt::from_mode(0o700))
                .unwrap();
        }
        let login = Bin::new();
        let mut cmd = login.cmd(&["serve"]);
        cmd.env_remove("ASKRELAY_SOCKET_PATH")
            .env("XDG_RUNTIME_DIR", &run_user);
        let login_daemon = login.serve_cmd(cmd).await;
        let other = Bin::new();
        let mut cmd = other.cmd(&["serve"]);
        cmd.env_remove("ASKRELAY_SOCKET_PATH").env("TMPDIR", &tmp);
        let other_daemon = other.serve_cmd(cmd).await;
        TwoDaemons {
            dir,
            run_user,
            tmp,
            login,
            other,
            _served: (login_daemon, other_daemon),
        }
    }

    /// The environment of a client that looks at the default places (an empty
    /// ASKRELAY_SOCKET_PATH is unset).
    fn client_env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("ASKRELAY_SOCKET_PATH", String::new()),
            (
                "ASKRELAY_TEST_RUN_USER_DIR",
                self.run_user.display().to_string(),
            ),
            ("TMPDIR", self.tmp.display().to_string()),
        ]
    }

    /// The tool error a call gets: it names both sockets and how to choose.
    fn assert_explained(&self, text: &str) {
        assert!(
            text.starts_with("INTERNAL: more than one askrelay daemon is listening")
                && text.contains(&self.run_user.display().to_string())
                && text.contains(&self.tmp.display().to_string())
                && text.contains("ASKRELAY_SOCKET_PATH"),
            "{text}"
        );
    }

    /// Neither daemon got a question.
    async fn assert_nothing_asked(&self) {
        let uid = nix::unistd::geteuid().as_raw();
        for (bin, socket) in [
            (&self.login, self.run_user.join("askrelay.sock")),
            (
                &self.other,
                self.tmp.join(format!("askrelay-{uid}/askrelay.sock")),
            ),
        ] {
            let mut pending = bin.cmd(&["pending"]);
            pending.env("ASKRELAY_SOCKET_PATH", &socket);
            let out = pending.output().await.unwrap();
            let out = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.contains("No pending requests"),
                "{}: {out}",
                socket.display()
            );
        }
    }
}

/// Two daemons at default places and no socket configured: `askrelay mcp` cannot choose, and
/// says so in each call's tool error, after answering `initialize` and `tools/list` (an exit
/// before `initialize` shows only "Connection closed" in the MCP clients).
#[tokio::test]
async fn an_ambiguous_socket_is_explained_in_a_tool_error() {
    let two = TwoDaemons::start().await;
    let env = two.client_env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut mcp = Mcp::spawn(&two.dir.path().join("unused.sock"), &[], &env);
    let init = mcp.initialize().await;
    assert_eq!(init["result"]["serverInfo"]["name"], "askrelay", "{init}");
    let list = mcp.request(2, "tools/list", json!({})).await;
    assert_eq!(list["result"]["tools"][0]["name"], "ask_user_question");
    mcp.call(3, yes_no("cleanup"), None).await;
    let (is_error, text) = mcp.result(3).await;
    assert!(is_error, "{text}");
    two.assert_explained(&text);
    two.assert_nothing_asked().await;
}

/// The same through the official MCP Python SDKs, which showed only "Connection closed": the
/// session initializes, lists the tool, and the call's result is the tool error.
#[tokio::test]
async fn the_official_python_sdks_show_an_ambiguous_socket_as_a_tool_error() {
    let two = TwoDaemons::start().await;
    for (venv, version) in [("v1", "1."), ("v2", "2.")] {
        let python = sdk_python(venv, version);
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp_python_client.py");
        let mut cmd = Command::new(&python);
        private_places(cmd.as_std_mut(), two.dir.path());
        let out = cmd
            .args([script, BIN])
            .env("ASKRELAY_LOG", "error")
            .envs(two.client_env())
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output();
        let out = tokio::time::timeout(WAIT, out)
            .await
            .expect("the SDK client to finish")
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let lines: Vec<&str> = stdout.lines().collect();
        assert!(
            out.status.success() && lines.len() == 5,
            "{venv}: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            lines[0].starts_with("initialized askrelay "),
            "{venv}: {stdout}"
        );
        assert_eq!(lines[1], "tools ask_user_question", "{venv}");
        assert_eq!(lines[3], "is_error True", "{venv}: {stdout}");
        two.assert_explained(lines[4].strip_prefix("text ").unwrap_or(lines[4]));
    }
    two.assert_nothing_asked().await;
}

#[tokio::test]
async fn daemon_errors_come_back_as_tool_errors_with_the_code_first() {
    let app = App::start().await;
    let mut mcp = Mcp::spawn(&app.socket(), &[], &[]);
    mcp.initialize().await;
    let cases = [
        (json!({"questions": []}), "INVALID_REQUEST: questions: "),
        (
            json!({"questions": [{"id": "a", "question": "q?", "multiselect": true}]}),
            "INVALID_REQUEST: questions[0].multiselect: unknown field",
        ),
        (
            json!({"questions": [{"id": "a", "question": "q?", "options": [{"label": "x"}, {"label": "x"}]}]}),
            "INVALID_REQUEST: questions[0].options[1].label: \"x\" is used twice",
        ),
        (
            json!({"questions": [{"id": "a", "question": "q?"}], "scope": {"project": "x"}}),
            "INVALID_REQUEST: scope: unknown field",
        ),
    ];
    for (i, (arguments, prefix)) in cases.into_iter().enumerate() {
        let id = 10 + i as u64;
        mcp.call(id, arguments, None).await;
        let (is_error, text) = mcp.result(id).await;
        assert!(is_error, "{text}");
        assert!(
            text.starts_with(prefix),
            "{text:?} should start with {prefix:?}"
        );
    }
    // No arguments at all: the daemon names the missing field.
    mcp.send(json!({"jsonrpc": "2.0", "id": 20, "method": "tools/call",
        "params": {"name": "ask_user_question"}}))
        .await;
    let (is_error, text) = mcp.result(20).await;
    assert!(
        is_error && text.starts_with("INVALID_REQUEST: questions: is required"),
        "{text}"
    );
    // An unknown tool is a protocol error, not a tool result.
    let reply = mcp
        .request(21, "tools/call", json!({"name": "nope", "arguments": {}}))
        .await;
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("ask_user_question"),
        "{reply}"
    );

    // NO_ANSWERER passes through the same way.
    let quiet = App::start_with(|c| c.terminal.enabled = Some(false)).await;
    let mut mcp = Mcp::spawn(&quiet.socket(), &[], &[]);
    mcp.initialize().await;
    mcp.call(2, yes_no("cleanup"), None).await;
    let (is_error, text) = mcp.result(2).await;
    assert!(is_error && text.starts_with("NO_ANSWERER: "), "{text}");
}

#[tokio::test]
async fn flags_and_environment_fill_the_scope() {
    let app = App::start().await;
    let mut mcp = Mcp::spawn(
        &app.socket(),
        &["--project", "p1", "--agent", "a1", "--scope", "team=ops"],
        &[("ASKRELAY_SCOPE_SESSION", "s1")],
    );
    mcp.initialize().await;
    mcp.call(2, yes_no("cleanup"), Some("t")).await;
    mcp.progress().await;
    let pending = only_pending(&app).await;
    assert_eq!(
        pending["scope"],
        json!({"agent": "a1", "project": "p1", "session": "s1", "team": "ops"})
    );
    let id = pending["request_id"].as_str().unwrap();
    app.answer(id, "cleanup", &["Yes, delete them (Recommended)"])
        .await;
    let (is_error, text) = mcp.result(2).await;
    assert!(!is_error);
    assert_eq!(
        text,
        r#"{"answers":[{"id":"cleanup","selected":["Yes, delete them (Recommended)"]}]}"#
    );
}

#[tokio::test]
async fn a_waiting_call_reattaches_when_the_daemon_restarts() {
    let mut app = App::start().await;
    let mut mcp = Mcp::spawn(&app.socket(), &[], &[]);
    mcp.initialize().await;
    mcp.call(2, yes_no("cleanup"), Some("t")).await;
    let first = mcp.progress().await;
    let id = only_pending(&app).await["request_id"]
        .as_str()
        .unwrap()
        .to_owned();

    app.restart().await;
    let lost = mcp.progress().await;
    assert!(
        lost["message"]
            .as_str()
            .unwrap()
            .contains("Lost the askrelay daemon"),
        "{lost}"
    );
    let back = mcp.progress().await;
    assert!(
        back["message"].as_str().unwrap().contains(&id),
        "re-attached to the same request: {back}"
    );
    assert!(back["progress"].as_f64() > first["progress"].as_f64());
    app.answer(&id, "cleanup", &["No, keep them"]).await;
    let (is_error, text) = mcp.result(2).await;
    assert!(!is_error);
    assert_eq!(
        text,
        r#"{"answers":[{"id":"cleanup","selected":["No, keep them"]}]}"#
    );
}

#[tokio::test]
async fn mcp_help_has_examples() {
    let dir = tempfile::tempdir().unwrap();
    let out = askrelay_in(dir.path())
        .args(["mcp", "--help"])
        .output()
        .await
        .unwrap();
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "Examples:",
        "claude mcp add askrelay -- askrelay mcp",
        "--project",
    ] {
        assert!(help.contains(needle), "{needle:?} in:\n{help}");
    }
}

/// Compatibility with an MCP client someone else wrote: the official Python SDK (`mcp` on
/// PyPI), 1.x and 2.x, drives `askrelay mcp` through tests/mcp_python_client.py.
#[tokio::test]
async fn the_official_python_sdk_1_client_calls_the_tool() {
    python_sdk_client_calls_the_tool("v1", "1.").await;
}

#[tokio::test]
async fn the_official_python_sdk_2_client_calls_the_tool() {
    python_sdk_client_calls_the_tool("v2", "2.").await;
}

/// The Python of the virtual environment `name` that tests/setup-python.sh made under the
/// target directory (the parent of this test's temporary directory), with SDK `version`.
fn sdk_python(name: &str, version: &str) -> std::path::PathBuf {
    let python = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("mcp-sdk")
        .join(name)
        .join("bin/python");
    let probe = std::process::Command::new(&python)
        .args([
            "-c",
            "import importlib.metadata as m; print(m.version('mcp'))",
        ])
        .output();
    match probe {
        Ok(o) if o.status.success() && String::from_utf8_lossy(&o.stdout).starts_with(version) => {}
        other => panic!(
            "the official MCP Python SDK {version}x is not in {} ({other:?}); run \
             tests/setup-python.sh (the README's test command does)",
            python.display()
        ),
    }
    python
}

async fn python_sdk_client_calls_the_tool(venv: &str, version: &str) {
    let python = sdk_python(venv, version);
    let app = App::start().await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp_python_client.py");
    let mut python = Command::new(&python);
    private_places(
        python.as_std_mut(),
        app.socket().parent().expect("a socket in a directory"),
    );
    let mut child = python
        .args([script, BIN, "--project", "pyclient"])
        .env("ASKRELAY_SOCKET_PATH", app.socket())
        .env("ASKRELAY_LOG", "error")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = next_line(&mut out).await.unwrap_or_default();
    assert!(line.starts_with("initialized askrelay "), "{line}");
    let line = next_line(&mut out).await;
    assert_eq!(line.as_deref(), Some("tools ask_user_question"));
    let line = next_line(&mut out).await;
    assert_eq!(line.as_deref(), Some("calling ask_user_question"));
    let progress = next_line(&mut out).await.unwrap_or_default();
    assert!(
        progress.starts_with("progress Waiting for an answer via terminal"),
        "{progress}"
    );
    let pending = only_pending(&app).await;
    assert_eq!(pending["scope"], json!({"project": "pyclient"}));
    let id = pending["request_id"].as_str().unwrap();
    let reply = app
        .answer(id, "cleanup", &["Yes, delete them (Recommended)"])
        .await;
    assert_eq!(reply["event"], "answer_accepted", "{reply}");
    let mut rest = Vec::new();
    while let Some(line) = next_line(&mut out).await {
        rest.push(line);
    }
    let status = tokio::time::timeout(WAIT, child.wait())
        .await
        .unwrap()
        .unwrap();
    let mut err = String::new();
    tokio::io::AsyncReadExt::read_to_string(&mut child.stderr.take().unwrap(), &mut err)
        .await
        .unwrap();
    assert!(status.success(), "the Python client failed:\n{err}");
    // Progress may repeat (heartbeats); then the result.
    let rest: Vec<&String> = rest
        .iter()
        .filter(|l| !l.starts_with("progress "))
        .collect();
    assert_eq!(
        rest,
        [
            "is_error False",
            r#"text {"answers":[{"id":"cleanup","selected":["Yes, delete them (Recommended)"]}]}"#
        ],
        "{err}"
    );
}

async fn next_line<R: tokio::io::AsyncBufRead + Unpin>(out: &mut Lines<R>) -> Option<String> {
    tokio::time::timeout(WAIT, out.next_line())
        .await
        .expect("the Python client said nothing in time")
        .unwrap()
}
