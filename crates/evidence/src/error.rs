//! Why a re-derivation could not run.

use crate::artifact_file::{ArtifactFileError, Stopped};
use crate::bootstrap::Statistic;

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

/// Why a per-request statistic could not be judged across repeats
/// ([`crate::compare::compare_across_repeats`]); the caller then pools the
/// requests instead, and says why.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AcrossRepeatsError {
    /// Fewer than 2 repeats on a side (`a`, `b`: the repeats of each side).
    #[error("{}", too_few_repeats(*a, *b))]
    TooFewRepeats { a: usize, b: usize },
    /// A repeat of `side` has `least` samples, under the `need` of `statistic`.
    #[error("a repeat of side {side} has {least} samples; a per-repeat {} needs ≥ {need}", statistic.label())]
    TooFewSamples { side: &'static str, least: usize, statistic: Statistic, need: usize },
    /// A repeat of `side` has a zero, negative or non-finite value.
    #[error("a repeat of side {side} has a non-positive {}", statistic.label())]
    NonPositive { side: &'static str, statistic: Statistic },
}

/// "one run on side A and 3 runs on side B": the sides with fewer than 2.
fn too_few_repeats(a: usize, b: usize) -> String {
    let runs = |n: usize| if n == 1 { "one run".to_string() } else { format!("{n} runs") };
    match (a < 2, b < 2) {
        (true, true) => format!("{} on side A and {} on side B", runs(a), runs(b)),
        (true, false) => format!("{} on side A", runs(a)),
        _ => format!("{} on side B", runs(b)),
    }
}
