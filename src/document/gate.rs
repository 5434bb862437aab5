//! A gate's document body: what it requires, judged over the results its
//! key's fingerprints name.

use serde::{Deserialize, Serialize};

use super::expression::ExpressionText;
use crate::quality::comparison::ArmComparison;
use crate::recipe::decls::GateDecl;

/// What judging a gate needs besides its inputs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GateExec {
    /// Each `require` expression.
    pub require: Vec<ExpressionText>,
    /// Each `lossless` or `accuracy-not-worse` comparison.
    pub arms: Vec<ArmComparison>,
    /// Whether a rejection fails the run.
    pub blocking: bool,
    /// Judged over intervals at this level (0.95), or at point values.
    pub confidence: Option<f64>,
    /// How many more repeats of its cells it may measure while undecided.
    pub extra_repeats: u64,
}

impl GateExec {
    pub fn of(gate: &GateDecl) -> GateExec {
        GateExec {
            require: gate.require.iter().map(ExpressionText::from).collect(),
            arms: gate.arms.iter().map(|a| a.comparison()).collect(),
            blocking: gate.blocking,
            confidence: gate.confidence,
            extra_repeats: gate.extra_repeats,
        }
    }
}
