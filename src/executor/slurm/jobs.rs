//! What the store knows about Slurm jobs: `<store>/jobs/<id>.json`, written
//! by the head when it submits (so a new head finds the jobs of a dead one),
//! and `<store>/jobs/<id>.progress.json`, rewritten by the worker as its
//! steps go. Both are written atomically (temporary file, rename).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// A submitted job, as the head recorded it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct JobRecord {
    pub job_id: String,
    pub run_id: String,
    pub recipe: String,
    /// What the job holds: `server sim-step4` or `task environment`.
    pub label: String,
    pub steps: Vec<JobStep>,
    pub gpus: u64,
    pub submitted_at: String,
    /// The same, in milliseconds since the epoch (for the overhead figures).
    #[serde(default)]
    pub submitted_ms: u64,
    pub log: PathBuf,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct JobStep {
    pub name: String,
    pub fingerprint: String,
}

/// A worker's progress.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct JobProgress {
    pub job_id: String,
    pub node: String,
    pub pid: u32,
    /// `running` or `finished`.
    pub state: String,
    pub started_at: String,
    pub updated_at: String,
    /// Step name → how it stands: `pending`, `stored`, or its ending
    /// (`ran`, `cached`, `failed`, `rejected`, `skipped`) with the detail.
    pub steps: BTreeMap<String, StepProgress>,
    /// When the worker got its allocation and when its first step ended (ms since the epoch).
    #[serde(default)]
    pub began_ms: u64,
    #[serde(default)]
    pub first_step_ms: Option<u64>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct StepProgress {
    pub state: String,
    #[serde(default)]
    pub detail: String,
}

pub fn jobs_dir(store_root: &Path) -> PathBuf {
    store_root.join("jobs")
}

pub fn record_path(store_root: &Path, job_id: &str) -> PathBuf {
    jobs_dir(store_root).join(format!("{job_id}.json"))
}

pub fn progress_path(store_root: &Path, job_id: &str) -> PathBuf {
    jobs_dir(store_root).join(format!("{job_id}.progress.json"))
}

pub fn write_json<T: Serialize>(path: &Path, value: &T) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(
        ".tmp-{}-{}",
        std::process::id(),
        path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
    ));
    let mut bytes = serde_json::to_vec_pretty(value).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    std::fs::write(&tmp, bytes)?;
    std::fs::File::open(&tmp)?.sync_all()?;
    std::fs::rename(&tmp, path)
}

pub fn read_record(store_root: &Path, job_id: &str) -> Option<JobRecord> {
    serde_json::from_slice(&std::fs::read(record_path(store_root, job_id)).ok()?).ok()
}

pub fn read_progress(store_root: &Path, job_id: &str) -> Option<JobProgress> {
    serde_json::from_slice(&std::fs::read(progress_path(store_root, job_id)).ok()?).ok()
}

/// Every job record in the store.
pub fn all_records(store_root: &Path) -> Vec<JobRecord> {
    let Ok(dir) = std::fs::read_dir(jobs_dir(store_root)) else { return Vec::new() };
    let mut records: Vec<JobRecord> = dir
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let id = name.strip_suffix(".json")?;
            if id.contains('.') || id.starts_with('.') {
                return None;
            }
            read_record(store_root, id)
        })
        .collect();
    records.sort_by(|a, b| a.submitted_at.cmp(&b.submitted_at).then(a.job_id.cmp(&b.job_id)));
    records
}

/// The last `lines` lines of a file (a job's log).
pub fn tail(path: &Path, lines: usize) -> String {
    let Ok(text) = std::fs::read_to_string(path) else { return String::new() };
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// One job as the run record lists it (`extra.jobs`): what it ran, how it
/// ended and its overheads.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct JobSummary {
    pub job_id: String,
    pub label: String,
    /// The steps it ran, by name.
    pub steps: Vec<String>,
    pub state: String,
    pub nodes: String,
    /// Found running from an earlier head rather than submitted by this one.
    pub adopted: bool,
    pub log: PathBuf,
    /// Submit → the worker started on its node.
    pub start_latency_ms: Option<u64>,
    /// Submit → its first step ended.
    pub first_step_ms: Option<u64>,
}
