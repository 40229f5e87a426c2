//! A PgBouncer in *transaction* mode in front of the test server, for `postgres.pooler_url`:
//! Debian's `pgbouncer` on a free port of 127.0.0.1, with trust authentication for the test
//! server's user, stopped when the value is dropped.
//!
//! PgBouncer refuses to run as root; as root it is started as the `postgres` user through
//! `setpriv`, with its directory owned by that user. sqlx sends `extra_float_digits` at start-up,
//! which PgBouncer refuses unless told to ignore it.

use crate::scratch::ScratchDb;
use anyhow::{bail, Context, Result};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// How long PgBouncer may take to say it listens.
const START: Duration = Duration::from_secs(10);

/// A running PgBouncer (see the module comment).
pub struct PgBouncer {
    child: Child,
    /// Its configuration, owned by whoever runs it; removed with the value.
    _dir: tempfile::TempDir,
    pub port: u16,
    user: String,
}

impl PgBouncer {
    /// Why PgBouncer cannot run here, if it cannot: the reason a test records when it skips.
    pub fn unavailable() -> Option<String> {
        match Command::new("pgbouncer")
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
        {
            Ok(s) if s.success() => None,
            Ok(s) => Some(format!("pgbouncer --version failed ({s})")),
            Err(_) => Some("pgbouncer is not installed (apt-get install pgbouncer)".into()),
        }
    }

    /// Starts PgBouncer in transaction mode in front of the test server
    /// ([`ScratchDb::admin_url`]), for every database on it, with at most `pool_size` server
    /// connections per database; returns once it listens.
    pub fn start(pool_size: u32) -> Result<PgBouncer> {
        let admin = url::Url::parse(&ScratchDb::admin_url()).context("the test server's URL")?;
        let host = admin.host_str().unwrap_or("127.0.0.1").to_owned();
        let server_port = admin.port().unwrap_or(5432);
        let user = match admin.username() {
            "" => "postgres".to_owned(),
            u => u.to_owned(),
        };
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let dir = tempfile::tempdir()?;
        let users = dir.path().join("users.txt");
        std::fs::write(&users, format!("\"{user}\" \"\"\n"))?;
        let ini = dir.path().join("pgbouncer.ini");
        std::fs::write(
            &ini,
            format!(
                "[databases]\n\
                 * = host={host} port={server_port}\n\
                 [pgbouncer]\n\
                 listen_addr = 127.0.0.1\n\
                 listen_port = {port}\n\
                 unix_socket_dir =\n\
                 auth_type = trust\n\
                 auth_file = {users}\n\
                 pool_mode = transaction\n\
                 default_pool_size = {pool_size}\n\
                 max_client_conn = 5000\n\
                 max_db_connections = {pool_size}\n\
                 ignore_startup_parameters = extra_float_digits\n\
                 server_check_delay = 0\n",
                users = users.display()
            ),
        )?;
        let root = Command::new("id")
            .arg("-u")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
            .unwrap_or(false);
        let mut command = if root {
            // PgBouncer refuses root: run it as the server's own user, which owns its files.
            let ids = |flag: &str| -> Result<u32> {
                let out = Command::new("id").args([flag, "postgres"]).output()?;
                String::from_utf8_lossy(&out.stdout)
                    .trim()
                    .parse()
                    .context("no postgres user to run pgbouncer as")
            };
            let (uid, gid) = (ids("-u")?, ids("-g")?);
            for p in [dir.path(), &users, &ini] {
                std::os::unix::fs::chown(p, Some(uid), Some(gid))?;
            }
            let mut c = Command::new("setpriv");
            c.args([
                "--reuid=postgres",
                "--regid=postgres",
                "--init-groups",
                "pgbouncer",
            ]);
            c
        } else {
            Command::new("pgbouncer")
        };
        let mut child = command
            .arg(&ini)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .context("cannot start pgbouncer")?;
        // Its log says when it listens; the rest of it is drained, so that it never blocks.
        let stderr = child.stderr.take().expect("piped");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if let Some(t) = &tx {
                    if line.contains("listening on") {
                        let _ = t.send(Ok(()));
                        tx = None;
                    } else if line.contains("FATAL") || line.contains("ERROR") {
                        let _ = t.send(Err(line));
                        tx = None;
                    }
                }
            }
        });
        let bouncer = PgBouncer {
            child,
            _dir: dir,
            port,
            user,
        };
        match rx.recv_timeout(START) {
            Ok(Ok(())) => Ok(bouncer),
            Ok(Err(line)) => bail!("pgbouncer did not start: {line}"),
            Err(_) => bail!("pgbouncer did not say it listens within {START:?}"),
        }
    }

    /// The URL of `db` through this PgBouncer.
    pub fn url(&self, db: &ScratchDb) -> String {
        format!(
            "postgres://{}@127.0.0.1:{}/{}",
            self.user, self.port, db.name
        )
    }
}

impl Drop for PgBouncer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
