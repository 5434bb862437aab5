//! Run records: what one `anvil run` did, node by node. They are the gc
//! roots: every fingerprint a record mentions is kept.

use std::fs;
use std::io;
use std::path::PathBuf;
use std::time::SystemTime;

use anvil_words::words;
use serde::{Deserialize, Serialize};

use crate::error::StoreError;
use crate::fingerprint::Fingerprint;
use crate::fsutil::{DirSync, TMP_PREFIX, fsync_dir, write_then_rename};
use crate::layout::RUN_SUFFIX;
use crate::store::{Store, read_dir_names};

/// One invocation of a recipe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// File-name safe: letters, digits, `.`, `_`, `-`; not starting with `.`.
    pub run_id: String,
    /// Key that groups runs of one recipe (the lead uses the canonical path).
    pub recipe: String,
    pub recipe_path: String,
    /// RFC 3339; runs are ordered by it.
    pub started_at: String,
    #[serde(default)]
    pub finished_at: Option<String>,
    pub status: RunStatus,
    #[serde(default)]
    pub nodes: Vec<RunNode>,
    #[serde(default)]
    pub extra: serde_json::Value,
}

/// What happened to one DAG node in a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunNode {
    pub name: String,
    pub kind: String,
    pub fingerprint: Fingerprint,
    pub status: NodeStatus,
    #[serde(default)]
    pub started_at: Option<String>,
    #[serde(default)]
    pub duration_ms: Option<u64>,
    #[serde(default)]
    pub detail: Option<String>,
}

words! {
    #[serde(other = Unknown)]
    /// How a run ended (or that it is still going).
    pub enum RunStatus {
        Running = "running",
        Succeeded = "succeeded",
        Failed = "failed",
        Interrupted = "interrupted",
        /// Written by a newer anvil (any word not above reads as this).
        Unknown = "unknown",
    }
}

words! {
    #[serde(other = Unknown)]
    /// What happened to one node in a run. Servers and `finally` steps are
    /// never stored, so their statuses say what they are.
    pub enum NodeStatus {
        /// Listed when the run starts (so gc keeps what it stores if killed).
        Planned = "planned",
        Ran = "ran",
        Cached = "cached",
        Failed = "failed",
        Skipped = "skipped",
        Server = "server",
        FinallyRan = "finally-ran",
        FinallyCached = "finally-cached",
        FinallyFailed = "finally-failed",
        FinallyRejected = "finally-rejected",
        FinallySkipped = "finally-skipped",
        /// Written by a newer anvil (any word not above reads as this).
        Unknown = "unknown",
    }
}

impl NodeStatus {
    /// Whether the node's result is in the store (as of the run).
    pub fn stored(self) -> bool {
        matches!(self, NodeStatus::Ran | NodeStatus::Cached)
    }
}

impl Store {
    /// Write (or replace) a run record atomically and durably.
    pub fn record_run(&self, run: &RunRecord) -> Result<(), StoreError> {
        self.write_run(run, DirSync::Sync)
    }

    /// [`Store::record_run`] for a run that stored nothing: the record is
    /// written whole, but its directory entry is not waited for, so after a
    /// power loss it may be missing (never partial). No result is lost with
    /// it, and a rerun that executes nothing saves two fsyncs.
    pub fn record_run_lightly(&self, run: &RunRecord) -> Result<(), StoreError> {
        self.write_run(run, DirSync::Skip)
    }

    fn write_run(&self, run: &RunRecord, sync: DirSync) -> Result<(), StoreError> {
        check_run_id(&run.run_id)?;
        let mut bytes = serde_json::to_vec_pretty(run).expect("a run record always serializes");
        bytes.push(b'\n');
        // gc removes stray temporary files; keep it out while ours exists.
        let _gate = self.shared.gc_gate.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        write_then_rename(&self.layout.runs(), &format!("{}{RUN_SUFFIX}", run.run_id), &bytes, sync)
    }

