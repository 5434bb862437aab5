//! Noise-aware comparison of two measurements of one metric: side A (the
//! published figure) and side B (the reproduction).
//!
//! # Statistics
//!
//! The quantity compared is the **ratio** r = stat(B) / stat(A); the
//! relative delta is r − 1. With threshold t (default 0.10) the equivalence
//! band is [1 − t, 1 + t]. Each comparison yields a 95% interval [lo, hi] of
//! r and a verdict:
//!
//! - `reproduced`: the whole interval lies inside the band
//!   (1 − t ≤ lo and hi ≤ 1 + t) — B agrees with A within t, with 95%
//!   confidence (an equivalence test, two one-sided tests at 2.5% each);
//! - `differs`: the whole interval lies outside the band (hi < 1 − t or
//!   lo > 1 + t) — B differs from A by more than t, with 95% confidence;
//! - `inconclusive`: anything else — too few samples, or an interval that
//!   straddles a band edge. An interval that excludes 1 but reaches into the
//!   band is `inconclusive` (a real difference, not shown to exceed t).
//!
//! **Per-request statistics across repeats** ([`compare_across_repeats`],
//! [`compare_by_repeat`]): when both sides have at least 2 repeats (the
//! records' `repeat`) and every repeat has the samples the statistic needs
//! (below), the statistic is taken within each repeat (each run's own
//! median, p95 or mean) and those per-repeat values are judged like
//! per-repeat aggregates (the Welch interval below). The interval then
//! holds the spread between runs as well as each run's sampling error:
//! `spread` is `across-repeats`, `settle_n` counts repeats, a and b are the
//! means of the per-repeat values, n_a and n_b the requests of all repeats.
//!
//! **Per-request samples, pooled** ([`compare_samples`]; otherwise: one run
//! on a side, or a repeat too small for the statistic): a seeded
//! percentile bootstrap ([`crate::bootstrap`]) of all repeats' requests
//! pooled: R resamples (default 2,000) of each side
//! with replacement, each giving stat(B*)/stat(A*); the interval is the
//! 2.5th..97.5th nearest-rank percentile of the R ratios. The statistic is
//! a nearest-rank percentile (the median for p50) or the mean. Minimum
//! sample size per side: `min_samples` (default 8), and for percentile q at
//! least `min_tail` (default 2) values beyond it on its narrow side:
//! n ≥ ⌈min_tail·100 / min(q, 100 − q)⌉ (p95: 40, p99: 200); below that the
//! verdict is `inconclusive` without an interval. A non-positive stat(A) is
//! `inconclusive`. This interval holds each run's own sampling error only,
//! not the spread between two runs of one configuration, so it is never
//! judged alone ([`judge_within_run`]): with a run-to-run spread σ stated
//! for the metric (`CompareOptions::run_to_run`) it is widened by it
//! ([`crate::run_to_run::widen`]: z·σ·√(1/runs_A + 1/runs_B) in quadrature
//! with each half-width; `spread` `stated`) and judged; without, the row is
//! `inconclusive` (`spread` `within-run`, the interval kept for the reader,
//! the reason saying why).
//!
//! **Per-repeat aggregates** ([`compare_repeats`], e.g. throughput of each
//! repeat): with at least 2 positive values per side, a Welch t interval on
//! logarithms: d = mean(ln B) − mean(ln A), se² = s²(ln A)/n_A + s²(ln B)/n_B,
//! Welch–Satterthwaite df, interval exp(d ∓ t_{0.975, df} · se) (the ratio of
//! geometric means; se = 0 gives the point exp(d)). a and b are the
//! arithmetic means.
//!
//! **One run on a side.** Against two or more repeats on the other, the
//! repeats' spread stands for both ([`crate::run_to_run::one_run_against_repeats`]:
//! se² = s²·(1/n + 1), n − 1 df); this serves per-request statistics too.
//! With one run each, a per-repeat aggregate is judged by the stated spread
//! alone (the ratio ± z·√2·σ, `spread` `stated`), and with none stated it
//! is `inconclusive` without an interval: one run a side shows nothing of
//! the spread between runs.
//!
//! **What the verdicts guarantee.** The band rule on a 95% interval is an
//! equivalence test by two one-sided tests at 2.5% each (Schuirmann, "A
//! comparison of the two one-sided tests procedure and the power approach
//! for assessing the equivalence of average bioavailability", *J.
//! Pharmacokinetics and Biopharmaceutics* 15(6), 1987): whatever the true
//! ratio, a verdict is wrong only when the interval misses it on the far
//! side, so `reproduced` with the truth outside the band, and `differs`
//! with the truth inside it (two runs of one configuration included), each
//! happen at most 2.5% of the time — as far as the interval holds its 95%.
//! The Welch interval (Welch, "The generalization of 'Student's' problem
//! when several different population variances are involved",
//! *Biometrika* 34, 1947; Satterthwaite's df) holds it approximately for
//! per-repeat values whose logarithms are near normal; the seeded test in
//! `compare_spread.rs` measures it (3% run-to-run spread, 3 and 5 repeats
//! of 300 requests, 2,000 trials a setting: one configuration twice called
//! `differs` in 0 of 2,000 at ±10% and at most 2 of 2,000 at ±5%; the
//! interval missed the true ratio in 3.4–4.3% of trials). The pooled
//! within-run bootstrap has no such guarantee across runs: on the same
//! draws its interval missed the true ratio in 32% of trials, and it called
//! a true 4.5% difference `differs` at ±5% in 15% of them (across repeats:
//! 1.2%). One run a side with σ stated as it truly is (3% and 5%, 400
//! trials): `differs` at ±10% in at most 1 of 400, at ±5% in at most 5;
//! a σ stated at 3% where it is 10% gave `differs` at ±10% in 15% of
//! trials: the statement must be honest.
//!
//! An inconclusive row says how many samples per side would likely settle
//! it (`settle_n`, [`samples_to_settle`]).
//!
//! Results are deterministic: the same inputs and seed give the same output.

