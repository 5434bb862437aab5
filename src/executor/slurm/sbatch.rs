//! The Slurm commands anvil calls: `sbatch`, `scontrol show job`, `scancel`.

use std::path::Path;
use std::process::Stdio;

use super::error::SlurmError;
use super::state::{JobInfo, parse_show_job};

/// Whether Slurm's client commands are on PATH.
pub fn available() -> bool {
    std::process::Command::new("sbatch")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Submit `script` with `args`; the job id.
pub fn submit(args: &[String], script: &Path) -> Result<String, SlurmError> {
    let output = std::process::Command::new("sbatch")
        .arg("--parsable")
        .args(args)
        .arg(script)
        .stdin(Stdio::null())
        .output()
        .map_err(|source| SlurmError::Spawn { command: "sbatch", source })?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr).trim().to_string();
        return Err(SlurmError::Sbatch { status: output.status, stderr });
    }
    let text = String::from_utf8_lossy(&output.stdout);
    // `--parsable` prints `id` or `id;cluster`.
    let id = text.trim().split(';').next().unwrap_or("").to_string();
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_digit() || c == '_') {
        return Err(SlurmError::NoJobId { stdout: text.into_owned() });
    }
    Ok(id)
}

/// The job as scontrol sees it now; `None` once Slurm has forgotten it.
pub async fn show_job(id: &str) -> Result<Option<JobInfo>, SlurmError> {
    let output = tokio::process::Command::new("scontrol")
        .args(["show", "job", "-o", id])
        .stdin(Stdio::null())
        .output()
        .await
        .map_err(|source| SlurmError::Spawn { command: "scontrol", source })?;
    let text = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        let err = String::from_utf8_lossy(&output.stderr);
        if err.contains("Invalid job id") {
            return Ok(None);
        }
        return Err(SlurmError::ShowJob { id: id.to_string(), stderr: err.trim().to_string() });
    }
    Ok(parse_show_job(&text))
}

/// The same, blocking (for code outside the async runtime's reach).
pub fn show_job_blocking(id: &str) -> Option<JobInfo> {
    let output = std::process::Command::new("scontrol")
        .args(["show", "job", "-o", id])
        .stdin(Stdio::null())
        .output()
        .ok()?;
    parse_show_job(&String::from_utf8_lossy(&output.stdout))
}

/// Cancel jobs (best effort; Slurm ignores ids of finished jobs).
pub fn cancel(ids: &[String]) -> Result<(), SlurmError> {
    if ids.is_empty() {
        return Ok(());
    }
    let output = std::process::Command::new("scancel")
        .args(ids)
        .stdin(Stdio::null())
        .output()
        .map_err(|source| SlurmError::Spawn { command: "scancel", source })?;
    if output.status.success() {
        Ok(())
    } else {
        Err(SlurmError::Scancel { stderr: String::from_utf8_lossy(&output.stderr).trim().to_string() })
    }
}

/// Quote for a POSIX shell.
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}
