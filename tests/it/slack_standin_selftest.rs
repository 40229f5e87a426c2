//! Proves the Slack stand-in (crates/testkit/src/slack/) works with the real slack-morphism
//! 2.31.1 client: its production connector posts, updates, opens views and uploads files over
//! https://; its Socket Mode listener connects over wss://, gets interactions and commands built
//! by the fixtures, acks them (the acks recorded with their payloads), and comes back after a
//! `disconnect` and after a dropped socket; injected failures, stalls and rate limits reach it
//! as Slack's would; bodies that break Block Kit limits get Slack's answers and are recorded.
//!
//! Every wait is on an event (a channel or the stand-in's own notifications), never a sleep;
//! time itself (trigger expiry, rate windows) runs on a paused tokio clock.

use std::sync::Arc;
use std::time::Duration;

use askrelay_testkit::slack::{
    self, Action, Auth, Encoding, Person, RateLimits, SelectedOption, SlackFailure, SlackStandIn,
    ViewValues, APP_TOKEN, BOT_TOKEN, DEFAULT_CHANNEL,
};
use serde_json::{json, Value};
use slack_morphism::errors::SlackClientError;
use slack_morphism::prelude::*;
use tokio::sync::mpsc;

const WAIT: Duration = Duration::from_secs(30);
const OTHER_CHANNEL: &str = "C0STANDIN2";

fn alice() -> Person {
    Person::new("U0ALICE001", "alice")
}

/// slack-morphism's production connector (https only, the platform's roots), trusting the
/// stand-in's CA.
fn client(standin: &SlackStandIn) -> Arc<SlackHyperClient> {
    slack::install_test_ca();
    let connector = SlackClientHyperConnector::new()
        .expect("the https connector")
        .with_slack_api_url(&standin.https_api_base());
    Arc::new(SlackClient::new(connector))
}

fn token(value: &str) -> SlackApiToken {
    SlackApiToken::new(SlackApiTokenValue(value.to_owned()))
}

fn blocks(v: Value) -> Vec<SlackBlock> {
    serde_json::from_value(v).expect("blocks slack-morphism reads")
}

fn option(value: &str, text: &str) -> Value {
    json!({"text": {"type": "plain_text", "text": text}, "value": value})
}

/// A question with a button row, a select and a multi-select.
fn question() -> Value {
    json!([
        {"type": "section", "block_id": "q", "text": {"type": "mrkdwn", "text": "Deploy to *prod*?"}},
        {"type": "actions", "block_id": "a", "elements": [
            {"type": "button", "action_id": "yes", "text": {"type": "plain_text", "text": "Yes"},
             "value": "v-yes", "style": "primary"},
            {"type": "button", "action_id": "no", "text": {"type": "plain_text", "text": "No"},
             "value": "v-no"},
            {"type": "static_select", "action_id": "pick",
             "placeholder": {"type": "plain_text", "text": "Pick one"},
             "options": [option("a", "Option A"), option("b", "Option B")]},
        ]},
        // Multi-selects work in sections and inputs, not in actions blocks.
        {"type": "section", "block_id": "m", "text": {"type": "mrkdwn", "text": "Where?"},
         "accessory": {"type": "multi_static_select", "action_id": "many", "max_selected_items": 2,
                       "options": [option("x", "X"), option("y", "Y"), option("z", "Z")]}},
    ])
}

fn modal() -> SlackView {
    serde_json::from_value(json!({
        "type": "modal",
        "title": {"type": "plain_text", "text": "Answer"},
        "submit": {"type": "plain_text", "text": "Send"},
        "close": {"type": "plain_text", "text": "Cancel"},
        "callback_id": "answer",
        "private_metadata": "q-1",
        "blocks": [
            {"type": "input", "block_id": "why", "label": {"type": "plain_text", "text": "Why?"},
             "element": {"type": "plain_text_input", "action_id": "why_input", "max_length": 500}},
            {"type": "input", "block_id": "pick", "label": {"type": "plain_text", "text": "Pick"},
             "element": {"type": "static_select", "action_id": "pick_input",
                         "options": [option("a", "A"), option("b", "B")]}},
        ],
    }))
    .expect("a view slack-morphism reads")
}

