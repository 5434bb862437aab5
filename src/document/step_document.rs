//! The step document itself: its key, its fingerprint, how it is run, and
//! reading one back with its key checked against its fingerprint.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anvil_store::Fingerprint;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::cell::CellExec;
use super::check::CheckExec;
use super::decision::DecisionExec;
use super::error::DocumentError;
use super::format::STEP_DOCUMENT_FORMAT;
use super::gate::GateExec;
use super::screen::ScreenExec;
use super::server::ServerExec;
use super::task::TaskExec;

/// One step, planned: what it is, what identifies it, and how to run it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StepDocument {
    pub format: String,
    pub name: String,
    /// The step's kind (`cell`, `server`, `gate`, …).
    pub kind: String,
    /// blake3 (derive-key, `FINGERPRINT_CONTEXT`) of `key`'s canonical bytes.
    pub fingerprint: String,
    /// The step's preimage: everything its result depends on, hashed.
    pub key: Value,
    /// How to run it, not hashed: what follows from the key and the
    /// planning machine (resolved defaults, absolute paths).
    pub exec: Exec,
}

/// How each kind of step is run.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "runs", rename_all = "snake_case")]
pub enum Exec {
    Server(Box<ServerExec>),
    Cell(Box<CellExec>),
    Check(Box<CheckExec>),
    /// A `task` or `finally` step's command.
    Task(Box<TaskExec>),
    Gate(Box<GateExec>),
    Screen(Box<ScreenExec>),
    Decision(Box<DecisionExec>),
    /// A step an executor cannot yet run from its document alone (a
    /// search): its declaration as
    /// written, and the fingerprints of the steps it reads, so a reader
    /// sees what it is and what it depends on.
    Declared {
        declaration: String,
        reads: BTreeMap<String, String>,
    },
}

impl StepDocument {
    /// The fingerprint this document's key hashes to.
    pub fn key_fingerprint(&self) -> Fingerprint {
        crate::plan::fingerprint_of(&self.key)
    }

    /// Read and check a document: its format is this anvil's and its key
    /// hashes to the fingerprint it claims.
    pub fn read(path: &Path) -> Result<StepDocument, DocumentError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| DocumentError::Io { path: path.to_path_buf(), source })?;
        let document: StepDocument = serde_json::from_str(&text)
            .map_err(|source| DocumentError::Parse { path: path.to_path_buf(), source })?;
        if document.format != STEP_DOCUMENT_FORMAT {
            return Err(DocumentError::Format { path: path.to_path_buf(), found: document.format });
        }
        let hashed = document.key_fingerprint().to_string();
        if hashed != document.fingerprint {
            return Err(DocumentError::KeyMismatch {
                path: path.to_path_buf(),
                claimed: document.fingerprint,
                hashed,
            });
        }
        Ok(document)
    }

    /// Check that each file the key names still has the content it had
    /// when planned (paths as written, from `workdir`): a document names
    /// a configuration, and a changed trace is another one.
    pub fn check_inputs(&self, path: &Path, workdir: &Path) -> Result<(), DocumentError> {
        let files = self.key.get("files").and_then(Value::as_object);
        for (written, planned) in files.into_iter().flatten() {
            // `tokenizer PATH` names the tokenizer's file by its role.
            let file = written.strip_prefix("tokenizer ").unwrap_or(written);
            let now = crate::plan::file_digest(&workdir.join(file));
            if &now != planned {
                return Err(DocumentError::InputChanged {
                    path: path.to_path_buf(),
                    file: written.clone(),
                    planned: planned.as_str().unwrap_or_default().to_string(),
                    now: now.as_str().unwrap_or_default().to_string(),
                });
            }
        }
        Ok(())
    }

    /// Whether its rejection fails the run: a gate's or check's
    /// `blocking #false` says not; every other step's does.
    pub fn blocking(&self) -> bool {
        match &self.exec {
            Exec::Gate(gate) => gate.blocking,
            Exec::Check(check) => check.blocking,
            _ => true,
        }
    }

    /// The file name a document is written under in an emitted folder.
    pub fn file_name(fingerprint: &str) -> String {
        format!("{fingerprint}.json")
    }

    /// Where a store keeps the documents of its runs and jobs.
    pub fn folder_in(store_root: &Path) -> PathBuf {
        store_root.join("documents")
    }

    /// Write it into `dir` under its fingerprint, atomically (a node may
    /// read it while another head writes the same one).
    pub fn write_into(&self, dir: &Path) -> Result<PathBuf, String> {
        let path = dir.join(StepDocument::file_name(&self.fingerprint));
        let text = serde_json::to_string_pretty(self).map_err(|e| format!("{}: {e}", path.display()))?;
        let staged = dir.join(format!(".{}.{}", self.fingerprint, std::process::id()));
        std::fs::write(&staged, text + "\n").map_err(|e| format!("writing {}: {e}", staged.display()))?;
        std::fs::rename(&staged, &path).map_err(|e| format!("writing {}: {e}", path.display()))?;
        Ok(path)
    }
}
