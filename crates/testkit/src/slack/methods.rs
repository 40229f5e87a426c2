//! What each Web API method the stand-in serves does to its state and answers, past the token
//! and the rules (`web.rs`): auth, Socket Mode's tickets, messages (post, update, ephemeral,
//! delete), modals, conversations, users and user groups, file uploads, and the response_urls of
//! interactions. Errors are Slack's codes for each method.

use serde_json::{json, Value};

use super::blocks::{check_message_blocks, check_view, unmodelled_blocks, unmodelled_view};
use super::history;
use super::json::{bot_message, channel_json, file_json, view_json};
use super::limits as lim;
use super::web::{Call, Reply};
use super::{
    Channel, Ephemeral, St, StoredMessage, StoredView, Upload, BOT_ID, BOT_USER_ID, TEAM_DOMAIN,
    TEAM_ID,
};

pub(super) fn api(st: &mut St, call: &Call, method: &str) -> Reply {
    match method {
        "auth.test" => Reply::ok(json!({
            "url": format!("https://{TEAM_DOMAIN}.slack.com/"),
            "team": "askrelay stand-in",
            "user": "askrelay",
            "team_id": TEAM_ID,
            "user_id": BOT_USER_ID,
            "bot_id": BOT_ID,
            "is_enterprise_install": false,
        })),
        "apps.connections.open" => {
            let ticket = st.socket.new_ticket();
            let scheme = if call.tls { "wss" } else { "ws" };
            let host = call.base.split("://").nth(1).unwrap_or_default();
            Reply::ok(json!({"url": format!("{scheme}://{host}/socket?ticket={ticket}")}))
        }
        "chat.postMessage" => post_message(st, call),
        "chat.update" => update(st, call),
        "chat.postEphemeral" => post_ephemeral(st, call),
        "chat.delete" => delete(st, call),
        "views.open" => views_open(st, call),
        "views.update" => views_update(st, call),
        "conversations.open" => conversations_open(st, call),
        "conversations.history" => history::history(st, call),
        "conversations.replies" => history::replies(st, call),
        "conversations.info" => match call.str("channel").and_then(|c| st.channels.get(c)) {
            Some(c) => Reply::ok(
                json!({"channel": channel_json(call.str("channel").unwrap_or_default(), c)}),
            ),
            None => Reply::error("channel_not_found"),
        },
        "usergroups.users.list" => match call.str("usergroup").and_then(|g| st.usergroups.get(g)) {
            Some(users) => Reply::ok(json!({"users": users})),
            None => Reply::error("no_such_subteam"),
        },
        "users.info" => match call.str("user").and_then(|u| st.users.get(u)) {
            Some(u) => Reply::ok(json!({"user": u.value})),
            None => Reply::error("user_not_found"),
        },
        "files.getUploadURLExternal" => upload_url(st, call),
        "files.completeUploadExternal" => complete_upload(st, call),
        _ => Reply::error("unknown_method"),
    }
}

/// The text and blocks of a message body, checked as Slack checks them; the refusal otherwise.
/// Every problem is also recorded as a violation.
fn content(
    st: &mut St,
    method: &str,
    params: &Value,
    need_content: bool,
) -> Result<(Option<String>, Option<Value>), Reply> {
    let blocks = match params.get("blocks") {
        None | Some(Value::Null) => None,
        Some(Value::Array(b)) => Some(b.clone()),
        Some(_) => {
            st.violation(method, "/blocks", "blocks is not a JSON array");
            return Err(Reply::error("invalid_blocks_format"));
        }
    };
    if let Some(blocks) = &blocks {
        let problems = check_message_blocks(blocks, "/blocks");
        for p in &problems {
            st.violation(method, &p.pointer, p.violation());
        }
        if !problems.is_empty() {
            let errors: Vec<String> = problems.iter().map(|p| p.slack()).collect();
            let messages: Vec<String> = errors.iter().map(|e| format!("[ERROR] {e}")).collect();
            return Err(Reply::error_with(
                "invalid_blocks",
                json!({"errors": errors, "response_metadata": {"messages": messages}}),
            ));
        }
        for problem in unmodelled_blocks(blocks, "/blocks") {
            st.violation(method, "/blocks", problem);
        }
    }
    let mut text = params
        .get("text")
        .and_then(Value::as_str)
        .map(str::to_owned);
    if let Some(t) = &text {
        let n = t.chars().count();
        if n > lim::MESSAGE_TEXT {
            st.violation(
                method,
                "/text",
                format!(
                    "text of {n} characters truncated by Slack (limits::MESSAGE_TEXT = {})",
                    lim::MESSAGE_TEXT
                ),
            );
            text = Some(t.chars().take(lim::MESSAGE_TEXT).collect());
        }
    }
    let has_text = text.as_deref().is_some_and(|t| !t.is_empty());
    let has_blocks = blocks.as_ref().is_some_and(|b| !b.is_empty());
    let has_attachments = params.get("attachments").is_some();
    if need_content && !has_text && !has_blocks && !has_attachments {
        st.violation(
            method,
            "",
            "a message with neither text nor blocks (no_text)",
        );
        return Err(Reply::error("no_text"));
    }
    Ok((text, blocks.map(Value::Array)))
}

