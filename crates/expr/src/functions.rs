//! The built-in functions: their names, arities and implementations.
//! `exists` is listed here but evaluated by the evaluator, because it must
//! see a missing reference instead of propagating it.

use anvil_words::words;

use crate::operators::{finite, loose_equals};
use crate::value::Value;

words! {
    /// A built-in function, by the name an expression calls it by.
    pub(crate) enum Function {
        PctDelta = "pct_delta",
        Abs = "abs",
        Min = "min",
        Max = "max",
        Mean = "mean",
        Count = "count",
        All = "all",
        Any = "any",
        Len = "len",
        Contains = "contains",
        Argmax = "argmax",
        Argmin = "argmin",
        Exists = "exists",
    }
}

/// A failed call; `argument` says which argument to blame, if one is. The
/// message does not name the function: the evaluator prefixes it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CallError {
    pub message: String,
    pub argument: Option<usize>,
}

impl CallError {
    fn at(argument: usize, message: impl Into<String>) -> Self {
        CallError { message: message.into(), argument: Some(argument) }
    }

    fn whole(message: impl Into<String>) -> Self {
        CallError { message: message.into(), argument: None }
    }
}

impl Function {
    /// Minimum and maximum number of arguments (`None`: unbounded).
    pub fn arity(self) -> (usize, Option<usize>) {
        match self {
            Function::PctDelta | Function::Contains => (2, Some(2)),
            Function::Abs | Function::Len | Function::Argmax | Function::Argmin | Function::Exists => {
                (1, Some(1))
            }
            Function::Count => (1, Some(2)),
            Function::Min | Function::Max | Function::Mean | Function::All | Function::Any => (1, None),
        }
    }

    /// How to call it, for error help.
    pub fn usage(self) -> &'static str {
        match self {
            Function::PctDelta => "pct_delta(new, baseline) = (new - baseline) / baseline * 100",
            Function::Abs => "abs(number)",
            Function::Min => "min(list) or min(a, b, ...)",
            Function::Max => "max(list) or max(a, b, ...)",
            Function::Mean => "mean(list) or mean(a, b, ...)",
            Function::Count => "count(list) or count(list, value)",
            Function::All => "all(list of bools) or all(a, b, ...)",
            Function::Any => "any(list of bools) or any(a, b, ...)",
            Function::Len => "len(string, list or object)",
            Function::Contains => "contains(string, substring) or contains(list, value)",
            Function::Argmax => "argmax(list) — the node name (or index) of the largest item",
            Function::Argmin => "argmin(list) — the node name (or index) of the smallest item",
            Function::Exists => "exists(kind.name.field) — true if the reference resolves",
        }
    }

    /// Runs the function on evaluated arguments (arity already checked by the parser).
    pub fn call(self, args: &[Value]) -> Result<Value, CallError> {
        match self {
            Function::PctDelta => pct_delta(args),
            Function::Abs => finite(number(args, 0)?.abs()).map_err(CallError::whole),
            Function::Min => extreme(args, |a, b| b < a),
            Function::Max => extreme(args, |a, b| b > a),
            Function::Mean => mean(args),
            Function::Count => count(args),
            Function::All => booleans(args).map(|b| Value::Bool(b.iter().all(|&x| x))),
            Function::Any => booleans(args).map(|b| Value::Bool(b.iter().any(|&x| x))),
            Function::Len => len(args),
            Function::Contains => contains(args),
            Function::Argmax => arg_extreme(args, |a, b| b > a),
            Function::Argmin => arg_extreme(args, |a, b| b < a),
            Function::Exists => Err(CallError::whole("is evaluated by the evaluator")),
        }
    }
}

fn number(args: &[Value], index: usize) -> Result<f64, CallError> {
    match args.get(index) {
        Some(Value::Number(n)) => Ok(*n),
        Some(other) => Err(CallError::at(index, format!("expected a number, got {}", other.describe()))),
        None => Err(CallError::whole(format!("argument {} is absent", index + 1))),
    }
}

fn pct_delta(args: &[Value]) -> Result<Value, CallError> {
    let new = number(args, 0)?;
    let baseline = number(args, 1)?;
    if baseline == 0.0 {
        return Err(CallError::at(1, "division by zero: the baseline is 0"));
    }
    finite((new - baseline) / baseline * 100.0).map_err(CallError::whole)
}

/// Numbers of a list-or-varargs call, with their names (if from a wildcard).
fn numbers(args: &[Value]) -> Result<Vec<(Option<&str>, f64)>, CallError> {
    let describe_bad = |name: Option<&str>, value: &Value| match name {
        Some(name) => format!("expects numbers, but {name} is {}", value.describe()),
        None => format!("expects numbers, got {}", value.describe()),
    };
    // One list argument stands for its items; otherwise the arguments are the items.
    if let [Value::List(list)] = args {
        return list
            .iter()
            .map(|item| match &item.value {
                Value::Number(n) => Ok((item.name.as_deref(), *n)),
                other => Err(CallError::at(0, describe_bad(item.name.as_deref(), other))),
            })
            .collect();
    }
    args.iter()
        .enumerate()
        .map(|(index, value)| match value {
            Value::Number(n) => Ok((None, *n)),
            other => Err(CallError::at(index, describe_bad(None, other))),
        })
        .collect()
}

