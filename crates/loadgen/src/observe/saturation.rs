//! Over-saturation, seen while an open loop runs: the server completes
//! fewer requests than arrive, and the backlog (sent, not yet ended) keeps
//! growing. A probe of a capacity search that is past capacity has lost
//! already; measuring it to the end only adds queue. (guidellm stops such
//! runs by the slopes of concurrency and TTFT over time; this rule reads
//! the counts and the time a request takes.)
//!
//! A request ends a sojourn `W` after it is sent, so the requests that can
//! have ended by `t` are those sent by `t − W`. Comparing what ended over
//! `[t/2, t]` with what was sent over that same window mistakes a server
//! that is merely filling for one that falls behind: with 3 s replies and a
//! look at 2 s, nothing has ended yet while everything sent is in flight.
//! The rule therefore compares what ended over `[t/2, t]` with what was sent
//! over the window shifted back by a lag `D`, `[t/2 − D, t − D]`, where `D`
//! is the 95th percentile of the sojourns of every request sent so far,
//! counting a request still in flight at its age (its sojourn is at least
//! that: a censored observation). Counting only the requests that ended
//! would take the short replies that end first for the sojourn, and judge
//! a filling server by them. In a stable queue the two counts agree (by
//! Little's law the backlog settles at rate × sojourn); while it fills, the
//! shifted window holds fewer sends, not more; past capacity by a share
//! `e` of the rate, completions run at `1 − e` of arrivals however long
//! the sojourns grow (the in-flight ages grow with them, and the shifted
//! window still holds a full window's arrivals).
//!
//! The rule, looked at every [`LOOK_EVERY_S`] from [`MIN_ELAPSED_S`] on,
//! against the last look at `t/2` or before (never the start):
//! - completions over `[t/2, t]` fell short of the sends over
//!   `[t/2 − D, t − D]` by more than [`SHORTFALL`] (10%), and by more than
//!   [`NOISE_SIGMAS`] standard deviations of a Poisson count of that size;
//! - the backlog grew over `[t/2, t]` by at least [`MIN_GROWTH`] requests;
//! - at [`CONFIRMING_LOOKS`] looks in a row.
//!
//! No request ended yet: no verdict (a server that answers nothing is
//! stalled, not saturated). Closer to capacity than 10% the rule does not
//! fire and the run goes on: it stops only runs that are clearly lost.
//! `benches/saturation.rs` gives its false stops and detection delays
//! across load and reply length.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// First look, in seconds after the run's start.
pub const MIN_ELAPSED_S: f64 = 1.0;
/// Seconds between looks.
pub const LOOK_EVERY_S: f64 = 0.25;
/// Completions below this share of the lagged sends fall short.
pub const SHORTFALL: f64 = 0.10;
/// ... and short by more than this many standard deviations of the count.
pub const NOISE_SIGMAS: f64 = 3.0;
/// Fewest requests the backlog must grow by over `[t/2, t]`.
pub const MIN_GROWTH: u64 = 20;
/// Looks in a row that must find the run over-saturated.
pub const CONFIRMING_LOOKS: u32 = 2;
/// The lag is this quantile of the sojourns.
pub const LAG_QUANTILE: f64 = 0.95;

/// What the watch saw when it fired.
#[derive(Debug, Clone, PartialEq)]
pub struct Saturated {
    /// Seconds after the run's start.
    pub at_s: f64,
    pub detail: String,
}

/// 8 buckets an octave from 1 ms to 2^26 ms (18 hours).
const SOJOURN_BUCKETS: usize = 8 * 26;
/// Width of a slot of send times, in ms.
const SEND_SLOT_MS: f64 = 250.0;

/// The requests that ended, as the rule needs them: their sojourns (send to
/// end) as a histogram of eighth-octave buckets over milliseconds, and how
/// many were sent in each quarter second, so a look can tell which of the
/// requests sent by a time are still in flight. The record path pays one
/// relaxed add and one uncontended lock a request.
pub struct FlightLog {
    sojourns: [AtomicU64; SOJOURN_BUCKETS],
    ended_by_send_slot: Mutex<Vec<u64>>,
}

impl Default for FlightLog {
    fn default() -> Self {
        FlightLog {
            sojourns: std::array::from_fn(|_| AtomicU64::new(0)),
            ended_by_send_slot: Mutex::new(Vec::new()),
        }
    }
}

/// The upper edge of sojourn bucket `b`, in seconds.
fn bucket_edge_s(b: usize) -> f64 {
    2f64.powf((b + 1) as f64 / 8.0) / 1000.0
}

impl FlightLog {
    /// One request, sent `send_ms` after the run's start, ended after `sojourn_ms`.
    pub fn ended(&self, send_ms: f64, sojourn_ms: f64) {
        let bucket = (sojourn_ms.max(1.0).log2() * 8.0).floor() as usize;
        self.sojourns[bucket.min(SOJOURN_BUCKETS - 1)].fetch_add(1, Ordering::Relaxed);
        let slot = (send_ms.max(0.0) / SEND_SLOT_MS) as usize;
        if let Ok(mut slots) = self.ended_by_send_slot.lock() {
            if slots.len() <= slot {
                slots.resize(slot + 1, 0);
            }
            slots[slot] += 1;
        }
    }

