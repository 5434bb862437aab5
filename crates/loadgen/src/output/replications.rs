//! A repeated cell's intervals: its repeats as independent replications.
//!
//! Batch means over the concatenated repeats estimate one long run's
//! noise, and say nothing of what differs from run to run (a server's
//! state, its caches, the draw of arrivals): on data whose repeats differ
//! by such an offset they held the configuration's value in 63% of runs
//! (docs/benchmarks.md). With `R ≥ 2` repeats, every distribution's
//! intervals are the replications' instead (the method of independent
//! replications; for repeats of unequal size the ratio estimator's variance
//! as in cluster sampling, Cochran, *Sampling Techniques*, 3rd ed., 1977,
//! §6.4 and §9A): for a ratio `Σy_r / Σn_r` over repeats `r`,
//! `v = R/((R − 1)·N²) · Σ (y_r − n_r·Σy/N)²`, `N = Σn_r`, with the
//! two-sided 95% Student-t for `R − 1` degrees of freedom.
//! - The mean: `y_r` is repeat `r`'s sum, the interval `Σy/N ± t·√v`.
//! - A percentile `p`: `y_r` counts repeat `r`'s values at or below the
//!   pooled estimate, so `Σy/N` is the pooled empirical CDF there; the
//!   exact order-statistic ranks among all `N` widen around `N·p` by
//!   `max(1, √(v / (p(1 − p)/N))·t/1.96)`, the repeats playing the batches
//!   (Heidelberger & Lewis 1984, as [`super::batch_means`] does); each
//!   repeat must expect a value beyond the percentile on its narrow side
//!   (`n_r·min(p, 1 − p) ≥ 1`), as a batch must, else there is none.
//! - `batches` is `R`; effective samples `s²/v`; none below 50 values.
//!
//! Replications are independent whatever the correlation inside a run, so
//! no independence test applies. The same estimator pools a gate's extra
//! repeats (`anvil_evidence::pool`, which `anvil verify` also uses to
//! re-derive these figures): the checker's copy, kept apart on purpose.

use super::batch_means::{Batching, widen_ranks};
use super::stats::{Distribution, INTERVAL_PERCENTILES, nearest_rank, quantile_interval_ranks};
use super::student_t::{Z95, t95};

/// The `metrics` key that says which truth the intervals are about.
pub const TRUTH_KEY: &str = "interval_truth";
/// One run: the long-run value of this run's conditions (batch means).
pub const THIS_RUN: &str = "this-run";
/// Several runs: the value of the configuration, run-to-run noise included.
pub const THIS_CONFIGURATION: &str = "this-configuration";

/// The variance of `Σy_r / Σn_r` over replications `(n_r, y_r)`; `None`
/// below two of them or without values.
pub fn ratio_variance(parts: &[(f64, f64)]) -> Option<f64> {
    let n: f64 = parts.iter().map(|(n, _)| n).sum();
    if parts.len() < 2 || n <= 0.0 {
        return None;
    }
    let ratio = parts.iter().map(|(_, y)| y).sum::<f64>() / n;
    let squares: f64 = parts.iter().map(|(n_r, y_r)| (y_r - n_r * ratio).powi(2)).sum();
    let r = parts.len() as f64;
    Some(r / (r - 1.0) * squares / (n * n))
}

fn t_for(replications: usize) -> f64 {
    t95(replications - 1).unwrap_or(Z95)
}

