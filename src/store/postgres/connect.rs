//! Reaching the PostgreSQL server: connection options from `database_url` and `[postgres]`, the
//! schema check that keeps an old binary out of a newer database, and the migrations.
//!
//! The password in `database_url` must never reach a log line or an error. sqlx's own errors do
//! not carry the URL, so every error here names the database by [`redact_url`] only.

use crate::config::PostgresConfig;
use crate::store::redact_url;
use anyhow::{anyhow, bail, Context, Result};
use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgSslMode};
use sqlx::{Connection, PgConnection};
use std::str::FromStr;
use std::time::Duration;

/// The PostgreSQL migrations, embedded. They live in a subfolder of `migrations/`, which the
/// SQLite migrator (`sqlx::migrate!("./migrations")`) does not descend into: sqlx reads only
/// the files directly in the folder it is given.
pub(super) static MIGRATOR: Migrator = sqlx::migrate!("./migrations/postgres");

/// How to connect, for each kind of connection the store opens.
pub(super) struct Connect {
    /// From the URL and `[postgres]`, with no statement timeout: migrations may take long, and
    /// wait for another node's migrations.
    base: PgConnectOptions,
    /// `base` with the server's side of the deadlines ([`server_settings`]), for the pool and
    /// the cluster's own connections.
    timed: PgConnectOptions,
    /// What errors call the database: the URL with its password hidden.
    pub(super) shown: String,
    /// The pool's way through a transaction-mode pooler (`postgres.pooler_url`), if set.
    pooler: Option<Pooler>,
    pub(super) connect_timeout: Duration,
    /// `postgres.statement_timeout_secs`.
    pub(super) statement_timeout: Duration,
    /// `postgres.db_deadline_secs`: how long any call on the pool, the lease or the listener
    /// connection may take.
    pub(super) deadline: Duration,
}

/// What a connection of the pool, the lease or the listener asks the server to do, so that
/// the server's side gives up on a silent node about as soon as the node gives up on it
/// (`postgres.db_deadline_secs`, `deadline`):
/// - `statement_timeout`: a statement runs at most `postgres.statement_timeout_secs`;
/// - `idle_in_transaction_session_timeout`: a transaction left idle for a deadline (its node
///   gave up, froze or was cut off) is ended, and its locks with it;
/// - `client_connection_check_interval`: a statement whose node closed its connection (at its
///   deadline) stops within a second instead of running on;
/// - `tcp_keepalives_idle`, `_interval`, `_count` and `tcp_user_timeout`: the server's socket
///   notices a node that vanished (a partition, a dead host) within about a deadline, instead
///   of TCP's own minutes to hours, and frees its connection slot.
///
/// The client side has no such socket settings (sqlx offers none): there, the deadline of every
/// call is the bound (`deadline.rs`). Every one of these is a user-settable setting of
/// PostgreSQL 14 or newer.
fn server_settings(statement_timeout: Duration, deadline: Duration) -> Vec<(&'static str, String)> {
    let secs = deadline.as_secs().max(1);
    vec![
        (
            "statement_timeout",
            statement_timeout.as_millis().to_string(),
        ),
        (
            "idle_in_transaction_session_timeout",
            deadline.as_millis().to_string(),
        ),
        ("client_connection_check_interval", "1000".to_owned()),
        ("tcp_keepalives_idle", secs.div_ceil(2).to_string()),
        ("tcp_keepalives_interval", "1".to_owned()),
        ("tcp_keepalives_count", "3".to_owned()),
        ("tcp_user_timeout", deadline.as_millis().to_string()),
    ]
}

/// A transaction-mode pooler (PgBouncer) in front of the database, for the pool.
///
/// Such a pooler hands each *transaction* to whichever server connection is free, and rejects
/// the `options` startup parameter. So the pool's connections carry no session settings (each
/// transaction sets them with `SET LOCAL`, [`Pooler::prelude`]) and keep no prepared statements
/// from one transaction to the next: sqlx's statement cache is off, and each transaction begins
/// with `DEALLOCATE ALL`, so that a statement another client of the pooler left on the server
/// connection cannot collide with one of ours. Every call is one transaction, reads included:
/// sqlx's extended protocol spans several round trips, which must reach one server connection.
struct Pooler {
    options: PgConnectOptions,
    shown: String,
    /// What begins each of the pool's transactions.
    prelude: String,
}

/// The `BEGIN` of a transaction through a pooler: no statement left from another client, and
/// the settings [`server_settings`] gives a direct connection that a transaction can set
/// (the server's socket settings are the pooler's own, `tcp_keepalive` and `server_check_delay`).
fn prelude(statement_timeout: Duration, deadline: Duration) -> String {
    format!(
        "BEGIN; DEALLOCATE ALL; SET LOCAL statement_timeout = {}; \
         SET LOCAL idle_in_transaction_session_timeout = {}; \
         SET LOCAL client_connection_check_interval = 1000",
        statement_timeout.as_millis(),
        deadline.as_millis()
    )
}

