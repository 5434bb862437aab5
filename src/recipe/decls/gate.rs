//! `gate`: every `require` expression must hold.

use super::super::expression::Expression;
use super::super::problem::Problems;
use super::super::settings::{Draft, settings};

/// The confidence a gate or screen may judge at: that of the intervals
/// artifacts hold.
pub const SUPPORTED_CONFIDENCE: f64 = 0.95;

settings! {
    #[derive(Debug, Clone)]
    pub struct GateDecl {
        /// Expressions that must hold (each parsed at load).
        key require = required many "require" as Strings,
        pub require: Vec<Expression>,
        /// A non-blocking verdict is recorded (and read by decisions) without failing the run.
        pub blocking: bool = unhashed "blocking" as Bool or true,
        /// Judge each requirement over the 95% intervals of what it reads:
        /// `passed`/`rejected` only when they agree, else `undecided`.
        key confidence = "confidence" as Number,
        pub confidence: Option<f64>,
    }
    /// The parsed expressions.
    struct GateRest;
}

pub(super) fn build(draft: &Draft, problems: &mut Problems) -> GateDecl {
    let s = &draft.settings;
    let mut require = Vec::new();
    if let Some(setting) = s.setting(key::require) {
        for text in s.strings(key::require) {
            match Expression::parse(&text, setting, (&draft.source, draft.span), &draft.what()) {
                Ok(expression) => require.push(expression),
                Err(problem) => problems.push(problem),
            }
        }
    }
    let confidence = confidence(draft, key::confidence, problems);
    GateDecl::from_settings(s, GateRest { require, confidence })
}

/// `confidence 0.95`: the level the stored intervals hold (the only one
/// there is to judge by).
pub(super) fn confidence(draft: &Draft, key: &str, problems: &mut Problems) -> Option<f64> {
    let level = draft.settings.f64(key)?;
    if (level - SUPPORTED_CONFIDENCE).abs() > 1e-9 {
        problems.push(
            draft
                .problem_at(
                    key,
                    format!("`confidence` is 0.95, the level of the intervals artifacts hold; found {level}"),
                )
                .label("unsupported level")
                .help("write `confidence 0.95`"),
        );
        return None;
    }
    Some(level)
}
