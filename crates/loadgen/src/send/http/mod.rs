//! The load generator's own HTTP/1.1 client for streamed responses.
//!
//! Why not a general HTTP client: a measurement client has to stamp every
//! read with the time its bytes arrived and spend as little CPU per chunk as
//! it can, so that thousands of chunks a second across hundreds of streams
//! neither skew the timings nor fight the engine for the machine. Here one
//! task owns one connection: a `recvmsg` brings the bytes *and* the kernel's
//! receive timestamp (see [`socket`]), the chunked framing and the SSE
//! parser run on the read buffer in place, and no byte crosses a channel or
//! a task. Response heads are parsed by `httparse`. https endpoints run
//! TLS (rustls, configured by `anvil-net`) over the same stamped reads, see
//! [`tls`].

mod chunked;
mod endpoint;
mod payload;
#[cfg(test)]
mod proptests;
mod response;
mod socket;
mod tls;

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::observe::failure::FailureClass;
use crate::observe::sse::SseParser;
use crate::observe::stream::StreamObservation;
use crate::send::sender::{SendJob, SendQueue, Sent};
use crate::workload::spec::Api;
pub use endpoint::Endpoint;
pub use payload::Payload;
use response::{Body, Head, parse_head};
use socket::StampedSocket;

/// After the stream's end marker, how long to wait for the rest of the body
/// (the terminating chunk) so the connection can carry the next request.
const DRAIN_GRACE: Duration = Duration::from_secs(1);

/// Most of an error response's body kept for the failure's detail.
const ERROR_BODY_CAP: usize = 4096;

/// How an exchange left its connection.
enum Ending {
    /// The response ended by its framing and the server keeps the connection.
    Reusable(StampedSocket),
    Closed,
    /// A pooled connection failed before a byte of response came back: the
    /// server had closed it while idle, and the request never reached it.
    Stale,
}

/// Sends one streaming request and observes it until the stream ends, an
/// error occurs, or `timeout` elapses. Returns the observation and when the
/// request ended.
pub async fn execute(
    endpoint: &Endpoint,
    api: Api,
    payload: Payload<'_>,
    timeout: Duration,
) -> (StreamObservation, Instant) {
    let request = endpoint.request(payload);
    send_now(endpoint, api, &request, timeout, false).await
}

/// [`execute`], sent at `due` by the sender thread: the connection is taken
/// or opened first, so only the write happens at the due moment. Falls back
/// to sending from here if the thread is gone. With `connect_in_timing`, a
/// request that finds no idle connection waits for `due` and connects then,
/// inside its timings (connection setup measured on purpose).
pub async fn execute_at(
    endpoint: &Endpoint,
    api: Api,
    payload: Payload<'_>,
    timeout: Duration,
    queue: &SendQueue,
    due: Instant,
    connect_in_timing: bool,
) -> (StreamObservation, Instant) {
    let request: Arc<[u8]> = Arc::from(endpoint.request(payload));
    let pooled = endpoint.take_idle();
    let reused = pooled.is_some();
    if !reused && connect_in_timing {
        tokio::time::sleep_until(due.into()).await;
        return send_now(endpoint, api, &request, timeout, false).await;
    }
    let socket = match pooled {
        Some(socket) => socket,
        None => {
            let connected = tokio::time::timeout(timeout, endpoint.connect()).await;
            match connected.unwrap_or_else(|_| Err(std::io::ErrorKind::TimedOut.into())) {
                Ok(socket) => socket,
                Err(e) => {
                    let mut obs = StreamObservation::new(api, Instant::now(), unix_ns_now());
                    obs.fail(FailureClass::Connect, endpoint.connect_failure(&e));
                    return (obs, Instant::now());
                }
            }
        }
    };
    let mut socket = socket;
    // On https the request is encrypted now, so the thread writes records.
    let wire: Arc<[u8]> = match socket.seal(&request) {
        Ok(std::borrow::Cow::Borrowed(_)) => request.clone(),
        Ok(std::borrow::Cow::Owned(records)) => Arc::from(records),
        Err(e) => {
            let mut obs = StreamObservation::new(api, Instant::now(), unix_ns_now());
            obs.fail(FailureClass::Disconnect, format!("encrypting the request: {e}"));
            return (obs, Instant::now());
        }
    };
    let (done, reply) = tokio::sync::oneshot::channel();
    let sent = match socket.duplicate() {
        Ok(duplicate) => {
            let job = SendJob { due, socket: duplicate, bytes: wire.clone(), done };
            match queue.send(job) {
                Ok(()) => reply.await.ok(),
                Err(_) => None,
            }
        }
        Err(_) => None,
    };
    let Some(Sent { start, start_unix_ns, written }) = sent else {
        // A TLS session that sealed a request it never sent is out of step.
        if !socket.is_tls() {
            endpoint.keep_idle(socket);
        }
        return send_now(endpoint, api, &request, timeout, false).await;
    };
    let mut obs = StreamObservation::new(api, start, start_unix_ns);
    let ending = match written {
        Ok(n) => {
            let ended = tokio::time::timeout(timeout, converse(socket, reused, &wire[n..], &mut obs)).await;
            settle(ended, &mut obs, timeout)
        }
        Err(e) => {
            obs.fail(FailureClass::Disconnect, format!("sending the request: {e}"));
            if reused { Ending::Stale } else { Ending::Closed }
        }
    };
    match ending {
        Ending::Reusable(socket) => endpoint.keep_idle(socket),
        Ending::Stale if reused => return send_now(endpoint, api, &request, timeout, true).await,
        Ending::Stale | Ending::Closed => {}
    }
    (obs, Instant::now())
}

