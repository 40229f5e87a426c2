//! A TCP proxy for fault injection: the chaos harness puts one between each cluster node and
//! PostgreSQL, and the cluster tests use it the same way, so that a test can cut a node off from
//! the database, stall the database for everyone, or drop every connection at once, without
//! touching the shared server.
//!
//! - [`Proxy::pause`] is a partition, or a stall: the proxy stops reading from both sides of
//!   every connection (and of every new one, which it accepts but does not connect upstream), so
//!   what was sent waits in the kernels' buffers and then, once those are full, in the senders.
//!   Nothing is closed and nothing is lost. Unlike a real partition, the proxy's own kernel still
//!   acknowledges segments and answers TCP keepalive probes, so only a peer's own time-outs (an
//!   application deadline, `TCP_USER_TIMEOUT`) can notice it; keepalive cannot.
//! - [`Proxy::resume`] forwards again, what was held back first.
//! - [`Proxy::cut`] closes every open connection, both sides, at once: a database restart or a
//!   NAT that forgot its flows, as a client sees it.
//!
//! [`Proxy::postgres_url`] turns a PostgreSQL URL into one that goes through the proxy.

use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// A running proxy. Clones are handles to the same proxy; it stops (closing every connection)
/// when the last handle is dropped.
#[derive(Clone)]
pub struct Proxy {
    inner: Arc<Inner>,
}

struct Inner {
    addr: SocketAddr,
    upstream: SocketAddr,
    /// Whether forwarding is paused. Every pump watches it, so a pause takes hold between two
    /// reads (or two partial writes) rather than after a whole buffer.
    paused: watch::Sender<bool>,
    /// Bumped by [`Proxy::cut`]; each connection ends when it changes. Its sender dropping (the
    /// proxy dropped) ends them too.
    cuts: watch::Sender<u64>,
    /// Connections accepted and not yet closed.
    open: Arc<AtomicUsize>,
    accept: tokio::task::JoinHandle<()>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proxy")
            .field("addr", &self.inner.addr)
            .field("upstream", &self.inner.upstream)
            .field("paused", &*self.inner.paused.borrow())
            .field("connections", &self.connections())
            .finish()
    }
}

impl Proxy {
    /// Listens on 127.0.0.1 (a port of its own) and forwards every connection to `upstream`.
    pub async fn start(upstream: SocketAddr) -> io::Result<Proxy> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let (paused, paused_rx) = watch::channel(false);
        let (cuts, cuts_rx) = watch::channel(0u64);
        let open = Arc::new(AtomicUsize::new(0));
        let accept = tokio::spawn(accept_loop(
            listener,
            upstream,
            paused_rx,
            cuts_rx,
            open.clone(),
        ));
        Ok(Proxy {
            inner: Arc::new(Inner {
                addr,
                upstream,
                paused,
                cuts,
                open,
                accept,
            }),
        })
    }

    /// A proxy in front of the server a PostgreSQL URL names, and that URL rewritten to go
    /// through it.
    pub async fn for_postgres(url: &str) -> io::Result<(Proxy, String)> {
        let proxy = Proxy::start(postgres_addr(url)?).await?;
        let through = proxy.postgres_url(url)?;
        Ok((proxy, through))
    }

    /// Where clients connect.
    pub fn addr(&self) -> SocketAddr {
        self.inner.addr
    }

    /// Where the proxy forwards to.
    pub fn upstream(&self) -> SocketAddr {
        self.inner.upstream
    }

    /// Stops forwarding, both ways, on every connection, open or new; see the module doc.
    pub fn pause(&self) {
        self.inner.paused.send_replace(true);
    }

    /// Forwards again, including what was held back.
    pub fn resume(&self) {
        self.inner.paused.send_replace(false);
    }

    /// Whether forwarding is paused.
    pub fn is_paused(&self) -> bool {
        *self.inner.paused.borrow()
    }

    /// Closes every open connection, both sides, at once. New connections are served as
    /// before (paused ones stay paused).
    pub fn cut(&self) {
        self.inner.cuts.send_modify(|n| *n += 1);
    }

    /// The connections open now (a connection closed while paused counts until the proxy
    /// notices, after [`Proxy::resume`]).
    pub fn connections(&self) -> usize {
        self.inner.open.load(Ordering::SeqCst)
    }

    /// `url` (a `postgres://` or `postgresql://` URL) with its host and port replaced by the
    /// proxy's. With `sslmode=verify-full` the server's certificate will not match 127.0.0.1.
    pub fn postgres_url(&self, url: &str) -> io::Result<String> {
        let mut parsed = url::Url::parse(url).map_err(|e| invalid(format!("not a URL: {e}")))?;
        parsed
            .set_host(Some(&self.inner.addr.ip().to_string()))
            .map_err(|e| invalid(format!("cannot set the host: {e}")))?;
        parsed
            .set_port(Some(self.inner.addr.port()))
            .map_err(|()| invalid("cannot set the port".to_owned()))?;
        Ok(parsed.to_string())
    }
}

