//! TLS on a stamped connection: rustls driven by hand over the socket's own
//! reads, so every read keeps its kernel receive timestamp.
//!
//! tokio-rustls would wrap the stream and hide which read brought which
//! bytes; here the socket reads ciphertext with `recvmsg` (stamped as for
//! plain http), hands it to rustls and takes the decrypted bytes out. A
//! plaintext byte carries the stamp of the read that brought the TLS record
//! it came in: when the record arrived, before its decryption. Requests are
//! encrypted before they are written ([`TlsSession::seal`]), so the sender
//! thread can still write them at their due moment on a duplicate of the
//! descriptor.

use std::io::{self, Read as _, Write as _};
use std::ops::Range;
use std::sync::Arc;

use rustls::ClientConnection;
use rustls::pki_types::ServerName;

use crate::observe::read_times::{ReadTimes, read_now};

/// Ciphertext read at once; TLS records are at most ~16 KiB each.
const CIPHERTEXT_BUFFER: usize = 64 * 1024;

/// What a connection needs to speak TLS: the configuration and the name the
/// certificate must carry (also sent as SNI when it is a domain name).
#[derive(Clone)]
pub struct TlsConnect {
    pub config: Arc<rustls::ClientConfig>,
    pub server_name: ServerName<'static>,
}

/// One connection's TLS state.
pub struct TlsSession {
    conn: ClientConnection,
    ciphertext: Vec<u8>,
    /// Read from the socket, not yet handed to rustls.
    pending: Range<usize>,
    /// The times of the read that brought the newest ciphertext.
    last_read: Option<ReadTimes>,
    /// The server closed the connection (end of stream seen).
    eof: bool,
}

/// What the session needs from its socket next.
#[derive(Debug)]
pub enum Next {
    /// Decrypted bytes were copied out: this many, stamped with these times.
    Plaintext(usize, ReadTimes),
    /// The connection ended (close_notify, or the socket closed).
    End(Option<ReadTimes>),
    /// Nothing decrypted yet: read more ciphertext from the socket.
    ReadSocket,
}

impl TlsSession {
    pub fn new(connect: &TlsConnect) -> io::Result<Self> {
        let conn =
            ClientConnection::new(connect.config.clone(), connect.server_name.clone()).map_err(tls_error)?;
        Ok(Self { conn, ciphertext: vec![0; CIPHERTEXT_BUFFER], pending: 0..0, last_read: None, eof: false })
    }

    pub fn is_handshaking(&self) -> bool {
        self.conn.is_handshaking()
    }

    /// Ciphertext rustls wants sent (handshake messages, alerts), if any.
    pub fn outgoing(&mut self) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        while self.conn.wants_write() {
            self.conn.write_tls(&mut out)?;
        }
        Ok(out)
    }

    /// The TLS records that carry `plaintext`, to be written as they are.
    pub fn seal(&mut self, plaintext: &[u8]) -> io::Result<Vec<u8>> {
        self.conn.writer().write_all(plaintext)?;
        self.outgoing()
    }

    /// Where the socket's next ciphertext read goes.
    pub fn read_buffer(&mut self) -> &mut [u8] {
        &mut self.ciphertext
    }

    /// `n` bytes of ciphertext arrived (0: the socket closed).
    pub fn received(&mut self, n: usize, times: ReadTimes) {
        self.last_read = Some(times);
        self.pending = 0..n;
        self.eof |= n == 0;
    }

    /// Takes decrypted bytes into `into`, processing pending ciphertext as
    /// needed. A rejected certificate or a broken record is an error whose
    /// inner error is the `rustls::Error`.
    pub fn take(&mut self, into: &mut [u8]) -> io::Result<Next> {
        loop {
            match self.conn.reader().read(into) {
                Ok(0) => return Ok(Next::End(self.last_read)),
                // Plaintext only comes from ciphertext a read brought.
                Ok(n) => return Ok(Next::Plaintext(n, self.last_read.unwrap_or_else(read_now))),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                // Closed without close_notify: an end like any other for
                // HTTP, whose own framing says whether the body was whole.
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(Next::End(self.last_read)),
                Err(e) => return Err(e),
            }
            if self.pending.is_empty() {
                if !self.eof {
                    return Ok(Next::ReadSocket);
                }
                // Tell rustls the stream ended; the reader then reports it.
                self.conn.read_tls(&mut io::empty())?;
                self.conn.process_new_packets().map_err(tls_error)?;
                continue;
            }
            self.process_pending()?;
        }
    }

    /// Hands pending ciphertext to rustls (one record batch at a time).
    pub fn process_pending(&mut self) -> io::Result<()> {
        let mut unread = &self.ciphertext[self.pending.clone()];
        let taken = self.conn.read_tls(&mut unread)?;
        self.pending.start += taken;
        self.conn.process_new_packets().map_err(tls_error)?;
        Ok(())
    }

    /// Whether ciphertext is still waiting to be processed.
    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }
}

