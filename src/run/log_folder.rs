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
    pub fn new(run_id: &str) -> LogFolder {
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