    /// One run record by id.
    pub fn run(&self, run_id: &str) -> Result<Option<RunRecord>, StoreError> {
        check_run_id(run_id)?;
        let path = self.layout.run(run_id);
        match fs::read(&path) {
            Ok(bytes) => parse_run(&bytes).map(Some).map_err(|reason| StoreError::Corrupt { path, reason }),
            Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(err) => Err(StoreError::io("read", &path)(err)),
        }
    }

    /// All run records, oldest first. Fails on an unreadable record (naming
    /// it) rather than silently hiding a run; `forget_run` removes one.
    pub fn runs(&self) -> Result<Vec<RunRecord>, StoreError> {
        let mut runs = Vec::new();
        for (path, parsed) in self.load_runs()? {
            runs.push(parsed.map_err(|reason| StoreError::Corrupt { path, reason })?);
        }
        runs.sort_by_cached_key(|run| run_order(&run.started_at, &run.run_id));
        Ok(runs)
    }

    /// The newest run whose `recipe` equals `recipe_key`. Every run of
    /// every recipe stays in `runs/`, so reading them all would make each
    /// run slower than the one before: run ids name their start time, so the
    /// records are read newest first and the first of this recipe is the
    /// answer (the head of each record read is checked against its name).
    /// One record named otherwise (hand-made) makes it read them all.
    pub fn last_run_of(&self, recipe_key: &str) -> Result<Option<RunRecord>, StoreError> {
        let dir = self.layout.runs();
        let mut by_name: Vec<(u64, String)> = Vec::new();
        for name in read_dir_names(&dir)? {
            if name.starts_with(TMP_PREFIX) || !name.ends_with(RUN_SUFFIX) {
                continue;
            }
            match stamp_from_name(&name) {
                Some(stamp) => by_name.push((stamp, name)),
                None => return self.scan_last_run_of(recipe_key),
            }
        }
        // Newest first by the stamp's digits, then the id (the run order of
        // any real date): only the records looked at pay for parsing a time.
        fn id(name: &str) -> &str {
            name.strip_suffix(RUN_SUFFIX).unwrap_or(name)
        }
        by_name.sort_unstable_by(|a, b| b.0.cmp(&a.0).then_with(|| id(&b.1).cmp(id(&a.1))));
        for (_, name) in by_name {
            let Some(order @ (Some(_), _, _)) = order_from_name(&name) else {
                // No such date (a hand-made name): its place is not the digits'.
                return self.scan_last_run_of(recipe_key);
            };
            let path = dir.join(&name);
            let bytes = fs::read(&path).map_err(StoreError::io("read", &path))?;
            let head = parse_head(&bytes, &path)?;
            if run_order(&head.started_at, &head.run_id) != order {
                return self.scan_last_run_of(recipe_key);
            }
            if head.recipe == recipe_key {
                return parse_run(&bytes).map(Some).map_err(|reason| StoreError::Corrupt { path, reason });
            }
        }
        Ok(None)
    }

    /// [`Store::last_run_of`] by reading the head of every record.
    fn scan_last_run_of(&self, recipe_key: &str) -> Result<Option<RunRecord>, StoreError> {
        let dir = self.layout.runs();
        let mut newest: Option<(RunOrder, PathBuf)> = None;
        for name in read_dir_names(&dir)? {
            if name.starts_with(TMP_PREFIX) || !name.ends_with(RUN_SUFFIX) {
                continue;
            }
            let path = dir.join(&name);
            let bytes = fs::read(&path).map_err(StoreError::io("read", &path))?;
            let head = parse_head(&bytes, &path)?;
            if head.recipe != recipe_key {
                continue;
            }
            let order = run_order(&head.started_at, &head.run_id);
            if newest.as_ref().is_none_or(|(best, _)| order > *best) {
                newest = Some((order, path));
            }
        }
        let Some((_, path)) = newest else { return Ok(None) };
        let bytes = fs::read(&path).map_err(StoreError::io("read", &path))?;
        parse_run(&bytes).map(Some).map_err(|reason| StoreError::Corrupt { path, reason })
    }

