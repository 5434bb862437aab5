//! Whether a run's batch means look independent: the test that decides
//! whether a batch-means interval may be published.
//!
//! Batch means assume the batches are long enough for their means to be
//! nearly independent; near capacity a queue stays long for hundreds of
//! requests, neighbouring batches share it, and the spread of their means
//! then understates the variance of the whole mean (on AR(1) data at
//! φ = 0.99, 400 values in 10 batches: the 95% interval held the mean in
//! fewer than half of the runs). The test is von Neumann's ratio in Young's
//! form (Young, "On randomness in ordered sequences", *Annals of
//! Mathematical Statistics* 12(3), 1941): for `B` batch means `x_i`,
//! `C = 1 − Σ(x_{i+1} − x_i)² / (2·Σ(x_i − x̄)²)`, a lag-1 autocorrelation
//! that under independence has mean 0 and variance `(B − 2)/(B² − 1)`, and
//! is near normal from 8 batches on. Positive correlation is rejected
//! one-sided at 5% (`ALPHA`). When it is, the batches are made fewer and
//! longer (the count halved, never below the fewest the caller allows:
//! `batch_means::MIN_BATCHES`) and tested again,
//! the procedure of Fishman ("Grouping observations in digital simulation",
//! *Management Science* 24(5), 1978) and Fishman & Yarberry's LBATCH ("An
//! implementation of the batch means method", *INFORMS Journal on
//! Computing* 9(3), 1997). Batches that still fail at the fewest count have
//! no interval: it is withheld and the artifact says why, so a gate
//! reading it is undecided rather than wrong.
//!
//! Ten means are too few for the test alone: at φ = 0.99 it passed batches
//! whose intervals then missed in 41% of the runs it let through. So a cut
//! of `B` batches of `m` is accepted only when the cut twice as fine (`2B`
//! batches of `m/2`) passes too: where batches of `m` are still correlated,
//! those of `m/2` are more so (for an AR(1) well past its correlation time
//! the lag-1 correlation of batch means halves as `m` doubles), and `2B`
//! means estimate it with less noise. Our rule, with its costs measured in
//! `output/coverage_tests.rs` and docs/benchmarks.md: under independence
//! it withholds 6–9% of intervals at 400–800 values; at φ = 0.99 and 800
//! values the share of runs whose published interval missed fell from 43%
//! to 2%, most intervals being withheld (the run is worth about four
//! independent values).

use std::fmt;

/// Each test's size: the chance of calling independent batch means
/// correlated. A larger one withholds more often under independence, a
/// smaller one passes more correlated runs (10%, Fishman & Yarberry's
/// choice, withheld 19% of independent runs of 400 with the finer cut).
#[cfg(test)]
const ALPHA: f64 = 0.05;
/// The one-sided normal quantile at `1 − ALPHA` (written out, so that the
/// checker's copy tests against the same bits).
const Z_ONE_SIDED: f64 = 1.644_853_626_951_472_2;

/// Why a statistic's batch means were not accepted.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Correlated {
    /// Young's `C` at the fewest batches tried.
    pub lag1: f64,
    /// Its critical value there.
    pub critical: f64,
    /// The means it was computed over (the fewest cut or the one twice as fine).
    pub batches: usize,
}

impl fmt::Display for Correlated {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "withheld: batch means correlated at the fewest batches (lag-1 C = {:.2} > {:.2} over {} batches)",
            self.lag1, self.critical, self.batches
        )
    }
}

/// Young's `C` of `means` in order; `None` below 3 means or without
/// spread (constant means say nothing about correlation).
pub fn lag1(means: &[f64]) -> Option<f64> {
    if means.len() < 3 {
        return None;
    }
    let mean = means.iter().sum::<f64>() / means.len() as f64;
    let spread: f64 = means.iter().map(|x| (x - mean) * (x - mean)).sum();
    let steps: f64 = means.windows(2).map(|w| (w[1] - w[0]) * (w[1] - w[0])).sum();
    (spread > 0.0).then(|| 1.0 - steps / (2.0 * spread))
}

/// The largest `C` that `b` independent batch means give with
/// probability `1 − ALPHA`.
pub fn critical(b: usize) -> f64 {
    let b = b as f64;
    Z_ONE_SIDED * ((b - 2.0) / (b * b - 1.0)).sqrt()
}

/// `Err` when `means` fail the test; constant means pass.
pub fn test(means: &[f64]) -> Result<(), Correlated> {
    let critical = critical(means.len());
    match lag1(means) {
        Some(c) if c > critical => Err(Correlated { lag1: c, critical, batches: means.len() }),
        _ => Ok(()),
    }
}

/// The batch count to try after `count` failed: half, never below
/// `fewest`; `None` when `count` was already the fewest.
pub fn fewer(count: usize, fewest: usize) -> Option<usize> {
    (count > fewest).then(|| (count / 2).max(fewest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn critical_values_follow_the_null_variance() {
        let z = statrs::distribution::ContinuousCDF::inverse_cdf(
            &statrs::distribution::Normal::standard(),
            1.0 - ALPHA,
        );
        assert!((z - Z_ONE_SIDED).abs() < 1e-12, "{z}");
        // B = 10: √(8/99) = 0.2843, times 1.6449.
        assert!((critical(10) - 0.4676).abs() < 1e-4);
        assert!((critical(30) - 1.6449 * (28.0f64 / 899.0).sqrt()).abs() < 1e-4);
        assert_eq!(
            (fewer(30, 10), fewer(20, 10), fewer(15, 10), fewer(10, 10)),
            (Some(15), Some(10), Some(10), None)
        );
    }

    #[test]
    fn alternating_and_trending_means_read_as_they_are() {
        let alternating: Vec<f64> = (0..10).map(|i| if i % 2 == 0 { 1.0 } else { -1.0 }).collect();
        assert!(lag1(&alternating).unwrap() < -0.5 && test(&alternating).is_ok());
        let trending: Vec<f64> = (0..10).map(f64::from).collect();
        let failed = test(&trending).unwrap_err();
        assert!(failed.lag1 > 0.9 && failed.batches == 10, "{failed:?}");
        assert!(failed.to_string().contains("over 10 batches"), "{failed}");
        assert_eq!(test(&[2.0; 10]), Ok(()), "constant means: nothing to test");
    }

    /// The test's size as a statistic: of 4,000 seeded sets of 10 and of 30
    /// independent normal means, the share it calls correlated has a
    /// Clopper–Pearson interval lies within 2 points of ALPHA (the normal
    /// law of C is an approximation).
    #[test]
    fn independent_means_fail_at_about_alpha() {
        let mut rng = crate::workload::prompt::SplitMix64::new(5, 9);
        let mut normal = || {
            let (u, v) = (1.0 - rng.next_f64(), rng.next_f64());
            (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
        };
        let trials = 4000u64;
        for b in [10usize, 30] {
            let failed =
                (0..trials).filter(|_| test(&(0..b).map(|_| normal()).collect::<Vec<_>>()).is_err()).count();
            let (low, high) = anvil_evidence::binomial::clopper_pearson(failed as u64, trials, 0.95);
            let report = format!("B {b}: {failed}/{trials} [{low:.3}, {high:.3}]");
            assert!(low >= ALPHA - 0.02 && high <= ALPHA + 0.02, "{report}");
        }
    }
}
