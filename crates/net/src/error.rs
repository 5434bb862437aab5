//! What can go wrong setting up anvil's HTTP client, as a type.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum NetError {
    #[error("the ring provider supports no TLS version: {0}")]
    NoTlsVersion(rustls::Error),
    #[error("cannot read ca-bundle {path}: {source}")]
    ReadBundle { path: PathBuf, source: std::io::Error },
    #[error("ca-bundle {path} is not a PEM certificate file: {reason}")]
    NotPem { path: PathBuf, reason: String },
    #[error("ca-bundle {path} holds no PEM certificate (`-----BEGIN CERTIFICATE-----`)")]
    EmptyBundle { path: PathBuf },
    #[error("ca-bundle {path}: a certificate is invalid: {source}")]
    BadCertificate { path: PathBuf, source: rustls::Error },
    #[error("cannot build the HTTP client: {0}")]
    Client(#[from] reqwest::Error),
}
