//! Over-saturation, seen while an open loop runs: the server completes
//! fewer requests than arrive, and the backlog (sent, not yet ended) keeps
//! growing. A probe of a capacity search that is past capacity has lost
//! already; measuring it to the end only adds queue. (guidellm stops such
//! runs by the slopes of concurrency and TTFT over time; this rule reads
//! the counts, which need no model of the latencies.)
//!
//! The rule, looked at every [`LOOK_EVERY_S`] from [`MIN_ELAPSED_S`] on,
//! over the second half of the time elapsed, `[t/2, t]` (from a look at
//! `t/2` or before, never from the start: the backlog's climb from an idle
//! server to its steady level is not a queue that grows):
//! - completions (ended requests, failed or not) fell short of arrivals by
//!   more than [`SHORTFALL`] (10%), so the backlog grew by that much, and
//!   by at least [`MIN_GROWTH`] requests;
//! - at [`CONFIRMING_LOOKS`] looks in a row.
//!
//! A stable queue completes what arrives, give or take its noise; a queue
//! past capacity by 10% or more falls short in every window, its backlog
//! growing by (rate − capacity) a second. Closer to capacity the rule does
//! not fire and the run goes on: it stops only runs that are clearly lost.

/// First look, in seconds after the run's start.
pub const MIN_ELAPSED_S: f64 = 1.0;
/// Seconds between looks.
pub const LOOK_EVERY_S: f64 = 0.25;
/// Completions below this share of arrivals over `[t/2, t]` fall short.
pub const SHORTFALL: f64 = 0.10;
/// Fewest requests the backlog must grow by over `[t/2, t]`.
pub const MIN_GROWTH: u64 = 20;
/// Looks in a row that must find the run over-saturated.
pub const CONFIRMING_LOOKS: u32 = 2;

/// What the watch saw when it fired.
#[derive(Debug, Clone, PartialEq)]
pub struct Saturated {
    /// Seconds after the run's start.
    pub at_s: f64,
    pub detail: String,
}

/// Counts at each look, to compare with those at half the time.
#[derive(Debug, Default)]
pub struct SaturationWatch {
    /// `(t, sent, ended)` at each look, in order.
    looks: Vec<(f64, u64, u64)>,
    /// Looks in a row, up to the last, that found it over-saturated.
    in_a_row: u32,
}

impl SaturationWatch {
    /// Whether a look is due at `t` seconds.
    pub fn due(&self, t: f64) -> bool {
        t >= MIN_ELAPSED_S && self.looks.last().is_none_or(|(last, _, _)| t - last >= LOOK_EVERY_S)
    }

    /// A look at `t` seconds with `sent` requests sent and `ended` ended so
    /// far (call when [`due`](Self::due)); `Some` when the run is over-saturated.
    pub fn look(&mut self, t: f64, sent: u64, ended: u64) -> Option<Saturated> {
        // The counts at the last look no later than t/2.
        let half = self.looks.iter().rev().find(|(at, _, _)| *at <= t / 2.0).copied();
        self.looks.push((t, sent, ended));
        let (half_t, half_sent, half_ended) = half?;
        let arrived = sent - half_sent;
        let completed = ended - half_ended;
        let (backlog, half_backlog) = (sent - ended, half_sent - half_ended);
        let short =
            (completed as f64) < (1.0 - SHORTFALL) * arrived as f64 && backlog >= half_backlog + MIN_GROWTH;
        self.in_a_row = if short { self.in_a_row + 1 } else { 0 };
        (self.in_a_row >= CONFIRMING_LOOKS).then(|| Saturated {
            at_s: t,
            detail: format!(
                "over-saturated at {t:.2} s: {completed} requests ended of {arrived} sent since {half_t:.2} s, and {backlog} are in flight (were {half_backlog})"
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Looks at a server of `capacity` req/s fed `rate` req/s (a fluid
    /// model: no noise; each request in it for 0.6 s), until it fires or
    /// `until` seconds.
    fn watch(rate: f64, capacity: f64, until: f64) -> Option<Saturated> {
        let mut watch = SaturationWatch::default();
        let mut t = 0.0;
        while t <= until {
            if watch.due(t) {
                let sent = (rate * t) as u64;
                let ended = (capacity.min(rate) * (t - 0.6).max(0.0)) as u64;
                if let Some(s) = watch.look(t, sent, ended) {
                    return Some(s);
                }
            }
            t += 0.05;
        }
        None
    }

    #[test]
    fn a_queue_past_capacity_fires_one_within_capacity_does_not() {
        let fired = watch(200.0, 125.0, 4.0).expect("past capacity by 60%");
        // The first comparison is at 2 s (against the look at 1 s); the second confirms.
        assert!((2.0..2.5).contains(&fired.at_s), "{fired:?}");
        // An idle server filling up to its steady backlog is not over-saturated.
        assert!(watch(120.0, 125.0, 4.0).is_none());
        assert!(watch(100.0, 125.0, 4.0).is_none());
        // 5% past capacity: not clearly lost, so it runs on.
        assert!(watch(131.0, 125.0, 4.0).is_none());
    }

    #[test]
    fn a_backlog_that_is_steady_does_not_fire_even_when_completions_lag() {
        // Completions a tick behind arrivals, the backlog constant at 40.
        let mut watch = SaturationWatch::default();
        for i in 4..=16 {
            let t = f64::from(i) * 0.25;
            let sent = (150.0 * t) as u64;
            assert!(watch.look(t, sent, sent - 40).is_none(), "at {t}");
        }
    }
}
