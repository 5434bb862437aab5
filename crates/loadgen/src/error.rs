//! Why a cell could not be measured, as a type for the callers: the spec,
//! an input file, or the measurement itself. Inside the crate errors carry
//! context as they rise (`anyhow`); here that chain becomes the message.

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
    pub(crate) fn invalid(error: anyhow::Error) -> CellError {
        CellError::Invalid(format!("{error:#}"))
    }

    pub(crate) fn input(error: anyhow::Error) -> CellError {
        CellError::Input(format!("{error:#}"))
    }

    pub(crate) fn measurement(error: impl Into<anyhow::Error>) -> CellError {
        CellError::Measurement(format!("{:#}", error.into()))
    }
}
