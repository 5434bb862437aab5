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
//!   when that is fewer than 10 ([`percentile_batching`]).

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

/// The mean of `f` over each batch (the values past the last batch left out).
fn batch_means(
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

/// The mean's 95% interval around `mean`.
pub fn mean_interval(values: &(impl Ordered + ?Sized), batching: (usize, usize), mean: f64) -> (f64, f64) {
    let half =
        t(batching) * (var(batch_means(values, batching, |v| v).as_slice()) / batching.0 as f64).sqrt();
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
/// `batching` being the mean's ([`percentile_batching`] says the percentile's).
pub fn widened_ranks(
    values: &(impl Ordered + ?Sized),
    batching: (usize, usize),
    estimate: f64,
    q: u32,
    (l, u): (Option<usize>, Option<usize>),
) -> (Option<usize>, Option<usize>) {
    let n = values.len();
    let Some(batching) = percentile_batching(n, batching, q) else { return (None, None) };
    let p = f64::from(q) / 100.0;
    let below = batch_means(values, batching, |v| if v <= estimate { 1.0 } else { 0.0 });
    let w =
        ((var(below.as_slice()) / (p * (1.0 - p) / batching.1 as f64)).sqrt() * t(batching) / 1.96).max(1.0);
    let np = n as f64 * p;
    let low = l.map(|l| (np - w * (np - l as f64)).floor()).filter(|r| *r >= 1.0).map(|r| r as usize);
    let high = u.map(|u| (np + w * (u as f64 - np)).ceil()).filter(|r| *r <= n as f64).map(|r| r as usize);
    (low, high)
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
                let (l, u) = widened_ranks(values.as_slice(), batching(n).unwrap(), estimate, q, ranks);
                (l.map(|r| sorted[r - 1]), u.map(|r| sorted[r - 1]))
            })
            .collect();
        assert_eq!(
            bounds,
            [
                (Some(96.91449576615092), Some(115.47538256793389)),
                (Some(122.97417345439311), Some(128.39484027283947)),
                (Some(126.5798629072985), Some(129.9626394024591)),
                (Some(130.12475424420876), Some(131.85572154757602)),
            ]
        );
    }
}
