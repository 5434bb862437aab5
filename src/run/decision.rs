//! `decision` steps: the campaign's verdict. Each `rule` whose condition
//! holds contributes its label; `promote-when` decides promotion.

use anvil_expr::{Evaluation, JsonResolver};
use serde_json::Value;

use super::gate::eval_status;
use super::outcome::{Failure, Produced};
use crate::recipe::decls::DecisionDecl;
use crate::results::{self, DecisionResult, NamedMap, Promotion, RuleResult};

/// The `confidence` of each gate and screen `when` reads (`None` for one
/// that judged point values; `measured_more.confidence_at_least` for one
/// that measured more); empty when it reads none.
fn confidences_read(when: &anvil_expr::Expr, inputs: &Value) -> Vec<Option<f64>> {
    let mut read: Vec<(String, String)> = when
        .references()
        .into_iter()
        .filter(|r| (r.kind == "gate" || r.kind == "screen") && !r.is_wildcard())
        .map(|r| (r.kind, r.name))
        .collect();
    read.sort();
    read.dedup();
    read.iter()
        .map(|(kind, name)| {
            let result = inputs.get(kind)?.get(name)?;
            // One that measured more looked several times: its confidence is
            // the lower bound over those looks.
            let after_more = result.get("measured_more").and_then(|m| m.get("confidence_at_least"));
            after_more.or(result.get("confidence"))?.as_f64()
        })
        .collect()
}

/// The confidence of a label whose rule reads verdicts of these
/// confidences: when every verdict it reads is right, the rule evaluates as
/// it would on the truth, whatever its `&&`, `||` and `!`; so the label errs
/// at most as often as any of them does, 1 − Σ(1 − cᵢ) (Bonferroni). The
/// least of them would hold only for one verdict read.
fn union_bound(confidences: &[f64]) -> f64 {
    let error: f64 = confidences.iter().map(|c| 1.0 - c).sum();
    ((1.0 - error).max(0.0) * 1e6).round() / 1e6
}

pub fn run_decision(decision: &DecisionDecl, inputs: &Value) -> Result<Produced, Failure> {
    let resolver = JsonResolver::new(inputs);
    let mut labels = Vec::new();
    let mut rules = Vec::new();
    // What the decision says in words: statements carried by the rules that hold.
    let mut statements = NamedMap::new();
    let mut label_confidence = NamedMap::new();
    for rule in &decision.rules {
        let evaluation = rule.when.parsed.eval(&resolver);
        if matches!(evaluation, Evaluation::Passed { .. }) {
            if !rule.label.is_empty() {
                labels.push(rule.label.clone());
                let confidences = confidences_read(&rule.when.parsed, inputs);
                if confidences.iter().any(Option::is_some) {
                    let all = confidences.iter().copied().collect::<Option<Vec<f64>>>();
                    label_confidence.insert(rule.label.clone(), all.map(|c| union_bound(&c)));
                }
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
        label_confidence,
    };
    Ok(Produced { summary, result: results::to_value(&result), ..Produced::default() })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_label_reading_several_verdicts_errs_as_often_as_any_of_them() {
        assert_eq!(super::union_bound(&[0.95]), 0.95);
        // Two verdicts at 95%, however the rule combines them: at least 90%.
        assert_eq!(super::union_bound(&[0.95, 0.95]), 0.9);
        assert_eq!(super::union_bound(&[0.95, 0.85, 0.75]), 0.55);
        assert_eq!(super::union_bound(&[0.5, 0.4]), 0.0);
    }
}
