//! The Socket Mode connection (docs/slack.md, "Socket Mode"): an outbound WebSocket, opened with
//! the app-level token through `apps.connections.open`, that brings interactions as envelopes
//! and takes their acks.
//!
//! slack-morphism's clients manager keeps the connection: it opens it, pings it, and opens a new
//! one when Slack says `disconnect` (a refresh, a server moving) or the socket drops. Its own
//! listener hides those moments, so this module gives the manager a listener of its own: it
//! hands interactions to the [`Handler`] (the ack is the listener's return value, sent once
//! the handler returned, so after the press is committed), and keeps [`Connection`] up from
//! each `hello` until a `disconnect` or a drop, which `health` and `/metrics` show.

use super::connect::{token, Client};
use super::interactions::{CommandPayload, Handler};
use crate::config::Secret;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use slack_morphism::prelude::*;
use slack_morphism::socket_mode::clients_manager::{
    SlackSocketModeClientsManager, SlackSocketModeClientsManagerFactory,
};
use std::sync::{Arc, Weak};
use tokio::sync::watch;

/// Whether the Socket Mode connection is up, as `health` and `/metrics` read it.
pub struct Connection(watch::Sender<bool>);

impl Default for Connection {
    fn default() -> Self {
        Connection(watch::channel(false).0)
    }
}

impl Connection {
    pub fn subscribe(&self) -> watch::Receiver<bool> {
        self.0.subscribe()
    }

    fn set(&self, up: bool, why: &str) {
        let was = self.0.send_replace(up);
        match (was, up) {
            (false, true) => tracing::info!("connected to Slack (Socket Mode)"),
            (true, false) => tracing::warn!(
                why,
                "the Slack Socket Mode connection dropped; reconnecting"
            ),
            _ => {}
        }
    }

    /// Marks the connection down (shutdown, or the term ended).
    pub fn closed(&self) {
        self.0.send_replace(false);
    }
}

/// How long the manager waits before trying again when opening a connection failed.
const RECONNECT_SECS: u64 = 5;

/// The listener the clients manager calls for every frame and every drop.
struct Listener {
    manager: Weak<dyn SlackSocketModeClientsManager + Send + Sync>,
    handler: Arc<Handler>,
    connection: Arc<Connection>,
}

/// A Socket Mode frame, as askrelay reads it (slack-morphism's own types are not public).
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Frame {
    Hello {},
    Disconnect {
        #[serde(default)]
        reason: String,
    },
    Interactive {
        envelope_id: String,
        // Boxed: a payload is large beside the other frames.
        payload: Box<SlackInteractionEvent>,
        #[serde(default)]
        accepts_response_payload: bool,
    },
    SlashCommands {
        envelope_id: String,
        payload: Box<CommandPayload>,
    },
    EventsApi {
        envelope_id: String,
    },
    #[serde(other)]
    Other,
}

/// Any frame's envelope id, for a frame askrelay cannot read otherwise.
#[derive(Deserialize)]
struct Envelope {
    envelope_id: String,
}

/// An envelope's ack, with what it answers when Slack takes an answer.
#[derive(Serialize)]
struct Ack<P: Serialize> {
    envelope_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    payload: Option<P>,
}

/// The ack of `envelope_id`, with `payload`; a failure to serialize (which these types cannot
/// have) sends none, and Slack delivers the envelope again.
fn ack<P: Serialize>(envelope_id: String, payload: Option<P>) -> Option<String> {
    serde_json::to_string(&Ack {
        envelope_id,
        payload,
    })
    .ok()
}

/// An ack that answers nothing.
fn bare(envelope_id: String) -> Option<String> {
    ack::<()>(envelope_id, None)
}

#[async_trait]
impl SlackSocketModeClientListener for Listener {
    async fn on_message(
        &self,
        client_id: &SlackSocketModeWssClientId,
        body: String,
    ) -> Option<String> {
        let frame = match serde_json::from_str::<Frame>(&body) {
            Ok(f) => f,
            Err(e) => {
                // Acknowledged all the same: it never parses better when delivered again.
                tracing::warn!(error = %e, "a Socket Mode frame askrelay cannot read");
                let envelope: Envelope = serde_json::from_str(&body).ok()?;
                return bare(envelope.envelope_id);
            }
        };
        match frame {
            Frame::Hello {} => {
                self.connection.set(true, "hello");
                // After an outage: whatever could not be posted or edited goes now.
                self.handler.outbox.repair_now.notify_one();
                None
            }
            Frame::Disconnect { reason } => {
                tracing::info!(reason = %reason, "Slack asked for a new Socket Mode connection");
                self.connection.set(false, "disconnect message");
                if let Some(m) = self.manager.upgrade() {
                    m.restart_client(client_id).await;
                }
                None
            }
            Frame::Interactive {
                envelope_id,
                payload,
                accepts_response_payload,
            } => match self.handler.on_interaction(*payload).await {
                SlackInteractionResponse::Empty => bare(envelope_id),
                answer if accepts_response_payload => ack(envelope_id, Some(answer)),
                _ => bare(envelope_id),
            },
            Frame::SlashCommands {
                envelope_id,
                payload,
            } => {
                // The reply is the person's alone; when it is not ready in time it comes
                // through the command's response_url instead.
                let reply = self
                    .handler
                    .on_command(*payload)
                    .await
                    .map(|r| r.response());
                match reply {
                    Some(reply) => ack(envelope_id, Some(reply)),
                    None => bare(envelope_id),
                }
            }
            Frame::EventsApi { envelope_id } => bare(envelope_id),
            Frame::Other => None,
        }
    }

    async fn on_error(&self, error: Box<dyn std::error::Error + Send + Sync>) {
        tracing::warn!(error = %error, "Slack Socket Mode error");
    }

    async fn on_disconnect(&self, client_id: &SlackSocketModeWssClientId) {
        self.connection.set(false, "the socket closed");
        if let Some(m) = self.manager.upgrade() {
            m.restart_client(client_id).await;
        }
    }
}

/// Opens the Socket Mode connection with `app_token` and keeps it until `shutdown`; returns the
/// manager, whose `shutdown` closes it.
pub async fn listen(
    client: Arc<Client>,
    app_token: &Secret,
    handler: Arc<Handler>,
    connection: Arc<Connection>,
) -> anyhow::Result<Arc<dyn SlackSocketModeClientsManager + Send + Sync>> {
    let env = Arc::new(SlackClientEventsListenerEnvironment::new(client.clone()));
    let manager = client.http_api.connector.new_clients_manager(env);
    let listener = Arc::new(Listener {
        manager: Arc::downgrade(&manager),
        handler,
        connection,
    });
    // One connection: Slack sends each envelope to one of an app's connections, and a second
    // one would only double what a drop costs to notice.
    let config = SlackClientSocketModeConfig::new()
        .with_max_connections_count(1)
        .with_reconnect_timeout_in_seconds(RECONNECT_SECS);
    manager
        .register_new_token(&config, token(app_token), listener)
        .await
        .map_err(|e| {
            anyhow::anyhow!(
                "cannot start Slack Socket Mode: {}",
                super::web::classify(&e).message()
            )
        })?;
    manager.start().await;
    Ok(manager)
}
