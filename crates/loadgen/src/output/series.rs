//! The artifact's plot-ready `series`: per interval (1 s unless a run is
//! longer than [`MAX_POINTS`] seconds) of each measured run, what was in
//! flight, sent, finished, the token rate and the TTFT of what was sent.
//!
//! It is computed from the stored records after the run, never sampled by
//! a timer during it (a timer on a busy client stalls exactly when the
//! figures matter), so anyone holding the records can recompute it:
//! - `in_flight`: requests in flight, averaged over the interval (each
//!   request counts from its `actual_send_ms` to its `finished_ms`);
//! - `sent`: requests whose `actual_send_ms` falls in the interval;
//! - `completed` / `failed`: requests whose `finished_ms` falls in it,
//!   performance-eligible / not;
//! - `output_tok_s`: each eligible request's output tokens spread evenly
//!   over its generation (`actual_send_ms + time_to_first_output_ms` to
//!   `finished_ms`; at `finished_ms` when it has no first output), per
//!   second of the interval;
//! - `ttft_p50_ms`, `ttft_p99_ms`: nearest-rank TTFT of the eligible
//!   requests sent in the interval (null where none was).
//!
//! Intervals are `[t, t + interval_s)` seconds after their run's start
//! (`repeat` says which run); every run has ⌈its last `finished_ms` /
//! interval⌉ points (at least one).

use serde::{Deserialize, Serialize};

use crate::output::record_log::{Row, Stored, col, get, is};
use crate::output::stats::nearest_rank;

/// At most this many points per run: a run longer than this many seconds
/// gets wider intervals (a 2-hour run at 1 s is 7,200 points).
pub const MAX_POINTS: f64 = 10_000.0;

/// One run's points.
#[derive(Default)]
struct Run {
    in_flight_ms: Vec<f64>,
    sent: Vec<u64>,
    completed: Vec<u64>,
    failed: Vec<u64>,
    tokens: Vec<f64>,
    ttfts: Vec<Vec<f64>>,
}

impl Run {
    fn new(points: usize) -> Self {
        Self {
            in_flight_ms: vec![0.0; points],
            sent: vec![0; points],
            completed: vec![0; points],
            failed: vec![0; points],
            tokens: vec![0.0; points],
            ttfts: vec![Vec::new(); points],
        }
    }
}

/// The interval's index holding moment `ms` (the last for moments past the end).
fn slot(ms: f64, width_ms: f64, points: usize) -> usize {
    ((ms.max(0.0) / width_ms) as usize).min(points - 1)
}

/// Adds `amount` spread evenly over `[from, to)` ms to the intervals it covers.
fn spread(into: &mut [f64], from: f64, to: f64, amount: f64, width_ms: f64) {
    let points = into.len();
    if to <= from {
        into[slot(to, width_ms, points)] += amount;
        return;
    }
    let per_ms = amount / (to - from);
    let (first, last) = (slot(from, width_ms, points), slot(to, width_ms, points));
    for (i, v) in into.iter_mut().enumerate().take(last + 1).skip(first) {
        let lo = from.max(i as f64 * width_ms);
        let hi = if i == last { to } else { to.min((i + 1) as f64 * width_ms) };
        *v += (hi - lo).max(0.0) * per_ms;
    }
}

/// The `series` object of the stored records of `repeats` runs.
pub fn build(store: &Stored, repeats: u32) -> std::io::Result<Series> {
    let mut ends = vec![0.0f64; repeats.max(1) as usize];
    store.scan(|row| {
        let r = (row[col::REPEAT] as usize).min(ends.len() - 1);
        ends[r] = ends[r].max(row[col::FINISHED]).max(row[col::ACTUAL_SEND]);
    })?;
    let longest_s = ends.iter().copied().fold(0.0, f64::max) / 1000.0;
    let interval_s = (longest_s / MAX_POINTS).ceil().max(1.0);
    let width_ms = interval_s * 1000.0;
    let mut runs: Vec<Run> =
        ends.iter().map(|end| Run::new(((end / width_ms).ceil() as usize).max(1))).collect();
    store.scan(|row: &Row| {
        let run = &mut runs[(row[col::REPEAT] as usize).min(ends.len() - 1)];
        let points = run.sent.len();
        let (sent, finished) = (row[col::ACTUAL_SEND], row[col::FINISHED]);
        run.sent[slot(sent, width_ms, points)] += 1;
        spread(&mut run.in_flight_ms, sent, finished, finished - sent, width_ms);
        if !is(row, col::ELIGIBLE) {
            run.failed[slot(finished, width_ms, points)] += 1;
            return;
        }
        run.completed[slot(finished, width_ms, points)] += 1;
        if let Some(tokens) = get(row, col::OUTPUT_TOKENS) {
            let first_output = get(row, col::TFO).map_or(finished, |t| sent + t);
            spread(&mut run.tokens, first_output.min(finished), finished, tokens, width_ms);
        }
        if let Some(ttft) = get(row, col::TTFT) {
            run.ttfts[slot(sent, width_ms, points)].push(ttft);
        }
    })?;
    let mut out = Series { interval_s, ..Series::default() };
    for (repeat, run) in (0u32..).zip(runs) {
        for (i, mut ttfts) in run.ttfts.into_iter().enumerate() {
            ttfts.sort_by(f64::total_cmp);
            let pct = |p| (!ttfts.is_empty()).then(|| nearest_rank(&ttfts, p));
            out.repeat.push(repeat);
            out.t.push(i as f64 * interval_s);
            out.in_flight.push(run.in_flight_ms[i] / width_ms);
            out.sent.push(run.sent[i]);
            out.completed.push(run.completed[i]);
            out.failed.push(run.failed[i]);
            out.output_tok_s.push(run.tokens[i] / interval_s);
            out.ttft_p50_ms.push(pct(50));
            out.ttft_p99_ms.push(pct(99));
        }
    }
    Ok(out)
}

/// The artifact's `series`: one column per figure, one row per interval
/// of each run, runs one after another (`repeat` says which).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Series {
    pub interval_s: f64,
    pub repeat: Vec<u32>,
    /// Seconds after the run's start.
    pub t: Vec<f64>,
    pub in_flight: Vec<f64>,
    pub sent: Vec<u64>,
    pub completed: Vec<u64>,
    pub failed: Vec<u64>,
    pub output_tok_s: Vec<f64>,
    pub ttft_p50_ms: Vec<Option<f64>>,
    pub ttft_p99_ms: Vec<Option<f64>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spreading_keeps_the_amount_and_splits_it_by_overlap() {
        let mut v = vec![0.0; 4];
        // 500 ms to 2,500 ms: a quarter, a half, a quarter.
        spread(&mut v, 500.0, 2500.0, 100.0, 1000.0);
        assert_eq!(v, vec![25.0, 50.0, 25.0, 0.0]);
        // An instant lands in its interval; moments past the end in the last.
        spread(&mut v, 3100.0, 3100.0, 7.0, 1000.0);
        spread(&mut v, 9000.0, 9500.0, 1.0, 1000.0);
        assert_eq!(v, vec![25.0, 50.0, 25.0, 8.0]);
    }
}