/// The channel a message method names, as Slack resolves it: a channel the stand-in knows, or a
/// user id (posting to a user posts in the app's DM with them).
fn channel_for_post(st: &mut St, call: &Call) -> Result<String, Reply> {
    let Some(id) = call.str("channel").filter(|c| !c.is_empty()) else {
        return Err(Reply::error("channel_not_found"));
    };
    if id.starts_with('U') || id.starts_with('W') {
        return Ok(open_dm(st, id).0);
    }
    match st.channels.get(id) {
        None => Err(Reply::error("channel_not_found")),
        Some(c) if !c.bot_member => Err(Reply::error("not_in_channel")),
        Some(_) => Ok(id.to_owned()),
    }
}

/// The DM channel with `user`, opened if need be; and whether it was open already.
fn open_dm(st: &mut St, user: &str) -> (String, bool) {
    if let Some((id, _)) = st
        .channels
        .iter()
        .find(|(_, c)| c.dm_user.as_deref() == Some(user))
    {
        return (id.clone(), true);
    }
    let id = st.next_id("D");
    st.channels.insert(
        id.clone(),
        Channel {
            name: String::new(),
            dm_user: Some(user.to_owned()),
            bot_member: true,
        },
    );
    (id, false)
}

fn post_message(st: &mut St, call: &Call) -> Reply {
    let channel = match channel_for_post(st, call) {
        Ok(c) => c,
        Err(r) => return r,
    };
    let (text, blocks) = match content(st, call.method, call.params, true) {
        Ok(c) => c,
        Err(r) => return r,
    };
    if let Err(r) = check_thread_ts(st, call, &channel) {
        return r;
    }
    if let Err(r) = history::check_metadata(st, call) {
        return r;
    }
    let ts = st.next_ts();
    let mut value = bot_message(&ts, text.as_deref(), blocks.as_ref());
    if let Some(thread_ts) = call.str("thread_ts") {
        value["thread_ts"] = json!(thread_ts);
    }
    if let Some(metadata) = call.params.get("metadata") {
        value["metadata"] = metadata.clone();
    }
    st.messages.push(StoredMessage {
        channel: channel.clone(),
        ts: ts.clone(),
        value: value.clone(),
    });
    Reply::ok(json!({"channel": channel, "ts": ts, "message": value}))
}

/// A `thread_ts` must name a message of the channel posted in that starts a thread (one that
/// is not itself a reply): a reply to anything else is recorded as a violation and refused
/// with `thread_not_found` (the stand-in's answer; Slack documents no error for it, and a
/// reply that lands elsewhere is a bug either way).
fn check_thread_ts(st: &mut St, call: &Call, channel: &str) -> Result<(), Reply> {
    let Some(thread_ts) = call.params.get("thread_ts") else {
        return Ok(());
    };
    let Some(thread_ts) = thread_ts.as_str() else {
        st.violation(call.method, "/thread_ts", "thread_ts is not a string");
        return Err(Reply::error("invalid_arguments"));
    };
    let shaped = thread_ts.split_once('.').is_some_and(|(s, us)| {
        !s.is_empty() && !us.is_empty() && (s.to_owned() + us).chars().all(|c| c.is_ascii_digit())
    });
    let problem = if !shaped {
        Some(format!(
            "thread_ts {thread_ts:?} is not a message ts (\"1700000000.000100\")"
        ))
    } else {
        match st.message(channel, thread_ts) {
            None => Some(format!(
                "thread_ts {thread_ts} names no message in channel {channel}"
            )),
            Some(m) if m.value.get("thread_ts").is_some_and(|t| t != thread_ts) => Some(format!(
                "thread_ts {thread_ts} is a reply in a thread, not the message that starts it"
            )),
            Some(_) => None,
        }
    };
    match problem {
        Some(p) => {
            st.violation(call.method, "/thread_ts", p);
            Err(Reply::error("thread_not_found"))
        }
        None => Ok(()),
    }
}

