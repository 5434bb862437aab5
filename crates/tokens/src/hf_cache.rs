//! Finding a model's `tokenizer.json` in the local Hugging Face cache, the
//! way `huggingface_hub` lays it out: `$HF_HUB_CACHE` (else `$HF_HOME/hub`,
//! else `~/.cache/huggingface/hub`) / `models--ORG--NAME` / `snapshots` /
//! the revision `refs/main` names / `tokenizer.json`. Nothing is downloaded:
//! a benchmark must not fetch what its numbers depend on while it runs.

use std::path::{Path, PathBuf};

use crate::error::TokenizerSpecError;

/// The cache's root folder.
pub fn hub_root() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("HF_HUB_CACHE") {
        return Some(PathBuf::from(dir));
    }
    if let Some(home) = std::env::var_os("HF_HOME") {
        return Some(PathBuf::from(home).join("hub"));
    }
    std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache/huggingface/hub"))
}

/// `ORG/NAME`'s `tokenizer.json`, or why it is not there.
pub fn locate(model: &str) -> Result<PathBuf, TokenizerSpecError> {
    let root = hub_root().ok_or(TokenizerSpecError::NoHubCache)?;
    locate_in(&root, model)
}

/// [`locate`] in the cache at `root`.
pub fn locate_in(root: &Path, model: &str) -> Result<PathBuf, TokenizerSpecError> {
    let folder = root.join(format!("models--{}", model.replace('/', "--")));
    let snapshots = folder.join("snapshots");
    let not_cached = || TokenizerSpecError::NotCached { model: model.to_string(), folder: folder.clone() };
    // The revision `main` points at; else the only snapshot there is.
    let revision = match std::fs::read_to_string(folder.join("refs/main")) {
        Ok(r) => r.trim().to_string(),
        Err(_) => {
            let mut found: Vec<String> = std::fs::read_dir(&snapshots)
                .map_err(|_| not_cached())?
                .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
                .collect();
            found.sort();
            match found.as_slice() {
                [one] => one.clone(),
                [] => return Err(not_cached()),
                many => {
                    return Err(TokenizerSpecError::NoMainRevision {
                        model: model.to_string(),
                        count: many.len(),
                        snapshots: snapshots.clone(),
                    });
                }
            }
        }
    };
    let file = snapshots.join(&revision).join("tokenizer.json");
    match file.is_file() {
        true => Ok(file),
        false => Err(TokenizerSpecError::NoTokenizerJson { model: model.to_string(), revision, file }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_snapshot_main_names() {
        let root = tempfile::tempdir().unwrap();
        let model = root.path().join("models--Org--Name");
        std::fs::create_dir_all(model.join("refs")).unwrap();
        std::fs::create_dir_all(model.join("snapshots/abc123")).unwrap();
        assert!(locate_in(root.path(), "Org/Name").unwrap_err().to_string().contains("no tokenizer.json"));
        std::fs::write(model.join("snapshots/abc123/tokenizer.json"), "{}").unwrap();
        let found = locate_in(root.path(), "Org/Name").unwrap();
        assert_eq!(found, model.join("snapshots/abc123/tokenizer.json"), "the only snapshot");
        std::fs::create_dir_all(model.join("snapshots/def456")).unwrap();
        assert!(locate_in(root.path(), "Org/Name").unwrap_err().to_string().contains("2 snapshots"));
        std::fs::write(model.join("refs/main"), "abc123\n").unwrap();
        assert_eq!(locate_in(root.path(), "Org/Name").unwrap(), found, "refs/main chooses");
        let missing = locate_in(root.path(), "Other/Model").unwrap_err().to_string();
        assert!(
            missing.contains("not in the local Hugging Face cache") && missing.contains("never downloads")
        );
    }
}
