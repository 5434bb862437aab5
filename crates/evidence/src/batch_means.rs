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
//!   `⌊np − w(np − l)⌋` and `⌈np + w(u − np)⌉`, a side outside `1..=n` unbounded.

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

/// The widened ranks of percentile `q` (percent) from the independent ones.
pub fn widened_ranks(
    values: &(impl Ordered + ?Sized),
    batching: (usize, usize),
    estimate: f64,
    q: u32,
    (l, u): (Option<usize>, Option<usize>),
) -> (Option<usize>, Option<usize>) {
    let n = values.len();
    let p = f64::from(q) / 100.0;
    let below = batch_means(values, batching, |v| if v <= estimate { 1.0 } else { 0.0 });
    let w =
        ((var(below.as_slice()) / (p * (1.0 - p) / batching.1 as f64)).sqrt() * t(batching) / 1.96).max(1.0);
    let np = n as f64 * p;
    let low = l.map(|l| (np - w * (np - l as f64)).floor()).filter(|r| *r >= 1.0).map(|r| r as usize);
    let high = u.map(|u| (np + w * (u as f64 - np)).ceil()).filter(|r| *r <= n as f64).map(|r| r as usize);
    (low, high)
}
