//! Intervals that hold when neighbouring requests are alike. Requests that
//! share a queue or a decode batch have correlated latencies, so `n` of
//! them carry less information than `n` independent draws, and an interval
//! that assumes independence is too narrow (on the simulated engine under a
//! Poisson load, E2E's was a quarter of the width it needed, and held the
//! long-run value in 7 of 30 runs).
//!
//! The method is non-overlapping batch means (Schmeiser, "Batch size effects
//! in the analysis of simulation output", *Operations Research* 30(3), 1982;
//! Asmussen & Glynn, *Stochastic Simulation*, 2007, §IV.5): the values, in
//! the order the requests were recorded, cut into `B` consecutive batches
//! of `m`; the spread of the batch means estimates the variance of the
//! whole sample's mean with correlation included, and a Student-t with
//! `B − 1` degrees of freedom covers the noise of that estimate. For a
//! percentile the same is done to the indicator series `1{x_i ≤ ξ̂_p}`,
//! whose mean is the empirical CDF at the estimate (Heidelberger & Lewis,
//! "Quantile estimation in dependent sequences", *Operations Research*
//! 32(1), 1984): its batch variance against the independent `p(1 − p)/m`
//! is the variance inflation by which the order-statistic ranks widen.
//! That variance sees the tail only when a batch expects at least one
//! value beyond the percentile ([`Batching::for_percentile`]): a percentile
//! whose batches cannot be made that long, keeping [`MIN_BATCHES`] of them,
//! has no interval. Nor has a statistic whose batch means still look
//! correlated at the fewest batches ([`independent`], the test and its
//! basis in [`super::independence`]).

use super::independence::{self, Correlated};
use super::student_t::Level;

/// Fewest batches: fewer make the t quantile (and the interval) balloon.
pub const MIN_BATCHES: usize = 10;
/// Most batches: more make each batch too short to hold the correlation.
pub const MAX_BATCHES: usize = 30;
/// Requests per batch aimed at before the batch count grows past its minimum.
pub const TARGET_BATCH_SIZE: usize = 40;
/// Fewest requests in a batch for its mean to say anything.
pub const MIN_BATCH_SIZE: usize = 5;
/// Fewest values a batch must expect beyond a percentile on its narrow
/// side (`m·min(p, 1 − p)`) for the batch variance of the indicator series
/// to say anything about that percentile. Below one, most batches hold no
/// such value at all: the counts' excess kurtosis (`1/(m·min(p, 1 − p))`
/// for Poisson counts) then outweighs the `2/(B − 1)` of normal batch means
/// that the Student-t allows for, a run of tail values that fell into one
/// batch reads the same as chance, and the widening falls back to 1
/// (independence) where the tail is most correlated.
pub const MIN_EXCEEDANCES_PER_BATCH: usize = 1;

/// How a sample of `n` values is cut: `count` batches of `size` (the last
/// `n − count·size` values, fewer than `count`, are in no batch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Batching {
    pub count: usize,
    pub size: usize,
}

impl Batching {
    /// `None` below `MIN_BATCHES × MIN_BATCH_SIZE` (50) values: too few to
    /// see correlation, and the intervals assume independence.
    pub fn of(n: usize) -> Option<Batching> {
        if n < MIN_BATCHES * MIN_BATCH_SIZE {
            return None;
        }
        let count = (n / TARGET_BATCH_SIZE).clamp(MIN_BATCHES, MAX_BATCHES);
        Some(Batching { count, size: n / count })
    }

