//! The syntax tree. Every node keeps its byte span in the source and a dense
//! id, which the evaluator uses to record what each sub-expression produced.

use crate::functions::Function;
use crate::reference::Reference;

/// `(offset, len)` in bytes into the expression source.
pub type Span = (usize, usize);

/// Span covering `first` through `last`.
pub(crate) fn join(first: Span, last: Span) -> Span {
    let end = (last.0 + last.1).max(first.0 + first.1);
    (first.0, end - first.0)
}

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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UnaryOp {
    Not,
    Negate,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BinaryOp {
    Or,
    And,
    Eq,
    NotEq,
    Lt,
    Le,
    Gt,
    Ge,
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

/// Operator families, from loosest to tightest binding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Precedence {
    Or = 1,
    And = 2,
    Comparison = 3,
    Sum = 4,
    Product = 5,
    /// Unary operators and atoms.
    Prefix = 6,
}

impl BinaryOp {
    pub fn precedence(self) -> Precedence {
        match self {
            BinaryOp::Or => Precedence::Or,
            BinaryOp::And => Precedence::And,
            BinaryOp::Eq | BinaryOp::NotEq | BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => {
                Precedence::Comparison
            }
            BinaryOp::Add | BinaryOp::Sub => Precedence::Sum,
            BinaryOp::Mul | BinaryOp::Div | BinaryOp::Rem => Precedence::Product,
        }
    }

    pub fn symbol(self) -> &'static str {
        match self {
            BinaryOp::Or => "||",
            BinaryOp::And => "&&",
            BinaryOp::Eq => "==",
            BinaryOp::NotEq => "!=",
            BinaryOp::Lt => "<",
            BinaryOp::Le => "<=",
            BinaryOp::Gt => ">",
            BinaryOp::Ge => ">=",
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
            BinaryOp::Rem => "%",
        }
    }
}

impl UnaryOp {
    pub fn symbol(self) -> &'static str {
        match self {
            UnaryOp::Not => "!",
            UnaryOp::Negate => "-",
        }
    }
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
