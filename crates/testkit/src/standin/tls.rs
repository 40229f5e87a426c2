//! TLS for `StandInOptions::tls`: REST served on a second 127.0.0.1 port with a certificate
//! for `discord.com` signed by a throw-away CA (rcgen), accepted with tokio-rustls, so that a
//! client can talk to the stand-in as if it were discord.com and keep serenity's own rate
//! limiter on.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use tokio::sync::mpsc;

use super::{AbortOnDrop, WAIT_LIMIT};

#[derive(Clone)]
pub(super) struct TlsInfo {
    pub(super) addr: std::net::SocketAddr,
    pub(super) root_pem: String,
    _server: Arc<AbortOnDrop>,
}

/// Serves `app` over TLS on 127.0.0.1:0 with a certificate for discord.com.
pub(super) async fn start_tls(app: Router) -> TlsInfo {
    use tokio_rustls::rustls;
    let ca_key = rcgen::KeyPair::generate().expect("stand-in: CA key");
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("CA params");
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "askrelay stand-in CA");
    ca_params.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::CrlSign,
        rcgen::KeyUsagePurpose::DigitalSignature,
    ];
    let ca = rcgen::CertifiedIssuer::self_signed(ca_params, ca_key).expect("stand-in: CA cert");
    let leaf_key = rcgen::KeyPair::generate().expect("stand-in: leaf key");
    let leaf = rcgen::CertificateParams::new(vec!["discord.com".to_string()])
        .expect("leaf params")
        .signed_by(&leaf_key, &ca)
        .expect("stand-in: leaf cert");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("stand-in: TLS versions")
        .with_no_client_auth()
        .with_single_cert(
            vec![leaf.der().clone(), ca.der().clone()],
            rustls::pki_types::PrivateKeyDer::Pkcs8(leaf_key.serialize_der().into()),
        )
        .expect("stand-in: TLS config");
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("stand-in: bind 127.0.0.1:0 for TLS");
    let addr = tcp.local_addr().expect("stand-in: TLS local_addr");
    let (tx, rx) = mpsc::channel(64);
    let server = tokio::spawn(async move {
        // Handshakes run in their own tasks so that a slow one never holds up the others.
        let accept = async move {
            loop {
                let Ok((stream, peer)) = tcp.accept().await else {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                };
                let (acceptor, tx) = (acceptor.clone(), tx.clone());
                tokio::spawn(async move {
                    let hs = tokio::time::timeout(WAIT_LIMIT, acceptor.accept(stream)).await;
                    if let Ok(Ok(tls)) = hs {
                        let _ = tx.send((tls, peer)).await;
                    }
                });
            }
        };
        let serve = axum::serve(TlsListener { rx, addr }, app);
        tokio::select! {
            _ = accept => {}
            _ = serve => {}
        }
    });
    TlsInfo {
        addr,
        root_pem: ca.pem(),
        _server: Arc::new(AbortOnDrop(server)),
    }
}

struct TlsListener {
    rx: mpsc::Receiver<(
        tokio_rustls::server::TlsStream<tokio::net::TcpStream>,
        std::net::SocketAddr,
    )>,
    addr: std::net::SocketAddr,
}

impl axum::serve::Listener for TlsListener {
    type Io = tokio_rustls::server::TlsStream<tokio::net::TcpStream>;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.rx.recv().await {
            Some(conn) => conn,
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.addr)
    }
}
