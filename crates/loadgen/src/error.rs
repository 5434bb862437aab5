//! Why a cell could not be measured, as a type for the callers: the spec,
//! an input file, or the measurement itself. Inside the crate errors carry
//! context as they rise (`anyhow`); here that chain becomes the message.
//! What is wrong with a cell's stages or stopping rule is a [`SpecError`].

#[derive(Debug, thiserror::Error)]
pub enum CellError {
    /// The cell cannot run as specified (caught before any request).
    #[error("{0}")]
    Invalid(String),
    /// A trace, dataset or session file could not be read as the replay needs it.
    #[error("{0}")]
    Input(String),
    /// The measurement failed: its runtime, its record files, or every
    /// way of reaching the servers.
    #[error("{0}")]
    Measurement(String),
}

impl CellError {
    /// The error and every cause below it, as one line.
    pub(crate) fn input(error: anyhow::Error) -> CellError {
        CellError::Input(format!("{error:#}"))
    }

    pub(crate) fn measurement(error: impl Into<anyhow::Error>) -> CellError {
        CellError::Measurement(format!("{:#}", error.into()))
    }
}

/// What is wrong with a cell's stages or its stopping rule, found before
/// any request is sent ([`run_cell`](crate::run_cell) reports it as
/// [`CellError::Invalid`], after the cell's name). Stages are numbered from 1.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SpecError {
    #[error("stages do not combine with a trace or sessions (they set their own arrivals)")]
    StagesWithOwnArrivals,
    #[error("stage {stage} has a zero duration")]
    ZeroStageDuration { stage: usize },
    #[error("stage {stage}: concurrency must be at least 1")]
    ZeroStageConcurrency { stage: usize },
    #[error("stage {stage}: rate must be a positive number, got {rate}")]
    BadStageRate { stage: usize, rate: f64 },
    #[error("`until` names no metric")]
    NoWatchedMetric,
    /// `watchable`: a key for each metric a rule can watch (`ttft_p99_ms`).
    #[error(
        "`{key}` is not a per-request percentile or mean a stopping rule can watch (one of {}, with any p1–p99 or `mean`)",
        watchable.join(", ")
    )]
    NotWatchable { key: String, watchable: Vec<String> },
    #[error("`within` must be a positive share, got {within}")]
    BadWithin { within: f64 },
    #[error("`min-requests` ({min}) must be at least 1 and at most `max-requests` ({max})")]
    BadMinRequests { min: u32, max: u32 },
}
