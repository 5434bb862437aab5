//! One statistic's estimate and interval at any level, computed as the
//! artifact computes its 95% ones (exact order-statistic ranks widened by
//! batch means; the batch-means interval of the mean; none below 50 values,
//! nor for a percentile whose batches cannot expect a value beyond it, nor
//! for a statistic whose batch means look correlated at the fewest batches).
//! A stopping rule asks for them at the level its looks leave it.

use super::batch_means::Batching;
use super::stats::{mean_bounds, nearest_rank, percentile_bounds};
use super::student_t::Level;

/// A statistic of a latency sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Statistic {
    /// The nearest-rank percentile (1–99).
    Percentile(u32),
    Mean,
}

/// An estimate and its two-sided interval; a side is `None` when the
/// sample cannot bound the statistic on that side at this level.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    pub value: f64,
    pub low: Option<f64>,
    pub high: Option<f64>,
}

impl Estimate {
    /// Half the interval's width over the estimate; `None` when a side is
    /// unbounded or the estimate is 0.
    pub fn relative_half_width(&self) -> Option<f64> {
        let (low, high) = (self.low?, self.high?);
        (self.value != 0.0).then(|| (high - low) / 2.0 / self.value.abs())
    }
}

/// `statistic` of `ordered` (finite values, in the order their requests
/// were recorded) with its interval at `level`; `None` when empty.
pub fn estimate(ordered: &[f64], statistic: Statistic, level: Level) -> Option<Estimate> {
    let n = ordered.len();
    if n == 0 {
        return None;
    }
    let batches = Batching::of(n);
    match statistic {
        Statistic::Percentile(percent) => {
            let mut sorted = ordered.to_vec();
            sorted.sort_by(f64::total_cmp);
            // Withheld (batch means correlated): unbounded, never precise.
            let (low, high) =
                percentile_bounds(ordered, &sorted, percent, batches, level).unwrap_or_default();
            Some(Estimate { value: nearest_rank(&sorted, percent), low, high })
        }
        Statistic::Mean => {
            let value = ordered.iter().sum::<f64>() / n as f64;
            // Too few to batch, or withheld: no interval (as for a percentile).
            let bounds = mean_bounds(ordered, value, batches, level).ok().flatten();
            let (low, high) = bounds.map(|(_, _, (low, high))| (Some(low), Some(high))).unwrap_or_default();
            Some(Estimate { value, low, high })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::stats::Distribution;

    /// A deterministic, correlated series (a slow wave plus a fast one).
    fn series(n: usize) -> Vec<f64> {
        (0..n).map(|i| 100.0 + 20.0 * (i as f64 / 37.0).sin() + ((i * 7919) % 13) as f64).collect()
    }

    #[test]
    fn at_95_percent_it_is_the_artifacts_interval() {
        for n in [20, 49, 50, 400, 1234] {
            let values = series(n);
            let d = Distribution::of(&values).unwrap();
            for (i, percent) in [50u32, 90, 95, 99].into_iter().enumerate() {
                let e = estimate(&values, Statistic::Percentile(percent), Level::NINETY_FIVE).unwrap();
                assert_eq!((e.low, e.high), d.percentile_ci95[i], "n {n} p{percent}");
            }
            let mean = estimate(&values, Statistic::Mean, Level::NINETY_FIVE).unwrap();
            // The same interval; the sums run in another order (sorted there).
            if let Some((low, high)) = d.mean_batch_ci95 {
                assert!((mean.low.unwrap() - low).abs() < 1e-9 && (mean.high.unwrap() - high).abs() < 1e-9);
            }
        }
    }

    #[test]
    fn a_higher_level_is_never_narrower() {
        // Correlated over a few values, not a slow wave: its batches pass.
        let values: Vec<f64> = crate::output::coverage_tests::Ar1::new(1, 0.5)
            .run(800)
            .iter()
            .map(|v| 100.0 + 10.0 * v)
            .collect();
        for statistic in [Statistic::Percentile(50), Statistic::Percentile(90), Statistic::Mean] {
            let at95 = estimate(&values, statistic, Level::NINETY_FIVE).unwrap();
            let at99 = estimate(&values, statistic, Level { confidence: 0.99 }).unwrap();
            // An unbounded side (None) is the widest there is.
            let (low, high) = (f64::NEG_INFINITY, f64::INFINITY);
            let (low95, high95) = (at95.low.unwrap_or(low), at95.high.unwrap_or(high));
            let (low99, high99) = (at99.low.unwrap_or(low), at99.high.unwrap_or(high));
            assert!(at95.low.is_some() && at95.high.is_some(), "{statistic:?} has a 95% interval: {at95:?}");
            assert!(low99 <= low95 && high99 >= high95, "{statistic:?}: {at95:?} {at99:?}");
            let width = |e: &Estimate| e.relative_half_width().unwrap_or(f64::INFINITY);
            assert!(width(&at99) >= width(&at95));
        }
    }
}
