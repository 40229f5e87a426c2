//! Interactions over HTTP, as Slack sends them to an app in the HTTP Events API mode
//! ([`SlackStandIn::deliver_over_http`]): each interaction, slash command or event the tests
//! send is POSTed to the app's Request URL instead of going down a Socket Mode connection,
//! signed with the app's signing secret as Slack signs it. The HTTP response is the ack, and is
//! recorded and applied as a Socket Mode ack would be ([`super::socket::apply_response`]), so
//! that the tests' helpers and waits are the same in both modes.
//!
//! On the wire, as Slack sends them: an interaction is the form field `payload=<json>`, a
//! slash command its fields as a form, an event its JSON; each with `X-Slack-Request-Timestamp`
//! (seconds, the wall clock) and `X-Slack-Signature: v0=HMAC-SHA256(secret, "v0:{ts}:{body}")`
//! in hex.

use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;

use super::socket::{apply_response, Ack, EnvelopeType, SentEnvelope};
use super::{Shared, SlackStandIn};

/// Where, and signed with what, the interactions go over HTTP.
#[derive(Clone)]
pub(super) struct Target {
    url: String,
    secret: String,
    client: reqwest::Client,
}

impl Target {
    pub(super) fn url(&self) -> &str {
        &self.url
    }
}

/// A delivery over HTTP that got no ack: the app answered something other than 200, or could
/// not be reached (status 0).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpFailure {
    pub envelope_id: String,
    pub status: u16,
    /// The response's body, or the error reaching the app.
    pub body: String,
}

/// `v0=` and the hex HMAC-SHA256 of `v0:{ts}:{body}` under `secret`: Slack's request signature.
pub fn signature(secret: &str, ts: u64, body: &str) -> String {
    let mut mac =
        Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes a key of any length");
    mac.update(format!("v0:{ts}:{body}").as_bytes());
    let hex: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("v0={hex}")
}

/// The body of an envelope's payload as Slack posts it, and its content type.
fn body(kind: EnvelopeType, payload: &Value) -> (String, &'static str) {
    const FORM: &str = "application/x-www-form-urlencoded";
    match kind {
        EnvelopeType::Interactive => {
            let body = url::form_urlencoded::Serializer::new(String::new())
                .append_pair("payload", &payload.to_string())
                .finish();
            (body, FORM)
        }
        EnvelopeType::SlashCommands => {
            let mut form = url::form_urlencoded::Serializer::new(String::new());
            for (k, v) in payload.as_object().into_iter().flatten() {
                match v {
                    Value::String(s) => form.append_pair(k, s),
                    other => form.append_pair(k, &other.to_string()),
                };
            }
            (form.finish(), FORM)
        }
        EnvelopeType::EventsApi => (payload.to_string(), "application/json"),
    }
}

/// POSTs the payload of `sent` to the target, in a task of its own (as an envelope is sent
/// without waiting for its ack), and records the response as its ack.
pub(super) fn post(shared: Arc<Shared>, target: Target, sent: SentEnvelope) {
    tokio::spawn(async move {
        let (body, content_type) = body(sent.kind, &sent.payload);
        let ts = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or_default();
        let response = target
            .client
            .post(&target.url)
            .header("content-type", content_type)
            .header("user-agent", "Slackbot 1.0 (+https://api.slack.com/robots)")
            .header("x-slack-request-timestamp", ts.to_string())
            .header("x-slack-signature", signature(&target.secret, ts, &body))
            .body(body)
            .send()
            .await;
        let answer = match response {
            Ok(r) => {
                let status = r.status().as_u16();
                (status, r.text().await.unwrap_or_default())
            }
            Err(e) => (0, e.to_string()),
        };
        acked(&shared, &sent, answer);
    });
}

/// What the app's response does: a 200 is the ack (its JSON body, when there is one, the ack's
/// payload); anything else is a failed delivery.
fn acked(shared: &Shared, sent: &SentEnvelope, (status, text): (u16, String)) {
    {
        let mut st = shared.lock();
        if status != 200 {
            st.socket.http_failures.push(HttpFailure {
                envelope_id: sent.envelope_id.clone(),
                status,
                body: text,
            });
        } else {
            let payload = if text.trim().is_empty() {
                None
            } else {
                match serde_json::from_str::<Value>(&text) {
                    Ok(v) => Some(v),
                    Err(e) => {
                        let shown: String = text.chars().take(200).collect();
                        st.violation(
                            "http",
                            "",
                            format!("a response that is not JSON ({e}): {shown}"),
                        );
                        None
                    }
                }
            };
            apply_response(&mut st, sent, payload.as_ref(), "http");
            st.socket.acks.push(Ack {
                envelope_id: sent.envelope_id.clone(),
                payload,
                connection: 0,
                acked_at: Instant::now(),
                sent_at: Some(sent.sent_at),
            });
        }
    }
    shared.bump();
}

impl SlackStandIn {
    /// From now on, sends interactions, slash commands and events to `url` (the app's Request
    /// URL, e.g. `http://127.0.0.1:PORT/slack/events`) over HTTP, signed with `signing_secret`,
    /// instead of over Socket Mode; the response is the ack ([`SlackStandIn::wait_ack`]), its
    /// JSON body the ack's payload. A response other than 200 is no ack: see
    /// [`SlackStandIn::http_failures`].
    pub fn deliver_over_http(&self, url: &str, signing_secret: &str) {
        self.shared.lock().socket.http = Some(Target {
            url: url.to_owned(),
            secret: signing_secret.to_owned(),
            client: reqwest::Client::new(),
        });
        self.shared.bump();
    }

    /// Back to Socket Mode (the default).
    pub fn deliver_over_socket(&self) {
        self.shared.lock().socket.http = None;
        self.shared.bump();
    }

    /// The deliveries over HTTP that got no ack, oldest first.
    pub fn http_failures(&self) -> Vec<HttpFailure> {
        self.shared.lock().socket.http_failures.clone()
    }
}
