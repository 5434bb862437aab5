//! Opening a store and looking entries up.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use crate::entry::Entry;
use crate::error::StoreError;
use crate::fingerprint::{FINGERPRINT_HEX_LEN, Fingerprint, is_canonical_hex, is_lower_hex};
use crate::fsutil::{atomic_write, fsync_dir, is_real_dir};
use crate::layout::{Layout, MARKER_FILE, Marker, SUBDIRS};

/// Shortest prefix `resolve_prefix` accepts.
pub const MIN_PREFIX_LEN: usize = 4;

/// A content-addressed result store rooted at one directory.
///
/// Cheap to clone; clones share one open handle on `store.lock`. While any
/// `Store` (or a lock or staged entry made from it) is alive, this process
/// holds a shared lock on the store, which is what keeps another process's
/// `gc` from deleting entries under it.
#[derive(Clone)]
pub struct Store {
    pub(crate) layout: Layout,
    pub(crate) shared: Arc<StoreShared>,
}

/// State shared by a `Store`, its clones, and the locks and staged entries
/// made from it.
pub(crate) struct StoreShared {
    /// Held shared for the life of the process's use of the store;
    /// converted to exclusive by `gc`.
    pub store_lock: File,
    /// In-process counterpart of `store_lock`: `gc` takes it for writing,
    /// staging and committing take it for reading.
    pub gc_gate: RwLock<()>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("root", &self.layout.root()).finish()
    }
}

impl Store {
    /// Open the store at `root`, creating it if the directory is absent or
    /// empty. Refuses a directory that holds anything that is not a store.
    ///
    /// Blocks while another process runs `gc` on this store.
    pub fn open(root: &Path) -> Result<Store, StoreError> {
        let root = std::path::absolute(root).map_err(StoreError::io("resolve", root))?;
        let layout = Layout::new(root);
        fs::create_dir_all(layout.root()).map_err(StoreError::io("create store directory", layout.root()))?;

        match fs::read(layout.marker()) {
            Ok(bytes) => check_marker(&layout, &bytes)?,
            Err(err) if err.kind() == io::ErrorKind::NotFound => initialize(&layout)?,
            Err(err) => return Err(StoreError::io("read", layout.marker())(err)),
        }
        // Someone may have deleted an (empty) subdirectory by hand.
        for subdir in SUBDIRS {
            let path = layout.root().join(subdir);
            fs::create_dir_all(&path).map_err(StoreError::io("create", &path))?;
        }

        let lock_path = layout.store_lock();
        let store_lock = open_lock_file(&lock_path)?;
        store_lock.lock_shared().map_err(StoreError::io("lock", &lock_path))?;
        let shared = Arc::new(StoreShared { store_lock, gc_gate: RwLock::new(()) });
        Ok(Store { layout, shared })
    }

    pub fn root(&self) -> &Path {
        self.layout.root()
    }

    /// A folder for derived data kept for `purpose` (created by its writer):
    /// never read by the store, and safe to delete.
    pub fn cache_dir(&self, purpose: &str) -> PathBuf {
        self.layout.cache(purpose)
    }

    /// True when a completed entry for `fp` exists. Entries appear by an
    /// atomic rename, so this never reports a half-written one.
    pub fn contains(&self, fp: &Fingerprint) -> bool {
        self.layout.manifest(fp).is_file()
    }

    /// The completed entry for `fp`, or `None` if there is none.
    /// Does not rehash files; see [`Store::verify_entry`] for that.
    pub fn read(&self, fp: &Fingerprint) -> Result<Option<Entry>, StoreError> {
        if !self.contains(fp) {
            return Ok(None);
        }
        Entry::load(&self.layout.entry(fp), fp).map(Some)
    }

    /// Only the parsed `result.json` of the completed entry for `fp`: what
    /// result-reading steps hash, without the manifest and preimage.
    pub fn read_result(&self, fp: &Fingerprint) -> Result<Option<serde_json::Value>, StoreError> {
        if !self.contains(fp) {
            return Ok(None);
        }
        crate::entry::read_json(&self.result_file(fp)).map(Some)
    }

    /// The bytes of the completed entry's `result.json`, for a reader that
    /// parses them straight into its own type (no `Value` in between).
    pub fn read_result_bytes(&self, fp: &Fingerprint) -> Result<Option<Vec<u8>>, StoreError> {
        if !self.contains(fp) {
            return Ok(None);
        }
        let path = self.result_file(fp);
        std::fs::read(&path).map(Some).map_err(StoreError::io("read", &path))
    }

    /// Where the completed entry for `fp` keeps its `result.json` (whether or not it exists).
    pub fn result_file(&self, fp: &Fingerprint) -> PathBuf {
        self.layout.entry(fp).join(crate::layout::RESULT_FILE)
    }

