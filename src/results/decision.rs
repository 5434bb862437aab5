//! A `decision`'s result: the campaign's verdict — the labels of the rules
//! that hold, what they state, and whether promotion is authorized.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::named::NamedMap;
use super::verdict::EvalStatus;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecisionResult {
    /// The non-empty labels of the rules that hold, in rule order.
    pub decision_labels: Vec<String>,
    /// `promotion.authorized`.
    pub promotion_authorized: bool,
    pub rules: Vec<RuleResult>,
    pub promotion: Promotion,
    /// What the decision says in words: each statement key of the rules
    /// that hold, the first rule's value winning.
    pub statements: NamedMap<Value>,
    /// Each label's confidence: that of the gates and screens its rule
    /// reads when every one of them judged with `confidence` (`null`: at
    /// least one judged point values, or the rule reads none). Absent in a
    /// decision whose rules read no gate or screen with a confidence.
    #[serde(default, skip_serializing_if = "NamedMap::is_empty")]
    pub label_confidence: NamedMap<Option<f64>>,
    /// How often the decision's claims can be wrong, each and together;
    /// absent when they read no gate or screen and no `family-error` is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_control: Option<ErrorControl>,
}

/// What the decision's verdicts guarantee (`src/claims/error_bound.rs`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorControl {
    /// How the bounds are formed, in words, with references.
    pub procedure: String,
    /// Each claim: promotion and every labelled rule, held or not.
    pub claims: Vec<ClaimError>,
    /// The chance that any claim is wrong (which also bounds the expected
    /// number of wrong labels); `null` when some claim states no rate.
    pub family_error_at_most: Option<f64>,
    /// `family-error` as the recipe declared it (checked when it loaded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family_error_declared: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClaimError {
    /// `promotion`, or the rule's label.
    pub claim: String,
    /// `null` when no rate can be stated; `why` says why.
    pub error_at_most: Option<f64>,
    /// The gates and screens whose verdicts it reads.
    pub verdicts: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// One `rule`: its condition and how it evaluated (any of the expression
/// outcomes: a decision stores rules whose inputs are missing too).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuleResult {
    pub label: String,
    /// The condition as written.
    pub when: String,
    pub status: EvalStatus,
    pub detail: String,
}

/// `promote-when`: `when` is `null` and the status `"not declared"` (with
/// no `detail` key) when the decision has none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Promotion {
    pub when: Option<String>,
    pub status: EvalStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    pub authorized: bool,
}

impl Promotion {
    pub fn not_declared() -> Promotion {
        Promotion { when: None, status: EvalStatus::NotDeclared, detail: None, authorized: false }
    }
}

