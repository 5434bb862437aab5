//! A `search`'s result: the highest passing value of its variable, every
//! probe it judged (the curve), the shape of the boundary and why it stopped;
//! with `confidence`, the answer is a bound and the result states how often
//! such a bound is above the true capacity (`error_rate`) and what it cost.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The `schema` every search result carries.
pub const SEARCH_RESULT_SCHEMA: &str = "anvil-serving.search-result/v1";

/// `anvil-serving.search-result/v1`. Gates read `search.NAME.max_rate` (or
/// `max_concurrency`); both are `null` when no probe passed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchResult {
    /// [`SEARCH_RESULT_SCHEMA`].
    pub schema: String,
    /// `rate` or `concurrency`.
    pub variable: String,
    /// `bracket` or `ladder`.
    pub method: String,
    /// The highest value that passed with no failing probe at or below it.
    pub max_value: Option<f64>,
    /// `max_value` of a rate search.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rate: Option<f64>,
    /// `max_value` of a concurrency search.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrency: Option<f64>,
    /// The lowest value that failed (None: none did).
    pub lowest_fail: Option<f64>,
    /// `sharp` (every pass below every fail), `noisy` (a fail below a pass),
    /// `above-range` (nothing failed) or `below-range` (nothing passed).
    pub boundary: String,
    /// The stop rule that ended the search (`precision`, `saturation`,
    /// `errors`, `budget`, `top-of-range`, `bottom-of-range`, `ladder-done`).
    pub stopped: String,
    /// `stopped` in a sentence.
    pub detail: String,
    /// The SLO expressions as written.
    pub slo: Vec<String>,
    pub precision: String,
    pub budget: u64,
    /// Every probe the search judged, in the order it made them.
    pub curve: Vec<ProbePoint>,
    /// Whether the probes were measured on the simulated engine.
    pub simulated: bool,
    /// The level probes were judged at (`null`: point values).
    #[serde(default)]
    pub confidence: Option<f64>,
    /// With `confidence`: at most this share of searches like this one
    /// state a bound (`max_value`) above the true capacity; `null` when no
    /// rate can be stated (`error_basis` says why).
    #[serde(default)]
    pub error_rate: Option<f64>,
    /// How `error_rate` follows from the walk, or why there is none.
    #[serde(default)]
    pub error_basis: String,
    /// What the answer cost.
    #[serde(default)]
    pub cost: SearchCost,
}

/// The measurements a search's answer rests on (all stored).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SearchCost {
    /// Probes (one value each).
    pub probes: u64,
    /// Extra repeats pooled into undecided probes.
    pub extra_repeats: u64,
    /// Requests attempted over every probe and extra repeat.
    pub requests: u64,
}

/// One probe on the curve: a cell stored under its own fingerprint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbePoint {
    pub value: f64,
    pub passed: bool,
    /// The metrics the SLO read.
    pub metrics: Map<String, Value>,
    pub throughput_tok_s: Option<f64>,
    pub completed: u64,
    pub failed: u64,
    /// The probe cell's configuration fingerprint (its stored entry).
    pub fingerprint: String,
    /// Each SLO expression's evaluation.
    pub slo: Vec<String>,
    /// `passed`, `failed`, or `undecided` (judged over intervals, still
    /// undecided after its extra repeats: it counts as not passing).
    #[serde(default)]
    pub verdict: String,
    /// Fingerprints of the extra repeats pooled into this probe, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra_repeats: Vec<String>,
}

impl SearchResult {
    /// The answer in words: a bound at a confidence with its error rate,
    /// or a point answer with no stated rate.
    pub fn claim(&self) -> String {
        let field = if self.variable == "concurrency" { "max_concurrency" } else { "max_rate" };
        let show = |v: f64| {
            let text = format!("{v:.6}");
            text.trim_end_matches('0').trim_end_matches('.').to_string()
        };
        let Some(value) = self.max_value else { return format!("{field} none (no probe passed)") };
        let Some(level) = self.confidence else {
            return format!("{field} {} (point values: no stated rate)", show(value));
        };
        let above = self.lowest_fail.map_or_else(
            || "nothing above it failed".to_string(),
            |f| format!("not at {}={}", self.variable, show(f)),
        );
        let error =
            self.error_rate.map_or_else(|| "no stated rate".to_string(), |e| format!("error rate ≤ {e}"));
        format!("{field} {}: the SLO holds there at {level} confidence ({above}; {error})", show(value))
    }

