//! The folder a run's servers write their logs to while it runs. Each log
//! a result keeps is copied into that step's store entry (a cell's
//! `server-N.log`, a failed step's evidence), so the folder itself is
//! scratch: it is made when a wave first starts a server and removed when
//! the run ends, whether it succeeded, failed or was interrupted, so runs
//! leave nothing behind in the temporary folder.

use std::path::PathBuf;

/// The run's log folder, made on first use and removed on drop.
pub(super) struct LogFolder {
    run_id: String,
    made: Option<tempfile::TempDir>,
}

impl LogFolder {
    /// The folder of run `run_id`, made on first use; folders that runs
    /// killed before they could remove theirs are removed now.
    pub fn new(run_id: &str) -> LogFolder {
        reap_abandoned();
        LogFolder { run_id: run_id.to_string(), made: None }
    }

    /// The run whose logs it holds.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The folder, made now if no earlier wave made it; on failure, the
    /// folder it could not make it in.
    pub fn path(&mut self) -> Result<PathBuf, (PathBuf, std::io::Error)> {
        if let Some(dir) = &self.made {
            return Ok(dir.path().to_path_buf());
        }
        let parent = std::env::temp_dir();
        let dir = tempfile::Builder::new()
            .prefix(&format!("anvil-{}-", self.run_id))
            .tempdir_in(&parent)
            .map_err(|source| (parent, source))?;
        let path = dir.path().to_path_buf();
        self.made = Some(dir);
        Ok(path)
    }
}

/// The prefix of a cell's scratch folder (its record log while it runs):
/// with this process's id, so a later run can tell an abandoned one.
pub(super) fn cell_scratch_prefix() -> String {
    format!("anvil-cell-{}-", std::process::id())
}

/// Remove the temporary folders of anvil processes that are gone: a run
/// killed with SIGKILL (or a Slurm job's worker killed after its grace)
/// could not remove its log folder or a cell's scratch folder. Each name
/// holds its process's id (`anvil-run-<time>-<pid>-…`, `anvil-cell-<pid>-…`);
/// a folder whose process still exists, or whose name says no process, is
/// left alone.
pub(super) fn reap_abandoned() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(owner_pid) else { continue };
        if pid != std::process::id() && !process_exists(pid) {
            // Best effort: another run may be reaping the same folder.
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// The process id in an anvil temporary folder's name, if it is one.
fn owner_pid(name: &str) -> Option<u32> {
    if let Some(rest) = name.strip_prefix("anvil-cell-") {
        return rest.split('-').next()?.parse().ok();
    }
    // `anvil-run-<yyyymmddThhmmss>-<pid>-<random>`
    let rest = name.strip_prefix("anvil-run-")?;
    let mut parts = rest.split('-');
    let _time = parts.next()?;
    parts.next()?.parse().ok()
}

fn process_exists(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else { return true };
    // Signal 0 checks existence; EPERM means it exists under another user.
    match nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None) {
        Ok(()) => true,
        Err(errno) => errno != nix::errno::Errno::ESRCH,
    }
}

#[cfg(test)]
mod tests {
    use super::owner_pid;

    #[test]
    fn the_owner_is_read_from_both_kinds_of_name() {
        assert_eq!(owner_pid("anvil-run-20261207T053310-27048-Dvsuvv"), Some(27048));
        assert_eq!(owner_pid("anvil-cell-4242-Ab3dEf"), Some(4242));
        // Older scratch folders carry no process id: never guessed at.
        assert_eq!(owner_pid("anvil-cell-IpKXal"), None);
        assert_eq!(owner_pid("anvil-slurm"), None);
        assert_eq!(owner_pid("anvil-llama-trace-30804.log"), None);
    }
}
