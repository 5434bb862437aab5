//! Batch-means intervals, re-derived here without the load generator's
//! code (its docs: docs/metrics.md, "Intervals under correlation"). The
//! values, in the order the artifact's `request_timings` list them, are cut
//! into `B = clamp(⌊n/40⌋, 10, 30)` consecutive batches of `m = ⌊n/B⌋`
//! (none below 50 values). With `t` the two-sided 95% Student-t for `B − 1`
//! degrees of freedom (3 decimals, as printed tables give it):
//! - the mean's interval is `mean ± t·sd(batch means)/√B`;
//! - the mean's effective samples are `n / (m·var(batch means)/var(values))`;
//! - a percentile's order-statistic ranks `(l, u)` widen around `n·p` by
//!   `w = max(1, √(var(batch means of 1{x ≤ estimate}) / (p(1 − p)/m))·t/1.96)`:
//!   `⌊np − w(np − l)⌋` and `⌈np + w(u − np)⌉`, a side outside `1..=n` unbounded;
//!   the batches of that widening must each expect at least one value
//!   beyond the percentile on its narrow side, `m·min(p, 1 − p) ≥ 1`: where
//!   the mean's do not, `⌊n/⌈1/min(p, 1 − p)⌉⌋` longer ones, and no interval
//!   when that is fewer than 10 ([`percentile_batching`]);
//! - each statistic's batch means (of the values for the mean, of the
//!   indicator for a percentile) must look independent: with
//!   `C = 1 − Σ(x_{i+1} − x_i)²/(2·Σ(x_i − x̄)²)` over the `B` means in
//!   order (Young 1941; constant means pass), `C ≤ 1.6449·√((B − 2)/(B² − 1))`
//!   (one-sided 5%), and so must the `2B` means of `⌊n/(2B)⌋` values;
//!   when either fails, the count halves (never below 10), the size
//!   becomes `⌊n/B⌋`, and the tests run again; failing at 10 batches, the
//!   interval is withheld (null) and `intervals_withheld` says so, with
//!   the `C` that failed there ([`accepted`], [`Withheld`]). `_batches` is
//!   the mean's accepted count.

use crate::stats::Ordered;
use crate::tdist::t95_table;

/// `(batches, size)` for `n` values, or `None` below 50.
pub fn batching(n: usize) -> Option<(usize, usize)> {
    if n < 50 {
        return None;
    }
    let batches = (n / 40).clamp(10, 30);
    Some((batches, n / batches))
}

/// The batches of percentile `q`'s (percent) interval among `n` values cut
/// as `batching`: those, when a batch of them expects at least one value
/// beyond the percentile on its narrow side (`size·min(q, 100 − q) ≥ 100`);
/// else the most batches of at least `⌈100/min(q, 100 − q)⌉` values;
/// `None` when those are fewer than 10 (no interval).
pub fn percentile_batching(n: usize, (batches, size): (usize, usize), q: u32) -> Option<(usize, usize)> {
    let narrow = q.min(100u32.saturating_sub(q)) as usize;
    if narrow == 0 {
        return None;
    }
    let least = 100usize.div_ceil(narrow);
    if size * narrow >= 100 {
        return Some((batches, size));
    }
    let longer = n / least;
    if longer < 10 {
        return None;
    }
    Some((longer, n / longer))
}

/// Why an interval is withheld: Young's `C` at the fewest batches, over
/// its critical value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Withheld {
    pub c: f64,
    pub critical: f64,
    pub batches: usize,
}

impl Withheld {
    /// The words the artifact's `intervals_withheld` holds.
    pub fn reason(&self) -> String {
        format!(
            "withheld: batch means correlated at the fewest batches (lag-1 C = {:.2} > {:.2} over {} batches)",
            self.c, self.critical, self.batches
        )
    }
}

