//! A TCP connection whose reads say when their bytes arrived.
//!
//! Each read is a `recvmsg` that also asks the kernel for the software
//! receive timestamp of the newest bytes it returns (`SO_TIMESTAMPNS`). That
//! time is taken when the packet reaches the socket, not when this process
//! gets around to reading it, so a busy client (many streams, a loaded
//! machine) does not make its TTFT or chunk gaps late. The timestamp is
//! mapped onto the monotonic clock the rest of the client uses. Where the
//! kernel gives none, the read falls back to `Instant::now()`.
//!
//! On an https connection the stamped reads are those of the ciphertext;
//! [`super::tls`] decrypts it, and each plaintext byte keeps the stamp of the
//! TLS record it came in.

use std::io::{self, IoSliceMut, Write};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use nix::sys::socket::{ControlMessageOwned, MsgFlags, recvmsg, setsockopt, sockopt};
use nix::sys::time::TimeSpec;
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;

use super::tls::{Next, TlsConnect, TlsSession};
use crate::observe::read_times::{ReadTimes, Stamp, read_now};

/// Per-connection read buffer. Large, so a long-context reply or a burst of
/// chunks is taken in one read rather than throttled by the client.
const READ_BUFFER: usize = 256 * 1024;
/// How much of it is touched when the connection opens.
const PREFAULT: usize = 16 * 1024;

/// A kernel timestamp older than this (relative to the wall clock at the
/// read) is taken for a clock step, not a real delay, and ignored.
const MAX_PLAUSIBLE_AGE: Duration = Duration::from_secs(5);

pub struct StampedSocket {
    /// Which of its endpoint's connections this is (1, 2, ... in opening order).
    pub id: u64,
    /// How long opening it took (TCP handshake, setup and, for https, the
    /// TLS handshake).
    pub connect_time: Duration,
    /// The TLS handshake's part of `connect_time` (https only).
    pub tls_handshake_time: Option<Duration>,
    fd: AsyncFd<TcpStream>,
    control: Vec<u8>,
    /// Bytes of the current read (decrypted, for https); valid up to the
    /// count `read` returned.
    pub buffer: ReadBuffer,
    tls: Option<Box<TlsSession>>,
    /// The sender thread's duplicate of the descriptor, made on first use
    /// and kept: one `dup` per connection, not a `dup` and a `close` per request.
    writer: Option<std::sync::Arc<TcpStream>>,
    /// The cell's idle timeout and last-byte clock, when it has one.
    pub(crate) liveness: Option<std::sync::Arc<crate::send::liveness::Liveness>>,
}

impl StampedSocket {
    /// Opens a connection to the first of `addrs` that answers; with `tls`,
    /// completes the TLS handshake too (a rejected certificate is an error
    /// whose inner error is the `rustls::Error`).
    pub async fn connect(
        addrs: &[std::net::SocketAddr],
        id: u64,
        tls: Option<&TlsConnect>,
    ) -> io::Result<Self> {
        let began = Instant::now();
        let stream = tokio::net::TcpStream::connect(addrs).await?;
        stream.set_nodelay(true)?;
        let stream = stream.into_std()?;
        // Without timestamps the reads are stamped in user space instead.
        let _ = setsockopt(&stream, sockopt::ReceiveTimestampns, &true);
        // SAFETY: the TcpStream owns a valid, non-blocking descriptor, and
        // the AsyncFd owns the stream until the descriptor is closed with it.
        let fd = unsafe { AsyncFd::register_with_interest(stream, Interest::READABLE | Interest::WRITABLE)? };
        let mut buffer = ReadBuffer::new(READ_BUFFER)?;
        // Fault the buffer's first pages in now (those every response
        // uses), not on the reads of a measurement; the rest stay unbacked
        // until a large read needs them, so idle memory stays small.
        for page in buffer[..PREFAULT].chunks_mut(4096) {
            // SAFETY: a volatile write to an element of a live, owned slice.
            unsafe { std::ptr::write_volatile(page.as_mut_ptr(), 0) };
        }
        let mut socket = Self {
            id,
            connect_time: Duration::ZERO,
            tls_handshake_time: None,
            fd,
            control: nix::cmsg_space!(TimeSpec),
            buffer,
            tls: None,
            writer: None,
            liveness: None,
        };
        if let Some(tls) = tls {
            let handshake_began = Instant::now();
            socket.tls = Some(Box::new(TlsSession::new(tls)?));
            socket.handshake().await?;
            socket.tls_handshake_time = Some(handshake_began.elapsed());
        }
        socket.connect_time = began.elapsed();
        Ok(socket)
    }

