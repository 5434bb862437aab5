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
//! The thread sleeps with 1 ns timer slack until shortly before the next
//! due job and spins to it: [`SPIN`], or a twentieth of the gap since the
//! job before when that is less (see [`crate::send::pacer`]).
//!
//! With `--loadgen-workers N` there are N such threads (lanes), and jobs
//! are dealt to them in turn: each lane sees every Nth arrival, so its gaps
//! are N times longer and one slow write delays only its own lane.

use std::collections::BinaryHeap;
use std::io::{self, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio::sync::oneshot;

use crate::send::pacer::SPIN;

/// One request to send at `due`.
pub struct SendJob {
    pub due: Instant,
    /// The connection's duplicate descriptor for this thread (made once per
    /// connection, see `StampedSocket::duplicate`); shared, so a request
    /// dropped while its job waits cannot let the number be reused.
    pub socket: Arc<TcpStream>,
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

/// What the thread is doing, so a new job wakes it only when it must.
#[derive(Clone, Copy)]
enum Sleep {
    Awake,
    /// Asleep until this moment (then it looks at its earliest job again).
    Until(Instant),
    /// Asleep with no job.
    Idle,
}

struct State {
    waiting: BinaryHeap<Due>,
    sleep: Sleep,
    closed: bool,
}

/// One sender thread and its jobs.
struct Lane {
    state: Mutex<State>,
    thread: std::thread::Thread,
}

impl Lane {
    fn close(&self) {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).closed = true;
        self.thread.unpark();
    }
}

struct Shared {
    lanes: Vec<Arc<Lane>>,
    /// The lane the next job goes to (mod the lane count).
    next: AtomicUsize,
    handles: AtomicUsize,
}

/// Hands jobs to the sender thread. Jobs come in ahead of their time and
/// in due order, so one rarely needs the sleeping thread woken: a
/// submission wakes it only when it is idle or the job is due before the
/// thread means to wake (a wake per job cost a futex call and two context
/// switches on the client's core).
pub struct SendQueue(Arc<Shared>);

impl Clone for SendQueue {
    fn clone(&self) -> Self {
        self.0.handles.fetch_add(1, Ordering::Relaxed);
        Self(self.0.clone())
    }
}

impl Drop for SendQueue {
    fn drop(&mut self) {
        if self.0.handles.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.lanes.iter().for_each(|lane| lane.close());
        }
    }
}

impl SendQueue {
    /// Queues `job`; it comes back if the thread is gone.
    pub fn send(&self, job: SendJob) -> Result<(), SendJob> {
        let turn = self.0.next.fetch_add(1, Ordering::Relaxed) % self.0.lanes.len();
        let lane = &self.0.lanes[turn];
        let mut state = lane.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.closed {
            return Err(job);
        }
        let wake = match state.sleep {
            Sleep::Awake => false,
            Sleep::Idle => true,
            Sleep::Until(at) => job.due.checked_sub(SPIN).is_none_or(|t| t < at),
        };
        state.waiting.push(Due(job));
        if wake {
            state.sleep = Sleep::Awake;
            drop(state);
            lane.thread.unpark();
        }
        Ok(())
    }
}

/// How long to spin before a job due `gap` after the one before: at most
/// [`SPIN`], and at most a twentieth of the gap, so at high rates the spin
/// (on a core the runtime shares) stays a small share of it.
fn spin_for(gap: Duration) -> Duration {
    SPIN.min(gap / 20)
}

/// Starts `lanes` sender threads (at least one); `None` if one could not
/// be started (the caller then sends from the runtime). The threads end
/// once every handle to the queue is dropped and no job is left.
pub fn spawn(lanes: usize) -> Option<SendQueue> {
    let lanes = (0..lanes.max(1)).map(spawn_lane).collect::<Option<Vec<_>>>();
    let shared = Shared { lanes: lanes?, next: AtomicUsize::new(0), handles: AtomicUsize::new(1) };
    Some(SendQueue(Arc::new(shared)))
}

