//! Judges an expression over ranges: each sampled number it reads is
//! known only to lie in an interval, and the question is whether the
//! expression holds for every value in those intervals (`True`), for none
//! (`False`), or for some only (`Unknown`). The tree is evaluated once in
//! the interval algebra of `range`; where both operands are exact the
//! ordinary operators and functions compute, so exact inputs read as they
//! do in [`crate::Expr::eval`].
//!
//! Sound, not exact: a value computed from the same input twice (`a - a`)
//! gets a range wider than its true one (the dependency problem), which
//! can only turn a verdict into `Unknown`, never into a wrong one.

use crate::ast::{Literal, Node, NodeKind};
use crate::functions::Function;
use crate::op::{BinaryOp, UnaryOp};
use crate::operators::{apply_binary, apply_unary};
use crate::range::{Range, Truth};
use crate::reference::Reference;
use crate::resolver::{Resolved, Resolver};
use crate::span::Span;
use crate::value::{ListItem, Value};

/// How the judge reads one reference (a wildcard's items are asked one
/// at a time, each with its node's name).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Reading {
    /// At its value, as the resolver gives it (a count, a setting).
    Exact,
    /// A number somewhere in this range (a sampled measurement's interval).
    Within(Range),
    /// A number about which nothing is known (sampled, without an interval).
    Unbounded,
}

/// A value over ranges.
#[derive(Debug, Clone, PartialEq)]
enum Approx {
    Number(Range),
    Bool(Truth),
    /// Strings, null, objects: read exactly.
    Other(Value),
    List(Vec<(Option<String>, Approx)>),
    /// Any value at all.
    Unknown,
}

impl Approx {
    fn from_value(value: &Value) -> Approx {
        match value {
            Value::Number(n) => Approx::Number(Range::point(*n)),
            Value::Bool(b) => Approx::Bool(Truth::of(*b)),
            Value::List(items) => Approx::List(
                items.iter().map(|item| (item.name.clone(), Approx::from_value(&item.value))).collect(),
            ),
            other => Approx::Other(other.clone()),
        }
    }

    /// The value, when it is known exactly.
    fn exact(&self) -> Option<Value> {
        match self {
            Approx::Number(range) => range.is_point().then_some(Value::Number(range.low)),
            Approx::Bool(truth) => truth.known().map(Value::Bool),
            Approx::Other(value) => Some(value.clone()),
            Approx::List(items) => items
                .iter()
                .map(|(name, item)| item.exact().map(|value| ListItem { name: name.clone(), value }))
                .collect::<Option<Vec<_>>>()
                .map(Value::List),
            Approx::Unknown => None,
        }
    }

    fn truth(&self) -> Truth {
        match self {
            Approx::Bool(truth) => *truth,
            _ => Truth::Unknown,
        }
    }

    fn range(&self) -> Option<Range> {
        match self {
            Approx::Number(range) => Some(*range),
            _ => None,
        }
    }

    fn number(range: Option<Range>) -> Approx {
        range.map_or(Approx::Unknown, Approx::Number)
    }
}

/// Whether `root` holds over the ranges `reading` gives its references.
pub(crate) fn judge(root: &Node, points: &dyn Resolver, reading: &dyn Fn(&Reference) -> Reading) -> Truth {
    Judge { points, reading }.approx(root).truth()
}

/// What cannot be judged over ranges, with where it is written and why.
pub(crate) fn refusals(root: &Node) -> Vec<(Span, String)> {
    let mut refused = Vec::new();
    root.walk(&mut |node| {
        if let NodeKind::Binary { op: BinaryOp::Rem, .. } = node.kind {
            refused.push((
                node.span,
                "`%` cannot be judged over intervals: a remainder jumps back to 0 inside a range, so its bounds say nothing".to_string(),
            ));
        }
    });
    refused
}

struct Judge<'a> {
    points: &'a dyn Resolver,
    reading: &'a dyn Fn(&Reference) -> Reading,
}

