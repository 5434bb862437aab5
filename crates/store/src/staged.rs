//! Writing a new entry: stage privately, then commit atomically.
//!
//! A staged entry lives in `staging/<id>/`, invisible to readers. Commit
//! hashes and fsyncs every file, writes the manifest, fsyncs the
//! directories, then renames the whole directory to
//! `entries/<2 hex>/<64 hex>/` in one step. Readers therefore see no entry
//! or a complete one. While staging, the writer holds a lock on
//! `staging/<id>.lock`; a staging directory whose lock nobody holds belongs
//! to a dead process and is garbage.

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::PoisonError;

use crate::entry::{Entry, read_json};
use crate::error::StoreError;
use crate::fingerprint::Fingerprint;
use crate::fsutil::{
    fsync_dir, fsync_file, make_read_only, now_rfc3339, remove_any, unique_suffix, write_new_file,
};
use crate::layout::{LOCK_SUFFIX, MANIFEST_FILE, PREIMAGE_FILE, RESULT_FILE};
use crate::manifest::{Manifest, ManifestFile, check_file_name, hash_file, walk};
use crate::store::{Store, open_lock_file};

/// An entry being written. Dropping it without [`Staged::commit`] deletes
/// the staging directory. Holds a `Store` clone, so the process keeps its
/// shared store lock while any entry is being written.
#[derive(Debug)]
pub struct Staged {
    fingerprint: Fingerprint,
    store: Store,
    dir: PathBuf,
    lock_path: PathBuf,
    lock_file: Option<File>,
    finished: bool,
}

impl Store {
    /// Start writing the entry for `fp` in a private staging directory.
    pub fn stage(&self, fp: &Fingerprint) -> Result<Staged, StoreError> {
        let _gate = self.shared.gc_gate.read().unwrap_or_else(PoisonError::into_inner);
        let id = unique_suffix();
        let staging = self.layout.staging();
        let lock_path = staging.join(format!("{id}{LOCK_SUFFIX}"));
        let dir = staging.join(&id);
        // Lock first, then create the directory: a staging directory is
        // never visible without a held lock next to it.
        let lock_file = open_lock_file(&lock_path)?;
        lock_file.lock().map_err(StoreError::io("lock", &lock_path))?;
        let staged = Staged {
            fingerprint: *fp,
            store: self.clone(),
            dir,
            lock_path,
            lock_file: Some(lock_file),
            finished: false,
        };
        fs::create_dir(&staged.dir).map_err(StoreError::io("create staging directory", &staged.dir))?;
        Ok(staged)
    }
}

impl Staged {
    pub fn fingerprint(&self) -> &Fingerprint {
        &self.fingerprint
    }

    /// The private staging directory; write extra files (logs, raw
    /// records) here directly if convenient. Subdirectories are fine;
    /// symlinks and special files make `commit` fail.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Write `value` as pretty JSON to `name` (a relative `/` path).
    pub fn write_json(&mut self, name: &str, value: &serde_json::Value) -> Result<(), StoreError> {
        let mut bytes = serde_json::to_vec_pretty(value).expect("a serde_json::Value always serializes");
        bytes.push(b'\n');
        self.write_bytes(name, &bytes)
    }

    /// Write `bytes` to `name` (a relative `/` path), replacing it if present.
    pub fn write_bytes(&mut self, name: &str, bytes: &[u8]) -> Result<(), StoreError> {
        let path = self.prepare_path(name)?;
        fs::write(&path, bytes).map_err(StoreError::io("write", &path))
    }

    /// Copy the file at `from` into the entry as `name`.
    pub fn copy_file(&mut self, name: &str, from: &Path) -> Result<(), StoreError> {
        let path = self.prepare_path(name)?;
        fs::copy(from, &path).map_err(StoreError::io("copy into the store", from))?;
        Ok(())
    }

    fn prepare_path(&self, name: &str) -> Result<PathBuf, StoreError> {
        check_file_name(name)?;
        let path = self.dir.join(name);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).map_err(StoreError::io("create", parent))?;
        }
        Ok(path)
    }

    /// Seal the entry: hash every file into `manifest.json`, make files
    /// read-only, fsync files and directories, and rename the staging
    /// directory into place. If the entry already exists (another writer
    /// won), ours is discarded and the existing entry returned unchanged.
    pub fn commit(mut self) -> Result<Entry, StoreError> {
        let store = self.store.clone();
        let layout = &store.layout;
        let fp = self.fingerprint;
        if let Some(existing) = store.read(&fp)? {
            return Ok(existing);
        }

        let preimage = self.required_json(PREIMAGE_FILE)?;
        let result = self.required_json(RESULT_FILE)?;
        let manifest = self.seal()?;

        let _gate = store.shared.gc_gate.read().unwrap_or_else(PoisonError::into_inner);
        let shard = layout.shard_of(&fp);
        if !shard.is_dir() {
            fs::create_dir_all(&shard).map_err(StoreError::io("create", &shard))?;
            fsync_dir(&layout.entries())?;
        }
        let target = layout.entry(&fp);
        if let Err(err) = fs::rename(&self.dir, &target) {
            // A concurrent writer that got there first is the only
            // expected cause; then the entry is complete and ours is moot.
            return match store.read(&fp)? {
                Some(existing) => Ok(existing),
                None => Err(StoreError::io("move the staged entry into place at", &target)(err)),
            };
        }
        self.finished = true;
        fsync_dir(&shard)?;
        self.release_lock();
        Ok(Entry::from_parts(target, manifest, preimage, result))
    }

    fn required_json(&self, name: &'static str) -> Result<serde_json::Value, StoreError> {
        let path = self.dir.join(name);
        match fs::symlink_metadata(&path) {
            Ok(metadata) if metadata.is_file() => read_json(&path),
            Ok(_) => Err(StoreError::UnsupportedFile { path, reason: "must be a regular file" }),
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                Err(StoreError::MissingRequiredFile { fingerprint: self.fingerprint, name })
            }
            Err(err) => Err(StoreError::io("read", &path)(err)),
        }
    }

    /// Hash, protect and flush everything, and write the manifest.
    fn seal(&self) -> Result<Manifest, StoreError> {
        let walk = walk(&self.dir)?;
        if let Some((path, reason)) = walk.oddities.into_iter().next() {
            return Err(StoreError::UnsupportedFile { path, reason });
        }
        let mut files = Vec::with_capacity(walk.files.len());
        for (name, path) in walk.files {
            let (blake3, bytes) = hash_file(&path)?;
            fsync_file(&path)?;
            make_read_only(&path)?;
            files.push(ManifestFile { name, blake3, bytes });
        }
        let manifest = Manifest::new(self.fingerprint, now_rfc3339(), files);
        let manifest_path = self.dir.join(MANIFEST_FILE);
        // A stale manifest can only come from a caller writing one by hand.
        remove_any(&manifest_path).map_err(StoreError::io("remove", &manifest_path))?;
        write_new_file(&manifest_path, &manifest.to_json_bytes())?;
        make_read_only(&manifest_path)?;
        for dir in &walk.dirs {
            fsync_dir(dir)?;
        }
        Ok(manifest)
    }

    fn release_lock(&mut self) {
        // Remove the name before unlocking, so no one sees an unlocked
        // lock file next to a live staging directory.
        let _ = fs::remove_file(&self.lock_path);
        self.lock_file = None;
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.finished {
            let _ = remove_any(&self.dir);
        }
        self.release_lock();
    }
}