use serde::Serialize;

use crate::bootstrap::{Statistic, ratio_interval};
use crate::error::AcrossRepeatsError;
use crate::run_to_run::{Spreads, one_run_against_repeats, widen};
use crate::stats::{mean, sample_sd};
use crate::tdist::t95;

anvil_words::words! {
    #[serde]
    /// Whether a second measurement reproduces the first.
    pub enum Verdict {
        Reproduced = "reproduced",
        Differs = "differs",
        Inconclusive = "inconclusive",
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct CompareOptions {
    /// Half-width t of the equivalence band [1 − t, 1 + t] of the ratio.
    pub threshold: f64,
    pub resamples: usize,
    pub seed: u64,
    pub min_samples: usize,
    /// Values needed beyond a percentile on its narrow side.
    pub min_tail: usize,
    /// The run-to-run spread stated for each metric (by its row name):
    /// what a side measured once is judged against ([`crate::run_to_run`]).
    pub run_to_run: Spreads,
}

impl Default for CompareOptions {
    fn default() -> Self {
        Self {
            threshold: 0.10,
            resamples: 2000,
            seed: 0x5EED_A4B1,
            min_samples: 8,
            min_tail: 2,
            run_to_run: Spreads::new(),
        }
    }
}

/// One metric, published (a) against reproduced (b).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub metric: String,
    /// The statistic of each side: of the pooled samples, or, judged across
    /// repeats, the mean of the per-repeat values.
    pub a: Option<f64>,
    pub b: Option<f64>,
    /// b/a − 1.
    pub relative_delta: Option<f64>,
    /// 95% interval of the ratio b/a.
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    /// Samples per side: requests for per-request rows (all repeats),
    /// repeats for per-repeat aggregates.
    pub n_a: usize,
    pub n_b: usize,
    pub method: String,
    pub verdict: Verdict,
    /// Why the verdict, in words.
    pub reason: String,
    /// For an inconclusive verdict: about how many samples per side
    /// (requests; repeats for per-repeat rows) would settle it, supposing
    /// the interval narrows as 1/√n around the same ratio ([`samples_to_settle`]);
    /// `None` when decided, or when no sample size would (a ratio on a band edge).
    /// Repeats per side when [`Comparison::spread`] is `across-repeats`.
    pub settle_n: Option<usize>,
    /// Which variation the interval holds: the spread between runs
    /// (`across-repeats`), or only each run's own sampling error (`within-run`).
    pub spread: Spread,
    /// The measured runs (repeats) each side's values came from, where known.
    pub repeats: Option<[usize; 2]>,
}

/// Which variation a row's interval holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Spread {
    /// Judged from one figure per repeat (a per-repeat aggregate, or a
    /// per-request statistic taken within each repeat): the run-to-run
    /// spread is in the interval.
    #[serde(rename = "across-repeats")]
    AcrossRepeats,
    /// Judged from the requests of all runs pooled (a block bootstrap): the
    /// interval holds each run's sampling error, not the spread between
    /// runs, so a rerun may differ by more than it says.
    #[serde(rename = "within-run")]
    WithinRun,
    /// One run on a side (or repeats too small for the statistic): the
    /// within-run interval widened by the run-to-run spread the published
    /// side states ([`crate::run_to_run::widen`]).
    #[serde(rename = "stated")]
    Stated,
    /// No interval: a count judged exactly, or no values.
    #[serde(rename = "none")]
    NoInterval,
}

