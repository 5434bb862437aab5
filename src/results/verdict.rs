//! The verdict words results store: a check's or gate's `"status"`, and how
//! one expression evaluated.

use serde::{Deserialize, Serialize};

/// The verdict of a check or a gate, stored as `"status"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Passed,
    Rejected,
    /// Judged with a confidence, the intervals allowed either answer.
    Undecided,
}

impl Verdict {
    pub fn from_passed(passed: bool) -> Verdict {
        if passed { Verdict::Passed } else { Verdict::Rejected }
    }

    pub fn passed(self) -> bool {
        self == Verdict::Passed
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Passed => "passed",
            Verdict::Rejected => "rejected",
            Verdict::Undecided => "undecided",
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How one expression (a gate's `require`, a decision's rule or
/// `promote-when`) evaluated: the expression language's four outcomes, plus
/// `"not declared"` for a decision without `promote-when`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EvalStatus {
    Passed,
    Rejected,
    Missing,
    Error,
    /// Judged over intervals that allow either answer.
    Undecided,
    #[serde(rename = "not declared")]
    NotDeclared,
}

impl EvalStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            EvalStatus::Passed => "passed",
            EvalStatus::Rejected => "rejected",
            EvalStatus::Missing => "missing",
            EvalStatus::Error => "error",
            EvalStatus::Undecided => "undecided",
            EvalStatus::NotDeclared => "not declared",
        }
    }
}
