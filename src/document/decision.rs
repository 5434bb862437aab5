//! A decision's document body: its rules and promotion, judged over the
//! results its key's fingerprints name.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::expression::ExpressionText;
use crate::recipe::decls::DecisionDecl;

/// What deciding needs besides its inputs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DecisionExec {
    pub rules: Vec<RuleExec>,
    pub promote_when: Option<ExpressionText>,
    /// The declared `family-error`: the most its claims may err together.
    pub family_error: Option<f64>,
}

/// `rule label="x" when="…" winner="…"`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RuleExec {
    /// Empty for a rule that only adds statements.
    pub label: String,
    pub when: ExpressionText,
    /// Statements kept when the rule holds, keyed as the decision summary
    /// names them (`single_card_selection`).
    pub statements: Vec<(String, Value)>,
}

impl DecisionExec {
    pub fn of(decision: &DecisionDecl) -> DecisionExec {
        DecisionExec {
            rules: decision
                .rules
                .iter()
                .map(|r| RuleExec {
                    label: r.label.clone(),
                    when: ExpressionText::from(&r.when),
                    statements: r.statements.clone(),
                })
                .collect(),
            promote_when: decision.promote_when.as_ref().map(ExpressionText::from),
            family_error: decision.family_error.as_ref().map(|f| f.level),
        }
    }
}
