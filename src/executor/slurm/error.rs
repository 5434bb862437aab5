//! Why a Slurm command did not do what anvil asked of it.

use std::process::ExitStatus;

#[derive(Debug, thiserror::Error)]
pub enum SlurmError {
    /// A step's settings wait for upstream results: its group is not known
    /// when the run starts (`step`: its qualified name).
    #[error(
        "{step} waits for {waits_for}: steps whose settings read upstream results are not supported under \
         --executor slurm yet (run those upstream steps first, or run here)"
    )]
    WaitsForUpstream { step: String, waits_for: String },
    #[error("--executor slurm: `sbatch` is not on PATH (is this a Slurm login node?)")]
    NoSbatch,
    /// What the head needs of this process: `what` is "the anvil binary's path" or "the current folder".
    #[error("{what}: {source}")]
    Process {
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
    /// `sbatch`, `scontrol` or `scancel` could not be started (not on PATH, …).
    #[error("cannot run {command}: {source}")]
    Spawn {
        command: &'static str,
        #[source]
        source: std::io::Error,
    },
    /// `sbatch` refused the job; `stderr` is what it said.
    #[error("sbatch failed ({status}): {stderr}")]
    Sbatch { status: ExitStatus, stderr: String },
    /// `sbatch` succeeded but printed no job id anvil can follow.
    #[error("sbatch printed no job id: {stdout:?}")]
    NoJobId { stdout: String },
    /// `scontrol show job` failed for another reason than a forgotten job.
    #[error("scontrol show job {id}: {stderr}")]
    ShowJob { id: String, stderr: String },
    #[error("scancel failed: {stderr}")]
    Scancel { stderr: String },
    /// `anvil cancel`: the store knows no job of the run.
    #[error("no Slurm jobs are recorded for run {run_id}")]
    NoJobs { run_id: String },
}
