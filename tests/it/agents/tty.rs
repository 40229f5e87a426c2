//! A terminal for the agents' interactive UIs: what a CLI run under `script(1)` draws is fed to
//! a VT100 emulator as it comes, so a test can wait for text on the screen (an event: each chunk
//! of output wakes the waiters) and type keys, as a person at the terminal would.

use crate::harness::within;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStdin};
use tokio::sync::watch;

/// Rows and columns: what `script` is told with `stty` (see [`script_command`]).
pub const ROWS: u16 = 50;
pub const COLS: u16 = 160;

/// The `sh -c` line that runs `command` on a pseudo-terminal of [`ROWS`] × [`COLS`].
pub fn script_command(command: &str) -> String {
    format!("stty cols {COLS} rows {ROWS}; exec {command}")
}

/// The screen of a running interactive CLI, and its keyboard.
pub struct Tty {
    keys: ChildStdin,
    screen: Arc<Mutex<vt100::Parser>>,
    changed: watch::Receiver<u64>,
    reader: tokio::task::JoinHandle<()>,
}

impl Tty {
    /// Takes the child's stdout (the terminal's output); `keys` is its stdin (the keyboard).
    pub fn attach(child: &mut Child, keys: ChildStdin) -> Tty {
        let mut out = child.stdout.take().expect("stdout is piped");
        let screen = Arc::new(Mutex::new(vt100::Parser::new(
            ROWS.try_into().unwrap(),
            COLS.try_into().unwrap(),
            0,
        )));
        let (tx, changed) = watch::channel(0u64);
        let feed = screen.clone();
        let reader = tokio::spawn(async move {
            let mut buf = vec![0u8; 16 * 1024];
            let mut n_chunks = 0u64;
            while let Ok(n) = out.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                feed.lock().unwrap().process(&buf[..n]);
                n_chunks += 1;
                let _ = tx.send(n_chunks);
            }
        });
        Tty {
            keys,
            screen,
            changed,
            reader,
        }
    }

    /// What the screen shows now, row by row.
    pub fn contents(&self) -> String {
        self.screen.lock().unwrap().screen().contents()
    }

    /// Waits until the screen shows `text`; returns the screen then. Panics with the screen
    /// after the harness's wait.
    pub async fn wait_for(&mut self, text: &str) -> String {
        self.wait_until(&format!("the screen to show {text:?}"), |s| {
            s.contains(text)
        })
        .await
    }

    /// Waits until `ready` holds for the screen's contents.
    pub async fn wait_until(&mut self, what: &str, ready: impl Fn(&str) -> bool) -> String {
        match self.shows(&ready, WAIT_SCREEN).await {
            Ok(Some(s)) => s,
            Ok(None) => panic!(
                "the terminal closed before {what}; it showed:\n{}",
                self.contents()
            ),
            Err(_) => panic!(
                "waited {} s for {what}; the screen shows:\n{}",
                WAIT_SCREEN.as_secs(),
                self.contents()
            ),
        }
    }

    /// Types `keys`, again each time the screen has not shown `text` within a second, until it
    /// does; returns the screen then. For a key a prompt may drop: Codex 0.171.0 ignores a key
    /// that comes the moment its approval prompt is drawn (one typed 0.3 s later is taken), and
    /// a person would type it again too.
    pub async fn press_until(&mut self, keys: &[u8], text: &str) -> String {
        self.press_until_screen(keys, &format!("show {text:?}"), |s| s.contains(text))
            .await
    }

    /// Types `keys`, again each time the screen still shows `text` a second later, until it no
    /// longer does: for a dialog that a key closes, when the key may come too early to be
    /// taken, as with Codex's prompt in [`Tty::press_until`].
    pub async fn press_until_gone(&mut self, keys: &[u8], text: &str) -> String {
        self.press_until_screen(keys, &format!("stop showing {text:?}"), |s| {
            !s.contains(text)
        })
        .await
    }

    async fn press_until_screen(
        &mut self,
        keys: &[u8],
        what: &str,
        ready: impl Fn(&str) -> bool,
    ) -> String {
        let give_up = tokio::time::Instant::now() + WAIT_SCREEN;
        loop {
            self.send(keys).await;
            let again = std::time::Duration::from_secs(1);
            match self.shows(&ready, again).await {
                Ok(Some(s)) => return s,
                Ok(None) => panic!(
                    "the terminal closed before it would {what}; it showed:\n{}",
                    self.contents()
                ),
                Err(_) if tokio::time::Instant::now() >= give_up => panic!(
                    "typed {keys:?} for {} s and the screen did not {what}; it shows:\n{}",
                    WAIT_SCREEN.as_secs(),
                    self.contents()
                ),
                Err(_) => {}
            }
        }
    }

    /// The screen once `ready` holds for it, `None` if the terminal closed first, or an error
    /// after `limit`. Each chunk of output wakes it.
    async fn shows(
        &self,
        ready: &impl Fn(&str) -> bool,
        limit: std::time::Duration,
    ) -> Result<Option<String>, tokio::time::error::Elapsed> {
        let screen = self.screen.clone();
        let mut changed = self.changed.clone();
        tokio::time::timeout(limit, async {
            loop {
                let now = screen.lock().unwrap().screen().contents();
                if ready(&now) {
                    return Some(now);
                }
                if changed.changed().await.is_err() {
                    return None;
                }
            }
        })
        .await
    }

    /// Types `keys` (raw bytes: `b"\r"` is Enter, `b"\x1b"` Escape, `b"\x1b[B"` Down).
    pub async fn send(&mut self, keys: &[u8]) {
        within("the terminal to take the keys", async {
            self.keys.write_all(keys).await.unwrap();
            self.keys.flush().await.unwrap();
        })
        .await;
    }
}

impl Drop for Tty {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// How long a screen may take to show something (a CLI starting up on a loaded machine).
const WAIT_SCREEN: std::time::Duration = std::time::Duration::from_secs(60);
