//! The store backends: the only code that touches SQL. Each implements
//! [`crate::core::store::Store`]; [`open`] picks one by the URL's scheme.

pub mod metered;
mod rows;
pub mod sqlite;

use crate::core::store::Store;
use anyhow::{bail, Result};
use std::sync::Arc;

/// Test hooks for the store; the default is what `askrelay serve` uses.
#[derive(Debug, Clone, Default)]
pub struct StoreHooks {
    /// SQLite: the page budget of every connection (see [`sqlite::PageLimit`]).
    pub sqlite_page_limit: Option<sqlite::PageLimit>,
}

/// Opens the store behind `database_url` and applies its migrations.
pub async fn open(url: &str, hooks: &StoreHooks) -> Result<Arc<dyn Store>> {
    if url.starts_with("sqlite:") {
        let store = sqlite::SqliteStore::open(url, hooks.sqlite_page_limit.clone()).await?;
        return Ok(Arc::new(store));
    }
    bail!("database_url: unsupported scheme; expected sqlite://PATH");
}
