//! anvil's per-interval `series`, re-derived from the records.
//!
//! Width `w` = `interval_s` seconds (an input: 1, or wider for runs longer
//! than 10,000 s). Each repeat (run) `r` has ⌈E_r / (1000·w)⌉ points, at
//! least one, where E_r is the largest `finished_ms` or `actual_send_ms`
//! of its records; point `i` covers `[i·w, (i+1)·w)` s after the run's
//! start, and moments past the last point count in the last. Per point:
//!
//! - `repeat` = r, `t` = i·w;
//! - `sent`: records whose `actual_send_ms` falls in it;
//! - `completed` / `failed`: eligible / other records whose `finished_ms` does;
//! - `in_flight`: Σ over records of the length of
//!   `[actual_send_ms, finished_ms)` inside the point, / (1000·w);
//! - `output_tok_s`: Σ over eligible records of `output_tokens` × (the
//!   share of `[actual_send_ms + time_to_first_output_ms, finished_ms)`
//!   inside the point; all of it at `finished_ms` when that span is empty
//!   or there is no first output), / w;
//! - `ttft_p50_ms`, `ttft_p99_ms`: nearest rank over the `ttft_ms` of
//!   eligible records sent in the point; null when there are none.

use serde_json::{Map, Value, json};

use crate::columns::{Col, Row, Rows, Visited};
use crate::report::Checker;
use crate::stats::percentile_sorted;

/// Which point of a run with `n` points holds moment `ms`.
fn point(ms: f64, width_ms: f64, n: usize) -> usize {
    let i = (ms.max(0.0) / width_ms).floor();
    if i >= n as f64 { n - 1 } else { i as usize }
}

/// How much of `[from, to)` lies inside point `i`.
fn overlap(from: f64, to: f64, i: usize, n: usize, width_ms: f64) -> f64 {
    let lo = i as f64 * width_ms;
    // The last point reaches to infinity.
    let hi = if i + 1 == n { f64::INFINITY } else { (i + 1) as f64 * width_ms };
    (to.min(hi) - from.max(lo)).max(0.0)
}

/// Most TTFTs held at once: consecutive points are taken together up to
/// this many values; a point with more has its percentiles found by selection.
const GROUP_AT_MOST: usize = 8192;

/// Each point's nearest-rank (p50, p99) of the TTFTs `ttft_point` places in
/// it (`counts`: how many each point has), a group of consecutive points
/// per scan of the rows, so the column is never held whole.
fn ttft_percentiles(
    rows: &Rows,
    counts: &[usize],
    ttft_point: &dyn Fn(&Row) -> Option<(usize, f64)>,
) -> Vec<(Option<f64>, Option<f64>)> {
    let mut pcts = Vec::with_capacity(counts.len());
    let mut first = 0;
    while first < counts.len() {
        let (mut end, mut total) = (first + 1, counts[first]);
        while end < counts.len() && total + counts[end] <= GROUP_AT_MOST {
            total += counts[end];
            end += 1;
        }
        if total > GROUP_AT_MOST {
            let of_point = |r: &Row| ttft_point(r).filter(|(p, _)| *p == first).map(|(_, t)| t);
            let one = Visited::new(rows, &of_point);
            pcts.push((one.percentile(50), one.percentile(99)));
            first = end;
            continue;
        }
        // The group's values placed point by point, each point's then sorted.
        let starts: Vec<usize> =
            counts[first..end].iter().scan(0, |at, n| Some(std::mem::replace(at, *at + n))).collect();
        let mut next = starts.clone();
        let mut held = vec![0.0; total];
        rows.scan(|r| {
            if let Some((p, t)) = ttft_point(r).filter(|(p, _)| (first..end).contains(p)) {
                held[next[p - first]] = t;
                next[p - first] += 1;
            }
        });
        for (k, &from) in starts.iter().enumerate() {
            let sorted = &mut held[from..from + counts[first + k]];
            sorted.sort_unstable_by(f64::total_cmp);
            let sorted = &*sorted;
            let pct = |q| (!sorted.is_empty()).then(|| percentile_sorted(sorted, q));
            pcts.push((pct(50), pct(99)));
        }
        first = end;
    }
    pcts
}

/// Most runs a series is derived for (a bound on a damaged `repeat`).
const MAX_RUNS: u64 = 1 << 16;

/// The series' points: each run cut into intervals of `width_ms` from its
/// start (at least one), the runs' points one after another.
struct Points {
    width_ms: f64,
    /// Each run's number of points.
    counts: Vec<usize>,
    /// Each run's first point.
    offsets: Vec<usize>,
}

impl Points {
    /// Points over runs ending at `ends` (ms after each run's start).
    fn of(ends: &[f64], width_ms: f64) -> Self {
        let counts: Vec<usize> = ends.iter().map(|end| ((end / width_ms).ceil() as usize).max(1)).collect();
        let offsets: Vec<usize> =
            counts.iter().scan(0, |at, n| Some(std::mem::replace(at, *at + n))).collect();
        Self { width_ms, counts, offsets }
    }