/// The JSON body of a reply (reqwest here has no `json` feature).
async fn json_of(response: reqwest::Response) -> Value {
    serde_json::from_str(&response.text().await.unwrap()).unwrap()
}

fn api_error(e: &SlackClientError) -> &str {
    match e {
        SlackClientError::ApiError(a) => &a.code,
        other => panic!("not an API error: {other:?}"),
    }
}

async fn post(
    session: &SlackClientSession<'_, SlackClientHyperHttpsConnector>,
    channel: &str,
    text: &str,
    b: Value,
) -> ClientResult<SlackApiChatPostMessageResponse> {
    session
        .chat_post_message(&SlackApiChatPostMessageRequest::new(
            channel.into(),
            SlackMessageContent::new()
                .with_text(text.to_owned())
                .with_blocks(blocks(b)),
        ))
        .await
}

// --- The Web API -------------------------------------------------------------------------------

#[tokio::test]
async fn the_web_api_answers_slack_morphism_over_https() {
    let standin = SlackStandIn::start().await;
    standin.add_user(&alice());
    standin.set_usergroup("S0ONCALL01", &["U0ALICE001"]);
    let client = client(&standin);
    let bot = token(BOT_TOKEN);
    let session = client.open_session(&bot);

    let me = session.auth_test().await.unwrap();
    assert_eq!(me.user_id.0, slack::BOT_USER_ID);
    assert_eq!(me.bot_id.unwrap().0, slack::BOT_ID);

    let posted = post(&session, DEFAULT_CHANNEL, "Deploy?", question())
        .await
        .unwrap();
    let messages = standin.messages(DEFAULT_CHANNEL);
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0]["ts"], posted.ts.0.as_str());
    assert_eq!(messages[0]["blocks"][1]["elements"][0]["value"], "v-yes");
    assert_eq!(posted.message.content.text.as_deref(), Some("Deploy?"));

    session
        .chat_update(&SlackApiChatUpdateRequest::new(
            DEFAULT_CHANNEL.into(),
            SlackMessageContent::new()
                .with_text("Deployed".to_owned())
                .with_blocks(vec![]),
            posted.ts.clone(),
        ))
        .await
        .unwrap();
    let now = standin.message(DEFAULT_CHANNEL, &posted.ts.0).unwrap();
    assert_eq!(now["text"], "Deployed");
    assert!(now.get("blocks").is_none(), "{now}");
    assert_eq!(now["edited"]["user"], slack::BOT_USER_ID);

    session
        .chat_post_ephemeral(&SlackApiChatPostEphemeralRequest::new(
            DEFAULT_CHANNEL.into(),
            "U0ALICE001".into(),
            SlackMessageContent::new().with_text("only you".to_owned()),
        ))
        .await
        .unwrap();
    let ephemerals = standin.ephemerals();
    assert_eq!(ephemerals.len(), 1);
    assert_eq!(ephemerals[0].user, "U0ALICE001");
    assert_eq!(ephemerals[0].text.as_deref(), Some("only you"));

    let open = SlackApiConversationsOpenRequest::new().with_users(vec!["U0ALICE001".into()]);
    let dm = session.conversations_open(&open).await.unwrap();
    assert!(dm.channel.id.0.starts_with('D'), "{dm:?}");
    assert_eq!(
        standin.dm_channel("U0ALICE001").as_ref(),
        Some(&dm.channel.id.0)
    );
    let again = session.conversations_open(&open).await.unwrap();
    assert_eq!(again.channel.id, dm.channel.id);
    assert_eq!(again.already_open, Some(true));

    let info = session
        .conversations_info(&SlackApiConversationsInfoRequest::new(
            DEFAULT_CHANNEL.into(),
        ))
        .await
        .unwrap();
    assert_eq!(info.channel.name.as_deref(), Some("askrelay"));
    let missing = session
        .conversations_info(&SlackApiConversationsInfoRequest::new("C0NOTHERE1".into()))
        .await
        .unwrap_err();
    assert_eq!(api_error(&missing), "channel_not_found");

    let user = session
        .users_info(&SlackApiUsersInfoRequest::new("U0ALICE001".into()))
        .await
        .unwrap();
    assert_eq!(user.user.name.as_deref(), Some("alice"));
    let nobody = session
        .users_info(&SlackApiUsersInfoRequest::new("U0NOBODY01".into()))
        .await
        .unwrap_err();
    assert_eq!(api_error(&nobody), "user_not_found");

    let group = session
        .usergroups_users_list(&SlackApiUserGroupsUsersListRequest::new(
            "S0ONCALL01".into(),
        ))
        .await
        .unwrap();
    assert_eq!(group.users, vec![SlackUserId::from("U0ALICE001")]);

    session
        .chat_delete(&SlackApiChatDeleteRequest::new(
            DEFAULT_CHANNEL.into(),
            posted.ts.clone(),
        ))
        .await
        .unwrap();
    assert!(standin.messages(DEFAULT_CHANNEL).is_empty());
    assert_eq!(standin.deleted_messages().len(), 1);

    let url = session
        .get_upload_url_external(&SlackApiFilesGetUploadUrlExternalRequest::new(
            "answer.txt".to_owned(),
            5,
        ))
        .await
        .unwrap();
    session
        .files_upload_via_url(&SlackApiFilesUploadViaUrlRequest::new(
            url.upload_url.clone(),
            b"hello".to_vec(),
            "text/plain".to_owned(),
        ))
        .await
        .unwrap();
    let done = session
        .files_complete_upload_external(
            &SlackApiFilesCompleteUploadExternalRequest::new(vec![SlackApiFilesComplete::new(
                url.file_id.clone(),
            )
            .with_title("Answer".to_owned())])
            .with_channel_id(DEFAULT_CHANNEL.into())
            .with_initial_comment("the file".to_owned()),
        )
        .await
        .unwrap();
    assert_eq!(done.files[0].id, url.file_id);
    let uploads = standin.uploads();
    assert_eq!(uploads[0].bytes.as_deref(), Some(&b"hello"[..]));
    assert!(uploads[0].completed);
    assert_eq!(uploads[0].channel.as_deref(), Some(DEFAULT_CHANNEL));
    let shared = standin.messages(DEFAULT_CHANNEL);
    assert_eq!(shared[0]["text"], "the file");
    assert_eq!(shared[0]["files"][0]["id"], url.file_id.0.as_str());

    // Every call was recorded: over TLS, the bot token seen and never kept.
    let requests = standin.requests();
    assert!(requests
        .iter()
        .all(|r| r.tls && r.header("authorization").is_none()));
    let post_call = &standin.calls("chat.postMessage")[0];
    assert_eq!(post_call.encoding, Encoding::Json);
    assert_eq!(post_call.auth, Auth::Bot);
    assert_eq!(post_call.param_str("channel"), Some(DEFAULT_CHANNEL));
    assert_eq!(standin.calls("users.info")[0].encoding, Encoding::Query);
    assert_eq!(
        standin.calls("upload")[0].bytes.as_deref(),
        Some(&b"hello"[..])
    );
    standin.assert_no_violations();
}

