//! Small filesystem helpers: durable writes, directory fsync, sizes.
//!
//! Durability recipe used throughout the store: write a file, fsync it,
//! rename it into place, then fsync the directory that holds the new name.
//! Without the last step a crash can lose the rename even though the data
//! blocks reached the disk.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::error::StoreError;

/// Flush a file's data and metadata to disk.
pub(crate) fn fsync_file(path: &Path) -> Result<(), StoreError> {
    let file = File::open(path).map_err(StoreError::io("open for fsync", path))?;
    file.sync_all().map_err(StoreError::io("fsync", path))
}

/// Flush a directory's entries (names created, renamed or removed) to disk.
#[cfg(unix)]
pub(crate) fn fsync_dir(path: &Path) -> Result<(), StoreError> {
    let dir = File::open(path).map_err(StoreError::io("open directory for fsync", path))?;
    dir.sync_all().map_err(StoreError::io("fsync directory", path))
}

/// Directories cannot be opened as files on every platform; there the
/// rename itself is the best durability we get.
#[cfg(not(unix))]
pub(crate) fn fsync_dir(_path: &Path) -> Result<(), StoreError> {
    Ok(())
}

/// Write `bytes` to `dir/name` so that readers see either the old file or
/// the complete new one, never a prefix.
pub(crate) fn atomic_write(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), StoreError> {
    write_then_rename(dir, name, bytes, DirSync::Sync)
}

/// Whether [`write_then_rename`] waits for the directory entry to be durable.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum DirSync {
    Sync,
    /// After a power loss the file may be missing (never partial).
    Skip,
}

pub(crate) fn write_then_rename(
    dir: &Path,
    name: &str,
    bytes: &[u8],
    sync: DirSync,
) -> Result<(), StoreError> {
    let tmp_path = dir.join(format!("{TMP_PREFIX}{}-{name}", unique_suffix()));
    let final_path = dir.join(name);
    let result = (|| {
        write_new_file(&tmp_path, bytes)?;
        fs::rename(&tmp_path, &final_path).map_err(StoreError::io("rename into place", &final_path))?;
        if sync == DirSync::Sync { fsync_dir(dir) } else { Ok(()) }
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp_path);
    }
    result
}

/// Prefix of temporary files written by [`atomic_write`]; gc removes strays.
pub(crate) const TMP_PREFIX: &str = ".tmp-";

/// Create `path` (which must not exist), write `bytes`, fsync.
pub(crate) fn write_new_file(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    let mut file =
        OpenOptions::new().write(true).create_new(true).open(path).map_err(StoreError::io("create", path))?;
    file.write_all(bytes).map_err(StoreError::io("write", path))?;
    file.sync_all().map_err(StoreError::io("fsync", path))
}

/// Drop write permission so a stray `open(..., write)` on an entry fails.
pub(crate) fn make_read_only(path: &Path) -> Result<(), StoreError> {
    let mut permissions =
        fs::symlink_metadata(path).map_err(StoreError::io("read metadata of", path))?.permissions();
    permissions.set_readonly(true);
    fs::set_permissions(path, permissions).map_err(StoreError::io("make read-only", path))
}

/// Total bytes of regular files under `path` (symlinks are not followed).
pub(crate) fn tree_size(path: &Path) -> u64 {
    let Ok(metadata) = fs::symlink_metadata(path) else {
        return 0;
    };
    if !metadata.is_dir() {
        return metadata.len();
    }
    let Ok(children) = fs::read_dir(path) else {
        return 0;
    };
    children.flatten().map(|child| tree_size(&child.path())).sum()
}

/// A directory that is not a symlink to one: the store never follows
/// symlinks, so garbage cannot lead gc or verify outside the store.
pub(crate) fn is_real_dir(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|metadata| metadata.is_dir())
}

/// Remove a file or a whole directory tree, whichever `path` is.
pub(crate) fn remove_any(path: &Path) -> io::Result<()> {
    match fs::symlink_metadata(path) {
        Ok(metadata) if metadata.is_dir() => fs::remove_dir_all(path),
        Ok(_) => fs::remove_file(path),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(err) => Err(err),
    }
}

/// A name component unique across processes and calls: pid, clock, counter.
pub(crate) fn unique_suffix() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos =
        SystemTime::now().duration_since(UNIX_EPOCH).map(|elapsed| elapsed.subsec_nanos()).unwrap_or(0);
    format!("{}-{nanos:08x}-{count}", std::process::id())
}

/// Current time as RFC 3339 UTC with milliseconds, e.g. `2025-01-31T12:00:00.123Z`.
pub(crate) fn now_rfc3339() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}
