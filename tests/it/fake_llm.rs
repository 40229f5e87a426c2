//! Scripted fakes of the model APIs that the real agent CLIs talk to, so that the tests can run
//! Claude Code and Codex offline: Anthropic's Messages API (`POST /v1/messages`, streamed as
//! server-sent events) for Claude Code, and OpenAI's Responses API (`POST /v1/responses`, also
//! streamed) for Codex.
//!
//! A fake is given a script: the tool calls the "model" makes, one step per turn. Which step a
//! request is at is read from the request itself (the number of tool results in its
//! conversation), so a retried or repeated request gets the same answer; once the script is
//! done the model says "done" (or the text it was given, [`FakeLlm::anthropic_saying`]) and the
//! turn ends. Requests without tools (Claude Code's side
//! calls, such as a title) get a short text. Every request body is recorded, so that a test can
//! read the tool results the model saw.
//!
//! Claude Code's auto mode asks a classifier over the same API before a tool call runs: a
//! request without tools whose system prompt starts "You are a security monitor", not
//! streamed, in two stages (a short verdict, then one with `<thinking>`). A fake made with
//! [`FakeLlm::anthropic_auto`] answers those too: it blocks an action whose transcript line
//! contains a given text, and allows the rest, in the format the system prompt asks for
//! (2.1.332: `<severity>N</severity>` and a `<category>` naming a block rule; 2.1.197:
//! `<block>yes</block><reason>[Rule] …</reason>`). Those requests are kept apart
//! ([`FakeLlm::classified`]).

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

/// One tool call the model makes: a tool's name and its input.
#[derive(Debug, Clone)]
pub struct ToolCall {
    pub name: String,
    pub input: Value,
    /// Made only when Claude Code told the model it may retry the call just denied (a
    /// PermissionDenied hook answered `retry: true`); otherwise the model says "done".
    pub only_if_retry: bool,
    /// Made only once a Stop hook's reply reached the model ("Stop hook feedback"):
    /// the model ends its first turn with its last words, and acts on the reply.
    pub only_after_reply: bool,
}

impl ToolCall {
    pub fn new(name: &str, input: Value) -> ToolCall {
        ToolCall {
            name: name.to_owned(),
            input,
            only_if_retry: false,
            only_after_reply: false,
        }
    }

    /// The call, made only once a reply to the end of a turn reached the model
    /// ([`ToolCall::only_after_reply`]).
    pub fn after_reply(self) -> ToolCall {
        ToolCall {
            only_after_reply: true,
            ..self
        }
    }

    /// The same call again, made only if the model may retry it ([`ToolCall::only_if_retry`]).
    pub fn retry(&self) -> ToolCall {
        ToolCall {
            only_if_retry: true,
            ..self.clone()
        }
    }
}

/// What Claude Code adds after a denied call's result when a PermissionDenied hook answered
/// `retry: true`: 2.1.332's words, and 2.1.197's.
pub const RETRY_ALLOWED: [&str; 2] = [
    "The refusal above is not final for this call",
    "The PermissionDenied hook indicated you may retry this tool call.",
];

/// Auto mode's classifier, faked: blocks an action whose transcript contains `needle`, naming
/// the block rule `rule`.
#[derive(Debug, Clone)]
struct Classifier {
    needle: String,
    rule: &'static str,
}

/// The block rule the fake classifier names (one of the rules in Claude Code's classifier
/// prompt, which 2.1.332 checks a `<category>` against).
pub const BLOCK_RULE: &str = "Modify Shared Resources";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Api {
    Anthropic,
    OpenAi,
}

struct Shared {
    api: Api,
    script: Vec<ToolCall>,
    /// What the model says when the script is done, ending its turn.
    last_words: String,
    requests: Mutex<Vec<Value>>,
    classifier: Option<Classifier>,
    /// The classifier's requests, apart from the agent's.
    classified: Mutex<Vec<Value>>,
    /// Bumped at every request: what [`FakeLlm::wait_for`] waits on.
    seen: tokio::sync::watch::Sender<u64>,
}

