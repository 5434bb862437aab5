//! `anvil import`: a verified bundle's entries added to a store, each
//! atomically and never over an existing one, and its run record added as a
//! gc root. Importing twice changes nothing the second time.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anvil_store::{Fingerprint, RunRecord, Store};

use super::reader::{BundleError, Verified, read_verified};

#[derive(Debug)]
pub struct ImportSummary {
    pub digest: String,
    pub campaign: String,
    pub run_id: String,
    pub added: usize,
    pub already_present: usize,
    pub run_added: bool,
    /// Uncompressed bytes checked.
    pub bytes: u64,
    /// Where the recipe (and campaign outputs) were unpacked, and the main recipe file.
    pub recipe: PathBuf,
}

/// A bundle unpacked and checked, with its entries grouped by fingerprint.
pub struct Imported {
    pub verified: Verified,
    pub run: RunRecord,
    pub entries: BTreeMap<Fingerprint, Vec<String>>,
}

#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error(transparent)]
    Bundle(#[from] BundleError),
    #[error(transparent)]
    Store(#[from] anvil_store::StoreError),
    #[error("{what} {}: {source}", path.display())]
    Io { what: &'static str, path: PathBuf, source: std::io::Error },
}

/// Unpack `bundle` into `scratch` and check what a store will rely on:
/// every member's hash, that each entry's preimage hashes to its
/// fingerprint, and that the run record reads.
pub fn unpack(bundle: &Path, scratch: &Path) -> Result<Imported, ImportError> {
    let verified = read_verified(bundle, scratch)?;
    let mut entries: BTreeMap<Fingerprint, Vec<String>> = BTreeMap::new();
    for member in &verified.manifest.members {
        let Some(rest) = member.path.strip_prefix("entries/") else { continue };
        let (fp, name) = rest.split_once('/').unwrap_or((rest, ""));
        let fingerprint: Fingerprint =
            fp.parse().map_err(|_| damaged(&member.path, "is not under a fingerprint"))?;
        entries.entry(fingerprint).or_default().push(name.to_string());
    }
    for (fp, names) in &entries {
        for required in ["preimage.json", "result.json"] {
            if !names.iter().any(|n| n == required) {
                return Err(damaged(&format!("entries/{fp}/{required}"), "is missing"));
            }
        }
        let member = format!("entries/{fp}/preimage.json");
        let preimage: serde_json::Value = read_json(&verified.dir.join(&member), &member)?;
        if crate::plan::fingerprint_of(&preimage) != *fp {
            return Err(damaged(
                &member,
                "does not hash to its fingerprint: the entry is not what it claims",
            ));
        }
    }
    let run: RunRecord = read_json(&verified.dir.join("run.json"), "run.json")?;
    Ok(Imported { verified, run, entries })
}

/// Import `bundle` into `store`; the recipe is unpacked under `recipe_into`.
pub fn import(bundle: &Path, store: &Store, recipe_into: &Path) -> Result<ImportSummary, ImportError> {
    let scratch = tempfile::tempdir().map_err(|source| ImportError::Io {
        what: "creating",
        path: std::env::temp_dir(),
        source,
    })?;
    let imported = unpack(bundle, scratch.path())?;
    let (added, already_present) = add_entries(&imported, store)?;
    let run_added = store.run(&imported.run.run_id)?.is_none();
    if run_added {
        store.record_run(&imported.run)?;
    }
    let recipe = extract_recipe(&imported, recipe_into)?;
    let manifest = &imported.verified.manifest;
    Ok(ImportSummary {
        digest: imported.verified.digest.clone(),
        campaign: manifest.campaign.clone(),
        run_id: manifest.run_id.clone(),
        added,
        already_present,
        run_added,
        bytes: imported.verified.bytes,
        recipe,
    })
}

/// Stage, fsync and rename each entry into the store (an entry already
/// there is left as it is).
pub fn add_entries(imported: &Imported, store: &Store) -> Result<(usize, usize), ImportError> {
    let (mut added, mut present) = (0, 0);
    for (fp, names) in &imported.entries {
        if store.contains(fp) {
            present += 1;
            continue;
        }
        let mut staged = store.stage(fp)?;
        for name in names {
            staged.copy_file(name, &imported.verified.dir.join(format!("entries/{fp}/{name}")))?;
        }
        staged.commit()?;
        added += 1;
    }
    Ok((added, present))
}

/// Copy the recipe files (and campaign outputs) out of the bundle; returns the main recipe.
pub fn extract_recipe(imported: &Imported, into: &Path) -> Result<PathBuf, ImportError> {
    for member in &imported.verified.manifest.members {
        let Some(relative) = member
            .path
            .strip_prefix("recipe/")
            .or(member.path.strip_prefix("outputs/").map(|_| member.path.as_str()))
        else {
            continue;
        };
        let target = into.join(relative);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|source| ImportError::Io {
                what: "creating",
                path: parent.to_path_buf(),
                source,
            })?;
        }
        std::fs::copy(imported.verified.dir.join(&member.path), &target)
            .map_err(|source| ImportError::Io { what: "writing", path: target.clone(), source })?;
    }
    let main = imported
        .verified
        .manifest
        .recipe
        .strip_prefix("recipe/")
        .unwrap_or(&imported.verified.manifest.recipe);
    Ok(into.join(main))
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path, member: &str) -> Result<T, ImportError> {
    let bytes = std::fs::read(path).map_err(|source| ImportError::Io {
        what: "reading",
        path: path.to_path_buf(),
        source,
    })?;
    serde_json::from_slice(&bytes)
        .map_err(|e| damaged(member, &format!("is not valid JSON of its kind: {e}")))
}

fn damaged(member: &str, why: &str) -> ImportError {
    ImportError::Bundle(BundleError::Damaged { member: member.to_string(), why: why.to_string() })
}
