//! The MCP front door: `askrelay mcp` is a Model Context Protocol server on stdio that exposes
//! the `ask_user_question` tool (docs/contract.md, "Tool input") to Claude Code, Codex, Cursor or any other MCP client.
//!
//! It is a thin translator and owns no rules. Each `tools/call` becomes one socket `ask` with a
//! fresh request id, the tool arguments going over as the ask's `questions`; the daemon validates
//! them (and answers `INVALID_REQUEST` when they are wrong), stores the request and finds someone
//! to answer it. The daemon's final line becomes the tool result: the result JSON (docs/contract.md, "Result JSON") as one text block,
//! or a tool error (`isError: true`) whose text is `CODE: message`. While the call waits, the
//! client gets progress notifications (when it asked for them) that say where the question was
//! posted. An MCP `notifications/cancelled`, or the client closing stdin, becomes a socket
//! `cancel`. If the daemon goes away the call reconnects and re-attaches with the same request
//! id, for a bounded time, as `askrelay ask` does. Only the input schema lives here: it is
//! generated from [`ToolInput`], which mirrors the input types (docs/contract.md, "Tool input") with descriptions aimed at the
//! model that fills them in.
//!
//! stdout carries the protocol and nothing else; logs go to stderr.

use crate::client::{AskSession, AskUpdate, Client, Target};
use crate::domain::{Ask, AskError};
use crate::protocol::ask::parse_ask;
use crate::protocol::Accepted;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ProgressToken,
    ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, Peer, RoleServer, ServerHandler, ServiceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, ReadBuf};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// The one tool this server exposes.
pub const TOOL_NAME: &str = "ask_user_question";

/// How long each step of cancelling a call may take: sending the `cancel`, then reading the
/// final line it causes.
const CANCEL_WAIT: Duration = Duration::from_secs(5);

/// How long the process stays up after stdin closed, for calls still cancelling.
const EXIT_WAIT: Duration = Duration::from_secs(15);

const TOOL_DESCRIPTION: &str = "\
Ask the user (a person reached through Discord or a terminal) one or more questions and wait for \
the answer. Use it when you need a decision, a confirmation before a risky step, or a fact you \
cannot find yourself; do not use it for things you can look up. The call blocks until a person \
answers every question; it has no timeout of its own.

