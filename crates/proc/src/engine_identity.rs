//! What exactly is the engine binary: its resolved path, a hash of its
//! bytes, and what it says about its version.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::error::ProcError;
use crate::timed_command;

/// How long `--version` may take before it is abandoned (some engines
/// import large Python stacks just to print a version).
pub const VERSION_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EngineIdentity {
    pub program_path: String,
    /// blake3 of the executable file's bytes, hex. For a wrapper script this
    /// is the script, not what it runs.
    pub blake3: String,
    /// stdout and stderr of the version command, trimmed; None when it
    /// failed, printed nothing, or took longer than the timeout.
    pub version_output: Option<String>,
}

/// Resolves `program` (on `PATH` if it has no `/`), hashes it, and runs
/// `<program> <version_args>` with [`VERSION_TIMEOUT`]. An engine that does
/// not understand the version flag is not an error.
pub fn engine_identity(program: &str, version_args: &[&str]) -> Result<EngineIdentity, ProcError> {
    engine_identity_with_timeout(program, version_args, VERSION_TIMEOUT)
}

pub fn engine_identity_with_timeout(
    program: &str,
    version_args: &[&str],
    timeout: Duration,
) -> Result<EngineIdentity, ProcError> {
    let path = resolve(program)?;
    let blake3 = hash_file(&path)?;
    let version_output =
        if version_args.is_empty() { None } else { version_output(&path, version_args, timeout) };
    Ok(EngineIdentity { program_path: path.display().to_string(), blake3, version_output })
}

pub(crate) fn resolve(program: &str) -> Result<PathBuf, ProcError> {
    let found = if program.contains('/') {
        std::fs::canonicalize(program).map_err(|e| e.to_string())
    } else {
        which::which(program).map_err(|e| e.to_string())
    };
    found.map_err(|reason| ProcError::ProgramNotFound { program: program.to_string(), reason })
}

fn hash_file(path: &Path) -> Result<String, ProcError> {
    let mut hasher = blake3::Hasher::new();
    hasher
        .update_reader(
            std::fs::File::open(path)
                .map_err(|source| ProcError::Hash { path: path.to_path_buf(), source })?,
        )
        .map_err(|source| ProcError::Hash { path: path.to_path_buf(), source })?;
    Ok(hasher.finalize().to_hex().to_string())
}

fn version_output(path: &Path, args: &[&str], timeout: Duration) -> Option<String> {
    let captured = timed_command::run_captured(path, args, timeout).ok()?;
    let (out, err) = (captured.stdout, captured.stderr);
    let combined =
        [out.trim(), err.trim()].into_iter().filter(|s| !s.is_empty()).collect::<Vec<_>>().join("\n");
    (!combined.is_empty()).then_some(combined)
}
