//! Request-level distributions as the capacity-v4 protocol defines them:
//! mean, sample standard deviation, normal-approximation 95% CI of the mean,
//! and nearest-rank percentiles.

use serde_json::{Map, Value};

use super::batch_means::{self, Batching};
use super::independence::Correlated;
pub use super::student_t::t95;
use super::student_t::{Level, Z95};

/// Percentiles reported for every distribution, in percent.
pub const PERCENTILES: [u32; 6] = [25, 50, 75, 90, 95, 99];
/// Below this many samples p99 is descriptive only.
pub const P99_MIN_SAMPLES: usize = 100;

#[derive(Debug, Clone, PartialEq)]
pub struct Distribution {
    pub samples: usize,
    pub mean: f64,
    /// Sample (n−1) standard deviation; `None` below two samples.
    pub stddev: Option<f64>,
    pub ci95_low: Option<f64>,
    pub ci95_high: Option<f64>,
    pub min: f64,
    pub max: f64,
    /// Values at [`PERCENTILES`].
    pub percentiles: [f64; 6],
    /// Distribution-free 95% intervals of the [`INTERVAL_PERCENTILES`]
    /// ([`quantile_interval_ranks`], widened by the batch-means variance
    /// inflation, [`percentile_bounds`]); a side is `None` when the sample
    /// is too small to bound the percentile on that side, both when it is
    /// too small to batch for that percentile.
    pub percentile_ci95: [(Option<f64>, Option<f64>); 4],
    /// How the values (in recorded order) were cut for the mean's interval:
    /// [`Batching::of`], made fewer and longer until the batch means look
    /// independent ([`batch_means::independent`]; a percentile's cut is
    /// its own, [`Batching::for_percentile`]); `None` below 50 values,
    /// without an order, or when the mean's interval is withheld. For a
    /// repeated cell, the repeats ([`super::replications`]).
    pub batches: Option<Batching>,
    /// The batch-means 95% interval of the mean ([`batch_means::mean_interval`]).
    pub mean_batch_ci95: Option<(f64, f64)>,
    /// What the mean is worth in independent values ([`batch_means::effective_samples`]).
    pub effective_samples: Option<f64>,
    /// Why the mean's interval, and each of the [`INTERVAL_PERCENTILES`]'
    /// intervals, is withheld: its batch means failed the independence test.
    pub mean_withheld: Option<Correlated>,
    pub percentile_withheld: [Option<Correlated>; 4],
}

/// Percentiles that carry a confidence interval.
pub const INTERVAL_PERCENTILES: [u32; 4] = [50, 90, 95, 99];

/// Ranks (1-based) `(l, u)` of the order statistics that bound the
/// `percent`-th percentile of a continuous distribution with at least 95%
/// confidence from `n` independent samples: the equal-tailed interval of
/// order statistics (Hahn & Meeker, *Statistical Intervals*, 2nd ed., §5.2;
/// Conover, *Practical Nonparametric Statistics*, §3.2). With
/// `B(k) = P(Binomial(n, p) ≤ k)`, `l` is the largest rank with
/// `B(l − 1) ≤ 2.5%` and `u` the smallest with `B(u − 1) ≥ 97.5%`, so
/// `P(X(l) ≤ ξ_p ≤ X(u)) ≥ B(u − 1) − B(l − 1) ≥ 95%`. A side is `None` when
/// no rank within the sample qualifies: p99's upper bound needs
/// `0.99^n ≤ 2.5%`, n ≥ 368 (a one-sided 95% bound from the sample
/// maximum would need n ≥ 299, as `0.99^299 < 5%`); p50's lower bound needs
/// n ≥ 6 (`0.5^6 ≤ 2.5%`).
pub fn quantile_interval_ranks(n: usize, percent: u32) -> (Option<usize>, Option<usize>) {
    quantile_interval_ranks_at(n, percent, Level::NINETY_FIVE)
}

