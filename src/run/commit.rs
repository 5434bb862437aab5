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