/// One repeat's figure of a per-request statistic: the eligible samples it
/// was taken from, and its value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RepeatStat {
    pub samples: usize,
    pub value: f64,
}

/// Samples per side for the interval `[low, high]` of the ratio, from `n`
/// per side, to fall wholly inside or wholly outside the band: its
/// half-width `h` must shrink below the distance `m` from its centre to the
/// nearer band edge, so `n·(h/m)²` (at least `n + 1`). `None` on an edge.
pub fn samples_to_settle(n: usize, low: f64, high: f64, threshold: f64) -> Option<usize> {
    let (centre, half) = ((low + high) / 2.0, (high - low) / 2.0);
    let margin = ((centre - 1.0).abs() - threshold).abs();
    // On an edge (to rounding), no sample size decides it; nor past a billion.
    if margin.is_nan() || margin <= 1e-9 || half <= 0.0 || n == 0 {
        return None;
    }
    let wanted = n as f64 * (half / margin).powi(2);
    (wanted <= 1e9).then(|| (wanted.ceil() as usize).max(n + 1))
}

/// The band rule on an interval of the ratio.
pub fn band_verdict(low: f64, high: f64, threshold: f64) -> (Verdict, String) {
    let (lo_band, hi_band) = (1.0 - threshold, 1.0 + threshold);
    let band = format!("[{lo_band:.3}, {hi_band:.3}]");
    if low >= lo_band && high <= hi_band {
        (Verdict::Reproduced, format!("ratio CI [{low:.4}, {high:.4}] inside {band}"))
    } else if high < lo_band || low > hi_band {
        (Verdict::Differs, format!("ratio CI [{low:.4}, {high:.4}] outside {band}"))
    } else {
        (Verdict::Inconclusive, format!("ratio CI [{low:.4}, {high:.4}] straddles {band}"))
    }
}

fn finite(v: &[f64]) -> Vec<f64> {
    v.iter().copied().filter(|x| x.is_finite()).collect()
}

fn ratio_delta(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    a.zip(b).filter(|(a, _)| *a > 0.0).map(|(a, b)| b / a - 1.0)
}

/// Samples a side needs for `stat`.
pub fn samples_needed(stat: Statistic, opts: &CompareOptions) -> usize {
    match stat {
        Statistic::Mean => opts.min_samples,
        Statistic::Percentile(q) => {
            let narrow = q.min(100 - q.min(100)).max(1) as usize;
            opts.min_samples.max((opts.min_tail * 100).div_ceil(narrow))
        }
    }
}

/// Compares per-request samples of one metric by a bootstrap of the ratio of `stat`.
pub fn compare_samples(
    metric: &str,
    stat: Statistic,
    a: &[f64],
    b: &[f64],
    opts: &CompareOptions,
) -> Comparison {
    compare_finite(metric, stat, &finite(a), &finite(b), opts)
}

/// [`compare_samples`] of samples that hold finite values only, used as
/// they are: no filtered copies beside them (a big cell's columns are the
/// memory a comparison needs).
pub(crate) fn compare_finite(
    metric: &str,
    stat: Statistic,
    a: &[f64],
    b: &[f64],
    opts: &CompareOptions,
) -> Comparison {
    // One scratch copy at a time (the statistic reorders it).
    let pa = stat.of(&mut a.to_vec());
    let pb = stat.of(&mut b.to_vec());
    let method = format!(
        "within-run: seeded block bootstrap (SplitMix64 seed {:#x}, {} resamples) of the ratio of {}s of the pooled requests, 95% CI; band ±{}",
        opts.seed,
        opts.resamples,
        stat.label(),
        opts.threshold
    );
    let mut row = Comparison {
        metric: metric.to_string(),
        a: pa,
        b: pb,
        relative_delta: ratio_delta(pa, pb),
        ci_low: None,
        ci_high: None,
        n_a: a.len(),
        n_b: b.len(),
        method,
        verdict: Verdict::Inconclusive,
        reason: String::new(),
        settle_n: None,
        spread: Spread::WithinRun,
        repeats: None,
    };
    let need = samples_needed(stat, opts);
    if a.len() < need || b.len() < need {
        row.reason =
            format!("{} needs ≥ {need} samples per side; have {} and {}", stat.label(), a.len(), b.len());
        row.settle_n = Some(need);
        return row;
    }
    if pa.is_none_or(|v| v <= 0.0) {
        row.reason = "published statistic is not positive; the ratio is undefined".into();
        return row;
    }
    let Some(iv) = ratio_interval(a, b, stat, opts.resamples, opts.seed) else {
        row.reason = "no resample gave a defined ratio".into();
        return row;
    };
    row.ci_low = Some(iv.low);
    row.ci_high = Some(iv.high);
    if iv.degenerate * 40 > opts.resamples {
        row.reason =
            format!("{} of {} resamples had a non-positive A statistic", iv.degenerate, opts.resamples);
        return row;
    }
    (row.verdict, row.reason) = band_verdict(iv.low, iv.high, opts.threshold);
    if row.verdict == Verdict::Inconclusive {
        row.settle_n = samples_to_settle(a.len().min(b.len()), iv.low, iv.high, opts.threshold);
    }
    row
}