impl DecisionResult {
    /// A statement the holding rules made, as text.
    pub fn statement(&self, key: &str) -> Option<&str> {
        self.statements.get(key).and_then(Value::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Map, json};

    struct Rule {
        label: &'static str,
        when: &'static str,
        status: EvalStatus,
        detail: &'static str,
        statements: Vec<(String, Value)>,
    }

    /// What `run_decision` built before results were typed.
    fn old_way(rules_in: &[Rule], promote: Option<(&str, EvalStatus, &str)>) -> Value {
        let mut labels = Vec::new();
        let mut rules = Vec::new();
        let mut statements = Map::new();
        for rule in rules_in {
            if rule.status == EvalStatus::Passed {
                if !rule.label.is_empty() {
                    labels.push(rule.label.to_string());
                }
                for (key, text) in &rule.statements {
                    statements.entry(key.clone()).or_insert(text.clone());
                }
            }
            rules.push(json!({"label": rule.label, "when": rule.when, "status": rule.status.as_str(), "detail": rule.detail}));
        }
        let promotion = match promote {
            Some((when, status, detail)) => {
                json!({"when": when, "status": status.as_str(), "detail": detail, "authorized": status == EvalStatus::Passed})
            }
            None => json!({"when": null, "status": "not declared", "authorized": false}),
        };
        let authorized = promotion["authorized"].as_bool().unwrap_or(false);
        json!({
            "decision_labels": labels,
            "promotion_authorized": authorized,
            "rules": rules,
            "promotion": promotion,
            "statements": statements,
        })
    }

    fn new_way(rules_in: &[Rule], promote: Option<(&str, EvalStatus, &str)>) -> Value {
        let mut labels = Vec::new();
        let mut rules = Vec::new();
        let mut statements = NamedMap::new();
        for rule in rules_in {
            if rule.status == EvalStatus::Passed {
                if !rule.label.is_empty() {
                    labels.push(rule.label.to_string());
                }
                for (key, text) in &rule.statements {
                    statements.insert_if_absent(key.clone(), text.clone());
                }
            }
            rules.push(RuleResult {
                label: rule.label.into(),
                when: rule.when.into(),
                status: rule.status,
                detail: rule.detail.into(),
            });
        }
        let promotion = match promote {
            Some((when, status, detail)) => Promotion {
                when: Some(when.into()),
                status,
                detail: Some(detail.into()),
                authorized: status == EvalStatus::Passed,
            },
            None => Promotion::not_declared(),
        };
        super::super::to_value(&DecisionResult {
            decision_labels: labels,
            promotion_authorized: promotion.authorized,
            rules,
            promotion,
            statements,
            label_confidence: NamedMap::new(),
            error_control: None,
        })
    }

    fn assert_same(old: Value, new: Value) {
        assert_eq!(old, new);
        assert_eq!(old.to_string(), new.to_string());
        let back: DecisionResult = super::super::from_value(old.clone()).unwrap();
        assert_eq!(super::super::to_value(&back), old);
    }

    fn rules() -> Vec<Rule> {
        let said = |pairs: &[(&str, Value)]| pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
        vec![
            Rule {
                label: "tp4-wins",
                when: "screen.tp.winner == \"tp4\"",
                status: EvalStatus::Passed,
                detail: "screen.tp.winner = tp4",
                statements: said(&[("winner", json!("tp4")), ("reason", json!("fastest"))]),
            },
            Rule {
                label: "",
                when: "gate.ok.passed",
                status: EvalStatus::Passed,
                detail: "gate.ok.passed = true",
                statements: said(&[("winner", json!("not me")), ("promotion_boundary", json!(2))]),
            },
            Rule {
                label: "regressed",
                when: "cell.a.ttft_p99_ms > 100",
                status: EvalStatus::Rejected,
                detail: "cell.a.ttft_p99_ms = 80",
                statements: said(&[("reason", json!("slow"))]),
            },
            Rule {
                label: "absent",
                when: "cell.b.completed > 0",
                status: EvalStatus::Missing,
                detail: "cell.b is missing",
                statements: Vec::new(),
            },
            Rule {
                label: "broken",
                when: "cell.a.engine > 1",
                status: EvalStatus::Error,
                detail: "cannot compare a string with a number",
                statements: Vec::new(),
            },
        ]
    }

    #[test]
    fn same_json_as_before() {
        let promote = ("gate.ok.passed", EvalStatus::Passed, "gate.ok.passed = true");
        assert_same(old_way(&rules(), Some(promote)), new_way(&rules(), Some(promote)));
        let refuse = ("gate.ok.passed", EvalStatus::Rejected, "gate.ok.passed = false");
        assert_same(old_way(&rules(), Some(refuse)), new_way(&rules(), Some(refuse)));
        assert_same(old_way(&[], None), new_way(&[], None));
    }

    #[test]
    fn undeclared_promotion_has_no_detail_key() {
        let new = new_way(&rules(), None);
        assert_same(old_way(&rules(), None), new.clone());
        assert_eq!(new["promotion"], json!({"when": null, "status": "not declared", "authorized": false}));
        let back: DecisionResult = super::super::from_value(new).unwrap();
        assert_eq!(back.promotion, Promotion::not_declared());
        assert_eq!(back.statement("winner"), Some("tp4"));
        assert_eq!(back.statement("promotion_boundary"), None);
    }
}
