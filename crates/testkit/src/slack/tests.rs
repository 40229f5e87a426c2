//! The stand-in's own tests at the level of the wire, with a raw WebSocket and raw HTTP (the
//! self-tests with slack-morphism are `tests/it/slack_standin_selftest.rs`): Socket Mode's frames,
//! tickets, redelivery and stray frames; ephemeral messages and modals answered through
//! response_urls and acks; deliveries over HTTP, signed, whose response is the ack; and the check
//! at the end that fails a test on a violation.

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

use super::{
    Action, EnvelopeType, Person, SlackStandIn, ViewValues, APP_ID, APP_TOKEN, BOT_TOKEN,
    DEFAULT_CHANNEL,
};

type Ws = tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>;

fn alice() -> Person {
    Person::new("U0ALICE001", "alice")
}

/// A Web API call with a JSON body, over plain HTTP; the JSON answered.
async fn call(standin: &SlackStandIn, method: &str, token: &str, body: Value) -> Value {
    let response = reqwest::Client::new()
        .post(format!("{}/{method}", standin.api_base()))
        .bearer_auth(token)
        .header("content-type", "application/json; charset=utf-8")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    serde_json::from_str(&response.text().await.unwrap()).unwrap()
}

/// A POST of JSON to a URL the stand-in handed out (a response_url).
async fn post_to(url: &str, body: Value) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (
        status,
        serde_json::from_str(&response.text().await.unwrap()).unwrap(),
    )
}

/// Connects to a Socket Mode URL; the handshake's error (an HTTP refusal) otherwise.
async fn connect_to(url: &str) -> Result<Ws, String> {
    let addr = url
        .trim_start_matches("ws://")
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    tokio_tungstenite::client_async(url, stream)
        .await
        .map(|(ws, _)| ws)
        .map_err(|e| e.to_string())
}

/// apps.connections.open, then a connection to the URL it gives; the URL too.
async fn connect(standin: &SlackStandIn) -> (Ws, String) {
    let open = call(standin, "apps.connections.open", APP_TOKEN, json!({})).await;
    let url = open["url"].as_str().unwrap().to_owned();
    (connect_to(&url).await.unwrap(), url)
}

async fn next_json(ws: &mut Ws) -> Value {
    loop {
        let msg = tokio::time::timeout(Duration::from_secs(30), ws.next())
            .await
            .expect("a frame within 30 s")
            .expect("the connection is open")
            .expect("a frame");
        if let Message::Text(text) = msg {
            return serde_json::from_str(text.as_str()).unwrap();
        }
    }
}