impl Connect {
    pub(super) fn new(url: &str, config: &PostgresConfig) -> Result<Connect> {
        let shown = redact_url(url);
        // sqlx's parse errors name a bad part, never the URL itself.
        let mut base = PgConnectOptions::from_str(url)
            .map_err(|e| anyhow!("database_url {shown} is not a valid PostgreSQL URL: {e}"))?;
        if let Some(mode) = &config.sslmode {
            let mode = PgSslMode::from_str(mode)
                .map_err(|_| anyhow!("postgres.sslmode: {mode:?} is not a TLS mode"))?;
            base = base.ssl_mode(mode);
        }
        if let Some(cert) = &config.ssl_root_cert {
            base = base.ssl_root_cert(cert);
        }
        base = base.application_name("askrelay");
        let deadline = Duration::from_secs(config.db_deadline_secs);
        let statement_timeout = Duration::from_secs(config.statement_timeout_secs);
        let timed = base
            .clone()
            .options(server_settings(statement_timeout, deadline));
        let pooler = match config.pooler_url() {
            None => None,
            Some(url) => {
                let shown = redact_url(url);
                let mut options = PgConnectOptions::from_str(url).map_err(|e| {
                    anyhow!("postgres.pooler_url {shown} is not a valid PostgreSQL URL: {e}")
                })?;
                if let Some(mode) = &config.sslmode {
                    // Checked above.
                    options = options.ssl_mode(PgSslMode::from_str(mode).unwrap_or_default());
                }
                if let Some(cert) = &config.ssl_root_cert {
                    options = options.ssl_root_cert(cert);
                }
                let options = options
                    .application_name("askrelay")
                    .statement_cache_capacity(0);
                Some(Pooler {
                    options,
                    shown,
                    prelude: prelude(statement_timeout, deadline),
                })
            }
        };
        Ok(Connect {
            base,
            timed,
            shown,
            pooler,
            connect_timeout: Duration::from_secs(config.connect_timeout_secs),
            statement_timeout,
            deadline,
        })
    }

    /// Options for the pool: through the pooler if there is one.
    pub(super) fn pooled(&self) -> PgConnectOptions {
        match &self.pooler {
            Some(p) => p.options.clone(),
            None => self.timed.clone(),
        }
    }

    /// The URL the pool connects to, as errors show it.
    pub(super) fn pooled_shown(&self) -> &str {
        match &self.pooler {
            Some(p) => &p.shown,
            None => &self.shown,
        }
    }

    /// Behind a pooler: what begins each of the pool's transactions (see [`Pooler`]).
    pub(super) fn prelude(&self) -> Option<&str> {
        self.pooler.as_ref().map(|p| p.prelude.as_str())
    }

    /// Options for a connection of its own, named so that `pg_stat_activity` (and a test)
    /// can tell it apart: `askrelay-lease NODE`, `askrelay-listen NODE`.
    pub(super) fn named(&self, name: &str) -> PgConnectOptions {
        self.timed.clone().application_name(name)
    }

    /// Opens a connection of its own (not from the pool), within `limit` (the connect timeout,
    /// or less on the lead's path).
    pub(super) async fn dedicated(&self, name: &str, limit: Duration) -> Result<PgConnection> {
        let options = self.named(name);
        match tokio::time::timeout(limit, PgConnection::connect_with(&options)).await {
            Ok(Ok(conn)) => Ok(conn),
            Ok(Err(e)) => {
                Err(e).with_context(|| format!("cannot connect to the database {}", self.shown))
            }
            Err(_) => bail!(
                "cannot connect to the database {}: no answer within {} ms",
                self.shown,
                limit.as_millis()
            ),
        }
    }

    /// Checks that this binary knows every migration the database has, then applies the
    /// missing ones, on a connection of its own without a statement timeout. Two nodes starting
    /// together take turns: sqlx's migrator holds an advisory lock while it runs.
    pub(super) async fn migrate(&self) -> Result<()> {
        let options = self.base.clone().application_name("askrelay-migrate");
        let mut conn =
            match tokio::time::timeout(self.connect_timeout, PgConnection::connect_with(&options))
                .await
            {
                Ok(r) => {
                    r.with_context(|| format!("cannot connect to the database {}", self.shown))?
                }
                Err(_) => bail!(
                    "cannot connect to the database {}: no answer within {}s \
                     (postgres.connect_timeout_secs)",
                    self.shown,
                    self.connect_timeout.as_secs()
                ),
            };
        let result = async {
            check_schema(&mut conn).await?;
            MIGRATOR
                .run_direct(&mut conn)
                .await
                .context("cannot apply the database migrations")
        }
        .await;
        let _ = conn.close().await;
        result
    }
}

/// Refuses a database that a newer askrelay has migrated: this binary would misread it. Runs
/// before the migrations, since sqlx's own refusal does not say what to do.
async fn check_schema(conn: &mut PgConnection) -> Result<()> {
    let has_table: bool = sqlx::query_scalar("SELECT to_regclass('_sqlx_migrations') IS NOT NULL")
        .fetch_one(&mut *conn)
        .await
        .context("cannot read the database's schema version")?;
    if !has_table {
        return Ok(());
    }
    let applied: Vec<i64> = sqlx::query_scalar("SELECT version FROM _sqlx_migrations")
        .fetch_all(&mut *conn)
        .await
        .context("cannot read the database's schema version")?;
    let known = MIGRATOR.iter().map(|m| m.version).max().unwrap_or(0);
    if let Some(newest) = applied
        .iter()
        .copied()
        .filter(|v| !MIGRATOR.version_exists(*v))
        .max()
    {
        bail!(
            "the database schema is at version {newest}, newer than this askrelay knows \
             ({known}): upgrade askrelay on this node before it joins"
        );
    }
    Ok(())
}