/// Young's `C` over `means`, `None` below 3 or without spread.
fn young_c(means: &[f64]) -> Option<f64> {
    if means.len() < 3 {
        return None;
    }
    let mut sum = -0.0;
    for x in means {
        sum += x;
    }
    let m = sum / means.len() as f64;
    let (mut spread, mut steps) = (-0.0, -0.0);
    for x in means {
        spread += (x - m) * (x - m);
    }
    for pair in means.windows(2) {
        steps += (pair[1] - pair[0]) * (pair[1] - pair[0]);
    }
    (spread > 0.0).then(|| 1.0 - steps / (2.0 * spread))
}

/// `Some` when `means` fail the test.
fn correlated(means: &[f64]) -> Option<Withheld> {
    let k = means.len() as f64;
    let critical = 1.644_853_626_951_472_2 * ((k - 2.0) / (k * k - 1.0)).sqrt();
    young_c(means).filter(|c| *c > critical).map(|c| Withheld { c, critical, batches: means.len() })
}

/// The batches of `f`'s means from `start`, halved (never below 10) until
/// their means and those of the cut twice as fine pass the test, with the
/// accepted cut's means.
pub fn accepted(
    values: &(impl Ordered + ?Sized),
    start: (usize, usize),
    f: impl Fn(f64) -> f64,
) -> Result<((usize, usize), Vec<f64>), Withheld> {
    let n = values.len();
    let mut b = start;
    loop {
        let means = batch_means(values, b, &f);
        let failed =
            correlated(&means).or_else(|| correlated(&batch_means(values, (2 * b.0, n / (2 * b.0)), &f)));
        let Some(failed) = failed else { return Ok((b, means)) };
        if b.0 <= 10 {
            return Err(failed);
        }
        let count = (b.0 / 2).max(10);
        b = (count, n / count);
    }
}

/// The mean of `f` over each batch (the values past the last batch left out).
pub fn batch_means(
    values: &(impl Ordered + ?Sized),
    (batches, size): (usize, usize),
    f: impl Fn(f64) -> f64,
) -> Vec<f64> {
    // Summed in order from −0.0, as `Iterator::sum` of f64 is.
    let mut sums = vec![-0.0; batches];
    let mut i = 0;
    values.each(&mut |v| {
        if let Some(s) = sums.get_mut(i / size) {
            *s += f(v);
        }
        i += 1;
    });
    sums.into_iter().map(|s| s / size as f64).collect()
}

fn var(xs: &(impl Ordered + ?Sized)) -> f64 {
    let mut sum = -0.0;
    xs.each(&mut |x| sum += x);
    let m = sum / xs.len() as f64;
    let mut ss = -0.0;
    xs.each(&mut |x| ss += (x - m) * (x - m));
    ss / (xs.len() as f64 - 1.0)
}

fn t(batching: (usize, usize)) -> f64 {
    t95_table(batching.0 - 1).unwrap_or(1.96)
}

/// The mean's 95% interval around `mean`, from the batches [`accepted`]
/// and their means.
pub fn mean_interval(batching: (usize, usize), means: &[f64], mean: f64) -> (f64, f64) {
    let half = t(batching) * (var(means) / batching.0 as f64).sqrt();
    (mean - half, mean + half)
}

/// `n` over the mean's variance inflation; `None` without spread.
pub fn effective_samples(values: &(impl Ordered + ?Sized), batching: (usize, usize)) -> Option<f64> {
    let spread = var(values);
    if spread.is_nan() || spread <= 0.0 {
        return None;
    }
    let inflation = batching.1 as f64 * var(batch_means(values, batching, |v| v).as_slice()) / spread;
    (inflation > 0.0 && inflation.is_finite()).then(|| values.len() as f64 / inflation)
}

