//! `MANIFEST.json`, the first member of every bundle: what the bundle holds,
//! each member with its size and blake3, and how the run was invoked. The
//! bundle's digest is the blake3 of these bytes, so one hash names it all.

use serde::{Deserialize, Serialize};

/// The format word; a reader refuses any other.
pub const FORMAT: &str = "anvil-bundle/v1";

/// The manifest's name inside the bundle.
pub const MANIFEST_NAME: &str = "MANIFEST.json";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BundleManifest {
    pub format: String,
    /// The anvil that wrote the bundle.
    pub anvil_version: String,
    pub created_at: String,
    pub campaign: String,
    pub run_id: String,
    /// The main recipe, as a member path (`recipe/…`).
    pub recipe: String,
    pub invocation: Invocation,
    /// The machine the bundle was written on (the measuring machine's facts
    /// are in the run record).
    pub exported_on: crate::environment::Environment,
    /// Every other member, in the order they follow the manifest.
    pub members: Vec<Member>,
    /// Per cell, the run-to-run spread of each headline metric: measured
    /// from its repeats, else declared in the recipe (`run-to-run`).
    /// Absent from bundles that state none.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub run_to_run: std::collections::BTreeMap<String, anvil_evidence::run_to_run::Spreads>,
}

pub use crate::run_extra::Invocation;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Member {
    /// `/`-separated, relative: `recipe/…`, `run.json`, `entries/<fingerprint>/<file>`, `outputs/<file>`.
    pub path: String,
    pub bytes: u64,
    /// 64 lowercase hex.
    pub blake3: String,
}

impl BundleManifest {
    /// The bundle's digest: blake3 of the manifest as written.
    pub fn digest_of(bytes: &[u8]) -> String {
        format!("blake3:{}", blake3::hash(bytes).to_hex())
    }
}
