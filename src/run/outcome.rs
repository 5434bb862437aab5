//! What executing one step produced (how it ended is the executor
//! interface's `Ending`: `crate::executor::interface`).

use std::path::PathBuf;

use serde_json::Value;

/// A step finished: its result (stored under its fingerprint) and files.
#[derive(Debug, Default)]
pub struct Produced {
    pub result: Value,
    pub files: Vec<ProducedFile>,
    /// A gate (or decision) that evaluated to "rejected": a valid, stored
    /// result that still makes the run exit non-zero.
    pub rejected: bool,
    /// One line for the terminal.
    pub summary: String,
    /// When the step's own work began, when it first waited (for its
    /// server's turn and start): its duration counts from here.
    pub began: Option<std::time::Instant>,
    /// A stored result whose measurement a fault from outside ended
    /// early (an error storm).
    pub fault: Option<crate::executor::interface::Fault>,
}

#[derive(Debug)]
pub enum ProducedFile {
    Bytes {
        name: String,
        bytes: Vec<u8>,
    },
    Copy {
        name: String,
        from: PathBuf,
    },
    /// A file written in a scratch folder, removed with it once stored
    /// (a cell's artifact, streamed to disk so memory does not grow with it).
    Scratch {
        name: String,
        folder: tempfile::TempDir,
        file: String,
    },
}

/// A step could not produce a result; failures are never stored as
/// results, but their evidence is kept with the run (`evidence`).
#[derive(Debug)]
pub struct Failure {
    pub reason: String,
    /// Evidence worth keeping in the run record (a log tail, an exit code).
    pub detail: Option<String>,
    /// What from outside caused it, when classified (a stalled server is
    /// restarted before its next step).
    pub fault: Option<crate::executor::interface::Fault>,
    /// Files that show why (what was sent and received), kept under the
    /// store's `failed/<run_id>/<fingerprint>/`.
    pub evidence: Vec<ProducedFile>,
}

impl Failure {
    /// `reason`: its words, from a message or an error.
    pub fn new(reason: impl std::fmt::Display) -> Failure {
        Failure { reason: reason.to_string(), detail: None, fault: None, evidence: Vec::new() }
    }

    pub fn with_evidence(mut self, files: Vec<ProducedFile>) -> Failure {
        self.evidence = files;
        self
    }

    pub fn with_fault(mut self, fault: crate::executor::interface::Fault) -> Failure {
        self.fault = Some(fault);
        self
    }

    pub fn with_detail(mut self, detail: impl Into<String>) -> Failure {
        self.detail = Some(detail.into());
        self
    }
}
