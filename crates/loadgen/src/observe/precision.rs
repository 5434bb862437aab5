//! The stopping rule at work: each ended request's watched values, kept in
//! the order they were recorded, and at each planned look the intervals of
//! every watched metric at the rule's level (see
//! [`crate::workload::stopping`] for the rule and why it holds).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::observe::record::RequestRecord;
use crate::output::interval::{self, Estimate};
use crate::output::student_t::Level;
use crate::workload::prompt::SplitMix64;
use crate::workload::stopping::{FAMILY_ERROR, StoppingRule, Watched, watched};

/// Brownian paths simulated for the looks' joint level.
pub const PATHS: usize = 100_000;

impl StoppingRule {
    /// The level of each look's intervals: all looks' together hold with
    /// 95% (`workload::stopping` says how it is found).
    pub fn level(&self) -> Level {
        level_for(&self.looks())
    }
}

/// The level at which intervals at `looks` (ended-request counts, rising)
/// hold together with 95%: Pocock's constant for these looks, simulated,
/// and never above Bonferroni's.
pub fn level_for(looks: &[u64]) -> Level {
    if looks.len() <= 1 {
        return Level::NINETY_FIVE;
    }
    let bonferroni = Level { confidence: 1.0 - FAMILY_ERROR / looks.len() as f64 };
    let mut rng = SplitMix64::new(0x9e37_79b9_7f4a_7c15, looks.len() as u64);
    let mut maxima: Vec<f64> = (0..PATHS)
        .map(|_| {
            let (mut w, mut before, mut largest) = (0.0f64, 0.0f64, 0.0f64);
            for &n in looks {
                let n = n as f64;
                w += standard_normal(&mut rng) * (n - before).sqrt();
                before = n;
                largest = largest.max((w / n.sqrt()).abs());
            }
            largest
        })
        .collect();
    maxima.sort_by(f64::total_cmp);
    let c = maxima[((1.0 - FAMILY_ERROR) * PATHS as f64) as usize];
    // Two-sided: each tail holds 1 − Φ(c) = erfc(c/√2)/2.
    let tail_total = statrs::function::erf::erfc(c / std::f64::consts::SQRT_2);
    let pocock = Level { confidence: 1.0 - tail_total };
    if pocock.confidence > bonferroni.confidence { bonferroni } else { pocock }
}

/// A standard normal draw (Box–Muller).
fn standard_normal(rng: &mut SplitMix64) -> f64 {
    let u = 1.0 - rng.next_f64();
    let v = rng.next_f64();
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

/// A record's value of one metric.
type RecordValue = fn(&RequestRecord) -> Option<f64>;

/// How a record holds a watchable metric (by its base name).
fn accessor(base: &str) -> Option<RecordValue> {
    let value: RecordValue = match base {
        "ttft" => |r| r.ttft_ms,
        "time_to_first_output" => |r| r.time_to_first_output_ms,
        "e2e" => |r| r.e2e_ms,
        "generation" => |r| r.generation_ms,
        "visible_generation" => |r| r.visible_generation_ms,
        "tpot" => |r| r.tpot_ms,
        "ttft_from_schedule" => |r| r.ttft_from_schedule_ms,
        "e2e_from_schedule" => |r| r.e2e_from_schedule_ms,
        "decode_tok_s" => |r| r.decode_tok_s,
        _ => return None,
    };
    Some(value)
}

fn value_of(base: &str, r: &RequestRecord) -> Option<f64> {
    accessor(base).and_then(|value| value(r))
}

/// One metric's interval at a look, as the artifact writes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LookedAt {
    pub estimate: f64,
    pub low: Option<f64>,
    pub high: Option<f64>,
    /// Half the interval over the estimate; `null` while a side is unbounded.
    pub relative_half_width: Option<f64>,
}

impl From<Estimate> for LookedAt {
    fn from(e: Estimate) -> Self {
        LookedAt { estimate: e.value, low: e.low, high: e.high, relative_half_width: e.relative_half_width() }
    }
}

/// One look: how many requests had ended, what each metric's interval was,
/// and whether all of them were within the rule's precision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Look {
    pub requests: u64,
    pub metrics: BTreeMap<String, LookedAt>,
    pub precise: bool,
}

impl Look {
    /// Why the run stops here (each metric's half-width), when it is precise.
    pub fn precise_detail(&self) -> Option<String> {
        self.precise.then(|| {
            let widths: Vec<String> = self
                .metrics
                .iter()
                .filter_map(|(k, m)| Some(format!("{k} ±{:.1}%", m.relative_half_width? * 100.0)))
                .collect();
            format!("precise after {} requests: {}", self.requests, widths.join(", "))
        })
    }
}