/// Sends from this task now; `retried` when this is the second attempt
/// after a stale pooled connection.
async fn send_now(
    endpoint: &Endpoint,
    api: Api,
    request: &[u8],
    timeout: Duration,
    mut retried: bool,
) -> (StreamObservation, Instant) {
    loop {
        // A retry goes out on a fresh connection: another pooled one may be
        // closing too (a server that closes after every response closes
        // them all), and a second stale one would fail the request.
        let pooled = if retried { None } else { endpoint.take_idle() };
        let reused = pooled.is_some();
        let mut obs = StreamObservation::new(api, Instant::now(), unix_ns_now());
        let ended = tokio::time::timeout(timeout, exchange(endpoint, pooled, request, &mut obs)).await;
        let ending = settle(ended, &mut obs, timeout);
        match ending {
            Ending::Reusable(socket) => endpoint.keep_idle(socket),
            // Some servers (llama-server) close after each stream while
            // advertising keep-alive, and the close can still be in flight
            // when the connection is reused; the request is sent once more
            // on a fresh connection, with a fresh start time.
            Ending::Stale if reused && !retried => {
                retried = true;
                continue;
            }
            Ending::Stale | Ending::Closed => {}
        }
        obs.stale_connection_retries = u32::from(retried);
        return (obs, Instant::now());
    }
}

/// How an exchange run under the request's timeout ended.
fn settle(
    ended: Result<Ending, tokio::time::error::Elapsed>,
    obs: &mut StreamObservation,
    timeout: Duration,
) -> Ending {
    match ended {
        Ok(ending) => ending,
        Err(_) => {
            if !obs.done {
                obs.fail(
                    FailureClass::Timeout,
                    format!("no complete response within {} ms", timeout.as_millis()),
                );
            }
            Ending::Closed
        }
    }
}

async fn exchange(
    endpoint: &Endpoint,
    pooled: Option<StampedSocket>,
    request: &[u8],
    obs: &mut StreamObservation,
) -> Ending {
    let reused = pooled.is_some();
    let mut socket = match pooled {
        Some(socket) => socket,
        None => match endpoint.connect().await {
            Ok(socket) => socket,
            Err(e) => {
                obs.fail(FailureClass::Connect, endpoint.connect_failure(&e));
                return Ending::Closed;
            }
        },
    };
    let wire = match socket.seal(request) {
        Ok(wire) => wire,
        Err(e) => {
            obs.fail(FailureClass::Disconnect, format!("encrypting the request: {e}"));
            return Ending::Closed;
        }
    };
    converse(socket, reused, &wire, obs).await
}

/// Sends what is left of the request as it goes on the wire (`unsent`:
/// TLS records on https) and reads the response: its head, then its
/// stream of events until the end marker and the end of the body.
async fn converse(
    mut socket: StampedSocket,
    reused: bool,
    unsent: &[u8],
    obs: &mut StreamObservation,
) -> Ending {
    let broken_before_response = if reused { Ending::Stale } else { Ending::Closed };
    obs.connection_id = socket.id;
    obs.connect_time = (!reused).then_some(socket.connect_time);
    if let Err(e) = socket.write_all(unsent).await {
        obs.fail(FailureClass::Disconnect, format!("sending the request: {e}"));
        return broken_before_response;
    }
    let (head, unread, at) = match read_head(&mut socket, reused, obs).await {
        Ok(read) => read,
        Err(ending) => return ending,
    };
    obs.http_status = Some(head.status);
    let mut body = head.body;
    if !(200..300).contains(&head.status) {
        let text = error_body(&mut socket, &mut body, unread).await;
        let shown: String = text.chars().take(300).collect();
        // 429 and 503 are the server refusing load, not failing at it.
        let class =
            if matches!(head.status, 429 | 503) { FailureClass::Rejected } else { FailureClass::HttpStatus };
        obs.fail(class, format!("HTTP {}: {shown}", head.status));
        return Ending::Closed;
    }
    let Some(stream) = read_stream(&mut socket, &mut body, unread, at, obs).await else {
        return Ending::Closed;
    };
    if !obs.done {
        obs.end = Some(stream.last_bytes);
        let detail = if stream.closed_early {
            "connection closed before the response ended"
        } else if stream.pending_bytes > 0 {
            "stream ended in the middle of an event"
        } else {
            "stream ended without its end marker"
        };
        obs.fail(FailureClass::Disconnect, detail);
        return Ending::Closed;
    }
    if body.is_complete() && head.keep_alive { Ending::Reusable(socket) } else { Ending::Closed }
}

