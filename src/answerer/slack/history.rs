//! Finding a post Slack already has. Slack's Web API documents no de-duplication of
//! `chat.postMessage`: a message whose post may have landed without its `ts` being recorded
//! (a crash between the post and the record, an answer lost to a cut connection, a 5xx or a
//! deadline) would show twice if it were simply posted again. So every post carries its
//! `client_msg_id` in its message metadata (an event of type [`POST_EVENT`] with it as
//! `nonce`), and before such a message is posted again, its channel's history (or its thread's
//! replies) is searched for the bot's message with that nonce. Found, its `ts` is recorded and
//! nothing is posted.
//!
//! The search reads `conversations.history` or `conversations.replies` (Tier 3), newest first,
//! from [`MARGIN_SECS`] before the request was made, at most [`PAGES`] pages of [`PAGE`]
//! messages; it needs the app's `*:history` scopes (deploy/slack-app-manifest.yaml). A search
//! Slack refuses (a missing scope) leaves the old behaviour: the message is posted again.

use super::web::{Failure, Web};
use serde::Deserialize;
use slack_morphism::prelude::SLACK_TIER3_METHOD_CONFIG;

/// The `event_type` of the metadata every post carries.
pub const POST_EVENT: &str = "askrelay_post";
/// How long before the request's time the search starts: room for a clock between this
/// machine's and Slack's that is off by minutes.
const MARGIN_SECS: i64 = 900;
/// Messages per page of history, Slack's documented maximum being 999 and its advice 200.
const PAGE: u16 = 200;
/// Pages read at most: a channel busier than this since the request was made is searched no
/// further, and the message is posted again (said in the log).
const PAGES: usize = 5;

/// A page of `conversations.history` or `conversations.replies`, as far as the search reads
/// it (metadata is kept as JSON: other apps' payloads need not be strings).
#[derive(Deserialize)]
struct Page {
    #[serde(default)]
    messages: Vec<Message>,
    #[serde(default)]
    has_more: bool,
    response_metadata: Option<Cursor>,
}

#[derive(Deserialize)]
struct Cursor {
    next_cursor: Option<String>,
}

#[derive(Deserialize)]
struct Message {
    ts: String,
    user: Option<String>,
    metadata: Option<serde_json::Value>,
}

impl Message {
    /// Whether this is `bot`'s post of the message with `nonce`.
    fn is_post(&self, bot: &str, nonce: &str) -> bool {
        let Some(m) = &self.metadata else {
            return false;
        };
        self.user.as_deref() == Some(bot)
            && m["event_type"] == POST_EVENT
            && m["event_payload"]["nonce"] == nonce
    }
}

impl Web {
    /// The `ts` of the bot's message with `nonce` in `channel` (among the replies to
    /// `thread_ts` when given), made since a while before `since_ms`; `None` when Slack has
    /// none.
    pub async fn find_posted(
        &self,
        channel: &str,
        thread_ts: Option<&str>,
        nonce: &str,
        since_ms: i64,
    ) -> Result<Option<String>, Failure> {
        let bot = self.bot_user().await?;
        let oldest = format!("{}.000000", (since_ms / 1000 - MARGIN_SECS).max(0));
        let token = self.token();
        let session = self.client().open_session(&token);
        let method = match thread_ts {
            Some(_) => "conversations.replies",
            None => "conversations.history",
        };
        let mut cursor: Option<String> = None;
        for _ in 0..PAGES {
            let params: Vec<(&str, Option<String>)> = vec![
                ("channel", Some(channel.to_owned())),
                ("ts", thread_ts.map(str::to_owned)),
                ("oldest", Some(oldest.clone())),
                ("limit", Some(PAGE.to_string())),
                ("include_all_metadata", Some("true".to_owned())),
                ("cursor", cursor.take()),
            ];
            let page: Page = self
                .call(
                    method,
                    session.http_session_api.http_get(
                        method,
                        &params,
                        Some(&SLACK_TIER3_METHOD_CONFIG),
                    ),
                )
                .await?;
            if let Some(m) = page.messages.iter().find(|m| m.is_post(&bot, nonce)) {
                return Ok(Some(m.ts.clone()));
            }
            cursor = page
                .response_metadata
                .and_then(|c| c.next_cursor)
                .filter(|c| !c.is_empty());
            if !page.has_more || cursor.is_none() {
                return Ok(None);
            }
        }
        tracing::warn!(
            channel,
            pages = PAGES,
            "searched the channel's recent history for an earlier post and stopped short of the request's time; posting it again"
        );
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_bots_message_with_the_nonce_is_the_post() {
        let m = |user: &str, event: &str, nonce: serde_json::Value| Message {
            ts: "1.000100".into(),
            user: Some(user.into()),
            metadata: Some(serde_json::json!({
                "event_type": event,
                "event_payload": {"nonce": nonce},
            })),
        };
        assert!(m("UBOT", POST_EVENT, "n1".into()).is_post("UBOT", "n1"));
        assert!(!m("UBOT", POST_EVENT, "n2".into()).is_post("UBOT", "n1"));
        assert!(!m("UOTHER", POST_EVENT, "n1".into()).is_post("UBOT", "n1"));
        assert!(!m("UBOT", "other_event", "n1".into()).is_post("UBOT", "n1"));
        assert!(!m("UBOT", POST_EVENT, 7.into()).is_post("UBOT", "7"));
        let plain = Message {
            ts: "1.000100".into(),
            user: Some("UBOT".into()),
            metadata: None,
        };
        assert!(!plain.is_post("UBOT", "n1"));
        // Another app's payload with numbers reads.
        let page: Page = serde_json::from_value(serde_json::json!({
            "ok": true,
            "messages": [{"ts": "1.0", "user": "U1", "metadata": {"event_type": "x", "event_payload": {"n": 1}}}],
            "has_more": false,
        }))
        .unwrap();
        assert_eq!(page.messages.len(), 1);
    }
}
