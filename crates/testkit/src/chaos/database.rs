//! The database the nodes of a run share: a SQLite file in the run's directory, a scratch
//! PostgreSQL database, or a PostgreSQL URL given.

use super::ChaosConfig;
use crate::scratch::ScratchDb;
use askrelay::store::redact_url;
use std::path::Path;

/// The database the nodes share, as [`ChaosConfig::database`] asks.
pub(super) struct Database {
    pub(super) url: String,
    /// What the report calls it.
    pub(super) label: String,
    /// PostgreSQL: the nodes run in cluster mode, each with a node id.
    pub(super) cluster: bool,
    /// A database this run created on the test server, to be dropped at the end.
    pub(super) scratch: Option<ScratchDb>,
}

pub(super) async fn open_database(cfg: &ChaosConfig, dir: &Path) -> Result<Database, String> {
    if cfg.nodes == 0 {
        return Err("nodes: at least 1".into());
    }
    let sqlite = || Database {
        url: format!("sqlite://{}", dir.join("askrelay.db").display()),
        label: "SQLite".into(),
        cluster: false,
        scratch: None,
    };
    match cfg.database.as_deref() {
        None | Some("sqlite") if cfg.nodes == 1 => Ok(sqlite()),
        Some("sqlite") => Err(format!(
            "{} nodes cannot share a SQLite file; use --database postgres",
            cfg.nodes
        )),
        None | Some("postgres" | "postgresql") => {
            let scratch = ScratchDb::create()
                .await
                .map_err(|e| format!("cannot create a scratch database for the cluster: {e:#}"))?;
            Ok(Database {
                url: scratch.url.clone(),
                label: format!("PostgreSQL (scratch database {})", scratch.name),
                cluster: true,
                scratch: Some(scratch),
            })
        }
        Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
            Ok(Database {
                url: url.to_owned(),
                label: format!("PostgreSQL ({})", redact_url(url)),
                cluster: true,
                scratch: None,
            })
        }
        Some(other) => Err(format!(
            "database {other:?}: expected \"postgres\" (a scratch database), a postgres:// URL \
             or \"sqlite\""
        )),
    }
}
