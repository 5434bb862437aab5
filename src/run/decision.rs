//! `decision` steps: the campaign's verdict. Each `rule` whose condition
//! holds contributes its label; `promote-when` decides promotion.

use anvil_expr::{Evaluation, JsonResolver};
use serde_json::{Value, json};

use super::outcome::{Failure, Produced};
use crate::plan::rules_of;
use crate::recipe::Decl;

pub fn run_decision(step: &Decl, inputs: &Value) -> Result<Produced, Failure> {
    let resolver = JsonResolver::new(inputs);
    let mut labels = Vec::new();
    let mut rules = Vec::new();
    // What the decision says in words: statements carried by the rules that hold.
    let mut statements = serde_json::Map::new();
    for (label, when) in rules_of(step) {
        let expr = anvil_expr::parse(&when).map_err(|e| Failure::new(format!("rule `{label}`: {e}")))?;
        let evaluation = expr.eval(&resolver);
        if matches!(evaluation, Evaluation::Passed { .. }) {
            if !label.is_empty() {
                labels.push(label.clone());
            }
            for (key, text) in statements_of(step, &label, &when) {
                statements.entry(key).or_insert(text);
            }
        }
        rules.push(json!({"label": label, "when": when, "status": evaluation.status(), "detail": evaluation.detail()}));
    }
    let promotion = match step.str("promote-when") {
        Some(when) => {
            let expr = anvil_expr::parse(when).map_err(|e| Failure::new(format!("promote-when: {e}")))?;
            let evaluation = expr.eval(&resolver);
            json!({"when": when, "status": evaluation.status(), "detail": evaluation.detail(), "authorized": matches!(evaluation, Evaluation::Passed { .. })})
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

/// The text settings of the rule labelled `label` (`winner="…"`, …), keyed
/// the way the decision summary names them (`single_card_selection`).
fn statements_of(step: &Decl, label: &str, when: &str) -> Vec<(String, Value)> {
    let rules = match step.get("rule") {
        Some(Value::Array(items)) => items.clone(),
        _ => Vec::new(),
    };
    rules
        .iter()
        .filter(|r| {
            r.get("label").and_then(Value::as_str).unwrap_or("") == label
                && r.get("when").and_then(Value::as_str) == Some(when)
        })
        .flat_map(|r| r.as_object().cloned().unwrap_or_default())
        .filter(|(k, _)| k != "label" && k != "when")
        .map(|(k, v)| (k.replace('-', "_"), v))
        .collect()
}
