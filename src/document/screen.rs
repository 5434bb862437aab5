//! A screen's document body: which metric of which cells picks a winner.

use serde::{Deserialize, Serialize};

use super::expression::ExpressionText;
use crate::recipe::decls::ScreenDecl;
use crate::words::Goal;

/// What judging a screen needs besides its inputs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ScreenExec {
    /// The cells compared, as a glob over their names.
    pub over: String,
    pub metric: String,
    pub goal: Goal,
    /// The smallest difference, in percent, that counts as a winner.
    pub min_delta_pct: f64,
    /// Judged over intervals at this level (0.95), or at point values.
    pub confidence: Option<f64>,
    /// How many more repeats of its cells it may measure while undecided.
    pub extra_repeats: u64,
    /// `over.metric` as an expression: what it reads.
    pub expression: Option<ExpressionText>,
}

impl ScreenExec {
    pub fn of(screen: &ScreenDecl) -> ScreenExec {
        ScreenExec {
            over: screen.over.clone(),
            metric: screen.metric.clone(),
            goal: screen.goal,
            min_delta_pct: screen.min_delta_pct,
            confidence: screen.confidence,
            extra_repeats: screen.extra_repeats,
            expression: screen.expression.as_ref().map(ExpressionText::from),
        }
    }
}