    /// How the `n` values cut as `self` are cut for the interval of the
    /// `percent`-th percentile: as they are when each batch expects at least
    /// [`MIN_EXCEEDANCES_PER_BATCH`] values beyond the percentile on its
    /// narrow side (`m·min(p, 1 − p) ≥ 1`); else into fewer, longer
    /// batches of at least `⌈1/min(p, 1 − p)⌉` (100 for p99, 20 for p95,
    /// 10 for p90), `B = ⌊n/that⌋` of them; `None` when that leaves fewer
    /// than [`MIN_BATCHES`] (p99 below 1,000 values, p95 below 200, p90
    /// below 100): no interval, rather than one that assumes independence.
    pub fn for_percentile(self, n: usize, percent: u32) -> Option<Batching> {
        let tail = percent.min(100u32.saturating_sub(percent)) as usize;
        if tail == 0 {
            return None;
        }
        let least = (100 * MIN_EXCEEDANCES_PER_BATCH).div_ceil(tail);
        if self.size >= least {
            return Some(self);
        }
        let count = n / least;
        (count >= MIN_BATCHES).then(|| Batching { count, size: n / count })
    }

    /// Each batch's mean of `f` over its values.
    pub fn means(&self, values: &[f64], f: impl Fn(f64) -> f64) -> Vec<f64> {
        values
            .chunks_exact(self.size)
            .take(self.count)
            .map(|b| b.iter().map(|v| f(*v)).sum::<f64>() / b.len() as f64)
            .collect()
    }

    /// Two-sided Student-t factor at `level` for `count − 1` degrees of freedom.
    fn t(&self, level: Level) -> f64 {
        level.t(self.count - 1).unwrap_or(level.z())
    }
}

/// The cut of `values` for `f`, starting from `start` and made fewer and
/// longer until the batch means of `f` pass the independence test, both
/// at that cut and at the cut twice as fine ([`super::independence`]),
/// with the accepted cut's means; `Err` when they fail at [`MIN_BATCHES`].
pub fn independent(
    values: &[f64],
    start: Batching,
    f: impl Fn(f64) -> f64,
) -> Result<(Batching, Vec<f64>), Correlated> {
    let n = values.len();
    let mut batching = start;
    loop {
        let means = batching.means(values, &f);
        let finer = Batching { count: 2 * batching.count, size: n / (2 * batching.count) };
        let tested = independence::test(&means).and_then(|()| independence::test(&finer.means(values, &f)));
        match tested {
            Ok(()) => return Ok((batching, means)),
            Err(failed) => match independence::fewer(batching.count, MIN_BATCHES) {
                Some(count) => batching = Batching { count, size: n / count },
                None => return Err(failed),
            },
        }
    }
}

/// Sample variance (n − 1) of `xs`.
pub fn variance(xs: &[f64]) -> f64 {
    let mean = xs.iter().sum::<f64>() / xs.len() as f64;
    xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (xs.len() - 1) as f64
}

/// The batch-means interval of the mean at `level`, centred on `mean` (the
/// whole sample's): `mean ± t·s_B/√B`, `s_B²` the variance of the batch
/// means (those [`independent`] accepted).
pub fn mean_interval(batching: Batching, mean: f64, batch_variance: f64, level: Level) -> (f64, f64) {
    let half = batching.t(level) * (batch_variance / batching.count as f64).sqrt();
    (mean - half, mean + half)
}

/// How many independent values a mean of `n` is worth: `n` over the
/// variance inflation of the mean (`m·s_B² / s²`); `None` without spread.
pub fn effective_samples(
    n: usize,
    batching: Batching,
    batch_variance: f64,
    sample_variance: f64,
) -> Option<f64> {
    let inflation = batching.size as f64 * batch_variance / sample_variance;
    (inflation > 0.0 && inflation.is_finite()).then(|| n as f64 / inflation)
}

/// By how much the independent order-statistic ranks of percentile `p`
/// (a fraction) must widen around `n·p`: `√(inflation)·t/z` (at `level`),
/// where the inflation is the variance of `below`, the indicator series'
/// batch means `1{x ≤ estimate}` cut as `batching`, over `p(1 − p)/m`;
/// never below 1, so a sample that looks independent keeps the exact ranks.
pub fn rank_widening(below: &[f64], batching: Batching, p: f64, level: Level) -> f64 {
    let independent = p * (1.0 - p) / batching.size as f64;
    let inflation = variance(below) / independent;
    (inflation.sqrt() * batching.t(level) / level.z()).max(1.0)
}

