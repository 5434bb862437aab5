//! `verify`: rehash every entry against its manifest and look for anything
//! in the store that should not be there.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::StoreError;
use crate::fingerprint::{Fingerprint, is_lower_hex};
use crate::fsutil::{TMP_PREFIX, is_real_dir};
use crate::layout::{LOCK_SUFFIX, Layout, MANIFEST_FILE};
use crate::manifest::{Manifest, hash_file, walk};
use crate::node_lock::is_lock_free;
use crate::report_path::{lossy, lossy_list};
use crate::store::{Store, parse_entry_name};

/// Outcome of [`Store::verify`].
#[derive(Debug, Clone, Default, Serialize)]
pub struct VerifyReport {
    pub entries_checked: usize,
    pub files_checked: usize,
    pub bytes_checked: u64,
    /// Damage: anything here means results may not be trustworthy.
    pub problems: Vec<Problem>,
    /// Harmless remains of interrupted writes (staging directories of dead
    /// processes, temporary files); `gc` removes them.
    #[serde(serialize_with = "lossy_list")]
    pub leftovers: Vec<PathBuf>,
    /// Entries a live process is writing right now.
    #[serde(serialize_with = "lossy_list")]
    pub in_progress: Vec<PathBuf>,
}

impl VerifyReport {
    pub fn is_clean(&self) -> bool {
        self.problems.is_empty()
    }
}

/// One thing wrong in the store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    #[serde(serialize_with = "lossy")]
    pub path: PathBuf,
    /// The entry the problem belongs to, if any.
    pub fingerprint: Option<Fingerprint>,
    #[serde(flatten)]
    pub kind: ProblemKind,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ProblemKind {
    /// A file's bytes no longer hash to what the manifest recorded.
    ContentMismatch { expected_blake3: String, actual_blake3: String, expected_bytes: u64, actual_bytes: u64 },
    /// The manifest lists a file that is gone.
    MissingFile,
    /// A file in an entry that the manifest does not list, or one that
    /// cannot be an entry file (symlink, non-UTF-8 name, device...).
    UnexpectedFile { reason: String },
    /// The manifest is missing, unparsable, or names another fingerprint.
    BadManifest { reason: String },
    /// A file could not be read at all.
    Unreadable { reason: String },
    /// Something in the store layout that the store never creates.
    StrayPath { reason: String },
    /// A run record that cannot be parsed (gc refuses to run until it is
    /// fixed or forgotten, since its roots are unknown).
    BadRunRecord { reason: String },
    /// A run says a node ran or was cached, but its entry is gone.
    MissingReferencedEntry { run_id: String, node: String },
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = self.path.display();
        match &self.kind {
            ProblemKind::ContentMismatch { expected_blake3, actual_blake3, expected_bytes, actual_bytes } => {
                write!(
                    f,
                    "{path}: content changed (manifest: {expected_bytes} bytes, blake3 {expected_blake3}; \
                 found: {actual_bytes} bytes, blake3 {actual_blake3})"
                )
            }
            ProblemKind::MissingFile => write!(f, "{path}: missing (listed in the manifest)"),
            ProblemKind::UnexpectedFile { reason } => {
                write!(f, "{path}: unexpected file: {reason}")
            }
            ProblemKind::BadManifest { reason } => write!(f, "{path}: bad manifest: {reason}"),
            ProblemKind::Unreadable { reason } => write!(f, "{path}: unreadable: {reason}"),
            ProblemKind::StrayPath { reason } => {
                write!(f, "{path}: does not belong in the store: {reason}")
            }
            ProblemKind::BadRunRecord { reason } => write!(f, "{path}: bad run record: {reason}"),
            ProblemKind::MissingReferencedEntry { run_id, node } => {
                write!(f, "{path}: run {run_id} node {node:?} has no stored entry")
            }
        }
    }
}

impl Store {
    /// Check the whole store. Never fails because of what it finds inside
    /// the store (that goes into the report); fails only if the store's own
    /// directories cannot be listed.
    pub fn verify(&self) -> Result<VerifyReport, StoreError> {
        let mut report = VerifyReport::default();
        self.verify_top_level(&mut report)?;
        self.verify_entries(&mut report)?;
        self.verify_staging(&mut report)?;
        self.verify_runs(&mut report)?;
        Ok(report)
    }

    /// Rehash one entry; an empty list means it is intact. An absent entry
    /// is reported as a missing manifest.
    pub fn verify_entry(&self, fp: &Fingerprint) -> Vec<Problem> {
        let mut report = VerifyReport::default();
        check_entry(&self.layout.entry(fp), fp, &mut report);
        report.problems
    }

    fn verify_top_level(&self, report: &mut VerifyReport) -> Result<(), StoreError> {
        for (name, path) in list_raw(self.root())? {
            match name.to_str() {
                Some(name) if name.starts_with(TMP_PREFIX) => report.leftovers.push(path),
                Some(name) if Layout::is_known_top_level_name(name) => {}
                _ => report.problems.push(stray(path, "not part of the store layout")),
            }
        }
        Ok(())
    }

    fn verify_entries(&self, report: &mut VerifyReport) -> Result<(), StoreError> {
        for (shard_name, shard_path) in list_raw(&self.layout.entries())? {
            let shard = match shard_name.to_str() {
                Some(shard) if shard.len() == 2 && is_lower_hex(shard) && is_real_dir(&shard_path) => {
                    shard.to_string()
                }
                _ => {
                    report.problems.push(stray(shard_path, "entries/ holds only two-hex-digit directories"));
                    continue;
                }
            };
            let children = match list_raw(&shard_path) {
                Ok(children) => children,
                Err(err) => {
                    report.problems.push(unreadable(shard_path, &err));
                    continue;
                }
            };
            for (name, path) in children {
                let fingerprint = name.to_str().and_then(|name| parse_entry_name(&shard, name));
                match fingerprint {
                    Some(fp) if is_real_dir(&path) => check_entry(&path, &fp, report),
                    _ => report.problems.push(stray(path, "not an entry directory named by its fingerprint")),
                }
            }
        }
        Ok(())
    }

