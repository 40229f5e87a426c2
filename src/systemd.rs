//! systemd's service notifications (`Type=notify`) through the `sd-notify` crate: one
//! datagram per message to the Unix socket named by `$NOTIFY_SOCKET`. Outside systemd the
//! variable is unset and every call does nothing.
//!
//! `READY=1` once the daemon serves, `WATCHDOG=1` at half the interval systemd asks for
//! (`WatchdogSec=`, read from `$WATCHDOG_USEC`), `STOPPING=1` when shutting down, and
//! `STATUS=` lines in between.
//!
//! sd-notify (0.5) connects to `$NOTIFY_SOCKET` as a path; an abstract name (a leading '@',
//! which sd_notify(3) allows and older systemd and some supervisors use) would become a file
//! named `@…`. Those few messages go out here instead, in the same bytes.

pub use sd_notify::NotifyState;
use std::time::Duration;

/// Where notifications go, read once from the environment.
#[derive(Debug, Clone)]
pub struct Notifier {
    socket: Option<String>,
}

impl Notifier {
    pub fn from_env() -> Notifier {
        Notifier {
            socket: std::env::var("NOTIFY_SOCKET")
                .ok()
                .filter(|s| !s.is_empty()),
        }
    }

    /// Whether systemd (or anything else) listens.
    pub fn enabled(&self) -> bool {
        self.socket.is_some()
    }

    /// Sends one message (one line per state). A failure is logged, never fatal: the daemon
    /// serves the same with or without a supervisor.
    pub fn notify(&self, states: &[NotifyState<'_>]) {
        let Some(socket) = &self.socket else { return };
        let sent = match socket.strip_prefix('@') {
            Some(name) => send_abstract(name, states),
            None => sd_notify::notify(states),
        };
        if let Err(e) = sent {
            tracing::warn!(socket = %socket, error = %e, "cannot notify systemd");
        }
    }

    /// How often to send `WATCHDOG=1`: half of `$WATCHDOG_USEC`, when it is set for this
    /// process (`$WATCHDOG_PID`, when present, must be ours).
    pub fn watchdog_interval(&self) -> Option<Duration> {
        self.socket.as_ref()?;
        sd_notify::watchdog_enabled()
            .filter(|d| !d.is_zero())
            .map(|d| d / 2)
    }
}

/// What sd-notify would send (`STATE\n` per state), to an abstract socket name.
#[cfg(target_os = "linux")]
fn send_abstract(name: &str, states: &[NotifyState<'_>]) -> std::io::Result<()> {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::{SocketAddr, UnixDatagram};
    let message: String = states.iter().map(|s| format!("{s}\n")).collect();
    let addr = SocketAddr::from_abstract_name(name.as_bytes())?;
    UnixDatagram::unbound()?.send_to_addr(message.as_bytes(), &addr)?;
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn send_abstract(_name: &str, _states: &[NotifyState<'_>]) -> std::io::Result<()> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "abstract socket names exist only on Linux",
    ))
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// The path case goes through sd-notify and is covered by
    /// `ops::systemd_hears_ready_watchdog_pings_and_stopping` (a real process with its own
    /// environment); this is the case sd-notify cannot do.
    #[test]
    fn sends_to_an_abstract_name_what_sd_notify_sends_to_a_path() {
        use std::os::linux::net::SocketAddrExt;
        use std::os::unix::net::{SocketAddr, UnixDatagram};
        let name = format!("askrelay-test-{}", std::process::id());
        let addr = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
        let rx = UnixDatagram::bind_addr(&addr).unwrap();
        let notifier = Notifier {
            socket: Some(format!("@{name}")),
        };
        notifier.notify(&[NotifyState::Ready, NotifyState::Status("serving")]);
        let mut buf = [0u8; 64];
        let n = rx.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"READY=1\nSTATUS=serving\n");
    }
}