/// Compares per-repeat aggregates (one value per measured run).
pub fn compare_repeats(metric: &str, a: &[f64], b: &[f64], opts: &CompareOptions) -> Comparison {
    let (a, b) = (finite(a), finite(b));
    let (ma, mb) = (mean(&a), mean(&b));
    let t = opts.threshold;
    let mut row = Comparison {
        metric: metric.to_string(),
        a: ma,
        b: mb,
        relative_delta: ratio_delta(ma, mb),
        ci_low: None,
        ci_high: None,
        n_a: a.len(),
        n_b: b.len(),
        method: String::new(),
        verdict: Verdict::Inconclusive,
        reason: String::new(),
        settle_n: None,
        spread: Spread::NoInterval,
        repeats: Some([a.len(), b.len()]),
    };
    if a.is_empty() || b.is_empty() {
        row.method = "none".into();
        row.reason = "a side has no value".into();
        return row;
    }
    if a.iter().chain(&b).any(|v| *v <= 0.0) {
        row.method = "none".into();
        row.reason = "non-positive values: no ratio".into();
        return row;
    }
    if a.len() < 2 || b.len() < 2 {
        one_run_on_a_side(&mut row, &a, &b, opts, "per-repeat values");
        return row;
    }
    welch_on_logs(&mut row, &a, &b, t, "per-repeat values");
    row
}

/// Per-repeat values with one run on a side (`a`, `b` positive, one of
/// them a single value), into `row`: against the other side's repeats when
/// it has two or more ([`one_run_against_repeats`]: their spread stands
/// for both sides'); with one run each, the stated run-to-run spread of
/// `row.metric` around the ratio ([`widen`]); with none stated,
/// `inconclusive`, saying so.
fn one_run_on_a_side(row: &mut Comparison, a: &[f64], b: &[f64], opts: &CompareOptions, of_what: &str) {
    let t = opts.threshold;
    let (ma, mb) = (mean(a).unwrap_or(0.0), mean(b).unwrap_or(0.0));
    if a.len() >= 2 || b.len() >= 2 {
        let (single, repeated, single_is_b) = if b.len() == 1 { (mb, a, true) } else { (ma, b, false) };
        if let Some((low, high, df)) = one_run_against_repeats(single, repeated, single_is_b) {
            row.method = format!(
                "one run against {} repeats of {of_what}: t 95% CI (df {df:.0}) of the ratio, the repeats' spread standing for both sides; band ±{t}",
                repeated.len()
            );
            set_interval(row, low, high, Spread::AcrossRepeats, t);
            return;
        }
    }
    match opts.run_to_run.get(&row.metric) {
        Some(stated) if a.len() == 1 && b.len() == 1 => {
            let Some((low, high)) = widen(mb / ma, None, stated.sigma, [1, 1]) else { return };
            row.method = format!(
                "one run a side: the ratio ± z·√2·σ, σ = {:.4} the {} run-to-run spread; band ±{t}",
                stated.sigma, stated.from
            );
            set_interval(row, low, high, Spread::Stated, t);
            row.settle_n = None;
        }
        _ => {
            row.method = "none: one run a side, no run-to-run spread stated".into();
            row.reason = format!(
                "one run a side and no run-to-run spread stated for {}: a rerun may differ by more than it shows (state `run-to-run` on the cell, or give it `repeat 2` or more)",
                row.metric
            );
        }
    }
}

