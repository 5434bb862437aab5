//! The NVIDIA driver version, part of what a GPU run's results depend on.

use std::time::Duration;

use crate::timed_command;

/// How long `nvidia-smi` may take (a wedged driver can hang it).
const NVIDIA_SMI_TIMEOUT: Duration = Duration::from_secs(10);

/// The driver version `nvidia-smi` reports for the first GPU (e.g.
/// `570.133.20`); None when `nvidia-smi` is absent, fails, hangs or prints
/// nothing.
pub fn gpu_driver() -> Option<String> {
    let program = which::which("nvidia-smi").ok()?;
    let captured = timed_command::run_captured(
        &program,
        ["--query-gpu=driver_version", "--format=csv,noheader"],
        NVIDIA_SMI_TIMEOUT,
    )
    .ok()?;
    if !captured.status.success() {
        return None;
    }
    let first = captured.stdout.lines().next()?.trim();
    (!first.is_empty()).then(|| first.to_string())
}