impl Judge<'_> {
    fn approx(&self, node: &Node) -> Approx {
        match &node.kind {
            NodeKind::Literal(literal) => Approx::from_value(&literal_value(literal)),
            NodeKind::Reference(reference) => self.reference(reference),
            NodeKind::Unary { op, operand } => unary(*op, self.approx(operand)),
            NodeKind::Binary { op: BinaryOp::And, lhs, rhs } => {
                let left = self.approx(lhs).truth();
                if left == Truth::False {
                    Approx::Bool(left)
                } else {
                    Approx::Bool(left.and(self.approx(rhs).truth()))
                }
            }
            NodeKind::Binary { op: BinaryOp::Or, lhs, rhs } => {
                let left = self.approx(lhs).truth();
                if left == Truth::True {
                    Approx::Bool(left)
                } else {
                    Approx::Bool(left.or(self.approx(rhs).truth()))
                }
            }
            NodeKind::Binary { op, lhs, rhs } => binary(*op, self.approx(lhs), self.approx(rhs)),
            NodeKind::Call { function: Function::Exists, args } => self.exists(args),
            NodeKind::Call { function, args } => {
                let args: Vec<Approx> = args.iter().map(|arg| self.approx(arg)).collect();
                call(*function, &args)
            }
        }
    }

    fn reference(&self, reference: &Reference) -> Approx {
        match self.points.resolve(reference) {
            Resolved::Value(json) => self.read(reference, &json),
            Resolved::Many(items) => Approx::List(
                items
                    .into_iter()
                    .map(|(name, json)| {
                        let item = Reference { name: name.clone(), ..reference.clone() };
                        (Some(name), self.read(&item, &json))
                    })
                    .collect(),
            ),
            // Skipped by a short circuit at the point values, needed here: unknown.
            Resolved::Missing(_) => Approx::Unknown,
        }
    }

    fn read(&self, reference: &Reference, json: &serde_json::Value) -> Approx {
        let value = Value::from_json(json);
        match ((self.reading)(reference), &value) {
            (Reading::Exact, _) => Approx::from_value(&value),
            (Reading::Within(range), Value::Number(_)) => Approx::Number(range),
            _ => Approx::Unknown,
        }
    }

    fn exists(&self, args: &[Node]) -> Approx {
        let exists = match args.first().map(|arg| &arg.kind) {
            Some(NodeKind::Reference(reference)) => match self.points.resolve(reference) {
                Resolved::Value(_) => true,
                Resolved::Many(items) => !items.is_empty(),
                Resolved::Missing(_) => false,
            },
            _ => false,
        };
        Approx::Bool(Truth::of(exists))
    }
}

fn literal_value(literal: &Literal) -> Value {
    match literal {
        Literal::Number(n) => Value::Number(*n),
        Literal::String(s) => Value::String(s.clone()),
        Literal::Bool(b) => Value::Bool(*b),
        Literal::Null => Value::Null,
    }
}

fn unary(op: UnaryOp, operand: Approx) -> Approx {
    if let Some(value) = operand.exact() {
        return apply_unary(op, &value).map_or(Approx::Unknown, |v| Approx::from_value(&v));
    }
    match (op, operand) {
        (UnaryOp::Negate, Approx::Number(range)) => Approx::Number(range.negated()),
        (UnaryOp::Not, Approx::Bool(truth)) => Approx::Bool(truth.negation()),
        _ => Approx::Unknown,
    }
}

fn binary(op: BinaryOp, lhs: Approx, rhs: Approx) -> Approx {
    if let (Some(a), Some(b)) = (lhs.exact(), rhs.exact()) {
        return apply_binary(op, &a, &b).map_or(Approx::Unknown, |v| Approx::from_value(&v));
    }
    match op {
        BinaryOp::Eq => Approx::Bool(equals(&lhs, &rhs)),
        BinaryOp::NotEq => Approx::Bool(equals(&lhs, &rhs).negation()),
        _ => {
            let (Some(a), Some(b)) = (lhs.range(), rhs.range()) else { return Approx::Unknown };
            match op {
                BinaryOp::Lt => Approx::Bool(a.less(b)),
                BinaryOp::Le => Approx::Bool(a.less_or_equal(b)),
                BinaryOp::Gt => Approx::Bool(b.less(a)),
                BinaryOp::Ge => Approx::Bool(b.less_or_equal(a)),
                BinaryOp::Add => Approx::number(a.plus(b)),
                BinaryOp::Sub => Approx::number(a.minus(b)),
                BinaryOp::Mul => Approx::number(a.times(b)),
                BinaryOp::Div => Approx::number(a.divided_by(b)),
                // `%` is refused where intervals are judged; unknown otherwise.
                BinaryOp::Rem | BinaryOp::Eq | BinaryOp::NotEq | BinaryOp::And | BinaryOp::Or => {
                    Approx::Unknown
                }
            }
        }
    }
}

/// `==` where one side is not exact: known only for numbers whose ranges
/// do not meet, or a number against null (never equal).
fn equals(lhs: &Approx, rhs: &Approx) -> Truth {
    match (lhs, rhs) {
        (Approx::Number(a), Approx::Number(b)) => a.equals(*b),
        (Approx::Number(_), Approx::Other(Value::Null)) | (Approx::Other(Value::Null), Approx::Number(_)) => {
            Truth::False
        }
        _ => Truth::Unknown,
    }
}

