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

/// The person (or bot) who clicks.
#[derive(Clone, Debug)]
pub struct Clicker {
    pub user_id: u64,
    pub username: String,
    pub role_ids: Vec<u64>,
    /// A bot account (`user.bot`).
    pub bot: bool,
}

impl Clicker {
    pub fn new(user_id: u64, username: &str, role_ids: &[u64]) -> Clicker {
        Clicker {
            user_id,
            username: username.to_string(),
            role_ids: role_ids.to_vec(),
            bot: false,
        }
    }

    /// The same account, as a bot.
    pub fn bot(mut self) -> Clicker {
        self.bot = true;
        self
    }
}

/// Where an interaction happens: the application, the guild (`None` for a DM), the channel and
/// the message whose component was used (for a modal, the one whose button opened it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct At {
    pub application_id: u64,
    pub guild_id: Option<u64>,
    pub channel_id: u64,
    pub message_id: u64,
}

/// A user object as Discord sends it (inside a member, or alone in a DM).
pub fn user_json(user_id: u64, username: &str) -> Value {
    user_json_of(&Clicker::new(user_id, username, &[]))
}

fn user_json_of(c: &Clicker) -> Value {
    let mut u = json!({
        "id": c.user_id.to_string(),
        "username": c.username,
        "global_name": c.username,
        "discriminator": "0",
        "avatar": null,
        "public_flags": 0,
        "avatar_decoration_data": null,
        "primary_guild": null,
        "collectibles": null,
    });
    if c.bot {
        u["bot"] = json!(true);
    }
    u
}

/// A guild member object (with user, roles and permissions) for the clicker.
pub fn member_json(clicker: &Clicker) -> Value {
    let roles: Vec<String> = clicker.role_ids.iter().map(u64::to_string).collect();
    json!({
        "user": user_json_of(clicker),
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

fn interaction(
    kind: u8,
    id: u64,
    at: &At,
    clicker: &Clicker,
    data: Value,
    message: Value,
) -> Value {
    let mut v = json!({
        "type": kind,
        "id": id.to_string(),
        "application_id": at.application_id.to_string(),
        "token": format!("tok{id}"),
        "version": 1,
        "data": data,
        "channel_id": at.channel_id.to_string(),
        "message": message,
        "app_permissions": PERMISSIONS,
        "locale": "en-US",
        "entitlements": [],
        "attachment_size_limit": ATTACHMENT_SIZE_LIMIT,
    });
    match at.guild_id {
        Some(guild_id) => {
            let o = v.as_object_mut().unwrap();
            o.insert("guild_id".into(), json!(guild_id.to_string()));
            o.insert(
                "guild".into(),
                json!({"id": guild_id.to_string(), "locale": "en-US", "features": []}),
            );
            o.insert("guild_locale".into(), json!("en-US"));
            o.insert(
                "channel".into(),
                json!({
                    "id": at.channel_id.to_string(),
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
                }),
            );
            o.insert("member".into(), member_json(clicker));
            o.insert(
                "authorizing_integration_owners".into(),
                json!({"0": guild_id.to_string()}),
            );
            o.insert("context".into(), json!(0));
        }
        None => {
            // A DM: `user` instead of `member`, and a DM channel.
            let o = v.as_object_mut().unwrap();
            o.insert("user".into(), user_json_of(clicker));
            o.insert(
                "channel".into(),
                json!({
                    "id": at.channel_id.to_string(),
                    "type": 1,
                    "flags": 0,
                    "last_message_id": null,
                    "recipients": [user_json_of(clicker)],
                }),
            );
            o.insert(
                "authorizing_integration_owners".into(),
                json!({"1": clicker.user_id.to_string()}),
            );
            o.insert("context".into(), json!(1));
        }
    }
    v
}

/// A slash command (interaction type 2): `/name sub` with these sub-options (each
/// `{"name", "type", "value"}`), used in the channel of `at` (no message).
pub fn slash_command(
    id: u64,
    at: &At,
    clicker: &Clicker,
    name: &str,
    sub: &str,
    options: Value,
) -> Value {
    let mut data = json!({
        "id": "1400000000000000001",
        "name": name,
        "type": 1,
        "options": [{"name": sub, "type": 1, "options": options}],
    });
    if let Some(g) = at.guild_id {
        data["guild_id"] = json!(g.to_string());
    }
    let mut v = interaction(2, id, at, clicker, data, Value::Null);
    v.as_object_mut().unwrap().remove("message");
    v
}

/// A button click (interaction type 3, component_type 2). The message carries one row with that
/// button. The token is `tok{id}`.
pub fn component_click(id: u64, at: &At, clicker: &Clicker, custom_id: &str) -> Value {
    let components = json!([{
        "type": 1,
        "components": [{"type": 2, "style": 1, "label": "Answer", "custom_id": custom_id}],
    }]);
    interaction(
        3,
        id,
        at,
        clicker,
        json!({"custom_id": custom_id, "component_type": 2}),
        message_json(
            at.application_id,
            at.channel_id,
            at.message_id,
            "A question",
            components,
        ),
    )
}

/// A string-select choice (interaction type 3, component_type 3) with these values. The message
/// carries one row with a select whose options are the values.
pub fn select_values(
    id: u64,
    at: &At,
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
        id,
        at,
        clicker,
        json!({"custom_id": custom_id, "component_type": 3, "values": values}),
        message_json(
            at.application_id,
            at.channel_id,
            at.message_id,
            "A question",
            components,
        ),
    )
}

/// A modal submit (interaction type 5) with one text input (custom_id `text`, as askrelay's
/// modals have), in the older form Discord still sends: `data.components[0]` is an action row
/// holding the text input (type 4) with its `value`. The message is the one whose button opened
/// the modal.
pub fn modal_submit(id: u64, at: &At, clicker: &Clicker, custom_id: &str, value: &str) -> Value {
    modal_submit_with_input(id, at, clicker, custom_id, "text", value)
}

/// [`modal_submit`] with another text input id.
pub fn modal_submit_with_input(
    id: u64,
    at: &At,
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
        id,
        at,
        clicker,
        data,
        message_json(
            at.application_id,
            at.channel_id,
            at.message_id,
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
