//! A gate's verdict: passed, rejected, missing or error, with a detail string
//! that shows the values that decided it.

use crate::error::EvalError;
use crate::eval::{MissingInput, Outcome, Stop};
use crate::value::Value;

#[derive(Debug, Clone, PartialEq)]
pub enum Evaluation {
    /// The expression is true.
    Passed { detail: String },
    /// The expression is false.
    Rejected { detail: String },
    /// An input the result depends on is absent; `missing` lists the paths.
    Missing { detail: String, missing: Vec<String> },
    /// The expression cannot be computed (type mismatch, division by zero,
    /// a result that is not true or false).
    Error { detail: String },
}

impl Evaluation {
    /// `passed`, `rejected`, `missing` or `error`.
    pub fn status(&self) -> &'static str {
        match self {
            Evaluation::Passed { .. } => "passed",
            Evaluation::Rejected { .. } => "rejected",
            Evaluation::Missing { .. } => "missing",
            Evaluation::Error { .. } => "error",
        }
    }

    pub fn detail(&self) -> &str {
        match self {
            Evaluation::Passed { detail }
            | Evaluation::Rejected { detail }
            | Evaluation::Missing { detail, .. }
            | Evaluation::Error { detail } => detail,
        }
    }

    /// Builds the verdict from the outcome and the annotated expression text.
    pub(crate) fn from_outcome(outcome: Outcome, annotated: &str) -> Evaluation {
        match outcome {
            Ok(Value::Bool(true)) => Evaluation::Passed { detail: format!("{annotated} → true") },
            Ok(Value::Bool(false)) => Evaluation::Rejected { detail: format!("{annotated} → false") },
            Ok(other) => Evaluation::Error {
                detail: format!(
                    "gate expression must be true or false, got {}: {annotated}",
                    other.describe()
                ),
            },
            Err(Stop::Missing(inputs)) => {
                let (missing, detail) = describe_missing(&inputs, annotated);
                Evaluation::Missing { detail, missing }
            }
            Err(Stop::Invalid { message, .. }) => {
                Evaluation::Error { detail: format!("{message} (in {annotated})") }
            }
        }
    }
}

/// The distinct missing paths and a detail like
/// `missing cell.tp2.tok_s (no result for cell tp2): <annotated> → missing`.
fn describe_missing(inputs: &[MissingInput], annotated: &str) -> (Vec<String>, String) {
    let mut missing: Vec<String> = Vec::new();
    let mut reasons: Vec<String> = Vec::new();
    for input in inputs {
        if !missing.contains(&input.reference) {
            missing.push(input.reference.clone());
            reasons.push(format!("{} ({})", input.reference, input.why));
        }
    }
    let detail = format!("missing {}: {annotated} → missing", reasons.join(", "));
    (missing, detail)
}

/// The same outcome for non-gate uses (`evaluate_value`).
pub(crate) fn outcome_to_result(outcome: Outcome, annotated: &str) -> Result<Value, EvalError> {
    match outcome {
        Ok(value) => Ok(value),
        Err(Stop::Missing(inputs)) => {
            let (references, detail) = describe_missing(&inputs, annotated);
            Err(EvalError::Missing { references, detail })
        }
        Err(Stop::Invalid { message, span }) => Err(EvalError::Invalid { message, span }),
    }
}