/// [`quantile_interval_ranks`] at any two-sided `level` (each tail
/// `(1 − level)/2` in place of 2.5%).
pub fn quantile_interval_ranks_at(n: usize, percent: u32, level: Level) -> (Option<usize>, Option<usize>) {
    let tail = level.tail();
    if n == 0 {
        return (None, None);
    }
    let p = f64::from(percent) / 100.0;
    // B(k) as k rises, from log-space binomial terms (no underflow at large
    // n), in one pass that stops once both ranks are known: a chunk-gap
    // distribution has millions of samples.
    let (ln_p, ln_q) = (p.ln(), (1.0 - p).ln());
    let mut ln_term = n as f64 * ln_q;
    let mut cdf = 0.0f64;
    let mut lower = None;
    for k in 0..n {
        if k > 0 {
            ln_term += ((n - k + 1) as f64).ln() - (k as f64).ln() + ln_p - ln_q;
        }
        // Now cdf = B(k), the bound for rank k + 1.
        cdf = (cdf + ln_term.exp()).min(1.0);
        // l: the largest rank with B(l - 1) <= tail (B rises with k).
        if cdf <= tail {
            lower = Some(k + 1);
        }
        // u: the smallest rank with B(u - 1) >= 1 - tail.
        if cdf >= 1.0 - tail {
            return (lower, Some(k + 1));
        }
    }
    (lower, None)
}

/// The interval of the `percent`-th percentile at `level`: the exact
/// order-statistic ranks ([`quantile_interval_ranks_at`]), widened by the
/// batch-means variance inflation of the sample cut into `batches`, made
/// longer where a batch would expect less than one value beyond the
/// percentile ([`Batching::for_percentile`]); `ordered` is the sample in
/// recorded order, `sorted` the same sorted. No interval (both sides
/// `None`) without batches: below 50 values, where the mean has none either
/// (too few to see correlation, and the exact ranks would assume
/// independence); nor when the longer batches would be fewer than 10 (p99
/// below 1,000 values, p95 below 200, p90 below 100): their variance could
/// not see correlation in the tail. `Err` (withheld) when the indicator
/// series' batch means look correlated even at the fewest batches
/// ([`batch_means::independent`]). `batches` is [`Batching::of`] the sample.
pub fn percentile_bounds(
    ordered: &[f64],
    sorted: &[f64],
    percent: u32,
    batches: Option<Batching>,
    level: Level,
) -> Result<(Option<f64>, Option<f64>), Correlated> {
    let n = sorted.len();
    let Some(start) = batches.and_then(|b| b.for_percentile(n, percent)) else { return Ok((None, None)) };
    let estimate = nearest_rank(sorted, percent);
    let (b, below) = batch_means::independent(ordered, start, batch_means::at_or_below(estimate))?;
    let ranks = quantile_interval_ranks_at(n, percent, level);
    let p = f64::from(percent) / 100.0;
    let w = batch_means::rank_widening(&below, b, p, level);
    let (l, u) = batch_means::widen_ranks(n, p, ranks, w);
    Ok((l.map(|r| sorted[r - 1]), u.map(|r| sorted[r - 1])))
}

/// The cut the mean's interval used, its batch means' variance, and the interval.
pub type MeanBounds = (Batching, f64, (f64, f64));

/// The batch-means interval of the mean of `ordered` at `level`, with the
/// cut it used; `Ok(None)` without batches, `Err` when withheld.
pub fn mean_bounds(
    ordered: &[f64],
    mean: f64,
    batches: Option<Batching>,
    level: Level,
) -> Result<Option<MeanBounds>, Correlated> {
    let Some(start) = batches else { return Ok(None) };
    let (b, means) = batch_means::independent(ordered, start, |v| v)?;
    let variance = batch_means::variance(&means);
    Ok(Some((b, variance, batch_means::mean_interval(b, mean, variance, level))))
}

impl Distribution {
    /// `None` for an empty sample. Non-finite values are ignored. `values`
    /// are in the order their requests were recorded: the batch intervals
    /// read correlation between neighbours from it.
    pub fn of(values: &[f64]) -> Option<Self> {
        Self::of_vec(values.to_vec())
    }

