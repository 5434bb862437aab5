//! `gc`: delete what no run record references, plus the remains of
//! interrupted writes.
//!
//! Safety against concurrent runs: every open `Store` holds a shared lock
//! on `store.lock`; gc converts this process's lock to exclusive and fails
//! with `Busy` if any other process has the store open. So gc never removes
//! an entry that another process has just written but not yet recorded in a
//! run, nor a staging directory that is being filled. Within this process,
//! `gc_gate` keeps staging, committing and run recording out while gc runs.
//! Callers must not gc in the middle of their own run: entries committed
//! but not yet referenced by a run record would be collected.

use std::collections::BTreeSet;
use std::fs::{self, TryLockError};
use std::path::{Path, PathBuf};
use std::sync::PoisonError;

use serde::Serialize;

use crate::error::StoreError;
use crate::fingerprint::{Fingerprint, is_lower_hex};
use crate::fsutil::{TMP_PREFIX, fsync_dir, is_real_dir, remove_any, tree_size, unique_suffix};
use crate::layout::{LOCK_SUFFIX, Layout};
use crate::node_lock::is_lock_free;
use crate::report_path::lossy_list;
use crate::store::{Store, parse_entry_name, read_dir_names};

/// What [`Store::gc`] removed (or, in a dry run, would remove).
#[derive(Debug, Clone, Default, Serialize)]
pub struct GcReport {
    pub dry_run: bool,
    /// Distinct fingerprints referenced by run records.
    pub roots: usize,
    pub entries_kept: usize,
    pub entries_removed: Vec<Fingerprint>,
    /// Staging directories of dead writers and stray temporary files.
    #[serde(serialize_with = "lossy_list")]
    pub leftovers_removed: Vec<PathBuf>,
    /// Lock files nobody held.
    pub locks_removed: usize,
    /// Bytes of derived data in `cache/` (parsed recipes, result digests),
    /// cleared so it keeps nothing of removed entries; the next run rebuilds it.
    pub cache_bytes: u64,
    /// Bytes of files removed (or that would be).
    pub bytes_freed: u64,
}

impl Store {
    /// Remove entries that no run record references, staging leftovers of
    /// dead processes, unheld lock files and stray temporary files.
    ///
    /// Fails with [`StoreError::Busy`] if another process has the store open,
    /// and with [`StoreError::Corrupt`] if a run record cannot be read (its
    /// roots would be unknown; fix it or `forget_run` it). A dry run takes no
    /// exclusive lock and changes nothing.
    pub fn gc(&self, dry_run: bool) -> Result<GcReport, StoreError> {
        let _gate = self.shared.gc_gate.write().unwrap_or_else(PoisonError::into_inner);
        let _exclusive = if dry_run { None } else { Some(ExclusiveStore::acquire(self)?) };

        let roots = self.gc_roots()?;
        let mut report = GcReport { dry_run, roots: roots.len(), ..GcReport::default() };
        self.collect_entries(&roots, &mut report)?;
        self.collect_staging(&mut report)?;
        self.collect_locks(&mut report)?;
        for dir in [self.root().to_path_buf(), self.layout.runs()] {
            self.collect_temp_files(&dir, &mut report)?;
        }
        self.collect_cache(&mut report)?;
        // Failed steps' evidence lives as long as its run's record.
        let orphaned = self.orphaned_failures()?;
        report.bytes_freed += orphaned.iter().map(|(_, bytes)| bytes).sum::<u64>();
        if !report.dry_run {
            self.remove_failures(&orphaned)?;
        }
        Ok(report)
    }

    fn collect_cache(&self, report: &mut GcReport) -> Result<(), StoreError> {
        let cache = self.layout.cache_root();
        if !is_real_dir(&cache) {
            return Ok(());
        }
        report.cache_bytes = tree_size(&cache);
        report.bytes_freed += report.cache_bytes;
        if !report.dry_run {
            remove_any(&cache).map_err(StoreError::io("remove", &cache))?;
        }
        Ok(())
    }

    /// Every fingerprint any run record mentions, whatever its status.
    fn gc_roots(&self) -> Result<BTreeSet<Fingerprint>, StoreError> {
        let mut roots = BTreeSet::new();
        for (path, parsed) in self.load_runs()? {
            let run = parsed.map_err(|reason| StoreError::Corrupt { path, reason })?;
            roots.extend(run.nodes.iter().map(|node| node.fingerprint));
        }
        Ok(roots)
    }

