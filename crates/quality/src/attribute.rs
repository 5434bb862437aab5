//! Whose divergence is it: an arm's differing outputs against the engine's
//! own nondeterminism, measured the same way (the control against a rerun
//! of itself on the same prompts).
//!
//! The test is Fisher's exact test, one-sided: are the arm's differing
//! prompts (x₁ of n₁) more than the rerun's (x₂ of n₂) can explain, both
//! sharing one rate? Why Fisher's:
//! - it is exact at any counts, and the counts here are small (a rerun
//!   under greedy decoding often differs on none or a few prompts), where
//!   a normal approximation errs in either direction;
//! - conditioning on the total differing makes the unknown common rate
//!   drop out, so no rate is guessed; the test is conservative (a false
//!   "exceeds" comes at most `1 − level` of the time);
//! - it treats the two comparisons as independent samples of prompts.
//!   When both ran on the same prompts, a prompt where greedy decoding is
//!   fragile (two near-equal next tokens) tends to diverge in both: a
//!   positive correlation, under which a test for independent samples
//!   assumes more variance in the difference than there is, and so errs
//!   towards "within" (a test in `tests/attribution.rs` measures this).
//!
//! One-sided, because the question is whether the arm adds divergence; an
//! arm that diverges less than the rerun is within the engine's noise.

use serde::Serialize;

use crate::lossless::Identity;
use crate::pvalue::{fisher_greater, fisher_greater_floor};

anvil_words::words! {
    #[serde]
    /// Whether an arm's divergence from its control is its own.
    pub enum Cause {
        /// The arm's outputs equal the control's on every prompt.
        Identical = "identical",
        /// The arm diverges more than the engine does from itself: a false
        /// "exceeds" comes at most `1 − level` of the time.
        ExceedsNondeterminism = "exceeds-nondeterminism",
        /// The arm's divergence is not shown to exceed the engine's own.
        WithinNondeterminism = "within-nondeterminism",
        /// Too few differing prompts for any split of them to reach the
        /// level: even all of them on the arm's side would not.
        TooFewDiffering = "too-few-differing",
    }
}

/// An arm's divergence from its control, attributed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Attribution {
    pub arm_differing: u64,
    pub arm_n: u64,
    pub rerun_differing: u64,
    pub rerun_n: u64,
    /// Fisher's exact one-sided p-value (1 when the arm is identical).
    pub p_value: f64,
    pub level: f64,
    pub cause: Cause,
}

/// Attributes `arm_vs_control`'s divergence ([`crate::identical_share`]
/// of the arm against its control) against `control_vs_rerun`'s (of the
/// control against a rerun of itself), at `arm_vs_control`'s level.
pub fn attribute(arm_vs_control: &Identity, control_vs_rerun: &Identity) -> Attribution {
    let (x1, n1) = (arm_vs_control.differing(), arm_vs_control.n);
    let (x2, n2) = (control_vs_rerun.differing(), control_vs_rerun.n);
    let level = arm_vs_control.level;
    let alpha = 1.0 - level;
    let p_value = if x1 == 0 { 1.0 } else { fisher_greater(x1, n1, x2, n2) };
    let cause = if x1 == 0 {
        Cause::Identical
    } else if fisher_greater_floor(n1, x1 + x2, n2) > alpha {
        Cause::TooFewDiffering
    } else if p_value <= alpha {
        Cause::ExceedsNondeterminism
    } else {
        Cause::WithinNondeterminism
    };
    Attribution { arm_differing: x1, arm_n: n1, rerun_differing: x2, rerun_n: n2, p_value, level, cause }
}

#[cfg(test)]
mod tests {
    use super::{Cause, attribute};
    use crate::lossless::Identity;

    fn identity(differing: u64, n: u64) -> Identity {
        Identity {
            identical: n - differing,
            n,
            share: 0.0,
            low: 0.0,
            high: 1.0,
            level: 0.95,
            diverged: Vec::new(),
        }
    }

    #[test]
    fn causes() {
        assert_eq!(attribute(&identity(0, 200), &identity(3, 200)).cause, Cause::Identical);
        // 1 differing in all: at best p = 1/2.
        assert_eq!(attribute(&identity(1, 200), &identity(0, 200)).cause, Cause::TooFewDiffering);
        // 3 against 0 of 200: p = C(200,3)/C(400,3) ≈ 0.124, the least 3 can give.
        let a = attribute(&identity(3, 200), &identity(0, 200));
        assert_eq!(a.cause, Cause::TooFewDiffering);
        assert!((a.p_value - 0.1240).abs() < 1e-3, "{a:?}");
        // 5 against 0: p ≈ 2⁻⁵; 4 against 1 of the same 5: p ≈ 6/32.
        assert_eq!(attribute(&identity(5, 200), &identity(0, 200)).cause, Cause::ExceedsNondeterminism);
        assert_eq!(attribute(&identity(4, 200), &identity(1, 200)).cause, Cause::WithinNondeterminism);
        assert_eq!(attribute(&identity(12, 200), &identity(0, 200)).cause, Cause::ExceedsNondeterminism);
        assert_eq!(attribute(&identity(12, 200), &identity(10, 200)).cause, Cause::WithinNondeterminism);
        assert_eq!(attribute(&identity(40, 200), &identity(10, 200)).cause, Cause::ExceedsNondeterminism);
        assert_eq!(attribute(&identity(2, 200), &identity(30, 200)).cause, Cause::WithinNondeterminism);
    }
}
