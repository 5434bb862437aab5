//! Why a dataset could not be read: each error names its line (counted
//! from 1, blank lines included) and, where one is at fault, its field.

/// A dataset line that cannot be an item, or a dataset with no item.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("line {line}: not JSON: {source}")]
    NotJson {
        line: usize,
        #[source]
        source: serde_json::Error,
    },
    #[error("line {line}: not a JSON object")]
    NotObject { line: usize },
    #[error("line {line}: field `{field}` is missing")]
    Missing { line: usize, field: &'static str },
    #[error("line {line}: field `{field}` {problem}")]
    Invalid { line: usize, field: &'static str, problem: String },
    #[error("line {line}: id `{id}` is already the id of line {first}")]
    DuplicateId { line: usize, id: String, first: usize },
    #[error("the dataset holds no item")]
    Empty,
}

impl ReadError {
    /// The line at fault, if one is.
    pub fn line(&self) -> Option<usize> {
        match self {
            Self::NotJson { line, .. }
            | Self::NotObject { line }
            | Self::Missing { line, .. }
            | Self::Invalid { line, .. }
            | Self::DuplicateId { line, .. } => Some(*line),
            Self::Empty => None,
        }
    }

    /// The field at fault, if one is.
    pub fn field(&self) -> Option<&'static str> {
        match self {
            Self::Missing { field, .. } | Self::Invalid { field, .. } => Some(field),
            Self::DuplicateId { .. } => Some("id"),
            _ => None,
        }
    }
}
