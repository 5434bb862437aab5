//! A `gate`'s result: each `require` expression's outcome and the verdict.

use serde::{Deserialize, Serialize};

use super::verdict::{EvalStatus, Verdict};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateResult {
    pub status: Verdict,
    /// `status` is passed (kept for readers of the stored file).
    pub passed: bool,
    pub requirements: Vec<Requirement>,
    /// The requirements' details, joined with `; ` (with `confidence`, then
    /// how often `passed` and `rejected` can be wrong; and what it measured
    /// more, when it did: `measured_more`).
    pub detail: String,
    /// Set when the gate judged over intervals (`confidence 0.95`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    /// With `confidence`: how often `passed` can be wrong. Passed needs
    /// every requirement passed, so a false one passed: at most the worst
    /// requirement's error (intersection–union), whatever the dependence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passed_error_at_most: Option<f64>,
    /// With `confidence`: how often `rejected` can be wrong. Rejected needs
    /// some requirement rejected, so some interval the gate read missing:
    /// at most the distinct intervals across all requirements × 5% (a
    /// union, never less than any requirement's own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rejected_error_at_most: Option<f64>,
    /// The extra repeats it pooled because its first verdict was undecided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_more: Option<super::measured_more::MeasuredMore>,
}

/// One `require` expression. A stored gate's are passed or rejected (a
/// gate with a missing input or an error is a failure, never stored).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Requirement {
    /// The expression as written.
    pub require: String,
    pub status: EvalStatus,
    pub detail: String,
    /// With `confidence`: the sampled numbers it read through a 95%
    /// interval, distinct; its verdict is wrong only if one of them misses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub intervals: Vec<String>,
    /// With `confidence`: how often its verdict can be wrong, 5% per interval
    /// (an arm comparison: its test's, whether or not the gate has `confidence`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_at_most: Option<f64>,
    /// An arm comparison (`lossless`, `accuracy-not-worse`): what it found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compared: Option<super::comparison::Comparison>,
}

impl Requirement {
    /// A requirement judged at point values (no `confidence`).
    pub fn plain(require: &str, status: EvalStatus, detail: &str) -> Requirement {
        Requirement {
            require: require.to_string(),
            status,
            detail: detail.to_string(),
            intervals: Vec::new(),
            error_at_most: None,
            compared: None,
        }
    }

    /// How often its verdict read as `passed` (or as rejected) can be
    /// wrong: its comparison's test, else `miss` per interval it read.
    fn error_if(&self, passed: bool, miss: f64) -> f64 {
        match &self.compared {
            Some(compared) => round(compared.error_if(passed)),
            None => bound(self.intervals.len(), miss),
        }
    }
}

impl GateResult {
    /// The verdict over `requirements`: rejected when any was, else
    /// undecided when any was, else passed.
    pub fn new(requirements: Vec<Requirement>) -> GateResult {
        let any = |status| requirements.iter().any(|r| r.status == status);
        let status = match (any(EvalStatus::Rejected), any(EvalStatus::Undecided)) {
            (true, _) => Verdict::Rejected,
            (false, true) => Verdict::Undecided,
            (false, false) => Verdict::Passed,
        };
        let detail = requirements.iter().map(|r| r.detail.as_str()).collect::<Vec<_>>().join("; ");
        GateResult {
            status,
            passed: status.passed(),
            requirements,
            detail,
            confidence: None,
            passed_error_at_most: None,
            rejected_error_at_most: None,
            measured_more: None,
        }
    }

    /// Judged over intervals at `confidence`: each requirement's error and
    /// the gate's, for `passed` and for `rejected`.
    pub fn with_confidence(self, confidence: Option<f64>) -> GateResult {
        let Some(level) = confidence else { return GateResult { confidence, ..self } };
        let miss = 1.0 - level;
        let requirements: Vec<Requirement> = self
            .requirements
            .into_iter()
            .map(|r| {
                let passed = r.status == EvalStatus::Passed;
                Requirement { error_at_most: Some(r.error_if(passed, miss)), ..r }
            })
            .collect();
        let passed = requirements.iter().map(|r| r.error_if(true, miss)).fold(0.0, f64::max);
        let mut distinct: Vec<&String> = requirements.iter().flat_map(|r| &r.intervals).collect();
        distinct.sort();
        distinct.dedup();
        // A union: the intervals that can miss, and each comparison's test.
        let tests: f64 =
            requirements.iter().filter(|r| r.compared.is_some()).map(|r| r.error_if(false, miss)).sum();
        let rejected = round((bound(distinct.len(), miss) + tests).min(1.0));
        let detail = format!(
            "{} (at {level}: passed errs at most {}, rejected at most {})",
            self.detail,
            anvil_expr::format_number(passed),
            anvil_expr::format_number(rejected)
        );
        GateResult {
            confidence,
            passed_error_at_most: Some(passed),
            rejected_error_at_most: Some(rejected),
            requirements,
            detail,
            ..self
        }
    }