/// The address of the server a PostgreSQL URL names (port 5432 by default).
pub fn postgres_addr(url: &str) -> io::Result<SocketAddr> {
    let parsed = url::Url::parse(url).map_err(|e| invalid(format!("not a URL: {e}")))?;
    let host = parsed
        .host_str()
        .filter(|h| !h.is_empty())
        .ok_or_else(|| invalid("the URL names no host".to_owned()))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let port = parsed.port().unwrap_or(5432);
    (host, port)
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| invalid(format!("{host} resolves to no address")))
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message)
}

async fn accept_loop(
    listener: TcpListener,
    upstream: SocketAddr,
    paused: watch::Receiver<bool>,
    cuts: watch::Receiver<u64>,
    open: Arc<AtomicUsize>,
) {
    loop {
        let Ok((client, _)) = listener.accept().await else {
            // Out of descriptors, most likely: try again shortly rather than stop serving.
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            continue;
        };
        let _ = client.set_nodelay(true);
        open.fetch_add(1, Ordering::SeqCst);
        let guard = OpenGuard(open.clone());
        let paused = paused.clone();
        let mut cuts = cuts.clone();
        cuts.mark_unchanged();
        tokio::spawn(async move {
            let _guard = guard;
            tokio::select! {
                _ = connection(client, upstream, paused) => {}
                // A cut, or the proxy dropped: dropping the streams closes both sides.
                _ = cuts.changed() => {}
            }
        });
    }
}

/// Decrements the count of open connections when a connection's task ends, however it ends.
struct OpenGuard(Arc<AtomicUsize>);

impl Drop for OpenGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn connection(client: TcpStream, upstream: SocketAddr, mut paused: watch::Receiver<bool>) {
    // A connection accepted while paused does not reach the server until the proxy resumes.
    if paused.wait_for(|p| !*p).await.is_err() {
        return;
    }
    let Ok(server) = TcpStream::connect(upstream).await else {
        return; // dropping the client closes it, as a refused connection would look
    };
    let _ = server.set_nodelay(true);
    let (client_read, client_write) = client.into_split();
    let (server_read, server_write) = server.into_split();
    // Each direction ends on its own at EOF (passing the half-close on); an error in either
    // ends both.
    let _ = tokio::try_join!(
        pump(client_read, server_write, paused.clone()),
        pump(server_read, client_write, paused),
    );
}