    /// [`Distribution::of`] a sample the caller gives up: it becomes the
    /// record-order copy, so a statistic holds two columns (that and the
    /// sorted one), not three.
    pub fn of_vec(mut ordered: Vec<f64>) -> Option<Self> {
        ordered.retain(|v| v.is_finite());
        let mut sorted = ordered.clone();
        if sorted.is_empty() {
            return None;
        }
        // In place: a stable sort would allocate up to a column more, and
        // `total_cmp` ties are equal bits, so the order is the same.
        sorted.sort_unstable_by(f64::total_cmp);
        let n = sorted.len();
        let mean = sorted.iter().sum::<f64>() / n as f64;
        let stddev = (n >= 2).then(|| {
            let ss: f64 = sorted.iter().map(|v| (v - mean).powi(2)).sum();
            (ss / (n - 1) as f64).sqrt()
        });
        let half_width = stddev.map(|s| Z95 * s / (n as f64).sqrt());
        let batches = Batching::of(n);
        let percentile = INTERVAL_PERCENTILES
            .map(|percent| percentile_bounds(&ordered, &sorted, percent, batches, Level::NINETY_FIVE));
        let spread = stddev.filter(|s| *s > 0.0);
        let mean_bounds = mean_bounds(&ordered, mean, batches, Level::NINETY_FIVE);
        let accepted = mean_bounds.as_ref().ok().copied().flatten();
        Some(Self {
            samples: n,
            mean,
            stddev,
            ci95_low: half_width.map(|h| mean - h),
            ci95_high: half_width.map(|h| mean + h),
            min: sorted[0],
            max: sorted[n - 1],
            percentiles: PERCENTILES.map(|p| nearest_rank(&sorted, p)),
            percentile_ci95: percentile.map(|bounds| bounds.unwrap_or((None, None))),
            batches: accepted.map(|(b, _, _)| b),
            mean_batch_ci95: accepted.map(|(_, _, interval)| interval),
            effective_samples: accepted
                .zip(spread)
                .and_then(|((b, v, _), s)| batch_means::effective_samples(n, b, v, s * s)),
            mean_withheld: mean_bounds.err(),
            percentile_withheld: percentile.map(Result::err),
        })
    }

    /// [`Distribution::of`] the sample that holds each `(value, count)`
    /// `count` times, given in ascending order of value: the same sums in
    /// the same order, so the same result bit for bit, without the sample.
    pub fn of_sorted_counts(counts: &[(f64, u64)]) -> Option<Self> {
        let finite: Vec<(f64, u64)> =
            counts.iter().copied().filter(|(v, c)| v.is_finite() && *c > 0).collect();
        let n: u64 = finite.iter().map(|(_, c)| c).sum();
        if n == 0 {
            return None;
        }
        let mut sum = 0.0;
        for (v, c) in &finite {
            for _ in 0..*c {
                sum += v;
            }
        }
        let mean = sum / n as f64;
        let stddev = (n >= 2).then(|| {
            let mut ss = 0.0;
            for (v, c) in &finite {
                let d = (v - mean).powi(2);
                for _ in 0..*c {
                    ss += d;
                }
            }
            (ss / (n - 1) as f64).sqrt()
        });
        let half_width = stddev.map(|s| Z95 * s / (n as f64).sqrt());
        // The value at rank k (1-based) of the expanded sample.
        let at_rank = |rank: u64| {
            let mut seen = 0;
            for (v, c) in &finite {
                seen += c;
                if seen >= rank {
                    return *v;
                }
            }
            finite[finite.len() - 1].0
        };
        Some(Self {
            samples: n as usize,
            mean,
            stddev,
            ci95_low: half_width.map(|h| mean - h),
            ci95_high: half_width.map(|h| mean + h),
            min: finite[0].0,
            max: finite[finite.len() - 1].0,
            percentiles: PERCENTILES.map(|p| at_rank((u64::from(p) * n).div_ceil(100).clamp(1, n))),
            // Pooled counts have no order, and the gaps of one stream are
            // not independent: no interval would hold what it claims.
            percentile_ci95: [(None, None); 4],
            batches: None,
            mean_batch_ci95: None,
            effective_samples: None,
            mean_withheld: None,
            percentile_withheld: [None; 4],
        })
    }

    pub fn percentile(&self, p: u32) -> Option<f64> {
        PERCENTILES.iter().position(|q| *q == p).map(|i| self.percentiles[i])
    }
}

/// Nearest-rank percentile of sorted data: the value at rank ⌈p·n/100⌉.
pub fn nearest_rank(sorted: &[f64], percent: u32) -> f64 {
    let n = sorted.len();
    let rank = (percent as usize * n).div_ceil(100).clamp(1, n);
    sorted[rank - 1]
}

