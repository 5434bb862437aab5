//! What a cell kept of its answers (`answers.jsonl` beside its result) and,
//! over a scored dataset, its accuracy: the stored form both the run and
//! `anvil verify` write and compare.

use serde::{Deserialize, Serialize};

/// The file a cell's answers are stored in, beside its `result.json`.
pub const ANSWERS_FILE: &str = "answers.jsonl";

/// One line of `answers.jsonl`: the load generator's answer and, for a
/// scored dataset's item, its score.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnswerLine {
    #[serde(flatten)]
    pub answer: anvil_loadgen::Answer,
    /// Right by the item's scorer (an item of a scored dataset only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correct: Option<bool>,
    /// What the scorer read from the answer (a number, a letter, a match).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extracted: Option<String>,
}

/// A cell result's `answers`: what was kept, where, and its digest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeptAnswers {
    /// [`ANSWERS_FILE`], in the cell's store entry.
    pub file: String,
    /// `blake3:` of the whole file.
    pub blake3: String,
    pub kept: u64,
    /// Measured requests whose answers did not fit the budget.
    pub dropped: u64,
    /// The kept answers' lines as the load generator counted them.
    pub bytes: u64,
    pub budget_bytes: u64,
    /// Answered by the simulated engine.
    pub simulated: bool,
}

/// A cell result's `accuracy`: the share of a scored dataset's answers
/// that its scorers call right, with its Clopper–Pearson interval (exact:
/// it holds the true accuracy on items drawn like these at least `level`
/// of the time). Gates read `share` over its interval (`_ci95_`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScoredAccuracy {
    pub correct: u64,
    /// Items scored: each item's first kept answer (a later repeat's
    /// answers to the same items are kept, not counted again).
    pub n: u64,
    pub share: Option<f64>,
    pub share_ci95_low: f64,
    pub share_ci95_high: f64,
    pub level: f64,
    /// Scored answers whose reply did not end whole (failed, cut): scored
    /// as far as they went, so mostly wrong.
    pub unanswered: u64,
    /// The dataset as the recipe names it, its format and its items.
    pub dataset: String,
    pub format: String,
    pub items: u64,
}
