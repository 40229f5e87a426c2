//! Proves the Discord stand-in (crates/testkit/src/standin/) and the interaction fixtures
//! (crates/testkit/src/fixtures.rs) work with the real serenity 0.12.5 client: fixtures deserialize,
//! a serenity `Client` connects over the gateway and gets READY and INTERACTION_CREATE, serenity's
//! `Http` posts, edits and responds, and injected failures surface.
//!
//! Every wait is on an event (a channel or the stand-in's own notifications), never a sleep.

use std::sync::Arc;
use std::time::Duration;

use askrelay_testkit::fixtures::{self, At, Clicker};
use askrelay_testkit::standin::{check_bodies, Failure, StandIn};
use serde_json::{json, Value};
use serenity::all::{
    ActionRowComponent, ChannelId, ComponentInteraction, ComponentInteractionDataKind, Context,
    CreateActionRow, CreateButton, CreateEmbed, CreateInteractionResponse,
    CreateInteractionResponseFollowup, CreateInteractionResponseMessage, CreateMessage,
    EditInteractionResponse, EditMessage, EventHandler, GatewayIntents, Http, HttpBuilder,
    Interaction, Message, Nonce, Ready,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

const TOKEN: &str = "standin-test-token";
const CHANNEL: u64 = 1_200_000_000_000_000_010;
const MESSAGE: u64 = 1_200_000_000_000_000_020;
const WAIT: Duration = Duration::from_secs(30);

fn clicker() -> Clicker {
    Clicker::new(
        1_200_000_000_000_000_030,
        "alice",
        &[1_200_000_000_000_000_040, 1_200_000_000_000_000_041],
    )
}

fn http_for(standin: &StandIn) -> Arc<Http> {
    Arc::new(
        HttpBuilder::new(TOKEN)
            .proxy(&standin.base_url)
            .ratelimiter_disabled(true)
            .application_id(standin.application_id().into())
            .build(),
    )
}

fn status_of(err: &serenity::Error) -> Option<(u16, isize)> {
    match err {
        serenity::Error::Http(serenity::http::HttpError::UnsuccessfulRequest(resp)) => {
            Some((resp.status_code.as_u16(), resp.error.code))
        }
        _ => None,
    }
}

// --- (a) fixtures ------------------------------------------------------------------------------

#[test]
fn fixtures_deserialize_into_serenity_interactions() {
    let who = clicker();
    let app = 1_200_000_000_000_000_001;
    let guild = 1_200_000_000_000_000_002;

    let at = At {
        application_id: app,
        guild_id: Some(guild),
        channel_id: CHANNEL,
        message_id: MESSAGE,
    };
    let click = fixtures::component_click(11, &at, &who, "ask:1:yes");
    let Interaction::Component(c) = fixtures::parse(&click) else {
        panic!("component_click is not a component interaction");
    };
    assert_eq!(c.data.custom_id, "ask:1:yes");
    assert!(matches!(c.data.kind, ComponentInteractionDataKind::Button));
    assert_eq!(c.token, "tok11");
    assert_eq!(c.id.get(), 11);
    assert_eq!(c.application_id.get(), app);
    assert_eq!(c.channel_id.get(), CHANNEL);
    assert_eq!(c.message.id.get(), MESSAGE);
    assert_eq!(c.guild_id.map(|g| g.get()), Some(guild));
    let member = c.member.as_ref().expect("member");
    assert_eq!(member.user.id.get(), who.user_id);
    assert_eq!(
        c.user.id.get(),
        who.user_id,
        "serenity copies member.user into user"
    );
    let roles: Vec<u64> = member.roles.iter().map(|r| r.get()).collect();
    assert_eq!(roles, who.role_ids);
    assert_eq!(c.user.name, "alice");

    let select = fixtures::select_values(12, &at, &who, "ask:2", &["a", "c"]);
    let Interaction::Component(s) = fixtures::parse(&select) else {
        panic!("select_values is not a component interaction");
    };
    assert_eq!(s.data.custom_id, "ask:2");
    match &s.data.kind {
        ComponentInteractionDataKind::StringSelect { values } => assert_eq!(values, &["a", "c"]),
        other => panic!("expected a string select, got {other:?}"),
    }
    assert_eq!(s.token, "tok12");

    let modal =
        fixtures::modal_submit_with_input(13, &at, &who, "ask:3:modal", "answer", "free text");
    let Interaction::Modal(m) = fixtures::parse(&modal) else {
        panic!("modal_submit is not a modal interaction");
    };
    assert_eq!(m.data.custom_id, "ask:3:modal");
    assert_eq!(m.token, "tok13");
    let ActionRowComponent::InputText(input) = &m.data.components[0].components[0] else {
        panic!("expected a text input in the modal's first row");
    };
    assert_eq!(input.custom_id, "answer");
    assert_eq!(input.value.as_deref(), Some("free text"));
    assert_eq!(m.message.as_ref().map(|msg| msg.id.get()), Some(MESSAGE));
}

/// The trap the fixtures exist for: without `attachment_size_limit` serenity 0.12.5 rejects a
/// component interaction (and on the gateway would drop it silently).
#[test]
fn a_payload_without_attachment_size_limit_does_not_deserialize() {
    let at = At {
        application_id: 1,
        guild_id: Some(2),
        channel_id: CHANNEL,
        message_id: MESSAGE,
    };
    let mut click = fixtures::component_click(14, &at, &clicker(), "ask:1:yes");
    click
        .as_object_mut()
        .unwrap()
        .remove("attachment_size_limit");
    let err = serde_json::from_value::<Interaction>(click).expect_err("should not deserialize");
    assert!(err.to_string().contains("attachment_size_limit"), "{err}");
}

// --- (b) the gateway ---------------------------------------------------------------------------

#[derive(Debug)]
enum Got {
    Ready(Box<Ready>),
    Interaction(Box<Interaction>),
}

struct Forwarder(mpsc::UnboundedSender<Got>);

#[serenity::async_trait]
impl EventHandler for Forwarder {
    async fn ready(&self, _ctx: Context, ready: Ready) {
        let _ = self.0.send(Got::Ready(Box::new(ready)));
    }

    async fn interaction_create(&self, _ctx: Context, interaction: Interaction) {
        let _ = self.0.send(Got::Interaction(Box::new(interaction)));
    }
}

struct RunningClient {
    task: tokio::task::JoinHandle<()>,
    events: mpsc::UnboundedReceiver<Got>,
}

impl Drop for RunningClient {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl RunningClient {
    async fn next(&mut self) -> Got {
        tokio::time::timeout(WAIT, self.events.recv())
            .await
            .expect("no gateway event reached the handler within 30 s")
            .expect("handler channel closed")
    }

    async fn next_ready(&mut self) -> Box<Ready> {
        match self.next().await {
            Got::Ready(r) => r,
            other => panic!("expected READY, got {other:?}"),
        }
    }

    async fn next_interaction(&mut self) -> Box<Interaction> {
        match self.next().await {
            Got::Interaction(i) => i,
            other => panic!("expected an interaction, got {other:?}"),
        }
    }
}

async fn start_client(standin: &StandIn) -> RunningClient {
    let http = HttpBuilder::new(TOKEN)
        .proxy(&standin.base_url)
        .ratelimiter_disabled(true)
        .build();
    let (tx, events) = mpsc::unbounded_channel();
    let mut client = serenity::client::ClientBuilder::new_with_http(http, GatewayIntents::empty())
        .event_handler(Forwarder(tx))
        .await
        .expect("building the serenity client");
    let task = tokio::spawn(async move {
        if let Err(e) = client.start().await {
            panic!("serenity client stopped: {e:?}");
        }
    });
    RunningClient { task, events }
}

fn click(standin: &StandIn, interaction_id: u64, custom_id: &str) -> Value {
    let at = At {
        application_id: standin.application_id(),
        guild_id: Some(standin.guild_id()),
        channel_id: CHANNEL,
        message_id: MESSAGE,
    };
    fixtures::component_click(interaction_id, &at, &clicker(), custom_id)
}

fn custom_id_of(interaction: &Interaction) -> &str {
    match interaction {
        Interaction::Component(c) => &c.data.custom_id,
        Interaction::Modal(m) => &m.data.custom_id,
        other => panic!("unexpected interaction {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serenity_client_gets_ready_and_an_interaction_and_responds() {
    let standin = StandIn::start().await;
    let mut client = start_client(&standin).await;

    let ready = client.next_ready().await;
    standin.wait_ready().await;
    assert_eq!(ready.user.id.get(), standin.bot_user_id());
    assert_eq!(ready.application.id.get(), standin.application_id());
    assert_eq!(standin.identify_count(), 1);
    let identify = standin.last_identify().expect("identify payload");
    assert_eq!(identify["token"], json!(format!("Bot {TOKEN}")));
    assert!(standin
        .requests()
        .iter()
        .any(|r| r.method == "GET" && r.path == "/api/v10/gateway"));

    standin
        .send_interaction(click(&standin, 101, "ask:1:yes"))
        .await;
    let interaction = client.next_interaction().await;
    let Interaction::Component(component) = *interaction else {
        panic!("expected a component interaction, got {interaction:?}");
    };
    assert_eq!(component.data.custom_id, "ask:1:yes");
    assert_eq!(component.user.id.get(), clicker().user_id);

    // Answer it the way the daemon would, and check what reached "Discord".
    let http = http_for(&standin);
    component
        .create_response(
            &http,
            CreateInteractionResponse::Message(
                CreateInteractionResponseMessage::new()
                    .content("Recorded: yes")
                    .ephemeral(true),
            ),
        )
        .await
        .expect("interaction callback");
    let callback = standin
        .wait_for_request(|r| r.path == "/api/v10/interactions/101/tok101/callback")
        .await;
    assert_eq!(callback.method, "POST");
    assert_eq!(callback.status, 204);
    let body = callback.body.expect("callback body");
    assert_eq!(body["type"], json!(4));
    assert_eq!(body["data"]["content"], json!("Recorded: yes"));
    assert_eq!(body["data"]["flags"], json!(64));

    // Discord refuses a second response to the same interaction.
    let err = component
        .create_response(&http, CreateInteractionResponse::Acknowledge)
        .await
        .expect_err("a second callback must fail");
    assert_eq!(status_of(&err), Some((400, 40060)), "{err:?}");

    // The reply is the @original message and can be edited through the webhook route.
    let edited = component
        .edit_response(
            &http,
            EditInteractionResponse::new().content("Recorded: yes (final)"),
        )
        .await
        .expect("editing @original");
    assert_eq!(edited.content, "Recorded: yes (final)");
    let replies = standin.messages_in(CHANNEL);
    assert_eq!(replies.len(), 1);
    assert_eq!(replies[0]["content"], json!("Recorded: yes (final)"));
    assert_eq!(replies[0]["flags"], json!(64));
}

/// Posts "Deploy?" with one button `custom_id` through serenity, starts a gateway client, and
/// clicks the button as interaction `id`: the posted message, the interaction as serenity got
/// it, and the client.
async fn click_on_posted(
    standin: &StandIn,
    http: &Http,
    custom_id: &str,
    id: u64,
) -> (Message, ComponentInteraction, RunningClient) {
    let posted = ChannelId::new(CHANNEL)
        .send_message(
            http,
            CreateMessage::new()
                .content("Deploy?")
                .components(vec![CreateActionRow::Buttons(vec![CreateButton::new(
                    custom_id,
                )
                .label("Yes")])]),
        )
        .await
        .expect("posting the question");
    let mut client = start_client(standin).await;
    client.next_ready().await;
    let mut payload = click(standin, id, custom_id);
    payload["message"]["id"] = json!(posted.id.to_string());
    standin.send_interaction(payload).await;
    let Interaction::Component(component) = *client.next_interaction().await else {
        panic!("expected a component interaction");
    };
    (posted, component, client)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_interaction_carries_the_current_message_and_update_message_edits_it() {
    let standin = StandIn::start().await;
    let http = http_for(&standin);
    let (posted, component, _client) = click_on_posted(&standin, &http, "ask:9:yes", 102).await;
    assert_eq!(component.message.id, posted.id);
    assert_eq!(component.message.content, "Deploy?");
    assert_eq!(component.message.author.id.get(), standin.bot_user_id());

    component
        .create_response(
            &http,
            CreateInteractionResponse::UpdateMessage(
                CreateInteractionResponseMessage::new()
                    .content("Deploy? (answered: yes)")
                    .components(vec![]),
            ),
        )
        .await
        .expect("update-message callback");
    let now = standin
        .message(posted.id.get())
        .expect("message still there");
    assert_eq!(now["content"], json!("Deploy? (answered: yes)"));
    assert_eq!(now["components"], json!([]));
    assert!(!now["edited_timestamp"].is_null());
}

/// A deferred update (type 6) leaves the message as it is; the interaction's webhook then
/// takes an ephemeral follow-up, recorded with its body (and refused before any callback, as
/// Discord does), and the message can still be edited as the bot's own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deferred_update_then_an_ephemeral_follow_up() {
    let standin = StandIn::start().await;
    let http = http_for(&standin);
    let (posted, component, _client) = click_on_posted(&standin, &http, "ask:8:yes", 105).await;
    let follow_up = CreateInteractionResponseFollowup::new()
        .content("Your answer could not be saved, try again.")
        .ephemeral(true);
    let early = component
        .create_followup(&http, follow_up.clone())
        .await
        .expect_err("no follow-up before the interaction is answered");
    assert_eq!(status_of(&early), Some((404, 10015)), "{early:?}");

    component
        .create_response(&http, CreateInteractionResponse::Acknowledge)
        .await
        .expect("deferred update");
    let callback = standin
        .wait_for_request(|r| r.path == "/api/v10/interactions/105/tok105/callback")
        .await;
    assert_eq!(callback.status, 204);
    assert_eq!(callback.body.unwrap()["type"], json!(6));
    assert_eq!(
        standin.message(posted.id.get()).unwrap()["content"],
        json!("Deploy?")
    );

    let sent = component
        .create_followup(&http, follow_up)
        .await
        .expect("the follow-up");
    assert_eq!(sent.content, "Your answer could not be saved, try again.");
    let path = format!("/api/v10/webhooks/{}/tok105", standin.application_id());
    let recorded = standin
        .wait_for_request(|r| r.method == "POST" && r.path == path && r.status == 200)
        .await;
    assert_eq!(recorded.body.as_ref().unwrap()["flags"], json!(64));
    ChannelId::new(CHANNEL)
        .edit_message(
            &http,
            posted.id,
            EditMessage::new().content("Deploy? (yes)"),
        )
        .await
        .expect("editing the bot's own message");
    check_bodies(&standin.requests()).expect("every body is valid");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_resumes_after_the_gateway_drops_and_after_op_7() {
    let standin = StandIn::start().await;
    let mut client = start_client(&standin).await;
    client.next_ready().await;

    standin.drop_gateway().await;
    // send_interaction waits for the resumed session.
    standin
        .send_interaction(click(&standin, 103, "ask:1:after-drop"))
        .await;
    let got = client.next_interaction().await;
    assert_eq!(custom_id_of(&got), "ask:1:after-drop");
    assert_eq!(standin.resume_count(), 1);

    standin.send_reconnect().await;
    standin
        .send_interaction(click(&standin, 104, "ask:1:after-op7"))
        .await;
    let got = client.next_interaction().await;
    assert_eq!(custom_id_of(&got), "ask:1:after-op7");
    assert_eq!(standin.resume_count(), 2);
    assert_eq!(
        standin.identify_count(),
        1,
        "a resume must not identify again"
    );
}

/// op 9 (not resumable) makes serenity restart the shard: it waits 5 s, then identifies anew.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_identifies_again_after_a_non_resumable_invalid_session() {
    let standin = StandIn::start().await;
    let mut client = start_client(&standin).await;
    client.next_ready().await;

    standin.send_invalid_session(false).await;
    standin.wait_identify_count(2).await;
    client.next_ready().await;
    standin
        .send_interaction(click(&standin, 105, "ask:1:after-op9"))
        .await;
    let got = client.next_interaction().await;
    assert_eq!(custom_id_of(&got), "ask:1:after-op9");
}

// --- (c) REST ----------------------------------------------------------------------------------

#[tokio::test]
async fn serenity_reads_what_the_standin_serves() {
    let standin = StandIn::start().await;
    let http = http_for(&standin);
    let gateway = http.get_gateway().await.expect("GET /gateway");
    assert_eq!(gateway.url, standin.gateway_url);
    let bot_gateway = http.get_bot_gateway().await.expect("GET /gateway/bot");
    assert_eq!(bot_gateway.shards, 1);
    let me = http.get_current_user().await.expect("GET /users/@me");
    assert_eq!(me.id.get(), standin.bot_user_id());
    assert!(me.bot);
    let app = http
        .get_current_application_info()
        .await
        .expect("GET /oauth2/applications/@me");
    assert_eq!(app.id.get(), standin.application_id());
    let channel = http
        .get_channel(ChannelId::new(CHANNEL))
        .await
        .expect("GET /channels/{id}");
    let channel = channel.guild().expect("a guild channel");
    assert_eq!(channel.id.get(), CHANNEL);
    assert_eq!(channel.guild_id.get(), standin.guild_id());
}

#[tokio::test]
async fn serenity_posts_and_edits_a_message() {
    let standin = StandIn::start().await;
    let http = http_for(&standin);
    let message = ChannelId::new(CHANNEL)
        .send_message(
            &http,
            CreateMessage::new()
                .content("Which environment?")
                .embed(
                    CreateEmbed::new()
                        .title("Question")
                        .description("from agent-7"),
                )
                .components(vec![CreateActionRow::Buttons(vec![
                    CreateButton::new("ask:1:prod").label("prod"),
                    CreateButton::new("ask:1:staging").label("staging"),
                ])]),
        )
        .await
        .expect("posting a message");
    assert_eq!(message.channel_id.get(), CHANNEL);
    assert_eq!(message.content, "Which environment?");
    assert_eq!(message.author.id.get(), standin.bot_user_id());
    assert_eq!(message.embeds[0].title.as_deref(), Some("Question"));
    assert_eq!(message.components[0].components.len(), 2);

    let post = standin
        .wait_for_request(|r| r.method == "POST" && r.path.ends_with("/messages"))
        .await;
    assert_eq!(post.path, format!("/api/v10/channels/{CHANNEL}/messages"));
    assert_eq!(post.status, 200);
    let body = post.body.clone().expect("body");
    assert_eq!(body["content"], json!("Which environment?"));
    assert_eq!(
        body["components"][0]["components"][1]["custom_id"],
        json!("ask:1:staging")
    );
    assert_eq!(
        post.header("authorization"),
        Some(format!("Bot {TOKEN}").as_str())
    );

    let edited = ChannelId::new(CHANNEL)
        .edit_message(
            &http,
            message.id,
            EditMessage::new()
                .content("Which environment? (answered)")
                .components(vec![]),
        )
        .await
        .expect("editing the message");
    assert_eq!(edited.id, message.id);
    assert_eq!(edited.content, "Which environment? (answered)");
    assert!(edited.components.is_empty());
    assert!(edited.edited_timestamp.is_some());
    let stored = standin.messages_in(CHANNEL);
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0]["content"], json!("Which environment? (answered)"));
    assert_eq!(
        stored[0]["embeds"][0]["title"],
        json!("Question"),
        "untouched fields survive"
    );

    let fetched = ChannelId::new(CHANNEL)
        .message(&http, message.id)
        .await
        .expect("GET the message");
    assert_eq!(fetched.content, "Which environment? (answered)");
}

#[tokio::test]
async fn discord_limits_are_enforced() {
    let standin = StandIn::start().await;
    let http = http_for(&standin);
    let rows: Vec<CreateActionRow> = (0..6)
        .map(|i| CreateActionRow::Buttons(vec![CreateButton::new(format!("b{i}")).label("x")]))
        .collect();
    let err = ChannelId::new(CHANNEL)
        .send_message(
            &http,
            CreateMessage::new()
                .content("too many rows")
                .components(rows),
        )
        .await
        .expect_err("six rows must be refused");
    assert_eq!(status_of(&err), Some((400, 50035)), "{err:?}");

    let dup = vec![CreateActionRow::Buttons(vec![
        CreateButton::new("same").label("a"),
        CreateButton::new("same").label("b"),
    ])];
    let err = ChannelId::new(CHANNEL)
        .send_message(&http, CreateMessage::new().content("dup").components(dup))
        .await
        .expect_err("duplicate custom_ids must be refused");
    assert_eq!(status_of(&err), Some((400, 50035)), "{err:?}");
    assert!(standin.messages_in(CHANNEL).is_empty());
    // Invalid on purpose.
    standin.allow_invalid_bodies();
}

/// POSTs a multipart body (a `payload_json` part and one file) the way Discord takes a message
/// with a file.
async fn post_multipart(standin: &StandIn, payload_json: &Value) -> u16 {
    const B: &str = "askrelay-test-boundary";
    let body = format!(
        "--{B}\r\nContent-Disposition: form-data; name=\"payload_json\"\r\n\
         Content-Type: application/json\r\n\r\n{payload_json}\r\n\
         --{B}\r\nContent-Disposition: form-data; name=\"files[0]\"; filename=\"plan.txt\"\r\n\
         Content-Type: text/plain\r\n\r\nstep 3 of 7: rm -rf build/\r\n--{B}--\r\n"
    );
    reqwest::Client::new()
        .post(format!(
            "{}/api/v10/channels/{CHANNEL}/messages",
            standin.base_url
        ))
        .header("authorization", format!("Bot {TOKEN}"))
        .header("content-type", format!("multipart/form-data; boundary={B}"))
        .body(body)
        .send()
        .await
        .expect("a multipart POST")
        .status()
        .as_u16()
}

/// A multipart body (a message with a file, as attachments will send) is recorded by its
/// `payload_json` part and checked like any JSON body: a valid one passes, one that breaks a
/// limit is caught.
#[tokio::test]
async fn a_multipart_body_is_checked_by_its_payload_json() {
    if askrelay_testkit::discord_schema::validation_skipped() {
        return;
    }
    let standin = StandIn::start().await;
    let attachment = json!([{"id": "0", "filename": "plan.txt"}]);
    let ok = json!({"content": "the plan is attached", "attachments": attachment});
    assert_eq!(post_multipart(&standin, &ok).await, 200);
    let sent = standin.requests();
    assert_eq!(sent[0].body.as_ref(), Some(&ok), "the payload_json part");
    assert_eq!(check_bodies(&sent), Ok(1));

    let long = json!({"content": "x".repeat(2001), "attachments": attachment});
    post_multipart(&standin, &long).await;
    let err = check_bodies(&standin.requests()).expect_err("2001 characters of content");
    assert!(err.contains("at /content"), "{err}");

    // serenity 0.12.5 writes an attachment's id as a number, where Discord's spec has a
    // string: sending files through serenity as it is would break the rule that every body
    // validates (a finding for when attachments land).
    let fresh = StandIn::start().await;
    ChannelId::new(CHANNEL)
        .send_message(
            &http_for(&fresh),
            CreateMessage::new()
                .content("the plan is attached")
                .add_file(serenity::all::CreateAttachment::bytes(
                    b"step 3 of 7".to_vec(),
                    "plan.txt",
                )),
        )
        .await
        .expect("serenity's multipart create");
    let err = check_bodies(&fresh.requests()).expect_err("a numeric attachment id");
    assert!(
        err.contains("at /attachments/0/id: 0 is not of type \"string\""),
        "{err}"
    );
    standin.allow_invalid_bodies();
    fresh.allow_invalid_bodies();
}

// --- (d) injected failures ---------------------------------------------------------------------

#[tokio::test]
async fn an_injected_500_surfaces_and_the_next_call_works() {
    let standin = StandIn::start().await;
    let http = http_for(&standin);
    standin.fail_next("POST", "/messages", Failure::Status(500), 1);

    let err = ChannelId::new(CHANNEL)
        .send_message(&http, CreateMessage::new().content("first"))
        .await
        .expect_err("the injected 500 must surface");
    assert_eq!(status_of(&err).map(|s| s.0), Some(500), "{err:?}");
    assert!(
        standin.messages_in(CHANNEL).is_empty(),
        "a failed request has no effect"
    );

    let ok = ChannelId::new(CHANNEL)
        .send_message(&http, CreateMessage::new().content("second"))
        .await
        .expect("the next call works");
    assert_eq!(ok.content, "second");
    let statuses: Vec<u16> = standin.requests().iter().map(|r| r.status).collect();
    assert_eq!(statuses, vec![500, 200]);
}

#[tokio::test]
async fn missing_and_forbidden_channels_answer_like_discord() {
    let standin = StandIn::start().await;
    let http = http_for(&standin);
    standin.set_channel_missing(CHANNEL);
    standin.set_channel_forbidden(CHANNEL + 1);
    let err = ChannelId::new(CHANNEL)
        .send_message(&http, CreateMessage::new().content("x"))
        .await
        .expect_err("missing channel");
    assert_eq!(status_of(&err), Some((404, 10003)), "{err:?}");
    let err = ChannelId::new(CHANNEL + 1)
        .send_message(&http, CreateMessage::new().content("x"))
        .await
        .expect_err("forbidden channel");
    assert_eq!(status_of(&err), Some((403, 50001)), "{err:?}");
}

/// Reads one raw HTTP/1.1 response, to see the headers serenity does not expose.
async fn raw_get(base_url: &str, path: &str) -> (u16, Vec<(String, String)>, Value) {
    let addr = base_url.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut raw = Vec::new();
    tokio::time::timeout(WAIT, stream.read_to_end(&mut raw))
        .await
        .expect("response within 30 s")
        .expect("read");
    let text = String::from_utf8(raw).expect("utf-8 response");
    let (head, body) = text.split_once("\r\n\r\n").expect("a complete response");
    let mut lines = head.lines();
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(": "))
        .map(|(k, v)| (k.to_ascii_lowercase(), v.to_string()))
        .collect();
    let body = serde_json::from_str(body).unwrap_or(Value::Null);
    (status, headers, body)
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

#[tokio::test]
async fn an_injected_429_carries_discords_headers_and_body() {
    let standin = StandIn::start().await;
    standin.fail_next(
        "GET",
        "/users/@me",
        Failure::RateLimited {
            retry_after_secs: 0.3,
            global: true,
        },
        1,
    );
    let (status, headers, body) = raw_get(&standin.base_url, "/api/v10/users/@me").await;
    assert_eq!(status, 429);
    assert_eq!(header(&headers, "retry-after"), Some("0.3"));
    assert_eq!(header(&headers, "x-ratelimit-global"), Some("true"));
    assert_eq!(header(&headers, "x-ratelimit-scope"), Some("global"));
    assert_eq!(header(&headers, "x-ratelimit-remaining"), Some("0"));
    assert!(header(&headers, "x-ratelimit-bucket").is_some());
    assert_eq!(
        body,
        json!({"message": "You are being rate limited.", "retry_after": 0.3, "global": true})
    );

    let (status, headers, body) = raw_get(&standin.base_url, "/api/v10/users/@me").await;
    assert_eq!(status, 200);
    assert_eq!(header(&headers, "x-ratelimit-limit"), Some("5"));
    assert!(header(&headers, "x-ratelimit-reset-after").is_some());
    assert_eq!(body["id"], json!(standin.bot_user_id().to_string()));

    // serenity with its rate limiter off hands the 429 to the caller.
    standin.fail_next(
        "POST",
        "/messages",
        Failure::RateLimited {
            retry_after_secs: 1.5,
            global: false,
        },
        1,
    );
    let err = ChannelId::new(CHANNEL)
        .send_message(&http_for(&standin), CreateMessage::new().content("x"))
        .await
        .expect_err("429");
    assert_eq!(status_of(&err).map(|s| s.0), Some(429), "{err:?}");
}

// --- (e) nonce ---------------------------------------------------------------------------------

#[tokio::test]
async fn an_enforced_nonce_returns_the_same_message() {
    let standin = StandIn::start().await;
    let http = http_for(&standin);
    let post = |content: &str, enforce: bool| {
        ChannelId::new(CHANNEL).send_message(
            &http,
            CreateMessage::new()
                .content(content)
                .nonce(Nonce::String("ask-42".to_string()))
                .enforce_nonce(enforce),
        )
    };
    let first = post("question 42", true).await.expect("first post");
    let again = post("question 42", true).await.expect("repeated post");
    assert_eq!(first.id, again.id);
    assert_eq!(standin.messages_in(CHANNEL).len(), 1);
    let bodies: Vec<Value> = standin
        .requests()
        .into_iter()
        .filter_map(|r| r.body)
        .collect();
    assert_eq!(bodies[1]["nonce"], json!("ask-42"));
    assert_eq!(bodies[1]["enforce_nonce"], json!(true));

    let unenforced = post("question 42", false).await.expect("unenforced post");
    assert_ne!(unenforced.id, first.id);
    assert!(unenforced.id > first.id, "snowflakes rise");
    assert_eq!(standin.messages_in(CHANNEL).len(), 2);
    // The unenforced post reused the nonce: a duplicate, counted.
    let reuses = standin.nonce_reuses();
    assert_eq!(reuses.len(), 1, "{reuses:?}");
    assert_eq!(reuses[0].message_id, unenforced.id.get());
    assert_eq!(reuses[0].first_message_id, first.id.get());
}

#[tokio::test]
async fn with_de_duplication_off_an_enforced_nonce_posts_again_and_is_counted() {
    let standin = StandIn::start().await;
    standin.set_nonce_dedup(false);
    let http = http_for(&standin);
    let post = |channel: u64| {
        ChannelId::new(channel).send_message(
            &http,
            CreateMessage::new()
                .content("question 7")
                .nonce(Nonce::String("ask-7".to_string()))
                .enforce_nonce(true),
        )
    };
    let first = post(CHANNEL).await.expect("first post");
    let again = post(CHANNEL).await.expect("repeated post");
    assert_ne!(first.id, again.id);
    assert_eq!(standin.messages_in(CHANNEL).len(), 2);
    // The same nonce in another channel is no duplicate.
    post(CHANNEL + 1).await.expect("another channel");
    let reuses = standin.nonce_reuses();
    assert_eq!(reuses.len(), 1, "{reuses:?}");
    assert_eq!(reuses[0].channel_id, CHANNEL);
    assert_eq!(reuses[0].nonce, "ask-7");

    // On again: the next repeat returns the last message with that nonce.
    standin.set_nonce_dedup(true);
    let third = post(CHANNEL).await.expect("a third post");
    assert_eq!(third.id, again.id);
    assert_eq!(standin.nonce_reuses().len(), 1);
}
