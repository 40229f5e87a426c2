//! Complete interaction payloads, shaped like what Discord sends, that serenity 0.12.5
//! deserializes into `serenity::model::application::Interaction`.
//!
//! serenity drops an INTERACTION_CREATE it cannot deserialize without a word (it becomes
//! `Event::Unknown`), so every field serenity requires is here: for component and modal
//! interactions that includes `attachment_size_limit`, `entitlements`, `locale`, `version`,
//! `token`, `channel_id` and (for components) `message`; a member needs `roles`, `deaf`, `mute`,
//! `flags` and `user`; a message needs `id`, `channel_id`, `author`, `content`, `timestamp`,
//! `tts`, `mention_everyone`, `mentions`, `mention_roles`, `attachments`, `embeds`, `pinned` and
//! `type`. Ids are strings, as Discord sends them.

use serde_json::{json, Value};
use serenity::model::application::Interaction;

/// 10 MiB, what Discord sends for a guild without boosts.
pub const ATTACHMENT_SIZE_LIMIT: u64 = 10_485_760;
/// The permissions Discord reports for a member / the app (a plausible set, as a string).
pub const PERMISSIONS: &str = "2248473465835073";
const FIXED_TIMESTAMP: &str = "2025-01-01T00:00:00.000000+00:00";

/// The person who clicks.
#[derive(Clone, Debug)]
pub struct Clicker {
    pub user_id: u64,
    pub username: String,
    pub role_ids: Vec<u64>,
}

impl Clicker {
    pub fn new(user_id: u64, username: &str, role_ids: &[u64]) -> Clicker {
        Clicker {
            user_id,
            username: username.to_string(),
            role_ids: role_ids.to_vec(),
        }
    }
}

/// A user object as Discord sends it inside a member.
pub fn user_json(user_id: u64, username: &str) -> Value {
    json!({
        "id": user_id.to_string(),
        "username": username,
        "global_name": username,
        "discriminator": "0",
        "avatar": null,
        "public_flags": 0,
        "avatar_decoration_data": null,
        "primary_guild": null,
        "collectibles": null,
    })
}

/// A guild member object (with user, roles and permissions) for the clicker.
pub fn member_json(clicker: &Clicker) -> Value {
    let roles: Vec<String> = clicker.role_ids.iter().map(u64::to_string).collect();
    json!({
        "user": user_json(clicker.user_id, &clicker.username),
        "roles": roles,
        "premium_since": null,
        "permissions": PERMISSIONS,
        "pending": false,
        "nick": null,
        "mute": false,
        "joined_at": "2024-01-01T00:00:00.000000+00:00",
        "flags": 0,
        "deaf": false,
        "communication_disabled_until": null,
        "unusual_dm_activity_until": null,
        "avatar": null,
        "banner": null,
    })
}

/// The bot's message that carried the components, authored by the application's bot user
/// (whose id is taken to be the application id).
pub fn message_json(
    application_id: u64,
    channel_id: u64,
    message_id: u64,
    content: &str,
    components: Value,
) -> Value {
    json!({
        "type": 0,
        "content": content,
        "mentions": [],
        "mention_roles": [],
        "attachments": [],
        "embeds": [],
        "timestamp": FIXED_TIMESTAMP,
        "edited_timestamp": null,
        "flags": 0,
        "components": components,
        "id": message_id.to_string(),
        "channel_id": channel_id.to_string(),
        "author": {
            "id": application_id.to_string(),
            "username": "askrelay",
            "global_name": null,
            "discriminator": "0",
            "avatar": null,
            "bot": true,
            "public_flags": 0,
            "flags": 0,
        },
        "pinned": false,
        "mention_everyone": false,
        "tts": false,
    })
}

