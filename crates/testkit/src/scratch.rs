//! Scratch databases for tests, the benchmark and the chaos harness: each gets a database of its
//! own on a test server, created empty and dropped afterwards, so that runs never see each
//! other's rows and a test can kill connections without harming another.
//!
//! The server is the one `ASKRELAY_TEST_POSTGRES` points to (an admin URL: a user that may
//! create databases, and a database to connect to while doing it), by default
//! `postgres://postgres@127.0.0.1:5432/test`.
//!
//! [`TestDb`] is one integration test's database: a SQLite file in the test's temp dir, or,
//! with `ASKRELAY_TEST_BACKEND=postgres`, a scratch database.

use anyhow::{Context, Result};
use askrelay::store::redact_url;
use sqlx::{Connection, PgConnection};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// The environment variable with the admin URL of the test server.
pub const ADMIN_URL_ENV: &str = "ASKRELAY_TEST_POSTGRES";

/// The admin URL when [`ADMIN_URL_ENV`] is not set.
pub const DEFAULT_ADMIN_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

/// Tells apart the databases one process creates.
static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A database of its own on the test server, dropped by [`ScratchDb::drop_now`] or, failing
/// that, when the value is dropped.
pub struct ScratchDb {
    /// Its URL: the admin URL with the database replaced.
    pub url: String,
    /// Its name, `askrelay_t_<pid>_<counter>_<random>`.
    pub name: String,
    admin: String,
    dropped: bool,
}

/// Shows the URL with its password hidden.
impl std::fmt::Debug for ScratchDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScratchDb")
            .field("url", &redact_url(&self.url))
            .finish_non_exhaustive()
    }
}

impl ScratchDb {
    /// The admin URL of the test server.
    pub fn admin_url() -> String {
        std::env::var(ADMIN_URL_ENV).unwrap_or_else(|_| DEFAULT_ADMIN_URL.to_owned())
    }

    /// Creates an empty database with a name no other run uses (the pid and a counter tell
    /// apart the databases of this machine's runs, the random part those of another machine
    /// sharing the server).
    pub async fn create() -> Result<ScratchDb> {
        let admin = Self::admin_url();
        let mut random = [0u8; 4];
        getrandom::fill(&mut random)
            .map_err(|e| anyhow::anyhow!("cannot draw a random database name: {e}"))?;
        let random: String = random.iter().map(|b| format!("{b:02x}")).collect();
        let name = format!(
            "askrelay_t_{}_{}_{random}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let mut url = url::Url::parse(&admin)
            .with_context(|| format!("{ADMIN_URL_ENV} is not a URL: {}", redact_url(&admin)))?;
        url.set_path(&format!("/{name}"));
        let mut conn = admin_connection(&admin).await?;
        let created = sqlx::query(&format!("CREATE DATABASE \"{name}\""))
            .execute(&mut conn)
            .await
            .with_context(|| format!("cannot create the scratch database {name}"));
        let _ = conn.close().await;
        created?;
        Ok(ScratchDb {
            url: url.to_string(),
            name,
            admin,
            dropped: false,
        })
    }

    /// Drops the scratch databases whose creating process has ended (its pid, in the name, no
    /// longer runs on this machine): what a test that panicked, or a config that kept its
    /// database for a whole run, left behind. How many it dropped.
    pub async fn sweep_orphans() -> Result<usize> {
        let admin = Self::admin_url();
        let mut conn = admin_connection(&admin).await?;
        let names: Vec<String> = sqlx::query_scalar(
            "SELECT datname FROM pg_database WHERE datname LIKE 'askrelay\\_t\\_%'",
        )
        .fetch_all(&mut conn)
        .await
        .context("cannot list the scratch databases")?;
        let _ = conn.close().await;
        let mut dropped = 0;
        for name in names {
            let pid = name.split('_').nth(2).and_then(|p| p.parse::<u32>().ok());
            let gone = pid.is_some_and(|p| !std::path::Path::new(&format!("/proc/{p}")).exists());
            if gone && drop_database(&admin, &name).await.is_ok() {
                dropped += 1;
            }
        }
        Ok(dropped)
    }

    /// Drops the database now, closing whatever is still connected to it.
    pub async fn drop_now(mut self) -> Result<()> {
        self.dropped = true;
        drop_database(&self.admin, &self.name).await
    }
}

impl Drop for ScratchDb {
    /// Best effort: drops the database on a thread of its own with a runtime of its own, since
    /// Drop cannot await and may run inside a runtime (where blocking on a future panics) or
    /// outside any. It blocks the caller until the server answers, which a test can afford.
    /// A failure is printed, not raised: a panic here would hide the test's own.
    fn drop(&mut self) {
        if self.dropped {
            return;
        }
        let admin = self.admin.clone();
        let name = self.name.clone();
        let dropping = std::thread::spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .context("cannot start a runtime")?
                .block_on(drop_database(&admin, &name))
        });
        match dropping.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => eprintln!("cannot drop the scratch database {}: {e:#}", self.name),
            Err(_) => eprintln!("dropping the scratch database {} panicked", self.name),
        }
    }
}