    /// The cost in words: `5 probes + 2 extra repeats, 1234 requests`.
    pub fn cost_words(&self) -> String {
        if self.cost.probes == 0 && !self.curve.is_empty() {
            // Stored before the cost was: its curve still counts the probes.
            return format!("{} probes", self.curve.len());
        }
        let extras = match self.cost.extra_repeats {
            0 => String::new(),
            n => format!(" + {n} extra repeat{}", if n == 1 { "" } else { "s" }),
        };
        format!("{} probes{extras}, {} requests", self.cost.probes, self.cost.requests)
    }
}

/// The shape of the boundary between passing and failing probes.
pub fn boundary_of(curve: &[ProbePoint]) -> &'static str {
    let highest_pass = curve.iter().filter(|p| p.passed).map(|p| p.value).reduce(f64::max);
    let lowest_fail = curve.iter().filter(|p| !p.passed).map(|p| p.value).reduce(f64::min);
    match (highest_pass, lowest_fail) {
        (_, None) => "above-range",
        (None, Some(_)) => "below-range",
        (Some(pass), Some(fail)) if pass > fail => "noisy",
        _ => "sharp",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(value: f64, passed: bool) -> ProbePoint {
        ProbePoint {
            value,
            passed,
            metrics: Map::new(),
            throughput_tok_s: None,
            completed: 1,
            failed: 0,
            fingerprint: String::new(),
            slo: Vec::new(),
            verdict: if passed { "passed" } else { "failed" }.into(),
            extra_repeats: Vec::new(),
        }
    }

    #[test]
    fn boundaries() {
        assert_eq!(boundary_of(&[point(1.0, true), point(2.0, true)]), "above-range");
        assert_eq!(boundary_of(&[point(1.0, false)]), "below-range");
        assert_eq!(boundary_of(&[point(1.0, true), point(4.0, false), point(2.0, true)]), "sharp");
        assert_eq!(boundary_of(&[point(1.0, true), point(2.0, false), point(3.0, true)]), "noisy");
    }

    #[test]
    fn the_claim_states_a_bound_only_with_a_confidence() {
        let mut result: SearchResult = serde_json::from_value(serde_json::json!({
            "schema": SEARCH_RESULT_SCHEMA, "variable": "rate", "method": "bracket",
            "max_value": 32.0, "lowest_fail": 36.8, "boundary": "sharp", "stopped": "precision",
            "detail": "", "slo": [], "precision": "15%", "budget": 8,
            "curve": [point(32.0, true), point(36.8, false)], "simulated": true,
        }))
        .expect("a result stored before confidence reads");
        assert_eq!(result.claim(), "max_rate 32 (point values: no stated rate)");
        assert_eq!(result.cost_words(), "2 probes");
        result.confidence = Some(0.95);
        result.error_rate = Some(0.2);
        result.cost = SearchCost { probes: 4, extra_repeats: 3, requests: 749 };
        assert_eq!(
            result.claim(),
            "max_rate 32: the SLO holds there at 0.95 confidence (not at rate=36.8; error rate ≤ 0.2)"
        );
        assert_eq!(result.cost_words(), "4 probes + 3 extra repeats, 749 requests");
        result.max_value = None;
        assert_eq!(result.claim(), "max_rate none (no probe passed)");
    }

    #[test]
    fn the_answer_key_follows_the_variable() {
        let result = SearchResult {
            schema: SEARCH_RESULT_SCHEMA.into(),
            variable: "rate".into(),
            method: "bracket".into(),
            max_value: Some(4.0),
            max_rate: Some(4.0),
            max_concurrency: None,
            lowest_fail: Some(5.0),
            boundary: "sharp".into(),
            stopped: "precision".into(),
            detail: String::new(),
            slo: vec![],
            precision: "1".into(),
            budget: 3,
            curve: vec![],
            simulated: true,
            confidence: Some(0.95),
            error_rate: Some(0.1),
            error_basis: String::new(),
            cost: SearchCost { probes: 2, extra_repeats: 1, requests: 64 },
        };
        let value = super::super::to_value(&result);
        // Gates are checked at load against the recipe layer's list of fields.
        let mut keys: Vec<&str> = value.as_object().unwrap().keys().map(String::as_str).collect();
        keys.push("max_concurrency");
        keys.sort();
        let mut listed = crate::recipe::decls::search::RESULT_FIELDS.to_vec();
        listed.sort();
        assert_eq!(keys, listed);
        assert_eq!(value["max_rate"], 4.0);
        assert!(value.get("max_concurrency").is_none());
        let back: SearchResult = super::super::from_value(value).unwrap();
        assert_eq!(back, result);
    }
}
