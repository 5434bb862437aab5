//! Errors of parsing and evaluation. Every error carries a byte span into the
//! expression source so the caller can underline it (e.g. with miette).

use crate::span::Span;

/// The expression is not well formed. `span` is `(offset, len)` in bytes into
/// the source given to [`crate::parse`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct ParseError {
    pub message: String,
    pub span: Span,
    pub help: Option<String>,
}

impl ParseError {
    pub(crate) fn new(message: impl Into<String>, span: Span) -> Self {
        ParseError { message: message.into(), span, help: None }
    }

    pub(crate) fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }
}

/// Why an expression produced no value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EvalError {
    /// Some input the result depends on is absent (not run yet, failed, or no
    /// such field). `references` are the paths as written in the expression.
    #[error("{detail}")]
    Missing { references: Vec<String>, detail: String },
    /// The inputs are there but the expression cannot be computed from them:
    /// a type mismatch, a division by zero, an empty list given to `mean`...
    /// `span` points at the sub-expression that failed.
    #[error("{message}")]
    Invalid { message: String, span: Span },
}

/// Why a reference's field path finds nothing in a node's result
/// ([`crate::Reference::select`]). `walked` is the path read so far
/// (`cell.tp1.runs`), where the step failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectError {
    #[error("{walked} has no field `{key}`")]
    NoField { walked: String, key: String },
    #[error("{walked} has {len} items, no [{index}]")]
    NoIndex { walked: String, len: usize, index: usize },
    #[error("{walked} is not an object, cannot read `{key}`")]
    NotObject { walked: String, key: String },
    #[error("{walked} is not a list, cannot read [{index}]")]
    NotList { walked: String, index: usize },
}
