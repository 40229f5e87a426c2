//! systemd's service notifications (`Type=notify`), without libsystemd: one datagram per
//! message to the Unix socket named by `$NOTIFY_SOCKET` (a path, or an abstract name written
//! with a leading '@'). Outside systemd the variable is unset and every call does nothing.
//!
//! `READY=1` once the daemon serves, `WATCHDOG=1` at half the interval systemd asks for
//! (`WatchdogSec=`, read from `$WATCHDOG_USEC`), `STOPPING=1` when shutting down.

use std::os::unix::net::{SocketAddr, UnixDatagram};
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

    /// Sends one message (lines of `KEY=VALUE`). A failure is logged, never fatal: the
    /// daemon serves the same with or without a supervisor.
    pub fn notify(&self, message: &str) {
        let Some(path) = &self.socket else { return };
        if let Err(e) = send(path, message) {
            tracing::warn!(socket = %path, error = %e, "cannot notify systemd");
        }
    }

    /// How often to send `WATCHDOG=1`: half of `$WATCHDOG_USEC`, when it is set for this
    /// process (`$WATCHDOG_PID`, when present, must be ours).
    pub fn watchdog_interval(&self) -> Option<Duration> {
        self.socket.as_ref()?;
        if let Ok(pid) = std::env::var("WATCHDOG_PID") {
            if pid.trim() != std::process::id().to_string() {
                return None;
            }
        }
        let usec: u64 = std::env::var("WATCHDOG_USEC").ok()?.trim().parse().ok()?;
        (usec > 0).then(|| Duration::from_micros(usec / 2))
    }
}

fn send(path: &str, message: &str) -> std::io::Result<()> {
    let sock = UnixDatagram::unbound()?;
    let addr = match path.strip_prefix('@') {
        Some(name) => abstract_addr(name.as_bytes())?,
        None => SocketAddr::from_pathname(path)?,
    };
    sock.send_to_addr(message.as_bytes(), &addr)?;
    Ok(())
}

#[cfg(target_os = "linux")]
fn abstract_addr(name: &[u8]) -> std::io::Result<SocketAddr> {
    use std::os::linux::net::SocketAddrExt;
    SocketAddr::from_abstract_name(name)
}

#[cfg(not(target_os = "linux"))]
fn abstract_addr(_name: &[u8]) -> std::io::Result<SocketAddr> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "abstract socket names exist only on Linux",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sends_to_a_path_and_to_an_abstract_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notify");
        let rx = UnixDatagram::bind(&path).unwrap();
        send(path.to_str().unwrap(), "READY=1").unwrap();
        let mut buf = [0u8; 64];
        let n = rx.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"READY=1");

        #[cfg(target_os = "linux")]
        {
            use std::os::linux::net::SocketAddrExt;
            let name = format!("askrelay-test-{}", std::process::id());
            let addr = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
            let rx = UnixDatagram::bind_addr(&addr).unwrap();
            send(&format!("@{name}"), "WATCHDOG=1").unwrap();
            let n = rx.recv(&mut buf).unwrap();
            assert_eq!(&buf[..n], b"WATCHDOG=1");
        }
    }
}
