//! Per-fingerprint locks: "this process is producing that entry".
//!
//! An OS file lock (flock on Unix) on `locks/<fp>.lock`. The kernel drops it
//! when the holding process exits for any reason, kill -9 included, so a
//! crashed run never leaves a fingerprint locked. The lock file itself stays
//! behind (removing it while others may be opening it is racy); `gc`
//! removes the ones nobody holds.

use std::fs::{File, TryLockError};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::StoreError;
use crate::fingerprint::Fingerprint;
use crate::lease_lock::Lease;
use crate::store::{Store, StoreShared, open_lock_file};

/// Held while this process produces one fingerprint; released on drop.
#[derive(Debug)]
pub struct NodeLock {
    fingerprint: Fingerprint,
    path: PathBuf,
    _file: File,
    /// In a shared store (`ANVIL_STORE_SHARED=1`), the cross-host lease (lease_lock.rs).
    _lease: Option<crate::lease_lock::LeaseLock>,
    /// Keeps this process's shared store lock alive as long as the node lock.
    _store: Arc<StoreShared>,
}

impl NodeLock {
    pub fn fingerprint(&self) -> &Fingerprint {
        &self.fingerprint
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl std::fmt::Debug for StoreShared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StoreShared")
    }
}

impl Store {
    /// Take the exclusive lock for `fp`, waiting as long as another holder
    /// (in this or another process) keeps it. This blocks the thread; from
    /// async code call it via `spawn_blocking`, or poll [`Store::try_lock`].
    ///
    /// Usual pattern: `lock`, then check `contains` (another process may
    /// have finished the entry while we waited), and only then produce it.
    pub fn lock(&self, fp: &Fingerprint) -> Result<NodeLock, StoreError> {
        let path = self.layout.node_lock(fp);
        let lease = self.lease(fp, true)?;
        loop {
            let file = open_lock_file(&path)?;
            file.lock().map_err(StoreError::io("lock", &path))?;
            if still_named_by(&file, &path)? {
                return Ok(self.node_lock(fp, path, file, lease));
            }
        }
    }

    /// Take the lock for `fp` if nobody holds it; `None` if someone does.
    pub fn try_lock(&self, fp: &Fingerprint) -> Result<Option<NodeLock>, StoreError> {
        let path = self.layout.node_lock(fp);
        let lease = self.lease(fp, false)?;
        if matches!(lease, Lease::Busy) {
            return Ok(None);
        }
        loop {
            let file = open_lock_file(&path)?;
            match file.try_lock() {
                Ok(()) if still_named_by(&file, &path)? => {
                    return Ok(Some(self.node_lock(fp, path, file, lease)));
                }
                Ok(()) => continue,
                Err(TryLockError::WouldBlock) => return Ok(None),
                Err(TryLockError::Error(err)) => return Err(StoreError::io("lock", &path)(err)),
            }
        }
    }

    fn node_lock(&self, fp: &Fingerprint, path: PathBuf, file: File, lease: Lease) -> NodeLock {
        let _lease = match lease {
            Lease::Held(lock) => Some(lock),
            Lease::NotShared | Lease::Busy => None,
        };
        NodeLock { fingerprint: *fp, path, _file: file, _lease, _store: Arc::clone(&self.shared) }
    }
}

/// Whether anyone holds the lock on `path` right now (used by gc/verify).
/// Taking and immediately releasing the lock is the only portable probe.
pub(crate) fn is_lock_free(path: &Path) -> Result<bool, StoreError> {
    let file = open_lock_file(path)?;
    match file.try_lock() {
        Ok(()) => Ok(true),
        Err(TryLockError::WouldBlock) => Ok(false),
        Err(TryLockError::Error(err)) => Err(StoreError::io("lock", path)(err)),
    }
}

/// After locking, check that `path` still names the file we locked. `gc`
/// may have removed an unheld lock file between our open and our lock; a
/// lock on that orphan would exclude no one, so the caller retries.
#[cfg(unix)]
fn still_named_by(file: &File, path: &Path) -> Result<bool, StoreError> {
    use std::os::unix::fs::MetadataExt;
    let held = file.metadata().map_err(StoreError::io("read metadata of", path))?;
    match std::fs::metadata(path) {
        Ok(named) => Ok(named.dev() == held.dev() && named.ino() == held.ino()),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(err) => Err(StoreError::io("read metadata of", path)(err)),
    }
}

/// Without inode numbers we cannot tell; gc keeps lock files there.
#[cfg(not(unix))]
fn still_named_by(_file: &File, _path: &Path) -> Result<bool, StoreError> {
    Ok(true)
}
