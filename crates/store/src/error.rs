//! Errors returned by store operations.

use std::io;
use std::path::PathBuf;

use crate::fingerprint::Fingerprint;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },

    #[error(
        "{} is not an anvil store: it has no STORE marker and already holds {found:?}; \
         choose an empty or new directory",
        root.display()
    )]
    NotAStore { root: PathBuf, found: String },

    #[error("{} has store marker {found:?}, which this anvil does not understand", root.display())]
    UnsupportedFormat { root: PathBuf, found: String },

    #[error("{} is damaged: {reason}", path.display())]
    Corrupt { path: PathBuf, reason: String },

    #[error("invalid file name {name:?} in a store entry: {reason}")]
    InvalidName { name: String, reason: &'static str },

    #[error("{} cannot be stored: {reason}", path.display())]
    UnsupportedFile { path: PathBuf, reason: &'static str },

    #[error("entry {fingerprint} cannot be committed without {name} (write it with write_json)")]
    MissingRequiredFile { fingerprint: Fingerprint, name: &'static str },

    #[error("fingerprint prefix {prefix:?} is too short: give at least {min} hex characters")]
    PrefixTooShort { prefix: String, min: usize },

    #[error("fingerprint prefix {prefix:?} is not hexadecimal")]
    InvalidPrefix { prefix: String },

    #[error("no stored entry has a fingerprint starting with {prefix:?}")]
    NotFound { prefix: String },

    #[error(
        "fingerprint prefix {prefix:?} is ambiguous; it matches:\n{}",
        candidates.iter().map(|fp| format!("  {fp}")).collect::<Vec<_>>().join("\n")
    )]
    Ambiguous { prefix: String, candidates: Vec<Fingerprint> },

    #[error("invalid run id {run_id:?}: use letters, digits, '.', '_' or '-', not starting with '.'")]
    InvalidRunId { run_id: String },

    #[error("no run record named {run_id:?}")]
    RunNotFound { run_id: String },

    #[error(
        "the store at {} is in use by another process; gc needs it to itself, try again when \
         other anvil commands on this store have finished",
        root.display()
    )]
    Busy { root: PathBuf },
}

impl StoreError {
    pub(crate) fn io(action: &'static str, path: impl Into<PathBuf>) -> impl FnOnce(io::Error) -> StoreError {
        let path = path.into();
        move |source| StoreError::Io { action, path, source }
    }
}
