//! `gate`: every `require` expression must hold.

use super::super::decl::Draft;
use super::super::expression::Expression;
use super::super::problem::Problems;
use super::super::schema::{FieldSpec, Shape};

pub const FIELDS: &[FieldSpec] = &[
    FieldSpec { name: "require", shape: Shape::Strings, required: true, hashed: true, accumulates: true },
    // A non-blocking verdict is recorded (and read by decisions) without failing the run.
    FieldSpec { name: "blocking", shape: Shape::Bool, required: false, hashed: false, accumulates: false },
];

#[derive(Debug, Clone)]
pub struct GateDecl {
    pub require: Vec<Expression>,
    pub blocking: bool,
}

pub(super) fn build(draft: &Draft, problems: &mut Problems) -> GateDecl {
    let s = &draft.settings;
    let mut require = Vec::new();
    if let Some(setting) = s.setting("require") {
        for text in s.strings("require") {
            match Expression::parse(&text, setting, (&draft.source, draft.span), &draft.what()) {
                Ok(expression) => require.push(expression),
                Err(problem) => problems.push(problem),
            }
        }
    }
    GateDecl { require, blocking: s.bool("blocking").unwrap_or(true) }
}