    fn verify_staging(&self, report: &mut VerifyReport) -> Result<(), StoreError> {
        let staging = self.layout.staging();
        for (name, path) in list_raw(&staging)? {
            let name = name.to_string_lossy();
            let lock_path = match name.strip_suffix(LOCK_SUFFIX) {
                Some(_) => path.clone(),
                None => staging.join(format!("{name}{LOCK_SUFFIX}")),
            };
            let live = lock_path.is_file() && matches!(is_lock_free(&lock_path), Ok(false));
            if live {
                report.in_progress.push(path);
            } else {
                report.leftovers.push(path);
            }
        }
        Ok(())
    }

    fn verify_runs(&self, report: &mut VerifyReport) -> Result<(), StoreError> {
        for (name, path) in list_raw(&self.layout.runs())? {
            if name.to_str().is_some_and(|name| name.starts_with(TMP_PREFIX)) {
                report.leftovers.push(path);
            }
        }
        for (path, parsed) in self.load_runs()? {
            let run = match parsed {
                Ok(run) => run,
                Err(reason) => {
                    report.problems.push(Problem {
                        path,
                        fingerprint: None,
                        kind: ProblemKind::BadRunRecord { reason },
                    });
                    continue;
                }
            };
            for node in &run.nodes {
                let should_exist = node.status.stored();
                if should_exist && !self.contains(&node.fingerprint) {
                    report.problems.push(Problem {
                        path: path.clone(),
                        fingerprint: Some(node.fingerprint),
                        kind: ProblemKind::MissingReferencedEntry {
                            run_id: run.run_id.clone(),
                            node: node.name.clone(),
                        },
                    });
                }
            }
        }
        Ok(())
    }
}

/// Check one entry directory against its manifest, adding to `report`.
fn check_entry(dir: &Path, fp: &Fingerprint, report: &mut VerifyReport) {
    report.entries_checked += 1;
    let problem = |path: PathBuf, kind| Problem { path, fingerprint: Some(*fp), kind };
    let manifest_path = dir.join(MANIFEST_FILE);
    let manifest = match Manifest::load(dir) {
        Ok(manifest) => manifest,
        Err(err) => {
            let reason = match err {
                StoreError::Corrupt { reason, .. } => reason,
                StoreError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                    "manifest.json is missing".to_string()
                }
                other => other.to_string(),
            };
            report.problems.push(problem(manifest_path, ProblemKind::BadManifest { reason }));
            return;
        }
    };
    if manifest.fingerprint != *fp {
        let reason = format!("names fingerprint {} but lives under {fp}", manifest.fingerprint);
        report.problems.push(problem(manifest_path, ProblemKind::BadManifest { reason }));
    }

    let found = match walk(dir) {
        Ok(found) => found,
        Err(err) => {
            report
                .problems
                .push(problem(dir.to_path_buf(), ProblemKind::Unreadable { reason: err.to_string() }));
            return;
        }
    };
    for (path, reason) in found.oddities {
        report.problems.push(problem(path, ProblemKind::UnexpectedFile { reason: reason.to_string() }));
    }
    let listed: BTreeSet<&str> = manifest.files.iter().map(|file| file.name.as_str()).collect();
    for (name, path) in &found.files {
        if !listed.contains(name.as_str()) {
            let reason = "not listed in the manifest".to_string();
            report.problems.push(problem(path.clone(), ProblemKind::UnexpectedFile { reason }));
        }
    }

    for file in &manifest.files {
        let path = dir.join(&file.name);
        if !path.is_file() || path.is_symlink() {
            // A symlink or directory in its place is already reported by the walk.
            if !path.exists() {
                report.problems.push(problem(path, ProblemKind::MissingFile));
            }
            continue;
        }
        match hash_file(&path) {
            Ok((actual_blake3, actual_bytes)) => {
                report.files_checked += 1;
                report.bytes_checked += actual_bytes;
                if actual_blake3 != file.blake3 || actual_bytes != file.bytes {
                    report.problems.push(problem(
                        path,
                        ProblemKind::ContentMismatch {
                            expected_blake3: file.blake3.clone(),
                            actual_blake3,
                            expected_bytes: file.bytes,
                            actual_bytes,
                        },
                    ));
                }
            }
            Err(err) => {
                report.problems.push(problem(path, ProblemKind::Unreadable { reason: err.to_string() }))
            }
        }
    }
}

/// Every name in `dir`, UTF-8 or not, sorted.
fn list_raw(dir: &Path) -> Result<Vec<(OsString, PathBuf)>, StoreError> {
    let reader = fs::read_dir(dir).map_err(StoreError::io("list", dir))?;
    let mut items = Vec::new();
    for item in reader {
        let item = item.map_err(StoreError::io("list", dir))?;
        items.push((item.file_name(), item.path()));
    }
    items.sort();
    Ok(items)
}

fn stray(path: PathBuf, reason: &str) -> Problem {
    Problem { path, fingerprint: None, kind: ProblemKind::StrayPath { reason: reason.to_string() } }
}

fn unreadable(path: PathBuf, err: &StoreError) -> Problem {
    Problem { path, fingerprint: None, kind: ProblemKind::Unreadable { reason: err.to_string() } }
}