/// A running fake, on 127.0.0.1 with an OS-chosen port; it stops when dropped.
pub struct FakeLlm {
    /// `http://127.0.0.1:PORT`: Claude Code's `ANTHROPIC_BASE_URL`; Codex's provider
    /// `base_url` is this with `/v1`.
    pub base_url: String,
    shared: Arc<Shared>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for FakeLlm {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl FakeLlm {
    /// Anthropic's Messages API, for Claude Code.
    pub async fn anthropic(script: Vec<ToolCall>) -> FakeLlm {
        Self::start(Api::Anthropic, script, None, "done").await
    }

    /// Anthropic's Messages API, and auto mode's classifier blocking every action whose
    /// transcript line contains `block` (with the rule [`BLOCK_RULE`]).
    pub async fn anthropic_auto(script: Vec<ToolCall>, block: &str) -> FakeLlm {
        let classifier = Classifier {
            needle: block.to_owned(),
            rule: BLOCK_RULE,
        };
        Self::start(Api::Anthropic, script, Some(classifier), "done").await
    }

    /// OpenAI's Responses API, for Codex.
    pub async fn openai(script: Vec<ToolCall>) -> FakeLlm {
        Self::start(Api::OpenAi, script, None, "done").await
    }

    /// Anthropic's Messages API, ending each turn with `last_words` (a question, say; a
    /// `{turn}` in it becomes the number of the request for a turn, from 1).
    pub async fn anthropic_saying(script: Vec<ToolCall>, last_words: &str) -> FakeLlm {
        Self::start(Api::Anthropic, script, None, last_words).await
    }

    /// OpenAI's Responses API, ending each turn with `last_words`.
    pub async fn openai_saying(script: Vec<ToolCall>, last_words: &str) -> FakeLlm {
        Self::start(Api::OpenAi, script, None, last_words).await
    }

    async fn start(
        api: Api,
        script: Vec<ToolCall>,
        classifier: Option<Classifier>,
        last_words: &str,
    ) -> FakeLlm {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base_url = format!("http://{}", listener.local_addr().unwrap());
        let shared = Arc::new(Shared {
            api,
            script,
            last_words: last_words.to_owned(),
            requests: Mutex::new(Vec::new()),
            classifier,
            classified: Mutex::new(Vec::new()),
            seen: tokio::sync::watch::channel(0).0,
        });
        let app = Router::new()
            .fallback(handle)
            .with_state(Arc::clone(&shared));
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeLlm {
            base_url,
            shared,
            server,
        }
    }

    /// Every request body the model was sent, in order.
    pub fn requests(&self) -> Vec<Value> {
        self.shared.requests.lock().unwrap().clone()
    }

    /// Every request auto mode's classifier was sent, in order.
    pub fn classified(&self) -> Vec<Value> {
        self.shared.classified.lock().unwrap().clone()
    }

    /// Waits until `ready` holds for this fake (checked at each request it gets), or fails the
    /// test after the harness's wait, saying `what`.
    pub async fn wait_for(&self, what: &str, ready: impl Fn(&FakeLlm) -> bool) {
        let mut seen = self.shared.seen.subscribe();
        crate::harness::within(what, async {
            while !ready(self) {
                seen.changed().await.unwrap();
            }
        })
        .await
    }

    /// The requests for a turn (those that offer tools; Claude Code's side calls, such as a
    /// title, offer none) in which `text` appears anywhere: in a user message, a system
    /// reminder, a tool result.
    pub fn turns_showing(&self, text: &str) -> usize {
        self.turns()
            .iter()
            .filter(|r| r.to_string().contains(text))
            .count()
    }

    /// The requests for a turn (those that offer tools).
    pub fn turns(&self) -> Vec<Value> {
        self.requests()
            .into_iter()
            .filter(|r| r["tools"].as_array().is_some_and(|t| !t.is_empty()))
            .collect()
    }

    /// The results of the script's tool calls that the model was shown, in order: Anthropic's
    /// `tool_result` blocks (their text) and OpenAI's `function_call_output` items (their
    /// output), from the longest conversation sent.
    pub fn tool_results(&self) -> Vec<String> {
        let requests = self.requests();
        let results = |r: &Value| -> Vec<String> {
            match self.shared.api {
                Api::Anthropic => r["messages"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
                    .filter(|c| c["type"] == "tool_result")
                    .map(|c| block_text(&c["content"]))
                    .collect(),
                Api::OpenAi => r["input"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|i| i["type"] == "function_call_output")
                    .map(|i| block_text(&i["output"]))
                    .collect(),
            }
        };
        requests
            .iter()
            .map(results)
            .max_by_key(Vec::len)
            .unwrap_or_default()
    }
}

/// A tool result's content as text: a string, or the text blocks of a list.
fn block_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        other => other.to_string(),
    }
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    _headers: HeaderMap,
    body: Bytes,
) -> Response {
    if method == Method::HEAD || method == Method::GET {
        return StatusCode::OK.into_response();
    }
    let path = uri.path();
    let req: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    if path.ends_with("/count_tokens") {
        return json_response(json!({"input_tokens": 10}));
    }
    let is_turn = req["tools"].as_array().is_some_and(|t| !t.is_empty());
    let _bump = Bump(&shared.seen);
    if let Some(c) = shared.classifier.as_ref().filter(|_| {
        req["system"]
            .to_string()
            .contains("You are a security monitor")
    }) {
        shared.classified.lock().unwrap().push(req.clone());
        return classify(c, &req);
    }
    let turn = {
        let mut all = shared.requests.lock().unwrap();
        all.push(req.clone());
        all.iter()
            .filter(|r| r["tools"].as_array().is_some_and(|t| !t.is_empty()))
            .count()
    };
    let last_words = shared.last_words.replace("{turn}", &turn.to_string());
    match (shared.api, path) {
        (Api::Anthropic, p) if p.starts_with("/v1/messages") => {
            let step = req["messages"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
                .filter(|c| c["type"] == "tool_result")
                .count();
            let call = is_turn
                .then(|| shared.script.get(step))
                .flatten()
                .filter(|c| !c.only_if_retry || may_retry(&req))
                .filter(|c| {
                    !c.only_after_reply
                        || req["messages"].to_string().contains("Stop hook feedback")
                });
            sse(anthropic_events(call, step, &last_words))
        }
        (Api::OpenAi, p) if p.ends_with("/responses") => {
            let step = req["input"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|i| i["type"] == "function_call_output")
                .count();
            let call = is_turn.then(|| shared.script.get(step)).flatten();
            sse(openai_events(call, step, &last_words))
        }
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}

/// Tells the waiters once the request was answered (dropped at the end of `handle`).
struct Bump<'a>(&'a tokio::sync::watch::Sender<u64>);

impl Drop for Bump<'_> {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n += 1);
    }
}

