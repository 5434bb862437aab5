//! TLS settings of one server and the rustls client configuration they make.

use std::path::PathBuf;
use std::sync::{Arc, Once};

use crate::error::NetError;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject as _;
use serde::{Deserialize, Serialize};

use crate::insecure::AcceptAnyCertificate;

/// How to trust an https server (`ca-bundle`, `tls-insecure` in a recipe).
/// Plain `http://` servers ignore it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct TlsSettings {
    /// A PEM file of CA certificates trusted in addition to the public roots.
    pub ca_bundle: Option<PathBuf>,
    /// Accept any certificate (self-signed test servers). Nothing is verified.
    pub insecure: bool,
}

impl TlsSettings {
    /// Whether anything differs from the default (public roots only).
    pub fn is_default(&self) -> bool {
        self.ca_bundle.is_none() && !self.insecure
    }
}

/// Installs *ring* as the process's default rustls crypto provider (once;
/// later calls do nothing). anvil-net's own configurations name their
/// provider and do not need it, but a reqwest client built directly
/// (`reqwest::Client::new()`, in tests and benches) panics without one:
/// reqwest is built with `rustls-no-provider`.
pub fn install_crypto_provider() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // An error only means another provider was installed first.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// The crypto provider every rustls configuration of anvil uses.
fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    install_crypto_provider();
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A rustls client configuration for `settings`, offering only HTTP/1.1 by
/// ALPN (neither client speaks HTTP/2). Fails when the CA bundle cannot be
/// read or holds no certificate.
pub fn tls_config(settings: &TlsSettings) -> Result<Arc<rustls::ClientConfig>, NetError> {
    let builder = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(NetError::NoTlsVersion)?;
    let mut config = if settings.insecure {
        warn_insecure_once();
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyCertificate::new(provider())))
            .with_no_client_auth()
    } else {
        let mut roots = rustls::RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        if let Some(path) = &settings.ca_bundle {
            for certificate in read_bundle(path)? {
                roots
                    .add(certificate)
                    .map_err(|source| NetError::BadCertificate { path: path.clone(), source })?;
            }
        }
        builder.with_root_certificates(roots).with_no_client_auth()
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Read a CA bundle as a server's client will: a PEM file of certificates
/// that a root store accepts. Returns how many it holds.
pub fn check_ca_bundle(path: &std::path::Path) -> Result<usize, NetError> {
    let mut roots = rustls::RootCertStore::empty();
    let certificates = read_bundle(path)?;
    let count = certificates.len();
    for certificate in certificates {
        roots
            .add(certificate)
            .map_err(|source| NetError::BadCertificate { path: path.to_path_buf(), source })?;
    }
    Ok(count)
}

fn read_bundle(path: &std::path::Path) -> Result<Vec<CertificateDer<'static>>, NetError> {
    let path_buf = || path.to_path_buf();
    std::fs::metadata(path).map_err(|source| NetError::ReadBundle { path: path_buf(), source })?;
    let certificates = CertificateDer::pem_file_iter(path)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| NetError::NotPem { path: path_buf(), reason: e.to_string() })?;
    if certificates.is_empty() {
        return Err(NetError::EmptyBundle { path: path_buf() });
    }
    Ok(certificates)
}

fn warn_insecure_once() {
    static WARNED: Once = Once::new();
    WARNED.call_once(|| {
        eprintln!(
            "warning: tls-insecure is set: https server certificates are NOT verified \
             (for self-signed test servers only)"
        );
    });
}

/// When `error` (or one of its causes) is a rejected server certificate, a
/// sentence saying so and what to do; `None` for any other error.
pub fn certificate_problem(error: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut cause = Some(error);
    while let Some(current) = cause {
        if let Some(rustls::Error::InvalidCertificate(reason)) = current.downcast_ref::<rustls::Error>() {
            return Some(explain(&format!("{reason:?}")));
        }
        // io::Error wraps a rustls error without exposing it as a source.
        if let Some(io) = current.downcast_ref::<std::io::Error>()
            && let Some(rustls::Error::InvalidCertificate(reason)) =
                io.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>())
        {
            return Some(explain(&format!("{reason:?}")));
        }
        // Some wrappers (hyper's connector errors) keep the rustls error only
        // as text; its wording is rustls's own Display of the same error.
        let text = current.to_string();
        if let Some(reason) = text.strip_prefix("invalid peer certificate: ") {
            return Some(explain(reason));
        }
        cause = current.source();
    }
    None
}

fn explain(reason: &str) -> String {
    format!(
        "TLS certificate problem: the server's certificate was rejected ({reason}); \
         set `ca-bundle \"FILE\"` to the CA that signed it, or `tls-insecure #true` for a test server"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rejected_certificate_is_named_wherever_it_sits_in_the_chain() {
        let rejected = rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer);
        let io = std::io::Error::new(std::io::ErrorKind::InvalidData, rejected.clone());
        for error in [&rejected as &(dyn std::error::Error + 'static), &io] {
            let problem = certificate_problem(error).expect("a certificate problem");
            assert!(
                problem.contains("TLS certificate problem") && problem.contains("UnknownIssuer"),
                "{problem}"
            );
        }
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert_eq!(certificate_problem(&refused), None);
    }

    #[test]
    fn a_bundle_without_certificates_is_refused_with_its_name() {
        let path = std::env::temp_dir().join(format!("anvil-net-empty-{}.pem", std::process::id()));
        std::fs::write(&path, "not a certificate\n").expect("write");
        let settings = TlsSettings { ca_bundle: Some(path.clone()), insecure: false };
        let error = tls_config(&settings).expect_err("no certificate in it");
        assert!(error.to_string().contains("holds no PEM certificate"), "{error}");
        std::fs::remove_file(path).ok();
        assert!(tls_config(&TlsSettings::default()).is_ok());
    }
}