    /// Run `run`'s number of points and first point; `None` past the runs.
    fn of_run(&self, run: usize) -> Option<(usize, usize)> {
        Some((*self.counts.get(run)?, *self.offsets.get(run)?))
    }
}

/// What each point of the series sums over the records.
struct Tallies {
    /// Records sent in the point.
    sent: Vec<u64>,
    /// Records that ended in the point, eligible or not.
    completed: Vec<u64>,
    failed: Vec<u64>,
    /// Time in flight within the point, summed over the records.
    busy_ms: Vec<f64>,
    /// Output tokens, spread over each record's generation time.
    tokens: Vec<f64>,
    /// Eligible records with a `ttft_ms` sent in the point.
    ttft_counts: Vec<usize>,
}

/// Where each run ends (its last send or finish, ms); `None` when a record
/// lacks either time, and the series cannot be derived.
fn run_ends(rows: &Rows, runs: usize) -> Option<Vec<f64>> {
    let (mut complete, mut ends) = (true, vec![0.0f64; runs]);
    rows.scan(|r| {
        let (s, f) = (r.get(Col::ActualSend), r.get(Col::Finished));
        complete &= s.is_some() && f.is_some();
        if let Some(end) = ends.get_mut(r.repeat() as usize) {
            *end = end.max(f.unwrap_or(0.0).max(s.unwrap_or(0.0)));
        }
    });
    complete.then_some(ends)
}

/// Sums the records into the points (one scan).
fn tally_points(rows: &Rows, points: &Points) -> Tallies {
    let width_ms = points.width_ms;
    let total: usize = points.counts.iter().sum();
    let mut t = Tallies {
        sent: vec![0u64; total],
        completed: vec![0u64; total],
        failed: vec![0u64; total],
        busy_ms: vec![0.0; total],
        tokens: vec![0.0; total],
        ttft_counts: vec![0usize; total],
    };
    rows.scan(|r| {
        let Some((n, at)) = points.of_run(r.repeat() as usize) else { return };
        let (s, f) = (r.get(Col::ActualSend).unwrap_or(0.0), r.get(Col::Finished).unwrap_or(0.0));
        let (ps, pf) = (point(s, width_ms, n), point(f, width_ms, n));
        t.sent[at + ps] += 1;
        for (i, b) in t.busy_ms[at..at + n].iter_mut().enumerate().take(pf + 1).skip(ps) {
            *b += overlap(s, f, i, n, width_ms);
        }
        if !r.eligible() {
            t.failed[at + pf] += 1;
            return;
        }
        t.completed[at + pf] += 1;
        if let Some(out) = r.get(Col::OutputTokensInt) {
            let first = r.get(Col::TimeToFirstOutput).map_or(f, |t| (s + t).min(f));
            if f > first {
                let pfirst = point(first, width_ms, n);
                for (i, tok) in t.tokens[at..at + n].iter_mut().enumerate().take(pf + 1).skip(pfirst) {
                    *tok += out * overlap(first, f, i, n, width_ms) / (f - first);
                }
            } else {
                t.tokens[at + pf] += out;
            }
        }
        if r.get(Col::Ttft).is_some() {
            t.ttft_counts[at + ps] += 1;
        }
    });
    t
}

/// The series' columns, in [`SERIES_FIELDS`] order, point after point
/// (`w`: the interval width, s).
fn columns(points: &Points, t: &Tallies, pcts: &[(Option<f64>, Option<f64>)], w: f64) -> [Vec<Value>; 9] {
    let mut cols: [Vec<Value>; 9] = Default::default();
    for (run, (&n, &at)) in points.counts.iter().zip(&points.offsets).enumerate() {
        for i in 0..n {
            let (p50, p99) = pcts[at + i];
            let row = [
                json!(run),
                json!(i as f64 * w),
                json!(t.busy_ms[at + i] / points.width_ms),
                json!(t.sent[at + i]),
                json!(t.completed[at + i]),
                json!(t.failed[at + i]),
                json!(t.tokens[at + i] / w),
                json!(p50),
                json!(p99),
            ];
            for (col, v) in cols.iter_mut().zip(row) {
                col.push(v);
            }
        }
    }
    cols
}

/// The series' fields, in column order.
const SERIES_FIELDS: [&str; 9] =
    ["repeat", "t", "in_flight", "sent", "completed", "failed", "output_tok_s", "ttft_p50_ms", "ttft_p99_ms"];