async fn send(ws: &mut Ws, frame: Value) {
    ws.send(Message::Text(frame.to_string().into()))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_ticket_opens_one_connection_that_says_hello_and_takes_acks() {
    let standin = SlackStandIn::start().await;
    let (mut ws, url) = connect(&standin).await;
    let hello = next_json(&mut ws).await;
    assert_eq!(hello["type"], "hello");
    assert_eq!(hello["num_connections"], 1);
    assert_eq!(hello["connection_info"]["app_id"], APP_ID);
    standin.wait_connected(1).await;

    // A ticket is good once.
    let again = connect_to(&url).await.unwrap_err();
    assert!(again.contains("401"), "{again}");
    assert_eq!(standin.refused_connections(), 1);

    let sent = standin
        .send_envelope(
            EnvelopeType::EventsApi,
            json!({"type": "event_callback"}),
            false,
        )
        .await;
    let frame = next_json(&mut ws).await;
    assert_eq!(frame["envelope_id"], sent.envelope_id.as_str());
    assert_eq!(frame["type"], "events_api");
    assert_eq!(frame["retry_attempt"], 0);
    assert_eq!(frame["accepts_response_payload"], false);

    // Redelivered: the same id, one attempt more.
    standin.redeliver(&sent.envelope_id).await;
    let frame = next_json(&mut ws).await;
    assert_eq!(frame["envelope_id"], sent.envelope_id.as_str());
    assert_eq!(frame["retry_attempt"], 1);
    assert_eq!(frame["retry_reason"], "timeout");

    send(
        &mut ws,
        json!({"envelope_id": sent.envelope_id, "payload": {"x": 1}}),
    )
    .await;
    let ack = standin.wait_ack(&sent.envelope_id).await;
    assert_eq!(ack.payload, Some(json!({"x": 1})));
    assert_eq!(ack.connection, 1);
    assert!(standin.ack_of(&sent.envelope_id).is_some());

    // What Slack would ignore is recorded as a violation.
    send(&mut ws, json!({"envelope_id": "never-sent"})).await;
    send(&mut ws, json!({"hello": "there"})).await;
    standin.allow_violations();
    let mut changes = standin.subscribe();
    while standin.violations().len() < 2 {
        changes.changed().await.unwrap();
    }
    let problems: Vec<String> = standin
        .violations()
        .iter()
        .map(|v| v.problem.clone())
        .collect();
    assert_eq!(
        problems,
        [
            "an ack for an envelope never sent: never-sent",
            "a frame that is not an ack: {\"hello\":\"there\"}",
        ]
    );

    standin.send_disconnect("warning").await;
    let frame = next_json(&mut ws).await;
    assert_eq!(frame["type"], "disconnect");
    assert_eq!(frame["reason"], "warning");
    assert_eq!(frame["debug_info"]["host"], "applink-standin");
    assert_eq!(standin.live_connections(), 0);
}

#[tokio::test]
async fn ephemeral_messages_and_modals_answer_through_response_urls_and_acks() {
    let standin = SlackStandIn::start().await;
    let (mut ws, _) = connect(&standin).await;
    next_json(&mut ws).await;
    let button = json!([{"type": "actions", "block_id": "a", "elements": [
        {"type": "button", "action_id": "ok", "text": {"type": "plain_text", "text": "OK"}, "value": "v"}
    ]}]);

    // An ephemeral message: Slack sends no copy of it, and its response_url deletes it.
    let posted = call(
        &standin,
        "chat.postEphemeral",
        BOT_TOKEN,
        json!({"channel": DEFAULT_CHANNEL, "user": "U0ALICE001", "text": "t", "blocks": button}),
    )
    .await;
    let ts = posted["message_ts"].as_str().unwrap().to_owned();
    let sent = standin
        .click_ephemeral(&alice(), &ts, Action::button("a", "ok"))
        .await;
    let frame = next_json(&mut ws).await;
    assert_eq!(frame["payload"]["container"]["is_ephemeral"], true);
    assert!(frame["payload"].get("message").is_none());
    assert_eq!(frame["payload"]["actions"][0]["value"], "v");
    let url = sent.response_url.unwrap();
    assert!(url.starts_with("http://"), "{url}");
    let (status, reply) = post_to(&url, json!({"delete_original": true})).await;
    assert_eq!((status, reply), (200, json!({"ok": true})));
    assert!(standin.ephemerals()[0].deleted);

    // A modal: an action inside it, then submissions answered with response_actions.
    let view = json!({
        "type": "modal",
        "notify_on_close": true,
        "title": {"type": "plain_text", "text": "First"},
        "submit": {"type": "plain_text", "text": "Send"},
        "blocks": [
            {"type": "input", "block_id": "why", "label": {"type": "plain_text", "text": "Why"},
             "element": {"type": "plain_text_input", "action_id": "why_input"}},
            button[0],
        ],
    });
    let trigger = standin.new_trigger_id(&alice());
    let opened = call(
        &standin,
        "views.open",
        BOT_TOKEN,
        json!({"trigger_id": trigger, "view": view}),
    )
    .await;
    let id = opened["view"]["id"].as_str().unwrap().to_owned();
    standin
        .act_in_view(&alice(), &id, Action::button("a", "ok"))
        .await;
    let frame = next_json(&mut ws).await;
    assert_eq!(frame["payload"]["container"]["view_id"], id.as_str());

    let values = ViewValues::new().text("why", "why_input", Some("because"));
    let mut updated = view.clone();
    updated["title"]["text"] = json!("Second");
    for (response, title) in [
        (
            json!({"response_action": "errors", "errors": {"why": "no"}}),
            "First",
        ),
        (
            json!({"response_action": "update", "view": updated}),
            "Second",
        ),
    ] {
        let sent = standin.submit_view(&alice(), &id, &values).await;
        let frame = next_json(&mut ws).await;
        assert_eq!(frame["accepts_response_payload"], true);
        assert_eq!(
            frame["payload"]["view"]["state"]["values"]["why"]["why_input"]["value"],
            "because"
        );
        send(
            &mut ws,
            json!({"envelope_id": sent.envelope_id(), "payload": response}),
        )
        .await;
        standin.wait_ack(sent.envelope_id()).await;
        let now = standin.view(&id).unwrap();
        assert!(!now.closed);
        assert_eq!(now.value["title"]["text"], title);
    }
    let sent = standin.submit_view(&alice(), &id, &values).await;
    next_json(&mut ws).await;
    send(
        &mut ws,
        json!({"envelope_id": sent.envelope_id(), "payload": {"response_action": "push", "view": view}}),
    )
    .await;
    standin.wait_ack(sent.envelope_id()).await;
    let views = standin.views();
    assert_eq!(views.len(), 2);
    assert_eq!(views[1].value["previous_view_id"], id.as_str());

    // Closing: view_closed only for a view opened with notify_on_close.
    let closed = standin.close_view(&alice(), &id).await.unwrap();
    let frame = next_json(&mut ws).await;
    assert_eq!(frame["envelope_id"], closed.envelope_id());
    assert_eq!(frame["payload"]["type"], "view_closed");
    assert!(standin.view(&id).unwrap().closed);
    let mut no_notify = view.clone();
    no_notify["notify_on_close"] = json!(false);
    let trigger = standin.new_trigger_id(&alice());
    let second = call(
        &standin,
        "views.open",
        BOT_TOKEN,
        json!({"trigger_id": trigger, "view": no_notify}),
    )
    .await;
    let second = second["view"]["id"].as_str().unwrap().to_owned();
    assert!(standin.close_view(&alice(), &second).await.is_none());
    assert!(standin.view(&second).unwrap().closed);
    standin.assert_no_violations();
}

#[tokio::test]
#[should_panic(expected = "violation(s) recorded")]
async fn a_violation_fails_the_test_when_the_stand_in_is_dropped() {
    let standin = SlackStandIn::start().await;
    let blocks: Vec<Value> = (0..51).map(|_| json!({"type": "divider"})).collect();
    let reply = call(
        &standin,
        "chat.postMessage",
        BOT_TOKEN,
        json!({"channel": DEFAULT_CHANNEL, "blocks": blocks}),
    )
    .await;
    assert_eq!(reply["error"], "invalid_blocks");
    drop(standin);
}

#[tokio::test]
#[should_panic(expected = "has no input other/x")]
async fn a_submission_names_only_inputs_the_view_has() {
    let standin = SlackStandIn::start().await;
    let (mut ws, _) = connect(&standin).await;
    next_json(&mut ws).await;
    let trigger = standin.new_trigger_id(&alice());
    let view = json!({"type": "modal", "title": {"type": "plain_text", "text": "T"}, "blocks": []});
    let opened = call(
        &standin,
        "views.open",
        BOT_TOKEN,
        json!({"trigger_id": trigger, "view": view}),
    )
    .await;
    let id = opened["view"]["id"].as_str().unwrap();
    let values = ViewValues::new().text("other", "x", Some("v"));
    standin.submit_view(&alice(), id, &values).await;
}

#[tokio::test]
async fn clear_closes_the_whole_stack_and_errors_must_name_an_input() {
    let standin = SlackStandIn::start().await;
    let (mut ws, _) = connect(&standin).await;
    next_json(&mut ws).await;
    let form = json!({
        "type": "modal",
        "title": {"type": "plain_text", "text": "Form"},
        "submit": {"type": "plain_text", "text": "Preview"},
        "blocks": [
            {"type": "section", "block_id": "q", "text": {"type": "mrkdwn", "text": "q"}},
            {"type": "input", "block_id": "answer", "label": {"type": "plain_text", "text": "A"},
             "element": {"type": "plain_text_input", "action_id": "text"}},
        ],
    });
    let trigger = standin.new_trigger_id(&alice());
    let opened = call(
        &standin,
        "views.open",
        BOT_TOKEN,
        json!({"trigger_id": trigger, "view": form}),
    )
    .await;
    let id = opened["view"]["id"].as_str().unwrap().to_owned();
    let values = ViewValues::new().text("answer", "text", Some("x"));
    let answer = |response: Value| {
        let (standin, id, values) = (&standin, id.clone(), values.clone());
        async move {
            let sent = standin.submit_view(&alice(), &id, &values).await;
            (sent, response)
        }
    };
    // A preview pushed over the form, with a duplicate block_id: refused, nothing pushed.
    let mut bad = form.clone();
    bad["blocks"][1]["block_id"] = json!("q");
    let (sent, response) = answer(json!({"response_action": "push", "view": bad})).await;
    next_json(&mut ws).await;
    send(
        &mut ws,
        json!({"envelope_id": sent.envelope_id(), "payload": response}),
    )
    .await;
    standin.wait_ack(sent.envelope_id()).await;
    assert_eq!(standin.views().len(), 1);
    assert!(standin
        .violations()
        .iter()
        .any(|v| v.problem.contains("duplicate block_id")));
    // An error under a block that is no input: refused.
    let (sent, response) =
        answer(json!({"response_action": "errors", "errors": {"q": "no"}})).await;
    next_json(&mut ws).await;
    send(
        &mut ws,
        json!({"envelope_id": sent.envelope_id(), "payload": response}),
    )
    .await;
    standin.wait_ack(sent.envelope_id()).await;
    assert!(standin
        .violations()
        .iter()
        .any(|v| v.pointer == "/payload/errors/q"));
    standin.allow_violations();
    // Pushed, then cleared from the top: both views close.
    let (sent, response) = answer(json!({"response_action": "push", "view": form})).await;
    next_json(&mut ws).await;
    send(
        &mut ws,
        json!({"envelope_id": sent.envelope_id(), "payload": response}),
    )
    .await;
    standin.wait_ack(sent.envelope_id()).await;
    let top = standin.views()[1].clone();
    assert_eq!(top.value["root_view_id"], id.as_str());
    let sent = standin.submit_view(&alice(), &top.id, &values).await;
    next_json(&mut ws).await;
    send(
        &mut ws,
        json!({"envelope_id": sent.envelope_id(), "payload": {"response_action": "clear"}}),
    )
    .await;
    standin.wait_ack(sent.envelope_id()).await;
    assert!(standin.views().iter().all(|v| v.closed));
}

/// A slash command's ack with a payload is its reply: shown to the user who ran it, its blocks
/// checked; a select's choice on that message then goes with every action on it in
/// `state.values`, as Slack's client keeps it, until the message is replaced.
#[tokio::test]
async fn a_commands_ack_is_its_reply_and_actions_carry_the_selects_state() {
    let standin = SlackStandIn::start().await;
    let (mut ws, _) = connect(&standin).await;
    next_json(&mut ws).await;
    let sent = standin
        .slash_command(&alice(), DEFAULT_CHANNEL, "/askrelay", "pending")
        .await;
    next_json(&mut ws).await;
    let option = |v: &str| json!({"text": {"type": "plain_text", "text": v}, "value": v});
    let blocks = json!([
        {"type": "section", "block_id": "m", "text": {"type": "mrkdwn", "text": "Pick"},
         "accessory": {"type": "multi_static_select", "action_id": "pick",
                       "options": [option("a"), option("b")]}},
        {"type": "actions", "block_id": "b", "elements": [
            {"type": "button", "action_id": "go", "text": {"type": "plain_text", "text": "Go"}}]}
    ]);
    send(
        &mut ws,
        json!({"envelope_id": sent.envelope_id(),
               "payload": {"response_type": "ephemeral", "text": "t", "blocks": blocks}}),
    )
    .await;
    standin.wait_ack(sent.envelope_id()).await;
    let reply = standin.ephemerals().remove(0);
    assert_eq!(
        (reply.via.as_str(), reply.user.as_str()),
        ("ack", "U0ALICE001")
    );
    assert_eq!(reply.blocks.as_ref(), Some(&blocks));

    // Nothing picked yet: the select is in the state, empty.
    standin
        .click_ephemeral(&alice(), &reply.ts, Action::button("b", "go"))
        .await;
    let frame = next_json(&mut ws).await;
    assert_eq!(
        frame["payload"]["state"]["values"],
        json!({"m": {"pick": {"type": "multi_static_select", "selected_options": []}}})
    );
    standin
        .click_ephemeral(
            &alice(),
            &reply.ts,
            Action::multi_static_select("m", "pick", &["b"]),
        )
        .await;
    next_json(&mut ws).await;
    standin
        .click_ephemeral(&alice(), &reply.ts, Action::button("b", "go"))
        .await;
    let frame = next_json(&mut ws).await;
    let picked = &frame["payload"]["state"]["values"]["m"]["pick"]["selected_options"];
    assert_eq!(picked.as_array().unwrap().len(), 1, "{picked}");
    assert_eq!(picked[0]["value"], "b");

    // An ack whose blocks break Block Kit is refused and recorded.
    let bad = standin
        .slash_command(&alice(), DEFAULT_CHANNEL, "/askrelay", "pending")
        .await;
    next_json(&mut ws).await;
    let dup = json!([{"type": "actions", "block_id": "x", "elements": [
        {"type": "button", "action_id": "go", "text": {"type": "plain_text", "text": "A"}},
        {"type": "button", "action_id": "go", "text": {"type": "plain_text", "text": "B"}}]}]);
    send(
        &mut ws,
        json!({"envelope_id": bad.envelope_id(), "payload": {"text": "t", "blocks": dup}}),
    )
    .await;
    standin.wait_ack(bad.envelope_id()).await;
    standin.allow_violations();
    assert_eq!(standin.ephemerals().len(), 1, "not shown");
    assert!(
        standin
            .violations()
            .iter()
            .any(|v| v.problem.contains("duplicate action_id: go")),
        "{:?}",
        standin.violations()
    );
}

#[tokio::test]
async fn history_and_replies_page_newest_or_oldest_first_with_metadata_only_when_asked() {
    let s = SlackStandIn::start().await;
    let post = |text: &str, thread: Option<&str>| {
        let mut body = json!({
            "channel": DEFAULT_CHANNEL,
            "text": text,
            "metadata": {"event_type": "askrelay_post", "event_payload": {"nonce": text}},
        });
        if let Some(t) = thread {
            body["thread_ts"] = json!(t);
        }
        body
    };
    let first = call(&s, "chat.postMessage", BOT_TOKEN, post("one", None)).await;
    let root = first["ts"].as_str().unwrap().to_owned();
    call(&s, "chat.postMessage", BOT_TOKEN, post("two", None)).await;
    call(
        &s,
        "chat.postMessage",
        BOT_TOKEN,
        post("reply", Some(&root)),
    )
    .await;
    // The same client_msg_id twice: two messages (Slack documents no de-duplication on it).
    for _ in 0..2 {
        let mut b = post("dup", None);
        b["client_msg_id"] = json!("0f0f0f0f-0000-4000-8000-000000000000");
        call(&s, "chat.postMessage", BOT_TOKEN, b).await;
    }
    let texts = |page: &Value| -> Vec<String> {
        page["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["text"].as_str().unwrap().to_owned())
            .collect()
    };
    // Newest first, without the thread's reply, one page at a time.
    let page1 = call(
        &s,
        "conversations.history",
        BOT_TOKEN,
        json!({"channel": DEFAULT_CHANNEL, "limit": 3}),
    )
    .await;
    assert_eq!(texts(&page1), ["dup", "dup", "two"]);
    assert_eq!(page1["has_more"], true);
    assert!(page1["messages"][0].get("metadata").is_none(), "{page1}");
    let cursor = page1["response_metadata"]["next_cursor"].as_str().unwrap();
    let page2 = call(
        &s,
        "conversations.history",
        BOT_TOKEN,
        json!({"channel": DEFAULT_CHANNEL, "limit": 3, "cursor": cursor,
               "include_all_metadata": true}),
    )
    .await;
    assert_eq!(texts(&page2), ["one"]);
    assert_eq!(page2["has_more"], false);
    assert_eq!(
        page2["messages"][0]["metadata"]["event_payload"]["nonce"],
        "one"
    );
    // `oldest` bounds it; the thread reads oldest first, its root included.
    let newer = call(
        &s,
        "conversations.history",
        BOT_TOKEN,
        json!({"channel": DEFAULT_CHANNEL, "oldest": "9999999999.000000"}),
    )
    .await;
    assert_eq!(texts(&newer), Vec::<String>::new());
    let thread = call(
        &s,
        "conversations.replies",
        BOT_TOKEN,
        json!({"channel": DEFAULT_CHANNEL, "ts": root, "include_all_metadata": "true"}),
    )
    .await;
    assert_eq!(texts(&thread), ["one", "reply"]);
    assert_eq!(
        thread["messages"][1]["metadata"]["event_payload"]["nonce"],
        "reply"
    );
    // Metadata of another shape is refused, and a violation.
    s.allow_violations();
    let mut bad = post("bad", None);
    bad["metadata"] = json!({"event_type": "", "event_payload": {}});
    let refused = call(&s, "chat.postMessage", BOT_TOKEN, bad).await;
    assert_eq!(refused["error"], "invalid_metadata_format");
    assert_eq!(s.violations().len(), 1);
}

const SIGNING_SECRET: &str = "0123456789abcdef0123456789abcdef";

/// An app in the HTTP mode, on 127.0.0.1: each request it takes is checked with slack-morphism's
/// own signature verifier (401 when it fails) and passed on as its content type and its form
/// fields; a view_submission whose `answer` is `wrong` is answered with an error under it, a
/// slash command with an ephemeral reply, anything else with an empty 200.
async fn http_app() -> (
    String,
    tokio::sync::mpsc::UnboundedReceiver<(String, Value)>,
) {
    use axum::http::{HeaderMap, StatusCode};
    use axum::response::IntoResponse;
    use slack_morphism::prelude::SlackSigningSecret;
    use slack_morphism::signature_verifier::SlackEventSignatureVerifier;

    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let verifier = std::sync::Arc::new(SlackEventSignatureVerifier::new(&SlackSigningSecret::new(
        SIGNING_SECRET.to_owned(),
    )));
    let handle = move |headers: HeaderMap, body: String| {
        let (tx, verifier) = (tx.clone(), verifier.clone());
        async move {
            let header = |n: &str| headers.get(n).and_then(|v| v.to_str().ok()).unwrap_or("");
            let signed = verifier.verify(
                header("x-slack-signature"),
                &body,
                header("x-slack-request-timestamp"),
            );
            if signed.is_err() {
                return StatusCode::UNAUTHORIZED.into_response();
            }
            let fields: serde_json::Map<String, Value> =
                url::form_urlencoded::parse(body.as_bytes())
                    .map(|(k, v)| (k.into_owned(), Value::String(v.into_owned())))
                    .collect();
            let _ = tx.send((
                header("content-type").to_owned(),
                Value::Object(fields.clone()),
            ));
            if fields.contains_key("command") {
                let reply = json!({"response_type": "ephemeral", "text": "listed"});
                return axum::Json(reply).into_response();
            }
            let payload: Value = fields
                .get("payload")
                .and_then(Value::as_str)
                .and_then(|p| serde_json::from_str(p).ok())
                .unwrap_or_default();
            let answer = &payload["view"]["state"]["values"]["answer"]["text"]["value"];
            if payload["type"] == "view_submission" && answer == "wrong" {
                let errors = json!({"response_action": "errors", "errors": {"answer": "no"}});
                return axum::Json(errors).into_response();
            }
            StatusCode::OK.into_response()
        }
    };
    let app = axum::Router::new().route("/slack/events", axum::routing::post(handle));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/slack/events", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, rx)
}

/// Delivered over HTTP: a slash command as signed form fields, whose response is its ack and
/// its reply; a view_submission as a signed `payload`, whose response's `response_action` keeps
/// the form open, and an empty response closes it; a wrong secret gets no ack, only a failure.
#[tokio::test]
async fn over_http_each_interaction_is_signed_and_its_response_is_the_ack() {
    let standin = SlackStandIn::start().await;
    let (url, mut received) = http_app().await;
    standin.deliver_over_http(&url, SIGNING_SECRET);

    let sent = standin
        .slash_command(&alice(), DEFAULT_CHANNEL, "/askrelay", "pending")
        .await;
    let ack = standin.wait_ack(sent.envelope_id()).await;
    assert_eq!(ack.connection, 0);
    assert_eq!(ack.payload.as_ref().unwrap()["text"], "listed");
    let (content_type, fields) = received.recv().await.unwrap();
    assert_eq!(content_type, "application/x-www-form-urlencoded");
    assert_eq!(
        (&fields["command"], &fields["text"]),
        (&json!("/askrelay"), &json!("pending"))
    );
    assert_eq!(fields["user_id"], "U0ALICE001");
    let reply = standin.ephemerals().remove(0);
    assert_eq!(
        (reply.via.as_str(), reply.text.as_deref()),
        ("ack", Some("listed"))
    );

    let form = json!({
        "type": "modal",
        "title": {"type": "plain_text", "text": "Form"},
        "submit": {"type": "plain_text", "text": "Send"},
        "blocks": [{"type": "input", "block_id": "answer",
                    "label": {"type": "plain_text", "text": "A"},
                    "element": {"type": "plain_text_input", "action_id": "text"}}],
    });
    let trigger = standin.new_trigger_id(&alice());
    let opened = call(
        &standin,
        "views.open",
        BOT_TOKEN,
        json!({"trigger_id": trigger, "view": form}),
    )
    .await;
    let id = opened["view"]["id"].as_str().unwrap().to_owned();
    let submit = |word: &'static str| {
        let (standin, id) = (&standin, id.clone());
        async move {
            let values = ViewValues::new().text("answer", "text", Some(word));
            let sent = standin.submit_view(&alice(), &id, &values).await;
            standin.wait_ack(sent.envelope_id()).await
        }
    };
    let kept = submit("wrong").await;
    assert_eq!(kept.payload.unwrap()["response_action"], "errors");
    assert!(
        !standin.view(&id).unwrap().closed,
        "the errors keep it open"
    );
    let (_, fields) = received.recv().await.unwrap();
    let payload: Value = serde_json::from_str(fields["payload"].as_str().unwrap()).unwrap();
    assert_eq!(payload["type"], "view_submission");
    let closed = submit("right").await;
    assert_eq!(closed.payload, None);
    assert!(standin.view(&id).unwrap().closed, "an empty 200 closes it");

    // Signed with another secret: refused, so no ack.
    standin.deliver_over_http(&url, "not-the-secret-0123456789abcdef0");
    let refused = standin
        .slash_command(&alice(), DEFAULT_CHANNEL, "/askrelay", "pending")
        .await;
    let mut changed = standin.subscribe();
    let failure = loop {
        if let Some(f) = standin.http_failures().pop() {
            break f;
        }
        tokio::time::timeout(Duration::from_secs(30), changed.changed())
            .await
            .expect("a failure within 30 s")
            .unwrap();
    };
    assert_eq!(
        (failure.envelope_id.as_str(), failure.status),
        (refused.envelope_id(), 401)
    );
    assert!(standin.ack_of(refused.envelope_id()).is_none());
    assert_eq!(standin.connections_opened(), 0, "no Socket Mode");
    standin.assert_no_violations();
}
