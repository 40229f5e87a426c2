//! A real full disk: the SQLite database on a small tmpfs, filled by the daemon's own writes
//! (asks, terminal answers and clicks) until they fail. Every `accepted`, `answer_accepted`,
//! `answered` and acknowledged click must then be in the database an outside reader opens after
//! SIGKILL, and again after a restart; `health`, `/healthz` and systemd's `STATUS=` must say the
//! store is failing while the disk is full, and the daemon must recover, without a restart,
//! once space is freed: all of it, or only some (then SQLite's WAL must be checkpointed before
//! it takes the freed space again, and the store is failing until it was).
//!
//! Mounting a tmpfs needs root (CI runs as root); elsewhere the test says it was skipped, and
//! why (see [`skip`]).

use crate::harness::*;
use askrelay::client::Client;
use askrelay_testkit::fixtures::{self, At};
use askrelay_testkit::standin::StandIn;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// A tmpfs of `size` mounted on a fresh directory, unmounted when dropped.
struct Tmpfs {
    _dir: tempfile::TempDir,
    at: PathBuf,
}

impl Tmpfs {
    /// Mounts one, or says why it cannot.
    fn mount(size: &str) -> Result<Tmpfs, String> {
        if !nix::unistd::geteuid().is_root() {
            return Err("mounting a tmpfs needs root".into());
        }
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let at = dir.path().join("disk");
        std::fs::create_dir(&at).map_err(|e| e.to_string())?;
        let out = std::process::Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0755"),
                "tmpfs",
            ])
            .arg(&at)
            .output()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "mount -t tmpfs failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(Tmpfs { _dir: dir, at })
    }

    fn free_bytes(&self) -> u64 {
        let st = nix::sys::statvfs::statvfs(&self.at).unwrap();
        st.blocks_available() as u64 * st.fragment_size() as u64
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.at)
            .status();
    }
}

/// What the daemon acknowledged, to be checked against the database.
#[derive(Default)]
struct Acks {
    /// `accepted` request ids.
    accepted: Vec<String>,
    /// `answer_accepted` (terminal): request id → the custom text answered.
    terminal: BTreeMap<String, String>,
    /// Clicks acknowledged with the final message (type 7): request ids.
    clicked: Vec<String>,
    /// `answered` lines agents got: request id → the result.
    answered: BTreeMap<String, String>,
    /// Writes refused with "could not be saved" (asks, answers, clicks).
    refused: (usize, usize, usize),
}

fn big_question(n: usize) -> Value {
    json!({"questions": [{"id": "q", "question": format!("{n} {}", "x".repeat(3000)),
        "options": [{"label": "Yes, delete them (Recommended)"}, {"label": "No, keep them"}]}]})
}

/// The message id of an `accepted` line's first message link.
fn message_id(accepted: &Value) -> Option<u64> {
    accepted["message_links"][0]
        .as_str()?
        .rsplit('/')
        .next()?
        .parse()
        .ok()
}

/// The stand-in's copy of message `id`.
fn message(standin: &StandIn, id: u64) -> Value {
    standin
        .messages_in(CHANNEL)
        .into_iter()
        .find(|m| id_of(m) == id)
        .expect("the posted message")
}

async fn click_no(standin: &StandIn, msg: &Value, n: u64) -> Value {
    let at = At {
        application_id: standin.application_id(),
        guild_id: Some(standin.guild_id()),
        channel_id: CHANNEL,
        message_id: id_of(msg),
    };
    let who = fixtures::Clicker::new(4242, "alice", &[]);
    interact_on(
        standin,
        fixtures::component_click(n, &at, &who, &control(msg, "No, keep them")),
    )
    .await
}

/// Every request with its (one) question's answer, as a reader outside the daemon sees it: one
/// query, the same on both backends.
const STORED: &str = "SELECT r.request_id, r.status, r.result_json, q.custom, q.answered_via, \
                      q.answered_id, q.selected_json \
                      FROM requests r JOIN questions q ON q.request_key = r.key";

