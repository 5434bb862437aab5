//! The numbers behind a cell's plots: percentiles, thinned CDFs, histogram
//! bins and output rate over time, each bounded so a big cell stays light.

use super::format::num;
use crate::report::model::Timing;

/// Points drawn per cumulative distribution.
pub(super) const CDF_POINTS: usize = 200;
const BINS: usize = 40;

pub(super) fn sorted(values: impl Iterator<Item = f64>) -> Vec<f64> {
    let mut v: Vec<f64> = values.filter(|v| v.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    v
}

/// Nearest-rank percentile of sorted values.
pub(super) fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((q / 100.0) * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

/// Step-free CDF points (value, fraction ≤ value), at most CDF_POINTS; true when thinned.
pub(super) fn cdf(sorted: &[f64]) -> (Vec<(f64, f64)>, bool) {
    let n = sorted.len();
    if n <= CDF_POINTS {
        return (sorted.iter().enumerate().map(|(i, &v)| (v, (i + 1) as f64 / n as f64)).collect(), false);
    }
    let points = (0..CDF_POINTS)
        .map(|k| {
            let i = (k * (n - 1)) / (CDF_POINTS - 1);
            (sorted[i], (i + 1) as f64 / n as f64)
        })
        .collect();
    (points, true)
}

/// Equal-width bins from the minimum to the p99.5; values above fold into
/// the last bin, and the note says so.
pub(super) fn histogram_bins(sorted: &[f64]) -> (Vec<(f64, f64, u64)>, Option<String>) {
    let Some(&lo) = sorted.first() else { return (Vec::new(), None) };
    let top = quantile(sorted, 99.5).unwrap_or(lo);
    let max = *sorted.last().unwrap_or(&lo);
    let hi = if top > lo { top } else { lo + 1e-6_f64.max(lo.abs() * 0.01) };
    let bins = BINS.min(sorted.len().max(1));
    let width = (hi - lo) / bins as f64;
    let mut counts = vec![0u64; bins];
    for &v in sorted {
        let i = (((v - lo) / width) as usize).min(bins - 1);
        counts[i] += 1;
    }
    let folded = sorted.iter().filter(|&&v| v > hi).count();
    let note = (folded > 0)
        .then(|| format!("{folded} values above {} (max {}) in the last bin", num(Some(hi)), num(Some(max))));
    let out = counts
        .into_iter()
        .enumerate()
        .map(|(i, n)| (lo + i as f64 * width, lo + (i + 1) as f64 * width, n))
        .collect();
    (out, note)
}

pub(super) fn bin_rows(bins: &[(f64, f64, u64)]) -> Vec<Vec<String>> {
    bins.iter().map(|(lo, hi, n)| vec![num(Some(*lo)), num(Some(*hi)), n.to_string()]).collect()
}

/// Output tokens of requests finishing in each window, as tok/s; ≤ 60 windows.
pub(super) fn rate_over_time(timings: &[Timing]) -> (Vec<(f64, f64)>, f64) {
    let end = timings.iter().map(|t| t.finished_ms).fold(0.0, f64::max) / 1000.0;
    if end <= 0.0 {
        return (Vec::new(), 0.0);
    }
    let windows = (timings.len() / 8).clamp(2, 60);
    let width = end / windows as f64;
    let mut tokens = vec![0u64; windows];
    for t in timings.iter().filter(|t| t.failure.is_none()) {
        let i = ((t.finished_ms / 1000.0 / width) as usize).min(windows - 1);
        tokens[i] += t.output_tokens.unwrap_or(0);
    }
    let points =
        tokens.iter().enumerate().map(|(i, &n)| ((i + 1) as f64 * width, n as f64 / width)).collect();
    (points, width)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_nearest_rank() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile(&v, 50.0), Some(2.0));
        assert_eq!(quantile(&v, 0.0), Some(1.0));
        assert_eq!(quantile(&v, 100.0), Some(4.0));
    }

    #[test]
    fn cdf_thins_to_its_budget() {
        let v: Vec<f64> = (0..10_000).map(f64::from).collect();
        let (points, thinned) = cdf(&v);
        assert!(thinned);
        assert_eq!(points.len(), CDF_POINTS);
        assert_eq!(points.last().map(|p| p.1), Some(1.0));
    }

    #[test]
    fn histogram_counts_everything() {
        let v: Vec<f64> = (0..1000).map(|i| f64::from(i) / 10.0).collect();
        let (bins, note) = histogram_bins(&v);
        assert_eq!(bins.iter().map(|b| b.2).sum::<u64>(), 1000);
        assert!(note.is_some());
    }
}