/// The indicator `1{v ≤ estimate}` whose batch means a percentile's
/// widening reads.
pub fn at_or_below(estimate: f64) -> impl Fn(f64) -> f64 {
    move |v| if v <= estimate { 1.0 } else { 0.0 }
}

/// Ranks `(l, u)` (1-based, of `n`) widened by `w` around `n·p`; a side
/// that leaves the sample is unbounded (`None`), as is one that was.
pub fn widen_ranks(
    n: usize,
    p: f64,
    (l, u): (Option<usize>, Option<usize>),
    w: f64,
) -> (Option<usize>, Option<usize>) {
    let centre = n as f64 * p;
    let low = l.and_then(|l| {
        let r = (centre - w * (centre - l as f64)).floor();
        (r >= 1.0).then_some(r as usize)
    });
    let high = u.and_then(|u| {
        let r = (centre + w * (u as f64 - centre)).ceil();
        (r <= n as f64).then_some(r as usize)
    });
    (low, high)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batching_follows_its_bounds() {
        assert_eq!(Batching::of(49), None);
        assert_eq!(Batching::of(50), Some(Batching { count: 10, size: 5 }));
        assert_eq!(Batching::of(400), Some(Batching { count: 10, size: 40 }));
        assert_eq!(Batching::of(801), Some(Batching { count: 20, size: 40 }));
        assert_eq!(Batching::of(20_000), Some(Batching { count: 30, size: 666 }));
    }

    #[test]
    fn a_percentile_gets_batches_that_expect_a_value_beyond_it() {
        let of = |n: usize, percent: u32| Batching::of(n).and_then(|b| b.for_percentile(n, percent));
        let cut = |count, size| Some(Batching { count, size });
        // p50 and the mean's batching agree from 50 values on (m ≥ 5 ≥ 2).
        assert_eq!(of(50, 50), cut(10, 5));
        // p90 needs batches of 10: 100 values; p95 of 20: 200.
        assert_eq!(of(99, 90), None);
        assert_eq!(of(100, 90), cut(10, 10));
        assert_eq!(of(199, 95), None);
        assert_eq!(of(200, 95), cut(10, 20));
        // p99 needs batches of 100: none below 1,000 values; the mean's 30
        // batches of 53 at 1,600 become 16 of 100; from 3,000 on they agree.
        assert_eq!(of(400, 99), None);
        assert_eq!(of(999, 99), None);
        assert_eq!(of(1000, 99), cut(10, 100));
        assert_eq!(of(1600, 99), cut(16, 100));
        assert_eq!(of(2999, 99), cut(29, 103));
        assert_eq!(of(3000, 99), cut(30, 100));
        assert_eq!(of(20_000, 99), cut(30, 666));
        // Never more batches than the mean's.
        for n in 50..5000 {
            for percent in [50, 90, 95, 99] {
                if let (Some(mean), Some(p)) = (Batching::of(n), of(n, percent)) {
                    assert!(p.count <= mean.count && p.size * percent.min(100 - percent) as usize >= 100);
                }
            }
        }
    }

    #[test]
    fn unit_widening_keeps_the_ranks_and_a_side_past_the_sample_is_unbounded() {
        assert_eq!(widen_ranks(400, 0.5, (Some(181), Some(220)), 1.0), (Some(181), Some(220)));
        assert_eq!(widen_ranks(400, 0.5, (Some(181), Some(220)), 2.0), (Some(162), Some(240)));
        assert_eq!(widen_ranks(400, 0.99, (Some(391), Some(400)), 1.5), (Some(388), None));
        assert_eq!(widen_ranks(400, 0.99, (None, Some(400)), 1.0), (None, Some(400)));
    }
}