type StoredRow = (
    String,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
);

async fn read_stored(url: &str) -> BTreeMap<String, StoredRow> {
    use sqlx::Connection;
    let rows: Vec<StoredRow> = if url.starts_with("postgres") {
        let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
        let rows = sqlx::query_as(STORED).fetch_all(&mut conn).await.unwrap();
        conn.close().await.unwrap();
        rows
    } else {
        let mut conn = sqlx::SqliteConnection::connect(url).await.unwrap();
        let rows = sqlx::query_as(STORED).fetch_all(&mut conn).await.unwrap();
        conn.close().await.unwrap();
        rows
    };
    rows.into_iter().map(|r| (r.0.clone(), r)).collect()
}

/// Checks each acknowledged step against what the database at `url` holds.
async fn check_stored(url: &str, acks: &Acks) {
    let stored = read_stored(url).await;
    for id in &acks.accepted {
        assert!(
            stored.contains_key(id),
            "{id} was accepted but is not stored"
        );
    }
    for (id, text) in &acks.terminal {
        let row = &stored[id];
        assert_eq!(
            row.3.as_deref(),
            Some(text.as_str()),
            "{id}: answer_accepted"
        );
        assert_eq!(row.4.as_deref(), Some("terminal"), "{id}");
    }
    for id in &acks.clicked {
        let row = &stored[id];
        assert_eq!(
            row.5.as_deref(),
            Some("4242"),
            "{id}: the acknowledged click"
        );
        // The option index: "No, keep them" is the second.
        assert_eq!(row.6.as_deref(), Some("[1]"), "{id}");
    }
    for (id, result) in &acks.answered {
        let row = &stored[id];
        assert_eq!(
            row.1, "answered",
            "{id}: its agent was told it was answered"
        );
        assert_eq!(row.2.as_deref(), Some(result.as_str()), "{id}");
    }
}

/// The next systemd notification that is not a watchdog ping.
async fn next_status(notify: &tokio::net::UnixDatagram, what: &str) -> String {
    within(what, async {
        let mut buf = vec![0u8; 4096];
        loop {
            let n = notify.recv(&mut buf).await.unwrap();
            // The sd-notify crate ends each message with a newline.
            let m = String::from_utf8_lossy(&buf[..n])
                .trim_end_matches('\n')
                .to_owned();
            if m != "WATCHDOG=1" {
                return m;
            }
        }
    })
    .await
}

async fn healthz(addr: &str) -> (u16, String) {
    let url = format!("http://{addr}/healthz");
    let resp = within("GET /healthz", reqwest::get(&url)).await.unwrap();
    (resp.status().as_u16(), resp.text().await.unwrap())
}

#[tokio::test]
async fn a_real_full_disk_loses_no_acknowledged_ask_answer_or_click() {
    const TEST: &str = "fulldisk::a_real_full_disk_loses_no_acknowledged_ask_answer_or_click";
    let disk = match Tmpfs::mount("4m") {
        Ok(d) => d,
        Err(why) => return skip(TEST, &why),
    };
    let url = format!("sqlite://{}", disk.at.join("askrelay.db").display());
    fill_check_and_recover(&disk, &url, Backend::Sqlite).await;
}