    /// Runs the TLS handshake to its end.
    async fn handshake(&mut self) -> io::Result<()> {
        let Self { fd, control, tls, .. } = self;
        let Some(session) = tls.as_mut() else { return Ok(()) };
        loop {
            // Whatever rustls has to say goes out first: the ClientHello, the
            // Finished, or the alert that reports a rejected certificate.
            let processed = if session.has_pending() { session.process_pending() } else { Ok(()) };
            write_all_to(fd, &session.outgoing()?).await?;
            processed?;
            if !session.is_handshaking() {
                return Ok(());
            }
            if session.has_pending() {
                continue;
            }
            let (n, times) = read_stamped(fd, control, session.read_buffer()).await?;
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the server closed the connection during the TLS handshake",
                ));
            }
            session.received(n, times);
        }
    }

    /// The bytes to write for `request`: itself on plain http, the TLS
    /// records that carry it on https.
    pub fn seal<'a>(&mut self, request: &'a [u8]) -> io::Result<std::borrow::Cow<'a, [u8]>> {
        match &mut self.tls {
            None => Ok(std::borrow::Cow::Borrowed(request)),
            Some(session) => Ok(std::borrow::Cow::Owned(session.seal(request)?)),
        }
    }

    /// Whether this connection runs TLS.
    pub fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// A duplicate of the descriptor, for a thread to write on.
    pub fn duplicate(&mut self) -> io::Result<std::sync::Arc<TcpStream>> {
        if let Some(writer) = &self.writer {
            return Ok(writer.clone());
        }
        let writer = std::sync::Arc::new(self.fd.get_ref().try_clone()?);
        self.writer = Some(writer.clone());
        Ok(writer)
    }

    /// An idle keep-alive connection the server has closed (or sent
    /// something unasked on) is not worth a request. On https, TLS messages
    /// that carry no data (session tickets after the handshake) are taken in
    /// and do not count.
    pub fn closed_while_idle(&mut self) -> bool {
        let mut probe = [0u8; 1];
        let flags = MsgFlags::MSG_PEEK | MsgFlags::MSG_DONTWAIT;
        let idle = matches!(
            nix::sys::socket::recv(self.fd.get_ref().as_raw_fd(), &mut probe, flags),
            Err(nix::errno::Errno::EAGAIN)
        );
        if idle {
            return false;
        }
        let Self { fd, control, tls, .. } = self;
        let Some(session) = tls.as_mut() else { return true };
        loop {
            match session.take(&mut probe) {
                Ok(Next::ReadSocket) => {}
                Ok(Next::Plaintext(..) | Next::End(_)) | Err(_) => return true,
            }
            match receive(fd.get_ref(), session.read_buffer(), control) {
                Ok((n, kernel_time)) => {
                    let (arrived, stamp, read) = arrival(kernel_time);
                    session.received(n, ReadTimes { arrived, stamp, read });
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return false,
                Err(_) => return true,
            }
        }
    }

    /// Writes bytes as they go on the wire (see [`StampedSocket::seal`]).
    pub async fn write_all(&self, bytes: &[u8]) -> io::Result<()> {
        write_all_to(&self.fd, bytes).await
    }

    /// Reads what has arrived into `buffer[from..]`: the count (0 at end of
    /// stream) and when the bytes arrived and were read.
    pub async fn read(&mut self, from: usize) -> io::Result<(usize, ReadTimes)> {
        let Some(liveness) = self.liveness.clone() else { return self.read_any(from).await };
        let read = match liveness.idle {
            Some(idle) => tokio::time::timeout(idle, self.read_any(from))
                .await
                .unwrap_or_else(|_| Err(crate::send::liveness::idle_error(idle))),
            None => self.read_any(from).await,
        };
        if matches!(read, Ok((n, _)) if n > 0) {
            liveness.touch();
        }
        read
    }

    async fn read_any(&mut self, from: usize) -> io::Result<(usize, ReadTimes)> {
        let Self { fd, control, buffer, tls, .. } = self;
        let Some(session) = tls.as_mut() else { return read_stamped(fd, control, &mut buffer[from..]).await };
        loop {
            match session.take(&mut buffer[from..])? {
                Next::Plaintext(n, times) => return Ok((n, times)),
                Next::End(times) => return Ok((0, times.unwrap_or_else(read_now))),
                Next::ReadSocket => {
                    let (n, times) = read_stamped(fd, control, session.read_buffer()).await?;
                    session.received(n, times);
                }
            }
        }
    }
}