    /// Delete a run record; its entries become collectable unless another
    /// run references them.
    pub fn forget_run(&self, run_id: &str) -> Result<(), StoreError> {
        check_run_id(run_id)?;
        let path = self.layout.run(run_id);
        match fs::remove_file(&path) {
            Ok(()) => fsync_dir(&self.layout.runs()),
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                Err(StoreError::RunNotFound { run_id: run_id.to_string() })
            }
            Err(err) => Err(StoreError::io("remove", &path)(err)),
        }
    }

    /// Every `runs/*.json` with its parse outcome (temporary files skipped).
    pub(crate) fn load_runs(&self) -> Result<Vec<LoadedRun>, StoreError> {
        let dir = self.layout.runs();
        let mut loaded = Vec::new();
        for name in read_dir_names(&dir)? {
            if name.starts_with(TMP_PREFIX) || !name.ends_with(RUN_SUFFIX) {
                continue;
            }
            let path = dir.join(&name);
            let parsed = match fs::read(&path) {
                Ok(bytes) => parse_run(&bytes),
                Err(err) => Err(format!("cannot read: {err}")),
            };
            loaded.push((path, parsed));
        }
        Ok(loaded)
    }
}

/// A run record file and either its record or why it could not be read.
pub(crate) type LoadedRun = (PathBuf, Result<RunRecord, String>);

fn parse_run(bytes: &[u8]) -> Result<RunRecord, String> {
    serde_json::from_slice(bytes).map_err(|err| format!("not a valid run record: {err}"))
}

/// The fields of a run record that order it and name its recipe; serde
/// skips the rest (nodes, preimages) without building them.
#[derive(Deserialize)]
struct RunHead {
    run_id: String,
    recipe: String,
    started_at: String,
}

/// How runs are ordered: by start time, then its text, then the id.
type RunOrder = (Option<SystemTime>, String, String);

fn parse_head(bytes: &[u8], path: &std::path::Path) -> Result<RunHead, StoreError> {
    serde_json::from_slice(bytes).map_err(|err| StoreError::Corrupt {
        path: path.to_path_buf(),
        reason: format!("not a valid run record: {err}"),
    })
}

/// The digits `YYYYMMDDHHMMSS` of a record named as anvil names them,
/// `run-YYYYMMDDTHHMMSS-<pid>.json`; None for any other name. For real
/// dates their order is the order of the times they spell.
fn stamp_from_name(name: &str) -> Option<u64> {
    let run_id = name.strip_suffix(RUN_SUFFIX)?;
    let stamp = run_id.strip_prefix("run-")?.get(..15)?.as_bytes();
    if stamp[8] != b'T' || run_id.as_bytes().get(19) != Some(&b'-') {
        return None;
    }
    stamp
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != 8)
        .try_fold(0u64, |number, (_, &b)| b.is_ascii_digit().then(|| number * 10 + u64::from(b - b'0')))
}

/// The order of a record named as anvil names them (its `started_at`, to
/// the second, and its id); None for any other name.
fn order_from_name(name: &str) -> Option<RunOrder> {
    stamp_from_name(name)?;
    let run_id = name.strip_suffix(RUN_SUFFIX)?;
    let stamp = &run_id["run-".len()..];
    let started_at = format!(
        "{}-{}-{}T{}:{}:{}Z",
        &stamp[0..4],
        &stamp[4..6],
        &stamp[6..8],
        &stamp[9..11],
        &stamp[11..13],
        &stamp[13..15]
    );
    Some(run_order(&started_at, run_id))
}

fn run_order(started_at: &str, run_id: &str) -> RunOrder {
    (parse_time(started_at), started_at.to_string(), run_id.to_string())
}

/// Unparsable times sort first; ties fall back to the text.
fn parse_time(text: &str) -> Option<SystemTime> {
    humantime::parse_rfc3339_weak(text).ok()
}

fn check_run_id(run_id: &str) -> Result<(), StoreError> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    let valid =
        !run_id.is_empty() && !run_id.starts_with('.') && run_id.len() <= 200 && run_id.chars().all(allowed);
    if valid { Ok(()) } else { Err(StoreError::InvalidRunId { run_id: run_id.to_string() }) }
}