/// `pooled` (every repeat's values, repeat after repeat, each in recorded
/// order) with its intervals across `repeats` (each repeat's values, in
/// the same order); `None` when empty. Fewer than two repeats: the
/// within-run intervals, unchanged.
pub fn replicated(repeats: &[Vec<f64>]) -> Option<Distribution> {
    let pooled: Vec<f64> = repeats.iter().flatten().copied().filter(|v| v.is_finite()).collect();
    let d = Distribution::of_vec(pooled.clone())?;
    if repeats.len() < 2 {
        return Some(d);
    }
    let finite = |values: &Vec<f64>| values.iter().copied().filter(|v| v.is_finite()).collect::<Vec<_>>();
    let repeats: Vec<Vec<f64>> = repeats.iter().map(finite).collect();
    let n = pooled.len();
    let enough = n >= 50;
    let sums: Vec<(f64, f64)> = repeats.iter().map(|r| (r.len() as f64, r.iter().sum())).collect();
    let variance = ratio_variance(&sums).filter(|_| enough);
    let mean = sums.iter().map(|(_, y)| y).sum::<f64>() / n as f64;
    let half = variance.map(|v| t_for(repeats.len()) * v.sqrt());
    let mut sorted = pooled;
    sorted.sort_unstable_by(f64::total_cmp);
    let percentile_ci95 = INTERVAL_PERCENTILES.map(|percent| {
        let estimate = nearest_rank(&sorted, percent);
        let parts: Vec<(f64, f64)> = repeats
            .iter()
            .map(|r| (r.len() as f64, r.iter().filter(|v| **v <= estimate).count() as f64))
            .collect();
        let (l, u) = percentile_ranks(&parts, percent);
        (l.map(|r| sorted[r - 1]), u.map(|r| sorted[r - 1]))
    });
    let spread = d.stddev.map(|s| s * s);
    Some(Distribution {
        percentile_ci95,
        batches: enough.then_some(Batching { count: repeats.len(), size: n / repeats.len() }),
        mean_batch_ci95: half.map(|h| (mean - h, mean + h)),
        effective_samples: variance
            .filter(|v| *v > 0.0)
            .zip(spread)
            .map(|(v, s)| s / v)
            .filter(|e| e.is_finite()),
        mean_withheld: None,
        percentile_withheld: [None; 4],
        ..d
    })
}

/// The ranks (1-based, among all `N`) bounding percentile `percent` over
/// repeats `(n_r, values ≤ estimate)`; none when a repeat expects less
/// than one value beyond it on its narrow side, or below 50 values.
pub fn percentile_ranks(parts: &[(f64, f64)], percent: u32) -> (Option<usize>, Option<usize>) {
    let n = parts.iter().map(|(n, _)| n).sum::<f64>() as usize;
    let narrow = f64::from(percent.min(100u32.saturating_sub(percent)));
    if parts.iter().any(|(n_r, _)| n_r * narrow < 100.0) {
        return (None, None);
    }
    let Some(v) = ratio_variance(parts).filter(|_| n >= 50) else { return (None, None) };
    let p = f64::from(percent) / 100.0;
    let w = ((v / (p * (1.0 - p) / n as f64)).sqrt() * t_for(parts.len()) / Z95).max(1.0);
    widen_ranks(n, p, quantile_interval_ranks(n, percent), w)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_repeat_keeps_its_run_and_offsets_widen_the_mean() {
        let run = |shift: f64| (0..200).map(|i| shift + ((i * 7919) % 101) as f64).collect::<Vec<_>>();
        let one = replicated(&[run(0.0)]).unwrap();
        assert_eq!(Some(one.clone()), Distribution::of(&run(0.0)));
        let alike = replicated(&[run(0.0), run(0.0), run(0.0)]).unwrap();
        let apart = replicated(&[run(0.0), run(30.0), run(-30.0)]).unwrap();
        assert_eq!(alike.batches, Some(Batching { count: 3, size: 200 }));
        let width = |d: &Distribution| d.mean_batch_ci95.map(|(l, h)| h - l).unwrap();
        assert!(width(&alike) < 1e-9, "identical repeats have no run-to-run spread");
        // Σ(30²)·2 over R−1 = 2 and N² with n_r = 200: √v = 30·√(1.5·2·200²)/600·… by hand:
        let v = 3.0 / 2.0 * (2.0 * (200.0f64 * 30.0).powi(2)) / 600.0f64.powi(2);
        assert!((width(&apart) - 2.0 * 4.303 * v.sqrt()).abs() < 1e-9, "{}", width(&apart));
        // A repeat too short for p99 (n_r < 100) leaves it without an interval.
        assert_eq!(percentile_ranks(&[(400.0, 396.0), (400.0, 396.0), (60.0, 59.0)], 99), (None, None));
    }
}
