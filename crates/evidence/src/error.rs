//! Why a re-derivation could not run.

use crate::artifact_file::{ArtifactFileError, Stopped};

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RederiveError {
    #[error("not a JSON object")]
    NotAnObject,
    #[error("schema is {0:?}, expected \"anvil-serving.benchmark/v1\"")]
    Schema(String),
    #[error("request_timings is missing or not an array of objects")]
    NoRecords,
    /// The file could not be opened, or is not JSON (truncated, damaged).
    #[error("{message}")]
    File { path: String, message: String },
    /// The checker's own temporary row file failed.
    #[error("temporary row file: {0}")]
    Scratch(String),
}

impl From<ArtifactFileError> for RederiveError {
    fn from(e: ArtifactFileError) -> Self {
        RederiveError::File { path: e.path().to_string(), message: e.to_string() }
    }
}

impl From<Stopped<RederiveError>> for RederiveError {
    fn from(stopped: Stopped<RederiveError>) -> Self {
        match stopped {
            Stopped::File(e) => e.into(),
            Stopped::By(e) => e,
        }
    }
}

/// Why artifacts could not be pooled ([`crate::pool::pool`]).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PoolError {
    #[error("artifact {0} has no request_timings")]
    NoRecords(usize),
    #[error("records lack actual_send_ms/finished_ms")]
    NoSpan,
    /// The pool's own temporary row file failed.
    #[error("temporary row file: {0}")]
    Scratch(String),
}