/// Whether the last message of an Anthropic conversation tells the model it may retry.
fn may_retry(req: &Value) -> bool {
    let last = req["messages"]
        .as_array()
        .and_then(|m| m.last())
        .map(|m| m.to_string())
        .unwrap_or_default();
    RETRY_ALLOWED.iter().any(|t| last.contains(t))
}

/// The classifier's verdict on the action under review: the last line of the transcript.
fn classify(c: &Classifier, req: &Value) -> Response {
    let texts: Vec<String> = req["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter_map(|b| b["text"].as_str().map(str::to_owned))
        .collect();
    // The transcript ends with the action, then `</transcript>`.
    let action = texts
        .iter()
        .rposition(|t| t.starts_with("</transcript>"))
        .and_then(|end| end.checked_sub(1))
        .map(|i| texts[i].clone())
        .unwrap_or_default();
    let block = action.contains(&c.needle);
    let system = req["system"].to_string();
    let thinking = texts.last().is_some_and(|t| t.contains("<thinking>"));
    let mut text = if thinking {
        "<thinking>The fake classifier decides by the command.</thinking>".to_owned()
    } else {
        String::new()
    };
    text.push_str(&match (system.contains("<severity>"), block) {
        (true, true) => format!("<severity>90</severity><category>{}</category>", c.rule),
        (true, false) => "<severity>5</severity>".to_owned(),
        (false, true) => format!(
            "<block>yes</block><reason>[{}] the test classifier blocks this command</reason>",
            c.rule
        ),
        (false, false) => "<block>no</block>".to_owned(),
    });
    let message = json!({"id": "msg_classifier", "type": "message", "role": "assistant",
        "model": "claude-sonnet-4-5", "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn", "stop_sequence": null,
        "usage": {"input_tokens": 10, "output_tokens": 5}});
    if req["stream"] == true {
        let events = vec![
            json!({"type": "message_start", "message": {"id": "msg_classifier",
                "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                "content": [], "stop_reason": null, "stop_sequence": null,
                "usage": {"input_tokens": 10, "output_tokens": 1}}}),
            json!({"type": "content_block_start", "index": 0,
                   "content_block": {"type": "text", "text": ""}}),
            json!({"type": "content_block_delta", "index": 0,
                   "delta": {"type": "text_delta", "text": text}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn",
                   "stop_sequence": null}, "usage": {"output_tokens": 5}}),
            json!({"type": "message_stop"}),
        ];
        return sse(events);
    }
    json_response(message)
}