#[tokio::test]
async fn a_full_postgres_tablespace_loses_no_acknowledged_ask_answer_or_click() {
    const TEST: &str =
        "fulldisk::a_full_postgres_tablespace_loses_no_acknowledged_ask_answer_or_click";
    let disk = match Tmpfs::mount("4m") {
        Ok(d) => d,
        Err(why) => return skip(TEST, &why),
    };
    // Declared after the disk, so dropped before it is unmounted, also when the test fails.
    let db = match PgOnDisk::create(&disk).await {
        Ok(db) => db,
        Err(why) => return skip(TEST, &why),
    };
    fill_check_and_recover(&disk, &db.url, Backend::Postgres).await;
    drop(db);
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Backend {
    Sqlite,
    Postgres,
}

/// A PostgreSQL database whose tablespace is a directory on the tmpfs: the server's own data
/// files for it fill up there (its WAL stays where the server keeps it).
struct PgOnDisk {
    admin: String,
    name: String,
    url: String,
}

impl PgOnDisk {
    async fn create(disk: &Tmpfs) -> Result<PgOnDisk, String> {
        use sqlx::Connection;
        use std::os::unix::fs::MetadataExt;
        let admin = askrelay_testkit::scratch::ScratchDb::admin_url();
        let mut conn = sqlx::PgConnection::connect(&admin)
            .await
            .map_err(|e| format!("no PostgreSQL server at {admin}: {e}"))?;
        let data: String = sqlx::query_scalar("SHOW data_directory")
            .fetch_one(&mut conn)
            .await
            .map_err(|e| format!("cannot read the server's data_directory: {e}"))?;
        let owner = std::fs::metadata(&data).map_err(|e| {
            format!("the PostgreSQL server's files are not on this machine ({data}: {e})")
        })?;
        sweep_stale_tablespaces(&mut conn).await;
        let dir = disk.at.join("pg");
        std::fs::create_dir(&dir).unwrap();
        nix::unistd::chown(
            &dir,
            Some(nix::unistd::Uid::from_raw(owner.uid())),
            Some(nix::unistd::Gid::from_raw(owner.gid())),
        )
        .unwrap();
        let name = format!(
            "askrelay_t_{}_fulldisk_{}",
            std::process::id(),
            rand_suffix()
        );
        for sql in [
            format!("CREATE TABLESPACE \"{name}\" LOCATION '{}'", dir.display()),
            format!("CREATE DATABASE \"{name}\" TABLESPACE \"{name}\""),
        ] {
            sqlx::query(&sql)
                .execute(&mut conn)
                .await
                .map_err(|e| format!("{sql}: {e}"))?;
        }
        let _ = conn.close().await;
        let mut url = url::Url::parse(&admin).unwrap();
        url.set_path(&format!("/{name}"));
        Ok(PgOnDisk {
            admin,
            name,
            url: url.to_string(),
        })
    }
}

/// The database and its tablespace go before the tmpfs does, however the test ends: a
/// tablespace whose directory vanished makes every later checkpoint of the whole server fail.
impl Drop for PgOnDisk {
    fn drop(&mut self) {
        let (admin, name) = (self.admin.clone(), self.name.clone());
        // A runtime of its own: this may run while the test's runtime unwinds.
        let done = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                use sqlx::Connection;
                let mut conn = sqlx::PgConnection::connect(&admin).await.unwrap();
                drop_database_and_tablespace(&mut conn, &name).await;
                let _ = conn.close().await;
            })
        })
        .join();
        if done.is_err() && !std::thread::panicking() {
            panic!("could not drop the test database {}", self.name);
        }
    }
}

async fn drop_database_and_tablespace(conn: &mut sqlx::PgConnection, name: &str) {
    for sql in [
        format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"),
        format!("DROP TABLESPACE IF EXISTS \"{name}\""),
    ] {
        if let Err(e) = sqlx::query(&sql).execute(&mut *conn).await {
            eprintln!("{sql}: {e}");
        }
    }
}

/// Drops what a run that was killed left behind: a full-disk tablespace whose directory is
/// gone (its tmpfs went with the process). The directory is made again, empty and owned by the
/// server, so that the drop can go through; a dropped database's pages are discarded unwritten.
async fn sweep_stale_tablespaces(conn: &mut sqlx::PgConnection) {
    let stale: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT spcname::text, pg_tablespace_location(oid), \
         (SELECT setting FROM pg_settings WHERE name = 'data_directory') \
         FROM pg_tablespace WHERE spcname LIKE 'askrelay\\_t\\_%\\_fulldisk\\_%'",
    )
    .fetch_all(&mut *conn)
    .await
    .unwrap_or_default();
    for (name, location, data) in stale {
        let dir = std::path::Path::new(&location);
        if dir.exists() {
            continue; // another test's, still running
        }
        if let Ok(owner) = std::fs::metadata(&data) {
            use std::os::unix::fs::MetadataExt;
            let _ = std::fs::create_dir_all(dir);
            let _ = nix::unistd::chown(
                dir,
                Some(nix::unistd::Uid::from_raw(owner.uid())),
                Some(nix::unistd::Gid::from_raw(owner.gid())),
            );
        }
        drop_database_and_tablespace(conn, &name).await;
        let _ = std::fs::remove_dir_all(dir);
    }
}

