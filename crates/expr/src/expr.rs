//! A parsed expression: its source, its tree, and what can be asked of it.

use std::fmt;

use crate::ast::{Node, NodeKind};
use crate::error::EvalError;
use crate::eval::evaluate;
use crate::evaluation::{Evaluation, outcome_to_result};
use crate::logic::Logic;
use crate::over_ranges::{self, Reading};
use crate::print::{annotated, canonical};
use crate::range::Truth;
use crate::reference::Reference;
use crate::resolver::Resolver;
use crate::span::Span;
use crate::value::Value;

/// A parsed gate expression. Build one with [`crate::parse`].
///
/// `Display` prints the canonical form: the same text for any two sources
/// that differ only in whitespace, redundant parentheses, `and`/`&&`,
/// quote style or number spelling (`1e3` vs `1000`). Fingerprint that.
#[derive(Debug, Clone)]
pub struct Expr {
    source: String,
    root: Node,
    node_count: usize,
}

impl Expr {
    pub(crate) fn new(source: &str, root: Node, node_count: usize) -> Self {
        Expr { source: source.to_string(), root, node_count }
    }

    /// The text this expression was parsed from; spans point into it.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Every path the expression reads, in source order, one entry per
    /// occurrence (including inside `exists`), each with its span.
    pub fn references(&self) -> Vec<Reference> {
        let mut references = Vec::new();
        self.root.walk(&mut |node| {
            if let NodeKind::Reference(reference) = &node.kind {
                references.push(reference.clone());
            }
        });
        references
    }

    /// Its `&&`, `||` and `!` over the atoms below them.
    pub fn logic(&self) -> Logic {
        Logic::of(&self.root)
    }

    /// Evaluates as a gate: the result must be true or false.
    pub fn eval(&self, resolver: &dyn Resolver) -> Evaluation {
        let (outcome, trace) = evaluate(&self.root, self.node_count, resolver);
        Evaluation::from_outcome(outcome, &annotated(&self.root, &trace))
    }

    /// Whether the expression holds for every value of the ranges `reading`
    /// gives the references it reads (`True`), for none (`False`), or for
    /// some only or past what interval arithmetic can tell (`Unknown`).
    /// `points` resolves each reference; `reading` is asked about each one
    /// it resolved (a wildcard's items one by one, each by its node name).
    pub fn judge_over(&self, points: &dyn Resolver, reading: &dyn Fn(&Reference) -> Reading) -> Truth {
        over_ranges::judge(&self.root, points, reading)
    }

    /// What in the expression cannot be judged over ranges, and why.
    pub fn interval_refusals(&self) -> Vec<(Span, String)> {
        over_ranges::refusals(&self.root)
    }

    /// Evaluates to any value, e.g. a screen's `argmax(...)`.
    pub fn evaluate_value(&self, resolver: &dyn Resolver) -> Result<Value, EvalError> {
        let (outcome, trace) = evaluate(&self.root, self.node_count, resolver);
        match outcome {
            Ok(value) => Ok(value),
            failed => outcome_to_result(failed, &annotated(&self.root, &trace)),
        }
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&canonical(&self.root))
    }
}
