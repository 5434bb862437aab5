//! `decision` steps: the campaign's verdict. Each `rule` whose condition
//! holds contributes its label; `promote-when` decides promotion.

use anvil_expr::{Evaluation, JsonResolver};
use serde_json::Value;

use super::gate::eval_status;
use super::outcome::{Failure, Produced};
use crate::claims::error_bound::{self, ErrorBound, VerdictRead};
use crate::claims::family;
use crate::claims::family::{Claim, family_bound};
use crate::document::DecisionExec;
use crate::results::{
    self, ClaimError, DecisionResult, ErrorControl, GateResult, NamedMap, Promotion, RuleResult, Verdict,
};

/// The stated error of each gate's and screen's verdict in this run's
/// results: a gate's `passed_error_at_most` or `rejected_error_at_most`
/// (as the claim reads it), a screen's `1 − confidence`; times `budget + 1`
/// for one that measured more (its procedure may look that many times).
/// `None` for one judged at point values.
fn verdict_errors(inputs: &Value) -> impl Fn(&str, &str, VerdictRead) -> Option<f64> + '_ {
    move |kind, name, read| {
        let result = inputs.get(kind)?.get(name)?;
        let confidence = result.get("confidence")?.as_f64()?;
        if read == VerdictRead::Capacity {
            // A search's bound states its own error, its looks counted.
            return result.get("error_rate")?.as_f64();
        }
        let looks = result.get("measured_more").and_then(|m| m.get("budget")).and_then(Value::as_f64);
        let gate = (kind == "gate").then(|| results::from_value::<GateResult>(result.clone()).ok()).flatten();
        let status = if read == VerdictRead::Rejected { Verdict::Rejected } else { Verdict::Passed };
        // A gate stored before its bounds were: as many intervals as it
        // read can miss, at least one.
        let per_look = gate.and_then(|g| g.error_if(status)).unwrap_or(1.0 - confidence);
        Some((looks.unwrap_or(0.0) + 1.0) * per_look)
    }
}

/// What the decision's claims guarantee, each and together; `None` when
/// they read no verdict and no `family-error` was declared.
fn error_control(decision: &DecisionExec, claims: &[Claim]) -> Option<ErrorControl> {
    if decision.family_error.is_none() && claims.iter().all(|c| c.bound.verdicts.is_empty()) {
        return None;
    }
    Some(ErrorControl {
        procedure: PROCEDURE.to_string(),
        claims: claims
            .iter()
            .map(|c| ClaimError {
                claim: c.name.clone(),
                error_at_most: c.bound.bound.error(),
                verdicts: c.bound.verdicts.clone(),
                why: match &c.bound.bound {
                    ErrorBound::Uncontrolled(why) => Some(why.clone()),
                    _ => None,
                },
            })
            .collect(),
        family_error_at_most: family_bound(claims).error(),
        family_error_declared: decision.family_error,
    })
}

const PROCEDURE: &str = "a gate's `passed` errs at most 5% per interval its worst requirement reads, its `rejected` 5% per distinct interval all its requirements read, a screen's winner 1 − its confidence, a search's answer read as a lower bound (`search.s.max_rate >= v`) the error rate its search states; one that measured more (extra repeats + 1) times that; a claim `a && b` at most as its worst operand (intersection–union test, Berger 1982), `a || b` at most their sum, `!` of a verdict and a measurement read at its point value state no rate; the family of claims errs at most their sum (Bonferroni), which also bounds the expected number of wrong labels and so their false-discovery rate";

pub fn run_decision(decision: &DecisionExec, inputs: &Value) -> Result<Produced, Failure> {
    let resolver = JsonResolver::new(inputs);
    let claims = family::claims(
        decision.promote_when.as_ref().map(|w| &w.parsed),
        decision.rules.iter().map(|r| (r.label.as_str(), &r.when.parsed)),
        &verdict_errors(inputs),
    );
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
                // The label's claim, as `claims` bounded it.
                let claim = claims.iter().find(|c| c.name == rule.label).map(|c| &c.bound);
                if let Some(claim) = claim.filter(|c| !c.verdicts.is_empty()) {
                    let confidence = claim.bound.error().map(|e| error_bound::round(1.0 - e));
                    label_confidence.insert(rule.label.clone(), confidence);
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
        error_control: error_control(decision, &claims),
    };
    Ok(Produced { summary, result: results::to_value(&result), ..Produced::default() })
}
