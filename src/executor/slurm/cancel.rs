//! `anvil cancel RUN_ID`: cancel the Slurm jobs of a run (its head may be gone).

use anvil_store::Store;

use super::error::SlurmError;
use super::{jobs, sbatch};

/// Cancel what of run `run_id` is queued or running; Err when the store knows no job of it.
pub fn cancel(store: &Store, run_id: &str) -> Result<i32, SlurmError> {
    let mut ids: Vec<String> = jobs::all_records(store.root())
        .into_iter()
        .filter(|r| r.run_id == run_id)
        .map(|r| r.job_id)
        .collect();
    // The run record names them too once the head has finished.
    if let Some(record) = store.runs().unwrap_or_default().into_iter().find(|r| r.run_id == run_id) {
        let recorded = crate::run_extra::RunExtra::of(&record).jobs;
        let listed: Vec<jobs::JobSummary> =
            recorded.and_then(|j| serde_json::from_value(j).ok()).unwrap_or_default();
        for job in listed {
            if !ids.contains(&job.job_id) {
                ids.push(job.job_id);
            }
        }
    }
    if ids.is_empty() {
        return Err(SlurmError::NoJobs { run_id: run_id.to_string() });
    }
    let live: Vec<String> = ids
        .into_iter()
        .filter(|id| sbatch::show_job_blocking(id).is_some_and(|info| !info.state.is_terminal()))
        .collect();
    if live.is_empty() {
        println!("no job of run {run_id} is queued or running");
        return Ok(0);
    }
    sbatch::cancel(&live)?;
    println!("cancelled slurm jobs {} of run {run_id}", live.join(" "));
    Ok(0)
}
