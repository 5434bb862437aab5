//! `gate`: every `require` expression must hold.

use super::super::expression::Expression;
use super::super::problem::Problems;
use super::super::settings::{Draft, settings};
use super::arm_check::{self, ArmCheck};

/// The confidence a gate or screen may judge at: that of the intervals
/// artifacts hold.
pub const SUPPORTED_CONFIDENCE: f64 = 0.95;

settings! {
    #[derive(Debug, Clone)]
    pub struct GateDecl {
        /// Expressions that must hold (each parsed at load).
        key require = many "require" as Strings,
        pub require: Vec<Expression>,
        /// `lossless arm="A" control="C"`: A's greedy outputs equal C's.
        key lossless = many "lossless" as Records,
        /// `accuracy-not-worse arm="A" control="C" margin=0.02`.
        key accuracy_not_worse = many "accuracy-not-worse" as Records,
        /// Two arms compared on the same prompts (`arm_check.rs`).
        pub arms: Vec<ArmCheck>,
        /// A non-blocking verdict is recorded (and read by decisions) without failing the run.
        pub blocking: bool = unhashed "blocking" as Bool or true,
        /// Judge each requirement over the 95% intervals of what it reads:
        /// `passed`/`rejected` only when they agree, else `undecided`.
        key confidence = "confidence" as Number,
        pub confidence: Option<f64>,
        /// With `confidence`: when a requirement is undecided, measure each
        /// cell it reads again, up to this many extra repeats, and judge over
        /// the pooled requests (`src/run/measure_more.rs`).
        pub extra_repeats: u64 = "extra-repeats" as Int or 0,
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
    let mut arms = arm_check::build(draft, key::lossless, problems);
    arms.extend(arm_check::build(draft, key::accuracy_not_worse, problems));
    if !s.contains(key::require) && !s.contains(key::lossless) && !s.contains(key::accuracy_not_worse) {
        problems.push(
            draft
                .problem_at(
                    key::require,
                    format!(
                        "{} needs `require` (an expression that must hold), `lossless` or `accuracy-not-worse`",
                        draft.what()
                    ),
                )
                .label("missing a required setting"),
        );
    }
    if !arms.is_empty() && s.contains(key::extra_repeats) {
        problems.push(
            draft
                .problem_at(key::extra_repeats, "`extra-repeats` measures more for `require`; `lossless` and `accuracy-not-worse` compare the answers as measured")
                .label("not with arm comparisons")
                .help("put the comparison in a gate of its own"),
        );
    }
    let gate = GateDecl::from_settings(s, GateRest { require, confidence, arms });
    check_extra_repeats(draft, key::extra_repeats, gate.extra_repeats, problems);
    gate
}

/// Most extra repeats a gate or screen may ask for: each is a full
/// measurement of every cell that decides it.
pub const MOST_EXTRA_REPEATS: u64 = 16;

/// `extra-repeats N`: only where a verdict is judged at a confidence (the
/// only verdict that can be undecided), and within [`MOST_EXTRA_REPEATS`].
pub(super) fn check_extra_repeats(draft: &Draft, key: &str, extra: u64, problems: &mut Problems) {
    if !draft.settings.contains(key) {
        return;
    }
    if !draft.settings.contains("confidence") {
        problems.push(
            draft
                .problem_at(
                    key,
                    "`extra-repeats` measures more only when a verdict at a confidence is undecided",
                )
                .label("needs `confidence`")
                .help("add `confidence 0.95`"),
        );
    } else if extra == 0 || extra > MOST_EXTRA_REPEATS {
        problems.push(
            draft
                .problem_at(key, format!("`extra-repeats` is 1 to {MOST_EXTRA_REPEATS}; found {extra}"))
                .label("out of range"),
        );
    }
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
