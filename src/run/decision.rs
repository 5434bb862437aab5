//! `decision` steps: the campaign's verdict. Each `rule` whose condition
//! holds contributes its label; `promote-when` decides promotion.

use anvil_expr::{Evaluation, JsonResolver};
use serde_json::{Value, json};

use super::outcome::{Failure, Produced};
use crate::recipe::decls::DecisionDecl;

pub fn run_decision(decision: &DecisionDecl, inputs: &Value) -> Result<Produced, Failure> {
    let resolver = JsonResolver::new(inputs);
    let mut labels = Vec::new();
    let mut rules = Vec::new();
    // What the decision says in words: statements carried by the rules that hold.
    let mut statements = serde_json::Map::new();
    for rule in &decision.rules {
        let evaluation = rule.when.parsed.eval(&resolver);
        if matches!(evaluation, Evaluation::Passed { .. }) {
            if !rule.label.is_empty() {
                labels.push(rule.label.clone());
            }
            for (key, text) in &rule.statements {
                statements.entry(key.clone()).or_insert(text.clone());
            }
        }
        rules.push(json!({"label": rule.label, "when": rule.when.text, "status": evaluation.status(), "detail": evaluation.detail()}));
    }
    let promotion = match &decision.promote_when {
        Some(when) => {
            let evaluation = when.parsed.eval(&resolver);
            json!({"when": when.text, "status": evaluation.status(), "detail": evaluation.detail(), "authorized": matches!(evaluation, Evaluation::Passed { .. })})
        }
        None => json!({"when": null, "status": "not declared", "authorized": false}),
    };
    let authorized = promotion["authorized"].as_bool().unwrap_or(false);
    let result = json!({
        "decision_labels": labels,
        "promotion_authorized": authorized,
        "rules": rules,
        "promotion": promotion,
        "statements": statements,
    });
    Ok(Produced {
        summary: format!(
            "labels: {}; promotion {}",
            if labels.is_empty() { "(none)".to_string() } else { labels.join(", ") },
            if authorized { "authorized" } else { "not authorized" }
        ),
        result,
        files: Vec::new(),
        rejected: false,
    })
}