fn update(st: &mut St, call: &Call) -> Reply {
    let Some(channel) = call.str("channel").filter(|c| st.channels.contains_key(*c)) else {
        return Reply::error("channel_not_found");
    };
    let Some(ts) = call.str("ts") else {
        return Reply::error("message_not_found");
    };
    if st.message(channel, ts).is_none() {
        return Reply::error("message_not_found");
    }
    let (text, blocks) = match content(st, call.method, call.params, true) {
        Ok(c) => c,
        Err(r) => return r,
    };
    let edited_ts = st.next_ts();
    let Some(m) = st
        .messages
        .iter_mut()
        .find(|m| m.channel == channel && m.ts == ts)
    else {
        return Reply::error("message_not_found");
    };
    if let Some(text) = &text {
        m.value["text"] = json!(text);
    }
    // Slack keeps the blocks when an update leaves them out; an empty array removes them.
    match &blocks {
        Some(Value::Array(b)) if b.is_empty() => {
            m.value.as_object_mut().map(|o| o.remove("blocks"));
        }
        Some(b) => m.value["blocks"] = b.clone(),
        None => {}
    }
    m.value["edited"] = json!({"user": BOT_USER_ID, "ts": edited_ts});
    if blocks.is_some() {
        // The client shows the new blocks with their initial values.
        st.picks.retain(|(t, _), _| t != ts);
    }
    let Some(m) = st
        .messages
        .iter_mut()
        .find(|m| m.channel == channel && m.ts == ts)
    else {
        return Reply::error("message_not_found");
    };
    let mut message = m.value.clone();
    for key in ["ts", "thread_ts", "client_msg_id"] {
        message.as_object_mut().map(|o| o.remove(key));
    }
    Reply::ok(json!({
        "channel": channel,
        "ts": ts,
        "text": m.value["text"],
        "message": message,
    }))
}

fn post_ephemeral(st: &mut St, call: &Call) -> Reply {
    let channel = match channel_for_post(st, call) {
        Ok(c) => c,
        Err(r) => return r,
    };
    let Some(user) = call.str("user").filter(|u| !u.is_empty()) else {
        return Reply::error("user_not_in_channel");
    };
    let (text, blocks) = match content(st, call.method, call.params, true) {
        Ok(c) => c,
        Err(r) => return r,
    };
    let ts = st.next_ts();
    st.ephemerals.push(Ephemeral {
        channel,
        user: user.to_owned(),
        ts: ts.clone(),
        text,
        blocks,
        via: call.method.to_owned(),
        deleted: false,
    });
    Reply::ok(json!({"message_ts": ts}))
}

fn delete(st: &mut St, call: &Call) -> Reply {
    let Some(channel) = call.str("channel").filter(|c| st.channels.contains_key(*c)) else {
        return Reply::error("channel_not_found");
    };
    let ts = call.str("ts").unwrap_or_default();
    match st
        .messages
        .iter()
        .position(|m| m.channel == channel && m.ts == ts)
    {
        Some(i) => {
            let m = st.messages.remove(i);
            st.deleted.push(m);
            Reply::ok(json!({"channel": channel, "ts": ts}))
        }
        None => Reply::error("message_not_found"),
    }
}