/// The items of a list-or-varargs call.
fn items(args: &[Approx]) -> Vec<(Option<String>, Approx)> {
    match args {
        [Approx::List(items)] => items.clone(),
        _ => args.iter().map(|a| (None, a.clone())).collect(),
    }
}

fn call(function: Function, args: &[Approx]) -> Approx {
    if let Some(values) = args.iter().map(Approx::exact).collect::<Option<Vec<_>>>() {
        return function.call(&values).map_or(Approx::Unknown, |v| Approx::from_value(&v));
    }
    let ranges = || items(args).iter().map(|(_, item)| item.range()).collect::<Option<Vec<Range>>>();
    let truths = || items(args).iter().map(|(_, item)| item.truth()).collect::<Vec<Truth>>();
    match function {
        Function::Abs => Approx::number(args.first().and_then(Approx::range).map(Range::abs)),
        // (new / baseline − 1) · 100: the baseline read once, not twice.
        Function::PctDelta => {
            match (args.first().and_then(Approx::range), args.get(1).and_then(Approx::range)) {
                (Some(new), Some(baseline)) => Approx::number(
                    new.divided_by(baseline)
                        .and_then(|ratio| ratio.minus(Range::point(1.0)))
                        .and_then(|delta| delta.times(Range::point(100.0))),
                ),
                _ => Approx::Unknown,
            }
        }
        Function::Min => Approx::number(ranges().and_then(|r| r.into_iter().reduce(Range::min))),
        Function::Max => Approx::number(ranges().and_then(|r| r.into_iter().reduce(Range::max))),
        Function::Mean => Approx::number(ranges().and_then(|r| mean(&r))),
        Function::All => Approx::Bool(truths().into_iter().fold(Truth::True, Truth::and)),
        Function::Any => Approx::Bool(truths().into_iter().fold(Truth::False, Truth::or)),
        Function::Count | Function::Contains | Function::Len => counted(function, args),
        Function::Argmax => winner(args, |a, b| b.less(a)),
        Function::Argmin => winner(args, |a, b| a.less(b)),
        Function::Exists => Approx::Unknown,
    }
}

fn mean(ranges: &[Range]) -> Option<Range> {
    let sum = ranges.iter().copied().try_fold(Range::point(0.0), Range::plus)?;
    sum.divided_by(Range::point(ranges.len() as f64))
}

/// `count`, `contains` and `len` over a list of known length whose items
/// are not all exact.
fn counted(function: Function, args: &[Approx]) -> Approx {
    let Some(Approx::List(list)) = args.first() else { return Approx::Unknown };
    let Some(wanted) = args.get(1) else {
        // `count(list)` and `len(list)`: the length is known.
        return Approx::Number(Range::point(list.len() as f64));
    };
    let matches: Vec<Truth> = list.iter().map(|(_, item)| equals_any(item, wanted)).collect();
    let surely = matches.iter().filter(|t| **t == Truth::True).count() as f64;
    let maybe = matches.iter().filter(|t| **t != Truth::False).count() as f64;
    match function {
        Function::Count => Approx::Number(Range { low: surely, high: maybe }),
        Function::Contains => Approx::Bool(matches.into_iter().fold(Truth::False, Truth::or)),
        _ => Approx::Unknown,
    }
}

/// Loose equality (a type mismatch is "not equal") over ranges.
fn equals_any(item: &Approx, wanted: &Approx) -> Truth {
    match (item.exact(), wanted.exact()) {
        (Some(a), Some(b)) => Truth::of(crate::operators::loose_equals(&a, &b)),
        _ => equals(item, wanted),
    }
}

/// `argmax`/`argmin`: the item that beats every other over the whole of
/// their ranges (`beats(item, other)` true), else unknown.
fn winner(args: &[Approx], beats: fn(Range, Range) -> Truth) -> Approx {
    let [Approx::List(list)] = args else { return Approx::Unknown };
    let Some(ranges) = list.iter().map(|(_, item)| item.range()).collect::<Option<Vec<Range>>>() else {
        return Approx::Unknown;
    };
    for (index, range) in ranges.iter().enumerate() {
        let beats_all =
            ranges.iter().enumerate().all(|(other, r)| other == index || beats(*range, *r) == Truth::True);
        if beats_all {
            return match &list[index].0 {
                Some(name) => Approx::Other(Value::String(name.clone())),
                None => Approx::Number(Range::point(index as f64)),
            };
        }
    }
    Approx::Unknown
}
