//! `askrelay check-config` for Discord: the token's shape, then the token and every configured
//! channel verified with Discord.

use super::connect::build_http;
use super::rest::classify;
use crate::config::Config;
use serenity::all::ChannelId;

/// `askrelay check-config`: checks the token's shape and that a channel is configured, then
/// verifies the token and every configured channel with Discord; one line per problem. Returns
/// the problems found. The token is never printed.
pub async fn check(config: &Config) -> Vec<String> {
    let mut problems = Vec::new();
    if let Some(token) = &config.discord.token {
        if let Err(why) = token_shape(token.expose()) {
            problems.push(format!(
                "discord.token does not look like a bot token: {why}"
            ));
        }
    }
    let mut channels: Vec<(String, u64)> = config
        .routes
        .iter()
        .filter_map(|r| Some((format!("route {:?}", r.name), r.channel_id?.0)))
        .collect();
    if let Some(c) = config.discord.channel_id {
        channels.insert(0, ("discord.channel_id".into(), c.0));
    }
    if config.discord.channel_id.is_none() {
        problems.push(if channels.is_empty() {
            "discord.channel_id is not set: no channel is configured (set discord.channel_id or add [[routes]])".to_owned()
        } else {
            "discord.channel_id is not set: requests that match no route get NO_ANSWERER".to_owned()
        });
    }
    let http = match build_http(config) {
        Ok(h) => h,
        Err(e) => {
            problems.push(format!("{e:#}"));
            return problems;
        }
    };
    let base = config.discord.api_base.trim_end_matches('/');
    match http.get_current_user().await {
        Ok(u) => println!("token ok: the bot is {} ({})", u.name, u.id),
        Err(e) => {
            problems.push(reach_problem(&e, base, "the token was rejected"));
            return problems;
        }
    }
    for (what, id) in channels {
        match http.get_channel(ChannelId::new(id)).await {
            Ok(_) => println!("channel ok: {what} = {id}"),
            Err(e) => problems.push(reach_problem(
                &e,
                base,
                &format!("{what} = {id} cannot be used"),
            )),
        }
    }
    problems
}

/// What a failed check says: Discord's refusal after `what`, or that Discord could not be
/// reached at all (a network error is not a rejected token).
fn reach_problem(e: &serenity::Error, base: &str, what: &str) -> String {
    use serenity::http::HttpError;
    match e {
        serenity::Error::Http(HttpError::UnsuccessfulRequest(_)) => {
            format!("{what}: {}", classify(e).message())
        }
        _ => {
            let m = classify(e).message().to_owned();
            match m.strip_prefix("cannot reach Discord ") {
                Some(detail) => format!("cannot reach Discord at {base} {detail}"),
                None => format!("cannot reach Discord at {base}: {m}"),
            }
        }
    }
}

/// A bot token is three dot-separated parts of URL-safe base64 (as the Bot page shows it,
/// without a "Bot " prefix): the bot's id, a timestamp and the secret. Says what is wrong,
/// naming the part, without showing the token.
pub fn token_shape(token: &str) -> Result<(), String> {
    if token.starts_with("Bot ") || token.starts_with("Bearer ") {
        return Err("give the token alone, without \"Bot \"".into());
    }
    if token.trim() != token || token.chars().any(char::is_whitespace) {
        return Err("it contains spaces or line breaks".into());
    }
    if token.starts_with('"') || token.starts_with('\'') {
        return Err("it is quoted".into());
    }
    let parts: Vec<&str> = token.split('.').collect();
    if parts.len() != 3 {
        return Err(format!(
            "it should have three parts separated by dots; it has {}",
            parts.len()
        ));
    }
    const NAMES: [&str; 3] = ["first", "second", "third"];
    for (name, p) in NAMES.iter().zip(&parts) {
        if p.is_empty() {
            return Err(format!("its {name} part is empty"));
        }
        if !p
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '=')
        {
            return Err(format!(
                "its {name} part has a character other than letters, digits, '-' and '_'"
            ));
        }
    }
    if parts[0].len() < TOKEN_ID_PART_MIN {
        return Err(format!(
            "its first part is too short ({} of at least {TOKEN_ID_PART_MIN} characters: a bot \
             token begins with the bot's id in base64)",
            parts[0].len()
        ));
    }
    Ok(())
}

/// The shortest first part of a bot token: a snowflake of 17 digits in base64.
const TOKEN_ID_PART_MIN: usize = 16;

#[cfg(test)]
mod tests {
    use super::token_shape;

    #[test]
    fn token_shapes_say_what_is_wrong() {
        assert!(token_shape("MTE4MDAwMDAwMDAwMDAwMDAwMQ.Gx1234.super-secret_part").is_ok());
        assert!(token_shape("Bot MTE4MDAwMDAwMDAwMDAwMDAwMQ.Gx1234.x")
            .unwrap_err()
            .contains("without"));
        assert!(token_shape("MTE4MDAwMDAwMDAwMDAwMDAwMQ.Gx1234.x\n")
            .unwrap_err()
            .contains("spaces"));
        assert!(token_shape("\"MTE4MDAwMDAwMDAwMDAwMDAwMQ.Gx1234.x\"")
            .unwrap_err()
            .contains("quoted"));
        assert!(token_shape("test-bot-token")
            .unwrap_err()
            .contains("three parts"));
        assert_eq!(
            token_shape("MTE4MDAwMDAwMDAwMDAwMDAwMQ.Gx1234.a/b").unwrap_err(),
            "its third part has a character other than letters, digits, '-' and '_'"
        );
        // Each fault named as it is: "x.y.z" is a well-formed token whose first part is short.
        assert_eq!(
            token_shape("x.y.z").unwrap_err(),
            "its first part is too short (1 of at least 16 characters: a bot token begins with \
             the bot's id in base64)"
        );
        assert_eq!(
            token_shape("MTE4MDAwMDAwMDAwMDAwMDAwMQ..x").unwrap_err(),
            "its second part is empty"
        );
        assert!(token_shape("a.b").unwrap_err().ends_with("it has 2"));
    }
}
