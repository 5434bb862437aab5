//! `decision`: the campaign's verdict. Each `rule` whose condition holds
//! adds its label and statements; `promote-when` decides promotion.

use std::collections::BTreeMap;

use serde_json::Value;

use super::super::expression::Expression;
use miette::SourceSpan;

use super::super::problem::{Problems, SourceText};
use super::super::settings::{Draft, settings};

/// What a rule may say besides its label and condition, as the decision
/// summary names it.
pub const STATEMENTS: &[&str] =
    &["winner", "single-card-selection", "alternate-runtime-result", "promotion-boundary", "reason"];

settings! {
    #[derive(Debug, Clone)]
    pub struct DecisionDecl {
        /// `rule label="x" when="…"`, one per line.
        key rule = many "rule" as Records,
        pub rules: Vec<Rule>,
        /// The expression that decides promotion.
        key promote_when = "promote-when" as Str,
        pub promote_when: Option<Expression>,
        /// Cells whose results head the decision summary.
        pub headline: Vec<String> = many "headline" as Strings,
        pub limitations: Vec<String> = many "limitation" as Strings,
        pub controls: Vec<String> = many "control" as Strings,
        pub identity: BTreeMap<String, Value> = many "identity" as Props,
        /// `family-error 0.1`: the most the decision's claims (promotion and
        /// every label) may err together, checked when the recipe loads
        /// (`src/recipe/family_error.rs`).
        key family_error = "family-error" as Number,
        pub family_error: Option<FamilyError>,
    }
    /// The parsed rules and promotion.
    struct DecisionRest;
}

/// `family-error α` and where it is written, for the error that says the
/// decision's claims can err more.
#[derive(Debug, Clone)]
pub struct FamilyError {
    pub level: f64,
    pub at: (SourceText, SourceSpan),
}

/// `rule label="x" when="…" winner="…"`.
#[derive(Debug, Clone)]
pub struct Rule {
    /// Empty for a rule that only adds statements.
    pub label: String,
    pub when: Expression,
    /// Statements kept when the rule holds, keyed the way the decision
    /// summary names them (`single_card_selection`).
    pub statements: Vec<(String, Value)>,
}

pub(super) fn build(draft: &Draft, problems: &mut Problems) -> DecisionDecl {
    let s = &draft.settings;
    let what = draft.what();
    let decl = (&draft.source, draft.span);
    let mut rules = Vec::new();
    if let Some(setting) = s.setting(key::rule) {
        for record in s.get(key::rule).and_then(Value::as_array).into_iter().flatten() {
            let Some(when) = record.get("when").and_then(Value::as_str) else {
                problems.push(
                    draft
                        .problem_at(
                            key::rule,
                            "a rule needs when=\"…\" (and a label=\"…\" to add a decision label)",
                        )
                        .label("incomplete rule"),
                );
                continue;
            };
            let Ok(when) = Expression::parse(when, setting, decl, &what).map_err(|p| problems.push(p)) else {
                continue;
            };
            let fields = record.as_object().cloned().unwrap_or_default();
            rules.push(Rule {
                label: fields.get("label").and_then(Value::as_str).unwrap_or("").to_string(),
                when,
                statements: fields
                    .into_iter()
                    .filter(|(k, _)| STATEMENTS.contains(&k.as_str()))
                    .map(|(k, v)| (k.replace('-', "_"), v))
                    .collect(),
            });
        }
    }
    let promote_when = match (s.setting(key::promote_when), s.str(key::promote_when)) {
        (Some(setting), Some(text)) => {
            Expression::parse(text, setting, decl, &what).map_err(|p| problems.push(p)).ok()
        }
        _ => None,
    };
    let family_error = family_error(draft, problems);
    DecisionDecl::from_settings(s, DecisionRest { rules, promote_when, family_error })
}

/// `family-error α`, a probability strictly between 0 and 1.
fn family_error(draft: &Draft, problems: &mut Problems) -> Option<FamilyError> {
    let setting = draft.settings.setting(key::family_error)?;
    let level = draft.settings.f64(key::family_error)?;
    if !(level > 0.0 && level < 1.0) {
        problems.push(
            draft
                .problem_at(
                    key::family_error,
                    format!("`family-error` is a probability between 0 and 1; found {level}"),
                )
                .label("out of range")
                .help(
                    "e.g. `family-error 0.1`: the decision's claims are all right at least 90% of the time",
                ),
        );
        return None;
    }
    Some(FamilyError { level, at: (setting.source.clone(), setting.span) })
}
