//! The Web API calls askrelay makes, each with a deadline, and what their failures come to:
//! [`Failure::Transient`] (Slack unreachable, a 5xx, a 429 with its `Retry-After`, a deadline
//! run out: worth another try) or [`Failure::Permanent`] (Slack refused: a channel that is not
//! there, a token it does not take). A failure's message is askrelay's own words and Slack's
//! error code, never a body, a URL or a token.

use super::connect::{token, Client};
use super::history;
use crate::config::Secret;
use serde::Serialize;
use slack_morphism::errors::SlackClientError;
use slack_morphism::prelude::*;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The deadline of every Web API call; one that takes longer is tried again like a 5xx.
const CALL_DEADLINE: Duration = Duration::from_secs(10);
/// The longest wait between two tries, whatever the backoff or `Retry-After` says (a longer
/// `Retry-After` is honoured by the next pass of the repair loop, which starts from the store).
const MAX_WAIT: Duration = Duration::from_secs(60);

/// Why a call failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// Worth another try, after `retry_after` when Slack said how long (a 429). `unsure`
    /// when the call may have taken effect all the same (its answer was lost: a deadline run
    /// out, a connection cut, a 5xx), so that a post is looked for before it is made again.
    Transient {
        message: String,
        retry_after: Option<Duration>,
        unsure: bool,
    },
    /// Slack refused it; trying again changes nothing.
    Permanent(String),
}

impl Failure {
    pub fn message(&self) -> &str {
        match self {
            Failure::Transient { message, .. } | Failure::Permanent(message) => message,
        }
    }

    /// A failure worth another try, of a call that did not take effect (Slack said no, or it
    /// was never made).
    pub fn transient(message: impl Into<String>) -> Failure {
        Failure::Transient {
            message: message.into(),
            retry_after: None,
            unsure: false,
        }
    }

    /// A failure worth another try, of a call that may have taken effect.
    fn unsure(message: impl Into<String>) -> Failure {
        Failure::Transient {
            message: message.into(),
            retry_after: None,
            unsure: true,
        }
    }

    /// Whether the failed call may have taken effect all the same.
    pub fn unsure_whether_done(&self) -> bool {
        matches!(self, Failure::Transient { unsure: true, .. })
    }
}

/// The outcome of a failed call, classified; its text never quotes what Slack sent back.
pub fn classify(e: &SlackClientError) -> Failure {
    match e {
        SlackClientError::RateLimitError(r) => Failure::Transient {
            message: match r.retry_after {
                Some(d) => format!(
                    "Slack is rate limiting (429, retry after {} s)",
                    d.as_secs()
                ),
                None => "Slack is rate limiting (429)".to_owned(),
            },
            retry_after: r.retry_after,
            unsure: false,
        },
        SlackClientError::ApiError(a) => {
            let code = a.code.chars().take(64).collect::<String>();
            let code: String = code
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if TRANSIENT_CODES.contains(&code.as_str()) {
                Failure::transient(format!("Slack said {code}"))
            } else {
                Failure::Permanent(format!("Slack said {code}"))
            }
        }
        SlackClientError::HttpError(h) if h.status_code.is_server_error() => {
            Failure::unsure(format!("Slack answered HTTP {}", h.status_code.as_u16()))
        }
        SlackClientError::HttpError(h) => {
            Failure::Permanent(format!("Slack answered HTTP {}", h.status_code.as_u16()))
        }
        SlackClientError::HttpProtocolError(p) => {
            let cause = p
                .cause
                .as_ref()
                .map(|c| format!("{c:?}").to_ascii_lowercase())
                .unwrap_or_default();
            let why = [
                ("refused", "connection refused"),
                ("reset", "connection reset"),
                ("timed out", "timed out"),
                ("dns", "name not resolved"),
                ("certificate", "TLS certificate not trusted"),
                ("closed", "connection closed"),
            ]
            .iter()
            .find(|(w, _)| cause.contains(w))
            .map_or("network error", |(_, why)| why);
            let message = format!("cannot reach Slack ({why})");
            // A call refused before it was sent never reached Slack; any other cut may have
            // come after Slack did the work.
            match why {
                "connection refused" | "name not resolved" | "TLS certificate not trusted" => {
                    Failure::transient(message)
                }
                _ => Failure::unsure(message),
            }
        }
        SlackClientError::ProtocolError(_) => Failure::unsure("Slack's answer could not be read"),
        _ => Failure::unsure("the Slack client failed"),
    }
}

