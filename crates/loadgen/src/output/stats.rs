//! Request-level distributions as the capacity-v4 protocol defines them:
//! mean, sample standard deviation, normal-approximation 95% CI of the mean,
//! and nearest-rank percentiles.

use serde_json::{Map, Value};

/// Percentiles reported for every distribution, in percent.
pub const PERCENTILES: [u32; 6] = [25, 50, 75, 90, 95, 99];
/// Below this many samples p99 is descriptive only.
pub const P99_MIN_SAMPLES: usize = 100;
/// The protocol's normal-approximation factor: the reference defines the
/// 95% CI of the mean as mean ± 1.96·sd/√n, and published cells re-derive
/// with exactly 1.96 (not the quantile 1.95996…).
const Z95: f64 = 1.96;

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
}

impl Distribution {
    /// `None` for an empty sample. Non-finite values are ignored.
    pub fn of(values: &[f64]) -> Option<Self> {
        let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
        if sorted.is_empty() {
            return None;
        }
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let mean = sorted.iter().sum::<f64>() / n as f64;
        let stddev = (n >= 2).then(|| {
            let ss: f64 = sorted.iter().map(|v| (v - mean).powi(2)).sum();
            (ss / (n - 1) as f64).sqrt()
        });
        let half_width = stddev.map(|s| Z95 * s / (n as f64).sqrt());
        Some(Self {
            samples: n,
            mean,
            stddev,
            ci95_low: half_width.map(|h| mean - h),
            ci95_high: half_width.map(|h| mean + h),
            min: sorted[0],
            max: sorted[n - 1],
            percentiles: PERCENTILES.map(|p| nearest_rank(&sorted, p)),
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
    out.insert(format!("{name}_samples"), Value::from(dist.map_or(0, |d| d.samples)));
}

/// Two-sided 95% Student-t critical value for `df` degrees of freedom, for
/// CIs across a handful of repeats where the normal approximation is too narrow.
pub fn t95(df: usize) -> Option<f64> {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
        2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
        2.045, 2.042,
    ];
    match df {
        0 => None,
        1..=30 => Some(TABLE[df - 1]),
        // The Cornish-Fisher expansion of the t quantile around the normal
        // one: within 1e-4 of the exact value from 31 degrees of freedom on
        // (the normal value alone made 32-repeat CIs about 4% too narrow).
        _ => {
            let (z, n) = (Z95, df as f64);
            let (z3, z5) = (z.powi(3), z.powi(5));
            Some(z + (z3 + z) / (4.0 * n) + (5.0 * z5 + 16.0 * z3 + 3.0 * z) / (96.0 * n * n))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference artifact's completion_tokens values and its published block.
    const REFERENCE: [f64; 12] = [328., 385., 195., 344., 425., 402., 234., 286., 334., 299., 260., 247.];

    #[test]
    fn t95_follows_student_t_past_the_table() {
        // Exact two-sided 95% values (R: qt(0.975, df)).
        for (df, exact) in [(31, 2.039513), (40, 2.021075), (60, 2.000298), (120, 1.979930), (1000, 1.962339)]
        {
            let t = t95(df).unwrap();
            assert!((t - exact).abs() < 2e-4, "df {df}: {t} vs {exact}");
        }
        assert!(t95(30).unwrap() > t95(31).unwrap(), "the table and the expansion meet in order");
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
        assert_eq!(Distribution::of_sorted_counts(&counts), Distribution::of(&sample));
        assert_eq!(Distribution::of_sorted_counts(&counts[..1]), Distribution::of(&[0.003; 1]));
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
        assert_eq!(empty.len(), m.len() / 2);
        assert_eq!(empty["ttft_samples"], 0);
    }
}
