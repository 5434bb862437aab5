//! `manifest.json`: the per-entry record of every file's blake3 hash and
//! size, plus one content hash over all of them (like Nix's narHash).

use std::fs::{self, File};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::StoreError;
use crate::fingerprint::Fingerprint;
use crate::layout::MANIFEST_FILE;

pub(crate) const MANIFEST_FORMAT: &str = "anvil-store.manifest/v1";

/// One file of an entry, as recorded at commit time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestFile {
    /// Path relative to the entry directory, `/`-separated.
    pub name: String,
    /// blake3 of the file's bytes, 64 lowercase hex.
    pub blake3: String,
    pub bytes: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Manifest {
    pub format: String,
    pub fingerprint: Fingerprint,
    pub created_at: String,
    /// blake3 over the sorted (name, hash, size) list: one value that
    /// changes if any file's content changes.
    pub content_hash: String,
    pub files: Vec<ManifestFile>,
}

impl Manifest {
    pub fn new(fingerprint: Fingerprint, created_at: String, mut files: Vec<ManifestFile>) -> Manifest {
        files.sort_by(|a, b| a.name.cmp(&b.name));
        let content_hash = content_hash(&files);
        Manifest { format: MANIFEST_FORMAT.to_string(), fingerprint, created_at, content_hash, files }
    }

    /// Read and sanity-check `<entry_dir>/manifest.json`.
    pub fn load(entry_dir: &Path) -> Result<Manifest, StoreError> {
        let path = entry_dir.join(MANIFEST_FILE);
        let bytes = fs::read(&path).map_err(StoreError::io("read", &path))?;
        let corrupt = |reason: String| StoreError::Corrupt { path: path.clone(), reason };
        let manifest: Manifest =
            serde_json::from_slice(&bytes).map_err(|err| corrupt(format!("manifest is not valid: {err}")))?;
        if manifest.format != MANIFEST_FORMAT {
            return Err(corrupt(format!("unknown manifest format {:?}", manifest.format)));
        }
        if let Some(bad) = manifest.files.iter().find(|file| check_file_name(&file.name).is_err()) {
            // Never let a manifest point verify or readers outside the entry.
            return Err(corrupt(format!("lists an invalid file name {:?}", bad.name)));
        }
        if content_hash(&manifest.files) != manifest.content_hash {
            return Err(corrupt("content_hash does not match the file list".to_string()));
        }
        Ok(manifest)
    }

    pub fn to_json_bytes(&self) -> Vec<u8> {
        let mut bytes = serde_json::to_vec_pretty(self).expect("manifest serializes");
        bytes.push(b'\n');
        bytes
    }
}

fn content_hash(sorted_files: &[ManifestFile]) -> String {
    let mut hasher = blake3::Hasher::new();
    hasher.update(MANIFEST_FORMAT.as_bytes());
    for file in sorted_files {
        // NUL cannot occur in names or hex, so the encoding is unambiguous.
        hasher.update(file.name.as_bytes());
        hasher.update(b"\0");
        hasher.update(file.blake3.as_bytes());
        hasher.update(b"\0");
        hasher.update(file.bytes.to_string().as_bytes());
        hasher.update(b"\n");
    }
    hasher.finalize().to_hex().to_string()
}

/// blake3 and length of a file's bytes, read in a streaming way.
pub(crate) fn hash_file(path: &Path) -> Result<(String, u64), StoreError> {
    let file = File::open(path).map_err(StoreError::io("open", path))?;
    let mut hasher = blake3::Hasher::new();
    hasher.update_reader(file).map_err(StoreError::io("read", path))?;
    Ok((hasher.finalize().to_hex().to_string(), hasher.count()))
}

/// What a walk of an entry (or staging) directory found.
#[derive(Debug, Default)]
pub(crate) struct Walk {
    /// Regular files other than the top-level manifest: (relative name, path).
    pub files: Vec<(String, PathBuf)>,
    /// Every directory, including the top one, deepest first.
    pub dirs: Vec<PathBuf>,
    /// Things a store entry must not contain: (path, why).
    pub oddities: Vec<(PathBuf, &'static str)>,
}

/// Walk `top` without following symlinks; sorted, so manifests are stable.
pub(crate) fn walk(top: &Path) -> Result<Walk, StoreError> {
    let mut walk = Walk::default();
    walk_into(top, "", &mut walk)?;
    walk.files.sort();
    Ok(walk)
}

fn walk_into(dir: &Path, prefix: &str, walk: &mut Walk) -> Result<(), StoreError> {
    let reader = fs::read_dir(dir).map_err(StoreError::io("list", dir))?;
    for item in reader {
        let item = item.map_err(StoreError::io("list", dir))?;
        let path = item.path();
        let Some(name) = item.file_name().to_str().map(str::to_string) else {
            walk.oddities.push((path, "file name is not UTF-8"));
            continue;
        };
        if name.contains('\\') {
            walk.oddities.push((path, "file name contains a backslash"));
            continue;
        }
        let relative = format!("{prefix}{name}");
        let file_type = item.file_type().map_err(StoreError::io("read metadata of", &path))?;
        if file_type.is_dir() {
            walk_into(&path, &format!("{relative}/"), walk)?;
        } else if file_type.is_file() {
            if relative != MANIFEST_FILE {
                walk.files.push((relative, path));
            }
        } else if file_type.is_symlink() {
            walk.oddities.push((path, "symbolic links are not stored"));
        } else {
            walk.oddities.push((path, "only regular files and directories are stored"));
        }
    }
    walk.dirs.push(dir.to_path_buf());
    Ok(())
}

/// Check a caller-chosen file name: relative, `/`-separated, no `.`/`..`
/// components, not the manifest.
pub(crate) fn check_file_name(name: &str) -> Result<(), StoreError> {
    let invalid = |reason| StoreError::InvalidName { name: name.to_string(), reason };
    if name.is_empty() {
        return Err(invalid("name is empty"));
    }
    if name == MANIFEST_FILE {
        return Err(invalid("manifest.json is written by the store itself"));
    }
    if name.contains('\\') || name.contains('\0') {
        return Err(invalid("names may not contain backslashes or NUL"));
    }
    for component in name.split('/') {
        if component.is_empty() || component == "." || component == ".." {
            return Err(invalid("use a relative path without empty, '.' or '..' components"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names() {
        assert!(check_file_name("result.json").is_ok());
        assert!(check_file_name("raw/requests.jsonl").is_ok());
        for bad in ["", "/abs", "a/../b", "./a", "a//b", "a/", "manifest.json", "a\\b"] {
            assert!(check_file_name(bad).is_err(), "{bad:?} should be rejected");
        }
    }

    #[test]
    fn content_hash_depends_on_every_field() {
        let file =
            |name: &str, hash: &str, bytes| ManifestFile { name: name.into(), blake3: hash.into(), bytes };
        let fp = Fingerprint::of_bytes(b"x");
        let base = Manifest::new(fp, "t".into(), vec![file("a", "00", 1)]);
        for changed in [file("b", "00", 1), file("a", "01", 1), file("a", "00", 2)] {
            assert_ne!(Manifest::new(fp, "t".into(), vec![changed]).content_hash, base.content_hash);
        }
    }
}