#[tokio::test]
async fn forms_query_strings_and_tokens_are_read_as_slack_reads_them() {
    let standin = SlackStandIn::start().await;
    let http = reqwest::Client::new();
    let api = standin.api_base();
    let call = |method: &str| format!("{api}/{method}");

    // A form, the token among its fields, blocks as JSON text.
    let blocks = json!([{"type": "section", "text": {"type": "mrkdwn", "text": "hi"}}]);
    let reply = http
        .post(call("chat.postMessage"))
        .form(&[
            ("token", BOT_TOKEN),
            ("channel", DEFAULT_CHANNEL),
            ("text", "hi"),
            ("blocks", &blocks.to_string()),
        ])
        .send()
        .await
        .unwrap();
    let reply = json_of(reply).await;
    assert_eq!(reply["ok"], true, "{reply}");
    let recorded = standin
        .wait_for_request("chat.postMessage", |r| r.ok())
        .await;
    assert_eq!(recorded.encoding, Encoding::Form);
    assert_eq!(recorded.auth, Auth::Bot);
    assert_eq!(recorded.params["blocks"], blocks);
    assert!(recorded.param("token").is_none(), "the token was recorded");
    assert!(!recorded.tls);

    // Tokens: none, a wrong one, the wrong kind; Slack answers HTTP 200 with ok:false.
    for (auth, method, error) in [
        (None, "chat.postMessage", "not_authed"),
        (Some("xoxb-wrong"), "chat.postMessage", "invalid_auth"),
        (
            Some(APP_TOKEN),
            "chat.postMessage",
            "not_allowed_token_type",
        ),
        (
            Some(BOT_TOKEN),
            "apps.connections.open",
            "not_allowed_token_type",
        ),
        (Some(BOT_TOKEN), "no.suchMethod", "unknown_method"),
    ] {
        let mut request = http
            .post(call(method))
            .header("content-type", "application/json; charset=utf-8")
            .body(json!({"channel": DEFAULT_CHANNEL, "text": "x"}).to_string());
        if let Some(t) = auth {
            request = request.bearer_auth(t);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 200);
        let body = json_of(response).await;
        assert_eq!(
            body,
            json!({"ok": false, "error": error}),
            "{auth:?} {method}"
        );
    }

    // Socket Mode's URL, plain here because the call was.
    let open = http
        .post(call("apps.connections.open"))
        .bearer_auth(APP_TOKEN)
        .send()
        .await
        .unwrap();
    let open = json_of(open).await;
    let url = open["url"].as_str().unwrap();
    let prefix = format!("ws://{}/socket?ticket=", standin.addr());
    assert!(url.starts_with(&prefix), "{url}");

    // A GET with a query string, as slack-morphism sends its reads.
    let info = http
        .get(call("conversations.info"))
        .query(&[("channel", DEFAULT_CHANNEL)])
        .bearer_auth(BOT_TOKEN)
        .send()
        .await
        .unwrap();
    let info = json_of(info).await;
    assert_eq!(info["channel"]["id"], DEFAULT_CHANNEL);
    let recorded = standin.calls("conversations.info");
    assert_eq!(recorded[0].encoding, Encoding::Query);
    assert_eq!(recorded[0].http_method, "GET");
    standin.assert_no_violations();
}

