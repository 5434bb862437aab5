//! What a gate or screen with `extra-repeats` measured beyond its cells:
//! the extra repeats it pooled into each deciding cell, all stored cells.

use serde::{Deserialize, Serialize};

/// `measured_more` of a gate or screen result; absent when its first
/// verdict was decided (or it asks for no extra repeats).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeasuredMore {
    /// `extra-repeats`: the most rounds it may measure.
    pub budget: u32,
    /// Rounds pooled before the verdict (each round one more measurement
    /// of every cell that still decided it).
    pub rounds: u32,
    /// Per deciding cell, the extra repeats pooled into it.
    pub cells: Vec<PooledCell>,
    /// Why it stopped measuring: `decided`, `budget spent: still
    /// undecided`, or why no more could be measured here.
    pub stopped: String,
    /// Verdicts taken: the first, then one per round.
    pub looks: u32,
    /// The procedure's confidence: it may look up to `budget + 1` times at
    /// 95% each and stops at the first look that decides, so its verdict
    /// errs with probability at most (budget + 1) · 5% (Bonferroni), however
    /// few looks this run happened to take (when it stops depends on the
    /// data: counting only the looks taken would understate the error).
    /// Decision labels carry it in place of 0.95. A gate's is from the
    /// bound of the status it reached (`with_error_per_look`): its
    /// requirements may read several intervals a look.
    pub confidence_at_least: f64,
}

/// One cell and the extra repeats pooled into it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PooledCell {
    pub cell: String,
    /// The extra repeats' fingerprints, round 1 first.
    pub extra_repeats: Vec<String>,
    /// Requests the verdict read of this cell: its own and its extras'.
    pub pooled_requests: u64,
}

impl MeasuredMore {
    /// Extra repeats measured or reused in all (cells × their rounds).
    pub fn extra_repeats(&self) -> usize {
        self.cells.iter().map(|c| c.extra_repeats.len()).sum()
    }

    pub fn new(budget: u32, rounds: u32, cells: Vec<PooledCell>, stopped: &str) -> MeasuredMore {
        let looks = rounds + 1;
        let planned_looks = budget + 1;
        let confidence_at_least = (1.0 - f64::from(planned_looks) * 0.05).max(0.0);
        // Rounded as a level is written: 0.85, not 0.8499999999999999.
        let confidence_at_least = (confidence_at_least * 1e6).round() / 1e6;
        MeasuredMore { budget, rounds, cells, stopped: stopped.to_string(), looks, confidence_at_least }
    }

    /// The procedure's confidence for a verdict that errs at most
    /// `per_look` each look (a gate's bound for the status it reached,
    /// `GateResult::error_if`), over every look the budget allows.
    pub fn with_error_per_look(self, per_look: f64) -> MeasuredMore {
        let at_least = (1.0 - f64::from(self.budget + 1) * per_look).max(0.0);
        MeasuredMore { confidence_at_least: (at_least * 1e6).round() / 1e6, ..self }
    }

    /// One line: "4 extra repeats of a, b over 2 of 3 rounds (decided; confidence at least 0.85)".
    pub fn words(&self) -> String {
        let names: Vec<&str> = self.cells.iter().map(|c| c.cell.as_str()).collect();
        format!(
            "{} extra repeat{} of {} over {} of {} round{} ({}; confidence at least {})",
            self.extra_repeats(),
            if self.extra_repeats() == 1 { "" } else { "s" },
            names.join(", "),
            self.rounds,
            self.budget,
            if self.budget == 1 { "" } else { "s" },
            self.stopped,
            self.confidence_at_least
        )
    }
}
