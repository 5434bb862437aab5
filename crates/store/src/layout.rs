//! Where everything lives under a store root, and the STORE format marker.
//!
//! ```text
//! <root>/STORE                      format marker: {"format":"anvil-store","version":1}
//! <root>/store.lock                 shared by every open Store, exclusive during gc
//! <root>/entries/<2 hex>/<64 hex>/  immutable entries (manifest.json + files)
//! <root>/staging/<id>/              entries being written (same filesystem as entries/)
//! <root>/staging/<id>.lock          held by the writing process while <id>/ is live
//! <root>/locks/<64 hex>.lock        per-fingerprint "I am producing this" locks
//! <root>/runs/<run id>.json         run records, the gc roots
//! <root>/cache/<purpose>/           derived data its writers can rebuild (safe to delete)
//! <root>/jobs/, <root>/documents/   Slurm job records and the step documents jobs run from
//! ```

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::fingerprint::Fingerprint;

pub(crate) const MARKER_FILE: &str = "STORE";
pub(crate) const STORE_LOCK_FILE: &str = "store.lock";
pub(crate) const ENTRIES_DIR: &str = "entries";
pub(crate) const STAGING_DIR: &str = "staging";
pub(crate) const LOCKS_DIR: &str = "locks";
pub(crate) const RUNS_DIR: &str = "runs";
/// Slurm job records and progress, written by anvil's Slurm executor (not by the store).
pub(crate) const JOBS_DIR: &str = "jobs";
/// Step documents a cluster's jobs run from (`<fingerprint>.json`), written
/// by anvil's Slurm executor: derived from plans, rebuilt on the next run.
pub(crate) const DOCUMENTS_DIR: &str = "documents";
/// Derived data anvil can rebuild (parsed recipes): no entry depends on it.
pub(crate) const CACHE_DIR: &str = "cache";
/// Failed steps' evidence, per run (`failed.rs`).
pub(crate) const FAILED_DIR: &str = "failed";

/// The subdirectories every store has.
pub(crate) const SUBDIRS: [&str; 4] = [ENTRIES_DIR, STAGING_DIR, LOCKS_DIR, RUNS_DIR];

pub(crate) const MANIFEST_FILE: &str = "manifest.json";
pub(crate) const PREIMAGE_FILE: &str = "preimage.json";
pub(crate) const RESULT_FILE: &str = "result.json";
pub(crate) const LOCK_SUFFIX: &str = ".lock";
pub(crate) const RUN_SUFFIX: &str = ".json";

pub(crate) const FORMAT_NAME: &str = "anvil-store";
pub(crate) const FORMAT_VERSION: u32 = 1;

/// Contents of `<root>/STORE`.
#[derive(Debug, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct Marker {
    pub format: String,
    pub version: u32,
}

impl Marker {
    pub fn current() -> Marker {
        Marker { format: FORMAT_NAME.to_string(), version: FORMAT_VERSION }
    }
}

/// Path arithmetic for one store root; touches no files.
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    root: PathBuf,
}

impl Layout {
    pub fn new(root: PathBuf) -> Layout {
        Layout { root }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn marker(&self) -> PathBuf {
        self.root.join(MARKER_FILE)
    }

    pub fn store_lock(&self) -> PathBuf {
        self.root.join(STORE_LOCK_FILE)
    }

    pub fn entries(&self) -> PathBuf {
        self.root.join(ENTRIES_DIR)
    }

    /// Entries are sharded by their first two hex characters so no single
    /// directory grows to hundreds of thousands of names.
    pub fn shard_of(&self, fp: &Fingerprint) -> PathBuf {
        let hex = fp.to_string();
        self.entries().join(&hex[..2])
    }

    pub fn entry(&self, fp: &Fingerprint) -> PathBuf {
        self.shard_of(fp).join(fp.to_string())
    }

    pub fn manifest(&self, fp: &Fingerprint) -> PathBuf {
        self.entry(fp).join(MANIFEST_FILE)
    }

    pub fn staging(&self) -> PathBuf {
        self.root.join(STAGING_DIR)
    }

    pub fn locks(&self) -> PathBuf {
        self.root.join(LOCKS_DIR)
    }

    pub fn node_lock(&self, fp: &Fingerprint) -> PathBuf {
        self.locks().join(format!("{fp}{LOCK_SUFFIX}"))
    }

    pub fn cache_root(&self) -> PathBuf {
        self.root.join(CACHE_DIR)
    }

    pub fn cache(&self, purpose: &str) -> PathBuf {
        self.cache_root().join(purpose)
    }

    pub fn runs(&self) -> PathBuf {
        self.root.join(RUNS_DIR)
    }

    pub fn run(&self, run_id: &str) -> PathBuf {
        self.runs().join(format!("{run_id}{RUN_SUFFIX}"))
    }

    /// Names that may sit at the top of a store root; anything else means
    /// the directory is not (only) a store.
    pub fn is_known_top_level_name(name: &str) -> bool {
        name == MARKER_FILE
            || name == STORE_LOCK_FILE
            || SUBDIRS.contains(&name)
            || name == JOBS_DIR
            || name == DOCUMENTS_DIR
            || name == CACHE_DIR
            || name == FAILED_DIR
            || name.starts_with(crate::fsutil::TMP_PREFIX)
    }
}