/// The view of views.open / views.update, checked; the refusal otherwise (`invalid_arguments`
/// with Slack's `response_metadata.messages`).
fn checked_view(st: &mut St, call: &Call) -> Result<Value, Reply> {
    let view = match call.params.get("view") {
        Some(v @ Value::Object(_)) => v.clone(),
        _ => {
            st.violation(call.method, "/view", "view is missing or not a JSON object");
            return Err(Reply::error_with(
                "invalid_arguments",
                json!({"response_metadata": {"messages": ["[ERROR] missing required field: view"]}}),
            ));
        }
    };
    let problems = check_view(&view, "/view");
    for p in &problems {
        st.violation(call.method, &p.pointer, p.violation());
    }
    if !problems.is_empty() {
        let messages: Vec<String> = problems
            .iter()
            .map(|p| format!("[ERROR] {}", p.slack()))
            .collect();
        return Err(Reply::error_with(
            "invalid_arguments",
            json!({"response_metadata": {"messages": messages}}),
        ));
    }
    for problem in unmodelled_view(&view, "/view") {
        st.violation(call.method, "/view", problem);
    }
    Ok(view)
}

fn new_hash(st: &mut St) -> String {
    let n = st.next_id("");
    format!("{}.{n}", st.next_ts().replace('.', ""))
}

fn views_open(st: &mut St, call: &Call) -> Reply {
    let Some(trigger_id) = call.str("trigger_id") else {
        return Reply::error("invalid_trigger_id");
    };
    let user = match st.triggers.get(trigger_id) {
        None => return Reply::error("invalid_trigger_id"),
        Some(t) if t.used => return Reply::error("exchanged_trigger_id"),
        Some(t) if t.issued.elapsed().as_secs_f64() > lim::TRIGGER_TTL_SECS as f64 => {
            return Reply::error("expired_trigger_id")
        }
        Some(t) => t.user.clone(),
    };
    let view = match checked_view(st, call) {
        Ok(v) => v,
        Err(r) => return r,
    };
    if let Some(t) = st.triggers.get_mut(trigger_id) {
        t.used = true;
    }
    let id = st.next_id("V");
    let hash = new_hash(st);
    let value = view_json(&id, &hash, &view, &id);
    st.views.push(StoredView {
        id,
        user: Some(user),
        value: value.clone(),
        closed: false,
    });
    Reply::ok(json!({"view": value}))
}

fn views_update(st: &mut St, call: &Call) -> Reply {
    let index = match (call.str("view_id"), call.str("external_id")) {
        (Some(id), _) => st.views.iter().position(|v| v.id == id),
        (None, Some(ext)) => st
            .views
            .iter()
            .position(|v| v.value["external_id"].as_str() == Some(ext)),
        (None, None) => {
            return Reply::error_with(
                "invalid_arguments",
                json!({"response_metadata": {"messages": ["[ERROR] view_id or external_id is required"]}}),
            )
        }
    };
    let Some(index) = index else {
        return Reply::error("not_found");
    };
    if let Some(hash) = call.str("hash") {
        if st.views[index].value["hash"].as_str() != Some(hash) {
            return Reply::error("hash_conflict");
        }
    }
    let view = match checked_view(st, call) {
        Ok(v) => v,
        Err(r) => return r,
    };
    let hash = new_hash(st);
    let stored = &mut st.views[index];
    let root = stored.value["root_view_id"]
        .as_str()
        .unwrap_or(&stored.id)
        .to_owned();
    let state = stored.value["state"].clone();
    stored.value = view_json(&stored.id, &hash, &view, &root);
    stored.value["state"] = state;
    Reply::ok(json!({"view": stored.value}))
}

fn conversations_open(st: &mut St, call: &Call) -> Reply {
    if let Some(channel) = call.str("channel") {
        return match st.channels.get(channel) {
            Some(c) => Reply::ok(
                json!({"channel": channel_json(channel, c), "no_op": true, "already_open": true}),
            ),
            None => Reply::error("channel_not_found"),
        };
    }
    let users: Vec<String> = match call.params.get("users") {
        Some(Value::String(s)) => s.split(',').map(|u| u.trim().to_owned()).collect(),
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|u| u.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    };
    let users: Vec<String> = users.into_iter().filter(|u| !u.is_empty()).collect();
    match users.as_slice() {
        [] => Reply::error("users_list_not_supplied"),
        [user] => {
            if !(user.starts_with('U') || user.starts_with('W')) {
                return Reply::error("user_not_found");
            }
            if st
                .users
                .get(user)
                .is_some_and(|u| u.value["deleted"] == true)
            {
                return Reply::error("user_disabled");
            }
            let (id, was_open) = open_dm(st, user);
            let mut reply = json!({"channel": {"id": id}});
            if call
                .params
                .get("return_im")
                .is_some_and(|v| v == true || v == "true")
            {
                reply["channel"] = channel_json(&id, &st.channels[&id]);
            }
            if was_open {
                reply["no_op"] = json!(true);
                reply["already_open"] = json!(true);
            }
            Reply::ok(reply)
        }
        _ => Reply::error("not_supported_in_stand_in"),
    }
}