    /// Forget everything: a new run (repeat) starts its clock again.
    pub fn reset(&self) {
        for bucket in &self.sojourns {
            bucket.store(0, Ordering::Relaxed);
        }
        if let Ok(mut slots) = self.ended_by_send_slot.lock() {
            slots.clear();
        }
    }

    fn sojourn_counts(&self) -> Vec<u64> {
        self.sojourns.iter().map(|b| b.load(Ordering::Relaxed)).collect()
    }

    /// Ended requests sent before each slot boundary: `[0, after slot 0, …]`.
    fn ended_sent_before(&self) -> Vec<u64> {
        let slots = self.ended_by_send_slot.lock().map(|s| s.clone()).unwrap_or_default();
        std::iter::once(0)
            .chain(slots.iter().scan(0, |sum, n| {
                *sum += n;
                Some(*sum)
            }))
            .collect()
    }
}

/// Counts at each look, to compare with those at half the time.
#[derive(Debug)]
pub struct SaturationWatch {
    /// `(t, sent, ended)` at each look, in order, from `(0, 0, 0)`.
    looks: Vec<(f64, u64, u64)>,
    /// Looks in a row, up to the last, that found it over-saturated.
    in_a_row: u32,
}

impl Default for SaturationWatch {
    fn default() -> Self {
        SaturationWatch { looks: vec![(0.0, 0, 0)], in_a_row: 0 }
    }
}

impl SaturationWatch {
    /// Whether a look is due at `t` seconds.
    pub fn due(&self, t: f64) -> bool {
        t >= MIN_ELAPSED_S && self.looks.last().is_none_or(|(last, _, _)| t - last >= LOOK_EVERY_S)
    }

    /// Requests sent by `at` seconds, read off the looks (linear between two).
    fn sent_by(&self, at: f64) -> f64 {
        if at <= 0.0 {
            return 0.0;
        }
        let after = self.looks.partition_point(|(t, _, _)| *t < at);
        match (after.checked_sub(1).and_then(|i| self.looks.get(i)), self.looks.get(after)) {
            (Some(&(t0, s0, _)), Some(&(t1, s1, _))) if t1 > t0 => {
                s0 as f64 + (s1 as f64 - s0 as f64) * (at - t0) / (t1 - t0)
            }
            (_, Some(&(_, s, _))) | (Some(&(_, s, _)), None) => s as f64,
            (None, None) => 0.0,
        }
    }

    /// The [`LAG_QUANTILE`] of the sojourns of the `sent` requests sent by
    /// `t`: the least bucket edge `x` past which at most 5% of them are
    /// known to lie — ended ones whose sojourn exceeded `x`, and those in
    /// flight that are already older than `x`. (Call after the look at `t`
    /// is recorded.)
    fn lag_s(&self, t: f64, sent: u64, flights: &FlightLog) -> f64 {
        let sojourns = flights.sojourn_counts();
        let ended_before = flights.ended_sent_before();
        let ended_sent_by = |at: f64| -> f64 {
            let slot = (at.max(0.0) * 1000.0 / SEND_SLOT_MS) as usize;
            ended_before[slot.min(ended_before.len() - 1)] as f64
        };
        let allowed = (1.0 - LAG_QUANTILE) * sent as f64;
        let mut ended_above = 0;
        let mut lag = bucket_edge_s(SOJOURN_BUCKETS - 1);
        for b in (0..SOJOURN_BUCKETS).rev() {
            let x = bucket_edge_s(b);
            // Whole slots only: an ended request sent late in a slot is not
            // counted, so the in-flight count errs high and the lag long.
            let in_flight_older = (self.sent_by(t - x) - ended_sent_by(t - x)).max(0.0);
            if ended_above as f64 + in_flight_older > allowed {
                break;
            }
            lag = x;
            ended_above += sojourns[b];
        }
        lag
    }

