//! A completed store entry as callers see it.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::StoreError;
use crate::fingerprint::Fingerprint;
use crate::layout::{PREIMAGE_FILE, RESULT_FILE};
use crate::manifest::{Manifest, ManifestFile};

/// A completed, immutable entry.
#[derive(Debug, Clone)]
pub struct Entry {
    pub fingerprint: Fingerprint,
    /// The entry's directory; its files are read-only.
    pub dir: PathBuf,
    /// Parsed `preimage.json`: what was hashed into the fingerprint.
    pub preimage: serde_json::Value,
    /// Parsed `result.json`.
    pub result: serde_json::Value,
    /// Every file but `manifest.json`, sorted by name.
    pub files: Vec<ManifestFile>,
    /// When the entry was committed (RFC 3339 UTC).
    pub created_at: String,
    /// blake3 over all files' names, hashes and sizes (Nix's narHash):
    /// equal content hashes mean byte-identical entries.
    pub content_hash: String,
}

impl Entry {
    /// Path of one of the entry's files.
    pub fn path_of(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    pub(crate) fn load(dir: &Path, fp: &Fingerprint) -> Result<Entry, StoreError> {
        let manifest = Manifest::load(dir)?;
        if manifest.fingerprint != *fp {
            return Err(StoreError::Corrupt {
                path: dir.to_path_buf(),
                reason: format!("manifest names fingerprint {}", manifest.fingerprint),
            });
        }
        Ok(Entry {
            fingerprint: *fp,
            dir: dir.to_path_buf(),
            preimage: read_json(&dir.join(PREIMAGE_FILE))?,
            result: read_json(&dir.join(RESULT_FILE))?,
            files: manifest.files,
            created_at: manifest.created_at,
            content_hash: manifest.content_hash,
        })
    }

    pub(crate) fn from_parts(
        dir: PathBuf,
        manifest: Manifest,
        preimage: serde_json::Value,
        result: serde_json::Value,
    ) -> Entry {
        Entry {
            fingerprint: manifest.fingerprint,
            dir,
            preimage,
            result,
            files: manifest.files,
            created_at: manifest.created_at,
            content_hash: manifest.content_hash,
        }
    }
}

pub(crate) fn read_json(path: &Path) -> Result<serde_json::Value, StoreError> {
    let bytes = fs::read(path).map_err(StoreError::io("read", path))?;
    serde_json::from_slice(&bytes).map_err(|err| StoreError::Corrupt {
        path: path.to_path_buf(),
        reason: format!("not valid JSON: {err}"),
    })
}