/// One sender thread; it waits for its lane before it looks at any job.
fn spawn_lane(number: usize) -> Option<Arc<Lane>> {
    let (tx, rx) = std::sync::mpsc::channel::<Arc<Lane>>();
    let name = format!("anvil-loadgen-sender-{number}");
    let thread = std::thread::Builder::new().name(name).spawn(move || {
        let _ = nix::sys::prctl::set_timerslack(1);
        let Ok(lane) = rx.recv() else { return };
        let mut last_due: Option<Instant> = None;
        loop {
            let mut state = lane.state.lock().unwrap_or_else(|e| e.into_inner());
            let Some(due) = state.waiting.peek().map(|d| d.0.due) else {
                if state.closed {
                    return;
                }
                state.sleep = Sleep::Idle;
                drop(state);
                std::thread::park();
                continue;
            };
            let spin = spin_for(last_due.map_or(SPIN * 20, |last| due.saturating_duration_since(last)));
            let now = Instant::now();
            if now + spin < due {
                let wake = due - spin;
                state.sleep = Sleep::Until(wake);
                drop(state);
                std::thread::park_timeout(wake - now);
                continue;
            }
            state.sleep = Sleep::Awake;
            let Some(Due(job)) = state.waiting.pop() else { continue };
            drop(state);
            while Instant::now() < job.due {
                std::hint::spin_loop();
            }
            last_due = Some(job.due);
            send(job);
        }
    });
    let thread = thread.ok()?;
    let lane = Arc::new(Lane {
        state: Mutex::new(State { waiting: BinaryHeap::new(), sleep: Sleep::Awake, closed: false }),
        thread: thread.thread().clone(),
    });
    tx.send(lane.clone()).ok()?;
    Some(lane)
}

fn send(job: SendJob) {
    let start = Instant::now();
    let start_unix_ns = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    let written = match (&*job.socket).write(&job.bytes) {
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
        let queue = spawn(1).expect("sender thread");
        let base = Instant::now() + Duration::from_millis(5);
        // Submitted out of order: sent in due order.
        let mut replies = Vec::new();
        for (offset_us, text) in [(2000u64, "c"), (0, "a"), (1000, "b")] {
            let (done, reply) = oneshot::channel();
            let due = base + Duration::from_micros(offset_us);
            let job = SendJob {
                due,
                socket: Arc::new(client.try_clone().unwrap()),
                bytes: Arc::from(text.as_bytes()),
                done,
            };
            assert!(queue.send(job).is_ok());
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

    #[tokio::test]
    async fn lanes_share_the_jobs_and_each_is_sent_at_its_time() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let queue = spawn(3).expect("sender threads");
        // Far enough ahead that no lane has taken a job when they are counted.
        let base = Instant::now() + Duration::from_millis(200);
        let mut pairs = Vec::new();
        let mut replies = Vec::new();
        // One connection per job: lanes write concurrently, so one socket's byte order is not theirs to keep.
        for k in 0..12u64 {
            let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
            client.set_nonblocking(true).unwrap();
            let (server, _) = listener.accept().unwrap();
            let (done, reply) = oneshot::channel();
            let due = base + Duration::from_micros(300 * k);
            let job = SendJob { due, socket: Arc::new(client), bytes: Arc::from(&b"x"[..]), done };
            assert!(queue.send(job).is_ok());
            replies.push((due, reply));
            pairs.push(server);
        }
        let queued: Vec<usize> =
            queue.0.lanes.iter().map(|lane| lane.state.lock().unwrap().waiting.len()).collect();
        assert_eq!(queued, [4, 4, 4], "jobs are dealt to the lanes in turn");
        drop(queue);
        for (due, reply) in replies {
            let sent = reply.await.expect("a reply");
            assert_eq!(sent.written.unwrap(), 1);
            assert!(sent.start >= due, "sent before its time");
        }
        for mut server in pairs {
            let mut got = [0u8; 1];
            server.read_exact(&mut got).unwrap();
            assert_eq!(&got, b"x");
        }
    }
}
