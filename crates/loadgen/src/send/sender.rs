//! Sending open-loop requests on time from a thread that is already awake.
//!
//! Waking the client's runtime for each arrival costs ~0.1 ms on a VM, and
//! more when the runtime is busy reading other streams. So the runtime
//! prepares each request ahead of its time (body built, connection taken or
//! opened) and hands this thread a job: at the due moment the thread writes
//! the request bytes itself, on its own duplicate of the socket's
//! descriptor, and tells the runtime when it sent and how much went out.
//! The runtime then reads the response as usual.
//!
//! The thread sleeps with 1 ns timer slack until [`SPIN`] before the next
//! due job and spins to it (see [`crate::send::pacer`]).

use std::collections::BinaryHeap;
use std::io::{self, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use tokio::sync::oneshot;

use crate::send::pacer::SPIN;

/// One request to send at `due`.
pub struct SendJob {
    pub due: Instant,
    /// A duplicate of the connection's descriptor (closing it leaves the
    /// connection open); non-blocking like the original.
    pub socket: TcpStream,
    pub bytes: Arc<[u8]>,
    pub done: oneshot::Sender<Sent>,
}

/// What the thread did with a job.
pub struct Sent {
    /// Just before the write, on the monotonic clock and the wall clock.
    pub start: Instant,
    pub start_unix_ns: u64,
    /// Bytes written (the rest is the runtime's to write), or the error.
    pub written: io::Result<usize>,
}

/// Orders jobs by due time, earliest first, in a max-heap.
struct Due(SendJob);

impl PartialEq for Due {
    fn eq(&self, other: &Self) -> bool {
        self.0.due == other.0.due
    }
}
impl Eq for Due {}
impl PartialOrd for Due {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Due {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        other.0.due.cmp(&self.0.due)
    }
}

/// Starts the sender thread; `None` if it could not be started (the caller
/// then sends from the runtime). The thread ends once every handle to the
/// queue is dropped and no job is left.
pub fn spawn() -> Option<mpsc::Sender<SendJob>> {
    let (tx, rx) = mpsc::channel::<SendJob>();
    let thread = std::thread::Builder::new().name("anvil-loadgen-sender".into()).spawn(move || {
        let _ = nix::sys::prctl::set_timerslack(1);
        let mut waiting: BinaryHeap<Due> = BinaryHeap::new();
        loop {
            // Take in every job that has arrived, then wait for the earliest.
            let next_due = waiting.peek().map(|d| d.0.due);
            let received = match next_due {
                None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
                Some(due) => {
                    let now = Instant::now();
                    if now + SPIN >= due {
                        Err(RecvTimeoutError::Timeout)
                    } else {
                        rx.recv_timeout(due - now - SPIN)
                    }
                }
            };
            match received {
                Ok(job) => {
                    waiting.push(Due(job));
                    continue;
                }
                Err(RecvTimeoutError::Disconnected) if waiting.is_empty() => return,
                Err(_) => {}
            }
            let Some(Due(job)) = waiting.pop() else { continue };
            while Instant::now() < job.due {
                std::hint::spin_loop();
            }
            send(job);
        }
    });
    thread.ok().map(|_| tx)
}

fn send(job: SendJob) {
    let start = Instant::now();
    let start_unix_ns = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    let written = match (&job.socket).write(&job.bytes) {
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(0),
        other => other,
    };
    // The runtime may have given up on the request (timeout); nothing to do then.
    let _ = job.done.send(Sent { start, start_unix_ns, written });
}

#[cfg(test)]
mod tests {
    use std::io::Read;
    use std::net::TcpListener;
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn sends_each_job_at_its_time_in_due_order() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        client.set_nonblocking(true).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        let queue = spawn().expect("sender thread");
        let base = Instant::now() + Duration::from_millis(5);
        // Submitted out of order: sent in due order.
        let mut replies = Vec::new();
        for (offset_us, text) in [(2000u64, "c"), (0, "a"), (1000, "b")] {
            let (done, reply) = oneshot::channel();
            let due = base + Duration::from_micros(offset_us);
            let job =
                SendJob { due, socket: client.try_clone().unwrap(), bytes: Arc::from(text.as_bytes()), done };
            queue.send(job).unwrap();
            replies.push((due, reply));
        }
        drop(queue);
        for (due, reply) in replies {
            let sent = reply.await.expect("a reply");
            assert_eq!(sent.written.unwrap(), 1);
            assert!(sent.start >= due, "sent before its time");
        }
        let mut got = [0u8; 3];
        server.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"abc");
    }
}
