//! The HTTP Events API mode (`slack.mode = "http"`, docs/slack.md): Slack posts interactions to
//! `slack.listen` (the app's Interactivity Request URL, path `/slack/events`), each signed with
//! the app's signing secret. A request whose signature (HMAC-SHA256 over the timestamp and the
//! body, slack-morphism's verifier) does not match, or whose timestamp is more than five
//! minutes off, is refused with 401 and changes nothing.
//!
//! The same [`Handler`] as Socket Mode's answers it, and the HTTP 200 is its ack: sent once the
//! handler returned, so after the press is committed, within Slack's 3 s (the handler's own
//! deadline, [`super::interactions::ACK_AFTER`]).

use super::interactions::{CommandPayload, Handler};
use crate::config::{Secret, SlackConfig};
use anyhow::{Context as _, Result};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use slack_morphism::prelude::*;
use slack_morphism::signature_verifier::SlackEventSignatureVerifier;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The path Slack's requests come to.
pub const PATH: &str = "/slack/events";

struct Endpoint {
    verifier: SlackEventSignatureVerifier,
    handler: Arc<Handler>,
}

/// Listens on `slack.listen` until `shutdown`; returns the address it listens on.
pub async fn serve(
    config: &SlackConfig,
    secret: &Secret,
    handler: Arc<Handler>,
    tasks: &crate::domain::AnswererContext,
    shutdown: CancellationToken,
) -> Result<SocketAddr> {
    let addr: SocketAddr = config
        .listen
        .as_deref()
        .context("slack.listen is not set")?
        .trim()
        .parse()
        .context("slack.listen: expected IP:PORT")?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("slack.listen: cannot listen on {addr}"))?;
    let local = listener.local_addr()?;
    let endpoint = Arc::new(Endpoint {
        verifier: SlackEventSignatureVerifier::new(&SlackSigningSecret::new(
            secret.expose().to_owned(),
        )),
        handler,
    });
    let app = Router::new()
        .route(PATH, post(request))
        .with_state(endpoint);
    tasks.spawn(async move {
        let served = axum::serve(listener, app)
            .with_graceful_shutdown(shutdown.cancelled_owned())
            .await;
        if let Err(e) = served {
            tracing::error!(error = %e, "the Slack HTTP endpoint stopped");
        }
    });
    tracing::info!(addr = %local, path = PATH, "listening for Slack's requests (HTTP Events API)");
    Ok(local)
}

/// One request from Slack: checked, then answered as its kind wants.
async fn request(State(e): State<Arc<Endpoint>>, headers: HeaderMap, body: Bytes) -> Response {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let (Some(signature), Some(ts)) = (
        header(SlackEventSignatureVerifier::SLACK_SIGNED_HASH_HEADER),
        header(SlackEventSignatureVerifier::SLACK_SIGNED_TIMESTAMP),
    ) else {
        tracing::warn!("a request to the Slack endpoint without a signature; refused");
        return StatusCode::UNAUTHORIZED.into_response();
    };
    let Ok(body) = std::str::from_utf8(&body) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    if e.verifier.verify(signature, body, ts).is_err() {
        tracing::warn!(
            "a request to the Slack endpoint whose signature or timestamp is wrong; refused"
        );
        return StatusCode::UNAUTHORIZED.into_response();
    }
    // The Events API's own check of the URL (JSON); nothing else of it is subscribed to.
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(body) {
        return match v["type"].as_str() {
            Some("url_verification") => {
                let challenge = v["challenge"].as_str().unwrap_or_default().to_owned();
                axum::Json(serde_json::json!({ "challenge": challenge })).into_response()
            }
            _ => StatusCode::OK.into_response(),
        };
    }
    let fields: Vec<(String, String)> = url::form_urlencoded::parse(body.as_bytes())
        .into_owned()
        .collect();
    let field = |k: &str| fields.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    if let Some(payload) = field("payload") {
        let event: SlackInteractionEvent = match serde_json::from_str(payload) {
            Ok(ev) => ev,
            Err(err) => {
                tracing::warn!(error = %err, "an interaction askrelay cannot read");
                return StatusCode::OK.into_response();
            }
        };
        return match e.handler.on_interaction(event).await {
            SlackInteractionResponse::Empty => StatusCode::OK.into_response(),
            answer => axum::Json(answer).into_response(),
        };
    }
    if field("command").is_some() {
        // The form's fields as the JSON object slack-morphism reads a command from.
        let object: serde_json::Map<String, serde_json::Value> = fields
            .iter()
            .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
            .collect();
        let command: CommandPayload = match serde_json::from_value(object.into()) {
            Ok(c) => c,
            Err(err) => {
                tracing::warn!(error = %err, "a slash command askrelay cannot read");
                return StatusCode::OK.into_response();
            }
        };
        // The reply is the person's alone; when it is not ready in time it comes through the
        // command's response_url instead.
        return match e.handler.on_command(command).await {
            Some(reply) => axum::Json(reply.response()).into_response(),
            None => StatusCode::OK.into_response(),
        };
    }
    StatusCode::OK.into_response()
}
