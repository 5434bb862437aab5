//! anvil-net: the one place anvil configures TLS and builds HTTP clients.
//!
//! Every production HTTP client of the workspace — reqwest for warm-up,
//! readiness probes, metrics scrapes and checks, the load generator's own
//! HTTP/1.1 client for measured requests — takes its TLS configuration from
//! [`tls_config`]: rustls with the *ring* crypto provider, the Mozilla roots
//! compiled in (`webpki-roots`, so a result does not depend on the CA store of
//! the machine that ran it) plus an optional `ca-bundle`, or no verification
//! at all with `tls-insecure`. An earlier attempt at https failed because each
//! crate built its own reqwest client and none had a crypto provider.

mod error;
mod http_client;
mod insecure;
#[cfg(feature = "test-proxy")]
pub mod test_proxy;
mod tls;

pub use error::NetError;
pub use http_client::{http_client, http_client_builder};
pub use tls::{TlsSettings, certificate_problem, check_ca_bundle, install_crypto_provider, tls_config};