    fn collect_entries(
        &self,
        roots: &BTreeSet<Fingerprint>,
        report: &mut GcReport,
    ) -> Result<(), StoreError> {
        let entries = self.layout.entries();
        let mut touched_shards = Vec::new();
        let mut moved_out = Vec::new();
        for shard in read_dir_names(&entries)? {
            let shard_dir = entries.join(&shard);
            if shard.len() != 2 || !is_lower_hex(&shard) || !is_real_dir(&shard_dir) {
                continue; // not ours; verify reports it
            }
            let moved_before = moved_out.len();
            for name in read_dir_names(&shard_dir)? {
                let entry_dir = shard_dir.join(&name);
                let Some(fp) = parse_entry_name(&shard, &name) else {
                    continue;
                };
                if !is_real_dir(&entry_dir) {
                    continue;
                }
                if roots.contains(&fp) {
                    report.entries_kept += 1;
                    continue;
                }
                report.bytes_freed += tree_size(&entry_dir);
                report.entries_removed.push(fp);
                if !report.dry_run {
                    moved_out.push(self.move_out(&entry_dir)?);
                }
            }
            if moved_out.len() > moved_before {
                touched_shards.push(shard_dir);
            }
        }
        // Make the renames durable before deleting anything, so a crash can
        // never leave a partly deleted directory under entries/. One fsync
        // of staging/ (the renames' common target) commits them: journaling
        // filesystems log each rename as one unit covering both directories,
        // and a fsync per shard costs a disk flush each (about 15 ms on a VM).
        if !moved_out.is_empty() {
            fsync_dir(&self.layout.staging())?;
        }
        for path in &moved_out {
            remove_any(path).map_err(StoreError::io("remove", path))?;
        }
        for shard_dir in &touched_shards {
            // Only succeeds when the shard is now empty, which is what we want.
            let _ = fs::remove_dir(shard_dir);
        }
        Ok(())
    }

    /// Take an entry out of `entries/` in one rename, so readers see it
    /// whole or not at all. A crash before it is deleted leaves an
    /// unlocked staging directory, which the next gc removes.
    fn move_out(&self, entry_dir: &Path) -> Result<PathBuf, StoreError> {
        let doomed = self.layout.staging().join(format!("gc-{}", unique_suffix()));
        fs::rename(entry_dir, &doomed).map_err(StoreError::io("move out of the store", entry_dir))?;
        Ok(doomed)
    }

    fn collect_staging(&self, report: &mut GcReport) -> Result<(), StoreError> {
        let staging = self.layout.staging();
        // Directories before their lock files, so a lock is removed last.
        let mut names = read_dir_names(&staging)?;
        names.sort_by_key(|name| name.ends_with(LOCK_SUFFIX));
        for name in names {
            let path = staging.join(&name);
            let lock_path = if name.ends_with(LOCK_SUFFIX) {
                path.clone()
            } else {
                staging.join(format!("{name}{LOCK_SUFFIX}"))
            };
            if lock_path.is_file() && !is_lock_free(&lock_path)? {
                continue; // a live writer
            }
            report.bytes_freed += tree_size(&path);
            report.leftovers_removed.push(path.clone());
            if !report.dry_run {
                remove_any(&path).map_err(StoreError::io("remove", &path))?;
            }
        }
        Ok(())
    }

    fn collect_locks(&self, report: &mut GcReport) -> Result<(), StoreError> {
        if cfg!(not(unix)) {
            return Ok(()); // lockers cannot detect a removed lock file there
        }
        let locks = self.layout.locks();
        for name in read_dir_names(&locks)? {
            let path = locks.join(&name);
            if !name.ends_with(LOCK_SUFFIX) || !path.is_file() || !is_lock_free(&path)? {
                continue;
            }
            report.locks_removed += 1;
            if !report.dry_run {
                remove_any(&path).map_err(StoreError::io("remove", &path))?;
            }
        }
        Ok(())
    }

    /// Temporary files of interrupted atomic writes (`.tmp-*`).
    fn collect_temp_files(&self, dir: &Path, report: &mut GcReport) -> Result<(), StoreError> {
        for name in read_dir_names(dir)? {
            let path = dir.join(&name);
            if !name.starts_with(TMP_PREFIX) || !path.is_file() {
                continue;
            }
            debug_assert!(dir != self.root() || Layout::is_known_top_level_name(&name));
            report.bytes_freed += tree_size(&path);
            report.leftovers_removed.push(path.clone());
            if !report.dry_run {
                remove_any(&path).map_err(StoreError::io("remove", &path))?;
            }
        }
        Ok(())
    }
}

/// This process's store lock, converted from shared to exclusive for the
/// guard's lifetime.
struct ExclusiveStore<'a> {
    store: &'a Store,
}

impl<'a> ExclusiveStore<'a> {
    fn acquire(store: &'a Store) -> Result<ExclusiveStore<'a>, StoreError> {
        let lock = &store.shared.store_lock;
        match lock.try_lock() {
            Ok(()) => Ok(ExclusiveStore { store }),
            Err(failure) => {
                // A failed conversion may have dropped our shared lock
                // (flock converts by unlock-then-lock); take it back.
                let path = store.layout.store_lock();
                lock.lock_shared().map_err(StoreError::io("lock", &path))?;
                match failure {
                    TryLockError::WouldBlock => Err(StoreError::Busy { root: store.root().to_path_buf() }),
                    TryLockError::Error(err) => Err(StoreError::io("lock", path)(err)),
                }
            }
        }
    }
}

impl Drop for ExclusiveStore<'_> {
    fn drop(&mut self) {
        // Back to shared so other processes may open the store again.
        let _ = self.store.shared.store_lock.lock_shared();
    }
}
