//! Why a peer tool's result could not be read ([`super::read`]).

use std::path::PathBuf;

use super::fields::FieldError;

/// Which versions each importer reads, in words (for the errors below).
pub const VERSIONS_READ: &str = "vllm bench serve --save-result --save-detailed JSON (its file records no version; \
     read by its keys, as 0.33 writes them), AIPerf profile exports of schema_version 1.4 (AIPerf 0.13: \
     profile_export_aiperf.json, profile_export.jsonl or their folder) and guidellm JSON reports of \
     metadata.version 2 (guidellm 0.8)";

#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is neither JSON nor JSON lines; anvil imports {VERSIONS_READ}", path.display())]
    NotJson { path: PathBuf },
    /// `--from` named another tool than AIPerf for a folder.
    #[error("{} is a folder: only AIPerf exports are read as a folder", path.display())]
    FolderNotAiperf { path: PathBuf },
    /// `--from` named a tool, and the file looks like another's (`found`: their titles).
    #[error("{} looks like a {found} result, not {named}'s", path.display())]
    OtherTool { path: PathBuf, found: String, named: &'static str },
    #[error(
        "{} is not a result anvil recognises (name its tool with --from); anvil imports {VERSIONS_READ}",
        path.display()
    )]
    Unrecognised { path: PathBuf },
    /// The file looks like a result of more than one tool (`found`: their titles).
    #[error("{} could be a result of {found}: name its tool with --from", path.display())]
    Ambiguous { path: PathBuf, found: String },
    #[error("{} holds JSON lines; a guidellm report is one JSON document", path.display())]
    GuidellmLines { path: PathBuf },
    /// One of an AIPerf export's two files is missing (`what`: which).
    #[error(
        "{} not found: AIPerf's {what} must sit next to the file named (an export folder holds {} and {})",
        path.display(),
        super::aiperf::SUMMARY,
        super::aiperf::RECORDS
    )]
    AiperfMissing { path: PathBuf, what: &'static str },
    /// A field is missing or mistyped (the message names the file and field).
    #[error(transparent)]
    Field(#[from] FieldError),
}
