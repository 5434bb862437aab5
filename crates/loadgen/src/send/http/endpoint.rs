//! One server's streaming endpoint: where to connect (and, for https, how
//! to trust it), the request head, and the idle keep-alive connections.

use std::net::SocketAddr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use anvil_net::{NetError, TlsSettings};
use rustls::pki_types::{InvalidDnsNameError, ServerName};
use url::{Host, Url};

use super::socket::StampedSocket;
use super::tls::TlsConnect;

/// Why a server URL gives no endpoint. The cause, where there is one, is
/// the error's source (a chain of causes shows it, as `{:#}` of `anyhow`).
#[derive(Debug, thiserror::Error)]
pub enum EndpointError {
    #[error("invalid server URL {url:?}")]
    InvalidUrl {
        url: String,
        #[source]
        source: url::ParseError,
    },
    #[error("the load generator speaks http:// and https://; {url:?} uses {scheme}://")]
    Scheme { url: String, scheme: String },
    #[error("server URL {url:?} has no host")]
    NoHost { url: String },
    #[error("{host:?} cannot be checked against a certificate")]
    ServerName {
        host: String,
        #[source]
        source: InvalidDnsNameError,
    },
    #[error("TLS for {url:?}")]
    Tls {
        url: String,
        #[source]
        source: NetError,
    },
    #[error("the API key for {url:?} contains a line break")]
    ApiKeyLineBreak { url: String },
}

/// One server's streaming endpoint and its idle keep-alive connections.
pub struct Endpoint {
    host: String,
    port: u16,
    /// The request head up to (not including) `Content-Length`.
    head_prefix: String,
    idle: Mutex<Vec<StampedSocket>>,
    /// The host's addresses, resolved once ([`Endpoint::resolve`]) so that
    /// no connect waits on a resolver (tokio resolves names on its
    /// blocking pool, a thread started on first use).
    addrs: Mutex<Vec<SocketAddr>>,
    /// Connections opened so far (the next one's id is this + 1).
    opened: AtomicU64,
    /// `Some` for https: every connection completes a TLS handshake.
    tls: Option<TlsConnect>,
    /// The cell's idle timeout and last-byte clock, given to every connection.
    liveness: Option<std::sync::Arc<crate::send::liveness::Liveness>>,
}

impl Endpoint {
    /// `url` is the full endpoint URL (`http://host:port/v1/chat/completions`).
    /// An https server is trusted as `tls` says (plain http ignores it); its
    /// certificate must name the URL's host, which is also sent as SNI when it
    /// is a domain name.
    pub fn with_tls(url: &str, api_key: Option<&str>, tls: &TlsSettings) -> Result<Self, EndpointError> {
        let parsed =
            Url::parse(url).map_err(|source| EndpointError::InvalidUrl { url: url.to_owned(), source })?;
        let https = match parsed.scheme() {
            "http" => false,
            "https" => true,
            other => return Err(EndpointError::Scheme { url: url.to_owned(), scheme: other.to_owned() }),
        };
        let host = match parsed.host() {
            Some(Host::Domain(name)) => name.to_string(),
            Some(Host::Ipv4(ip)) => ip.to_string(),
            Some(Host::Ipv6(ip)) => ip.to_string(),
            None => return Err(EndpointError::NoHost { url: url.to_owned() }),
        };
        let port = parsed.port_or_known_default().unwrap_or(80);
        let tls = match https {
            false => None,
            true => {
                let server_name = ServerName::try_from(host.clone())
                    .map_err(|source| EndpointError::ServerName { host: host.clone(), source })?;
                let config = anvil_net::tls_config(tls)
                    .map_err(|source| EndpointError::Tls { url: url.to_owned(), source })?;
                Some(TlsConnect { config, server_name })
            }
        };
        let authority = match parsed.port() {
            Some(p) => format!("{}:{p}", parsed.host_str().unwrap_or(&host)),
            None => parsed.host_str().unwrap_or(&host).to_string(),
        };
        let mut path = parsed.path().to_string();
        if let Some(query) = parsed.query() {
            path = format!("{path}?{query}");
        }
        let mut head_prefix = format!(
            "POST {path} HTTP/1.1\r\nHost: {authority}\r\nUser-Agent: anvil-loadgen/{}\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\n",
            env!("CARGO_PKG_VERSION")
        );
        if let Some(key) = api_key {
            if key.contains(['\r', '\n']) {
                return Err(EndpointError::ApiKeyLineBreak { url: url.to_owned() });
            }
            head_prefix.push_str(&format!("Authorization: Bearer {key}\r\n"));
        }
        Ok(Self {
            host,
            port,
            head_prefix,
            idle: Mutex::new(Vec::new()),
            addrs: Mutex::new(Vec::new()),
            opened: AtomicU64::new(0),
            tls,
            liveness: None,
        })
    }

    pub(super) fn request(&self, payload: super::payload::Payload<'_>) -> Vec<u8> {
        let body = payload.body;
        let mut request = Vec::with_capacity(self.head_prefix.len() + 80 + body.len());
        request.extend_from_slice(self.head_prefix.as_bytes());
        // anvil makes the ids (letters, digits, dashes): nothing to escape.
        if let Some(id) = payload.request_id {
            request.extend_from_slice(format!("X-Request-Id: {id}\r\n").as_bytes());
        }
        request.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
        request.extend_from_slice(body);
        request
    }

