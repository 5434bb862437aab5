//! A `gate`'s result: each `require` expression's outcome and the verdict.

use serde::{Deserialize, Serialize};

use super::verdict::{EvalStatus, Verdict};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateResult {
    pub status: Verdict,
    /// `status` is passed (kept for readers of the stored file).
    pub passed: bool,
    pub requirements: Vec<Requirement>,
    /// The requirements' details, joined with `; ` (and what it measured
    /// more, when it did: `measured_more`).
    pub detail: String,
    /// Set when the gate judged over intervals (`confidence 0.95`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
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
            measured_more: None,
        }
    }

    pub fn with_confidence(self, confidence: Option<f64>) -> GateResult {
        GateResult { confidence, ..self }
    }
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
            .map(|(text, status, detail)| Requirement {
                require: text.to_string(),
                status: *status,
                detail: detail.to_string(),
            })
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
}
