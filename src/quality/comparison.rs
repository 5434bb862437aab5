//! A gate's comparison of two arms as it is judged: which test, which
//! cells, and the words it was written in. The recipe declares it
//! (`lossless`, `accuracy-not-worse`); a gate's step document carries it.

use serde::{Deserialize, Serialize};

/// Which comparison.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "test", rename_all = "kebab-case")]
pub enum ArmTest {
    Lossless,
    /// With the accuracy the arm may lose, in (0, 1).
    AccuracyNotWorse {
        margin: f64,
    },
}

impl ArmTest {
    /// How often its verdict read as passed (`passed`) or rejected can be
    /// wrong, `miss` being 1 − the level it is judged at: a rejection
    /// errs at most `miss` (Fisher's or McNemar's exact test), a passed
    /// accuracy at most `miss` (its interval missed), a passed lossless
    /// comparison states no rate (1). The run states the same
    /// (`results::Comparison::error_if`).
    pub fn error_if(self, passed: bool, miss: f64) -> f64 {
        match (self, passed) {
            (ArmTest::Lossless, true) => 1.0,
            _ => miss,
        }
    }
}

/// One comparison: the arm's cell against the control's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmComparison {
    #[serde(flatten)]
    pub test: ArmTest,
    pub arm: String,
    pub control: String,
    /// As written: `lossless arm="ngram" control="nospec"`.
    pub text: String,
}
