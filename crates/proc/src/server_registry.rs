//! Live-server records on disk, so that a later anvil can find and kill
//! servers whose anvil died without cleaning up (`kill -9`, OOM, power cut
//! of the terminal), and the reaper that does it.
//!
//! One JSON file per server: `<registry_dir>/<anvil_pid>-<server_pid>.json`,
//! written atomically (temporary file, then rename) right after spawn and
//! removed when the server is stopped.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use nix::sys::signal::Signal;
use serde::{Deserialize, Serialize};

use crate::error::ProcError;
use crate::proc_table;

/// What anvil remembers about a server it launched.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ServerRecord {
    pub name: String,
    pub anvil_pid: i32,
    /// Start time of the anvil process, to tell it from a recycled pid.
    pub anvil_start_ticks: u64,
    /// The server's own pid; it leads its process group (`pgid == pid`).
    pub pid: i32,
    pub pid_start_ticks: u64,
    pub pgid: i32,
    /// Value of `ANVIL_SERVER_TOKEN` in the server's environment.
    pub token: String,
    pub boot_id: String,
    /// Milliseconds since the Unix epoch.
    pub started_unix_ms: u64,
    pub program: String,
    pub port: u16,
}

impl ServerRecord {
    pub fn file_name(&self) -> String {
        format!("{}-{}.json", self.anvil_pid, self.pid)
    }
}

/// Writes the record into `dir` (created if needed) and returns its path.
pub fn write_record(dir: &Path, record: &ServerRecord) -> Result<PathBuf, ProcError> {
    let io_err = |source| ProcError::Io { what: "server registry", path: dir.to_path_buf(), source };
    let path = dir.join(record.file_name());
    let staging = dir.join(format!(".{}.tmp", record.file_name()));
    let json = serde_json::to_vec_pretty(record).map_err(|e| io_err(e.into()))?;
    // Another anvil removes the folder when its last record goes
    // (`remove_record`): made again if it vanished between the two calls.
    let mut tries = 0;
    loop {
        fs::create_dir_all(dir).map_err(io_err)?;
        match fs::write(&staging, &json) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && tries < 3 => tries += 1,
            written => break written.map_err(io_err)?,
        }
    }
    fs::rename(&staging, &path).map_err(io_err)?;
    Ok(path)
}

/// Removes a record, and the registry folder with it when it was the last
/// one, so runs leave nothing in the temporary folder.
pub fn remove_record(path: &Path) {
    // Already gone is fine: the reaper of another anvil may have removed it.
    let _ = fs::remove_file(path);
    // Fails, as it should, while any other record (or a record being
    // written) is in the folder.
    if let Some(dir) = path.parent() {
        let _ = fs::remove_dir(dir);
    }
}

pub(crate) fn now_unix_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// One record the reaper dealt with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReapedServer {
    pub name: String,
    pub anvil_pid: i32,
    pub pgid: i32,
    /// Processes that were still running and got SIGKILL (empty when the
    /// server had already died and only the record was stale).
    pub killed_pids: Vec<i32>,
}

/// Run once when anvil starts: for every record whose anvil is dead, kill
/// what is left of that server and remove the record. Records of a live
/// anvil (a concurrent run) are left alone.
///
/// A process is killed only when it is provably the one anvil started: it
/// carries the record's token in its environment, or it is the recorded
/// leader with the recorded start time. A recycled pid or process group
/// id therefore never gets a signal.
pub fn reap_orphans(registry_dir: &Path) -> Vec<ReapedServer> {
    let Ok(entries) = fs::read_dir(registry_dir) else {
        return Vec::new();
    };
    let this_boot = proc_table::boot_id();
    let mut reaped = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|ext| ext != "json") {
            continue;
        }
        let Some(record) =
            fs::read(&path).ok().and_then(|bytes| serde_json::from_slice::<ServerRecord>(&bytes).ok())
        else {
            continue; // not ours or unreadable: leave it for a human
        };
        if record.boot_id == this_boot
            && proc_table::is_same_process(record.anvil_pid, record.anvil_start_ticks)
        {
            continue; // its anvil is alive and responsible for it
        }
        let killed_pids = if record.boot_id == this_boot {
            kill_recorded_server(&record)
        } else {
            Vec::new() // a reboot killed everything already
        };
        remove_record(&path);
        reaped.push(ReapedServer {
            name: record.name,
            anvil_pid: record.anvil_pid,
            pgid: record.pgid,
            killed_pids,
        });
    }
    reaped
}

fn kill_recorded_server(record: &ServerRecord) -> Vec<i32> {
    let group_is_ours = proc_table::group_members(record.pgid).iter().any(|p| {
        proc_table::has_token(p.pid, &record.token)
            || (p.pid == record.pid && p.start_ticks == record.pid_start_ticks)
    });
    let group = group_is_ours.then_some(record.pgid);
    let tree = proc_table::server_tree(group, &record.token);
    if let Some(pgid) = group {
        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pgid), Signal::SIGKILL);
    }
    for pid in &tree {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(*pid), Signal::SIGKILL);
    }
    tree
}
