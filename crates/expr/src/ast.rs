//! The syntax tree. Every node keeps its byte span in the source and a dense
//! id, which the evaluator uses to record what each sub-expression produced.

use crate::functions::Function;
use crate::op::{BinaryOp, Precedence, UnaryOp};
use crate::reference::Reference;
use crate::span::Span;

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Node {
    /// Index into the evaluator's trace; unique within one expression.
    pub id: usize,
    pub span: Span,
    /// Height of the subtree (a leaf is 1); bounded by the parser so that
    /// recursive evaluation and drop cannot overflow the stack.
    pub depth: usize,
    pub kind: NodeKind,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum NodeKind {
    Literal(Literal),
    Reference(Reference),
    Unary { op: UnaryOp, operand: Box<Node> },
    Binary { op: BinaryOp, lhs: Box<Node>, rhs: Box<Node> },
    Call { function: Function, args: Vec<Node> },
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Literal {
    Number(f64),
    String(String),
    Bool(bool),
    Null,
}

impl Node {
    /// The precedence this node has when printed without parentheses.
    pub fn precedence(&self) -> Precedence {
        match &self.kind {
            NodeKind::Binary { op, .. } => op.precedence(),
            _ => Precedence::Prefix,
        }
    }

    /// Calls `visit` on this node and all nodes below it, in source order.
    /// Uses an explicit stack rather than recursion.
    pub fn walk<'a>(&'a self, visit: &mut dyn FnMut(&'a Node)) {
        let mut stack = vec![self];
        while let Some(node) = stack.pop() {
            visit(node);
            match &node.kind {
                NodeKind::Literal(_) | NodeKind::Reference(_) => {}
                NodeKind::Unary { operand, .. } => stack.push(operand),
                NodeKind::Binary { lhs, rhs, .. } => {
                    stack.push(rhs);
                    stack.push(lhs);
                }
                NodeKind::Call { args, .. } => stack.extend(args.iter().rev()),
            }
        }
    }
}