/// How a metric's keys are spelled in the artifact (the reference uses three).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyStyle {
    /// `decode_tok_s_p50`, `decode_tok_s_mean_ci95_low`
    Plain,
    /// `ttft_p50_ms`, `ttft_mean_ci95_low_ms`; samples stay `ttft_samples`
    Millis,
}

/// Writes the full distribution block of `name` into `out`; an empty
/// sample writes nulls and `samples: 0`, so the key set never depends on data.
pub fn write_distribution(
    out: &mut Map<String, Value>,
    name: &str,
    style: KeyStyle,
    dist: Option<&Distribution>,
) {
    let suffix = match style {
        KeyStyle::Plain => "",
        KeyStyle::Millis => "_ms",
    };
    let num = |v: Option<f64>| v.map_or(Value::Null, Value::from);
    let mut put = |stat: &str, v: Value| {
        out.insert(format!("{name}_{stat}{suffix}"), v);
    };
    put("mean", num(dist.map(|d| d.mean)));
    put("stddev", num(dist.and_then(|d| d.stddev)));
    put("mean_ci95_low", num(dist.and_then(|d| d.ci95_low)));
    put("mean_ci95_high", num(dist.and_then(|d| d.ci95_high)));
    put("min", num(dist.map(|d| d.min)));
    for (i, p) in PERCENTILES.iter().enumerate() {
        put(&format!("p{p}"), num(dist.map(|d| d.percentiles[i])));
    }
    put("max", num(dist.map(|d| d.max)));
    for (i, p) in INTERVAL_PERCENTILES.iter().enumerate() {
        let interval = dist.map(|d| d.percentile_ci95[i]);
        put(&format!("p{p}_ci95_low"), num(interval.and_then(|(low, _)| low)));
        put(&format!("p{p}_ci95_high"), num(interval.and_then(|(_, high)| high)));
    }
    let batch = dist.and_then(|d| d.mean_batch_ci95);
    put("mean_batch_ci95_low", num(batch.map(|(low, _)| low)));
    put("mean_batch_ci95_high", num(batch.map(|(_, high)| high)));
    out.insert(format!("{name}_samples"), Value::from(dist.map_or(0, |d| d.samples)));
    out.insert(
        format!("{name}_batches"),
        dist.and_then(|d| d.batches).map_or(Value::Null, |b| b.count.into()),
    );
    out.insert(format!("{name}_effective_samples"), num(dist.and_then(|d| d.effective_samples)));
    write_withheld(out, name, dist);
}

/// The `metrics` key that says why intervals are missing: `{name}_mean`,
/// `{name}_p90` → the reason ([`Correlated`]'s words); always present, empty
/// when nothing was withheld.
pub const WITHHELD_KEY: &str = "intervals_withheld";

