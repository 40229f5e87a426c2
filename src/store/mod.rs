//! The store backends: the only code that touches SQL. Each implements
//! [`crate::domain::store::Store`]; [`open`] picks one by the URL's scheme: SQLite for one daemon
//! on its own, PostgreSQL for daemons sharing a database in a cluster.

pub mod metered;
pub mod postgres;
mod sql;
pub mod sqlite;
#[cfg(test)]
mod tests;

use crate::config::PostgresConfig;
use crate::domain::store::Store;
use anyhow::{bail, Result};
use std::sync::Arc;

/// Test hooks for the store; the default is what `askrelay serve` uses.
#[derive(Debug, Clone, Default)]
pub struct StoreHooks {
    /// SQLite: the page budget of every connection (see [`sqlite::PageLimit`]).
    pub sqlite_page_limit: Option<sqlite::PageLimit>,
}

/// Opens the store behind `database_url` and applies its migrations. `postgres` is the
/// `[postgres]` section, used when the URL is `postgres://` or `postgresql://`.
pub async fn open(
    url: &str,
    postgres: &PostgresConfig,
    hooks: &StoreHooks,
) -> Result<Arc<dyn Store>> {
    if url.starts_with("sqlite:") {
        let store = sqlite::SqliteStore::open(url, hooks.sqlite_page_limit.clone()).await?;
        return Ok(Arc::new(store));
    }
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        let store = postgres::PgStore::open(url, postgres).await?;
        return Ok(Arc::new(store));
    }
    bail!(
        "database_url: unsupported scheme; expected sqlite://PATH or postgres://USER@HOST/DATABASE"
    );
}

/// `url` as it may be logged or shown in an error: a password in it (`user:PASSWORD@` or a
/// `password=` parameter) replaced by `***`. A URL that does not parse is not shown at all,
/// since where its password is cannot be told.
pub fn redact_url(url: &str) -> String {
    let Ok(mut parsed) = url::Url::parse(url) else {
        return "(database_url, not shown: it is not a valid URL)".to_owned();
    };
    if parsed.password().is_some() && parsed.set_password(Some("***")).is_err() {
        return "(database_url, not shown)".to_owned();
    }
    if parsed
        .query_pairs()
        .any(|(k, _)| k.eq_ignore_ascii_case("password"))
    {
        let pairs: Vec<(String, String)> = parsed
            .query_pairs()
            .map(|(k, v)| {
                let v = if k.eq_ignore_ascii_case("password") {
                    "***".to_owned()
                } else {
                    v.into_owned()
                };
                (k.into_owned(), v)
            })
            .collect();
        parsed.query_pairs_mut().clear().extend_pairs(pairs);
    }
    // The serializer percent-encodes `*` in a query; show the mask as typed.
    parsed.to_string().replace("%2A%2A%2A", "***")
}

#[cfg(test)]
mod redact_tests {
    use super::redact_url;

    #[test]
    fn passwords_never_show() {
        assert_eq!(
            redact_url("postgres://alice:s3cr3t@db.example:5432/askrelay?sslmode=require"),
            "postgres://alice:***@db.example:5432/askrelay?sslmode=require"
        );
        assert_eq!(
            redact_url("postgresql://bob@db/askrelay?password=hunter2&sslmode=disable"),
            "postgresql://bob@db/askrelay?password=***&sslmode=disable"
        );
        // A password with characters that need encoding, and one with an `@`.
        for url in [
            "postgres://alice:p%40ss%2Fw@db/x",
            "postgres://alice:p@ss@db/x",
            "postgres://:only@db/x",
        ] {
            let shown = redact_url(url);
            assert!(!shown.contains("ss") && !shown.contains("only"), "{shown}");
        }
        assert_eq!(
            redact_url("postgres://alice@db/x"),
            "postgres://alice@db/x",
            "nothing to hide"
        );
        assert_eq!(
            redact_url("sqlite:///var/lib/askrelay/a.db"),
            "sqlite:///var/lib/askrelay/a.db"
        );
        assert!(!redact_url("postgres://a:pw@[bad").contains("pw"));
    }
}