fn upload_url(st: &mut St, call: &Call) -> Reply {
    let Some(filename) = call.str("filename").filter(|f| !f.is_empty()) else {
        return Reply::error("invalid_arguments");
    };
    let length = match call.params.get("length") {
        Some(Value::String(s)) => s.parse::<u64>().ok(),
        Some(v) => v.as_u64(),
        None => None,
    };
    let Some(length) = length.filter(|&l| l > 0) else {
        return Reply::error("invalid_arguments");
    };
    let file_id = st.next_id("F");
    st.uploads.push(Upload {
        file_id: file_id.clone(),
        filename: filename.to_owned(),
        length,
        bytes: None,
        completed: false,
        title: None,
        channel: None,
        thread_ts: None,
    });
    Reply::ok(json!({
        "upload_url": format!("{}/upload/{file_id}", call.base),
        "file_id": file_id,
    }))
}

/// A POST of the file's bytes to the URL `files.getUploadURLExternal` handed out.
pub(super) fn upload(st: &mut St, call: &Call, file_id: &str) -> Reply {
    let bytes = call.bytes.unwrap_or_default().to_vec();
    let Some(i) = st.uploads.iter().position(|u| u.file_id == file_id) else {
        return Reply::text(404, "Not Found");
    };
    let announced = st.uploads[i].length;
    if bytes.len() as u64 != announced {
        st.violation(
            "upload",
            "",
            format!(
                "{} bytes uploaded for {file_id}, {announced} announced",
                bytes.len()
            ),
        );
    }
    let n = bytes.len();
    st.uploads[i].bytes = Some(bytes);
    Reply::text(200, &format!("OK - {n}"))
}

fn complete_upload(st: &mut St, call: &Call) -> Reply {
    let files: Vec<(String, Option<String>)> = call
        .params
        .get("files")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|f| {
                    let id = f.get("id")?.as_str()?.to_owned();
                    Some((
                        id,
                        f.get("title").and_then(Value::as_str).map(str::to_owned),
                    ))
                })
                .collect()
        })
        .unwrap_or_default();
    if files.is_empty() {
        return Reply::error("invalid_arguments");
    }
    for (id, _) in &files {
        if !st
            .uploads
            .iter()
            .any(|u| &u.file_id == id && u.bytes.is_some() && !u.completed)
        {
            return Reply::error("file_not_found");
        }
    }
    let channel = call
        .str("channel_id")
        .or_else(|| call.str("channels").and_then(|c| c.split(',').next()))
        .map(str::to_owned);
    if let Some(c) = &channel {
        if !st.channels.contains_key(c) {
            return Reply::error("channel_not_found");
        }
    }
    if call.params.get("blocks").is_some() {
        if let Err(r) = content(st, call.method, call.params, false) {
            return r;
        }
    }
    let thread_ts = call.str("thread_ts").map(str::to_owned);
    let mut shared = Vec::new();
    for (id, title) in &files {
        if let Some(u) = st.uploads.iter_mut().find(|u| &u.file_id == id) {
            u.completed = true;
            u.title = title.clone();
            u.channel = channel.clone();
            u.thread_ts = thread_ts.clone();
            shared.push(file_json(&call.base, u));
        }
    }
    if let Some(channel) = channel {
        // Slack shares the files in a message of their own (a moment later; here at once).
        let ts = st.next_ts();
        let mut value = bot_message(&ts, call.str("initial_comment"), None);
        value["files"] = json!(shared);
        value["upload"] = json!(true);
        if let Some(t) = &thread_ts {
            value["thread_ts"] = json!(t);
        }
        st.messages.push(StoredMessage { channel, ts, value });
    }
    Reply::ok(json!({"files": shared}))
}