/// An interval of the ratio and the band's verdict on it, into `row`.
fn set_interval(row: &mut Comparison, low: f64, high: f64, spread: Spread, t: f64) {
    row.spread = spread;
    row.ci_low = Some(low);
    row.ci_high = Some(high);
    (row.verdict, row.reason) = band_verdict(low, high, t);
    if row.verdict == Verdict::Inconclusive {
        row.settle_n = samples_to_settle(row.repeats.map_or(1, |[a, b]| a.min(b)), low, high, t);
    }
}

/// The Welch t 95% interval of the ratio of geometric means of `a` and `b`
/// (≥ 2 positive values each) and the band's verdict on it, into `row`.
fn welch_on_logs(row: &mut Comparison, a: &[f64], b: &[f64], t: f64, of_what: &str) {
    let la: Vec<f64> = a.iter().map(|v| v.ln()).collect();
    let lb: Vec<f64> = b.iter().map(|v| v.ln()).collect();
    let (na, nb) = (la.len() as f64, lb.len() as f64);
    let (va, vb) = (sample_sd(&la).unwrap_or(0.0).powi(2) / na, sample_sd(&lb).unwrap_or(0.0).powi(2) / nb);
    let d = mean(&lb).unwrap_or(0.0) - mean(&la).unwrap_or(0.0);
    let se = (va + vb).sqrt();
    let (low, high, df) = if se > 0.0 {
        let df = (va + vb).powi(2) / (va * va / (na - 1.0) + vb * vb / (nb - 1.0));
        let tq = t95(df);
        ((d - tq * se).exp(), (d + tq * se).exp(), df)
    } else {
        (d.exp(), d.exp(), f64::INFINITY)
    };
    row.method =
        format!("Welch t 95% CI (df {df:.2}) of the ratio of geometric means of {of_what}; band ±{t}");
    set_interval(row, low, high, Spread::AcrossRepeats, t);
}

/// Compares a per-request statistic across repeats: `stat` taken within
/// each repeat of each side (`a`, `b`: one [`RepeatStat`] per repeat), then
/// judged like per-repeat aggregates ([`compare_repeats`]: a Welch t
/// interval on logarithms), so the spread between runs is in the interval.
/// `a` and `b` are the means of the per-repeat values; `n_a`, `n_b` the
/// samples of all repeats; `settle_n` counts repeats. With one run on a
/// side and repeats on the other, the single run is judged against the
/// repeats' spread ([`one_run_against_repeats`]).
///
/// Err (why not): fewer than 2 repeats on both sides, a repeat with fewer
/// samples than `stat` needs ([`samples_needed`]), or a non-positive value.
pub fn compare_across_repeats(
    metric: &str,
    stat: Statistic,
    a: &[RepeatStat],
    b: &[RepeatStat],
    opts: &CompareOptions,
) -> Result<Comparison, AcrossRepeatsError> {
    if a.len() < 2 && b.len() < 2 || a.is_empty() || b.is_empty() {
        return Err(AcrossRepeatsError::TooFewRepeats { a: a.len(), b: b.len() });
    }
    let need = samples_needed(stat, opts);
    for (side, repeats) in [("A", a), ("B", b)] {
        let least = repeats.iter().map(|r| r.samples).min().unwrap_or(0);
        if least < need {
            return Err(AcrossRepeatsError::TooFewSamples { side, least, statistic: stat, need });
        }
        if repeats.iter().any(|r| !(r.value.is_finite() && r.value > 0.0)) {
            return Err(AcrossRepeatsError::NonPositive { side, statistic: stat });
        }
    }
    let values = |side: &[RepeatStat]| side.iter().map(|r| r.value).collect::<Vec<f64>>();
    let (va, vb) = (values(a), values(b));
    let (ma, mb) = (mean(&va), mean(&vb));
    let mut row = Comparison {
        metric: metric.to_string(),
        a: ma,
        b: mb,
        relative_delta: ratio_delta(ma, mb),
        ci_low: None,
        ci_high: None,
        n_a: a.iter().map(|r| r.samples).sum(),
        n_b: b.iter().map(|r| r.samples).sum(),
        method: String::new(),
        verdict: Verdict::Inconclusive,
        reason: String::new(),
        settle_n: None,
        spread: Spread::AcrossRepeats,
        repeats: Some([a.len(), b.len()]),
    };
    let of_what = format!("per-repeat {}s", stat.label());
    if va.len() >= 2 && vb.len() >= 2 {
        welch_on_logs(&mut row, &va, &vb, opts.threshold, &of_what);
    } else {
        one_run_on_a_side(&mut row, &va, &vb, opts, &of_what);
    }
    row.method = format!("across repeats: {}", row.method);
    Ok(row)
}

