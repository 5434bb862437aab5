//! The reqwest client every production HTTP call of anvil uses.

use crate::error::NetError;
use crate::tls::{TlsSettings, tls_config};

/// A reqwest builder with anvil's TLS configuration for `tls` and no proxy
/// (anvil talks to servers it was told about, often on loopback, even when
/// `HTTP_PROXY` is set). Callers add their timeouts.
pub fn http_client_builder(tls: &TlsSettings) -> Result<reqwest::ClientBuilder, NetError> {
    let config = tls_config(tls)?;
    Ok(reqwest::Client::builder().no_proxy().use_preconfigured_tls((*config).clone()))
}

/// [`http_client_builder`], built.
pub fn http_client(tls: &TlsSettings) -> Result<reqwest::Client, NetError> {
    Ok(http_client_builder(tls)?.build()?)
}
