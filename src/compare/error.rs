//! Why a side could not be located, or two sides not compared.

use anvil_evidence::artifact_file::ArtifactFileError;
use anvil_store::StoreError;

use crate::bundle::ImportError;

#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// A `.json` side that is not a file.
    #[error("cannot read {text}: no such file")]
    NoSuchFile { text: String },
    /// The temporary folder a bundle side is unpacked into.
    #[error("temporary folder: {source}")]
    Scratch {
        #[source]
        source: std::io::Error,
    },
    /// A bundle side that did not unpack, or whose entries could not be stored.
    #[error(transparent)]
    Bundle(#[from] ImportError),
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A recipe side that was never run against this store.
    #[error("{text} has no recorded run in this store")]
    NoRun { text: String },
    /// Not a bundle, JSON file, recipe or run, and no stored entry's prefix.
    #[error("`{text}` is no bundle, JSON file, recipe, run or stored step: {source}")]
    Unknown {
        text: String,
        #[source]
        source: StoreError,
    },
    #[error("{text}: not stored")]
    NotStored { text: String },
    /// A stored entry that holds no benchmark artifact.
    #[error("{text} is not a cell")]
    NotACell { text: String },
    /// An artifact's head did not read (the message names the file).
    #[error(transparent)]
    Artifact(#[from] ArtifactFileError),
}