/// The widened ranks of percentile `q` (percent) from the independent ones,
/// `batching` being [`batching`]'s cut ([`percentile_batching`] says the
/// percentile's, [`accepted`] how much longer); `Err` when withheld.
pub fn widened_ranks(
    values: &(impl Ordered + ?Sized),
    batching: (usize, usize),
    estimate: f64,
    q: u32,
    (l, u): (Option<usize>, Option<usize>),
) -> Result<(Option<usize>, Option<usize>), Withheld> {
    let n = values.len();
    let Some(start) = percentile_batching(n, batching, q) else { return Ok((None, None)) };
    let p = f64::from(q) / 100.0;
    let (batching, below) = accepted(values, start, |v| if v <= estimate { 1.0 } else { 0.0 })?;
    let w =
        ((var(below.as_slice()) / (p * (1.0 - p) / batching.1 as f64)).sqrt() * t(batching) / 1.96).max(1.0);
    let np = n as f64 * p;
    let low = l.map(|l| (np - w * (np - l as f64)).floor()).filter(|r| *r >= 1.0).map(|r| r as usize);
    let high = u.map(|u| (np + w * (u as f64 - np)).ceil()).filter(|r| *r <= n as f64).map(|r| r as usize);
    Ok((low, high))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tail_percentile_takes_batches_that_reach_its_tail() {
        let of = |n: usize, q: u32| batching(n).and_then(|b| percentile_batching(n, b, q));
        assert_eq!(of(50, 50), Some((10, 5)));
        assert_eq!((of(99, 90), of(100, 90)), (None, Some((10, 10))));
        assert_eq!((of(199, 95), of(200, 95)), (None, Some((10, 20))));
        assert_eq!((of(400, 99), of(999, 99), of(1000, 99)), (None, None, Some((10, 100))));
        assert_eq!(
            (of(1600, 99), of(2999, 99), of(3000, 99)),
            (Some((16, 100)), Some((29, 103)), Some((30, 100)))
        );
    }

    /// Pooled repeats are the batches of `crate::pool`'s intervals: each
    /// must expect a value beyond the percentile too.
    #[test]
    fn a_replication_must_reach_the_tail_as_a_batch_must() {
        use crate::pool::replication_percentile_ranks as ranks;
        // Three repeats of 99 values: p99 none, p95 bounded (4.95 expected).
        let parts = |n: f64, q: f64| [(n, (n * q).round()), (n, (n * q).round() - 1.0), (n, (n * q).round())];
        assert_eq!(ranks(&parts(99.0, 0.99), 99), (None, None));
        assert!(ranks(&parts(99.0, 0.95), 95).0.is_some());
        // One short repeat among long ones is enough to have none.
        let mixed = [(400.0, 396.0), (400.0, 396.0), (60.0, 59.0)];
        assert_eq!(ranks(&mixed, 99), (None, None));
        assert!(ranks(&[(400.0, 396.0), (400.0, 395.0), (100.0, 99.0)], 99).0.is_some());
    }

    /// The load generator's figures for the same series
    /// (`crates/loadgen/src/output/stats.rs`, `tail_bounds_of_a_correlated_series`).
    #[test]
    fn the_load_generators_tail_bounds() {
        let values: Vec<f64> =
            (0..1600).map(|i| 100.0 + 20.0 * (i as f64 / 37.0).sin() + ((i * 7919) % 13) as f64).collect();
        let mut sorted = values.clone();
        sorted.sort_by(f64::total_cmp);
        let n = values.len();
        let bounds: Vec<(Option<f64>, Option<f64>)> = [50, 90, 95, 99]
            .into_iter()
            .map(|q| {
                let estimate = sorted[crate::stats::nearest_rank_index(q, n) - 1];
                let ranks = crate::quantile_interval::ranks(n, q);
                let (l, u) =
                    widened_ranks(values.as_slice(), batching(n).unwrap(), estimate, q, ranks).unwrap();
                (l.map(|r| sorted[r - 1]), u.map(|r| sorted[r - 1]))
            })
            .collect();
        assert_eq!(
            bounds,
            [
                (Some(95.2419336666987), Some(117.18175381114037)),
                (Some(122.97117866603125), Some(128.45210923401834)),
                (Some(126.60027131946038), Some(129.92905716345683)),
                (Some(130.12475424420876), Some(131.85572154757602)),
            ]
        );
    }
}