/// The artifact's `stopping`: the rule, the looks taken, and each watched
/// metric's interval over every measured request at the looks' level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoppingRecord {
    pub rule: StoppingRule,
    /// `pocock-planned-looks` (docs/metrics.md "Stopping rules").
    pub method: String,
    /// Ended-request counts the rule planned to look at.
    pub planned_looks: Vec<u64>,
    /// Each look's intervals are at this confidence (0.95 over the looks together).
    pub look_confidence: f64,
    pub looks: Vec<Look>,
    /// Over every measured request (those in flight at the stop included),
    /// at `look_confidence`.
    pub final_intervals: BTreeMap<String, LookedAt>,
}

pub const METHOD: &str = "pocock-planned-looks";

/// The `metrics` key that marks a cell measured under a stopping rule: its
/// value is the level of the intervals the rule guarantees (the looks'
/// level, [`StoppingRecord::look_confidence`]). A verdict reads a stopped
/// cell's intervals only from the keys [`stopping_key`] names, never its
/// `_ci95_` ones: those were looked at to choose the stop.
pub const STOPPING_CONFIDENCE_KEY: &str = "stopping_confidence";

/// Where the `metrics` block holds the rule's interval of watched `key`
/// (`e2e_mean_ms`, `decode_tok_s_p50`): `side` (`low` or `high`) after the
/// statistic and `stopping`, before a `_ms` unit (`e2e_mean_stopping_low_ms`).
pub fn stopping_key(key: &str, side: &str) -> String {
    match key.strip_suffix("_ms") {
        Some(base) => format!("{base}_stopping_{side}_ms"),
        None => format!("{key}_stopping_{side}"),
    }
}

/// Writes into a `metrics` block the stopping rule's level
/// ([`STOPPING_CONFIDENCE_KEY`]) and each watched metric's interval at it,
/// `intervals` (by watched key; a metric without values is left out, so a
/// verdict finds no interval for it).
pub fn write_stopping_intervals(
    metrics: &mut serde_json::Map<String, serde_json::Value>,
    level: Level,
    intervals: &BTreeMap<String, Estimate>,
) {
    let num = |v: Option<f64>| v.map_or(serde_json::Value::Null, serde_json::Value::from);
    metrics.insert(STOPPING_CONFIDENCE_KEY.into(), level.confidence.into());
    for (key, e) in intervals {
        metrics.insert(stopping_key(key, "low"), num(e.low));
        metrics.insert(stopping_key(key, "high"), num(e.high));
    }
}

/// The watched values so far and the looks taken.
pub struct PrecisionWatch {
    rule: StoppingRule,
    watched: Vec<(String, Watched)>,
    planned: Vec<u64>,
    /// Every look's level (computed once: it is a simulation).
    level: Level,
    /// Each watched metric's eligible values, in recorded order.
    values: Vec<Vec<f64>>,
    ended: u64,
    looks: Vec<Look>,
}

impl PrecisionWatch {
    /// `None` when a metric is not watchable (the recipe's loader refused it already).
    pub fn new(rule: &StoppingRule) -> Option<PrecisionWatch> {
        let watched = rule
            .until
            .iter()
            .map(|key| watched(key).map(|w| (key.clone(), w)))
            .collect::<Result<Vec<_>, _>>()
            .ok()?;
        Some(PrecisionWatch {
            values: vec![Vec::new(); watched.len()],
            planned: rule.looks(),
            level: rule.level(),
            rule: rule.clone(),
            watched,
            ended: 0,
            looks: Vec::new(),
        })
    }

    /// Takes one ended request; at a planned look, returns that look.
    pub fn take(&mut self, rec: &RequestRecord) -> Option<&Look> {
        self.ended += 1;
        if rec.performance_eligible {
            for ((_, w), values) in self.watched.iter().zip(&mut self.values) {
                if let Some(v) = value_of(w.base, rec).filter(|v| v.is_finite()) {
                    values.push(v);
                }
            }
        }
        if !self.planned.contains(&self.ended) {
            return None;
        }
        let metrics = self.intervals();
        let precise = self.watched.len() == metrics.len()
            && metrics.values().all(|m| m.relative_half_width.is_some_and(|w| w <= self.rule.within));
        self.looks.push(Look { requests: self.ended, metrics, precise });
        self.looks.last()
    }

    fn intervals(&self) -> BTreeMap<String, LookedAt> {
        let level = self.level;
        self.watched
            .iter()
            .zip(&self.values)
            .filter_map(|((key, w), values)| {
                Some((key.clone(), interval::estimate(values, w.statistic, level)?.into()))
            })
            .collect()
    }

