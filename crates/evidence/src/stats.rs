//! The distribution statistics of the capacity-v4 protocol, written from its
//! definitions (not from the load generator's code):
//!
//! - nearest-rank percentile q of n sorted values: the value at rank
//!   `ceil(q·n/100)` (1-based, at least 1), computed in integers so that
//!   e.g. p95 of 20 values is exactly rank 19;
//! - mean: Σx / n;
//! - sample standard deviation: sqrt(Σ(x − mean)² / (n − 1)), undefined below 2 values;
//! - 95% CI of the mean: mean ± 1.96 · sd / √n (the protocol's z, exactly 1.96).

/// The protocol's normal quantile for a 95% CI of the mean.
pub const Z95_PROTOCOL: f64 = 1.96;

/// Percentiles every distribution block carries, in percent.
pub const PERCENTILES: [u32; 6] = [25, 50, 75, 90, 95, 99];

/// Below this many samples p99 is descriptive only.
pub const P99_MIN_SAMPLES: usize = 100;

/// One sample's summary, as the protocol defines it.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    pub sd: Option<f64>,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    pub min: f64,
    pub max: f64,
    /// Values at [`PERCENTILES`].
    pub pct: [f64; 6],
}

/// Rank (1-based) of the nearest-rank percentile `q` among `n` values.
pub fn nearest_rank_index(q: u32, n: usize) -> usize {
    let rank = (q as usize * n).div_ceil(100);
    rank.max(1).min(n)
}

/// Nearest-rank percentile of an already sorted, non-empty slice.
pub fn percentile_sorted(sorted: &[f64], q: u32) -> f64 {
    sorted[nearest_rank_index(q, sorted.len()) - 1]
}

/// Values in their order (the records'), visited as often as a statistic
/// needs: a slice in memory, or a column of the row file
/// ([`crate::columns::Column`]) read again on each visit instead of held.
pub trait Ordered {
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Calls `f` with every value, in order.
    fn each(&self, f: &mut dyn FnMut(f64));
}

impl Ordered for [f64] {
    fn len(&self) -> usize {
        <[f64]>::len(self)
    }

    fn each(&self, f: &mut dyn FnMut(f64)) {
        self.iter().for_each(|v| f(*v));
    }
}

/// Arithmetic mean; `None` for no values.
pub fn mean(values: &[f64]) -> Option<f64> {
    mean_of(values)
}

/// [`mean`] of ordered values (summed in their order).
pub fn mean_of(values: &(impl Ordered + ?Sized)) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut sum = 0.0;
    values.each(&mut |v| sum += v);
    Some(sum / values.len() as f64)
}

/// Sample (n − 1) standard deviation; `None` below two values.
pub fn sample_sd(values: &[f64]) -> Option<f64> {
    sample_sd_of(values)
}

/// [`sample_sd`] of ordered values.
pub fn sample_sd_of(values: &(impl Ordered + ?Sized)) -> Option<f64> {
    if values.len() < 2 {
        return None;
    }
    let m = mean_of(values)?;
    let mut ss = 0.0;
    values.each(&mut |v| ss += (v - m) * (v - m));
    Some((ss / (values.len() - 1) as f64).sqrt())
}

/// Median by nearest rank (p50), the statistic the comparisons use.
pub fn median(values: &[f64]) -> Option<f64> {
    percentile(values, 50)
}

/// Nearest-rank percentile of unsorted values; `None` for no values.
pub fn percentile(values: &[f64], q: u32) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    Some(percentile_sorted(&sorted, q))
}

impl Summary {
    /// The summary of `values` with a CI of half-width `z · sd / √n`;
    /// `None` for no values. Non-finite values are a caller error: they
    /// never come from JSON numbers.
    pub fn with_z(values: &[f64], z: f64) -> Option<Self> {
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        Self::of_sorted(values, &sorted, z)
    }

    /// [`Summary::with_z`] of `values` whose ascending copy is `sorted`
    /// (for a caller that holds only the sorted copy and can visit the values).
    pub fn of_sorted(values: &(impl Ordered + ?Sized), sorted: &[f64], z: f64) -> Option<Self> {
        Self::of_ranked(values, sorted.len(), &|r| sorted[r - 1], z)
    }

    /// The 1-based ranks [`Summary::of_ranked`] reads, among `n` values.
    pub fn ranks(n: usize) -> Vec<usize> {
        let mut ranks = vec![1, n];
        ranks.extend(PERCENTILES.map(|q| nearest_rank_index(q, n)));
        ranks
    }

    /// [`Summary::with_z`] of the `n` `values`, for a caller that holds none
    /// of them sorted: `at(rank)` is the value at a 1-based rank of
    /// [`Summary::ranks`] in ascending order.
    pub fn of_ranked(
        values: &(impl Ordered + ?Sized),
        n: usize,
        at: &dyn Fn(usize) -> f64,
        z: f64,
    ) -> Option<Self> {
        let m = mean_of(values)?;
        if n == 0 {
            return None;
        }
        let sd = sample_sd_of(values);
        let half = sd.map(|s| z * s / (n as f64).sqrt());
        Some(Self {
            n,
            mean: m,
            sd,
            ci_low: half.map(|h| m - h),
            ci_high: half.map(|h| m + h),
            min: at(1),
            max: at(n),
            pct: PERCENTILES.map(|q| at(nearest_rank_index(q, n))),
        })
    }

    /// The protocol's summary (z = 1.96).
    pub fn of(values: &[f64]) -> Option<Self> {
        Self::with_z(values, Z95_PROTOCOL)
    }

    pub fn percentile(&self, q: u32) -> Option<f64> {
        PERCENTILES.iter().position(|p| *p == q).map(|i| self.pct[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_in_integers() {
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!(percentile(&v, 95), Some(19.0));
        assert_eq!(percentile(&v, 25), Some(5.0));
        assert_eq!(percentile(&v, 99), Some(20.0));
        assert_eq!(percentile(&[4.0, 1.0, 3.0], 50), Some(3.0));
        assert_eq!(percentile(&[7.0], 1), Some(7.0));
        assert_eq!(percentile(&[], 50), None);
        assert_eq!(nearest_rank_index(0, 5), 1);
    }

    #[test]
    fn moments_by_hand() {
        let v = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        assert_eq!(mean(&v), Some(5.0));
        // Σ(x − 5)² = 32, / 7
        assert!((sample_sd(&v).unwrap() - (32.0f64 / 7.0).sqrt()).abs() < 1e-15);
        assert_eq!(sample_sd(&[1.0]), None);
        let s = Summary::of(&v).unwrap();
        let half = 1.96 * (32.0f64 / 7.0).sqrt() / 8f64.sqrt();
        assert!((s.ci_high.unwrap() - (5.0 + half)).abs() < 1e-12);
        assert_eq!((s.min, s.max, s.n), (2.0, 9.0, 8));
    }
}