// --- Socket Mode -------------------------------------------------------------------------------

#[derive(Debug)]
enum Got {
    Interaction(Box<SlackInteractionEvent>),
    Command(Box<SlackCommandEvent>),
}

struct Events(mpsc::UnboundedSender<Got>);

async fn on_interaction(
    event: SlackInteractionEvent,
    _client: Arc<SlackHyperClient>,
    states: SlackClientEventsUserState,
) -> UserCallbackResult<SlackInteractionResponse> {
    let reply = match &event {
        SlackInteractionEvent::ViewSubmission(_) => SlackInteractionResponse::ViewSubmission(
            SlackViewSubmissionResponse::Clear(SlackViewSubmissionClearResponse::new()),
        ),
        _ => SlackInteractionResponse::Empty,
    };
    let states = states.read().await;
    let events = states
        .get_user_state::<Events>()
        .expect("the test's channel");
    let _ = events.0.send(Got::Interaction(Box::new(event)));
    Ok(reply)
}

async fn on_command(
    event: SlackCommandEvent,
    _client: Arc<SlackHyperClient>,
    states: SlackClientEventsUserState,
) -> UserCallbackResult<SlackCommandEventResponse> {
    let states = states.read().await;
    let events = states
        .get_user_state::<Events>()
        .expect("the test's channel");
    let _ = events.0.send(Got::Command(Box::new(event)));
    Ok(SlackCommandEventResponse::new(
        SlackMessageContent::new().with_text("nothing pending".to_owned()),
    ))
}

async fn next(rx: &mut mpsc::UnboundedReceiver<Got>) -> Got {
    tokio::time::timeout(WAIT, rx.recv())
        .await
        .expect("an event within 30 s")
        .expect("the listener is running")
}

