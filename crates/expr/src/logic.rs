//! An expression's logical shape: its `&&`, `||` and `!` over the atoms
//! below them. A caller that knows how often each atom errs (a gate's
//! verdict read at its confidence) bounds how often the whole expression
//! does (`src/run/error_control.rs`).

use crate::ast::{Literal, Node, NodeKind};
use crate::op::{BinaryOp, UnaryOp};
use crate::reference::Reference;

/// The logical shape of an expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Logic {
    /// Every operand holds (`&&`, flattened).
    All(Vec<Logic>),
    /// Some operand holds (`||`, flattened).
    Any(Vec<Logic>),
    Not(Box<Logic>),
    Atom(Atom),
}

/// What a leaf of the logic claims.
#[derive(Debug, Clone, PartialEq)]
pub enum Atom {
    /// A path read as true (`gate.slo.passed`, `gate.slo.passed == true`).
    Holds(Reference),
    /// A path equal to a string (`gate.slo.status == "passed"`,
    /// `screen.tp.winner == "tp4"`).
    Equals(Reference, String),
    /// A path at least a number (`search.cap.max_rate >= 8`, `> 8`, or the
    /// number on the left: `8 <= search.cap.max_rate`).
    AtLeast(Reference, f64),
    /// Anything else (a comparison of numbers, a call), with what it reads.
    Other(Vec<Reference>),
}

impl Logic {
    pub(crate) fn of(node: &Node) -> Logic {
        match &node.kind {
            NodeKind::Binary { op: op @ (BinaryOp::And | BinaryOp::Or), lhs, rhs } => {
                let mut operands = Vec::new();
                for side in [lhs, rhs] {
                    match (Logic::of(side), op) {
                        (Logic::All(inner), BinaryOp::And) | (Logic::Any(inner), BinaryOp::Or) => {
                            operands.extend(inner)
                        }
                        (other, _) => operands.push(other),
                    }
                }
                if *op == BinaryOp::And { Logic::All(operands) } else { Logic::Any(operands) }
            }
            NodeKind::Unary { op: UnaryOp::Not, operand } => Logic::Not(Box::new(Logic::of(operand))),
            _ => Logic::Atom(Atom::of(node)),
        }
    }
}

impl Atom {
    fn of(node: &Node) -> Atom {
        match &node.kind {
            NodeKind::Reference(reference) => return Atom::Holds(reference.clone()),
            NodeKind::Binary { op: BinaryOp::Eq, lhs, rhs } => {
                let pair = match (&lhs.kind, &rhs.kind) {
                    (NodeKind::Reference(r), NodeKind::Literal(l))
                    | (NodeKind::Literal(l), NodeKind::Reference(r)) => Some((r, l)),
                    _ => None,
                };
                match pair {
                    Some((r, Literal::Bool(true))) => return Atom::Holds(r.clone()),
                    Some((r, Literal::String(s))) => return Atom::Equals(r.clone(), s.clone()),
                    _ => {}
                }
            }
            NodeKind::Binary { op, lhs, rhs } => {
                let at_least = match (op, &lhs.kind, &rhs.kind) {
                    (
                        BinaryOp::Ge | BinaryOp::Gt,
                        NodeKind::Reference(r),
                        NodeKind::Literal(Literal::Number(n)),
                    )
                    | (
                        BinaryOp::Le | BinaryOp::Lt,
                        NodeKind::Literal(Literal::Number(n)),
                        NodeKind::Reference(r),
                    ) => Some((r, *n)),
                    _ => None,
                };
                if let Some((r, n)) = at_least {
                    return Atom::AtLeast(r.clone(), n);
                }
            }
            _ => {}
        }
        let mut read = Vec::new();
        node.walk(&mut |n| {
            if let NodeKind::Reference(r) = &n.kind {
                read.push(r.clone());
            }
        });
        Atom::Other(read)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn logic(src: &str) -> Logic {
        crate::parse(src).unwrap().logic()
    }

    /// The shape, with each atom as the path it reads (spans left out).
    fn shape(logic: &Logic) -> String {
        let list = |items: &[Logic], joint: &str| {
            format!("({})", items.iter().map(shape).collect::<Vec<_>>().join(joint))
        };
        match logic {
            Logic::All(items) => list(items, " & "),
            Logic::Any(items) => list(items, " | "),
            Logic::Not(inner) => format!("!{}", shape(inner)),
            Logic::Atom(Atom::Holds(r)) => r.to_string(),
            Logic::Atom(Atom::Equals(r, s)) => format!("{r}={s}"),
            Logic::Atom(Atom::AtLeast(r, n)) => format!("{r}>={n}"),
            Logic::Atom(Atom::Other(read)) => format!("?{}", read.len()),
        }
    }

    #[test]
    fn conjunctions_and_disjunctions_flatten() {
        let of = |src: &str| shape(&logic(src));
        assert_eq!(
            of("gate.a.passed && (gate.b.passed && gate.c.passed)"),
            "(gate.a.passed & gate.b.passed & gate.c.passed)"
        );
        assert_eq!(
            of("gate.a.passed || gate.b.passed && gate.c.passed"),
            "(gate.a.passed | (gate.b.passed & gate.c.passed))"
        );
        assert_eq!(of("!gate.a.passed"), "!gate.a.passed");
    }

    #[test]
    fn atoms_say_what_they_claim() {
        assert!(matches!(logic("gate.a.passed == true"), Logic::Atom(Atom::Holds(_))));
        assert!(
            matches!(logic("\"passed\" == gate.a.status"), Logic::Atom(Atom::Equals(_, s)) if s == "passed")
        );
        match logic("cell.a.ttft_p99_ms < 2 * cell.b.ttft_p99_ms") {
            Logic::Atom(Atom::Other(read)) => assert_eq!(read.len(), 2),
            other => panic!("{other:?}"),
        }
        assert!(matches!(logic("gate.a.passed == false"), Logic::Atom(Atom::Other(_))));
        assert!(matches!(logic("search.c.max_rate >= 8"), Logic::Atom(Atom::AtLeast(_, n)) if n == 8.0));
        assert!(matches!(logic("8 < search.c.max_rate"), Logic::Atom(Atom::AtLeast(_, n)) if n == 8.0));
        assert!(matches!(logic("search.c.max_rate <= 8"), Logic::Atom(Atom::Other(_))));
    }
}
