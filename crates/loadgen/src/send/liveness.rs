//! Liveness: a request that receives no byte for `idle-timeout` (before the
//! response head or between its events) ends `stalled`, apart from the
//! total `timeout`; and a cell whose connections all went silent for
//! `stall-timeout` declares its server stalled and stops (the record sink
//! judges it when a request stalls: `run.rs`).
//!
//! Every read of the cell's connections stamps one shared clock, so
//! "silent" means no byte arrived on any of them, not only on the request
//! that stalled. A frozen server (SIGSTOP, a hung GPU) accepts connections
//! in the kernel and takes requests into its socket buffers, so only the
//! reads can tell.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The cell's liveness settings and the time of the last byte it received.
#[derive(Debug)]
pub struct Liveness {
    /// A request ends `stalled` after this long without a byte.
    pub idle: Option<Duration>,
    /// The server is stalled when a request stalls and no connection
    /// received a byte for this long.
    pub stall: Option<Duration>,
    base: Instant,
    /// Nanoseconds after `base` of the last byte received (0: none yet).
    last_byte_ns: AtomicU64,
}

impl Liveness {
    /// `stall` alone implies the same idle timeout per request.
    pub fn new(idle: Option<Duration>, stall: Option<Duration>) -> Liveness {
        Liveness { idle: idle.or(stall), stall, base: Instant::now(), last_byte_ns: AtomicU64::new(0) }
    }

    /// A connection received bytes now.
    pub fn touch(&self) {
        let ns = self.base.elapsed().as_nanos().min(u128::from(u64::MAX)) as u64;
        self.last_byte_ns.fetch_max(ns, Ordering::Relaxed);
    }

    /// How long no connection has received a byte (since the cell began,
    /// when none has yet).
    pub fn silence(&self) -> Duration {
        let last = Duration::from_nanos(self.last_byte_ns.load(Ordering::Relaxed));
        self.base.elapsed().saturating_sub(last)
    }

    /// Whether the server as a whole has gone silent for `stall`.
    pub fn server_stalled(&self) -> bool {
        self.stall.is_some_and(|stall| self.silence() >= stall)
    }
}

/// The error a read gives when its idle timeout ran out.
pub fn idle_error(idle: Duration) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        format!("no byte from the server for {} ms (idle-timeout)", idle.as_millis()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn silence_runs_from_the_last_byte_and_stall_alone_sets_the_idle_timeout() {
        let live = Liveness::new(None, Some(Duration::from_millis(40)));
        assert_eq!(live.idle, Some(Duration::from_millis(40)));
        std::thread::sleep(Duration::from_millis(50));
        assert!(live.server_stalled(), "no byte since the start");
        live.touch();
        assert!(live.silence() < Duration::from_millis(40));
        assert!(!live.server_stalled());
        let neither = Liveness::new(Some(Duration::from_millis(5)), None);
        std::thread::sleep(Duration::from_millis(10));
        assert!(!neither.server_stalled(), "no stall rule, no stalled server");
    }
}