fn rand_suffix() -> String {
    let mut b = [0u8; 4];
    getrandom::fill(&mut b).unwrap();
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A daemon serving from the database at `url`, with the Discord stand-in, terminal answers,
/// `/healthz` and a systemd notification socket.
struct Daemon {
    standin: StandIn,
    bin: Bin,
    served: Served,
    /// Where `/healthz` is served.
    addr: String,
    /// systemd's notifications (`READY=1`, `STATUS=`).
    notify: tokio::net::UnixDatagram,
    /// The next interaction's id.
    interaction: u64,
}

impl Daemon {
    async fn start(url: &str) -> Daemon {
        let standin = StandIn::start().await;
        let bin = Bin::new()
            .discord(&standin)
            .env("ASKRELAY_DATABASE_URL", url)
            .env("ASKRELAY_DISCORD__TERMINAL_ANSWERS", "true")
            .env("ASKRELAY_HTTP__LISTEN", "127.0.0.1:0");
        let notify_path = bin.dir().join("notify");
        let notify = tokio::net::UnixDatagram::bind(&notify_path).unwrap();
        let mut served = bin
            .serve_cmd({
                let mut c = bin.cmd(&["serve"]);
                c.env("NOTIFY_SOCKET", &notify_path);
                c
            })
            .await;
        let line = served
            .wait_log_anywhere("serving /metrics and /healthz")
            .await;
        let addr = line
            .split("addr=")
            .nth(1)
            .unwrap()
            .split_whitespace()
            .next()
            .unwrap()
            .to_owned();
        assert_eq!(
            next_status(&notify, "READY=1").await,
            "READY=1\nSTATUS=serving"
        );
        Daemon {
            standin,
            bin,
            served,
            addr,
            notify,
            interaction: 1,
        }
    }

    /// Asks `id` with a big question: the `accepted` line, or the error.
    async fn ask(&self, id: &str, n: usize) -> (Client, Value) {
        let mut c = Client::connect(&self.bin.socket()).await.unwrap();
        c.send_json(&ask_line(id, &big_question(n))).await.unwrap();
        let ev = recv(&mut c, "the reply to an ask").await;
        (c, ev)
    }

    /// Answers `rid` from the terminal with `text`: whether it was acknowledged (else it was
    /// refused as not saved).
    async fn answer(&self, rid: &str, text: &str) -> bool {
        let reply = Client::connect(&self.bin.socket())
            .await
            .unwrap()
            .call_json(&json!({"op": "answer", "request_id": rid, "question": "q",
                               "custom": text}))
            .await
            .unwrap();
        if reply["event"] == "answer_accepted" {
            return true;
        }
        assert!(
            reply["message"]
                .as_str()
                .unwrap_or("")
                .contains("could not be saved"),
            "{reply}"
        );
        false
    }

    /// Clicks "No, keep them" on message `msg`: whether it was acknowledged with the final
    /// message (else it was refused as not saved).
    async fn click(&mut self, msg: u64) -> bool {
        let m = message(&self.standin, msg);
        let cb = click_no(&self.standin, &m, self.interaction).await;
        self.interaction += 1;
        if cb["type"] == 7 {
            final_state(&cb);
            return true;
        }
        assert!(
            ephemeral(&cb).contains("could not be saved, try again"),
            "{cb}"
        );
        false
    }

    /// `askrelay health`: its exit code and output.
    async fn health(&self) -> (i32, String) {
        let (code, out, err) = self.bin.run(&["health"]).await;
        (code, format!("{out}{err}"))
    }
}

/// A request an agent waits on, with the message its question was posted as.
type Waiting = (String, Client, Option<u64>);

/// Fills the disk with asks, answers and clicks until each kind of write was refused: leaves
/// the daemon about 400 KiB beside the `filler` file, whose own writes fill the rest. Returns
/// the requests still waiting for an answer.
async fn fill(disk: &Tmpfs, d: &mut Daemon, acks: &mut Acks) -> Vec<Waiting> {
    let filler = disk.at.join("filler");
    let room = disk.free_bytes().saturating_sub(400 * 1024);
    std::fs::write(&filler, vec![0u8; room as usize]).unwrap();

    let mut waiting: Vec<Waiting> = Vec::new();
    for n in 0..600usize {
        let id = format!("f{n}");
        let (c, ev) = d.ask(&id, n).await;
        match ev["event"].as_str() {
            Some("accepted") => {
                acks.accepted.push(id.clone());
                waiting.push((id, c, message_id(&ev)));
            }
            _ => {
                assert_eq!(ev["code"], "INTERNAL", "{ev}");
                acks.refused.0 += 1;
            }
        }
        // Every other turn, the oldest waiting request is answered: from the terminal, or by
        // a click on its message.
        if n % 2 == 1 && !waiting.is_empty() {
            let (rid, mut agent, msg) = waiting.remove(0);
            let by_terminal = n % 4 == 1 || msg.is_none();
            let acked = if by_terminal {
                let text = format!("{rid}: {}", "t".repeat(2000));
                let acked = d.answer(&rid, &text).await;
                if acked {
                    acks.terminal.insert(rid.clone(), text);
                } else {
                    acks.refused.1 += 1;
                }
                acked
            } else {
                let acked = d.click(msg.unwrap()).await;
                if acked {
                    acks.clicked.push(rid.clone());
                } else {
                    acks.refused.2 += 1;
                }
                acked
            };
            if acked {
                let ev = expect_event(&mut agent, "answered").await;
                acks.answered.insert(rid.clone(), ev["result"].to_string());
            } else {
                // Still waiting: answered again after space is freed.
                waiting.push((rid, agent, msg));
            }
        }
        if acks.refused.0 >= 3 && acks.refused.1 >= 1 && acks.refused.2 >= 1 {
            break;
        }
    }
    let (asks, answers, clicks) = acks.refused;
    assert!(
        asks >= 3 && answers >= 1 && clicks >= 1,
        "the disk never filled: refused {asks} asks, {answers} answers, {clicks} clicks; \
         accepted {}",
        acks.accepted.len()
    );
    assert!(
        !acks.terminal.is_empty() && !acks.clicked.is_empty(),
        "some answers were taken before the disk filled"
    );
    waiting
}

/// Health on every surface says the store fails because the disk is full (SQLite: the
/// store's own disk).
async fn assert_degraded(d: &Daemon) {
    let (code, out) = d.health().await;
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("status: degraded"), "{out}");
    assert!(out.contains("disk holding the database is full"), "{out}");
    let (status, body) = healthz(&d.addr).await;
    assert_eq!(status, 503, "{body}");
    let h: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(h["failing"], json!(["store"]), "{h}");
}