async fn next_interaction(rx: &mut mpsc::UnboundedReceiver<Got>) -> SlackInteractionEvent {
    match next(rx).await {
        Got::Interaction(e) => *e,
        other => panic!("expected an interaction, got {other:?}"),
    }
}

#[tokio::test]
async fn socket_mode_delivers_interactions_takes_acks_and_reconnects() {
    let standin = SlackStandIn::start().await;
    let client = client(&standin);
    let bot = token(BOT_TOKEN);
    let session = client.open_session(&bot);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let environment = Arc::new(
        SlackClientEventsListenerEnvironment::new(Arc::clone(&client)).with_user_state(Events(tx)),
    );
    let callbacks = SlackSocketModeListenerCallbacks::new()
        .with_interaction_events(on_interaction)
        .with_command_events(on_command);
    let config = SlackClientSocketModeConfig::new().with_max_connections_count(1);
    let listener = SlackClientSocketModeListener::new(&config, environment, callbacks);
    listener.listen_for(&token(APP_TOKEN)).await.unwrap();
    // `start`, not `serve`: serve would install signal handlers for the test process.
    listener.start().await;
    standin.wait_connected(1).await;
    let open = standin.calls("apps.connections.open");
    assert_eq!(open.len(), 1);
    assert_eq!(open[0].auth, Auth::App);
    assert!(open[0].reply["url"].as_str().unwrap().starts_with("wss://"));

    let posted = post(&session, DEFAULT_CHANNEL, "Deploy?", question())
        .await
        .unwrap();
    let ts = posted.ts.0.clone();

    // A button: the payload carries the button's value and the message as it is now.
    let sent = standin
        .click(&alice(), DEFAULT_CHANNEL, &ts, Action::button("a", "yes"))
        .await;
    let SlackInteractionEvent::BlockActions(press) = next_interaction(&mut rx).await else {
        panic!("not block_actions")
    };
    let action = &press.actions.as_ref().unwrap()[0];
    assert_eq!(action.value.as_deref(), Some("v-yes"));
    assert_eq!(press.message.as_ref().unwrap().origin.ts.0, ts);
    assert_eq!(press.user.as_ref().unwrap().id.0, "U0ALICE001");
    let ack = standin.wait_ack(sent.envelope_id()).await;
    assert_eq!(ack.payload, None);
    assert_eq!(ack.connection, 1);
    assert!(ack.latency().is_some());

    // The selects.
    standin
        .click(
            &alice(),
            DEFAULT_CHANNEL,
            &ts,
            Action::static_select("a", "pick", "b"),
        )
        .await;
    let SlackInteractionEvent::BlockActions(pick) = next_interaction(&mut rx).await else {
        panic!("not block_actions")
    };
    let picked = pick.actions.unwrap()[0].selected_option.clone().unwrap();
    assert_eq!(picked.value, "b");
    standin
        .click(
            &alice(),
            DEFAULT_CHANNEL,
            &ts,
            Action::multi_static_select("m", "many", &["x", "z"]),
        )
        .await;
    let SlackInteractionEvent::BlockActions(many) = next_interaction(&mut rx).await else {
        panic!("not block_actions")
    };
    let values: Vec<String> = many.actions.unwrap()[0]
        .selected_options
        .clone()
        .unwrap()
        .into_iter()
        .map(|o| o.value)
        .collect();
    assert_eq!(values, ["x", "z"]);

    // The response_url replaces the message, then answers privately.
    let response_url = press.response_url.clone().unwrap();
    assert!(
        response_url.0.as_str().starts_with("https://"),
        "{response_url:?}"
    );
    client
        .respond_to_event(
            &response_url,
            &SlackApiPostWebhookMessageRequest::new(
                SlackMessageContent::new().with_text("Approved by alice".to_owned()),
            )
            .with_replace_original(true),
        )
        .await
        .unwrap();
    assert_eq!(
        standin.message(DEFAULT_CHANNEL, &ts).unwrap()["text"],
        "Approved by alice"
    );
    client
        .respond_to_event(
            &response_url,
            &SlackApiPostWebhookMessageRequest::new(
                SlackMessageContent::new().with_text("noted".to_owned()),
            ),
        )
        .await
        .unwrap();
    let private = standin.ephemerals();
    assert_eq!(private[0].via, "response_url");
    assert_eq!(private[0].user, "U0ALICE001");

    // The trigger opens a modal; its submission is acked with response_action clear.
    let view = session
        .views_open(&SlackApiViewsOpenRequest::new(
            press.trigger_id.clone(),
            modal(),
        ))
        .await
        .unwrap();
    let view_id = view.view.state_params.id.0.clone();
    let values = ViewValues::new()
        .text("why", "why_input", Some("all green"))
        .static_select("pick", "pick_input", Some(&SelectedOption::new("a", "A")));
    let submitted = standin.submit_view(&alice(), &view_id, &values).await;
    let SlackInteractionEvent::ViewSubmission(submission) = next_interaction(&mut rx).await else {
        panic!("not view_submission")
    };
    assert_eq!(submission.view.state_params.id.0, view_id);
    let ack = standin.wait_ack(submitted.envelope_id()).await;
    assert_eq!(ack.payload, Some(json!({"response_action": "clear"})));
    assert!(standin.view(&view_id).unwrap().closed);

    // A slash command, acked with the command's reply.
    let command = standin
        .slash_command(&alice(), DEFAULT_CHANNEL, "/askrelay", "pending")
        .await;
    match next(&mut rx).await {
        Got::Command(c) => assert_eq!(c.text.as_deref(), Some("pending")),
        other => panic!("expected a command, got {other:?}"),
    }
    let ack = standin.wait_ack(command.envelope_id()).await;
    assert_eq!(ack.payload.unwrap()["text"], "nothing pending");

    // Slack asks for a refresh: the client opens a new connection through a new ticket. (The
    // first question was replaced by text: a second one has the buttons.)
    let ts = post(&session, DEFAULT_CHANNEL, "Again?", question())
        .await
        .unwrap()
        .ts
        .0;
    standin.send_disconnect("refresh_requested").await;
    standin.wait_connected(2).await;
    assert_eq!(standin.calls("apps.connections.open").len(), 2);
    let after_refresh = standin
        .click(&alice(), DEFAULT_CHANNEL, &ts, Action::button("a", "no"))
        .await;
    next_interaction(&mut rx).await;
    assert_eq!(
        standin
            .wait_ack(after_refresh.envelope_id())
            .await
            .connection,
        2
    );

    // The socket drops without a close frame: the client comes back on its own.
    standin.drop_socket().await;
    standin.wait_connected(3).await;
    assert_eq!(standin.calls("apps.connections.open").len(), 3);
    let after_drop = standin
        .click(&alice(), DEFAULT_CHANNEL, &ts, Action::button("a", "no"))
        .await;
    next_interaction(&mut rx).await;
    assert_eq!(
        standin.wait_ack(after_drop.envelope_id()).await.connection,
        3
    );
    assert_eq!(standin.refused_connections(), 0);

    listener.shutdown().await;
    standin.assert_no_violations();
}