pub fn check_series(c: &mut Checker<'_>, artifact: &Map<String, Value>, rows: &Rows) {
    let Some(series) = artifact.get("series").filter(|s| s.is_object()) else { return };
    c.uncheck("series.interval_s", "the interval width (an input)");
    let Some(w) = series.get("interval_s").and_then(Value::as_f64).filter(|w| *w > 0.0) else { return };
    let width_ms = w * 1000.0;
    let runs = artifact.get("repeat").and_then(Value::as_u64).unwrap_or(1).clamp(1, MAX_RUNS) as usize;
    // First scan: are the times all there, and where does each run end.
    let Some(ends) = run_ends(rows, runs) else {
        c.uncheck("series", "records lack actual_send_ms/finished_ms");
        return;
    };
    let points = Points::of(&ends, width_ms);
    let tallies = tally_points(rows, &points);
    // The point an eligible record with a `ttft_ms` was sent in, and that ttft:
    // counted by the tally's scan, then placed point by point in one column by a second.
    let ttft_point = |r: &Row| {
        let (Some((n, at)), Some(t)) = (points.of_run(r.repeat() as usize), r.get(Col::Ttft)) else {
            return None;
        };
        r.eligible().then(|| (at + point(r.get(Col::ActualSend).unwrap_or(0.0), width_ms, n), t))
    };
    let pcts = ttft_percentiles(rows, &tallies.ttft_counts, &ttft_point);
    for (name, col) in SERIES_FIELDS.iter().zip(columns(&points, &tallies, &pcts, w)) {
        c.check(&format!("series.{name}"), Value::Array(col));
    }
    c.sweep("series", "not a series field anvil defines");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two records by hand: one sent at 0.5 s ending at 2.5 s with 4 tokens
    /// after a 0.5 s first output, one failed from 1.2 s to 1.4 s.
    fn artifact(in_flight: [f64; 3]) -> Value {
        json!({
            "schema": crate::rederive::SCHEMA,
            "repeat": 1,
            "request_timings": [
                {"repeat": 0, "actual_send_ms": 500.0, "finished_ms": 2500.0, "performance_eligible": true,
                 "output_tokens": 4, "time_to_first_output_ms": 500.0, "ttft_ms": 600.0},
                {"repeat": 0, "actual_send_ms": 1200.0, "finished_ms": 1400.0, "performance_eligible": false},
            ],
            "series": {
                "interval_s": 1.0,
                "repeat": [0, 0, 0],
                "t": [0.0, 1.0, 2.0],
                "in_flight": in_flight,
                "sent": [1, 1, 0],
                "completed": [0, 0, 1],
                "failed": [0, 1, 0],
                // Tokens from 1.0 s to 2.5 s: 4 over 1.5 s.
                "output_tok_s": [0.0, 4.0 / 1.5, 2.0 / 1.5],
                "ttft_p50_ms": [600.0, null, null],
                "ttft_p99_ms": [600.0, null, null],
            },
        })
    }

    #[test]
    fn a_hand_computed_series_checks_and_an_edit_does_not() {
        let check = |a: &Value| crate::rederive::rederive(a).unwrap();
        let good = artifact([0.5, 1.2, 0.5]);
        let report = check(&good);
        assert!(report.is_clean(), "{:#?}", report.mismatches);
        assert!(report.was_checked("series.output_tok_s"));
        let report = check(&artifact([0.5, 1.0, 0.5]));
        assert_eq!(report.mismatches.len(), 1);
        assert_eq!(report.mismatches[0].path, "series.in_flight");
    }

    #[test]
    fn point_percentiles_in_groups_equal_the_sorted_ones() {
        use crate::bootstrap::SplitMix64;
        use crate::columns::RowWriter;
        // A point too big for one group among small ones, and an empty one.
        let counts = [10, 0, GROUP_AT_MOST + 5, 3, GROUP_AT_MOST / 2, GROUP_AT_MOST / 2 + 1];
        let mut rng = SplitMix64::new(7);
        let mut writer = RowWriter::new().unwrap();
        let mut by_point: Vec<Vec<f64>> = vec![Vec::new(); counts.len()];
        // Rows of the points interleaved, in record order, with ties.
        let mut left = counts;
        while left.iter().any(|n| *n > 0) {
            let p = rng.index(counts.len());
            if left[p] == 0 {
                continue;
            }
            left[p] -= 1;
            let t = (rng.index(500) as f64) / 8.0;
            by_point[p].push(t);
            let mut row = Row::default();
            row.set(Col::Ttft, Some(t));
            row.set(Col::Stage, Some(p as f64));
            writer.push(&row).unwrap();
        }
        let rows = writer.finish().unwrap();
        let point_of = |r: &Row| Some((r.get(Col::Stage)? as usize, r.get(Col::Ttft)?));
        let got = ttft_percentiles(&rows, &counts, &point_of);
        let want: Vec<(Option<f64>, Option<f64>)> = by_point
            .iter()
            .map(|v| {
                let mut v = v.clone();
                v.sort_by(f64::total_cmp);
                let pct = |q| (!v.is_empty()).then(|| percentile_sorted(&v, q));
                (pct(50), pct(99))
            })
            .collect();
        assert_eq!(got, want);
    }
}