    /// A look at `t` seconds with `sent` requests sent and `ended` ended so
    /// far, `flights` the record of those ended (call when
    /// [`due`](Self::due)); `Some` when the run is over-saturated.
    pub fn look(&mut self, t: f64, sent: u64, ended: u64, flights: &FlightLog) -> Option<Saturated> {
        // The counts at the last look no later than t/2, never the start.
        let half = self.looks.iter().rev().find(|(at, _, _)| *at <= t / 2.0 && *at > 0.0).copied();
        self.looks.push((t, sent, ended));
        let verdict = half.filter(|_| ended > 0).map(|(half_t, half_sent, half_ended)| {
            let lag = self.lag_s(t, sent, flights);
            let due = self.sent_by(t - lag) - self.sent_by(half_t - lag);
            let completed = (ended - half_ended) as f64;
            let short = completed < (1.0 - SHORTFALL) * due
                && due - completed > NOISE_SIGMAS * due.sqrt()
                && sent - ended >= half_sent - half_ended + MIN_GROWTH;
            (short, half_t, half_sent - half_ended, lag, due, completed)
        });
        let short = verdict.is_some_and(|v| v.0);
        self.in_a_row = if short { self.in_a_row + 1 } else { 0 };
        let (_, half_t, half_backlog, lag, due, completed) = verdict?;
        (self.in_a_row >= CONFIRMING_LOOKS).then(|| Saturated {
            at_s: t,
            detail: format!(
                "over-saturated at {t:.2} s: {completed:.0} requests ended since {half_t:.2} s where {due:.0} were due \
                 (sent by then less the p95 sojourn, {lag:.2} s), and {} are in flight (were {half_backlog})",
                sent - ended,
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server of `slots` sequences, each request served in `service_s`
    /// once it has a slot (first come, first served), fed at a constant
    /// `rate`: the look the watch takes at each send, until it fires or
    /// `until` seconds. Capacity is `slots / service_s`.
    fn watch(rate: f64, slots: usize, service_s: f64, until: f64) -> Option<Saturated> {
        let mut free = vec![0.0f64; slots];
        let mut ends: Vec<(f64, f64, f64)> = Vec::new(); // (end, sojourn, send)
        let mut watch = SaturationWatch::default();
        let flights = FlightLog::default();
        let mut counted = 0;
        for k in 0u32.. {
            let t = f64::from(k) / rate;
            if t > until {
                return None;
            }
            // Requests that ended by now reach the tally in order of their end.
            ends.sort_by(|a, b| a.0.total_cmp(&b.0));
            while counted < ends.len() && ends[counted].0 <= t {
                flights.ended(ends[counted].2 * 1000.0, ends[counted].1 * 1000.0);
                counted += 1;
            }
            if watch.due(t)
                && let Some(s) = watch.look(t, u64::from(k), counted as u64, &flights)
            {
                return Some(s);
            }
            let slot = (0..slots).min_by(|&a, &b| free[a].total_cmp(&free[b])).unwrap();
            let end = free[slot].max(t) + service_s;
            free[slot] = end;
            ends.push((end, end - t, t));
        }
        unreachable!()
    }

    #[test]
    fn a_server_filling_with_replies_of_seconds_is_not_over_saturated() {
        // The load: room for 512, 3 s replies (capacity ~170/s), 20 req/s.
        assert_eq!(watch(20.0, 512, 3.0, 20.0), None);
        // Up to 90% of capacity, at reply lengths from 0.1 to 10 s.
        for service_s in [0.1, 1.0, 3.0, 10.0] {
            for share in [0.5, 0.9] {
                let rate = share * 64.0 / service_s;
                assert_eq!(
                    watch(rate, 64, service_s, 8.0 * service_s + 4.0),
                    None,
                    "{share} at {service_s} s"
                );
            }
        }
    }

    #[test]
    fn a_queue_past_capacity_fires_however_long_the_replies() {
        for service_s in [0.1, 1.0, 3.0] {
            for share in [1.3, 2.0, 4.0] {
                let rate = share * 64.0 / service_s;
                let fired = watch(rate, 64, service_s, 20.0 * service_s + 4.0);
                let fired = fired.unwrap_or_else(|| panic!("{share}x capacity at {service_s} s"));
                assert!(fired.detail.starts_with("over-saturated at"), "{fired:?}");
            }
        }
    }

    #[test]
    fn a_backlog_that_is_steady_does_not_fire_even_when_completions_lag() {
        // 150 req/s, each ending 0.27 s after it was sent: the backlog stays at ~40.
        let mut watch = SaturationWatch::default();
        let flights = FlightLog::default();
        let mut ended = 0u64;
        for i in 4..=64 {
            let t = f64::from(i) * 0.25;
            let sent = (150.0 * t) as u64;
            while (ended as f64) < 150.0 * (t - 0.27) {
                flights.ended(ended as f64 / 0.15, 270.0);
                ended += 1;
            }
            assert!(watch.look(t, sent, ended, &flights).is_none(), "at {t}");
        }
    }

    #[test]
    fn the_lag_counts_requests_in_flight_at_their_age() {
        // 100 req/s for 4 s; the first 10 ended after 50 ms, the rest are in flight.
        let mut watch = SaturationWatch::default();
        let flights = FlightLog::default();
        for i in 0..10 {
            flights.ended(f64::from(i) * 10.0, 50.0);
        }
        for i in 1..=16 {
            let t = f64::from(i) * 0.25;
            watch.looks.push((t, (100.0 * t) as u64, 10));
        }
        // Ended ones alone would say ~50 ms; the 390 in flight say most of 4 s
        // (a bucket edge: up to 9% over).
        let lag = watch.lag_s(4.0, 400, &flights);
        assert!((3.5..4.5).contains(&lag), "{lag}");
    }
}
