//! `gate`: every `require` expression must hold.

use super::super::expression::Expression;
use super::super::problem::Problems;
use super::super::settings::{Draft, settings};

settings! {
    #[derive(Debug, Clone)]
    pub struct GateDecl {
        /// Expressions that must hold (each parsed at load).
        key require = required many "require" as Strings,
        pub require: Vec<Expression>,
        /// A non-blocking verdict is recorded (and read by decisions) without failing the run.
        pub blocking: bool = unhashed "blocking" as Bool or true,
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
    GateDecl::from_settings(s, GateRest { require })
}
