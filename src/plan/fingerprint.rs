//! Configuration fingerprints: blake3 in derive-key mode, with a versioned
//! context, over the canonical bytes of a node's preimage.
//!
//! The preimage holds everything that can change a node's result: its
//! resolved settings, pinned identities, the content hash of every file it
//! reads, the protocol version and its upstream fingerprints. It does not
//! hold names, descriptions, comments or anything volatile (time, host).

use std::path::Path;

use anvil_store::Fingerprint;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::canonical::canonical_bytes;

/// Changing what goes into a preimage changes this, so old store entries are
/// never mistaken for new ones.
pub const FINGERPRINT_CONTEXT: &str = "anvil 2026-11 node configuration fingerprint v1";

/// The measurement protocol a cell's numbers follow.
pub const MEASUREMENT_PROTOCOL: &str = "capacity-v4-reasoning";

/// The rules gates, screens and decisions judge by, in their preimages: a
/// stored verdict is reused only while the rules that reached it are the
/// ones anvil applies now. Bump it with any change to how a verdict is
/// reached from the same inputs (interval verdicts, a screen's ranking and
/// separation, extra repeats and their pooling, a decision's rules).
/// v2: `confidence` judges over intervals; `extra-repeats` pools.
pub const JUDGING_RULES: &str = "anvil-judging-v2";

pub fn fingerprint_of(preimage: &Value) -> Fingerprint {
    let mut hasher = blake3::Hasher::new_derive_key(FINGERPRINT_CONTEXT);
    hasher.update(&canonical_bytes(preimage));
    Fingerprint::from(hasher.finalize())
}

/// What a node's preimage is assembled from.
pub struct PreimageParts {
    pub kind: &'static str,
    pub settings: Map<String, Value>,
    /// Named upstream fingerprints or result digests (`server`, `after`, `reads`).
    pub upstream: Map<String, Value>,
    /// Content hashes of files the node reads, keyed by the path as written.
    pub files: Map<String, Value>,
    /// Facts about the world the node depends on (engine binary, protocol).
    pub environment: Map<String, Value>,
}

impl PreimageParts {
    pub fn new(kind: &'static str) -> PreimageParts {
        PreimageParts {
            kind,
            settings: Map::new(),
            upstream: Map::new(),
            files: Map::new(),
            environment: Map::new(),
        }
    }

    pub fn into_preimage(self) -> Value {
        json!({
            "format": "anvil-preimage/v1",
            "kind": self.kind,
            "settings": self.settings,
            "upstream": self.upstream,
            "files": self.files,
            "environment": self.environment,
        })
    }
}

/// A stored preimage read back through its layout (the one [`PreimageParts`]
/// writes): readers name its parts as fields, not as keys.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct StoredPreimage {
    pub kind: String,
    pub settings: Map<String, Value>,
    pub upstream: Map<String, Value>,
    pub files: Map<String, Value>,
    pub environment: Map<String, Value>,
}

/// The upstream role a cell's server fingerprint is named by.
pub const UPSTREAM_SERVER: &str = "server";

impl StoredPreimage {
    /// `preimage` read through the layout; one that does not fit reads as empty.
    pub fn of(preimage: &Value) -> StoredPreimage {
        StoredPreimage::deserialize(preimage).unwrap_or_default()
    }

    /// The fingerprint of the server a cell ran on.
    pub fn server(&self) -> Option<&str> {
        self.upstream.get(UPSTREAM_SERVER).and_then(Value::as_str)
    }
}

/// blake3 of a file's content, or a marker saying why it could not be read
/// (a missing input is a change worth seeing in `diff`, not a crash).
pub fn file_digest(path: &Path) -> Value {
    // Streamed: a multi-gigabyte trace is hashed through a buffer, not read whole.
    let hashed = std::fs::File::open(path).and_then(|file| {
        let mut hasher = blake3::Hasher::new();
        hasher.update_reader(file)?;
        Ok(hasher.finalize())
    });
    match hashed {
        Ok(hash) => Value::String(format!("blake3:{}", hash.to_hex())),
        Err(err) => Value::String(format!("unreadable: {}", err.kind())),
    }
}