#[allow(clippy::too_many_arguments)]
fn interaction(
    kind: u8,
    interaction_id: u64,
    application_id: u64,
    guild_id: u64,
    channel_id: u64,
    clicker: &Clicker,
    data: Value,
    message: Value,
) -> Value {
    json!({
        "type": kind,
        "id": interaction_id.to_string(),
        "application_id": application_id.to_string(),
        "token": format!("tok{interaction_id}"),
        "version": 1,
        "data": data,
        "guild_id": guild_id.to_string(),
        "guild": {"id": guild_id.to_string(), "locale": "en-US", "features": []},
        "channel_id": channel_id.to_string(),
        "channel": {
            "id": channel_id.to_string(),
            "type": 0,
            "guild_id": guild_id.to_string(),
            "name": "asks",
            "position": 0,
            "parent_id": null,
            "topic": null,
            "nsfw": false,
            "flags": 0,
            "rate_limit_per_user": 0,
            "last_message_id": null,
            "permissions": PERMISSIONS,
        },
        "member": member_json(clicker),
        "message": message,
        "app_permissions": PERMISSIONS,
        "locale": "en-US",
        "guild_locale": "en-US",
        "entitlements": [],
        "authorizing_integration_owners": {"0": guild_id.to_string()},
        "context": 0,
        "attachment_size_limit": ATTACHMENT_SIZE_LIMIT,
    })
}

/// A button click (interaction type 3, component_type 2). The message carries one row with that
/// button. The token is `tok{interaction_id}`.
pub fn component_click(
    interaction_id: u64,
    application_id: u64,
    guild_id: u64,
    channel_id: u64,
    message_id: u64,
    clicker: &Clicker,
    custom_id: &str,
) -> Value {
    let components = json!([{
        "type": 1,
        "components": [{"type": 2, "style": 1, "label": "Answer", "custom_id": custom_id}],
    }]);
    interaction(
        3,
        interaction_id,
        application_id,
        guild_id,
        channel_id,
        clicker,
        json!({"custom_id": custom_id, "component_type": 2}),
        message_json(
            application_id,
            channel_id,
            message_id,
            "A question",
            components,
        ),
    )
}

/// A string-select choice (interaction type 3, component_type 3) with these values. The message
/// carries one row with a select whose options are the values.
#[allow(clippy::too_many_arguments)]
pub fn select_values(
    interaction_id: u64,
    application_id: u64,
    guild_id: u64,
    channel_id: u64,
    message_id: u64,
    clicker: &Clicker,
    custom_id: &str,
    values: &[&str],
) -> Value {
    let options: Vec<Value> = values
        .iter()
        .map(|v| json!({"label": v, "value": v}))
        .collect();
    let components = json!([{
        "type": 1,
        "components": [{
            "type": 3,
            "custom_id": custom_id,
            "options": options,
            "min_values": 1,
            "max_values": values.len().max(1),
        }],
    }]);
    interaction(
        3,
        interaction_id,
        application_id,
        guild_id,
        channel_id,
        clicker,
        json!({"custom_id": custom_id, "component_type": 3, "values": values}),
        message_json(
            application_id,
            channel_id,
            message_id,
            "A question",
            components,
        ),
    )
}

/// A modal submit (interaction type 5) with one text input, in the older form Discord still
/// sends: `data.components[0]` is an action row holding the text input (type 4) with its
/// `value`. The message is the one whose button opened the modal.
#[allow(clippy::too_many_arguments)]
pub fn modal_submit(
    interaction_id: u64,
    application_id: u64,
    guild_id: u64,
    channel_id: u64,
    message_id: u64,
    clicker: &Clicker,
    custom_id: &str,
    text_input_id: &str,
    value: &str,
) -> Value {
    let data = json!({
        "custom_id": custom_id,
        "components": [{
            "type": 1,
            "components": [{"type": 4, "custom_id": text_input_id, "value": value}],
        }],
    });
    interaction(
        5,
        interaction_id,
        application_id,
        guild_id,
        channel_id,
        clicker,
        data,
        message_json(
            application_id,
            channel_id,
            message_id,
            "A question",
            json!([]),
        ),
    )
}

/// Deserializes a payload the way serenity does for INTERACTION_CREATE; panics with serde's
/// error when it doesn't (where serenity would silently drop the event).
pub fn parse(v: &Value) -> Interaction {
    serde_json::from_value::<Interaction>(v.clone()).unwrap_or_else(|e| {
        panic!("serenity 0.12.5 cannot deserialize this interaction payload: {e}\npayload: {v:#}")
    })
}
