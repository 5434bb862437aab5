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

    #[test]
    fn every_watchable_metric_has_a_value() {
        for (base, _) in WATCHABLE {
            assert!(accessor(base).is_some(), "{base} has no value in a record");
        }
        assert!(accessor("throughput_tok_s").is_none());
    }
}
