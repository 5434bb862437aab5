//! A scored item: a question sent to the model, the reference its answer
//! is scored against, and the rule that scores it.

use serde::{Deserialize, Serialize};

anvil_words::words! {
    #[serde]
    /// How an output is scored against an item's reference (the rules:
    /// [`crate::score::score`]).
    pub enum Scorer {
        /// The whole output equals the reference, trimmed, case- and
        /// whitespace-normalised.
        Exact = "exact",
        /// The output's answer number equals the reference as a decimal.
        Number = "number",
        /// The choice letter the output names equals the reference letter.
        Choice = "choice",
        /// The reference is a regular expression that matches somewhere in
        /// the output.
        Regex = "regex",
    }
}

/// One question of a scored dataset, as anvil's own JSONL writes it
/// (`{"id":..,"prompt":..,"reference":..,"scorer":..}`, in that order).
///
/// The readers ([`crate::dataset`]) check what a scorer needs of its
/// reference (a number, a letter, a pattern that compiles); an item built
/// by hand with a reference its scorer cannot use scores every output as
/// wrong.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Item {
    /// Unique within its dataset.
    pub id: String,
    /// What is sent to the model.
    pub prompt: String,
    /// The answer: text (exact), a number (number), a letter (choice), or a
    /// pattern (regex).
    pub reference: String,
    pub scorer: Scorer,
}