How to ask well:
- Give each question a short, stable `id` (\"cleanup\", \"db_engine\"); the answer comes back \
keyed by it.
- Offer concrete `options` when the choices are known. Put the one you recommend first and end \
its label with \" (Recommended)\", e.g. \"Yes, delete them (Recommended)\". Keep labels short and \
distinct; explain trade-offs in `description`.
- Set `multiSelect: true` only when several options can be picked together (\"Which environments \
should I deploy to?\").
- Leave `options` out to ask for free text (a name, a path, a reason).
- People may always type their own answer instead of picking an option.

Result: compact JSON, one entry per question in request order, e.g. \
{\"answers\":[{\"id\":\"cleanup\",\"selected\":[\"Yes, delete them (Recommended)\"]}]}. \
`selected` holds the full labels that were picked (possibly none); `custom` holds typed text and \
is present only when the person typed something (for a single-select question it replaces the \
choice).

Errors start with a code: INVALID_REQUEST (fix the input as the message says and call again), \
DELEGATED_CALLER (you are a sub-agent: put the open question in your final result instead), \
NO_ANSWERER (nobody is set up to answer: tell the user), ABORTED (cancelled: do not ask again \
unless told to), EXPIRED (nobody answered in time), INTERNAL (the message says what happened).";

const INSTRUCTIONS: &str = "\
askrelay forwards ask_user_question to the askrelay daemon, which shows the question to people in \
Discord or a terminal and returns the first allowed person's answer. Use it whenever you need a \
human decision instead of guessing.";

/// The input of `ask_user_question` (docs/contract.md, "Tool input"). It exists to generate the input schema; the call
/// itself forwards the raw arguments and the daemon validates them.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolInput {
    /// The questions to ask, usually one; at most 10 unless the daemon is configured otherwise.
    /// They are shown together and the call returns when every one is answered.
    #[schemars(length(min = 1))]
    pub questions: Vec<ToolQuestion>,
}

/// One question for a person (docs/contract.md, "Tool input").
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolQuestion {
    /// A short, stable identifier such as "cleanup" or "db_engine", unique within the call. The
    /// answer for this question carries the same id.
    #[schemars(length(min = 1, max = 64))]
    pub id: String,
    /// The full question, with the context a person needs to answer it without seeing your
    /// session.
    #[schemars(length(min = 1, max = 4000))]
    pub question: String,
    /// A short tag shown as the title, at most 80 characters (a word or two reads best), e.g.
    /// "Confirm", "Deploy", "Naming".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String", length(max = 80))]
    pub header: Option<String>,
    /// The choices, 0 to 25. Put the recommended option first and end its label with
    /// " (Recommended)". Leave this out (or empty) to ask for free text only. People can always
    /// type their own answer instead.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 25))]
    pub options: Vec<ToolOption>,
    /// true lets the person pick several options (for "which of these apply?" questions);
    /// false (the default) means exactly one option or a typed answer. Needs options.
    #[serde(rename = "multiSelect", default)]
    pub multi_select: bool,
}

/// One choice a person can pick (docs/contract.md, "Tool input").
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolOption {
    /// What the person picks, and exactly what comes back in `selected`; unique within the
    /// question. End the recommended option's label with " (Recommended)".
    #[schemars(length(min = 1, max = 200))]
    pub label: String,
    /// Optional: what choosing this option means or does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String", length(max = 1000))]
    pub description: Option<String>,
}

/// The input schema of `ask_user_question`: JSON Schema 2020-12 generated from [`ToolInput`],
/// with every subschema inlined (some clients do not follow `$ref`) and no root title.
pub fn input_schema() -> JsonObject {
    let generator = schemars::generate::SchemaSettings::draft2020_12()
        .with(|s| s.inline_subschemas = true)
        .into_generator();
    let schema = generator.into_root_schema_for::<ToolInput>();
    let mut object = match serde_json::to_value(schema) {
        Ok(Value::Object(o)) => o,
        _ => unreachable!("a derived schema is a JSON object"),
    };
    object.remove("title");
    object.remove("description");
    for value in object.values_mut() {
        unwrap_descriptions(value);
    }
    object
}

/// Doc comments are wrapped for the source; a model reads them better as one line each.
fn unwrap_descriptions(value: &mut Value) {
    match value {
        Value::Object(o) => {
            for (k, v) in o.iter_mut() {
                match v {
                    Value::String(s) if k == "description" => *s = s.replace('\n', " "),
                    _ => unwrap_descriptions(v),
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(unwrap_descriptions),
        _ => {}
    }
}

/// The `ask_user_question` tool as `tools/list` shows it.
pub fn tool() -> Tool {
    Tool::new(TOOL_NAME, TOOL_DESCRIPTION, input_schema()).with_annotations(
        ToolAnnotations::with_title("Ask the user")
            .read_only(false)
            .destructive(false)
            .idempotent(false)
            .open_world(true),
    )
}

/// What `askrelay mcp` needs to know.
#[derive(Debug, Clone)]
pub struct McpOptions {
    /// The daemon's socket, and whom to trust there; or why no socket could be chosen (two
    /// daemons listening at default places, a config that does not load). The server still
    /// answers `initialize` and `tools/list`, and each call then fails with this reason as a
    /// tool error, which the agent and its user read, where an exit before `initialize` shows
    /// only "Connection closed".
    pub target: Result<Target, String>,
    /// Scope labels added to every ask (`project`, `agent`, `session`, …).
    pub scope: Map<String, Value>,
    /// How long one call keeps trying to re-attach when the daemon goes away.
    pub reconnect: Duration,
    /// How often a waiting call sends a progress notification; zero sends only the ones that
    /// report a change (posted, lost the daemon, re-attached).
    pub heartbeat: Duration,
}

/// Serves MCP on stdin/stdout until the client closes stdin.
pub async fn serve_stdio(options: McpOptions) -> anyhow::Result<()> {
    // Not fatal: the client would only mark the server broken. Calls say how to start it.
    match &options.target {
        Ok(target) => match Client::connect_to(target).await {
            Ok(_) => tracing::info!(socket = %target.socket.display(), "MCP server ready"),
            Err(e) => tracing::warn!(
                "the askrelay daemon is not reachable at {} ({e}); ask_user_question fails \
                 until it runs (askrelay serve)",
                target.socket.display()
            ),
        },
        Err(why) => tracing::error!("{why}; ask_user_question fails until that is fixed"),
    }
    let gone = CancellationToken::new();
    let (reader, writer) = rmcp::transport::stdio_pipes();
    let reader = EofSignal {
        inner: reader,
        gone: gone.clone(),
    };
    let server = McpServer::new(options, gone);
    let calls = server.calls.clone();
    let running = server
        .serve((reader, writer))
        .await
        .map_err(|e| anyhow::anyhow!("the MCP session did not start: {e}"))?;
    let reason = running.waiting().await?;
    tracing::debug!(?reason, "MCP session ended");
    // The session stops waiting for handlers after a few seconds; a call that is still telling
    // the daemon to cancel its request gets to finish, or the request would linger until the
    // daemon's cancel grace ran out.
    calls.close();
    if tokio::time::timeout(EXIT_WAIT, calls.wait()).await.is_err() {
        tracing::warn!("gave up waiting for {} call(s) to end", calls.len());
    }
    Ok(())
}

/// Passes reads through and cancels `gone` when the stream ends: the client closed stdin (or it
/// broke), which cancels every call still waiting.
struct EofSignal<R> {
    inner: R,
    gone: CancellationToken,
}

impl<R: AsyncRead + Unpin> AsyncRead for EofSignal<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let room = buf.remaining();
        let before = buf.filled().len();
        let poll = Pin::new(&mut this.inner).poll_read(cx, buf);
        match &poll {
            Poll::Ready(Ok(())) if room > 0 && buf.filled().len() == before => this.gone.cancel(),
            Poll::Ready(Err(_)) => this.gone.cancel(),
            _ => {}
        }
        poll
    }
}

/// The MCP server: one per `askrelay mcp` process.
#[derive(Debug, Clone)]
pub struct McpServer {
    options: Arc<McpOptions>,
    /// Cancelled when the client closed stdin.
    gone: CancellationToken,
    /// The calls in progress.
    calls: TaskTracker,
    /// A connection to the daemon made ahead of the next call, so that the call does not wait
    /// for connect and accept (the daemon keeps an idle connection without cost to it).
    spare: Arc<std::sync::Mutex<Option<Client>>>,
}

impl McpServer {
    pub fn new(options: McpOptions, gone: CancellationToken) -> McpServer {
        McpServer {
            options: Arc::new(options),
            gone,
            calls: TaskTracker::new(),
            spare: Arc::default(),
        }
    }

    /// The spare connection, if there is one.
    fn take_spare(&self) -> Option<Client> {
        self.spare.lock().unwrap().take()
    }

    /// Makes a spare in the background for the call after this one. Called once the daemon
    /// answered this call's ask, not as it is sent: a connection accepted while the daemon
    /// stores and posts the question would share its two cores with that work.
    fn make_spare(&self) {
        let Ok(target) = self.options.target.clone() else {
            return;
        };
        let spare = self.spare.clone();
        tokio::spawn(async move {
            if let Ok(c) = Client::connect_to(&target).await {
                *spare.lock().unwrap() = Some(c);
            }
        });
    }

    /// Why a call is being cancelled. Closing stdin cancels every call, and the session then
    /// cancels their MCP requests too, so it is checked first.
    fn cancel_reason(&self) -> &'static str {
        if self.gone.is_cancelled() {
            "the MCP client went away (its stdin closed)"
        } else {
            "the MCP client cancelled the tool call"
        }
    }

    /// The ask for one call: the arguments' `questions`, this server's scope, a fresh id,
    /// checked by the daemon's own rules (the daemon checks again, with its limits).
    fn build_ask(&self, request_id: &str, arguments: Option<JsonObject>) -> Result<Ask, String> {
        let mut arguments = arguments.unwrap_or_default();
        // The ask line's other top-level fields (request_id, caller, scope) belong to this
        // server, not to the model.
        if let Some(key) = arguments.keys().find(|k| *k != "questions") {
            return Err(format!(
                "INVALID_REQUEST: {key}: unknown field; the tool input is {{\"questions\":[...]}}"
            ));
        }
        let mut line = Map::new();
        line.insert("request_id".into(), json!(request_id));
        if let Some(q) = arguments.remove("questions") {
            line.insert("questions".into(), q);
        }
        if !self.options.scope.is_empty() {
            line.insert("scope".into(), Value::Object(self.options.scope.clone()));
        }
        parse_ask(&line, usize::MAX).map_err(|e| format!("INVALID_REQUEST: {}", e.message))
    }

    /// Runs one `tools/call` to its result.
    async fn ask(
        &self,
        arguments: Option<JsonObject>,
        ct: CancellationToken,
        mut progress: Progress,
    ) -> CallToolResult {
        let request_id = uuid::Uuid::new_v4().to_string();
        let ask = match self.build_ask(&request_id, arguments) {
            Ok(a) => a,
            Err(text) => return tool_error(text),
        };
        let target = match &self.options.target {
            Ok(target) => target,
            Err(why) => return tool_error(format!("INTERNAL: {why}")),
        };
        let spare = self.take_spare();
        let mut session =
            match AskSession::start_on(spare, target.clone(), ask, self.options.reconnect).await {
                Ok(s) => s,
                Err(e) => {
                    return tool_error(format!(
                        "INTERNAL: cannot reach the askrelay daemon at {} ({e}); start it with \
                     `askrelay serve` (or point ASKRELAY_SOCKET_PATH or --config at its socket)",
                        target.socket.display()
                    ))
                }
            };
        let mut accepted = false;
        let mut heartbeat = heartbeat(self.options.heartbeat);
        let started = Instant::now();
        let mut waiting_via = String::new();
        let mut spare_made = false;
        loop {
            let update = tokio::select! {
                _ = ct.cancelled() => return self.cancel(&mut session, accepted).await,
                _ = self.gone.cancelled() => return self.cancel(&mut session, accepted).await,
                _ = tick(&mut heartbeat), if accepted && progress.enabled() => {
                    progress.send(format!(
                        "Still waiting for an answer via {waiting_via} ({} s; request {request_id})",
                        started.elapsed().as_secs()
                    )).await;
                    continue;
                }
                u = session.next() => u,
            };
            if !spare_made {
                spare_made = true;
                self.make_spare();
            }
            match update {
                AskUpdate::Accepted { answerer, detail } => {
                    accepted = true;
                    let message = accepted_message(&answerer, &detail, &request_id);
                    waiting_via = answerer;
                    tracing::info!("{message}");
                    progress.send(message).await;
                }
                AskUpdate::Lost { window } => {
                    accepted = false;
                    let message = format!(
                        "Lost the askrelay daemon at {}; reconnecting to re-attach request \
                         {request_id} (for up to {} s)",
                        target.socket.display(),
                        window.as_secs()
                    );
                    tracing::warn!("{message}");
                    progress.send(message).await;
                }
                AskUpdate::Retrying { error, window } => {
                    accepted = false;
                    let message = format!(
                        "askrelay could not save request {request_id} ({}); asking again until \
                         it is saved (for up to {} s)",
                        error.message,
                        window.as_secs()
                    );
                    tracing::warn!("{message}");
                    progress.send(message).await;
                }
                AskUpdate::Reattached => tracing::info!(request_id, "reconnected; re-attached"),
                AskUpdate::Answered(result) => return final_result(Ok(result)),
                AskUpdate::Failed(e) => return final_result(Err(e)),
            }
        }
    }

    /// Cancels the request in the daemon and returns the call's result: normally `ABORTED`, or
    /// the answer if it won the race.
    async fn cancel(&self, session: &mut AskSession, accepted: bool) -> CallToolResult {
        let reason = self.cancel_reason();
        tracing::info!(request_id = session.request_id(), "cancelling: {reason}");
        // A cancel that overtook the ask would find no request, so wait for `accepted`.
        if !accepted {
            let first = tokio::time::timeout(CANCEL_WAIT, async {
                loop {
                    match session.next().await {
                        AskUpdate::Accepted { .. } => return None,
                        AskUpdate::Answered(r) => return Some(final_result(Ok(r))),
                        AskUpdate::Failed(e) => return Some(final_result(Err(e))),
                        AskUpdate::Lost { .. }
                        | AskUpdate::Reattached
                        | AskUpdate::Retrying { .. } => {}
                    }
                }
            })
            .await;
            if let Ok(Some(result)) = first {
                return result;
            }
        }
        let reply = tokio::time::timeout(CANCEL_WAIT, session.cancel(reason)).await;
        tracing::debug!(?reply, "cancel reply");
        // The final line: ABORTED, or the answer if it won the race.
        let last = tokio::time::timeout(CANCEL_WAIT, async {
            loop {
                match session.next().await {
                    AskUpdate::Answered(r) => return Some(final_result(Ok(r))),
                    AskUpdate::Failed(e) => return Some(final_result(Err(e))),
                    AskUpdate::Lost { .. } | AskUpdate::Retrying { .. } => return None,
                    AskUpdate::Accepted { .. } | AskUpdate::Reattached => {}
                }
            }
        })
        .await;
        // Without a final line, dropping the connection still cancels the request once the
        // daemon's cancel grace runs out.
        last.ok()
            .flatten()
            .unwrap_or_else(|| tool_error(format!("ABORTED: {reason}")))
    }
}

/// The tool result of a call's final line: the result JSON (docs/contract.md, "Result JSON") as the daemon wrote it, or
/// `CODE: message`.
fn final_result(outcome: Result<Box<RawValue>, AskError>) -> CallToolResult {
    match outcome {
        Ok(result) => CallToolResult::success(vec![ContentBlock::text(result.get().to_owned())]),
        Err(e) => tool_error(format!("{}: {}", e.code, e.message)),
    }
}

/// Where the question went, for the progress notification and the log.
fn accepted_message(answerer: &str, detail: &Accepted, request_id: &str) -> String {
    let links = detail.message_links.as_deref().unwrap_or_default();
    let mut message = if links.is_empty() {
        format!("Waiting for an answer via {answerer} (request {request_id})")
    } else {
        format!(
            "Posted to {answerer}: {}; waiting for an answer (request {request_id})",
            links.join(" ")
        )
    };
    if let Some(hint) = &detail.hint {
        message.push_str("; ");
        message.push_str(hint);
    }
    message
}

fn tool_error(text: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(text)])
}