/// Answers every waiting request (a click on its message, or from the terminal when it has
/// none), each acknowledged now.
async fn answer_all(d: &mut Daemon, waiting: Vec<Waiting>, acks: &mut Acks) {
    for (rid, mut agent, msg) in waiting {
        match msg {
            Some(m) => {
                assert!(d.click(m).await, "{rid}: a click after space was freed");
                acks.clicked.push(rid.clone());
            }
            None => {
                assert!(
                    d.answer(&rid, "late").await,
                    "{rid}: an answer after space was freed"
                );
                acks.terminal.insert(rid.clone(), "late".into());
            }
        }
        let ev = expect_event(&mut agent, "answered").await;
        acks.answered.insert(rid, ev["result"].to_string());
    }
}

/// SIGKILL: what was acknowledged is what an outside reader finds in the database at `url`.
/// Then what the restarted daemon serves: every acknowledged answer comes back to its agent at
/// once, and nothing acknowledged is pending again.
async fn kill_and_check(d: Daemon, url: &str, acks: &Acks) {
    d.served.signal("-KILL").await;
    let mut child = d.served.drain();
    let _ = within("the daemon to die", child.wait()).await;
    check_stored(url, acks).await;

    let served = d.bin.serve().await;
    let (code, out, err) = d.bin.run(&["pending", "--json"]).await;
    assert_eq!(code, 0, "{err}");
    let pending: Value = serde_json::from_str(&out).unwrap();
    for r in pending.as_array().unwrap() {
        let id = r["request_id"].as_str().unwrap();
        assert!(
            !acks.answered.contains_key(id),
            "{id} was answered, and is pending again"
        );
    }
    for (id, result) in acks.answered.iter().take(5) {
        let mut c = Client::connect(&d.bin.socket()).await.unwrap();
        let n: usize = id.trim_start_matches('f').parse().unwrap_or(0);
        c.send_json(&ask_line(id, &big_question(n))).await.unwrap();
        let ev = recv(&mut c, "the stored answer on re-attach").await;
        assert_eq!(ev["event"], "answered", "{id}: {ev}");
        assert_eq!(ev["result"].to_string(), *result, "{id}");
    }
    served.terminate().await;
    assert_bodies_valid(&d.standin);
}

