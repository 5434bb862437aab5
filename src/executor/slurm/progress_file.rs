//! A worker's progress as the head reads it: `<store>/jobs/<job id>.progress.json`,
//! rewritten (atomically) whenever one of the job's steps changes state.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use super::jobs::{self, JobProgress, StepProgress};

/// The job's progress, shared by the worker and the watcher that marks steps
/// as their entries appear.
#[derive(Clone)]
pub struct ProgressFile {
    progress: Arc<Mutex<JobProgress>>,
    path: PathBuf,
}

impl ProgressFile {
    /// Job `job_id`'s progress in `store_root`, its `steps` pending; written now.
    pub fn start(
        store_root: &std::path::Path,
        job_id: &str,
        steps: &[String],
        began_ms: u64,
    ) -> ProgressFile {
        let pending = || StepProgress { state: "pending".into(), detail: String::new() };
        let progress = JobProgress {
            job_id: job_id.to_string(),
            node: anvil_store::hostname(),
            pid: std::process::id(),
            state: "running".into(),
            started_at: crate::run::now_rfc3339(),
            updated_at: crate::run::now_rfc3339(),
            steps: steps.iter().map(|name| (name.clone(), pending())).collect(),
            began_ms,
            first_step_ms: None,
        };
        let file = ProgressFile {
            progress: Arc::new(Mutex::new(progress)),
            path: jobs::progress_path(store_root, job_id),
        };
        file.update(|_| {});
        file
    }

    /// Change the progress and write it, under its lock (the watcher writes too).
    pub fn update(&self, change: impl FnOnce(&mut JobProgress)) {
        let mut progress = self.progress.lock().unwrap_or_else(|e| e.into_inner());
        change(&mut progress);
        progress.updated_at = crate::run::now_rfc3339();
        if let Err(err) = jobs::write_json(&self.path, &*progress) {
            eprintln!("anvil worker: cannot write {}: {err}", self.path.display());
        }
    }

    /// Step `name` stands at `state` (`stored`, `ran`, `failed`, …); the
    /// first step to end marks when the job's work first landed.
    pub fn step(&self, name: &str, state: &str, detail: &str) {
        self.update(|p| {
            p.steps.insert(name.to_string(), StepProgress { state: state.into(), detail: detail.into() });
            p.first_step_ms.get_or_insert_with(jobs::now_ms);
        });
    }

    /// Whether step `name` is still pending.
    pub fn pending(&self, name: &str) -> bool {
        let progress = self.progress.lock().unwrap_or_else(|e| e.into_inner());
        progress.steps.get(name).is_some_and(|s| s.state == "pending")
    }

    /// The job ended; steps still pending failed for `why`, if given.
    pub fn finish(&self, why: Option<&str>) {
        self.update(|p| {
            p.state = "finished".into();
            if let Some(why) = why {
                for step in p.steps.values_mut().filter(|s| s.state == "pending") {
                    *step = StepProgress { state: "failed".into(), detail: why.to_string() };
                }
            }
        });
    }
}

/// The job's id: as given, else Slurm's, else one naming this process.
pub fn job_id_of(given: Option<&str>) -> String {
    given
        .filter(|j| !j.is_empty())
        .map(String::from)
        .or_else(|| std::env::var("SLURM_JOB_ID").ok())
        .unwrap_or_else(|| format!("local-{}", std::process::id()))
}
