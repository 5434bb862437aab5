//! What each kind of step stores: one serde struct per kind, written by the
//! executors in `run` and read back by the runner and by `report`.
//!
//! These types are the stored format. Their JSON is exactly what earlier
//! versions wrote with `json!` literals, key for key, value for value and in
//! the same key order: gates, screens and decisions fingerprint the canonical
//! bytes of their inputs' results, so a different shape would miss every
//! stored entry downstream. Each kind's tests build a result both ways and
//! compare. Deserialising ignores unknown keys; a key that a field needs
//! must be present (an `Option` stored as `null` is present).
//!
//! Plain data: nothing here runs a step or reads the store. The only part of
//! the crate this module uses is the recipe's words (`crate::words`).
//!
//! | kind                 | type             |
//! |----------------------|------------------|
//! | `cell`               | [`CellResult`]     |
//! | `check`              | [`CheckResult`]    |
//! | `gate`               | [`GateResult`]     |
//! | `screen`             | [`ScreenResult`]   |
//! | `decision`           | [`DecisionResult`] |
//! | `task`, `finally`    | [`TaskResult`]     |
//! | `search`             | [`SearchResult`]   |

mod answers;
mod cell;
mod check;
mod comparison;
mod decision;
mod failed_cell;
mod failed_check;
mod gate;
mod measured_more;
mod named;
mod screen;
mod search;
mod task;
mod verdict;

pub use answers::{ANSWERS_FILE, AnswerLine, KeptAnswers, ScoredAccuracy};
pub use cell::{CELL_RESULT_SCHEMA, CellLoad, CellResult};
pub use check::CheckResult;
pub use comparison::{
    Accuracy as PairedAccuracy, Comparison, Disagreement, Diverged, Identical, Lossless, NotWorse, SHOWN,
};
pub use decision::{ClaimError, DecisionResult, ErrorControl, Promotion, RuleResult};
pub use failed_cell::{FAILED_CELL_SCHEMA, FailedCell, FailureClassCount};
pub use failed_check::{FAILED_CHECK_SCHEMA, FailedCheck};
pub use gate::{GateResult, Requirement};
pub use measured_more::{MeasuredMore, PooledCell};
pub use named::NamedMap;
pub use screen::ScreenResult;
pub use search::{ProbePoint, SEARCH_RESULT_SCHEMA, SearchCost, SearchResult, boundary_of};
pub use task::TaskResult;
pub use verdict::{EvalStatus, Verdict};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What every stored verdict (a check's or a gate's result) carries,
/// whatever its kind: enough to tell whether a cached step was rejected.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct StoredVerdict {
    pub status: Verdict,
    #[serde(default)]
    pub detail: String,
}

impl StoredVerdict {
    /// The verdict in a stored result; None for a result that carries none
    /// (a cell, a task, a screen, a decision).
    pub fn of(result: &Value) -> Option<StoredVerdict> {
        StoredVerdict::deserialize(result).ok()
    }
}

/// The verdict in a stored result, if it carries one.
pub fn status_of(result: &Value) -> Option<Verdict> {
    StoredVerdict::of(result).map(|v| v.status)
}

/// A result as the store keeps it. Serialising these types cannot fail:
/// every map they hold has string keys.
pub fn to_value<T: Serialize>(result: &T) -> Value {
    serde_json::to_value(result).expect("a step result serialises (its map keys are strings)")
}

/// A stored result read back as its kind's type.
pub fn from_value<T: serde::de::DeserializeOwned>(result: Value) -> Result<T, serde_json::Error> {
    serde_json::from_value(result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn verdict_words() {
        assert_eq!(to_value(&Verdict::Passed), json!("passed"));
        assert_eq!(to_value(&Verdict::Rejected), json!("rejected"));
        assert_eq!(to_value(&EvalStatus::NotDeclared), json!("not declared"));
        for status in [
            EvalStatus::Passed,
            EvalStatus::Rejected,
            EvalStatus::Missing,
            EvalStatus::Error,
            EvalStatus::NotDeclared,
        ] {
            assert_eq!(to_value(&status), json!(status.as_str()));
        }
    }

    #[test]
    fn stored_verdicts() {
        let rejected = json!({"status": "rejected", "passed": false, "requirements": [], "detail": "x < 1"});
        assert_eq!(
            StoredVerdict::of(&rejected),
            Some(StoredVerdict { status: Verdict::Rejected, detail: "x < 1".into() })
        );
        assert_eq!(status_of(&json!({"status": "passed", "detail": ""})), Some(Verdict::Passed));
        // Results without a verdict, or with a word that is not one.
        assert_eq!(status_of(&json!({"schema": "anvil-serving.cell-result/v1"})), None);
        assert_eq!(status_of(&json!({"status": "not declared"})), None);
        assert_eq!(status_of(&Value::Null), None);
    }
}
