//! Evaluates a tree against a resolver, recording every sub-expression's
//! outcome in a trace so details can show the values that decided.
//!
//! Missing inputs: an operator or function with a missing operand is missing,
//! except `&&`/`||`, which follow three-valued (Kleene) logic: if one side
//! alone decides the result (`false && ?`, `? || true`) the other side does
//! not matter, whichever order they are written in. The right side is not
//! evaluated when the left side already decides.

use crate::ast::{Literal, Node, NodeKind};
use crate::functions::Function;
use crate::op::BinaryOp;
use crate::operators::{apply_binary, apply_unary};
use crate::reference::Reference;
use crate::resolver::{Resolved, Resolver};
use crate::span::Span;
use crate::value::{ListItem, Value};

/// An input that was absent: the path as written and the resolver's reason.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MissingInput {
    pub reference: String,
    pub why: String,
}

/// Why a sub-expression has no value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Stop {
    Missing(Vec<MissingInput>),
    Invalid { message: String, span: Span },
}

pub(crate) type Outcome = Result<Value, Stop>;

/// The outcome of each evaluated node, by node id; `None` for nodes skipped
/// by short-circuiting.
#[derive(Debug)]
pub(crate) struct Trace {
    outcomes: Vec<Option<Outcome>>,
}

impl Trace {
    pub fn get(&self, id: usize) -> Option<&Outcome> {
        self.outcomes.get(id).and_then(Option::as_ref)
    }
}

pub(crate) fn evaluate(root: &Node, node_count: usize, resolver: &dyn Resolver) -> (Outcome, Trace) {
    let mut evaluator = Evaluator { resolver, trace: Trace { outcomes: vec![None; node_count] } };
    let outcome = evaluator.eval(root);
    (outcome, evaluator.trace)
}

struct Evaluator<'r> {
    resolver: &'r dyn Resolver,
    trace: Trace,
}

fn invalid(message: impl Into<String>, span: Span) -> Stop {
    Stop::Invalid { message: message.into(), span }
}

impl Evaluator<'_> {
    fn eval(&mut self, node: &Node) -> Outcome {
        let outcome = match &node.kind {
            NodeKind::Literal(literal) => Ok(literal_value(literal)),
            NodeKind::Reference(reference) => self.resolve(reference),
            NodeKind::Unary { op, operand } => self
                .eval(operand)
                .and_then(|value| apply_unary(*op, &value).map_err(|m| invalid(m, node.span))),
            NodeKind::Binary { op: op @ (BinaryOp::And | BinaryOp::Or), lhs, rhs } => {
                self.logic(*op, lhs, rhs)
            }
            NodeKind::Binary { op, lhs, rhs } => {
                let operands = [self.eval(lhs), self.eval(rhs)];
                combine(operands).and_then(|values| {
                    apply_binary(*op, &values[0], &values[1]).map_err(|m| invalid(m, node.span))
                })
            }
            NodeKind::Call { function: Function::Exists, args } => Ok(self.exists(args)),
            NodeKind::Call { function, args } => self.call(*function, args, node.span),
        };
        if let Some(slot) = self.trace.outcomes.get_mut(node.id) {
            *slot = Some(outcome.clone());
        }
        outcome
    }

    fn resolve(&self, reference: &Reference) -> Outcome {
        match self.resolver.resolve(reference) {
            Resolved::Value(json) => Ok(Value::from_json(&json)),
            Resolved::Many(items) => Ok(Value::List(
                items
                    .into_iter()
                    .map(|(name, json)| ListItem { name: Some(name), value: Value::from_json(&json) })
                    .collect(),
            )),
            Resolved::Missing(why) => {
                Err(Stop::Missing(vec![MissingInput { reference: reference.to_string(), why }]))
            }
        }
    }

    /// `&&` and `||` with Kleene logic over missing inputs (see module docs).
    fn logic(&mut self, op: BinaryOp, lhs: &Node, rhs: &Node) -> Outcome {
        // The operand value that decides the result on its own.
        let decisive = op == BinaryOp::Or;
        let left_missing = match self.eval(lhs) {
            Ok(value) => {
                if as_bool(op, &value, "left", lhs.span)? == decisive {
                    return Ok(Value::Bool(decisive));
                }
                None
            }
            Err(Stop::Missing(missing)) => Some(missing),
            Err(stop) => return Err(stop),
        };
        match self.eval(rhs) {
            Ok(value) => {
                let right = as_bool(op, &value, "right", rhs.span)?;
                match left_missing {
                    Some(missing) if right != decisive => Err(Stop::Missing(missing)),
                    _ => Ok(Value::Bool(right)),
                }
            }
            Err(Stop::Missing(mut right_missing)) => {
                let mut missing = left_missing.unwrap_or_default();
                missing.append(&mut right_missing);
                Err(Stop::Missing(missing))
            }
            Err(stop) => Err(stop),
        }
    }

    /// `exists(path)`: true when the path resolves (to a non-empty match).
    fn exists(&mut self, args: &[Node]) -> Value {
        let Some(arg) = args.first() else {
            return Value::Bool(false);
        };
        let outcome = match &arg.kind {
            NodeKind::Reference(reference) => self.resolve(reference),
            // The parser only lets a path through; anything else "does not exist".
            _ => Err(Stop::Missing(Vec::new())),
        };
        let exists = match &outcome {
            Ok(Value::List(items)) => !items.is_empty(),
            Ok(_) => true,
            Err(_) => false,
        };
        if let Some(slot) = self.trace.outcomes.get_mut(arg.id) {
            *slot = Some(outcome);
        }
        Value::Bool(exists)
    }

    fn call(&mut self, function: Function, args: &[Node], span: Span) -> Outcome {
        let outcomes: Vec<Outcome> = args.iter().map(|arg| self.eval(arg)).collect();
        let values = combine(outcomes)?;
        function.call(&values).map_err(|error| {
            let blamed = error.argument.and_then(|i| args.get(i)).map_or(span, |arg| arg.span);
            invalid(format!("{}: {}", function.as_str(), error.message), blamed)
        })
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

fn as_bool(op: BinaryOp, value: &Value, side: &str, span: Span) -> Result<bool, Stop> {
    match value {
        Value::Bool(b) => Ok(*b),
        other => Err(invalid(
            format!(
                "`{}` needs true or false on both sides, got {} on the {side}",
                op.symbol(),
                other.describe()
            ),
            span,
        )),
    }
}

/// All values, or the first invalid operand, or every missing input.
fn combine<I: IntoIterator<Item = Outcome>>(outcomes: I) -> Result<Vec<Value>, Stop> {
    let mut values = Vec::new();
    let mut missing = Vec::new();
    for outcome in outcomes {
        match outcome {
            Ok(value) => values.push(value),
            Err(Stop::Missing(mut inputs)) => missing.append(&mut inputs),
            Err(invalid @ Stop::Invalid { .. }) => return Err(invalid),
        }
    }
    if missing.is_empty() { Ok(values) } else { Err(Stop::Missing(missing)) }
}