/// Slack's error codes that say "later", not "no".
const TRANSIENT_CODES: &[&str] = &[
    "internal_error",
    "fatal_error",
    "service_unavailable",
    "request_timeout",
    "ratelimited",
    "team_added_to_org",
];

/// The Web API with the bot token: the calls the answerer makes.
pub struct Web {
    client: Arc<Client>,
    /// The bot token, with the workspace once `auth.test` named it (the rate limits count per
    /// workspace).
    token: std::sync::RwLock<SlackApiToken>,
    /// The bot's own user id, once `auth.test` named it: a post looked for in a channel's
    /// history must be the bot's.
    bot_user: std::sync::RwLock<Option<String>>,
    shutdown: CancellationToken,
}

/// chat.postMessage's body with the `client_msg_id` slack-morphism's request has no field for.
#[derive(Serialize)]
struct PostWithId<'a> {
    #[serde(flatten)]
    post: &'a SlackApiChatPostMessageRequest,
    client_msg_id: &'a str,
}

/// The message metadata every post carries: its `client_msg_id` again, as the `nonce` of an
/// event of type [`history::POST_EVENT`], which is how [`Web::find_posted`] knows it in a
/// channel's history (Slack returns metadata there; it does not return `client_msg_id` for a
/// bot's messages, nor de-duplicate on it).
fn metadata(client_msg_id: &str) -> SlackMessageMetadata {
    SlackMessageMetadata::new(history::POST_EVENT.into()).with_event_payload(
        [("nonce".to_owned(), client_msg_id.to_owned())]
            .into_iter()
            .collect(),
    )
}

/// conversations.open's body: `users` as Slack documents it, one comma-separated string
/// (slack-morphism's request sends a JSON array).
#[derive(Serialize)]
struct OpenDm<'a> {
    users: &'a str,
}

/// An ephemeral reply through an interaction's `response_url`.
#[derive(Serialize)]
struct Ephemeral<'a> {
    response_type: &'static str,
    replace_original: bool,
    text: &'a str,
    /// Blocks (the text is then the notification's); none for a plain reply.
    #[serde(skip_serializing_if = "Option::is_none")]
    blocks: Option<&'a [SlackBlock]>,
}

impl Web {
    pub fn new(client: Arc<Client>, bot_token: &Secret, shutdown: CancellationToken) -> Web {
        Web {
            client,
            token: std::sync::RwLock::new(token(bot_token)),
            bot_user: Default::default(),
            shutdown,
        }
    }

    pub fn client(&self) -> &Arc<Client> {
        &self.client
    }

    pub(super) fn token(&self) -> SlackApiToken {
        self.token.read().unwrap().clone()
    }

    /// The bot's user id: as `auth.test` named it, asked once.
    pub(super) async fn bot_user(&self) -> Result<String, Failure> {
        if let Some(user) = self.bot_user.read().unwrap().clone() {
            return Ok(user);
        }
        self.identify().await.map(|(_, user)| user)
    }