// --- Time: triggers and rate windows on a paused clock ------------------------------------------

#[tokio::test(start_paused = true)]
async fn a_trigger_opens_one_modal_and_expires_after_three_seconds() {
    let standin = SlackStandIn::start().await;
    let client = client(&standin);
    let bot = token(BOT_TOKEN);
    let session = client.open_session(&bot);
    let open = |trigger: String| SlackApiViewsOpenRequest::new(trigger.into(), modal());

    let fresh = standin.new_trigger_id(&alice());
    let view = session.views_open(&open(fresh.clone())).await.unwrap();
    let again = session.views_open(&open(fresh)).await.unwrap_err();
    assert_eq!(api_error(&again), "exchanged_trigger_id");
    let unknown = session
        .views_open(&open("1.2.nosuchtrigger".to_owned()))
        .await
        .unwrap_err();
    assert_eq!(api_error(&unknown), "invalid_trigger_id");

    let late = standin.new_trigger_id(&alice());
    tokio::time::advance(Duration::from_millis(3_001)).await;
    let expired = session.views_open(&open(late)).await.unwrap_err();
    assert_eq!(api_error(&expired), "expired_trigger_id");

    // views.update: a stale hash is refused, the current one accepted.
    let id = view.view.state_params.id.clone();
    let update = |hash: &str| {
        SlackApiViewsUpdateRequest::new(modal())
            .with_view_id(id.clone())
            .with_hash(hash.to_owned())
    };
    let stale = session.views_update(&update("0.stale")).await.unwrap_err();
    assert_eq!(api_error(&stale), "hash_conflict");
    let updated = session
        .views_update(&update(&view.view.state_params.hash))
        .await
        .unwrap();
    assert_eq!(updated.view.state_params.id, id);
    assert_ne!(updated.view.state_params.hash, view.view.state_params.hash);
    assert_eq!(standin.views().len(), 1);
    standin.assert_no_violations();
}

