//! The numbers behind a cell's plots: percentiles, thinned CDFs, histogram
//! bins and output rate over time, each bounded so a big cell stays light.

use super::cell_plots::{CellPlots, col, get};
use super::format::num;

/// Points drawn per cumulative distribution.
pub(super) const CDF_POINTS: usize = 200;
const BINS: usize = 40;

/// Nearest-rank percentile of sorted values, as the artifact defines it
/// (`anvil_evidence::stats`, in integers: no rounding of `q/100 · n`).
pub(super) fn quantile(sorted: &[f64], q: u32) -> Option<f64> {
    (!sorted.is_empty()).then(|| anvil_evidence::stats::percentile_sorted(sorted, q))
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
    // Equal values counted once each, so both kinds of input share one rule;
    // the runs are visited in place (a list of them would be twice the column).
    histogram_bins_counted(sorted.chunk_by(|a, b| a == b).map(|run| (run[0], run.len() as u64)))
}

/// [`histogram_bins`] of sorted distinct values, each with how many times it
/// occurs (visited a few times over, never collected).
pub(super) fn histogram_bins_counted(
    counted: impl Iterator<Item = (f64, u64)> + Clone,
) -> (Vec<(f64, f64, u64)>, Option<String>) {
    let Some((lo, _)) = counted.clone().next() else { return (Vec::new(), None) };
    let total: u64 = counted.clone().map(|(_, n)| n).sum();
    // Nearest rank of the p99.5 over the counts.
    let rank = ((0.995 * total as f64).ceil() as u64).clamp(1, total);
    let mut seen = 0;
    let top = counted
        .clone()
        .find(|(_, n)| {
            seen += n;
            seen >= rank
        })
        .map_or(lo, |(v, _)| v);
    let max = counted.clone().last().map_or(lo, |(v, _)| v);
    let hi = if top > lo { top } else { lo + 1e-6_f64.max(lo.abs() * 0.01) };
    let bins = BINS.min(total.max(1) as usize);
    let width = (hi - lo) / bins as f64;
    let mut counts = vec![0u64; bins];
    for (v, n) in counted.clone() {
        let i = (((v - lo) / width) as usize).min(bins - 1);
        counts[i] += n;
    }
    let folded: u64 = counted.filter(|(v, _)| *v > hi).map(|(_, n)| n).sum();
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
pub(super) fn rate_over_time(plots: &CellPlots) -> (Vec<(f64, f64)>, f64) {
    let mut end_ms = 0.0f64;
    plots.scan(|row| end_ms = end_ms.max(row[col::FINISHED]));
    let end = end_ms / 1000.0;
    if end <= 0.0 {
        return (Vec::new(), 0.0);
    }
    let windows = (plots.requests / 8).clamp(2, 60);
    let width = end / windows as f64;
    let mut tokens = vec![0u64; windows];
    plots.scan(|row| {
        if get(row, col::FAILURE).is_none() {
            let i = ((row[col::FINISHED] / 1000.0 / width) as usize).min(windows - 1);
            tokens[i] += get(row, col::OUTPUT_TOKENS).map_or(0, |n| n as u64);
        }
    });
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
        assert_eq!(quantile(&v, 50), Some(2.0));
        assert_eq!(quantile(&v, 0), Some(1.0));
        assert_eq!(quantile(&v, 100), Some(4.0));
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

    #[test]
    fn counted_values_bin_as_the_values_they_count() {
        let v = [1.0, 1.0, 1.0, 2.0, 2.5, 2.5, 9.0, 40.0];
        let counted = [(1.0, 3), (2.0, 1), (2.5, 2), (9.0, 1), (40.0, 1)];
        assert_eq!(histogram_bins(&v), histogram_bins_counted(counted.into_iter()));
        assert_eq!(histogram_bins_counted(std::iter::empty()), (Vec::new(), None));
        assert_eq!(histogram_bins(&[]), (Vec::new(), None));
    }
}
