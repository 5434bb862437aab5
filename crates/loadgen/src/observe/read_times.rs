//! When a read's bytes arrived: the stamps the HTTP client puts on every
//! read (`send::http::socket`) and the observation of a stream keeps.

use std::time::Instant;

/// Which clock stamped a read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stamp {
    /// The kernel's software receive timestamp.
    Kernel,
    /// `Instant::now()` right after the read returned.
    Read,
}

/// When a read's bytes arrived and when the client read them.
#[derive(Debug, Clone, Copy)]
pub struct ReadTimes {
    /// Arrival of the newest bytes in the read (see [`Stamp`]).
    pub arrived: Instant,
    pub stamp: Stamp,
    /// Just after the read returned.
    pub read: Instant,
}

/// Times for a moment with no read behind it (an end seen before any byte).
pub fn read_now() -> ReadTimes {
    let now = Instant::now();
    ReadTimes { arrived: now, stamp: Stamp::Read, read: now }
}
