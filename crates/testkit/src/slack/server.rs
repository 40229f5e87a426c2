//! The stand-in's one 127.0.0.1 port: plain HTTP and ws:// for a client that can speak them,
//! and TLS (https:// and wss://) on the same port for one that cannot, told apart by the first
//! byte a client sends (0x16 opens a TLS handshake).
//!
//! Why TLS at all: slack-morphism's own connector (`SlackClientHyperConnector::new()`) is
//! `https_only`, speaks HTTP/2 only and trusts the platform's roots, and building an http-capable one needs
//! hyper-util and hyper-rustls as direct dependencies. With TLS here, a test can use the
//! production connector unchanged: the certificate is for 127.0.0.1 and signed by one CA per
//! test process, which [`install_test_ca`] makes the only root rustls-native-certs loads (it reads
//! `SSL_CERT_FILE`), for the HTTP client and for tokio-tungstenite's wss:// alike.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use axum::Router;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::rustls;

/// The test process's CA and the server configuration of a certificate it signed for
/// 127.0.0.1 and localhost: made once, shared by every stand-in of the process.
struct Tls {
    config: Arc<rustls::ServerConfig>,
    ca_pem: String,
}

static TLS: OnceLock<Tls> = OnceLock::new();
static CA_FILE: OnceLock<PathBuf> = OnceLock::new();

fn tls() -> &'static Tls {
    TLS.get_or_init(|| {
        let ca_key = rcgen::KeyPair::generate().expect("slack stand-in: CA key");
        let mut ca_params =
            rcgen::CertificateParams::new(Vec::<String>::new()).expect("slack stand-in: CA");
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "askrelay Slack stand-in CA");
        ca_params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::CrlSign,
            rcgen::KeyUsagePurpose::DigitalSignature,
        ];
        let ca = rcgen::CertifiedIssuer::self_signed(ca_params, ca_key)
            .expect("slack stand-in: CA certificate");
        let leaf_key = rcgen::KeyPair::generate().expect("slack stand-in: leaf key");
        // rcgen makes "127.0.0.1" an IP address SAN, which rustls matches for an IP URL.
        let leaf =
            rcgen::CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
                .expect("slack stand-in: leaf params")
                .signed_by(&leaf_key, &ca)
                .expect("slack stand-in: leaf certificate");
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("slack stand-in: TLS versions")
            .with_no_client_auth()
            .with_single_cert(
                vec![leaf.der().clone(), ca.der().clone()],
                rustls::pki_types::PrivateKeyDer::Pkcs8(leaf_key.serialize_der().into()),
            )
            .expect("slack stand-in: TLS config");
        // slack-morphism's connector (hyper-rustls, `enable_http2` alone) offers only h2;
        // tungstenite offers nothing and speaks HTTP/1.1. axum serves both.
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Tls {
            config: Arc::new(config),
            ca_pem: ca.pem(),
        }
    })
}

/// The PEM of the CA that signed the stand-in's certificate (one per test process).
pub fn test_ca_pem() -> String {
    tls().ca_pem.clone()
}

/// Makes the stand-ins' CA the only root that rustls-native-certs loads in this process, by
/// writing it to `target/slack-standin-ca-PID.pem` and pointing `SSL_CERT_FILE` at that file,
/// once per process; returns the file. After this, slack-morphism's `SlackClientHyperConnector::new()`
/// (made afterwards) and its Socket Mode client reach the stand-in over https:// and wss://.
///
/// The variable is set once and never changed again, before the first connector that needs it
/// is made; nothing else in askrelay's tests sets the environment of the test process. Only
/// clients that load the platform's roots are affected (reqwest and sqlx use webpki-roots).
pub fn install_test_ca() -> PathBuf {
    CA_FILE
        .get_or_init(|| {
            // This crate is crates/testkit in the repository; target/ is the repository's.
            let target = Path::new(env!("CARGO_MANIFEST_DIR"))
                .ancestors()
                .nth(2)
                .unwrap_or(Path::new("."))
                .join("target");
            let _ = std::fs::create_dir_all(&target);
            remove_stale_ca_files(&target);
            let path = target.join(format!("slack-standin-ca-{}.pem", std::process::id()));
            std::fs::write(&path, test_ca_pem()).expect("slack stand-in: write the CA file");
            std::env::set_var("SSL_CERT_FILE", &path);
            path
        })
        .clone()
}

/// Removes the CA files of test processes that have ended, so that `target/` does not collect
/// one per run. Where `/proc` does not list processes, nothing is removed.
fn remove_stale_ca_files(target: &Path) {
    if !Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(target) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let pid = name
            .to_str()
            .and_then(|n| n.strip_prefix("slack-standin-ca-"))
            .and_then(|n| n.strip_suffix(".pem"))
            .and_then(|n| n.parse::<u32>().ok());
        if let Some(pid) = pid {
            if !Path::new(&format!("/proc/{pid}")).exists() {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

/// Serves `plain` to connections that start in clear text and `tls` to those that open a TLS
/// handshake, all accepted on `listener`.
pub(super) async fn serve(listener: TcpListener, plain: Router, tls_app: Router) {
    let addr = listener.local_addr().expect("slack stand-in: local_addr");
    let (plain_tx, plain_rx) = mpsc::channel::<TcpStream>(64);
    let (tls_tx, tls_rx) = mpsc::channel(64);
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::clone(&tls().config));
    let accept = async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                // Out of file descriptors, say: let the others finish and try again.
                tokio::task::yield_now().await;
                continue;
            };
            let (acceptor, plain_tx, tls_tx) = (acceptor.clone(), plain_tx.clone(), tls_tx.clone());
            // Each connection is sorted in a task of its own, so that a client that connects
            // and says nothing holds up no one. No timer: under a paused tokio clock, a timeout
            // here would fire as soon as the runtime idles on I/O and cut a client off.
            tokio::spawn(async move {
                let mut first = [0u8; 1];
                if !matches!(stream.peek(&mut first).await, Ok(1)) {
                    return;
                }
                if first[0] == 0x16 {
                    if let Ok(tls) = acceptor.accept(stream).await {
                        let _ = tls_tx.send(tls).await;
                    }
                } else {
                    let _ = plain_tx.send(stream).await;
                }
            });
        }
    };
    let plain = axum::serve(ChannelListener { rx: plain_rx, addr }, plain);
    let tls = axum::serve(ChannelListener { rx: tls_rx, addr }, tls_app);
    tokio::select! {
        _ = accept => {}
        _ = plain => {}
        _ = tls => {}
    }
}

/// Connections handed over by the accept loop, as axum's listener.
struct ChannelListener<Io> {
    rx: mpsc::Receiver<Io>,
    addr: std::net::SocketAddr,
}

impl<Io> axum::serve::Listener for ChannelListener<Io>
where
    Io: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Io = Io;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.rx.recv().await {
            Some(io) => (io, self.addr),
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.addr)
    }
}
