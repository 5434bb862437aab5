//! Committing a produced result: staged, fsynced and renamed into the store.

use anvil_store::Store;
use serde_json::Value;

use super::outcome::{Produced, ProducedFile};

/// Stage, fsync and rename a result into the store under `fingerprint` (a
/// step's, or a search's probe, stored as a cell). A forced rerun of a
/// stored step keeps the stored entry (entries are immutable) and says
/// whether the new result reproduced it.
pub(super) fn commit_entry(
    store: &Store,
    fingerprint: &anvil_store::Fingerprint,
    preimage: &Value,
    produced: &Produced,
) -> Result<String, anvil_store::StoreError> {
    if let Some(existing) = store.read(fingerprint)? {
        let same =
            crate::plan::canonical_bytes(&existing.result) == crate::plan::canonical_bytes(&produced.result);
        return Ok(if same {
            " (forced: reproduced the stored result)".into()
        } else {
            " (forced: differs from the stored result, which is kept)".into()
        });
    }
    let mut staged = store.stage(fingerprint)?;
    staged.write_json("preimage.json", preimage)?;
    staged.write_json("result.json", &produced.result)?;
    for file in &produced.files {
        match file {
            ProducedFile::Bytes { name, bytes } => staged.write_bytes(name, bytes)?,
            ProducedFile::Copy { name, from } => staged.copy_file(name, from)?,
            ProducedFile::Scratch { name, folder, file } => {
                staged.copy_file(name, &folder.path().join(file))?
            }
        }
    }
    staged.commit()?;
    Ok(String::new())
}

/// Keep a failed step's evidence files with run `run_id` (never under its
/// fingerprint's entry: a failure is not a result).
pub(super) fn keep_failed(
    store: &Store,
    run_id: &str,
    fingerprint: &anvil_store::Fingerprint,
    files: &[ProducedFile],
) -> Result<std::path::PathBuf, anvil_store::StoreError> {
    use anvil_store::EvidenceFile;
    let scratch: Vec<std::path::PathBuf> = files
        .iter()
        .map(|f| match f {
            ProducedFile::Scratch { folder, file, .. } => folder.path().join(file),
            _ => std::path::PathBuf::new(),
        })
        .collect();
    let evidence: Vec<EvidenceFile<'_>> = files
        .iter()
        .zip(&scratch)
        .map(|(f, scratch)| match f {
            ProducedFile::Bytes { name, bytes } => EvidenceFile::Bytes { name, bytes },
            ProducedFile::Copy { name, from } => EvidenceFile::Copy { name, from },
            ProducedFile::Scratch { name, .. } => EvidenceFile::Copy { name, from: scratch },
        })
        .collect();
    store.keep_failed(run_id, fingerprint, &evidence)
}
