//! The JSON of what the stand-in answers and sends, shaped as Slack's: message objects, users,
//! channel info, view objects, files, and Socket Mode's hello and disconnect frames.

use serde_json::{json, Value};

use super::fixtures::Person;
use super::{Channel, Upload, APP_ID, BOT_ID, BOT_USER_ID, TEAM_ID};

/// When every channel was created (a fixed time: nothing reads it).
const CREATED: u64 = 1_700_000_000;

/// A message posted by the bot, as `chat.postMessage` answers it and as Slack sends it back in
/// an interaction.
pub(super) fn bot_message(ts: &str, text: Option<&str>, blocks: Option<&Value>) -> Value {
    let mut m = json!({
        "type": "message",
        "user": BOT_USER_ID,
        "bot_id": BOT_ID,
        "app_id": APP_ID,
        "text": text.unwrap_or_default(),
        "ts": ts,
        "team": TEAM_ID,
    });
    if let Some(blocks) = blocks {
        m["blocks"] = blocks.clone();
    }
    m
}

/// A user object (`users.info`).
pub(super) fn user_json(p: &Person, is_bot: bool) -> Value {
    json!({
        "id": p.id,
        "team_id": p.team_id,
        "name": p.username,
        "deleted": false,
        "real_name": p.real_name,
        "tz": "Europe/London",
        "tz_label": "Greenwich Mean Time",
        "tz_offset": 0,
        "is_admin": false,
        "is_owner": false,
        "is_primary_owner": false,
        "is_restricted": false,
        "is_ultra_restricted": false,
        "is_bot": is_bot,
        "is_app_user": false,
        "updated": CREATED,
        "profile": {
            "real_name": p.real_name,
            "real_name_normalized": p.real_name,
            "display_name": p.username,
            "display_name_normalized": p.username,
            "team": p.team_id,
        },
    })
}

/// A conversation object (`conversations.info`, `conversations.open` with `return_im`).
pub(super) fn channel_json(id: &str, c: &Channel) -> Value {
    match &c.dm_user {
        Some(user) => json!({
            "id": id,
            "created": CREATED,
            "is_im": true,
            "is_org_shared": false,
            "user": user,
            "is_user_deleted": false,
            "priority": 0,
        }),
        None => json!({
            "id": id,
            "name": c.name,
            "name_normalized": c.name,
            "created": CREATED,
            "creator": BOT_USER_ID,
            "is_channel": true,
            "is_group": false,
            "is_im": false,
            "is_mpim": false,
            "is_private": false,
            "is_archived": false,
            "is_general": false,
            "is_shared": false,
            "is_org_shared": false,
            "is_member": c.bot_member,
            "topic": {"value": "", "creator": "", "last_set": 0},
            "purpose": {"value": "", "creator": "", "last_set": 0},
            "previous_names": [],
        }),
    }
}

/// A view object as `views.open` answers it: what the app sent, with Slack's fields added.
pub(super) fn view_json(id: &str, hash: &str, sent: &Value, root_view_id: &str) -> Value {
    let mut v = sent.clone();
    let defaults = json!({
        "id": id,
        "team_id": TEAM_ID,
        "state": {"values": {}},
        "hash": hash,
        "private_metadata": "",
        "callback_id": "",
        "external_id": "",
        "clear_on_close": false,
        "notify_on_close": false,
        "root_view_id": root_view_id,
        "previous_view_id": null,
        "app_id": APP_ID,
        "app_installed_team_id": TEAM_ID,
        "bot_id": BOT_ID,
    });
    if let (Some(v), Some(d)) = (v.as_object_mut(), defaults.as_object()) {
        for (k, val) in d {
            // Slack's own fields win; what the app set stays.
            match k.as_str() {
                "id"
                | "team_id"
                | "hash"
                | "root_view_id"
                | "app_id"
                | "bot_id"
                | "app_installed_team_id"
                | "state" => {
                    v.insert(k.clone(), val.clone());
                }
                _ => {
                    v.entry(k.clone()).or_insert_with(|| val.clone());
                }
            }
        }
    }
    v
}

/// A file object (`files.completeUploadExternal`, a shared file's message).
pub(super) fn file_json(base: &str, u: &Upload) -> Value {
    json!({
        "id": u.file_id,
        "created": CREATED,
        "timestamp": CREATED,
        "name": u.filename,
        "title": u.title.clone().unwrap_or_else(|| u.filename.clone()),
        "mimetype": "text/plain",
        "filetype": "text",
        "pretty_type": "Plain Text",
        "user": BOT_USER_ID,
        "size": u.bytes.as_ref().map_or(0, Vec::len),
        "is_external": false,
        "is_public": u.channel.is_some(),
        "url_private": format!("{base}/files/{}/{}", u.file_id, u.filename),
        "url_private_download": format!("{base}/files/{}/download/{}", u.file_id, u.filename),
        "permalink": format!("{base}/files/{}", u.file_id),
    })
}

/// Socket Mode's first frame on a connection.
pub(super) fn hello(num_connections: usize) -> Value {
    json!({
        "type": "hello",
        "num_connections": num_connections,
        "debug_info": {
            "host": "applink-standin",
            "build_number": 1,
            "approximate_connection_time": 18060,
        },
        "connection_info": {"app_id": APP_ID},
    })
}

/// Socket Mode's notice that a connection is about to go.
pub(super) fn disconnect(reason: &str) -> Value {
    json!({
        "type": "disconnect",
        "reason": reason,
        "debug_info": {"host": "applink-standin"},
    })
}