fn booleans(args: &[Value]) -> Result<Vec<bool>, CallError> {
    let bad = |name: Option<&str>, value: &Value| match name {
        Some(name) => format!("expects true or false, but {name} is {}", value.describe()),
        None => format!("expects true or false, got {}", value.describe()),
    };
    if let [Value::List(list)] = args {
        return list
            .iter()
            .map(|item| match &item.value {
                Value::Bool(b) => Ok(*b),
                other => Err(CallError::at(0, bad(item.name.as_deref(), other))),
            })
            .collect();
    }
    args.iter()
        .enumerate()
        .map(|(index, value)| match value {
            Value::Bool(b) => Ok(*b),
            other => Err(CallError::at(index, bad(None, other))),
        })
        .collect()
}

/// min/max: keeps the first item for which `better(current, candidate)` never holds.
fn extreme(args: &[Value], better: fn(f64, f64) -> bool) -> Result<Value, CallError> {
    let numbers = numbers(args)?;
    let best = pick(&numbers, better).ok_or_else(|| CallError::at(0, "the list is empty"))?;
    Ok(Value::Number(numbers[best].1))
}

fn arg_extreme(args: &[Value], better: fn(f64, f64) -> bool) -> Result<Value, CallError> {
    if !matches!(args, [Value::List(_)]) {
        let got = args.first().map_or("nothing".to_string(), Value::describe);
        return Err(CallError::at(0, format!("expects a list, got {got}")));
    }
    let numbers = numbers(args)?;
    let best = pick(&numbers, better).ok_or_else(|| CallError::at(0, "the list is empty"))?;
    Ok(match numbers[best].0 {
        Some(name) => Value::String(name.to_string()),
        None => Value::Number(best as f64),
    })
}

/// Index of the best number; ties keep the earliest (the resolver's order).
fn pick(numbers: &[(Option<&str>, f64)], better: fn(f64, f64) -> bool) -> Option<usize> {
    let mut best: Option<usize> = None;
    for (index, (_, n)) in numbers.iter().enumerate() {
        match best {
            Some(current) if !better(numbers[current].1, *n) => {}
            _ => best = Some(index),
        }
    }
    best
}

fn mean(args: &[Value]) -> Result<Value, CallError> {
    let numbers = numbers(args)?;
    if numbers.is_empty() {
        return Err(CallError::at(0, "the list is empty"));
    }
    let sum: f64 = numbers.iter().map(|(_, n)| n).sum();
    finite(sum / numbers.len() as f64).map_err(CallError::whole)
}

fn count(args: &[Value]) -> Result<Value, CallError> {
    let Some(Value::List(list)) = args.first() else {
        let got = args.first().map_or("nothing".to_string(), Value::describe);
        return Err(CallError::at(0, format!("expects a list, got {got}")));
    };
    let counted = match args.get(1) {
        None => list.len(),
        Some(wanted) => list.iter().filter(|item| loose_equals(&item.value, wanted)).count(),
    };
    Ok(Value::Number(counted as f64))
}

fn len(args: &[Value]) -> Result<Value, CallError> {
    let length = match args.first() {
        Some(Value::String(s)) => s.chars().count(),
        Some(Value::List(list)) => list.len(),
        Some(Value::Object(map)) => map.len(),
        Some(other) => {
            return Err(CallError::at(
                0,
                format!("expects a string, list or object, got {}", other.describe()),
            ));
        }
        None => return Err(CallError::whole("needs one argument")),
    };
    Ok(Value::Number(length as f64))
}

fn contains(args: &[Value]) -> Result<Value, CallError> {
    match (args.first(), args.get(1)) {
        (Some(Value::String(haystack)), Some(Value::String(needle))) => {
            Ok(Value::Bool(haystack.contains(needle.as_str())))
        }
        (Some(Value::String(_)), Some(other)) => {
            Err(CallError::at(1, format!("searching a string needs a string, got {}", other.describe())))
        }
        (Some(Value::List(list)), Some(wanted)) => {
            Ok(Value::Bool(list.iter().any(|item| loose_equals(&item.value, wanted))))
        }
        (Some(other), _) => {
            Err(CallError::at(0, format!("expects a string or a list first, got {}", other.describe())))
        }
        (None, _) => Err(CallError::whole("needs two arguments")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::ListItem;

    fn named(items: &[(&str, f64)]) -> Value {
        Value::List(
            items
                .iter()
                .map(|(name, n)| ListItem { name: Some((*name).to_string()), value: Value::Number(*n) })
                .collect(),
        )
    }

    #[test]
    fn argmax_returns_the_first_winning_name() {
        let sweep = named(&[("d4", 10.0), ("d8", 30.0), ("d12", 30.0)]);
        assert_eq!(Function::Argmax.call(std::slice::from_ref(&sweep)), Ok(Value::String("d8".into())));
        assert_eq!(Function::Argmin.call(&[sweep]), Ok(Value::String("d4".into())));
    }

    #[test]
    fn every_name_round_trips() {
        for &function in Function::ALL {
            assert_eq!(Function::from_word(function.as_str()), Some(function));
        }
        assert_eq!(Function::from_word("nope"), None);
    }
}
