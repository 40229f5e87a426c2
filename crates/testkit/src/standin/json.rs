//! The JSON of the stand-in's replies: messages (built and edited), the bot user, the
//! application, channels and DM channels, and the application commands.

use super::checks::{form_error, normalize_embeds};
use super::reply::Reply;
use super::{Ids, St};
use serde_json::{json, Value};

const BOT_USERNAME: &str = "askrelay-test";

pub(super) fn build_message(
    ids: &Ids,
    id: u64,
    cid: u64,
    body: &Value,
    webhook_app: Option<u64>,
) -> Value {
    let mut msg = json!({
        "type": 0,
        "content": body.get("content").and_then(Value::as_str).unwrap_or_default(),
        "mentions": [],
        "mention_roles": [],
        "attachments": [],
        "embeds": normalize_embeds(body.get("embeds")),
        "timestamp": now_timestamp(),
        "edited_timestamp": null,
        "flags": body.get("flags").and_then(Value::as_u64).unwrap_or(0),
        "components": body.get("components").filter(|c| c.is_array()).cloned().unwrap_or_else(|| json!([])),
        "id": id.to_string(),
        "channel_id": cid.to_string(),
        "author": bot_user_json(ids),
        "pinned": false,
        "mention_everyone": false,
        "tts": body.get("tts").and_then(Value::as_bool).unwrap_or(false),
    });
    if let Some(nonce) = body.get("nonce").filter(|n| !n.is_null()) {
        msg["nonce"] = nonce.clone();
    }
    if let Some(reference) = body.get("message_reference").filter(|r| r.is_object()) {
        let mut reference = reference.clone();
        if reference.get("channel_id").is_none_or(Value::is_null) {
            reference["channel_id"] = json!(cid.to_string());
        }
        reference["type"] = json!(0);
        msg["message_reference"] = reference;
        msg["type"] = json!(19);
    }
    if let Some(app) = webhook_app {
        msg["webhook_id"] = json!(app.to_string());
        msg["application_id"] = json!(app.to_string());
    }
    msg
}

/// Applies an edit: only the fields Discord lets you edit; `null` clears.
pub(super) fn merge_message(msg: &mut Value, patch: &Value) {
    for key in ["content", "embeds", "components", "flags", "tts"] {
        let Some(v) = patch.get(key) else { continue };
        msg[key] = match (key, v) {
            ("content", Value::Null) => json!(""),
            ("embeds", Value::Null) | ("components", Value::Null) => json!([]),
            ("flags", Value::Null) => json!(0),
            ("embeds", v) => normalize_embeds(Some(v)),
            _ => v.clone(),
        };
    }
    if let Some(attachments) = patch.get("attachments").and_then(Value::as_array) {
        if attachments.is_empty() {
            msg["attachments"] = json!([]);
        }
    }
    msg["edited_timestamp"] = json!(now_timestamp());
}

pub(super) fn bot_user_json(ids: &Ids) -> Value {
    json!({
        "id": ids.bot_user_id.to_string(),
        "username": BOT_USERNAME,
        "discriminator": "0",
        "global_name": null,
        "avatar": null,
        "bot": true,
        "public_flags": 0,
        "flags": 0,
        "banner": null,
        "accent_color": null,
        "avatar_decoration_data": null,
        "primary_guild": null,
        "collectibles": null,
    })
}

pub(super) fn application_json(ids: &Ids) -> Value {
    json!({
        "id": ids.application_id.to_string(),
        "name": BOT_USERNAME,
        "icon": null,
        "description": "",
        "summary": "",
        "type": null,
        "bot_public": false,
        "bot_require_code_grant": false,
        "verify_key": "0".repeat(64),
        "flags": 0,
        "owner": {
            "id": "1180000000000000009",
            "username": "owner",
            "discriminator": "0",
            "global_name": null,
            "avatar": null,
            "public_flags": 0,
            "flags": 0,
        },
        "team": null,
        "bot": bot_user_json(ids),
        "rpc_origins": [],
        "redirect_uris": [],
        "interactions_endpoint_url": null,
        "role_connections_verification_url": null,
        "tags": [],
        "approximate_guild_count": 1,
        "approximate_user_install_count": 0,
    })
}

pub(super) fn channel_json(ids: &Ids, cid: u64, last_message_id: Option<u64>) -> Value {
    json!({
        "id": cid.to_string(),
        "type": 0,
        "guild_id": ids.guild_id.to_string(),
        "name": format!("channel-{cid}"),
        "position": 0,
        "permission_overwrites": [],
        "parent_id": null,
        "topic": null,
        "nsfw": false,
        "last_message_id": last_message_id.map(|m| m.to_string()),
        "rate_limit_per_user": 0,
        "flags": 0,
    })
}

/// Bulk-overwrites the application's commands (globally, or in one guild): answers them with
/// ids, as Discord does, keeping the ids of commands that keep their name.
pub(super) fn overwrite_commands(
    st: &mut St,
    ids: &Ids,
    guild: Option<u64>,
    body: Option<&Value>,
) -> Reply {
    let Some(list) = body.and_then(Value::as_array) else {
        return form_error(
            &[],
            "ARRAY_TYPE_CONVERT",
            "Only iterables may be used in a ListType",
        );
    };
    let mut out = Vec::new();
    for c in list {
        let name = c["name"].as_str().unwrap_or_default().to_owned();
        let id = match st.commands.get(&(guild, name.clone())) {
            Some(id) => *id,
            None => {
                let id = st.next_snowflake();
                st.commands.insert((guild, name.clone()), id);
                id
            }
        };
        let mut cmd = c.clone();
        cmd["id"] = json!(id.to_string());
        cmd["application_id"] = json!(ids.application_id.to_string());
        cmd["version"] = json!(id.to_string());
        if cmd.get("type").is_none() {
            cmd["type"] = json!(1);
        }
        if let Some(g) = guild {
            cmd["guild_id"] = json!(g.to_string());
        }
        if cmd.get("default_member_permissions").is_none() {
            cmd["default_member_permissions"] = Value::Null;
        }
        out.push(cmd);
    }
    Reply::json(200, Value::Array(out))
}

/// A DM channel with `user`, as Discord returns it (type 1, no guild).
pub(super) fn dm_channel_json(cid: u64, user: u64) -> Value {
    json!({
        "id": cid.to_string(),
        "type": 1,
        "last_message_id": null,
        "flags": 0,
        "recipients": [crate::fixtures::user_json(user, &format!("user-{user}"))],
    })
}

pub(super) fn now_timestamp() -> String {
    serenity::model::Timestamp::now()
        .to_rfc3339()
        .unwrap_or_else(|| "2025-01-01T00:00:00.000000+00:00".to_string())
}
