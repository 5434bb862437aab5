//! Binary and unary operators on values. Mixing types is an error rather
//! than a silent coercion: a gate that compares `"5"` with `5` is a bug.

use std::cmp::Ordering;

use crate::op::{BinaryOp, UnaryOp};
use crate::value::Value;

/// Applies a non-logical binary operator (`&&`/`||` short-circuit in eval).
pub(crate) fn apply_binary(op: BinaryOp, lhs: &Value, rhs: &Value) -> Result<Value, String> {
    match op {
        BinaryOp::Eq => equals(lhs, rhs).map(Value::Bool),
        BinaryOp::NotEq => equals(lhs, rhs).map(|eq| Value::Bool(!eq)),
        BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => {
            let ordering = order(op, lhs, rhs)?;
            let result = match op {
                BinaryOp::Lt => ordering == Ordering::Less,
                BinaryOp::Le => ordering != Ordering::Greater,
                BinaryOp::Gt => ordering == Ordering::Greater,
                _ => ordering != Ordering::Less,
            };
            Ok(Value::Bool(result))
        }
        BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div | BinaryOp::Rem => {
            arithmetic(op, lhs, rhs)
        }
        BinaryOp::And | BinaryOp::Or => Err(format!("`{}` is evaluated lazily", op.symbol())),
    }
}

pub(crate) fn apply_unary(op: UnaryOp, operand: &Value) -> Result<Value, String> {
    match (op, operand) {
        (UnaryOp::Not, Value::Bool(b)) => Ok(Value::Bool(!b)),
        (UnaryOp::Negate, Value::Number(n)) => Ok(Value::Number(-n)),
        (UnaryOp::Not, other) => Err(format!("`!` needs true or false, got {}", other.describe())),
        (UnaryOp::Negate, other) => Err(format!("`-` needs a number, got {}", other.describe())),
    }
}

/// `==` semantics: anything equals itself; `null` can be compared with any
/// type (and is unequal to non-null); other mixed types are an error.
pub(crate) fn equals(lhs: &Value, rhs: &Value) -> Result<bool, String> {
    match (lhs, rhs) {
        (Value::Null, other) | (other, Value::Null) => Ok(matches!(other, Value::Null)),
        (Value::Bool(a), Value::Bool(b)) => Ok(a == b),
        (Value::Number(a), Value::Number(b)) => Ok(a == b),
        (Value::String(a), Value::String(b)) => Ok(a == b),
        (Value::List(a), Value::List(b)) => {
            Ok(a.len() == b.len() && a.iter().zip(b).all(|(x, y)| loose_equals(&x.value, &y.value)))
        }
        (Value::Object(a), Value::Object(b)) => Ok(a == b),
        _ => Err(format!("cannot compare {} with {}", lhs.describe(), rhs.describe())),
    }
}

/// Equality that treats a type mismatch as "not equal": used where values of
/// different types are searched (`contains`, `count`).
pub(crate) fn loose_equals(lhs: &Value, rhs: &Value) -> bool {
    equals(lhs, rhs).unwrap_or(false)
}

fn order(op: BinaryOp, lhs: &Value, rhs: &Value) -> Result<Ordering, String> {
    match (lhs, rhs) {
        (Value::Number(a), Value::Number(b)) => {
            a.partial_cmp(b).ok_or_else(|| "cannot order NaN".to_string())
        }
        (Value::String(a), Value::String(b)) => Ok(a.cmp(b)),
        (Value::List(_), _) | (_, Value::List(_)) => Err(format!(
            "cannot compare {} with {} using `{}`; reduce the list first with all(), any(), min(), max() or mean()",
            lhs.describe(),
            rhs.describe(),
            op.symbol()
        )),
        _ => {
            Err(format!("cannot compare {} with {} using `{}`", lhs.describe(), rhs.describe(), op.symbol()))
        }
    }
}

fn arithmetic(op: BinaryOp, lhs: &Value, rhs: &Value) -> Result<Value, String> {
    let (Value::Number(a), Value::Number(b)) = (lhs, rhs) else {
        return Err(format!(
            "`{}` needs numbers on both sides, got {} and {}",
            op.symbol(),
            lhs.describe(),
            rhs.describe()
        ));
    };
    let result = match op {
        BinaryOp::Add => a + b,
        BinaryOp::Sub => a - b,
        BinaryOp::Mul => a * b,
        BinaryOp::Div | BinaryOp::Rem if *b == 0.0 => {
            return Err(format!("division by zero: {} {} 0", Value::Number(*a), op.symbol()));
        }
        BinaryOp::Div => a / b,
        _ => a % b,
    };
    finite(result)
}

/// Keeps infinities and NaN out of results so later comparisons stay sane.
pub(crate) fn finite(n: f64) -> Result<Value, String> {
    if n.is_finite() { Ok(Value::Number(n)) } else { Err(format!("result is not a finite number ({n})")) }
}