/// A read buffer mapped on its own (anonymous `mmap`): its pages are
/// backed only once a read touches them. From the heap, a buffer placed
/// in memory the allocator had freed would be zeroed by `calloc` and so be
/// resident in full (256 KiB per connection) before any read.
pub struct ReadBuffer {
    ptr: std::ptr::NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is owned by this value alone, like a Vec's memory.
unsafe impl Send for ReadBuffer {}
// SAFETY: shared access only reads, through `&[u8]`.
unsafe impl Sync for ReadBuffer {}

impl ReadBuffer {
    fn new(len: usize) -> io::Result<Self> {
        // SAFETY: a fresh private anonymous mapping; no existing memory is touched.
        let ptr = unsafe {
            nix::libc::mmap(
                std::ptr::null_mut(),
                len,
                nix::libc::PROT_READ | nix::libc::PROT_WRITE,
                nix::libc::MAP_PRIVATE | nix::libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == nix::libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr = std::ptr::NonNull::new(ptr.cast()).ok_or_else(|| io::Error::other("mmap returned null"))?;
        Ok(Self { ptr, len })
    }
}

impl std::ops::Deref for ReadBuffer {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: `len` bytes mapped readable (zero until written) for the value's life.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl std::ops::DerefMut for ReadBuffer {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above, writable, and `&mut self` makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for ReadBuffer {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping `new` made; no slice of it outlives `self`.
        unsafe { nix::libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

async fn write_all_to(fd: &AsyncFd<TcpStream>, mut bytes: &[u8]) -> io::Result<()> {
    while !bytes.is_empty() {
        let mut guard = fd.writable().await?;
        match guard.try_io(|stream| stream.get_ref().write(bytes)) {
            Ok(Ok(0)) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(Ok(n)) => bytes = &bytes[n..],
            Ok(Err(e)) if e.kind() == io::ErrorKind::Interrupted => {}
            Ok(Err(e)) => return Err(e),
            Err(_would_block) => {}
        }
    }
    Ok(())
}

/// One stamped read of what has arrived on the socket into `into`.
async fn read_stamped(
    fd: &AsyncFd<TcpStream>,
    control: &mut [u8],
    into: &mut [u8],
) -> io::Result<(usize, ReadTimes)> {
    let room = into.len();
    loop {
        let mut guard = fd.readable().await?;
        match guard.try_io(|stream| receive(stream.get_ref(), into, control)) {
            Ok(Ok((n, kernel_time))) => {
                // A short read emptied the socket: wait for the next
                // readiness event instead of a read that would block
                // (what tokio's own streams do).
                if n > 0 && n < room {
                    guard.clear_ready();
                }
                let (arrived, stamp, read) = arrival(kernel_time);
                return Ok((n, ReadTimes { arrived, stamp, read }));
            }
            Ok(Err(e)) if e.kind() == io::ErrorKind::Interrupted => {}
            Ok(Err(e)) => return Err(e),
            Err(_would_block) => {}
        }
    }
}

fn receive(stream: &TcpStream, into: &mut [u8], control: &mut [u8]) -> io::Result<(usize, Option<TimeSpec>)> {
    let mut iov = [IoSliceMut::new(into)];
    let msg = recvmsg::<()>(stream.as_raw_fd(), &mut iov, Some(control), MsgFlags::empty())
        .map_err(io::Error::from)?;
    let mut kernel_time = None;
    if let Ok(messages) = msg.cmsgs() {
        for message in messages {
            if let ControlMessageOwned::ScmTimestampns(time) = message {
                kernel_time = Some(time);
            }
        }
    }
    Ok((msg.bytes, kernel_time))
}

/// Maps a kernel receive time (wall clock) onto the monotonic clock: the
/// bytes arrived `age` ago, measured on the wall clock right now. Returns
/// the arrival, its clock, and the read moment.
fn arrival(kernel_time: Option<TimeSpec>) -> (Instant, Stamp, Instant) {
    let now = Instant::now();
    let (at, stamp) = kernel_arrival(kernel_time, now);
    (at, stamp, now)
}

fn kernel_arrival(kernel_time: Option<TimeSpec>, now: Instant) -> (Instant, Stamp) {
    let Some(time) = kernel_time else { return (now, Stamp::Read) };
    let Ok(wall_now) = SystemTime::now().duration_since(UNIX_EPOCH) else { return (now, Stamp::Read) };
    let (Ok(secs), Ok(nanos)) = (u64::try_from(time.tv_sec()), u32::try_from(time.tv_nsec())) else {
        return (now, Stamp::Read);
    };
    let stamped = Duration::new(secs, nanos);
    // A stamp a hair ahead of the wall clock is the two clocks read a few ns
    // apart; one far ahead or far behind is a clock step.
    if stamped > wall_now + Duration::from_millis(1) {
        return (now, Stamp::Read);
    }
    let age = wall_now.saturating_sub(stamped);
    if age > MAX_PLAUSIBLE_AGE {
        return (now, Stamp::Read);
    }
    (now.checked_sub(age).unwrap_or(now), Stamp::Kernel)
}