fn json_response(v: Value) -> Response {
    (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        v.to_string(),
    )
        .into_response()
}

/// A whole event stream as one body: `event:` and `data:` lines per event.
fn sse(events: Vec<Value>) -> Response {
    let mut body = String::new();
    for e in events {
        body.push_str(&format!(
            "event: {}\ndata: {e}\n\n",
            e["type"].as_str().unwrap()
        ));
    }
    (
        [(axum::http::header::CONTENT_TYPE, "text/event-stream")],
        body,
    )
        .into_response()
}

/// A Messages API stream: the tool call of this step, or the last words.
fn anthropic_events(call: Option<&ToolCall>, step: usize, last_words: &str) -> Vec<Value> {
    let (block, delta, stop) = match call {
        Some(c) => (
            json!({"type": "tool_use", "id": format!("toolu_{step:02}"), "name": c.name,
                   "input": {}}),
            json!({"type": "input_json_delta", "partial_json": c.input.to_string()}),
            "tool_use",
        ),
        None => (
            json!({"type": "text", "text": ""}),
            json!({"type": "text_delta", "text": last_words}),
            "end_turn",
        ),
    };
    vec![
        json!({"type": "message_start", "message": {"id": format!("msg_{step}"),
            "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 10, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": block}),
        json!({"type": "content_block_delta", "index": 0, "delta": delta}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
               "usage": {"output_tokens": 5}}),
        json!({"type": "message_stop"}),
    ]
}

/// A Responses API stream: the function call of this step, or a message of the last words.
fn openai_events(call: Option<&ToolCall>, step: usize, last_words: &str) -> Vec<Value> {
    let item = match call {
        Some(c) => json!({"type": "function_call", "id": format!("fc_{step}"),
            "call_id": format!("call_{step}"), "name": c.name,
            "arguments": c.input.to_string(), "status": "completed"}),
        None => json!({"type": "message", "id": format!("msg_{step}"), "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": last_words, "annotations": []}]}),
    };
    let id = format!("resp_{step}");
    vec![
        json!({"type": "response.created",
               "response": {"id": id, "status": "in_progress", "output": []}}),
        json!({"type": "response.output_item.added", "output_index": 0, "item": item}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
        json!({"type": "response.completed", "response": {"id": id, "status": "completed",
            "output": [item], "usage": {"input_tokens": 10, "output_tokens": 5,
            "total_tokens": 15, "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0}}}}),
    ]
}