    /// An idle connection the server has not closed, if any.
    pub(super) fn take_idle(&self) -> Option<StampedSocket> {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        while let Some(mut socket) = idle.pop() {
            if !socket.closed_while_idle() {
                return Some(socket);
            }
        }
        None
    }

    /// Resolves the host now (again, if it was resolved before).
    pub async fn resolve(&self) -> std::io::Result<()> {
        let addrs: Vec<SocketAddr> =
            tokio::net::lookup_host((self.host.as_str(), self.port)).await?.collect();
        if addrs.is_empty() {
            return Err(std::io::Error::new(std::io::ErrorKind::NotFound, "the host has no address"));
        }
        *self.addrs.lock().unwrap_or_else(|e| e.into_inner()) = addrs;
        Ok(())
    }

    pub async fn connect(&self) -> std::io::Result<StampedSocket> {
        let mut addrs = self.addrs.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if addrs.is_empty() {
            self.resolve().await?;
            addrs = self.addrs.lock().unwrap_or_else(|e| e.into_inner()).clone();
        }
        let id = self.opened.fetch_add(1, Ordering::Relaxed) + 1;
        let mut socket = StampedSocket::connect(&addrs, id, self.tls.as_ref()).await?;
        socket.liveness = self.liveness.clone();
        Ok(socket)
    }

    /// Every connection opened from now on reads under `liveness`.
    pub fn with_liveness(
        mut self,
        liveness: Option<std::sync::Arc<crate::send::liveness::Liveness>>,
    ) -> Self {
        self.liveness = liveness;
        self
    }

    /// Closes every idle connection.
    pub fn close_idle(&self) {
        self.idle.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    /// Idle connections the server has not closed (dropping those it has).
    pub fn idle_count(&self) -> usize {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        idle.retain_mut(|socket| !socket.closed_while_idle());
        idle.len()
    }

    /// What a failed connect says; a rejected certificate says so.
    pub fn connect_failure(&self, e: &std::io::Error) -> String {
        match anvil_net::certificate_problem(e) {
            Some(problem) => format!("connecting to {}:{}: {problem}", self.host, self.port),
            None => format!("connecting to {}:{}: {e}", self.host, self.port),
        }
    }

    pub fn keep_idle(&self, socket: StampedSocket) {
        self.idle.lock().unwrap_or_else(|e| e.into_inner()).push(socket);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(url: &str, key: Option<&str>) -> String {
        let endpoint = Endpoint::with_tls(url, key, &TlsSettings::default()).expect("a valid endpoint");
        String::from_utf8(endpoint.request(super::super::payload::Payload::body(b"{}")))
            .expect("ASCII request")
    }

    #[test]
    fn request_heads() {
        let h = head("http://127.0.0.1:8000/v1/chat/completions", Some("k-1"));
        assert!(h.starts_with("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:8000\r\n"), "{h}");
        assert!(
            h.contains("Authorization: Bearer k-1\r\n") && h.ends_with("Content-Length: 2\r\n\r\n{}"),
            "{h}"
        );
        let endpoint =
            Endpoint::with_tls("http://a/v1/chat/completions", None, &TlsSettings::default()).unwrap();
        let payload = super::super::payload::Payload { body: b"{}", request_id: Some("anvil-1f-7") };
        let h = String::from_utf8(endpoint.request(payload)).unwrap();
        assert!(h.contains("\r\nX-Request-Id: anvil-1f-7\r\nContent-Length: 2\r\n"), "{h}");
        let h = head("http://[::1]:9/x/v1/completions?a=b", None);
        assert!(h.starts_with("POST /x/v1/completions?a=b HTTP/1.1\r\nHost: [::1]:9\r\n"), "{h}");
        assert!(!h.contains("Authorization"));
        let h = head("http://example.test/v1/responses", None);
        assert!(h.contains("Host: example.test\r\n"), "{h}");
    }

    #[test]
    fn what_it_refuses() {
        let ftp = Endpoint::with_tls("ftp://example.test/v1/chat/completions", None, &TlsSettings::default())
            .err()
            .expect("ftp refused");
        assert!(ftp.to_string().contains("http:// and https://"), "{ftp}");
        assert!(
            Endpoint::with_tls("https://example.test/v1/chat/completions", None, &TlsSettings::default())
                .is_ok()
        );
        let missing = TlsSettings { ca_bundle: Some("/no/such/ca.pem".into()), insecure: false };
        let error =
            Endpoint::with_tls("https://example.test/v1/completions", None, &missing).err().expect("no CA");
        // The cause is the error's source, shown in the chain a cell's error reports.
        let error = anyhow::Error::from(error);
        assert!(format!("{error:#}").contains("cannot read ca-bundle /no/such/ca.pem"), "{error:#}");
        // Plain http never reads the TLS settings.
        assert!(Endpoint::with_tls("http://example.test/v1/completions", None, &missing).is_ok());
        assert!(Endpoint::with_tls("not a url", None, &TlsSettings::default()).is_err());
        assert!(
            Endpoint::with_tls(
                "http://h:1/v1/chat/completions",
                Some("a\r\nX-Evil: 1"),
                &TlsSettings::default()
            )
            .is_err()
        );
    }
}
