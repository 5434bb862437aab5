//! The steady-state window of a run: where its latencies stop drifting.
//! A run starts on an idle server and ends as it drains, so its first and
//! last requests see less load than the long run does (on the simulated
//! engine under a Poisson load, a 400-request run's first tenth had E2E
//! 6% below its middle and its last tenth 2% below), and the whole run's
//! estimates lean low by about half their standard deviation.
//!
//! The rule is MSER-5 (White, "An effective truncation heuristic for bias
//! reduction in simulation output", *Simulation* 69(6), 1997; White, Cobb &
//! Spratt, "A comparison of five steady-state truncation heuristics",
//! *Proc. Winter Simulation Conference* 2000): cut the series, in send
//! order, into batches of 5 and drop the `d` leading batches that minimise
//! the marginal standard error `Σ_{j>d} (Z_j − Z̄_d)² / (k − d)²` of what
//! is left, `d` at most half the batches. The same rule on the reversed
//! series trims the drain. It reads per-request values rather than a
//! per-second series because a short run has only a few seconds, too few
//! points for any rule. A cut at the half-way limit means the rule found no
//! steady part: the window is then marked not stationary.

use serde::{Deserialize, Serialize};

use super::record_log::{Stored, col, is};

/// Values per batch (the "5" of MSER-5).
pub const BATCH: usize = 5;
/// Fewest values the rule is run on; below it the window is the whole run.
pub const MIN_VALUES: usize = 50;

/// How many leading values MSER-5 drops from `values`, and whether the cut
/// stayed inside the half-way limit (`false`: no steady part was found).
pub fn truncation(values: &[f64]) -> (usize, bool) {
    if values.len() < MIN_VALUES {
        return (0, true);
    }
    let means: Vec<f64> = values.chunks_exact(BATCH).map(|b| b.iter().sum::<f64>() / BATCH as f64).collect();
    let k = means.len();
    let limit = k / 2;
    // Suffix sums give each candidate's statistic in O(1).
    let (mut sum, mut sum_sq) = (0.0, 0.0);
    let mut best = (f64::INFINITY, 0);
    let mut statistics = vec![0.0; k];
    for d in (0..k).rev() {
        sum += means[d];
        sum_sq += means[d] * means[d];
        let left = (k - d) as f64;
        statistics[d] = (sum_sq - sum * sum / left).max(0.0) / (left * left);
    }
    for (d, &s) in statistics.iter().enumerate().take(limit + 1) {
        if s < best.0 {
            best = (s, d);
        }
    }
    (best.1 * BATCH, best.1 < limit)
}

/// The window `[start, end)` of `series` (several metrics' values, each in
/// send order, of equal length): each end trimmed by the most any metric
/// asks; and whether every cut found a steady part.
pub fn window(series: &[&[f64]]) -> (usize, usize, bool) {
    let n = series.iter().map(|s| s.len()).min().unwrap_or(0);
    let (mut head, mut tail, mut stationary) = (0, 0, true);
    for values in series {
        let (h, steady_head) = truncation(&values[..n]);
        let reversed: Vec<f64> = values[..n].iter().rev().copied().collect();
        let (t, steady_tail) = truncation(&reversed);
        head = head.max(h);
        tail = tail.max(t);
        stationary &= steady_head && steady_tail;
    }
    if head + tail >= n {
        return (0, n, false);
    }
    (head, n - tail, stationary)
}

pub const RULE: &str = "MSER-5 from both ends, on ttft and e2e of the eligible requests in send order";

/// The artifact's `steady_state`: the window the rule would keep. A
/// diagnostic, not an estimate: on a correlated load the rule cuts on
/// noise as much as on transients, and the window's figures cover the long
/// run worse than the whole run's (docs/metrics.md "Steady state"), so the
/// artifact does not carry them; `steady-load` removes the transients instead.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SteadyState {
    pub rule: String,
    /// Eligible requests dropped from the start (warm-up) and the end (drain).
    pub trimmed_head: usize,
    pub trimmed_tail: usize,
    pub window_requests: usize,
    /// Sends of the window's first and last requests, ms after the run started.
    pub window_from_send_ms: Option<f64>,
    pub window_to_send_ms: Option<f64>,
    /// False when a cut reached the half-way limit: no steady part was
    /// found, the run was still drifting.
    pub stationary: bool,
}

/// The steady-state window of a one-run cell without stages (a staged
/// cell changes its load on purpose; repeats each have their own start).
pub fn of(store: &Stored, repeats: u32, staged: bool) -> std::io::Result<Option<SteadyState>> {
    if repeats != 1 || staged {
        return Ok(None);
    }
    let eligible = |row: &super::record_log::Row| is(row, col::ELIGIBLE);
    let ttft = store.column(col::TTFT, eligible)?;
    let e2e = store.column(col::E2E, eligible)?;
    let sends = store.column(col::ACTUAL_SEND, eligible)?;
    if ttft.len() != e2e.len() || e2e.len() != sends.len() || e2e.is_empty() {
        return Ok(None);
    }
    let (start, end, stationary) = window(&[&ttft, &e2e]);
    Ok(Some(SteadyState {
        rule: RULE.into(),
        trimmed_head: start,
        trimmed_tail: e2e.len() - end,
        window_requests: end - start,
        window_from_send_ms: sends.get(start).copied(),
        window_to_send_ms: end.checked_sub(1).and_then(|i| sends.get(i)).copied(),
        stationary,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A level series with a noise that repeats every 7 values.
    fn level(n: usize, at: f64) -> Vec<f64> {
        (0..n).map(|i| at + ((i * 3) % 7) as f64 * 0.1).collect()
    }

    #[test]
    fn a_steady_series_keeps_everything_and_a_warm_up_is_cut() {
        assert_eq!(truncation(&level(400, 10.0)).0, 0);
        // 60 values climbing from 0 to the level, then the level.
        let mut warming: Vec<f64> = (0..60).map(|i| 10.0 * i as f64 / 60.0).collect();
        warming.extend(level(340, 10.0));
        let (cut, steady) = truncation(&warming);
        assert!((50..=70).contains(&cut), "cut {cut}");
        assert!(steady);
    }

    #[test]
    fn a_drift_through_the_whole_run_is_not_stationary() {
        let rising: Vec<f64> = (0..400).map(|i| i as f64).collect();
        let (_, steady) = truncation(&rising);
        assert!(!steady);
    }

    #[test]
    fn the_window_trims_both_ends_by_the_widest_cut() {
        let mut series: Vec<f64> = (0..40).map(|i| i as f64 / 4.0).collect();
        series.extend(level(320, 10.0));
        series.extend((0..40).map(|i| 10.0 - i as f64 / 4.0));
        let (start, end, steady) = window(&[&series, &level(400, 3.0)]);
        assert!((20..=50).contains(&start) && (350..=380).contains(&end), "{start}..{end}");
        assert!(steady);
        assert_eq!(window(&[&level(20, 1.0)]), (0, 20, true), "too short to judge: all of it");
    }
}
