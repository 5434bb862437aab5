//! A TLS server on loopback in front of a plain http one, for tests of https
//! endpoints: a CA and a server certificate for `localhost` and `127.0.0.1`
//! are generated when it starts, and each TLS connection is relayed to the
//! upstream over its own TCP connection.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::Context as _;
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// What the proxy saw of its clients' handshakes.
#[derive(Debug, Default)]
pub struct Handshakes {
    /// Completed TLS handshakes (one per connection).
    pub count: AtomicU64,
    /// The latest one.
    pub latest: Mutex<Option<Hello>>,
}

/// What a client asked for in its handshake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hello {
    /// The SNI name.
    pub server_name: Option<String>,
    /// The ALPN protocol agreed on.
    pub alpn: Option<Vec<u8>>,
}

pub struct TlsProxy {
    addr: SocketAddr,
    ca_pem: String,
    handshakes: Arc<Handshakes>,
    task: JoinHandle<()>,
}

impl TlsProxy {
    /// Serves https on a free loopback port, relaying to `upstream`.
    pub async fn start(upstream: SocketAddr) -> anyhow::Result<Self> {
        let identity = ServerIdentity::generate()?;
        let chain: Vec<CertificateDer<'static>> = vec![identity.cert_der.clone()];
        let key = PrivateKeyDer::try_from(identity.key_der.clone()).map_err(anyhow::Error::msg)?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(chain, key)?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = TcpListener::bind("127.0.0.1:0").await.context("bind the TLS proxy")?;
        let addr = listener.local_addr()?;
        let handshakes = Arc::new(Handshakes::default());
        let seen = handshakes.clone();
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let (acceptor, seen) = (acceptor.clone(), seen.clone());
                tokio::spawn(async move {
                    let _ = client.set_nodelay(true);
                    // A client that rejects the certificate ends here.
                    let Ok(mut tls) = acceptor.accept(client).await else { return };
                    let (_, session) = tls.get_ref();
                    let hello = Hello {
                        server_name: session.server_name().map(str::to_string),
                        alpn: session.alpn_protocol().map(<[u8]>::to_vec),
                    };
                    *seen.latest.lock().unwrap_or_else(|e| e.into_inner()) = Some(hello);
                    seen.count.fetch_add(1, Ordering::Relaxed);
                    let Ok(mut server) = TcpStream::connect(upstream).await else { return };
                    let _ = server.set_nodelay(true);
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut server).await;
                });
            }
        });
        Ok(Self { addr, ca_pem: identity.ca_pem, handshakes, task })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `https://localhost:PORT`
    pub fn base_url(&self) -> String {
        format!("https://localhost:{}", self.addr.port())
    }

    /// The PEM of the CA that signed the server certificate (a `ca-bundle`).
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    pub fn handshakes(&self) -> &Handshakes {
        &self.handshakes
    }
}

impl Drop for TlsProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A server certificate for `localhost` and `127.0.0.1`, its key, and the
/// CA that signed it, made on the spot.
pub struct ServerIdentity {
    /// The CA's certificate (what a `ca-bundle` holds).
    pub ca_pem: String,
    pub cert_pem: String,
    pub cert_der: CertificateDer<'static>,
    /// The server key, PKCS#8.
    pub key_pem: String,
    pub key_der: Vec<u8>,
}

impl ServerIdentity {
    pub fn generate() -> anyhow::Result<Self> {
        let ca = certificate_authority("anvil test CA")?;
        let key = KeyPair::generate()?;
        let cert = CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])?
            .signed_by(&key, &ca)?;
        Ok(Self {
            ca_pem: ca.pem(),
            cert_pem: cert.pem(),
            cert_der: cert.der().clone(),
            key_pem: key.serialize_pem(),
            key_der: key.serialize_der(),
        })
    }
}

/// A CA of its own that signed nothing the proxy serves: a wrong `ca-bundle`.
pub fn unrelated_ca_pem() -> anyhow::Result<String> {
    Ok(certificate_authority("unrelated test CA")?.pem())
}

fn certificate_authority(name: &str) -> anyhow::Result<CertifiedIssuer<'static, KeyPair>> {
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(rcgen::DnType::CommonName, name);
    Ok(CertifiedIssuer::self_signed(params, KeyPair::generate()?)?)
}