    /// Why the last look did not stop the run: each metric still too wide.
    pub fn imprecise(&self) -> String {
        let Some(look) = self.looks.last() else { return "no look was reached".into() };
        let within = self.rule.within * 100.0;
        let wide: Vec<String> = self
            .watched
            .iter()
            .filter_map(|(key, _)| match look.metrics.get(key).and_then(|m| m.relative_half_width) {
                Some(w) if w <= self.rule.within => None,
                Some(w) => Some(format!("{key} ±{:.1}% (needs {within}%)", w * 100.0)),
                None => Some(format!("{key} unbounded (needs ±{within}%)")),
            })
            .collect();
        format!("after {} requests: {}", look.requests, wide.join(", "))
    }

    /// What the artifact records, once every measured request has ended.
    pub fn record(&self) -> StoppingRecord {
        StoppingRecord {
            final_intervals: self.intervals(),
            look_confidence: self.level.confidence,
            method: METHOD.into(),
            planned_looks: self.planned.clone(),
            looks: self.looks.clone(),
            rule: self.rule.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::interval::Statistic;
    use crate::workload::stopping::WATCHABLE;

    #[test]
    fn the_looks_level_lies_between_one_test_and_bonferroni() {
        // Equally spaced looks have Pocock's published constants (two-sided
        // 5%: K = 2, 2.178; K = 5, 2.413), a check of the simulation.
        for (k, constant) in [(2u64, 2.178), (5, 2.413)] {
            let looks: Vec<u64> = (1..=k).map(|i| 100 * i).collect();
            let level = level_for(&looks);
            let normal = statrs::distribution::Normal::standard();
            let c = statrs::distribution::ContinuousCDF::inverse_cdf(&normal, 1.0 - level.tail());
            assert!((c - constant).abs() < 0.02, "K = {k}: {c} vs {constant}");
        }
        assert_eq!(level_for(&[50]), Level::NINETY_FIVE, "one look is a fixed count");
        // Doubling looks, 100 to 1600: five of them.
        let level = level_for(&[100, 200, 400, 800, 1600]).confidence;
        assert!(level > 0.95 && level < 1.0 - 0.05 / 5.0, "{level}");
    }

    /// The Clopper–Pearson 95% interval of a share `k` of `n`.
    pub(crate) fn clopper_pearson(k: u32, n: u32) -> (f64, f64) {
        anvil_evidence::binomial::clopper_pearson(u64::from(k), u64::from(n), 0.95)
    }

    /// Coverage as a statistic: seeded lognormal(0, 1.5) draws (the right
    /// skew of latencies: a sample whose spread came out small has a small
    /// mean too, so stopping when the interval looks narrow picks samples
    /// that miss below), stopped by the rule at the first precise look. Of
    /// the intervals at the stop, the 95% ones (what a verdict read before)
    /// miss the true mean more often than 5%, the rule's own at most 5%
    /// (within the Clopper–Pearson interval of the share; a withheld one
    /// claims nothing and misses nothing). Misses below and above are
    /// counted apart.
    #[test]
    fn at_the_stop_the_rules_intervals_hold_and_the_95_percent_ones_do_not() {
        let sigma = 1.5f64;
        let truth = (sigma * sigma / 2.0).exp();
        let looks = [50u64, 100, 200, 400, 800, 1600];
        let level = level_for(&looks);
        let within = 0.25;
        let mut rng = SplitMix64::new(43, 7);
        let trials = 2000u32;
        // [95%, rule's level] × [below, above]
        let mut missed = [[0u32; 2]; 2];
        let mut stopped_at = BTreeMap::<u64, u32>::new();
        let mut fixed_missed = 0u32;
        for _ in 0..trials {
            let mut values = Vec::new();
            let mut stop = *looks.last().unwrap();
            for &n in &looks {
                while values.len() < n as usize {
                    values.push((sigma * standard_normal(&mut rng)).exp());
                }
                let e = interval::estimate(&values, Statistic::Mean, level).unwrap();
                // A withheld interval (batch means correlated) is never precise.
                if e.relative_half_width().is_some_and(|w| w <= within) {
                    stop = n;
                    break;
                }
            }
            *stopped_at.entry(stop).or_default() += 1;
            // The control: a fixed count (800, the commonest stop), no choice.
            while values.len() < 800 {
                values.push((sigma * standard_normal(&mut rng)).exp());
            }
            let fixed = interval::estimate(&values[..800], Statistic::Mean, Level::NINETY_FIVE).unwrap();
            fixed_missed +=
                u32::from(fixed.low.is_some_and(|l| l > truth) || fixed.high.is_some_and(|h| h < truth));
            values.truncate(stop as usize);
            for (i, l) in [Level::NINETY_FIVE, level].into_iter().enumerate() {
                let e = interval::estimate(&values, Statistic::Mean, l).unwrap();
                // Withheld at the stop: no claim, so no miss.
                missed[i][0] += u32::from(e.high.is_some_and(|h| h < truth));
                missed[i][1] += u32::from(e.low.is_some_and(|l| l > truth));
            }
        }
        let miss = |m: [u32; 2]| m[0] + m[1];
        let (low95, _) = clopper_pearson(miss(missed[0]), trials);
        let (low_rule, _) = clopper_pearson(miss(missed[1]), trials);
        let report = format!(
            "stops {stopped_at:?}; 95% at a fixed 800: missed {fixed_missed}; 95% at the stop: missed {} (below {}, above {}); rule's {:.4}: missed {} (below {}, above {})",
            miss(missed[0]),
            missed[0][0],
            missed[0][1],
            level.confidence,
            miss(missed[1]),
            missed[1][0],
            missed[1][1]
        );
        eprintln!("{report}");
        assert!(low95 > 0.05, "the 95% intervals at the stop should fall short: {report}");
        assert!(miss(missed[0]) > fixed_missed, "stopping makes them shorter still: {report}");
        assert!(low_rule <= 0.05, "the rule's intervals should hold: {report}");
    }

    /// A stopping rule on AR(1) values at φ = 0.99 around 10 (800 values
    /// are worth about four independent ones): before, batch means whose
    /// variance came out small made the interval look narrow, and the rule
    /// stopped early on exactly those runs. Now a look whose batches fail
    /// the independence test has no interval and goes on. Of 400 seeded
    /// runs (looks 50 to 1,600, within 25%), the share that stopped early
    /// with an interval that missed has an upper Clopper–Pearson bound under
    /// 5%; with the fixed batches (the control) its lower bound is above
    /// 20%. Measured: fixed batches stopped 236 runs early, 162 of them
    /// missing; the tested ones 12, 9 missing (those that still stop early
    /// are the runs whose batches passed by chance: rarer, not better).
    #[test]
    fn correlated_looks_go_on_instead_of_stopping_on_a_narrow_interval() {
        use crate::output::batch_means::{self, Batching};
        let looks = [50u64, 100, 200, 400, 800, 1600];
        let level = level_for(&looks);
        let (truth, within, trials) = (10.0, 0.25, 400u32);
        let fixed = |values: &[f64]| {
            let b = Batching::of(values.len()).expect("50 or more");
            let mean = values.iter().sum::<f64>() / values.len() as f64;
            let variance = batch_means::variance(&b.means(values, |v| v));
            let (low, high) = batch_means::mean_interval(b, mean, variance, level);
            Estimate { value: mean, low: Some(low), high: Some(high) }
        };
        let tested = |values: &[f64]| interval::estimate(values, Statistic::Mean, level).expect("values");
        let mut ar = crate::output::coverage_tests::Ar1::new(29, 0.99);
        // [tested, fixed] × [stopped early, of which missed]
        let mut early = [[0u32; 2]; 2];
        for _ in 0..trials {
            let values: Vec<f64> = ar.run(1600).into_iter().map(|x| truth + x).collect();
            for (i, rule) in [&tested as &dyn Fn(&[f64]) -> Estimate, &fixed].into_iter().enumerate() {
                let stop = looks[..looks.len() - 1].iter().find_map(|&n| {
                    let e = rule(&values[..n as usize]);
                    e.relative_half_width().is_some_and(|w| w <= within).then_some(e)
                });
                if let Some(e) = stop {
                    early[i][0] += 1;
                    early[i][1] += u32::from(e.high.unwrap() < truth || e.low.unwrap() > truth);
                }
            }
        }
        let report = format!(
            "of {trials} runs, stopped early: tested {} ({} missed), fixed batches {} ({} missed)",
            early[0][0], early[0][1], early[1][0], early[1][1]
        );
        eprintln!("{report}");
        assert!(clopper_pearson(early[0][1], trials).1 < 0.05, "{report}");
        assert!(clopper_pearson(early[1][1], trials).0 > 0.20, "{report}");
    }

    #[test]
    fn every_watchable_metric_has_a_value() {
        for (base, _) in WATCHABLE {
            assert!(accessor(base).is_some(), "{base} has no value in a record");
        }
        assert!(accessor("throughput_tok_s").is_none());
    }
}
