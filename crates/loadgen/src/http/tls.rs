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

use super::socket::ReadTimes;

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
                Ok(n) => {
                    let times = self.last_read.expect("plaintext comes from a read");
                    return Ok(Next::Plaintext(n, times));
                }
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
