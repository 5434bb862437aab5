//! `decision` steps: the campaign's verdict. Each `rule` whose condition
//! holds contributes its label; `promote-when` decides promotion.

use anvil_expr::{Evaluation, JsonResolver};
use serde_json::Value;

use super::gate::eval_status;
use super::outcome::{Failure, Produced};
use crate::recipe::decls::DecisionDecl;
use crate::results::{self, DecisionResult, NamedMap, Promotion, RuleResult};

pub fn run_decision(decision: &DecisionDecl, inputs: &Value) -> Result<Produced, Failure> {
    let resolver = JsonResolver::new(inputs);
    let mut labels = Vec::new();
    let mut rules = Vec::new();
    // What the decision says in words: statements carried by the rules that hold.
    let mut statements = NamedMap::new();
    for rule in &decision.rules {
        let evaluation = rule.when.parsed.eval(&resolver);
        if matches!(evaluation, Evaluation::Passed { .. }) {
            if !rule.label.is_empty() {
                labels.push(rule.label.clone());
            }
            for (key, text) in &rule.statements {
                statements.insert_if_absent(key.clone(), text.clone());
            }
        }
        rules.push(RuleResult {
            label: rule.label.clone(),
            when: rule.when.text.clone(),
            status: eval_status(&evaluation),
            detail: evaluation.detail().to_string(),
        });
    }
    let promotion = match &decision.promote_when {
        Some(when) => {
            let evaluation = when.parsed.eval(&resolver);
            Promotion {
                when: Some(when.text.clone()),
                status: eval_status(&evaluation),
                detail: Some(evaluation.detail().to_string()),
                authorized: matches!(evaluation, Evaluation::Passed { .. }),
            }
        }
        None => Promotion::not_declared(),
    };
    let authorized = promotion.authorized;
    let summary = format!(
        "labels: {}; promotion {}",
        if labels.is_empty() { "(none)".to_string() } else { labels.join(", ") },
        if authorized { "authorized" } else { "not authorized" }
    );
    let result = DecisionResult {
        decision_labels: labels,
        promotion_authorized: authorized,
        rules,
        promotion,
        statements,
    };
    Ok(Produced { summary, result: results::to_value(&result), ..Produced::default() })
}