/// Copies bytes one way, only while not paused. Reads and writes on a TCP stream are
/// cancel-safe, so dropping one at a pause loses nothing: an unread byte stays in the kernel,
/// an unwritten one in `buf`.
async fn pump(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    mut paused: watch::Receiver<bool>,
) -> io::Result<()> {
    let gone = || io::Error::other("the proxy stopped");
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        paused.wait_for(|p| !*p).await.map_err(|_| gone())?;
        let n = tokio::select! {
            read = from.read(&mut buf) => read?,
            now = paused.wait_for(|p| *p) => { now.map_err(|_| gone())?; continue; }
        };
        if n == 0 {
            let _ = to.shutdown().await;
            return Ok(());
        }
        let mut sent = 0;
        while sent < n {
            paused.wait_for(|p| !*p).await.map_err(|_| gone())?;
            tokio::select! {
                wrote = to.write(&buf[sent..n]) => match wrote? {
                    0 => return Err(io::ErrorKind::WriteZero.into()),
                    k => sent += k,
                },
                now = paused.wait_for(|p| *p) => { now.map_err(|_| gone())?; }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// An echo server on 127.0.0.1, and how many connections it has seen end.
    async fn echo_server() -> (SocketAddr, Arc<AtomicUsize>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let ended = Arc::new(AtomicUsize::new(0));
        let counter = ended.clone();
        tokio::spawn(async move {
            loop {
                let (mut s, _) = listener.accept().await.unwrap();
                let counter = counter.clone();
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    loop {
                        match s.read(&mut buf).await {
                            Ok(0) | Err(_) => break,
                            Ok(n) => {
                                if s.write_all(&buf[..n]).await.is_err() {
                                    break;
                                }
                            }
                        }
                    }
                    counter.fetch_add(1, Ordering::SeqCst);
                });
            }
        });
        (addr, ended)
    }

    async fn read_exact_within(s: &mut TcpStream, n: usize, within: Duration) -> Option<Vec<u8>> {
        let mut buf = vec![0u8; n];
        tokio::time::timeout(within, s.read_exact(&mut buf))
            .await
            .ok()?
            .ok()?;
        Some(buf)
    }

    async fn wait_until(mut check: impl FnMut() -> bool) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while !check() {
            assert!(tokio::time::Instant::now() < deadline, "timed out");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    #[tokio::test]
    async fn bytes_pass_both_ways() {
        let (echo, _) = echo_server().await;
        let proxy = Proxy::start(echo).await.unwrap();
        let mut s = TcpStream::connect(proxy.addr()).await.unwrap();
        s.write_all(b"hello").await.unwrap();
        let got = read_exact_within(&mut s, 5, Duration::from_secs(5)).await;
        assert_eq!(got.as_deref(), Some(&b"hello"[..]));
        assert_eq!(proxy.connections(), 1);
        // A large write, more than one buffer's worth, arrives whole and in order.
        let big: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let (mut r, mut w) = s.into_split();
        let sent = big.clone();
        let writer = tokio::spawn(async move { w.write_all(&sent).await.unwrap() });
        let mut back = vec![0u8; big.len()];
        tokio::time::timeout(Duration::from_secs(10), r.read_exact(&mut back))
            .await
            .unwrap()
            .unwrap();
        writer.await.unwrap();
        assert_eq!(back, big);
        // The writer's half-close went through: the echo server closed, and so did the proxy.
        wait_until(|| proxy.connections() == 0).await;
    }

    #[tokio::test]
    async fn a_pause_holds_bytes_and_resume_delivers_them() {
        let (echo, ended) = echo_server().await;
        let proxy = Proxy::start(echo).await.unwrap();
        let mut open = TcpStream::connect(proxy.addr()).await.unwrap();
        open.write_all(b"before").await.unwrap();
        assert!(read_exact_within(&mut open, 6, Duration::from_secs(5))
            .await
            .is_some());

        proxy.pause();
        assert!(proxy.is_paused());
        open.write_all(b"held back").await.unwrap();
        // A connection made during the pause is accepted, but nothing reaches the server.
        let mut fresh = TcpStream::connect(proxy.addr()).await.unwrap();
        fresh.write_all(b"new").await.unwrap();
        assert!(read_exact_within(&mut open, 1, Duration::from_millis(500))
            .await
            .is_none());
        assert!(read_exact_within(&mut fresh, 1, Duration::from_millis(100))
            .await
            .is_none());
        wait_until(|| proxy.connections() == 2).await;
        assert_eq!(ended.load(Ordering::SeqCst), 0, "nothing is closed");

        proxy.resume();
        let got = read_exact_within(&mut open, 9, Duration::from_secs(5)).await;
        assert_eq!(got.as_deref(), Some(&b"held back"[..]));
        let got = read_exact_within(&mut fresh, 3, Duration::from_secs(5)).await;
        assert_eq!(got.as_deref(), Some(&b"new"[..]));
    }

    #[tokio::test]
    async fn a_pause_in_the_middle_of_a_stream_loses_nothing() {
        let (echo, _) = echo_server().await;
        let proxy = Proxy::start(echo).await.unwrap();
        let s = TcpStream::connect(proxy.addr()).await.unwrap();
        let (mut r, mut w) = s.into_split();
        let big: Vec<u8> = (0..2_000_000u32).map(|i| (i % 253) as u8).collect();
        let sent = big.clone();
        let writer = tokio::spawn(async move { w.write_all(&sent).await.unwrap() });
        let flapper = {
            let proxy = proxy.clone();
            tokio::spawn(async move {
                for _ in 0..20 {
                    proxy.pause();
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    proxy.resume();
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            })
        };
        let mut back = vec![0u8; big.len()];
        tokio::time::timeout(Duration::from_secs(20), r.read_exact(&mut back))
            .await
            .unwrap()
            .unwrap();
        flapper.await.unwrap();
        writer.await.unwrap();
        assert!(back == big, "the bytes came back changed");
    }

    #[tokio::test]
    async fn cut_closes_every_connection_and_new_ones_work() {
        let (echo, ended) = echo_server().await;
        let proxy = Proxy::start(echo).await.unwrap();
        let mut a = TcpStream::connect(proxy.addr()).await.unwrap();
        let mut b = TcpStream::connect(proxy.addr()).await.unwrap();
        for s in [&mut a, &mut b] {
            s.write_all(b"x").await.unwrap();
            assert!(read_exact_within(s, 1, Duration::from_secs(5))
                .await
                .is_some());
        }
        assert_eq!(proxy.connections(), 2);

        proxy.cut();
        for s in [&mut a, &mut b] {
            let mut buf = [0u8; 1];
            let read = tokio::time::timeout(Duration::from_secs(5), s.read(&mut buf))
                .await
                .expect("the client side is closed");
            assert!(matches!(read, Ok(0) | Err(_)), "got {read:?}");
        }
        wait_until(|| ended.load(Ordering::SeqCst) == 2).await; // the server side too
        wait_until(|| proxy.connections() == 0).await;

        let mut c = TcpStream::connect(proxy.addr()).await.unwrap();
        c.write_all(b"again").await.unwrap();
        let got = read_exact_within(&mut c, 5, Duration::from_secs(5)).await;
        assert_eq!(got.as_deref(), Some(&b"again"[..]));
    }

    #[tokio::test]
    async fn cut_closes_paused_connections_too() {
        let (echo, ended) = echo_server().await;
        let proxy = Proxy::start(echo).await.unwrap();
        let mut a = TcpStream::connect(proxy.addr()).await.unwrap();
        a.write_all(b"x").await.unwrap();
        assert!(read_exact_within(&mut a, 1, Duration::from_secs(5))
            .await
            .is_some());
        proxy.pause();
        proxy.cut();
        let mut buf = [0u8; 1];
        let read = tokio::time::timeout(Duration::from_secs(5), a.read(&mut buf))
            .await
            .expect("closed during the pause");
        assert!(matches!(read, Ok(0) | Err(_)));
        wait_until(|| ended.load(Ordering::SeqCst) == 1).await;
    }

    #[tokio::test]
    async fn dropping_the_proxy_closes_its_connections() {
        let (echo, ended) = echo_server().await;
        let proxy = Proxy::start(echo).await.unwrap();
        let addr = proxy.addr();
        let mut a = TcpStream::connect(addr).await.unwrap();
        a.write_all(b"x").await.unwrap();
        assert!(read_exact_within(&mut a, 1, Duration::from_secs(5))
            .await
            .is_some());
        drop(proxy);
        let mut buf = [0u8; 1];
        let read = tokio::time::timeout(Duration::from_secs(5), a.read(&mut buf))
            .await
            .expect("closed when the proxy is dropped");
        assert!(matches!(read, Ok(0) | Err(_)));
        wait_until(|| ended.load(Ordering::SeqCst) == 1).await;
    }

    #[tokio::test]
    async fn postgres_urls_go_through_the_proxy() {
        let (echo, _) = echo_server().await;
        let proxy = Proxy::start(echo).await.unwrap();
        let port = proxy.addr().port();
        assert_eq!(
            proxy
                .postgres_url("postgres://u:p%40ss@db.internal:6543/x?sslmode=disable")
                .unwrap(),
            format!("postgres://u:p%40ss@127.0.0.1:{port}/x?sslmode=disable")
        );
        assert_eq!(
            proxy
                .postgres_url("postgres://postgres@localhost/test")
                .unwrap(),
            format!("postgres://postgres@127.0.0.1:{port}/test")
        );
        assert_eq!(
            postgres_addr("postgres://postgres@127.0.0.1/test").unwrap(),
            "127.0.0.1:5432".parse().unwrap()
        );
        assert_eq!(
            postgres_addr("postgresql://u@127.0.0.1:6000/test").unwrap(),
            "127.0.0.1:6000".parse().unwrap()
        );
        assert!(postgres_addr("postgres:///test").is_err());
    }
}
