//! The spread between runs of one configuration, and how a comparison with
//! too few runs to see it holds it anyway.
//!
//! Two runs of one configuration differ by more than each run's own
//! sampling error: the server's state, how the schedule lines up with the
//! engine's steps. We model a run's statistic as the configuration's value
//! times a lognormal factor exp(σ·Z), one factor per run, so σ (the
//! log-sd; 0.05 is about a 5% spread) is the **run-to-run spread**.
//!
//! A comparison learns σ from repeats when it has them (the Welch interval
//! of `compare.rs`, or, with repeats on one side only,
//! [`one_run_against_repeats`]). With one run on each side it cannot: the
//! spread must be **stated** ([`RunSpread`]: declared in the recipe, or
//! measured from the published cell's repeats), and the within-run
//! interval of the log-ratio is widened by it ([`widen`]): each side's run
//! adds σ²/runs to the variance of its statistic's logarithm. With no
//! stated spread, one run a side is `inconclusive`, never waved through.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::stats::{mean, sample_sd};
use crate::tdist::t95;

/// The two-sided 95% normal quantile.
pub const Z95: f64 = 1.959_963_984_540_054;

anvil_words::words! {
    #[serde]
    /// Where a stated run-to-run spread came from.
    pub enum SpreadSource {
        /// `run-to-run` in the recipe: the publisher's statement.
        Declared = "declared",
        /// The sample log-sd of the cell's per-repeat values.
        Measured = "measured",
    }
}

/// A run-to-run spread of one metric.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RunSpread {
    /// The log-sd of the factor between runs of one configuration.
    pub sigma: f64,
    pub from: SpreadSource,
    /// For a measured spread: the repeats it was measured from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeats: Option<usize>,
}

/// Stated spreads by headline metric (`throughput_tok_s`, `ttft_p50_ms`, …).
pub type Spreads = BTreeMap<String, RunSpread>;

/// The interval of the ratio `point` widened by the run-to-run spread
/// `sigma` with `runs` runs a side: the log-ratio's half-widths below and
/// above `point` (from the within-run interval `within`, if any) are each
/// combined with z·σ·√(1/runs_A + 1/runs_B) in quadrature, so an
/// asymmetric bootstrap interval stays asymmetric.
pub fn widen(point: f64, within: Option<(f64, f64)>, sigma: f64, runs: [usize; 2]) -> Option<(f64, f64)> {
    if !(point > 0.0 && point.is_finite() && sigma >= 0.0 && runs.iter().all(|&r| r > 0)) {
        return None;
    }
    let centre = point.ln();
    let between = Z95 * sigma * (1.0 / runs[0] as f64 + 1.0 / runs[1] as f64).sqrt();
    let (below, above) = match within {
        Some((low, high)) if low > 0.0 && high >= low => {
            ((centre - low.ln()).max(0.0), (high.ln() - centre).max(0.0))
        }
        Some(_) => return None,
        None => (0.0, 0.0),
    };
    let (below, above) = (below.hypot(between), above.hypot(between));
    Some(((centre - below).exp(), (centre + above).exp()))
}

/// A 95% interval of the ratio of B to A when one side was measured once
/// (`single`) and the other in two or more repeats (`repeated`): the
/// repeated side's log-values give the spread s (degrees of freedom
/// n − 1), and since both sides are judged as runs of one configuration
/// the single run's logarithm varies by as much:
/// se² = s²·(1/n + 1), d = ln single − mean ln repeated (the sign flipped
/// when the single run is A). Values must be positive. Returns the
/// interval and the degrees of freedom.
pub fn one_run_against_repeats(single: f64, repeated: &[f64], single_is_b: bool) -> Option<(f64, f64, f64)> {
    if repeated.len() < 2 || single <= 0.0 || repeated.iter().any(|v| *v <= 0.0) {
        return None;
    }
    let logs: Vec<f64> = repeated.iter().map(|v| v.ln()).collect();
    let n = logs.len() as f64;
    let d = single.ln() - mean(&logs)?;
    let d = if single_is_b { d } else { -d };
    let se = sample_sd(&logs)? * (1.0 / n + 1.0).sqrt();
    let df = n - 1.0;
    let half = t95(df) * se;
    Some(((d - half).exp(), (d + half).exp(), df))
}

/// The spread measured from one cell's per-repeat values of a metric: the
/// sample log-sd (it holds each repeat's own sampling error too, so it
/// errs wide). `None` with fewer than 2 positive values.
pub fn measured(per_repeat: &[f64]) -> Option<RunSpread> {
    if per_repeat.len() < 2 || per_repeat.iter().any(|v| !(*v > 0.0 && v.is_finite())) {
        return None;
    }
    let logs: Vec<f64> = per_repeat.iter().map(|v| v.ln()).collect();
    Some(RunSpread { sigma: sample_sd(&logs)?, from: SpreadSource::Measured, repeats: Some(logs.len()) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_run_a_side_adds_two_run_variances_to_the_within_run_interval() {
        // No within-run interval: ±z·σ·√2 around the point.
        let (low, high) = widen(1.0, None, 0.05, [1, 1]).unwrap();
        let half = Z95 * 0.05 * 2f64.sqrt();
        assert!((low - (-half).exp()).abs() < 1e-12 && (high - half.exp()).abs() < 1e-12);
        // A within-run half-width of 0.1 below and 0.2 above (log scale), each widened.
        let (low, high) =
            widen(2.0, Some((2.0 * (-0.1f64).exp(), 2.0 * 0.2f64.exp())), 0.05, [1, 1]).unwrap();
        assert!((2f64.ln() - low.ln() - 0.1f64.hypot(half)).abs() < 1e-12);
        assert!((high.ln() - 2f64.ln() - 0.2f64.hypot(half)).abs() < 1e-12);
        // Three runs a side pooled: a third of the variance each.
        let (_, high) = widen(1.0, None, 0.05, [3, 3]).unwrap();
        assert!((high.ln() - Z95 * 0.05 * (2.0f64 / 3.0).sqrt()).abs() < 1e-12);
        assert_eq!(widen(0.0, None, 0.05, [1, 1]), None);
        assert_eq!(widen(1.0, None, 0.05, [0, 1]), None);
    }

    #[test]
    fn one_run_against_repeats_uses_the_repeated_sides_spread() {
        let repeated = [100.0, 110.0, 90.0];
        let (low, high, df) = one_run_against_repeats(100.0, &repeated, true).unwrap();
        assert_eq!(df, 2.0);
        assert!(low < 1.0 && high > 1.0);
        // The single run on side A: the ratio inverts.
        let (low_a, high_a, _) = one_run_against_repeats(100.0, &repeated, false).unwrap();
        assert!((low_a * high - 1.0).abs() < 1e-12 && (high_a * low - 1.0).abs() < 1e-12);
        assert_eq!(one_run_against_repeats(100.0, &[100.0], true), None);
        assert_eq!(one_run_against_repeats(100.0, &[100.0, -1.0], true), None);
    }

    #[test]
    fn a_measured_spread_is_the_log_sd_of_the_repeats() {
        let spread = measured(&[100.0, 100.0 * 0.1f64.exp()]).unwrap();
        assert!((spread.sigma - 0.1 / 2f64.sqrt()).abs() < 1e-12, "{spread:?}");
        assert_eq!((spread.from, spread.repeats), (SpreadSource::Measured, Some(2)));
        assert_eq!(measured(&[100.0]), None);
        assert_eq!(measured(&[100.0, 0.0]), None);
    }
}
