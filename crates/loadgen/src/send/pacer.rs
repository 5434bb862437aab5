//! Releasing open-loop arrivals on time.
//!
//! tokio's timer wheel has 1 ms ticks and rounds every deadline up to the
//! next tick, so `sleep_until(intended)` alone sends each request 0–1 ms
//! late (p99 ≈ 1 ms before any load). The pacer instead sleeps on its own
//! thread with the OS's high-resolution timer and hands each arrival to the
//! runtime through a channel, whose wake-up costs microseconds. Its timer
//! slack is set to 1 ns (Linux lets a sleeping thread wake up to 50 µs late
//! by default), and it spins through the last [`SPIN`] before each arrival
//! rather than trust the sleep to end on time.

use std::time::{Duration, Instant};

use tokio::sync::mpsc;

/// How long before each arrival the pacer stops sleeping and spins. At
/// 1,000 arrivals a second this costs at most 5% of a core.
pub const SPIN: Duration = Duration::from_micros(50);

/// How open-loop arrivals are timed and sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The runtime sleeps on tokio's timer and sends (1 ms ticks).
    TokioTimer,
    /// This module's thread releases each arrival to the runtime, which sends.
    Thread,
    /// The runtime prepares each request ahead and the sender thread
    /// ([`crate::send::sender`]) writes it at its time: the default.
    Sender,
}

/// `ANVIL_LOADGEN_PACER=tokio-timer|thread|sender` picks the mode; the
/// older ones are kept for side-by-side comparison in the fidelity bench.
pub fn mode() -> Mode {
    match std::env::var("ANVIL_LOADGEN_PACER").as_deref() {
        Ok("tokio-timer") => Mode::TokioTimer,
        Ok("thread") => Mode::Thread,
        _ => Mode::Sender,
    }
}

/// Sends `i` on the returned channel at `arrivals[i]` (never before).
/// `None` if the thread could not be started; the caller then falls back to
/// tokio's timer. The thread ends after the last arrival or as soon as the
/// receiver is dropped (at the next arrival it would have sent).
pub fn spawn(arrivals: Vec<Instant>) -> Option<mpsc::UnboundedReceiver<usize>> {
    let (tx, rx) = mpsc::unbounded_channel();
    let thread = std::thread::Builder::new().name("anvil-loadgen-pacer".into()).spawn(move || {
        // Best effort: without it the thread still paces, only less tightly.
        let _ = nix::sys::prctl::set_timerslack(1);
        for (i, at) in arrivals.into_iter().enumerate() {
            // Sleep until just before the moment (sleep may end early or
            // late), then spin to it.
            loop {
                let now = Instant::now();
                if now + SPIN >= at {
                    break;
                }
                std::thread::sleep(at - now - SPIN);
            }
            while Instant::now() < at {
                std::hint::spin_loop();
            }
            if tx.send(i).is_err() {
                return; // the phase was cancelled
            }
        }
    });
    thread.ok().map(|_| rx)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn releases_every_arrival_in_order_and_never_early() {
        let base = Instant::now();
        let arrivals: Vec<Instant> = (0..20).map(|i| base + Duration::from_micros(300 * i)).collect();
        let mut rx = spawn(arrivals.clone()).expect("pacer thread");
        for want in 0..20 {
            let got = rx.recv().await.expect("an arrival");
            assert_eq!(got, want);
            assert!(Instant::now() >= arrivals[got], "released before its time");
        }
        assert_eq!(rx.recv().await, None, "channel closes after the last arrival");
    }
}