#[tokio::test(start_paused = true)]
async fn rate_limits_answer_429_with_retry_after_until_the_window_closes() {
    let standin = SlackStandIn::start().await;
    standin.add_channel(OTHER_CHANNEL, "other");
    standin.set_rate_limits(Some(RateLimits::default()));
    let client = client(&standin);
    let bot = token(BOT_TOKEN);
    let session = client.open_session(&bot);
    let hi = || json!([{"type": "section", "text": {"type": "mrkdwn", "text": "hi"}}]);

    post(&session, DEFAULT_CHANNEL, "1", hi()).await.unwrap();
    let limited = post(&session, DEFAULT_CHANNEL, "2", hi())
        .await
        .unwrap_err();
    match &limited {
        SlackClientError::RateLimitError(e) => {
            assert_eq!(e.retry_after, Some(Duration::from_secs(1)));
            assert_eq!(e.code.as_deref(), Some("ratelimited"));
        }
        other => panic!("expected a rate limit, got {other:?}"),
    }
    // Per channel: another channel is free.
    post(&session, OTHER_CHANNEL, "3", hi()).await.unwrap();
    tokio::time::advance(Duration::from_secs(1)).await;
    post(&session, DEFAULT_CHANNEL, "4", hi()).await.unwrap();
    assert_eq!(standin.rate_limited(), 1);
    let statuses: Vec<u16> = standin
        .calls("chat.postMessage")
        .iter()
        .map(|r| r.status)
        .collect();
    assert_eq!(statuses, [200, 429, 200, 200]);
    standin.assert_no_violations();
}

// --- Faults ------------------------------------------------------------------------------------

#[tokio::test]
async fn injected_failures_and_stalls_reach_the_client() {
    let standin = SlackStandIn::start().await;
    let client = client(&standin);
    let bot = token(BOT_TOKEN);
    let session = client.open_session(&bot);
    let hi = || json!([{"type": "section", "text": {"type": "mrkdwn", "text": "hi"}}]);

    standin.fail_next(
        "chat.postMessage",
        SlackFailure::RateLimited {
            retry_after_secs: 7,
        },
        1,
    );
    match post(&session, DEFAULT_CHANNEL, "x", hi())
        .await
        .unwrap_err()
    {
        SlackClientError::RateLimitError(e) => {
            assert_eq!(e.retry_after, Some(Duration::from_secs(7)))
        }
        other => panic!("expected a rate limit, got {other:?}"),
    }
    standin.fail_next(
        "chat.postMessage",
        SlackFailure::Error("channel_not_found".to_owned()),
        1,
    );
    let err = post(&session, DEFAULT_CHANNEL, "x", hi())
        .await
        .unwrap_err();
    assert_eq!(api_error(&err), "channel_not_found");
    standin.fail_next("chat.postMessage", SlackFailure::Status(503), 1);
    match post(&session, DEFAULT_CHANNEL, "x", hi())
        .await
        .unwrap_err()
    {
        SlackClientError::HttpError(e) => assert_eq!(e.status_code.as_u16(), 503),
        other => panic!("expected an HTTP error, got {other:?}"),
    }
    post(&session, DEFAULT_CHANNEL, "x", hi()).await.unwrap();
    assert!(
        standin.messages(DEFAULT_CHANNEL).len() == 1,
        "a failed call posted"
    );

    // A stalled call is not answered until released.
    standin.stall_next("auth.test", 1);
    let pending = tokio::spawn({
        let client = Arc::clone(&client);
        async move {
            let bot = token(BOT_TOKEN);
            client.open_session(&bot).auth_test().await
        }
    });
    assert_eq!(standin.wait_stalled(1).await, ["auth.test"]);
    assert!(standin.calls("auth.test").is_empty());
    assert!(!pending.is_finished());
    standin.release_stalls();
    let me = tokio::time::timeout(WAIT, pending)
        .await
        .expect("answered once released")
        .unwrap()
        .unwrap();
    assert_eq!(me.user_id.0, slack::BOT_USER_ID);
    standin.assert_no_violations();
}