    /// The directory where `fp`'s files live (whether or not it exists yet).
    /// Its files are read-only; never write there.
    pub fn entry_dir(&self, fp: &Fingerprint) -> PathBuf {
        self.layout.entry(fp)
    }

    /// All completed entries, sorted. Skips names that are not fingerprints
    /// (`verify` reports those).
    pub fn list(&self) -> Result<Vec<Fingerprint>, StoreError> {
        let mut found = Vec::new();
        for shard in read_dir_names(&self.layout.entries())? {
            if shard.len() != 2 || !is_lower_hex(&shard) {
                continue;
            }
            let shard_dir = self.layout.entries().join(&shard);
            if !is_real_dir(&shard_dir) {
                continue;
            }
            for name in read_dir_names(&shard_dir)? {
                if let Some(fp) = parse_entry_name(&shard, &name)
                    && self.contains(&fp)
                {
                    found.push(fp);
                }
            }
        }
        found.sort();
        Ok(found)
    }

    /// Expand a unique hex prefix (at least 4 characters, any case) to the
    /// fingerprint of a stored entry.
    pub fn resolve_prefix(&self, prefix: &str) -> Result<Fingerprint, StoreError> {
        let lower = prefix.to_ascii_lowercase();
        if !lower.is_ascii() || !is_lower_hex(&lower) || lower.len() > FINGERPRINT_HEX_LEN {
            return Err(StoreError::InvalidPrefix { prefix: prefix.to_string() });
        }
        if lower.len() < MIN_PREFIX_LEN {
            return Err(StoreError::PrefixTooShort { prefix: prefix.to_string(), min: MIN_PREFIX_LEN });
        }
        let shard = &lower[..2];
        let shard_dir = self.layout.entries().join(shard);
        let names = match read_dir_names(&shard_dir) {
            Ok(names) => names,
            Err(StoreError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(err) => return Err(err),
        };
        let mut candidates: Vec<Fingerprint> = names
            .iter()
            .filter(|name| name.starts_with(&lower))
            .filter_map(|name| parse_entry_name(shard, name))
            .filter(|fp| self.contains(fp))
            .collect();
        candidates.sort();
        match candidates.len() {
            0 => Err(StoreError::NotFound { prefix: prefix.to_string() }),
            1 => Ok(candidates[0]),
            _ => Err(StoreError::Ambiguous { prefix: prefix.to_string(), candidates }),
        }
    }
}

/// Open (creating if needed) a file used only for locking.
pub(crate) fn open_lock_file(path: &Path) -> Result<File, StoreError> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(StoreError::io("open lock file", path))
}

/// UTF-8 names in a directory; non-UTF-8 names are skipped (`verify`
/// reports them).
pub(crate) fn read_dir_names(dir: &Path) -> Result<Vec<String>, StoreError> {
    let reader = fs::read_dir(dir).map_err(StoreError::io("list", dir))?;
    let mut names = Vec::new();
    for item in reader {
        let item = item.map_err(StoreError::io("list", dir))?;
        if let Ok(name) = item.file_name().into_string() {
            names.push(name);
        }
    }
    names.sort();
    Ok(names)
}

/// A directory name under `entries/<shard>/` that is a well-formed entry name.
pub(crate) fn parse_entry_name(shard: &str, name: &str) -> Option<Fingerprint> {
    if is_canonical_hex(name) && name.starts_with(shard) { name.parse().ok() } else { None }
}

fn check_marker(layout: &Layout, bytes: &[u8]) -> Result<(), StoreError> {
    match serde_json::from_slice::<Marker>(bytes) {
        Ok(marker) if marker == Marker::current() => Ok(()),
        _ => Err(StoreError::UnsupportedFormat {
            root: layout.root().to_path_buf(),
            found: String::from_utf8_lossy(bytes).trim().chars().take(200).collect(),
        }),
    }
}

/// Lay out a new store in an empty directory (or one where a concurrent
/// `open` has started doing the same).
fn initialize(layout: &Layout) -> Result<(), StoreError> {
    let root = layout.root();
    let reader = fs::read_dir(root).map_err(StoreError::io("list", root))?;
    for item in reader {
        let item = item.map_err(StoreError::io("list", root))?;
        let name = item.file_name();
        let known = name.to_str().is_some_and(Layout::is_known_top_level_name);
        if !known {
            return Err(StoreError::NotAStore {
                root: root.to_path_buf(),
                found: name.to_string_lossy().into_owned(),
            });
        }
    }
    for subdir in SUBDIRS {
        let path = root.join(subdir);
        fs::create_dir_all(&path).map_err(StoreError::io("create", &path))?;
    }
    // The marker goes last: a store with a marker is always complete.
    let mut marker = serde_json::to_vec(&Marker::current()).expect("marker serializes");
    marker.push(b'\n');
    atomic_write(root, MARKER_FILE, &marker)?;
    fsync_dir(root)
}
