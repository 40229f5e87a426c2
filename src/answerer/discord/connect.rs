//! Building serenity's REST client from the config: the token, the API base, and the
//! reqwest client REST goes through.

use crate::config::{Config, DEFAULT_API_BASE};
use anyhow::{Context, Result};
use serenity::all::HttpBuilder;
use serenity::http::Http;

/// Builds the REST client. With a non-default `api_base` REST goes through that base with
/// serenity's rate limiter off (a REST proxy, or the test stand-in, handles rate limits).
pub fn build_http(config: &Config) -> Result<Http> {
    build_http_with(config, None)
}

/// [`build_http`] with REST going through `client` when given (see
/// [`crate::daemon::DaemonHooks`]).
pub fn build_http_with(config: &Config, client: Option<reqwest::Client>) -> Result<Http> {
    let token = config
        .discord
        .token
        .as_ref()
        .context("discord.token is not set")?;
    let mut builder = HttpBuilder::new(token.expose());
    if let Some(client) = client {
        builder = builder.client(client);
    }
    let base = config.discord.api_base.trim_end_matches('/');
    if base != DEFAULT_API_BASE {
        builder = builder.proxy(base).ratelimiter_disabled(true);
    }
    Ok(builder.build())
}
