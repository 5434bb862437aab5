//! A result that cannot be stored because the store's disk is full (or over
//! quota, or failing): what to tell the user. Nothing of the step is
//! visible in the store (its staging folder is removed), every entry stored
//! before stays, and a rerun once there is space runs only this step and
//! what had not run.

use std::path::Path;

use anvil_store::StoreError;

use super::outcome::{Failure, Produced, ProducedFile};
use crate::executor::interface::Fault;

/// The step's failure, worded and classified for a full disk when that is what it was.
pub(super) fn commit_failure(store_root: &Path, produced: &Produced, err: &StoreError) -> Failure {
    let Some(kind) = disk_trouble(err) else { return Failure::new(format!("storing the result: {err}")) };
    let needed = bytes_of(produced);
    let free = free_bytes(store_root).map_or("unknown".to_string(), human);
    Failure::new(format!(
        "storing the result: {kind} on the store's disk ({}: {free} free; this step's results need {}). \
         Nothing of this step was stored and every step stored before is kept: free space (`anvil gc` removes \
         unreferenced entries) and run again; only what is not stored runs. ({err})",
        store_root.display(),
        human(needed)
    ))
    .with_fault(Fault::DiskFull)
}

/// "no space left", "over its quota" or "an I/O error", when the error is one.
fn disk_trouble(err: &StoreError) -> Option<&'static str> {
    let StoreError::Io { source, .. } = err else { return None };
    match source.kind() {
        std::io::ErrorKind::StorageFull => Some("no space left"),
        std::io::ErrorKind::QuotaExceeded => Some("the disk quota is exceeded"),
        _ if source.raw_os_error() == Some(nix::libc::EIO) => Some("an I/O error"),
        _ => None,
    }
}

/// What the step's entry holds: its result and its files.
fn bytes_of(produced: &Produced) -> u64 {
    let size = |path: &Path| std::fs::metadata(path).map_or(0, |m| m.len());
    let files: u64 = produced
        .files
        .iter()
        .map(|file| match file {
            ProducedFile::Bytes { bytes, .. } => bytes.len() as u64,
            ProducedFile::Copy { from, .. } => size(from),
            ProducedFile::Scratch { folder, file, .. } => size(&folder.path().join(file)),
        })
        .sum();
    files + serde_json::to_vec(&produced.result).map_or(0, |b| b.len() as u64)
}

fn free_bytes(path: &Path) -> Option<u64> {
    let stats = nix::sys::statvfs::statvfs(path).ok()?;
    Some(stats.blocks_available().saturating_mul(stats.fragment_size()))
}

fn human(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 { format!("{bytes} B") } else { format!("{value:.1} {}", UNITS[unit]) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_a_person_would_say_them() {
        assert_eq!(human(512), "512 B");
        assert_eq!(human(1536), "1.5 KiB");
        assert_eq!(human(5 * 1024 * 1024), "5.0 MiB");
    }

    #[test]
    fn only_a_full_or_failing_disk_is_worded_so() {
        let io =
            |kind| StoreError::Io { action: "write", path: "/x".into(), source: std::io::Error::from(kind) };
        assert_eq!(disk_trouble(&io(std::io::ErrorKind::StorageFull)), Some("no space left"));
        assert_eq!(disk_trouble(&io(std::io::ErrorKind::PermissionDenied)), None);
        let eio = StoreError::Io {
            action: "write",
            path: "/x".into(),
            source: std::io::Error::from_raw_os_error(5),
        };
        assert_eq!(disk_trouble(&eio), Some("an I/O error"));
    }
}