/// Reads until the response head parses: the head, the range of the
/// buffer after it (the body's first bytes, read with it), and when those
/// bytes arrived. `Err`: how the connection ends, the failure noted in `obs`
/// (a reused connection broken before any byte of response is stale).
async fn read_head(
    socket: &mut StampedSocket,
    reused: bool,
    obs: &mut StreamObservation,
) -> Result<(Head, std::ops::Range<usize>, Instant), Ending> {
    let broken_before_response = || if reused { Ending::Stale } else { Ending::Closed };
    let mut filled = 0;
    loop {
        let (n, at) = match socket.read(filled).await {
            Ok((0, ..)) if filled == 0 => {
                obs.fail(FailureClass::Disconnect, "connection closed before the response");
                return Err(broken_before_response());
            }
            Ok((0, ..)) => {
                obs.fail(FailureClass::Disconnect, "connection closed in the middle of the response head");
                return Err(Ending::Closed);
            }
            Ok((n, times)) => {
                obs.note_read(times);
                (n, times.arrived)
            }
            // The server took the request and went quiet: not a stale
            // connection to retry on (that would send it twice).
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                obs.fail(FailureClass::Stalled, format!("waiting for the response: {e}"));
                return Err(Ending::Closed);
            }
            Err(e) if filled == 0 => {
                obs.fail(FailureClass::Disconnect, format!("reading the response: {e}"));
                return Err(broken_before_response());
            }
            Err(e) => {
                obs.fail(FailureClass::Disconnect, format!("reading the response head: {e}"));
                return Err(Ending::Closed);
            }
        };
        filled += n;
        match parse_head(&socket.buffer[..filled]) {
            Ok(Some((head, len))) => return Ok((head, len..filled, at.max(obs.start))),
            Ok(None) if filled == socket.buffer.len() => {
                obs.fail(FailureClass::MalformedStream, format!("response head longer than {filled} bytes"));
                return Err(Ending::Closed);
            }
            Ok(None) => {}
            Err(e) => {
                obs.fail(FailureClass::MalformedStream, e.to_string());
                return Err(Ending::Closed);
            }
        }
    }
}

/// How a successful response's body ended, for the check that its stream
/// was whole.
struct StreamRead {
    /// The server closed the connection before the body's framing ended.
    closed_early: bool,
    /// When the last bytes arrived.
    last_bytes: Instant,
    /// Bytes of an event the parser was still waiting to complete.
    pending_bytes: usize,
}

/// Decodes the body from `unread` on, feeding each event to `obs` stamped
/// with its read's arrival (`at`, never running backwards), until the body
/// is complete or the connection closes; after the end marker, waits
/// [`DRAIN_GRACE`] at most for the rest. `None`: the connection is done
/// for (a failure noted in `obs`, or no rest within the grace).
async fn read_stream(
    socket: &mut StampedSocket,
    body: &mut Body,
    mut unread: std::ops::Range<usize>,
    mut at: Instant,
    obs: &mut StreamObservation,
) -> Option<StreamRead> {
    let mut parser = SseParser::new();
    let mut closed_early = false;
    let mut last_bytes = at;
    loop {
        let bytes = &socket.buffer[unread.clone()];
        if let Err(e) = body.decode(bytes, |data| parser.feed(data, |event| obs.on_event(event, at))) {
            obs.fail(FailureClass::MalformedStream, e.to_string());
            return None;
        }
        if obs.failure.is_some() {
            return None;
        }
        if body.is_complete() {
            break;
        }
        let read = if obs.done {
            match tokio::time::timeout(DRAIN_GRACE, socket.read(0)).await {
                Ok(read) => read,
                Err(_) => return None,
            }
        } else {
            socket.read(0).await
        };
        match read {
            Ok((0, ..)) => {
                closed_early = !matches!(body, Body::UntilClose);
                break;
            }
            Ok((n, times)) => {
                obs.note_read(times);
                // Stamps from different clocks must not run backwards.
                at = times.arrived.max(at);
                last_bytes = at;
                unread = 0..n;
            }
            Err(e) if obs.done => {
                let _ = e;
                return None;
            }
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                obs.fail(FailureClass::Stalled, format!("mid-stream: {e}"));
                return None;
            }
            Err(e) => {
                obs.fail(FailureClass::Disconnect, format!("stream broke: {e}"));
                return None;
            }
        }
    }
    Some(StreamRead { closed_early, last_bytes, pending_bytes: parser.pending_bytes() })
}

/// The (start of the) body of an error response, as text.
async fn error_body(
    socket: &mut StampedSocket,
    body: &mut Body,
    mut unread: std::ops::Range<usize>,
) -> String {
    let mut text = Vec::new();
    loop {
        let bytes = &socket.buffer[unread];
        if body.decode(bytes, |data| text.extend_from_slice(data)).is_err()
            || body.is_complete()
            || text.len() >= ERROR_BODY_CAP
        {
            break;
        }
        match socket.read(0).await {
            Ok((n, ..)) if n > 0 => unread = 0..n,
            _ => break,
        }
    }
    String::from_utf8_lossy(&text).into_owned()
}

/// The wall clock in ns since the Unix epoch (0 if the clock is before it).
fn unix_ns_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}