/// A POST to an interaction's response_url: a reply (ephemeral by default, or in the channel),
/// or, with `replace_original` / `delete_original`, a change to the message the interaction
/// came from.
pub(super) fn response_url(st: &mut St, call: &Call, token: &str) -> Reply {
    let gone = |code: &str| Reply::json(404, json!({"ok": false, "error": code}));
    let Some(r) = st.response_urls.get(token) else {
        return gone("invalid_url");
    };
    if r.issued.elapsed().as_secs() >= lim::RESPONSE_URL_TTL_SECS {
        return gone("expired_url");
    }
    if r.uses >= lim::RESPONSE_URL_USES {
        st.violation(
            "response_url",
            "",
            format!(
                "response_url used more than {} times (limits::RESPONSE_URL_USES)",
                lim::RESPONSE_URL_USES
            ),
        );
        return gone("used_url");
    }
    let (channel, message_ts, user) = (r.channel.clone(), r.message_ts.clone(), r.user.clone());
    let truthy = |key: &str| {
        call.params
            .get(key)
            .is_some_and(|v| v == true || v == "true")
    };
    let original = match (&channel, &message_ts) {
        (Some(c), Some(ts)) => st
            .messages
            .iter()
            .position(|m| &m.channel == c && &m.ts == ts),
        _ => None,
    };
    // An interaction on an ephemeral message: that message is the original.
    let ephemeral = match (&original, &message_ts) {
        (None, Some(ts)) => st.ephemerals.iter().position(|e| &e.ts == ts),
        _ => None,
    };
    if truthy("delete_original") {
        if let Some(i) = original {
            let m = st.messages.remove(i);
            st.deleted.push(m);
        } else if let Some(i) = ephemeral {
            st.ephemerals[i].deleted = true;
        }
    } else {
        let (text, blocks) = match content(st, "response_url", call.params, true) {
            Ok(c) => c,
            Err(r) => return r,
        };
        if truthy("replace_original") {
            if let Some(ts) = &message_ts {
                st.picks.retain(|(t, _), _| t != ts);
            }
            if let Some(i) = original {
                let m = &mut st.messages[i].value;
                m["text"] = json!(text.unwrap_or_default());
                match blocks {
                    Some(b) => m["blocks"] = b,
                    None => {
                        m.as_object_mut().map(|o| o.remove("blocks"));
                    }
                }
            } else if let Some(i) = ephemeral {
                let e = &mut st.ephemerals[i];
                e.text = text;
                e.blocks = blocks;
            }
        } else if call.str("response_type") == Some("in_channel") {
            let Some(channel) = channel.clone() else {
                return gone("invalid_url");
            };
            let ts = st.next_ts();
            let value = bot_message(&ts, text.as_deref(), blocks.as_ref());
            st.messages.push(StoredMessage { channel, ts, value });
        } else {
            let ts = st.next_ts();
            st.ephemerals.push(Ephemeral {
                channel: channel.clone().unwrap_or_default(),
                user,
                ts,
                text,
                blocks,
                via: "response_url".to_owned(),
                deleted: false,
            });
        }
    }
    if let Some(r) = st.response_urls.get_mut(token) {
        r.uses += 1;
    }
    Reply::ok(json!({}))
}

/// The ack of a slash command that carries a payload: Slack shows it as the command's reply,
/// to the user who ran it (`response_type` `ephemeral`, the default) or in the channel
/// (`in_channel`), checked as a message body is (`blocks` against Block Kit's limits).
pub(super) fn command_reply(st: &mut St, command: &Value, payload: &Value) {
    const METHOD: &str = "slash command ack";
    let channel = command["channel_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let user = command["user_id"].as_str().unwrap_or_default().to_owned();
    let Ok((text, blocks)) = content(st, METHOD, payload, true) else {
        return;
    };
    let ts = st.next_ts();
    match payload.get("response_type").and_then(Value::as_str) {
        None | Some("ephemeral") => st.ephemerals.push(Ephemeral {
            channel,
            user,
            ts,
            text,
            blocks,
            via: "ack".to_owned(),
            deleted: false,
        }),
        Some("in_channel") => {
            let value = bot_message(&ts, text.as_deref(), blocks.as_ref());
            st.messages.push(StoredMessage { channel, ts, value });
        }
        Some(other) => st.violation(
            METHOD,
            "/response_type",
            format!("unknown response_type: {other:?}"),
        ),
    }
}
