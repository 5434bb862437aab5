//! The stopping rule at work: each ended request's watched values, kept in
//! the order they were recorded, and at each planned look the intervals of
//! every watched metric at the rule's level (see
//! [`crate::workload::stopping`] for the rule and why it holds).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::observe::record::RequestRecord;
use crate::output::interval::{self, Estimate};
use crate::output::student_t::Level;
use crate::workload::stopping::{StoppingRule, Watched, watched};

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
                if let Some(v) = (w.value)(rec).filter(|v| v.is_finite()) {
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