    /// How often this gate's verdict read as `status` can be wrong, per
    /// look (`None`: judged at point values, or stored before bounds were).
    pub fn error_if(&self, status: Verdict) -> Option<f64> {
        match status {
            Verdict::Passed => self.passed_error_at_most,
            Verdict::Rejected => self.rejected_error_at_most,
            Verdict::Undecided => None,
        }
    }
}

/// `k` intervals, each missing with probability `miss`: at most `k · miss`
/// (capped at 1), to six decimals.
fn bound(k: usize, miss: f64) -> f64 {
    round((k as f64 * miss).min(1.0))
}

/// To six decimals.
fn round(value: f64) -> f64 {
    (value * 1e6).round() / 1e6
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// What `evaluate_gate` built before results were typed.
    fn old_way(requirements: &[(&str, &str, &str)]) -> Value {
        let requirements: Vec<Value> = requirements
            .iter()
            .map(|(text, status, detail)| json!({"require": text, "status": status, "detail": detail}))
            .collect();
        let rejected = requirements.iter().any(|r| r["status"] == "rejected");
        let status = if rejected { "rejected" } else { "passed" };
        let detail = requirements
            .iter()
            .map(|r| r["detail"].as_str().unwrap_or("").to_string())
            .collect::<Vec<_>>()
            .join("; ");
        json!({"status": status, "passed": !rejected, "requirements": requirements, "detail": detail})
    }

    fn new_way(requirements: &[(&str, EvalStatus, &str)]) -> Value {
        let requirements = requirements
            .iter()
            .map(|(text, status, detail)| Requirement::plain(text, *status, detail))
            .collect();
        super::super::to_value(&GateResult::new(requirements))
    }

    fn assert_same(old: Value, new: Value) {
        assert_eq!(old, new);
        assert_eq!(old.to_string(), new.to_string());
        let back: GateResult = super::super::from_value(old.clone()).unwrap();
        assert_eq!(super::super::to_value(&back), old);
    }

    #[test]
    fn same_json_as_before() {
        let passed = "cell.a.completed >= 10";
        assert_same(
            old_way(&[(passed, "passed", "cell.a.completed = 12 >= 10")]),
            new_way(&[(passed, EvalStatus::Passed, "cell.a.completed = 12 >= 10")]),
        );
        let rejected = "cell.a.failed == 0";
        assert_same(
            old_way(&[(passed, "passed", "12 >= 10"), (rejected, "rejected", "cell.a.failed = 2, not 0")]),
            new_way(&[
                (passed, EvalStatus::Passed, "12 >= 10"),
                (rejected, EvalStatus::Rejected, "cell.a.failed = 2, not 0"),
            ]),
        );
        // A gate with no requirement passes, with an empty detail.
        assert_same(old_way(&[]), new_way(&[]));
    }

    fn judged(read: &[&str]) -> Requirement {
        Requirement {
            intervals: read.iter().map(|r| r.to_string()).collect(),
            ..Requirement::plain("r", EvalStatus::Passed, "d")
        }
    }

    /// `passed` errs as the worst requirement, `rejected` as the distinct
    /// intervals of all of them: a shared interval counts once.
    #[test]
    fn each_verdict_states_its_own_bound() {
        let requirements =
            vec![judged(&["cell.a.x", "cell.b.x"]), judged(&["cell.a.x", "cell.c.x"]), judged(&[])];
        let gate = GateResult::new(requirements).with_confidence(Some(0.95));
        assert_eq!(gate.passed_error_at_most, Some(0.1));
        assert_eq!(gate.rejected_error_at_most, Some(0.15));
        let errors: Vec<Option<f64>> = gate.requirements.iter().map(|r| r.error_at_most).collect();
        assert_eq!(errors, [Some(0.1), Some(0.1), Some(0.0)]);
        assert!(
            gate.detail.ends_with("(at 0.95: passed errs at most 0.1, rejected at most 0.15)"),
            "{}",
            gate.detail
        );
        // An arm comparison states its test's: a passed lossless one no rate.
        let lossless = super::super::comparison::Comparison::Lossless(super::super::comparison::Lossless {
            arm: "a".into(),
            control: "c".into(),
            level: 0.95,
            arm_vs_control: super::super::comparison::Identical {
                identical: 10,
                n: 10,
                share: Some(1.0),
                share_ci95_low: 0.7,
                share_ci95_high: 1.0,
            },
            control_vs_rerun: None,
            cause: "identical".into(),
            p_value: 1.0,
            diverged: Vec::new(),
            rerun_diverged: Vec::new(),
        });
        let compared = Requirement {
            compared: Some(lossless),
            ..Requirement::plain("lossless", EvalStatus::Passed, "d")
        };
        let gate = GateResult::new(vec![judged(&["cell.a.x"]), compared]).with_confidence(Some(0.95));
        assert_eq!((gate.passed_error_at_most, gate.rejected_error_at_most), (Some(1.0), Some(0.1)));
        assert_eq!(gate.requirements[1].error_at_most, Some(1.0));
        let plain = GateResult::new(vec![judged(&["cell.a.x"])]).with_confidence(None);
        assert_eq!((plain.passed_error_at_most, plain.rejected_error_at_most), (None, None));
    }
}