/// Judges a pooled-request row ([`compare_samples`], used because `why`:
/// from [`compare_across_repeats`]) with `repeats` runs a side: its
/// within-run interval holds each run's sampling error, not the spread
/// between runs. With a run-to-run spread stated for the metric, the
/// interval is widened by it ([`widen`]) and judged; without, the row is
/// `inconclusive` (the within-run interval kept for the reader).
pub fn judge_within_run(row: &mut Comparison, why: &str, repeats: [usize; 2], opts: &CompareOptions) {
    row.repeats = Some(repeats);
    let point = row.a.zip(row.b).filter(|(a, _)| *a > 0.0).map(|(a, b)| b / a);
    let within = row.ci_low.zip(row.ci_high);
    let stated = opts.run_to_run.get(&row.metric);
    let widened = match (stated, point, within) {
        (Some(stated), Some(point), Some(within)) => {
            widen(point, Some(within), stated.sigma, repeats.map(|r| r.max(1))).map(|iv| (stated, iv))
        }
        _ => None,
    };
    if let Some((stated, (low, high))) = widened {
        row.method = format!(
            "{}; widened by σ = {:.4}, the {} run-to-run spread ({why})",
            row.method, stated.sigma, stated.from
        );
        set_interval(row, low, high, Spread::Stated, opts.threshold);
        row.settle_n = None;
        return;
    }
    row.spread = if within.is_some() { Spread::WithinRun } else { Spread::NoInterval };
    let note = if within.is_some() {
        format!(
            "within-run interval only ({why}) and no run-to-run spread stated: a rerun may differ by more than it shows (state `run-to-run` on the cell, or give it `repeat 2` or more)"
        )
    } else {
        format!("({why})")
    };
    if within.is_some() {
        row.verdict = Verdict::Inconclusive;
        row.settle_n = None;
    }
    row.reason = if row.reason.is_empty() { note } else { format!("{}; {note}", row.reason) };
}

