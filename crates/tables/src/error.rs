//! Why a table could not be written.

#[derive(Debug, thiserror::Error)]
pub enum TableError {
    #[error("cannot write {path}: {source}")]
    Io { path: std::path::PathBuf, source: std::io::Error },
    #[error("cell `{cell}`: {message}")]
    Cell { cell: String, message: String },
    #[error("Arrow: {0}")]
    Arrow(#[from] arrow_schema::ArrowError),
    #[error("Parquet: {0}")]
    Parquet(#[from] parquet::errors::ParquetError),
}

/// A `request_timings` element that is not a JSON object: it has no fields
/// to make a row of.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("a request_timings element is not an object")]
pub struct NotAnObject;
