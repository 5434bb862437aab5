//! The verdict words results store: a check's or gate's `"status"`, and how
//! one expression evaluated.

use anvil_words::words;

words! {
    #[serde]
    /// The verdict of a check or a gate, stored as `"status"`.
    pub enum Verdict {
        Passed = "passed",
        Rejected = "rejected",
        /// Judged with a confidence, the intervals allowed either answer.
        Undecided = "undecided",
    }
}

impl Verdict {
    pub fn from_passed(passed: bool) -> Verdict {
        if passed { Verdict::Passed } else { Verdict::Rejected }
    }

    pub fn passed(self) -> bool {
        self == Verdict::Passed
    }
}

words! {
    #[serde]
    /// How one expression (a gate's `require`, a decision's rule or
    /// `promote-when`) evaluated: the expression language's four outcomes, plus
    /// `"not declared"` for a decision without `promote-when`.
    pub enum EvalStatus {
        Passed = "passed",
        Rejected = "rejected",
        Missing = "missing",
        Error = "error",
        /// Judged over intervals that allow either answer.
        Undecided = "undecided",
        NotDeclared = "not declared",
    }
}
