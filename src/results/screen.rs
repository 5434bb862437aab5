//! A `screen`'s result: every variant's value of the metric, their ranking,
//! the winner, and whether the difference means anything.

use serde::{Deserialize, Serialize};

use super::named::NamedMap;
use crate::words::Goal;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScreenResult {
    pub metric: String,
    pub goal: Goal,
    /// Each variant's value, in the order the sweep matched them; `null`
    /// where the value was not finite.
    pub values: NamedMap<Option<f64>>,
    /// Variant names, best first.
    pub ranking: Vec<String>,
    /// The best measured variant; absent when a screen with `confidence`
    /// could not separate it from the runner-up (it names no winner).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub winner: Option<String>,
    /// False when the winner's lead is within noise (overlapping confidence
    /// intervals, or under `min-delta-pct`).
    pub meaningful: bool,
    pub selection_reason: String,
    /// Set when the screen judged at a confidence (`confidence 0.95`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    /// The extra repeats it pooled because its first verdict was undecided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_more: Option<super::measured_more::MeasuredMore>,
}

impl ScreenResult {
    /// The variant measured best, winner or not.
    pub fn best_measured(&self) -> &str {
        self.ranking.first().map_or("", String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Map, Value, json};

    /// What `run_screen` built before results were typed.
    fn old_way(goal: Goal, scored: &[(&str, f64)], ranked: &[&str], meaningful: bool, reason: &str) -> Value {
        let values: Map<String, Value> = scored.iter().map(|(n, v)| (n.to_string(), json!(v))).collect();
        let winner = ranked[0].to_string();
        json!({
            "metric": "aggregate_tok_s",
            "goal": goal.as_str(),
            "values": values,
            "ranking": ranked.iter().map(|n| n.to_string()).collect::<Vec<_>>(),
            "winner": winner,
            "meaningful": meaningful,
            "selection_reason": reason,
        })
    }

    fn new_way(goal: Goal, scored: &[(&str, f64)], ranked: &[&str], meaningful: bool, reason: &str) -> Value {
        super::super::to_value(&ScreenResult {
            metric: "aggregate_tok_s".into(),
            goal,
            values: scored.iter().map(|&(n, v)| (n, Some(v))).collect(),
            ranking: ranked.iter().map(|n| n.to_string()).collect(),
            winner: Some(ranked[0].to_string()),
            meaningful,
            selection_reason: reason.into(),
            confidence: None,
            measured_more: None,
        })
    }

    fn assert_same(old: Value, new: Value) {
        assert_eq!(old, new);
        assert_eq!(old.to_string(), new.to_string());
        let back: ScreenResult = super::super::from_value(old.clone()).unwrap();
        assert_eq!(super::super::to_value(&back), old);
    }

    #[test]
    fn same_json_as_before() {
        // Sweep order is kept, not sorted: tp8 before tp2.
        let scored = [("tp8", 950.5), ("tp2", 610.0), ("tp4", 880.25)];
        let reason = "tp8 (950.5) beats tp4 (880.25) by 8.0% (threshold 5%; single measurement each)";
        assert_same(
            old_way(Goal::Maximize, &scored, &["tp8", "tp4", "tp2"], true, reason),
            new_way(Goal::Maximize, &scored, &["tp8", "tp4", "tp2"], true, reason),
        );
        let reason = "no meaningful difference: tp2 (610) and tp4 (880.25) ...";
        assert_same(
            old_way(Goal::Minimize, &scored, &["tp2", "tp4", "tp8"], false, reason),
            new_way(Goal::Minimize, &scored, &["tp2", "tp4", "tp8"], false, reason),
        );
        assert_same(
            old_way(Goal::Maximize, &[("only", 1.0)], &["only"], true, "only is the only variant"),
            new_way(Goal::Maximize, &[("only", 1.0)], &["only"], true, "only is the only variant"),
        );
    }

    #[test]
    fn a_value_that_is_not_finite_is_null_both_ways() {
        let scored = [("a", f64::INFINITY), ("b", 1.0)];
        let old = old_way(Goal::Maximize, &scored, &["a", "b"], true, "r");
        let new = new_way(Goal::Maximize, &scored, &["a", "b"], true, "r");
        assert_same(old, new.clone());
        assert_eq!(new["values"]["a"], Value::Null);
    }
}