    /// `f` under the call deadline, its failure classified.
    pub(super) async fn call<T>(
        &self,
        what: &'static str,
        f: impl Future<Output = ClientResult<T>>,
    ) -> Result<T, Failure> {
        match tokio::time::timeout(CALL_DEADLINE, f).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => {
                let f = classify(&e);
                tracing::debug!(call = what, error = f.message(), "a Slack call failed");
                Err(f)
            }
            Err(_) => Err(Failure::unsure(format!(
                "{what} took longer than {} s",
                CALL_DEADLINE.as_secs()
            ))),
        }
    }

    /// `auth.test`: the bot's workspace and user; the workspace is kept for the rate limits.
    pub async fn identify(&self) -> Result<(String, String), Failure> {
        let token = self.token();
        let session = self.client.open_session(&token);
        let me = self.call("auth.test", session.auth_test()).await?;
        self.token.write().unwrap().team_id = Some(me.team_id.clone());
        *self.bot_user.write().unwrap() = Some(me.user_id.to_string());
        Ok((me.team_id.to_string(), me.user_id.to_string()))
    }

    /// `chat.postMessage` with `client_msg_id`, the same for every try of one outbox row, as
    /// a reply in the thread of `thread_ts` when given; returns the message's `ts`.
    pub async fn post(
        &self,
        channel: &str,
        content: SlackMessageContent,
        client_msg_id: &str,
        thread_ts: Option<&str>,
    ) -> Result<String, Failure> {
        let token = self.token();
        let session = self.client.open_session(&token);
        let content = content.with_metadata(metadata(client_msg_id));
        let post = SlackApiChatPostMessageRequest::new(channel.into(), content)
            .with_parse("none".into())
            .with_link_names(false)
            .with_unfurl_links(false)
            .with_unfurl_media(false)
            .opt_thread_ts(thread_ts.map(|t| t.into()));
        let body = PostWithId {
            post: &post,
            client_msg_id,
        };
        let sent: SlackApiChatPostMessageResponse = self
            .call(
                "chat.postMessage",
                session.http_session_api.http_post(
                    "chat.postMessage",
                    &body,
                    Some(&CHAT_POST_MESSAGE_SPECIAL_LIMIT_RATE_CTL),
                ),
            )
            .await?;
        Ok(sent.ts.to_string())
    }

    /// Shares `files` (name, bytes) in the thread of the message `thread_ts` in `channel`,
    /// through Slack's external upload flow: `files.getUploadURLExternal` and the bytes posted
    /// to its URL for each file, then one `files.completeUploadExternal` that shares them all.
    pub async fn share_files(
        &self,
        channel: &str,
        thread_ts: &str,
        files: &[(String, Vec<u8>)],
    ) -> Result<(), Failure> {
        let token = self.token();
        let session = self.client.open_session(&token);
        let mut done = Vec::with_capacity(files.len());
        for (name, bytes) in files {
            let url = self
                .call(
                    "files.getUploadURLExternal",
                    session.get_upload_url_external(
                        &SlackApiFilesGetUploadUrlExternalRequest::new(name.clone(), bytes.len()),
                    ),
                )
                .await?;
            self.call(
                "the file upload",
                session.files_upload_via_url(&SlackApiFilesUploadViaUrlRequest::new(
                    url.upload_url,
                    bytes.clone(),
                    "text/plain".into(),
                )),
            )
            .await?;
            done.push(SlackApiFilesComplete::new(url.file_id).with_title(name.clone()));
        }
        let complete = SlackApiFilesCompleteUploadExternalRequest::new(done)
            .with_channel_id(channel.into())
            .with_thread_ts(thread_ts.into());
        self.call(
            "files.completeUploadExternal",
            session.files_complete_upload_external(&complete),
        )
        .await?;
        Ok(())
    }

    /// `conversations.open` with `user`: the id of the bot's DM with them (opened if need be;
    /// the same every time).
    pub async fn open_dm(&self, user: &str) -> Result<String, Failure> {
        let token = self.token();
        let session = self.client.open_session(&token);
        let opened: SlackApiConversationsOpenResponse<SlackBasicChannelInfo> = self
            .call(
                "conversations.open",
                session.http_session_api.http_post(
                    "conversations.open",
                    &OpenDm { users: user },
                    Some(&SLACK_TIER3_METHOD_CONFIG),
                ),
            )
            .await?;
        Ok(opened.channel.id.to_string())
    }

    /// `chat.update` of the message `ts` in `channel`.
    pub async fn update(
        &self,
        channel: &str,
        ts: &str,
        content: SlackMessageContent,
    ) -> Result<(), Failure> {
        let token = self.token();
        let session = self.client.open_session(&token);
        let req = SlackApiChatUpdateRequest::new(channel.into(), content, ts.into())
            .with_parse("none".into())
            .with_link_names(false);
        self.call("chat.update", session.chat_update(&req)).await?;
        Ok(())
    }

    /// `views.open` with an interaction's `trigger_id` (valid for 3 s).
    pub async fn open_view(
        &self,
        trigger_id: &SlackTriggerId,
        view: SlackView,
    ) -> Result<(), Failure> {
        let token = self.token();
        let session = self.client.open_session(&token);
        let req = SlackApiViewsOpenRequest::new(trigger_id.clone(), view);
        self.call("views.open", session.views_open(&req)).await?;
        Ok(())
    }

    /// An ephemeral reply to the person who pressed, through the interaction's `response_url`
    /// (a URL only Slack and this interaction know; it is never logged).
    /// With `blocks`, the text is the notification's.
    pub async fn respond(
        &self,
        response_url: &SlackResponseUrl,
        text: &str,
        blocks: Option<&[SlackBlock]>,
    ) -> Result<(), Failure> {
        let span = tracing::Span::none();
        let context = SlackClientApiCallContext {
            rate_control_params: None,
            token: None,
            tracing_span: &span,
            is_sensitive_url: true,
        };
        let body = Ephemeral {
            response_type: "ephemeral",
            replace_original: false,
            text,
            blocks,
        };
        let url = response_url.value().clone();
        let sent: Result<SlackApiPostWebhookMessageResponse, Failure> = self
            .call(
                "response_url",
                self.client
                    .http_api
                    .connector
                    .http_post_uri(url, &body, context),
            )
            .await;
        sent.map(|_| ())
    }

    /// `chat.postEphemeral`: a reply only `user` sees in `channel` (a form's reply, which has
    /// no `response_url`).
    pub async fn ephemeral(&self, channel: &str, user: &str, text: &str) -> Result<(), Failure> {
        let token = self.token();
        let session = self.client.open_session(&token);
        let req = SlackApiChatPostEphemeralRequest::new(
            channel.into(),
            user.into(),
            SlackMessageContent::new().with_text(text.to_owned()),
        );
        self.call("chat.postEphemeral", session.chat_post_ephemeral(&req))
            .await?;
        Ok(())
    }

    /// `conversations.info`: whether the bot can see `channel`.
    pub async fn channel(&self, channel: &str) -> Result<(), Failure> {
        let token = self.token();
        let session = self.client.open_session(&token);
        let req = SlackApiConversationsInfoRequest::new(channel.into());
        self.call("conversations.info", session.conversations_info(&req))
            .await?;
        Ok(())
    }

    /// `usergroups.users.list`: the members of a user group.
    pub async fn group_members(&self, group: &str) -> Result<Vec<String>, Failure> {
        let token = self.token();
        let session = self.client.open_session(&token);
        let req = SlackApiUserGroupsUsersListRequest::new(group.into());
        let list = self
            .call("usergroups.users.list", session.usergroups_users_list(&req))
            .await?;
        Ok(list.users.into_iter().map(|u| u.to_string()).collect())
    }

    /// How long to wait after `attempt` failed tries: what Slack said, else a backoff that
    /// doubles from 250 ms, at most [`MAX_WAIT`].
    pub fn wait_after(attempt: u32, failure: &Failure) -> Duration {
        let backoff = Duration::from_millis(250u64.saturating_mul(1 << attempt.min(8)));
        match failure {
            Failure::Transient {
                retry_after: Some(d),
                ..
            } => (*d).min(MAX_WAIT),
            _ => backoff.min(MAX_WAIT),
        }
    }

    /// Waits `d`; false when the daemon shuts down meanwhile.
    pub async fn pause(&self, d: Duration) -> bool {
        tokio::select! {
            _ = tokio::time::sleep(d) => true,
            _ = self.shutdown.cancelled() => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use slack_morphism::errors::*;

    #[test]
    fn failures_are_classed_and_say_nothing_slack_sent() {
        let limited = SlackClientError::RateLimitError(
            SlackRateLimitError::new()
                .with_retry_after(Duration::from_secs(3))
                .with_http_response_body("xoxb-secret".into()),
        );
        assert_eq!(
            classify(&limited),
            Failure::Transient {
                message: "Slack is rate limiting (429, retry after 3 s)".into(),
                retry_after: Some(Duration::from_secs(3)),
                unsure: false,
            }
        );
        let refused = SlackClientError::ApiError(
            SlackClientApiError::new("channel_not_found".into())
                .with_http_response_body("xoxb-secret".into()),
        );
        assert_eq!(
            classify(&refused),
            Failure::Permanent("Slack said channel_not_found".into())
        );
        let down = SlackClientError::HttpError(SlackClientHttpError::new(
            slack_morphism::listener::HttpStatusCode::SERVICE_UNAVAILABLE,
        ));
        assert!(matches!(classify(&down), Failure::Transient { .. }));
        assert!(
            classify(&down).unsure_whether_done(),
            "a 5xx may come after the work"
        );
        assert!(!classify(&limited).unsure_whether_done());
        assert!(!classify(&refused).unsure_whether_done());
        let odd = SlackClientError::ApiError(SlackClientApiError::new("<@U1> xoxb-1".into()));
        assert_eq!(classify(&odd).message(), "Slack said U1xoxb1");
        let f = classify(&limited);
        assert_eq!(Web::wait_after(1, &f), Duration::from_secs(3));
        assert_eq!(
            Web::wait_after(2, &Failure::Permanent(String::new())),
            Duration::from_millis(1000)
        );
    }
}