/// A rustls error as an I/O error that keeps it (see `anvil_net::certificate_problem`).
pub fn tls_error(error: rustls::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, error)
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use anvil_net::TlsSettings;
    use anvil_net::test_proxy::ServerIdentity;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};

    use super::*;
    use crate::observe::read_times::Stamp;

    fn times(at: Instant) -> ReadTimes {
        ReadTimes { arrived: at, stamp: Stamp::Kernel, read: at }
    }

    /// A client session and an in-memory server that completed their handshake.
    fn connected() -> (TlsSession, rustls::ServerConnection) {
        let identity = ServerIdentity::generate().expect("certificates");
        let path = std::env::temp_dir().join(format!("anvil-loadgen-tls-unit-{}.pem", std::process::id()));
        std::fs::write(&path, &identity.ca_pem).expect("write CA");
        let settings = TlsSettings { ca_bundle: Some(path.clone()), insecure: false };
        let config = anvil_net::tls_config(&settings).expect("client config");
        std::fs::remove_file(path).ok();
        let connect = TlsConnect { config, server_name: ServerName::try_from("localhost").expect("name") };
        let mut client = TlsSession::new(&connect).expect("client session");
        let key = PrivateKeyDer::try_from(identity.key_der.clone()).expect("key");
        let cert: CertificateDer<'static> = identity.cert_der.clone();
        let server_config =
            rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()
                .expect("versions")
                .with_no_client_auth()
                .with_single_cert(vec![cert], key)
                .expect("server config");
        let mut server = rustls::ServerConnection::new(Arc::new(server_config)).expect("server session");
        let now = Instant::now();
        while client.is_handshaking() || server.is_handshaking() || server.wants_write() {
            let hello = client.outgoing().expect("client bytes");
            server.read_tls(&mut &hello[..]).expect("server reads");
            server.process_new_packets().expect("server accepts");
            let mut reply = Vec::new();
            while server.wants_write() {
                server.write_tls(&mut reply).expect("server writes");
            }
            if !reply.is_empty() {
                deliver(&mut client, &reply, times(now));
                let mut none = [0u8; 1];
                assert!(matches!(client.take(&mut none).expect("no error"), Next::ReadSocket));
            }
        }
        (client, server)
    }

    fn deliver(client: &mut TlsSession, bytes: &[u8], at: ReadTimes) {
        client.read_buffer()[..bytes.len()].copy_from_slice(bytes);
        client.received(bytes.len(), at);
    }

    #[test]
    fn plaintext_carries_the_stamp_of_the_read_that_completed_its_record() {
        let (mut client, mut server) = connected();
        server.writer().write_all(b"data: first\n\n").expect("plaintext");
        let mut ciphertext = Vec::new();
        while server.wants_write() {
            server.write_tls(&mut ciphertext).expect("records");
        }
        // The record arrives in two reads: nothing is readable after the
        // first, and the bytes carry the second read's stamp.
        let (early, late) = (Instant::now(), Instant::now() + Duration::from_millis(7));
        assert!(ciphertext.len() > 13, "the record is on the wire");
        let half = ciphertext.len() / 2;
        let mut out = [0u8; 64];
        deliver(&mut client, &ciphertext[..half], times(early));
        let next = client.take(&mut out).expect("partial record");
        assert!(matches!(next, Next::ReadSocket), "{next:?}");
        deliver(&mut client, &ciphertext[half..], times(late));
        match client.take(&mut out).expect("whole record") {
            Next::Plaintext(n, at) => {
                assert_eq!(&out[..n], b"data: first\n\n");
                assert_eq!(at.arrived, late);
            }
            _ => panic!("the completed record was not decrypted"),
        }
        // The request side: sealed records decrypt to the request.
        let sealed = client.seal(b"POST / HTTP/1.1\r\n\r\n").expect("sealed");
        server.read_tls(&mut &sealed[..]).expect("server reads");
        server.process_new_packets().expect("valid records");
        let mut request = [0u8; 64];
        let n = server.reader().read(&mut request).expect("request");
        assert_eq!(&request[..n], b"POST / HTTP/1.1\r\n\r\n");
        // close_notify, then the socket's end: the session reports the end.
        server.send_close_notify();
        let mut closing = Vec::new();
        while server.wants_write() {
            server.write_tls(&mut closing).expect("alert");
        }
        deliver(&mut client, &closing, times(late));
        assert!(matches!(client.take(&mut out).expect("clean end"), Next::End(_)));
    }

    #[test]
    fn a_certificate_from_another_ca_is_a_rustls_certificate_error() {
        let identity = ServerIdentity::generate().expect("certificates");
        let path = std::env::temp_dir().join(format!("anvil-loadgen-tls-other-{}.pem", std::process::id()));
        std::fs::write(&path, anvil_net::test_proxy::unrelated_ca_pem().expect("a CA")).expect("write CA");
        let config = anvil_net::tls_config(&TlsSettings { ca_bundle: Some(path.clone()), insecure: false })
            .expect("client config");
        std::fs::remove_file(path).ok();
        let connect = TlsConnect { config, server_name: ServerName::try_from("localhost").expect("name") };
        let mut client = TlsSession::new(&connect).expect("client session");
        let key = PrivateKeyDer::try_from(identity.key_der.clone()).expect("key");
        let server_config =
            rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()
                .expect("versions")
                .with_no_client_auth()
                .with_single_cert(vec![identity.cert_der.clone()], key)
                .expect("server config");
        let mut server = rustls::ServerConnection::new(Arc::new(server_config)).expect("server session");
        let hello = client.outgoing().expect("hello");
        server.read_tls(&mut &hello[..]).expect("server reads");
        server.process_new_packets().expect("server accepts");
        let mut reply = Vec::new();
        while server.wants_write() {
            server.write_tls(&mut reply).expect("server writes");
        }
        deliver(&mut client, &reply, times(Instant::now()));
        let error = loop {
            match client.take(&mut [0u8; 1]) {
                Err(error) => break error,
                Ok(Next::ReadSocket) if client.has_pending() => {}
                Ok(_) => panic!("the handshake went on with a certificate nobody vouched for"),
            }
        };
        let problem = anvil_net::certificate_problem(&error).expect("a certificate problem");
        assert!(problem.contains("UnknownIssuer"), "{problem}");
    }
}
