//! Why a run could not be carried out (as opposed to a step failing, which
//! is an ending recorded in the run). The exit code follows from the kind.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// `--only` or `--force` named a step the recipe does not have.
    #[error("{flag}: no step named `{name}`{hint}")]
    UnknownStep { flag: &'static str, name: String, hint: String },
    #[error(transparent)]
    Store(#[from] anvil_store::StoreError),
    #[error("{what} {}: {source}", path.display())]
    Io { what: &'static str, path: PathBuf, source: std::io::Error },
    /// A bug: a step's task panicked.
    #[error("a step's task crashed: {0}")]
    Crashed(String),
    /// The executor cannot be used (no `sbatch`, …).
    #[error("{0}")]
    Executor(String),
    /// A problem the planner found while a later wave settled the steps
    /// that read upstream results: bad input, its diagnostic pointing into
    /// the recipe (file, line, span) as at plan time.
    #[error("settling the steps that read upstream results: {0}")]
    Settle(Box<dyn miette::Diagnostic + Send + Sync>),
}

impl RunError {
    /// 2 for bad input, 1 for work that could not be done.
    pub fn exit_code(&self) -> i32 {
        match self {
            RunError::UnknownStep { .. } | RunError::Settle(_) => 2,
            RunError::Store(_) | RunError::Io { .. } | RunError::Crashed(_) | RunError::Executor(_) => 1,
        }
    }
}
