//! Deadlines on the wall clock for the stand-in's 30 s waits, kept by one thread of the process.
//!
//! Why not `tokio::time::timeout`: under a paused tokio clock (the tests of trigger expiry and
//! rate windows), the runtime jumps its clock to the next timer whenever it idles on I/O, so a
//! 30 s tokio deadline would fire at once while the daemon's request is still on the wire.

use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

struct Timers {
    pending: Mutex<Vec<(Instant, oneshot::Sender<()>)>>,
    changed: Condvar,
}

fn timers() -> &'static Timers {
    static TIMERS: OnceLock<Timers> = OnceLock::new();
    TIMERS.get_or_init(|| {
        std::thread::Builder::new()
            .name("slack-standin-deadlines".to_owned())
            .spawn(run)
            .expect("slack stand-in: the deadline thread");
        Timers {
            pending: Mutex::new(Vec::new()),
            changed: Condvar::new(),
        }
    })
}

fn run() {
    let t = timers();
    let mut pending = t.pending.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let now = Instant::now();
        // Fire what is due; forget what no one waits for any more.
        let mut i = 0;
        while i < pending.len() {
            if pending[i].0 <= now || pending[i].1.is_closed() {
                let (_, tx) = pending.swap_remove(i);
                let _ = tx.send(());
            } else {
                i += 1;
            }
        }
        let next = pending.iter().map(|p| p.0).min();
        pending = match next {
            Some(at) => {
                let wait = at.saturating_duration_since(now);
                t.changed
                    .wait_timeout(pending, wait)
                    .unwrap_or_else(|e| e.into_inner())
                    .0
            }
            None => t.changed.wait(pending).unwrap_or_else(|e| e.into_inner()),
        };
    }
}

/// Resolves once `d` has passed on the wall clock.
pub(super) fn after(d: Duration) -> oneshot::Receiver<()> {
    let (tx, rx) = oneshot::channel();
    let t = timers();
    t.pending
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push((Instant::now() + d, tx));
    t.changed.notify_one();
    rx
}