/// A per-request statistic of two sides given repeat by repeat (`a[i]`:
/// the values of side A's i-th repeat, in record order): across repeats
/// ([`compare_across_repeats`]) when a side has 2 or more repeats of enough
/// samples, else the within-run bootstrap of the pooled values
/// ([`compare_samples`]), judged by [`judge_within_run`].
pub fn compare_by_repeat(
    metric: &str,
    stat: Statistic,
    a: &[Vec<f64>],
    b: &[Vec<f64>],
    opts: &CompareOptions,
) -> Comparison {
    let groups = |side: &[Vec<f64>]| -> Vec<Vec<f64>> {
        side.iter().map(|g| finite(g)).filter(|g| !g.is_empty()).collect()
    };
    let (ga, gb) = (groups(a), groups(b));
    let stats = |side: &[Vec<f64>]| -> Vec<RepeatStat> {
        side.iter()
            .filter_map(|g| stat.of(&mut g.clone()).map(|value| RepeatStat { samples: g.len(), value }))
            .collect()
    };
    match compare_across_repeats(metric, stat, &stats(&ga), &stats(&gb), opts) {
        Ok(row) => row,
        Err(why) => {
            let mut row = compare_finite(metric, stat, &ga.concat(), &gb.concat(), opts);
            judge_within_run(&mut row, &why.to_string(), [ga.len(), gb.len()], opts);
            row
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn band_edges() {
        assert_eq!(band_verdict(0.95, 1.05, 0.1).0, Verdict::Reproduced);
        assert_eq!(band_verdict(1.15, 1.3, 0.1).0, Verdict::Differs);
        assert_eq!(band_verdict(0.5, 0.85, 0.1).0, Verdict::Differs);
        // Excludes 1 but reaches into the band: not shown to exceed t.
        assert_eq!(band_verdict(1.02, 1.2, 0.1).0, Verdict::Inconclusive);
        assert_eq!(band_verdict(0.7, 1.3, 0.1).0, Verdict::Inconclusive);
    }

    #[test]
    fn samples_to_settle_scale_the_interval_to_the_nearer_band_edge() {
        // Centre 1.0, half-width 0.2, band ±0.1: the half-width must halve, so 4n.
        assert_eq!(samples_to_settle(100, 0.8, 1.2, 0.1), Some(400));
        // Centre 1.3 (0.2 past the edge), half-width 0.25: (0.25/0.2)^2 n.
        assert_eq!(samples_to_settle(64, 1.05, 1.55, 0.1), Some(100));
        // Centred on the band edge: no sample size decides it.
        assert_eq!(samples_to_settle(64, 1.0, 1.2, 0.1), None);
    }

    #[test]
    fn sample_requirements() {
        let o = CompareOptions::default();
        assert_eq!(samples_needed(Statistic::Percentile(50), &o), 8);
        assert_eq!(samples_needed(Statistic::Percentile(95), &o), 40);
        assert_eq!(samples_needed(Statistic::Percentile(99), &o), 200);
        assert_eq!(samples_needed(Statistic::Mean, &o), 8);
    }

    #[test]
    fn repeats_rules() {
        let o = CompareOptions::default();
        // One run a side and no stated spread: never judged either way.
        for b in [300.0, 115.0, 100.0] {
            let r = compare_repeats("tok_s", &[100.0], &[b], &o);
            assert_eq!((r.verdict, r.spread), (Verdict::Inconclusive, Spread::NoInterval), "{r:?}");
            assert!(r.reason.contains("no run-to-run spread stated"), "{}", r.reason);
        }
        let r = compare_repeats("tok_s", &[100.0, 101.0, 99.0], &[100.5, 99.5, 100.0], &o);
        assert_eq!(r.verdict, Verdict::Reproduced, "{r:?}");
        let r = compare_repeats("tok_s", &[100.0, 101.0, 99.0], &[150.0, 152.0, 149.0], &o);
        assert_eq!(r.verdict, Verdict::Differs, "{r:?}");
        let r = compare_repeats("tok_s", &[100.0, 100.0], &[100.0, 100.0], &o);
        assert_eq!((r.verdict, r.ci_low, r.ci_high), (Verdict::Reproduced, Some(1.0), Some(1.0)));
        assert_eq!(r.spread, Spread::AcrossRepeats);
    }

    #[test]
    fn one_run_a_side_is_judged_against_the_stated_spread() {
        use crate::run_to_run::{RunSpread, SpreadSource};
        let stated = |sigma: f64| CompareOptions {
            run_to_run: Spreads::from([(
                "tok_s".to_string(),
                RunSpread { sigma, from: SpreadSource::Declared, repeats: None },
            )]),
            ..CompareOptions::default()
        };
        // 5% a run: a third of the throughput differs, the same does not reproduce at ±10%
        // (z·√2·0.05 = 0.139 > ln 1.1) but does at ±20%.
        let r = compare_repeats("tok_s", &[100.0], &[33.0], &stated(0.05));
        assert_eq!((r.verdict, r.spread), (Verdict::Differs, Spread::Stated), "{r:?}");
        assert!(r.method.contains("declared run-to-run spread"), "{}", r.method);
        let r = compare_repeats("tok_s", &[100.0], &[100.0], &stated(0.05));
        assert_eq!(r.verdict, Verdict::Inconclusive, "{r:?}");
        let wide = CompareOptions { threshold: 0.2, ..stated(0.05) };
        assert_eq!(compare_repeats("tok_s", &[100.0], &[100.0], &wide).verdict, Verdict::Reproduced);
        // A 50% spread a run: a third is not shown (exp(ln 0.33 + z·√2·0.5) > 0.9).
        assert_eq!(compare_repeats("tok_s", &[100.0], &[33.0], &stated(0.5)).verdict, Verdict::Inconclusive);
        // Another metric's statement does not count.
        let other = compare_repeats("other", &[100.0], &[33.0], &stated(0.05));
        assert_eq!(other.verdict, Verdict::Inconclusive);
        // Repeats on one side: their spread, not the statement.
        let r = compare_repeats("tok_s", &[100.0, 102.0, 98.0], &[33.0], &stated(0.5));
        assert_eq!((r.verdict, r.spread), (Verdict::Differs, Spread::AcrossRepeats), "{r:?}");
        assert!(r.method.starts_with("one run against 3 repeats"), "{}", r.method);
    }

    /// `n` values around `centre` (±4%), in a fixed order.
    fn run(centre: f64, n: usize) -> Vec<f64> {
        (0..n).map(|i| centre * (0.96 + 0.08 * ((i * 7919) % n) as f64 / n as f64)).collect()
    }

    #[test]
    fn per_request_statistics_are_judged_across_repeats_when_both_sides_have_them() {
        let o = CompareOptions::default();
        // Each run tight within, the runs 6% apart: the pooled bootstrap
        // sees only the tight runs; across repeats the spread is in the interval.
        let a = vec![run(100.0, 60), run(106.0, 60), run(94.0, 60)];
        let b = vec![run(106.0, 60), run(112.0, 60), run(100.0, 60)];
        let across = compare_by_repeat("ttft_p50_ms", Statistic::Percentile(50), &a, &b, &o);
        assert_eq!(across.spread, Spread::AcrossRepeats, "{across:?}");
        assert_eq!(across.repeats, Some([3, 3]));
        assert_eq!((across.n_a, across.n_b), (180, 180));
        assert!(across.method.starts_with("across repeats: Welch"), "{}", across.method);
        assert_eq!(across.verdict, Verdict::Inconclusive, "{across:?}");
        assert!(across.ci_low.unwrap() < 1.0 && across.ci_high.unwrap() > 1.1, "{across:?}");
        // The same requests pooled: the interval is narrow, the spread left out.
        let pooled = compare_samples("ttft_p50_ms", Statistic::Percentile(50), &a.concat(), &b.concat(), &o);
        assert_eq!(pooled.spread, Spread::WithinRun);
        assert!(
            pooled.ci_high.unwrap() - pooled.ci_low.unwrap()
                < across.ci_high.unwrap() - across.ci_low.unwrap()
        );
        // The same runs again: their 6% spread leaves it open at ±10%;
        // runs 1% apart reproduce.
        let same = compare_by_repeat("e2e_p50_ms", Statistic::Percentile(50), &a, &a, &o);
        assert_eq!((same.verdict, same.spread), (Verdict::Inconclusive, Spread::AcrossRepeats));
        let steady = vec![run(100.0, 60), run(101.0, 60), run(99.0, 60)];
        let same = compare_by_repeat("e2e_p50_ms", Statistic::Percentile(50), &steady, &steady, &o);
        assert_eq!((same.verdict, same.spread), (Verdict::Reproduced, Spread::AcrossRepeats));
    }

    #[test]
    fn one_run_against_repeats_or_small_repeats() {
        let o = CompareOptions::default();
        let three = vec![run(100.0, 60), run(101.0, 60), run(99.0, 60)];
        let one = vec![run(100.0, 180)];
        // One run against three: the three's spread stands for both.
        let row = compare_by_repeat("ttft_p50_ms", Statistic::Percentile(50), &three, &one, &o);
        assert_eq!((row.spread, row.repeats), (Spread::AcrossRepeats, Some([3, 1])), "{row:?}");
        assert!(row.method.contains("one run against 3 repeats"), "{}", row.method);
        assert_eq!(row.n_b, 180);
        // 30 requests a repeat cannot carry a per-repeat p95 (needs 40):
        // pooled within runs, and with no spread stated, not judged.
        let small = vec![run(100.0, 30), run(101.0, 30), run(99.0, 30)];
        let row = compare_by_repeat("ttft_p95_ms", Statistic::Percentile(95), &small, &small, &o);
        assert_eq!((row.spread, row.verdict), (Spread::WithinRun, Verdict::Inconclusive), "{row:?}");
        assert!(row.reason.contains("a per-repeat p95 needs ≥ 40"), "{}", row.reason);
        assert!(row.reason.contains("no run-to-run spread stated"), "{}", row.reason);
        assert!(row.ci_low.is_some(), "the within-run interval is kept for the reader");
        // With a spread stated: widened by σ²/3 a side, and judged.
        let stated = CompareOptions {
            run_to_run: Spreads::from([(
                "ttft_p95_ms".to_string(),
                crate::run_to_run::RunSpread {
                    sigma: 0.02,
                    from: crate::run_to_run::SpreadSource::Declared,
                    repeats: None,
                },
            )]),
            ..o.clone()
        };
        let row = compare_by_repeat("ttft_p95_ms", Statistic::Percentile(95), &small, &small, &stated);
        assert_eq!((row.spread, row.verdict), (Spread::Stated, Verdict::Reproduced), "{row:?}");
        let row = compare_by_repeat("ttft_p95_ms", Statistic::Percentile(95), &three, &three, &o);
        assert_eq!(row.spread, Spread::AcrossRepeats, "{row:?}");
        // The reasons name the side.
        let err = compare_across_repeats(
            "m",
            Statistic::Mean,
            &[RepeatStat { samples: 50, value: 1.0 }],
            &[RepeatStat { samples: 50, value: 1.0 }],
            &o,
        )
        .unwrap_err();
        assert_eq!(err, AcrossRepeatsError::TooFewRepeats { a: 1, b: 1 });
        assert_eq!(err.to_string(), "one run on side A and one run on side B");
    }
}

#[cfg(test)]
#[path = "compare_spread.rs"]
mod spread;