/// The scenario on either backend: fill the disk with asks, answers and clicks until writes
/// fail; check health while it is full (SQLite: the store's own disk); free the space and check
/// that the daemon recovers without a restart; SIGKILL it, and check every acknowledgement
/// against the database, then against the restarted daemon.
async fn fill_check_and_recover(disk: &Tmpfs, url: &str, backend: Backend) {
    let mut d = Daemon::start(url).await;
    let mut acks = Acks::default();
    let mut waiting = fill(disk, &mut d, &mut acks).await;

    // While the disk is full every health surface says the store fails. (On PostgreSQL the
    // probe's write can still fit in a page the table has, as this one does: a full
    // tablespace shows up in health only once a write needs a new page; see
    // docs/security.md.)
    if backend == Backend::Sqlite {
        assert_degraded(&d).await;
        let status = next_status(&d.notify, "systemd's STATUS= while the disk is full").await;
        assert!(
            status.starts_with(
                "STATUS=degraded; store failing: the disk holding the database is full"
            ),
            "{status}"
        );
    }

    // Space is freed: the daemon recovers with no restart.
    std::fs::remove_file(disk.at.join("filler")).unwrap();
    let (code, out) = d.health().await;
    assert_eq!(code, 0, "{out}");
    assert_eq!(healthz(&d.addr).await.0, 200);
    if backend == Backend::Sqlite {
        assert_eq!(
            next_status(&d.notify, "systemd's STATUS= once space is freed").await,
            "STATUS=serving"
        );
    }
    // The requests whose answers were refused are answered now; a new one is asked and
    // answered.
    let (c, ev) = d.ask("after", 0).await;
    assert_eq!(ev["event"], "accepted", "{ev}");
    acks.accepted.push("after".into());
    waiting.push(("after".into(), c, message_id(&ev)));
    answer_all(&mut d, waiting, &mut acks).await;
    kill_and_check(d, url, &acks).await;
}

/// The size of the database's WAL file on `disk`.
fn wal_len(disk: &Tmpfs) -> u64 {
    std::fs::metadata(disk.at.join("askrelay.db-wal"))
        .map(|m| m.len())
        .unwrap_or(0)
}

