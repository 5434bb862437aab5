//! `screen`: pick the best variant of a sweep by one metric.

use super::super::decl::Draft;
use super::super::expression::Expression;
use super::super::problem::Problems;
use super::super::schema::{FieldSpec, Shape, field, required};
use super::super::words::Goal;

pub const FIELDS: &[FieldSpec] = &[
    required("over", Shape::Str),
    required("metric", Shape::Str),
    field("goal", Shape::OneOf(Goal::WORDS)),
    field("min-delta-pct", Shape::Number),
];

/// Below this margin (percent) a winner is not called unless confidence
/// intervals say otherwise.
pub const DEFAULT_MIN_DELTA_PCT: f64 = 2.0;

#[derive(Debug, Clone)]
pub struct ScreenDecl {
    /// The cells compared: `cell.sglang-d*`.
    pub over: String,
    /// The result field compared: `aggregate_tok_s`.
    pub metric: String,
    pub goal: Goal,
    pub min_delta_pct: f64,
    /// `over.metric`, parsed (absent only in a recipe that is refused).
    pub expression: Option<Expression>,
}

pub(super) fn build(draft: &Draft, problems: &mut Problems) -> ScreenDecl {
    let s = &draft.settings;
    let over = s.string("over").unwrap_or_default();
    let metric = s.string("metric").unwrap_or_default();
    let expression = match s.setting("over") {
        Some(setting) if s.contains("metric") => {
            let text = format!("{over}.{metric}");
            Expression::parse(&text, setting, (&draft.source, draft.span), &draft.what())
                .map_err(|problem| problems.push(problem))
                .ok()
        }
        _ => None,
    };
    ScreenDecl {
        over,
        metric,
        goal: s.str("goal").and_then(Goal::from_word).unwrap_or(Goal::Maximize),
        min_delta_pct: s.f64("min-delta-pct").unwrap_or(DEFAULT_MIN_DELTA_PCT),
        expression,
    }
}
