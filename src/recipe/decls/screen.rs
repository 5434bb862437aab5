//! `screen`: pick the best variant of a sweep by one metric.

use super::super::expression::Expression;
use super::super::problem::Problems;
use super::super::settings::{Draft, settings};
use crate::words::Goal;

/// Below this margin (percent) a winner is not called unless confidence
/// intervals say otherwise.
pub const DEFAULT_MIN_DELTA_PCT: f64 = 2.0;

settings! {
    #[derive(Debug, Clone)]
    pub struct ScreenDecl {
        /// The cells compared: `cell.sglang-d*`.
        pub over: String = required "over" as Str or String::new(),
        /// The result field compared: `aggregate_tok_s`.
        pub metric: String = required "metric" as Str or String::new(),
        pub goal: Goal = "goal" as Word(Goal) or Goal::Maximize,
        pub min_delta_pct: f64 = "min-delta-pct" as Number or DEFAULT_MIN_DELTA_PCT,
        /// Name a winner only when its 95% interval separates from the
        /// runner-up's; otherwise the screen is undecided and names none.
        key confidence = "confidence" as Number,
        pub confidence: Option<f64>,
        /// With `confidence`: when the leader and the runner-up overlap,
        /// measure both again, up to this many extra repeats, and judge over
        /// the pooled requests (`src/run/measure_more.rs`).
        pub extra_repeats: u64 = "extra-repeats" as Int or 0,
        /// `over.metric`, parsed (absent only in a recipe that is refused).
        pub expression: Option<Expression>,
    }
    /// The parsed expression.
    struct ScreenRest;
}

pub(super) fn build(draft: &Draft, problems: &mut Problems) -> ScreenDecl {
    let s = &draft.settings;
    let confidence = super::gate::confidence(draft, key::confidence, problems);
    let mut screen = ScreenDecl::from_settings(s, ScreenRest { expression: None, confidence });
    super::gate::check_extra_repeats(draft, key::extra_repeats, screen.extra_repeats, problems);
    screen.expression = match s.setting(key::over) {
        Some(setting) if s.contains(key::metric) => {
            let text = format!("{}.{}", screen.over, screen.metric);
            Expression::parse(&text, setting, (&draft.source, draft.span), &draft.what())
                .map_err(|problem| problems.push(problem))
                .ok()
        }
        _ => None,
    };
    screen
}