/// Makes the filler file `bytes` shorter: space an operator frees (old logs).
fn free_some(disk: &Tmpfs, bytes: u64) {
    let filler = std::fs::OpenOptions::new()
        .write(true)
        .open(disk.at.join("filler"))
        .unwrap();
    let len = filler.metadata().unwrap().len();
    filler.set_len(len - bytes).unwrap();
}

/// An operator frees only *some* space, as one does (a few old logs), not all the disk had.
/// On a small disk the whole database lives in SQLite's WAL, which is never checkpointed
/// (`wal_autocheckpoint` waits for 4 MiB) and never shrinks: before the fix, the writes after
/// space was freed appended their frames to the WAL until it had taken the freed space, and
/// every ask failed with INTERNAL from then on, until a restart. Now the store checkpoints the
/// WAL first (`PRAGMA wal_checkpoint(TRUNCATE)`), refuses writes while it cannot, says so in
/// `health`, `/healthz` and systemd's `STATUS=`, and logs when it healed; nothing acknowledged
/// is lost on the way.
#[tokio::test]
async fn after_some_space_is_freed_the_wal_is_checkpointed_and_asks_are_accepted_again() {
    const TEST: &str =
        "fulldisk::after_some_space_is_freed_the_wal_is_checkpointed_and_asks_are_accepted_again";
    let disk = match Tmpfs::mount("4m") {
        Ok(d) => d,
        Err(why) => return skip(TEST, &why),
    };
    let url = format!("sqlite://{}", disk.at.join("askrelay.db").display());
    let mut d = Daemon::start(&url).await;
    let mut acks = Acks::default();
    let mut waiting = fill(&disk, &mut d, &mut acks).await;
    assert_degraded(&d).await;
    let status = next_status(&d.notify, "systemd's STATUS= while the disk is full").await;
    assert!(
        status.starts_with("STATUS=degraded; store failing: the disk holding the database is full"),
        "{status}"
    );

    // 32 KiB freed: less than the database needs to take in the WAL's pages (it lives in the
    // WAL: some 150 KiB of pages), so the checkpoint cannot finish. The store stays degraded,
    // refuses the ask, and the WAL does not grow into the freed space.
    let wal_full = wal_len(&disk);
    free_some(&disk, 32 * 1024);
    assert_degraded(&d).await;
    let (_c, ev) = d.ask("short", 0).await;
    assert_eq!(ev["code"], "INTERNAL", "{ev}");
    assert_eq!(
        wal_len(&disk),
        wal_full,
        "the WAL grew into the space freed before it was checkpointed"
    );

    // 320 KiB more: the checkpoint goes through (in the health check, or the store's own
    // retry before it), the WAL gives its space back, and the store is healthy again.
    free_some(&disk, 320 * 1024);
    let (code, out) = d.health().await;
    assert_eq!(code, 0, "{out}");
    let line = d
        .served
        .wait_log("the disk has room again; checkpointed the WAL (")
        .await;
    let freed: u64 = line
        .split("checkpointed the WAL (")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no byte count in {line:?}"));
    assert_eq!(freed, wal_full, "{line}");
    assert!(wal_len(&disk) < wal_full / 4, "{}", wal_len(&disk));
    assert_eq!(healthz(&d.addr).await.0, 200);
    assert_eq!(
        next_status(&d.notify, "systemd's STATUS= once the WAL was checkpointed").await,
        "STATUS=serving"
    );

    // Without a restart, asks are accepted again: more of them than the 352 KiB freed could
    // have held as WAL frames (each ask appends some 74 KiB), and the answers refused while
    // the disk was full are taken now.
    for n in 1000..1006 {
        // Numbered on from the fill's asks (fewer than 600), as a re-attach gives the number.
        let id = format!("f{n}");
        let (c, ev) = d.ask(&id, n).await;
        assert_eq!(ev["event"], "accepted", "{id}, after space was freed: {ev}");
        acks.accepted.push(id.clone());
        waiting.push((id, c, message_id(&ev)));
    }
    answer_all(&mut d, waiting, &mut acks).await;
    kill_and_check(d, &url, &acks).await;
}