fn write_withheld(out: &mut Map<String, Value>, name: &str, dist: Option<&Distribution>) {
    let Value::Object(withheld) = out.entry(WITHHELD_KEY).or_insert_with(|| Value::Object(Map::new())) else {
        return;
    };
    let Some(d) = dist else { return };
    if let Some(why) = d.mean_withheld {
        withheld.insert(format!("{name}_mean"), why.to_string().into());
    }
    for (p, why) in INTERVAL_PERCENTILES.iter().zip(d.percentile_withheld) {
        if let Some(why) = why {
            withheld.insert(format!("{name}_p{p}"), why.to_string().into());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference artifact's completion_tokens values and its published block.
    const REFERENCE: [f64; 12] = [328., 385., 195., 344., 425., 402., 234., 286., 334., 299., 260., 247.];

    #[test]
    fn quantile_interval_ranks_match_the_tables() {
        // n = 20, median: X(6)..X(15), coverage 95.86% (Conover, Table A3).
        assert_eq!(quantile_interval_ranks(20, 50), (Some(6), Some(15)));
        // Too small to bound the median below (0.5^5 > 2.5%), just enough at 6.
        assert_eq!(quantile_interval_ranks(5, 50), (None, None));
        assert_eq!(quantile_interval_ranks(6, 50), (Some(1), Some(6)));
        // p99's upper bound is the sample maximum from 368 samples on.
        assert_eq!(quantile_interval_ranks(367, 99).1, None);
        assert_eq!(quantile_interval_ranks(368, 99).1, Some(368));
        assert_eq!(quantile_interval_ranks(0, 99), (None, None));
        // Large samples: the ranks sit about 1.96 sqrt(n p (1-p)) around n p.
        let (l, u) = quantile_interval_ranks(100_000, 90);
        let (l, u) = (l.unwrap() as f64, u.unwrap() as f64);
        assert!((l - (90_000.0 - 186.0)).abs() <= 2.0 && (u - (90_000.0 + 187.0)).abs() <= 2.0, "{l} {u}");
    }

    /// Coverage, not one example: of 2,000 seeded samples of 60 draws from an
    /// exponential distribution, the share whose interval holds the true
    /// percentile is at least the nominal 95% (less a Monte Carlo margin).
    #[test]
    fn percentile_intervals_cover_the_true_percentile() {
        let mut rng = crate::workload::prompt::SplitMix64::new(7, 1);
        let truth = |p: f64| -(1.0 - p).ln();
        let mut held = [0u32; 4];
        let trials = 2000;
        for _ in 0..trials {
            let sample: Vec<f64> = (0..60).map(|_| -(1.0 - rng.next_f64()).ln()).collect();
            let d = Distribution::of(&sample).unwrap();
            for (i, p) in INTERVAL_PERCENTILES.iter().enumerate() {
                let (low, high) = d.percentile_ci95[i];
                let t = truth(f64::from(*p) / 100.0);
                if low.is_none_or(|l| l <= t) && high.is_none_or(|h| t <= h) {
                    held[i] += 1;
                }
            }
        }
        for (i, p) in INTERVAL_PERCENTILES.iter().enumerate() {
            let share = f64::from(held[i]) / f64::from(trials);
            assert!(share >= 0.94, "p{p}: {share}");
        }
    }

    /// Below 50 values neither the mean nor a percentile has an interval
    /// (both would have to assume independent requests); from 50 on both do.
    /// Before, the percentiles' exact ranks were written from 6 values on.
    #[test]
    fn below_fifty_values_no_statistic_has_an_interval() {
        let values: Vec<f64> = (0..50).map(|i| f64::from((i * 37) % 50)).collect();
        let few = Distribution::of(&values[..49]).unwrap();
        assert_eq!((few.batches, few.mean_batch_ci95), (None, None));
        assert_eq!(few.percentile_ci95, [(None, None); 4]);
        let enough = Distribution::of(&values).unwrap();
        assert!(enough.mean_batch_ci95.is_some());
        assert!(enough.percentile_ci95[0].0.is_some() && enough.percentile_ci95[0].1.is_some());
    }

    /// A tail percentile's interval needs batches that each expect a value
    /// beyond it (`m·min(p, 1 − p) ≥ 1`), at least 10 of them: p90 from 100
    /// values, p95 from 200, p99 from 1,000. Before, p99 of 400 values had a
    /// lower bound from batches of 40 that expect 0.4 values past it each.
    #[test]
    fn tail_percentiles_need_batches_that_reach_their_tail() {
        let values = |n: usize| (0..n).map(|i| ((i * 7919) % 1009) as f64).collect::<Vec<_>>();
        for (i, percent, least) in [(1, 90, 100), (2, 95, 200), (3, 99, 1000)] {
            let few = Distribution::of(&values(least - 1)).unwrap();
            assert_eq!(few.percentile_ci95[i], (None, None), "p{percent} of {}", least - 1);
            let (low, high) = Distribution::of(&values(least)).unwrap().percentile_ci95[i];
            assert!(low.is_some() && high.is_some(), "p{percent} of {least}");
        }
        // The mean's batches (and p50's) do not change.
        let d = Distribution::of(&values(400)).unwrap();
        assert_eq!(d.batches, Some(Batching { count: 10, size: 40 }));
        assert!(d.mean_batch_ci95.is_some() && d.percentile_ci95[0].0.is_some());
        assert_eq!(d.percentile_ci95[3], (None, None));
    }

    /// The figures `anvil verify` re-derives with its own code
    /// (`crates/evidence/src/batch_means.rs`, the same series and numbers in
    /// its tests): p99 of 1,600 correlated values over 16 batches of 100;
    /// p50–p95, whose 30 batches of 53 follow the series' slow wave, over
    /// fewer, longer ones (the independence test).
    #[test]
    fn tail_bounds_of_a_correlated_series() {
        let values: Vec<f64> =
            (0..1600).map(|i| 100.0 + 20.0 * (i as f64 / 37.0).sin() + ((i * 7919) % 13) as f64).collect();
        let d = Distribution::of(&values).unwrap();
        assert_eq!(
            d.percentile_ci95,
            [
                (Some(95.2419336666987), Some(117.18175381114037)),
                (Some(122.97117866603125), Some(128.45210923401834)),
                (Some(126.60027131946038), Some(129.92905716345683)),
                (Some(130.12475424420876), Some(131.85572154757602)),
            ]
        );
    }

    #[test]
    fn matches_reference_artifact() {
        let d = Distribution::of(&REFERENCE).unwrap();
        assert_eq!(d.samples, 12);
        assert!((d.mean - 311.5833333333333).abs() < 1e-9);
        assert!((d.stddev.unwrap() - 71.03578910192617).abs() < 1e-9);
        assert!((d.ci95_low.unwrap() - 271.39105201244064).abs() < 1e-3);
        assert!((d.ci95_high.unwrap() - 351.775614654226).abs() < 1e-3);
        assert_eq!(d.percentiles, [247., 299., 344., 402., 425., 425.]);
        assert_eq!((d.min, d.max), (195., 425.));
    }

    #[test]
    fn nearest_rank_by_hand() {
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        // rank = ceil(p*n/100): p95 of 20 is rank 19 exactly (no float drift).
        assert_eq!(nearest_rank(&v, 95), 19.);
        assert_eq!(nearest_rank(&v, 25), 5.);
        assert_eq!(nearest_rank(&v, 99), 20.);
        assert_eq!(nearest_rank(&[7.], 50), 7.);
        let v: Vec<f64> = (1..=200).map(f64::from).collect();
        assert_eq!(nearest_rank(&v, 99), 198.);
    }

    #[test]
    fn counts_give_the_same_distribution_bit_for_bit() {
        let mut sample = Vec::new();
        let mut counts = Vec::new();
        for (i, g) in [3u32, 17, 250, 251, 999, 5000, 12_345].iter().enumerate() {
            let v = f64::from(*g) / 1000.0;
            let c = (i as u64 * 37) % 11 + 1;
            counts.push((v, c));
            sample.extend(std::iter::repeat_n(v, c as usize));
        }
        sample.reverse();
        // The same figures; counts have no order, so no interval or batches.
        let orderless = |d: Option<Distribution>| {
            d.map(|d| Distribution {
                percentile_ci95: [(None, None); 4],
                batches: None,
                mean_batch_ci95: None,
                effective_samples: None,
                ..d
            })
        };
        assert_eq!(Distribution::of_sorted_counts(&counts), orderless(Distribution::of(&sample)));
        assert_eq!(Distribution::of_sorted_counts(&counts[..1]), orderless(Distribution::of(&[0.003; 1])));
        assert!(Distribution::of_sorted_counts(&[]).is_none());
    }

    #[test]
    fn single_sample_has_no_spread() {
        let d = Distribution::of(&[3.0]).unwrap();
        assert_eq!(d.stddev, None);
        assert_eq!(d.ci95_low, None);
        assert!(Distribution::of(&[]).is_none());
        assert!(Distribution::of(&[f64::NAN]).is_none());
    }

    #[test]
    fn key_styles_match_reference_names() {
        let d = Distribution::of(&REFERENCE);
        let mut m = Map::new();
        write_distribution(&mut m, "ttft", KeyStyle::Millis, d.as_ref());
        write_distribution(&mut m, "decode_tok_s", KeyStyle::Plain, d.as_ref());
        for key in [
            "ttft_mean_ci95_high_ms",
            "ttft_p99_ms",
            "ttft_samples",
            "ttft_stddev_ms",
            "decode_tok_s_mean_ci95_low",
            "decode_tok_s_p25",
            "decode_tok_s_samples",
        ] {
            assert!(m.contains_key(key), "{key}");
        }
        let mut empty = Map::new();
        write_distribution(&mut empty, "ttft", KeyStyle::Millis, None);
        // Each block's keys, and the one `intervals_withheld` they share.
        assert_eq!(empty.len(), m.len().div_ceil(2));
        assert_eq!(m[WITHHELD_KEY], serde_json::json!({}));
        assert_eq!(empty["ttft_samples"], 0);
    }
}
