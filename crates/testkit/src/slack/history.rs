//! Reading messages back: `conversations.history` (a channel's messages, newest first, without
//! the replies in threads) and `conversations.replies` (a thread: the message that starts it,
//! then its replies, oldest first), each with `oldest`, `latest`, `limit` and a `cursor`, and
//! the messages' metadata only with `include_all_metadata`. Also the check of a post's
//! `metadata`, as Slack documents it.

use serde_json::{json, Value};

use super::limits as lim;
use super::web::{Call, Reply};
use super::St;

/// A `ts` as numbers, for comparing (`"1700000000.000100"` → (1700000000, 100)); `None` when it
/// is not one.
fn ts_key(ts: &str) -> Option<(u64, u64)> {
    let (s, us) = ts.split_once('.')?;
    Some((s.parse().ok()?, us.parse().ok()?))
}

/// A parameter that may come as a JSON value or a form's string.
fn param(call: &Call, key: &str) -> Option<String> {
    match call.params.get(key)? {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

pub(super) fn history(st: &mut St, call: &Call) -> Reply {
    let Some(channel) = call.str("channel").filter(|c| st.channels.contains_key(*c)) else {
        return Reply::error("channel_not_found");
    };
    let mut found: Vec<&Value> = st
        .messages
        .iter()
        .filter(|m| m.channel == channel)
        .filter(|m| {
            // A thread's replies are not in the channel's history (a broadcast one would be).
            m.value
                .get("thread_ts")
                .is_none_or(|t| t.as_str() == Some(m.ts.as_str()))
        })
        .map(|m| &m.value)
        .collect();
    found.reverse();
    page(call, found)
}

pub(super) fn replies(st: &mut St, call: &Call) -> Reply {
    let Some(channel) = call.str("channel").filter(|c| st.channels.contains_key(*c)) else {
        return Reply::error("channel_not_found");
    };
    let Some(ts) = call.str("ts") else {
        return Reply::error("invalid_arguments");
    };
    if st.message(channel, ts).is_none() {
        return Reply::error("thread_not_found");
    }
    let found: Vec<&Value> = st
        .messages
        .iter()
        .filter(|m| m.channel == channel)
        .filter(|m| m.ts == ts || m.value.get("thread_ts").and_then(Value::as_str) == Some(ts))
        .map(|m| &m.value)
        .collect();
    page(call, found)
}

/// One page of `messages` (in the order the method returns them) within `oldest` and
/// `latest`, from the `cursor` (the stand-in's: `next:<index>`), `limit` at a time (Slack's
/// default 100, at most [`lim::HISTORY_LIMIT_MAX`]).
fn page(call: &Call, messages: Vec<&Value>) -> Reply {
    let bound = |key: &str| param(call, key).and_then(|t| ts_key(&t));
    let (oldest, latest) = (bound("oldest"), bound("latest"));
    let with_metadata =
        param(call, "include_all_metadata").is_some_and(|v| v == "true" || v == "1");
    let within: Vec<Value> = messages
        .into_iter()
        .filter(|m| {
            let at = m["ts"].as_str().and_then(ts_key);
            oldest.is_none_or(|o| at.is_some_and(|t| t >= o))
                && latest.is_none_or(|l| at.is_some_and(|t| t <= l))
        })
        .map(|m| {
            let mut m = m.clone();
            if !with_metadata {
                m.as_object_mut().map(|o| o.remove("metadata"));
            }
            m
        })
        .collect();
    let limit = param(call, "limit")
        .and_then(|l| l.parse::<usize>().ok())
        .filter(|l| *l > 0)
        .unwrap_or(100)
        .min(lim::HISTORY_LIMIT_MAX);
    let start = match param(call, "cursor").filter(|c| !c.is_empty()) {
        None => 0,
        Some(c) => match c.strip_prefix("next:").and_then(|n| n.parse().ok()) {
            Some(n) => n,
            None => return Reply::error("invalid_cursor"),
        },
    };
    let end = (start + limit).min(within.len());
    let has_more = end < within.len();
    Reply::ok(json!({
        "messages": within.get(start..end).unwrap_or_default(),
        "has_more": has_more,
        "response_metadata": {"next_cursor": if has_more { format!("next:{end}") } else { String::new() }},
    }))
}

/// A post's `metadata` must be an object with a non-empty string `event_type` and an object
/// `event_payload` ([`lim::METADATA_SOURCE`]); anything else is a violation, refused with
/// `invalid_metadata_format`.
pub(super) fn check_metadata(st: &mut St, call: &Call) -> Result<(), Reply> {
    let Some(m) = call.params.get("metadata") else {
        return Ok(());
    };
    let problem = match m {
        Value::Object(o) => match (o.get("event_type"), o.get("event_payload")) {
            (Some(Value::String(t)), Some(Value::Object(_))) if !t.is_empty() => None,
            (Some(Value::String(t)), _) if !t.is_empty() => {
                Some("metadata.event_payload is not an object")
            }
            _ => Some("metadata.event_type is not a non-empty string"),
        },
        _ => Some("metadata is not an object"),
    };
    match problem {
        Some(p) => {
            st.violation(call.method, "/metadata", p);
            Err(Reply::error("invalid_metadata_format"))
        }
        None => Ok(()),
    }
}