// --- Block Kit limits --------------------------------------------------------------------------

#[tokio::test]
async fn bodies_over_the_limits_get_slacks_answers_and_are_recorded() {
    let standin = SlackStandIn::start().await;
    standin.allow_violations();
    let client = client(&standin);
    let bot = token(BOT_TOKEN);
    let session = client.open_session(&bot);
    let section =
        |text: String| json!({"type": "section", "text": {"type": "mrkdwn", "text": text}});

    let too_many: Vec<Value> = (0..51).map(|i| section(format!("b{i}"))).collect();
    let err = post(&session, DEFAULT_CHANNEL, "x", Value::Array(too_many))
        .await
        .unwrap_err();
    assert_eq!(api_error(&err), "invalid_blocks");

    let long = section("a".repeat(slack::limits::SECTION_TEXT + 1));
    let SlackClientError::ApiError(e) = post(&session, DEFAULT_CHANNEL, "x", json!([long]))
        .await
        .unwrap_err()
    else {
        panic!("expected an API error")
    };
    assert_eq!(e.code, "invalid_blocks");
    assert_eq!(
        e.errors.unwrap(),
        ["must be less than 3001 characters [json-pointer:/blocks/0/text/text]"]
    );

    let empty = session
        .chat_post_message(&SlackApiChatPostMessageRequest::new(
            DEFAULT_CHANNEL.into(),
            SlackMessageContent::new(),
        ))
        .await
        .unwrap_err();
    assert_eq!(api_error(&empty), "no_text");

    // Over 40,000 characters: Slack truncates, and the stand-in says so.
    let text = "t".repeat(slack::limits::MESSAGE_TEXT + 10);
    let posted = session
        .chat_post_message(&SlackApiChatPostMessageRequest::new(
            DEFAULT_CHANNEL.into(),
            SlackMessageContent::new().with_text(text),
        ))
        .await
        .unwrap();
    let kept = standin.message(DEFAULT_CHANNEL, &posted.ts.0).unwrap();
    assert_eq!(
        kept["text"].as_str().unwrap().chars().count(),
        slack::limits::MESSAGE_TEXT
    );

    let mut long_title = modal();
    if let SlackView::Modal(m) = &mut long_title {
        m.title = SlackBlockPlainTextOnly::from("x".repeat(slack::limits::MODAL_TITLE + 1));
    }
    let trigger = standin.new_trigger_id(&alice());
    let refused = session
        .views_open(&SlackApiViewsOpenRequest::new(trigger.into(), long_title))
        .await
        .unwrap_err();
    assert_eq!(api_error(&refused), "invalid_arguments");

    let pointers: Vec<String> = standin
        .violations()
        .iter()
        .map(|v| format!("{} {}", v.method, v.pointer))
        .collect();
    assert_eq!(
        pointers,
        [
            "chat.postMessage /blocks",
            "chat.postMessage /blocks/0/text/text",
            "chat.postMessage ",
            "chat.postMessage /text",
            "views.open /view/title/text",
        ]
    );
    // Agent text with a live mention is for the daemon's tests to catch.
    assert_eq!(
        slack::live_mentions("ping <!channel> &lt;!here&gt;"),
        ["<!channel>"]
    );
}