async fn admin_connection(admin: &str) -> Result<PgConnection> {
    PgConnection::connect(admin).await.with_context(|| {
        format!(
            "cannot connect to the test server {} (set {ADMIN_URL_ENV})",
            redact_url(admin)
        )
    })
}

/// Drops `name`, terminating its sessions. `WITH (FORCE)` waits five seconds at most for the
/// sessions it signalled to end and then fails with SQLSTATE 55006 ("being accessed by other
/// users"): a session that the server had not yet noticed was closed (a daemon killed a moment
/// ago, a proxy's connection cut) can outlast that, so that error alone is tried again, a few
/// times.
async fn drop_database(admin: &str, name: &str) -> Result<()> {
    const TRIES: u32 = 5;
    let mut conn = admin_connection(admin).await?;
    let mut tried = 0;
    let dropped = loop {
        tried += 1;
        let r = sqlx::query(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"))
            .execute(&mut conn)
            .await;
        let in_use =
            matches!(&r, Err(sqlx::Error::Database(e)) if e.code().as_deref() == Some("55006"));
        if !in_use || tried == TRIES {
            break r.with_context(|| {
                format!("cannot drop the scratch database {name} (tried {tried} times)")
            });
        }
    };
    let _ = conn.close().await;
    dropped.map(|_| ())
}

/// Whether this run's tests use PostgreSQL (`ASKRELAY_TEST_BACKEND=postgres`) instead of SQLite.
pub fn on_postgres() -> bool {
    std::env::var("ASKRELAY_TEST_BACKEND").is_ok_and(|b| b == "postgres")
}

/// One test's database: a SQLite file, or a PostgreSQL database of its own that is dropped
/// with this value.
pub struct TestDb {
    pub url: String,
    _scratch: Option<ScratchDb>,
}

impl TestDb {
    /// A SQLite file at `sqlite_path`, or (on PostgreSQL) a new database.
    pub fn new(sqlite_path: &Path) -> TestDb {
        if !on_postgres() {
            return TestDb {
                url: format!("sqlite://{}", sqlite_path.display()),
                _scratch: None,
            };
        }
        // Sync callers (the config builders) run inside the test's runtime, where blocking on
        // a future panics: create it on a thread with a runtime of its own.
        let scratch = std::thread::spawn(|| {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
                .block_on(async {
                    sweep_scratch_databases().await;
                    ScratchDb::create().await
                })
        })
        .join()
        .unwrap()
        .unwrap_or_else(|e| {
            panic!("ASKRELAY_TEST_BACKEND=postgres needs a PostgreSQL server ({e:#})")
        });
        TestDb {
            url: scratch.url.clone(),
            _scratch: Some(scratch),
        }
    }

    /// The URL, for a config that outlives this value's scope: the database is left for the
    /// next run's sweep to drop.
    pub fn leak(self) -> String {
        let url = self.url.clone();
        std::mem::forget(self);
        url
    }
}

/// Drops the scratch databases of earlier test processes that are gone (a test that panicked,
/// or a config that leaked its database), once per process.
async fn sweep_scratch_databases() {
    static SWEPT: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    if SWEPT.set(()).is_err() {
        return;
    }
    let _ = ScratchDb::sweep_orphans().await;
}