/// Progress notifications for one call, when the client gave a progress token.
struct Progress {
    token: Option<ProgressToken>,
    peer: Peer<RoleServer>,
    count: f64,
}

impl Progress {
    fn enabled(&self) -> bool {
        self.token.is_some()
    }

    async fn send(&mut self, message: String) {
        let Some(token) = self.token.clone() else {
            return;
        };
        self.count += 1.0;
        let param = ProgressNotificationParam::new(token, self.count).with_message(message);
        if let Err(e) = self.peer.notify_progress(param).await {
            tracing::debug!(error = %e, "cannot send a progress notification");
        }
    }
}

fn heartbeat(every: Duration) -> Option<tokio::time::Interval> {
    (!every.is_zero()).then(|| {
        let mut i = tokio::time::interval_at(Instant::now() + every, every);
        i.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        i
    })
}

async fn tick(heartbeat: &mut Option<tokio::time::Interval>) {
    match heartbeat {
        Some(i) => {
            i.tick().await;
        }
        None => std::future::pending().await,
    }
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(
                Implementation::new("askrelay", env!("CARGO_PKG_VERSION"))
                    .with_title("askrelay")
                    .with_description("Ask people questions through Discord or a terminal"),
            )
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(vec![tool()]))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        (name == TOOL_NAME).then(tool)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        if request.name != TOOL_NAME {
            return Err(McpError::invalid_params(
                format!(
                    "unknown tool {:?}; this server has only {TOOL_NAME}",
                    request.name
                ),
                None,
            ));
        }
        let progress = Progress {
            token: context.meta.get_progress_token(),
            peer: context.peer.clone(),
            count: 0.0,
        };
        let call = self.ask(request.arguments, context.ct.clone(), progress);
        Ok(self.calls.track_future(call).await.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ask::parse_ask;

    fn spec_input() -> Value {
        json!({"questions": [{
            "id": "cleanup",
            "question": "Proceed with the destructive cleanup?",
            "header": "Confirm",
            "options": [
                {"label": "Yes, delete them (Recommended)", "description": "Removes the three stale files."},
                {"label": "No, keep them", "description": "Aborts the cleanup."}
            ],
            "multiSelect": false
        }, {"id": "name", "question": "What should the branch be called?"}]})
    }

    /// The mirror types and the daemon's parser agree on the wire names and on what is optional.
    #[test]
    fn mirror_types_match_the_daemon_model() {
        let input = spec_input();
        let mirrored: ToolInput = serde_json::from_value(input.clone()).unwrap();
        let reparsed = serde_json::to_value(&mirrored).unwrap();
        let a = parse_ask(input.as_object().unwrap(), 10).unwrap();
        let b = parse_ask(reparsed.as_object().unwrap(), 10).unwrap();
        assert_eq!(a, b);
        // Every property the schema names is one the daemon knows, at every level.
        let schema = Value::Object(input_schema());
        let q = &schema["properties"]["questions"]["items"];
        let o = &q["properties"]["options"]["items"];
        let names = |v: &Value| -> Vec<String> {
            v["properties"]
                .as_object()
                .unwrap()
                .keys()
                .cloned()
                .collect()
        };
        assert_eq!(names(&schema), ["questions"]);
        assert_eq!(
            names(q),
            ["id", "question", "header", "options", "multiSelect"]
        );
        assert_eq!(names(o), ["label", "description"]);
        assert_eq!(q["required"], json!(["id", "question"]));
        assert_eq!(o["required"], json!(["label"]));
        assert!(!schema.to_string().contains("$ref"), "{schema}");
        assert!(
            !schema.to_string().contains("\\n"),
            "one-line descriptions: {schema}"
        );
    }

    #[test]
    fn ask_line_carries_questions_scope_and_a_fresh_id() {
        let mut scope = Map::new();
        scope.insert("project".into(), json!("p"));
        let server = McpServer::new(
            McpOptions {
                target: Ok(Target::new("/nonexistent")),
                scope,
                reconnect: Duration::from_secs(1),
                heartbeat: Duration::ZERO,
            },
            CancellationToken::new(),
        );
        let args = spec_input().as_object().cloned();
        let ask = server.build_ask("r1", args).unwrap();
        let line: Value = serde_json::from_str(&crate::protocol::Op::Ask(ask).to_line()).unwrap();
        assert_eq!(line["op"], "ask");
        assert_eq!(line["request_id"], "r1");
        assert_eq!(line["scope"], json!({"project": "p"}));
        assert_eq!(
            line["questions"][0]["options"],
            spec_input()["questions"][0]["options"]
        );
        let bad = json!({"questions": [], "scope": {"project": "x"}});
        let err = server
            .build_ask("r2", bad.as_object().cloned())
            .unwrap_err();
        assert!(
            err.starts_with("INVALID_REQUEST: scope: unknown field"),
            "{err}"
        );
        // No arguments at all: the error says what is missing.
        let err = server.build_ask("r3", None).unwrap_err();
        assert!(err.contains("questions: is required"), "{err}");
    }

    #[test]
    fn accepted_messages_say_where_the_question_went() {
        let discord = Accepted {
            message_links: Some(vec!["https://discord.com/channels/1/2/3".into()]),
            ..Accepted::default()
        };
        assert_eq!(
            accepted_message("discord", &discord, "r"),
            "Posted to discord: https://discord.com/channels/1/2/3; waiting for an answer (request r)"
        );
        let terminal = Accepted {
            hint: Some("answer from a terminal: askrelay pending".into()),
            ..Accepted::default()
        };
        assert_eq!(
            accepted_message("terminal", &terminal, "r"),
            "Waiting for an answer via terminal (request r); answer from a terminal: askrelay pending"
        );
    }
}
