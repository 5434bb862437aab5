//! The evidence of steps that failed: what was sent and received, and why,
//! kept per run under `failed/<run_id>/<fingerprint>/`. Never under the
//! fingerprint's entry, so a failure is never taken for a cached result; a
//! rerun runs the step again. `gc` keeps a run's evidence while its run
//! record exists.

use std::path::{Path, PathBuf};

use crate::error::StoreError;
use crate::fingerprint::Fingerprint;
use crate::fsutil::{atomic_write, is_real_dir, remove_any, tree_size};
use crate::layout::FAILED_DIR;
use crate::store::Store;

/// One file of a failed step's evidence.
pub enum EvidenceFile<'a> {
    Bytes {
        name: &'a str,
        bytes: &'a [u8],
    },
    /// Copied from a file that exists now (a scratch artifact, a server log).
    Copy {
        name: &'a str,
        from: &'a Path,
    },
}

impl Store {
    /// Where run `run_id` keeps the evidence of its failed step `fp`.
    pub fn failed_dir(&self, run_id: &str, fp: &Fingerprint) -> PathBuf {
        self.layout.root().join(FAILED_DIR).join(run_id).join(fp.to_string())
    }

    /// Keeps `files` as the evidence of step `fp`'s failure in run `run_id`
    /// (each written atomically); returns the folder.
    pub fn keep_failed(
        &self,
        run_id: &str,
        fp: &Fingerprint,
        files: &[EvidenceFile<'_>],
    ) -> Result<PathBuf, StoreError> {
        let dir = self.failed_dir(run_id, fp);
        std::fs::create_dir_all(&dir).map_err(StoreError::io("create", &dir))?;
        for file in files {
            match file {
                EvidenceFile::Bytes { name, bytes } => atomic_write(&dir, name, bytes)?,
                EvidenceFile::Copy { name, from } => {
                    let bytes = std::fs::read(from).map_err(StoreError::io("read", *from))?;
                    atomic_write(&dir, name, &bytes)?;
                }
            }
        }
        Ok(dir)
    }

    /// The evidence folders of runs whose record is gone: what `gc` frees.
    pub(crate) fn orphaned_failures(&self) -> Result<Vec<(PathBuf, u64)>, StoreError> {
        let root = self.layout.root().join(FAILED_DIR);
        if !is_real_dir(&root) {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        for entry in std::fs::read_dir(&root).map_err(StoreError::io("read", &root))?.flatten() {
            let run_id = entry.file_name().to_string_lossy().into_owned();
            if !self.layout.run(&run_id).exists() {
                out.push((entry.path(), tree_size(&entry.path())));
            }
        }
        Ok(out)
    }

    pub(crate) fn remove_failures(&self, dirs: &[(PathBuf, u64)]) -> Result<(), StoreError> {
        for (dir, _) in dirs {
            remove_any(dir).map_err(StoreError::io("remove", dir))?;
        }
        Ok(())
    }
}