/// Fills the disk under `disk` to the last byte with a file of its own (a real full disk: what
/// an operator's runaway log does).
fn fill_to_the_brim(disk: &Tmpfs) {
    use std::io::Write;
    let mut f = std::fs::File::create(disk.at.join("filler")).unwrap();
    let chunk = vec![0u8; 64 * 1024];
    loop {
        match f.write(&chunk) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(nix::libc::ENOSPC) => break,
            Err(e) => panic!("filling the disk: {e}"),
        }
    }
    // What a partly written last chunk left.
    while f.write(&[0u8]).is_ok_and(|n| n == 1) {}
    assert!(disk.free_bytes() < 4096, "{} bytes free", disk.free_bytes());
}

/// Slack on a real full disk: a press is still acknowledged within Slack's 3 s, the person is
/// told their answer could not be saved, nothing settles and the agent keeps waiting; an ask
/// gets `INTERNAL`, not `accepted`. Once space is freed, the same press settles, and what was
/// acknowledged before the disk filled is all there.
#[tokio::test]
async fn on_a_full_disk_a_slack_press_is_acked_refused_and_settles_once_space_is_freed() {
    const TEST: &str =
        "fulldisk::on_a_full_disk_a_slack_press_is_acked_refused_and_settles_once_space_is_freed";
    let disk = match Tmpfs::mount("4m") {
        Ok(d) => d,
        Err(why) => return skip(TEST, &why),
    };
    let url = format!("sqlite://{}", disk.at.join("askrelay.db").display());
    let s = askrelay_testkit::slack::SlackStandIn::start().await;
    let app = App::start_with(|c| {
        crate::slack::slack_config(c, &s);
        c.database_url = url.clone();
    })
    .await;
    within("the Socket Mode connection", s.wait_connected(1)).await;
    let t = crate::slack::Slack { app, s };
    let (mut agent, _) = t.ask("full-1", &yes_no("cleanup")).await;
    let m = t.message(0).await;

    fill_to_the_brim(&disk);
    // A press: acknowledged in time, refused, nothing settled.
    let sent = t.press(&crate::slack::alice(), &m, "No, keep them").await;
    let ack = within("the ack", t.s.wait_ack(sent.envelope_id())).await;
    let took = ack.acked_at.duration_since(sent.envelope.sent_at);
    assert!(
        took < std::time::Duration::from_secs(3),
        "acked after {took:?}"
    );
    let told = t.told("U0ALICE01", "could not be saved").await;
    assert!(
        told.text
            .as_deref()
            .unwrap()
            .contains("Nothing was recorded"),
        "{told:?}"
    );
    let req = t.app.store().by_id("full-1").await.unwrap().unwrap();
    assert!(req.answers[0].is_none(), "nothing settled on a full disk");
    // An ask: refused with INTERNAL, never accepted.
    let mut c = t.app.client().await;
    c.send_json(&ask_line("full-2", &yes_no("cleanup")))
        .await
        .unwrap();
    let ev = recv(&mut c, "the ask's reply on a full disk").await;
    assert_eq!(ev["code"], "INTERNAL", "{ev}");

    // Space is freed: the same press settles, and the agent that waited gets its answer.
    std::fs::remove_file(disk.at.join("filler")).unwrap();
    let sent = t.press(&crate::slack::alice(), &m, "No, keep them").await;
    within("the ack", t.s.wait_ack(sent.envelope_id())).await;
    let ev = expect_event(&mut agent, "answered").await;
    assert_eq!(ev["result"]["answers"][0]["selected"][0], "No, keep them");
    t.outcome_of(&m).await;
    assert!(t
        .app
        .store()
        .by_id("full-2")
        .await
        .unwrap()
        .is_none_or(|r| r.status != askrelay::domain::Status::Pending));
    t.s.assert_no_violations();
}
