//! What a gate's arm comparison found (`lossless`, `accuracy-not-worse`),
//! as its requirement stores it: the counts, the test, and the prompts
//! where the arms parted, so the report can show them and `anvil verify`
//! can derive them again from the answers.

use serde::{Deserialize, Serialize};

/// The most differing prompts (or disagreeing items) a requirement keeps
/// to show; the counts cover them all.
pub const SHOWN: usize = 20;

/// A comparison, by its test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "test", rename_all = "kebab-case")]
pub enum Comparison {
    Lossless(Lossless),
    AccuracyNotWorse(NotWorse),
}

impl Comparison {
    /// How often its requirement's verdict read as passed (`passed`) or as
    /// rejected can be wrong: `1 − level` where the test bounds it, 1 where
    /// it states no rate (a lossless arm that was not shown to diverge more
    /// than the engine is not shown lossless).
    pub fn error_if(&self, passed: bool) -> f64 {
        let miss = |level: f64| ((1.0 - level) * 1e6).round() / 1e6;
        match self {
            Comparison::Lossless(l) => {
                if passed {
                    1.0
                } else {
                    miss(l.level)
                }
            }
            Comparison::AccuracyNotWorse(n) => miss(n.level),
        }
    }
}

/// A share of prompts whose two outputs are identical, with its interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Identical {
    pub identical: u64,
    pub n: u64,
    pub share: Option<f64>,
    pub share_ci95_low: f64,
    pub share_ci95_high: f64,
}

/// Where one prompt's two outputs first differ.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Diverged {
    /// The item's id, else the prompt's digest.
    pub prompt: String,
    /// `token` or `char`.
    pub unit: String,
    /// The first differing token or character (0-based).
    pub at: u64,
    pub excerpt_arm: String,
    pub excerpt_control: String,
}

/// `lossless`: the arm against its control, and the control against its
/// own rerun, on the same prompts (each control answer's first run).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Lossless {
    pub arm: String,
    pub control: String,
    pub level: f64,
    pub arm_vs_control: Identical,
    /// The control's first run against its second (`None`: it has none).
    pub control_vs_rerun: Option<Identical>,
    /// `identical`, `exceeds-nondeterminism`, `within-nondeterminism`,
    /// `too-few-differing` (anvil-quality's `Cause`).
    pub cause: String,
    /// Fisher's exact one-sided p-value (1 when identical).
    pub p_value: f64,
    /// The first [`SHOWN`] differing prompts of the arm against the control.
    pub diverged: Vec<Diverged>,
    /// The first [`SHOWN`] of the control against its rerun.
    pub rerun_diverged: Vec<Diverged>,
}

/// An accuracy on the items both arms answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Accuracy {
    pub correct: u64,
    pub n: u64,
    pub share: Option<f64>,
    pub share_ci95_low: f64,
    pub share_ci95_high: f64,
}

/// An item one arm answered right and the other wrong.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Disagreement {
    pub item: String,
    pub arm_correct: bool,
    pub arm_extracted: Option<String>,
    pub control_extracted: Option<String>,
}

/// `accuracy-not-worse`: the arm and its control on the same items
/// (each item's first answer in each).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NotWorse {
    pub arm: String,
    pub control: String,
    pub level: f64,
    pub margin: f64,
    /// Items both answered.
    pub n: u64,
    pub arm_accuracy: Accuracy,
    pub control_accuracy: Accuracy,
    /// Items only the arm got right, and only the control.
    pub only_arm: u64,
    pub only_control: u64,
    /// McNemar's exact two-sided p-value.
    pub p_value: f64,
    /// McNemar's verdict: `arm-better`, `control-better`, `no-difference`,
    /// `too-few-discordant`.
    pub mcnemar: String,
    /// Arm accuracy minus control's: an exact interval at `level`.
    pub difference_low: f64,
    pub difference_high: f64,
    /// The first [`SHOWN`] items the arms disagree on.
    pub disagreements: Vec<Disagreement>,
}
