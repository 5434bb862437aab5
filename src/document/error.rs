//! Why a step document cannot be used.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum DocumentError {
    #[error("cannot read step document {}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{} is not a step document: {source}", path.display())]
    Parse { path: PathBuf, source: serde_json::Error },
    #[error("{} is a `{found}` document; this anvil reads `{}`", path.display(), super::format::STEP_DOCUMENT_FORMAT)]
    Format { path: PathBuf, found: String },
    #[error(
        "{}: its key hashes to {hashed}, not to the fingerprint {claimed} it claims (edited, or written by another anvil): refused",
        path.display()
    )]
    KeyMismatch { path: PathBuf, claimed: String, hashed: String },
    #[error("{}: a `{kind}` document, not {wanted}", path.display())]
    WrongKind { path: PathBuf, kind: String, wanted: &'static str },
    #[error("{}: the documents of one job measure one server; this one names another", path.display())]
    TwoServers { path: PathBuf },
    #[error("no step document given")]
    Nothing,
    #[error("{}: an input changed since it was planned: {file} was {planned}, is now {now}", path.display())]
    InputChanged { path: PathBuf, file: String, planned: String, now: String },
}
