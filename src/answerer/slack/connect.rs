//! The slack-morphism client: hyper with rustls and the system's roots, https only, except for
//! a stand-in on this machine (`slack.api_base` = `http://127.0.0.1:…`), the only place plain
//! http is allowed (the config refuses it anywhere else).
//!
//! Against Slack itself the client paces its calls by Slack's per-method tiers (slack-morphism's
//! `SlackApiRateControlConfig`: chat.postMessage once a second, the tier of every other
//! method), once the workspace is known from `auth.test`; a 429 is waited out by the caller,
//! for as long as its `Retry-After` says ([`super::web`]). Against a stand-in nothing is paced, so
//! that the tests meet a 429 only when the stand-in sends one.

use crate::config::{SlackConfig, DEFAULT_SLACK_API_BASE};
use anyhow::{Context, Result};
use slack_morphism::prelude::*;
use std::sync::Arc;

/// The client every Web API call and the Socket Mode connection go through.
pub type Client = SlackClient<SlackClientHyperHttpsConnector>;

/// Builds the client for `config` (no request is made).
pub fn client(config: &SlackConfig) -> Result<Arc<Client>> {
    let roots = SlackHyperHttpsConnector::builder()
        .with_native_roots()
        .context("cannot load the system's TLS root certificates for Slack")?;
    let schemes = if config.api_is_local_http() {
        roots.https_or_http()
    } else {
        roots.https_only()
    };
    let https = schemes.enable_all_versions().build();
    let base = config.api_base.trim_end_matches('/');
    let mut connector = SlackClientHyperConnector::with_connector(https).with_slack_api_url(base);
    if base == DEFAULT_SLACK_API_BASE {
        connector = connector.with_rate_control(SlackApiRateControlConfig::new());
    }
    Ok(Arc::new(SlackClient::new(connector)))
}

/// A token as the client takes it; the value is redacted from its `Debug`.
pub fn token(secret: &crate::config::Secret) -> SlackApiToken {
    SlackApiToken::new(SlackApiTokenValue(secret.expose().to_owned()))
}
