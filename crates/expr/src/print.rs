//! Prints an expression back as text. Without a trace it prints the canonical
//! form (one spelling per tree, for fingerprints); with a trace it annotates
//! every path and call with the value it had, for detail strings:
//! `pct_delta(cell.tp2.tok_s = 812.4, cell.tp1.tok_s = 790.1) = 2.82 > 5`.

use std::fmt::Write;

use crate::ast::{Literal, Node, NodeKind};
use crate::eval::{Stop, Trace};
use crate::op::Precedence;

pub(crate) fn canonical(root: &Node) -> String {
    let mut out = String::new();
    Printer { trace: None }.node(&mut out, root);
    out
}

pub(crate) fn annotated(root: &Node, trace: &Trace) -> String {
    let mut out = String::new();
    Printer { trace: Some(trace) }.node(&mut out, root);
    out
}

struct Printer<'t> {
    trace: Option<&'t Trace>,
}

impl Printer<'_> {
    fn node(&self, out: &mut String, node: &Node) {
        match &node.kind {
            NodeKind::Literal(literal) => write_literal(out, literal),
            NodeKind::Reference(reference) => {
                let _ = write!(out, "{reference}");
                match self.outcome(node) {
                    Some(Ok(value)) => {
                        let _ = write!(out, " = {value}");
                    }
                    Some(Err(Stop::Missing(_))) => out.push_str(" = <missing>"),
                    _ => {}
                }
            }
            NodeKind::Unary { op, operand } => {
                out.push_str(op.symbol());
                self.operand(out, operand, Precedence::Prefix, operand.precedence() < Precedence::Prefix);
            }
            NodeKind::Binary { op, lhs, rhs } => {
                let precedence = op.precedence();
                // Comparisons do not chain, so even an equal-precedence left side needs parentheses.
                let lhs_needs_parens = lhs.precedence() < precedence
                    || (lhs.precedence() == precedence && precedence == Precedence::Comparison);
                self.operand(out, lhs, precedence, lhs_needs_parens);
                let _ = write!(out, " {} ", op.symbol());
                self.operand(out, rhs, precedence, rhs.precedence() <= precedence);
            }
            NodeKind::Call { function, args } => {
                out.push_str(function.as_str());
                out.push('(');
                for (i, arg) in args.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    self.node(out, arg);
                }
                out.push(')');
                if let Some(Ok(value)) = self.outcome(node) {
                    let _ = write!(out, " = {value}");
                }
            }
        }
    }

    /// Prints an operand of an operator with precedence `parent`. In annotated
    /// mode a sub-expression of another family (a comparison under `&&`, a
    /// sum under `>`) is shown with its own result: `(x > 5 → false)`.
    fn operand(&self, out: &mut String, child: &Node, parent: Precedence, needs_parens: bool) {
        let is_compound = child.precedence() != Precedence::Prefix;
        let annotate = self.trace.is_some() && is_compound && child.precedence() != parent;
        if !(needs_parens || annotate) {
            self.node(out, child);
            return;
        }
        out.push('(');
        self.node(out, child);
        if annotate {
            match self.outcome(child) {
                Some(Ok(value)) => {
                    let _ = write!(out, " → {value}");
                }
                Some(Err(Stop::Missing(_))) => out.push_str(" → missing"),
                Some(Err(Stop::Invalid { .. })) => out.push_str(" → error"),
                // Skipped by short-circuiting.
                None => {}
            }
        }
        out.push(')');
    }

    fn outcome(&self, node: &Node) -> Option<&crate::eval::Outcome> {
        self.trace.and_then(|trace| trace.get(node.id))
    }
}

fn write_literal(out: &mut String, literal: &Literal) {
    match literal {
        // `{}` on f64 is the shortest text that parses back to the same number.
        Literal::Number(n) => {
            let _ = write!(out, "{n}");
        }
        Literal::String(s) => {
            out.push('"');
            for ch in s.chars() {
                match ch {
                    '"' => out.push_str("\\\""),
                    '\\' => out.push_str("\\\\"),
                    '\n' => out.push_str("\\n"),
                    '\t' => out.push_str("\\t"),
                    other => out.push(other),
                }
            }
            out.push('"');
        }
        Literal::Bool(b) => {
            let _ = write!(out, "{b}");
        }
        Literal::Null => out.push_str("null"),
    }
}
