//! What exactly are the model weights a server loads.
//!
//! - A local path (file or folder): every regular file below it with its
//!   size and the blake3 of its full content, and one digest over that list.
//!   Symlinks are followed (a Hugging Face snapshot folder is symlinks into
//!   `blobs/`); `.git` and `.cache` folders are skipped (a git-lfs clone
//!   keeps a second copy of every weight in `.git`, and `huggingface_hub`'s
//!   `local_dir` downloads keep download timestamps in `.cache/huggingface`).
//! - A hub id (`Org/Name`): the snapshot commit the local Hugging Face cache
//!   holds for the asked revision. A commit names the repository's content,
//!   so nothing is hashed.
//!
//! It never fails: what cannot be read is recorded with the reason.
//!
//! Hashing a 50 GB folder takes a while, so a digest cache folder may be
//! given. It keeps, per file, the digest under the key (canonical path,
//! size, mtime in ns, inode), one small file per key named by the key's
//! blake3 and written atomically (temporary file, then rename), so the next
//! plan reads no weight bytes. Like git's index, such a stat-keyed cache
//! cannot see a file rewritten in place with the same size while its mtime
//! is kept or restored: that file keeps its old digest until its size,
//! mtime or inode changes. To narrow git's "racily clean" case, a digest is
//! not cached while the file's mtime is less than [`RACY_WINDOW`] old.

use std::collections::HashSet;
use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// A file modified less than this long ago is hashed but its digest is not
/// cached (a write within the same mtime tick could go unseen).
pub const RACY_WINDOW: Duration = Duration::from_secs(2);

/// Most threads that hash files at once (the disk is the limit beyond).
const MAX_HASH_THREADS: usize = 4;

const READ_BUFFER: usize = 1 << 20;

/// Tags the folder digest and the cache keys, so a change of either format
/// can never be mistaken for the old one.
const FORMAT: &str = "anvil-weights-v1";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "source", rename_all = "snake_case")]
pub enum WeightsIdentity {
    Local(LocalWeights),
    Hub(HubWeights),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LocalWeights {
    /// The canonical path (as given when it cannot be canonicalized).
    pub path: String,
    /// blake3 (hex) over the list of files: each one's relative path, size
    /// and digest (or the reason it is unreadable), in `files` order.
    pub digest: String,
    /// Sum of the sizes of the files that could be read.
    pub total_bytes: u64,
    /// Sorted by relative path (`/`-separated). For a single file: its name.
    pub files: Vec<WeightsFile>,
    /// Why the path itself could not be listed, when it could not.
    pub unreadable: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WeightsFile {
    pub path: String,
    pub size: Option<u64>,
    /// blake3 (hex) of the whole content.
    pub blake3: Option<String>,
    /// Why it could not be read (then `blake3` is None).
    pub unreadable: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HubWeights {
    pub hub_id: String,
    pub revision_asked: Option<String>,
    /// The 40-hex commit of the snapshot: the asked revision itself when it
    /// is a commit, else what the cache's `refs/<revision or main>` holds.
    pub snapshot_commit: Option<String>,
    /// Why there is no commit, when there is none.
    pub why_unresolved: Option<String>,
}

/// The identity of `weights`: a local file or folder, else a hub id resolved
/// in the local Hugging Face cache ([`default_hub_cache`]).
pub fn weights_identity(
    weights: &str,
    revision: Option<&str>,
    digest_cache: Option<&Path>,
) -> WeightsIdentity {
    weights_identity_with_hub_cache(weights, revision, digest_cache, default_hub_cache().as_deref())
}

/// [`weights_identity`] with the Hugging Face hub cache folder (the one
/// holding `models--Org--Name`) given rather than read from the environment.
pub fn weights_identity_with_hub_cache(
    weights: &str,
    revision: Option<&str>,
    digest_cache: Option<&Path>,
    hub_cache: Option<&Path>,
) -> WeightsIdentity {
    let path = Path::new(weights);
    if path.exists() || !looks_like_hub_id(weights) {
        WeightsIdentity::Local(local_weights(path, digest_cache))
    } else {
        WeightsIdentity::Hub(hub_weights(weights, revision, hub_cache))
    }
}

/// Where Hugging Face libraries keep downloaded repositories, as they decide
/// it: `$HF_HUB_CACHE`, `$HUGGINGFACE_HUB_CACHE` (older name), `$HF_HOME/hub`,
/// `$XDG_CACHE_HOME/huggingface/hub`, `~/.cache/huggingface/hub`.
pub fn default_hub_cache() -> Option<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    var("HF_HUB_CACHE")
        .or_else(|| var("HUGGINGFACE_HUB_CACHE"))
        .or_else(|| var("HF_HOME").map(|home| home.join("hub")))
        .or_else(|| var("XDG_CACHE_HOME").map(|cache| cache.join("huggingface").join("hub")))
        .or_else(|| var("HOME").map(|home| home.join(".cache").join("huggingface").join("hub")))
}

/// `Name` or `Org/Name`: no leading `/`, `.` or `~`, no empty part.
fn looks_like_hub_id(weights: &str) -> bool {
    let parts: Vec<&str> = weights.split('/').collect();
    !weights.starts_with(['/', '.', '~'])
        && parts.len() <= 2
        && parts.iter().all(|p| !p.is_empty() && *p != ".." && !p.contains('\\'))
}

fn is_commit(revision: &str) -> bool {
    revision.len() == 40 && revision.bytes().all(|b| b.is_ascii_hexdigit())
}

fn hub_weights(hub_id: &str, revision: Option<&str>, hub_cache: Option<&Path>) -> HubWeights {
    let mut hub = HubWeights {
        hub_id: hub_id.to_string(),
        revision_asked: revision.map(str::to_string),
        snapshot_commit: None,
        why_unresolved: None,
    };
    let resolved = resolve_snapshot(hub_id, revision, hub_cache);
    match resolved {
        Ok(commit) => hub.snapshot_commit = Some(commit),
        Err(why) => hub.why_unresolved = Some(why),
    }
    hub
}

fn resolve_snapshot(
    hub_id: &str,
    revision: Option<&str>,
    hub_cache: Option<&Path>,
) -> Result<String, String> {
    if let Some(commit) = revision.filter(|r| is_commit(r)) {
        return Ok(commit.to_ascii_lowercase());
    }
    let reference = revision.unwrap_or("main");
    if reference.is_empty() || reference.split('/').any(|part| part.is_empty() || part == "..") {
        return Err(format!("revision `{reference}` is not a branch, tag or commit name"));
    }
    let Some(hub_cache) = hub_cache else {
        return Err("no Hugging Face cache folder (HF_HUB_CACHE, HF_HOME and HOME are unset)".to_string());
    };
    let ref_file =
        hub_cache.join(format!("models--{}", hub_id.replace('/', "--"))).join("refs").join(reference);
    let text = fs::read_to_string(&ref_file).map_err(|e| {
        format!("revision `{reference}` is not in the Hugging Face cache ({}: {e})", ref_file.display())
    })?;
    let commit = text.trim();
    if is_commit(commit) {
        Ok(commit.to_ascii_lowercase())
    } else {
        Err(format!("{} holds `{commit}`, not a commit", ref_file.display()))
    }
}

fn local_weights(path: &Path, digest_cache: Option<&Path>) -> LocalWeights {
    let canonical = fs::canonicalize(path);
    let shown = canonical.as_deref().unwrap_or(path).display().to_string();
    let (listed, unreadable) = match canonical {
        Err(e) => (Vec::new(), Some(e.to_string())),
        Ok(root) => match fs::metadata(&root) {
            Err(e) => (Vec::new(), Some(e.to_string())),
            Ok(meta) if meta.is_dir() => list_folder(&root),
            Ok(_) => {
                let name = root.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                (vec![Listed { rel: name, abs: Ok(root) }], None)
            }
        },
    };
    let files = hash_all(listed, digest_cache);
    let total_bytes = files.iter().filter(|f| f.blake3.is_some()).filter_map(|f| f.size).sum();
    LocalWeights { path: shown, digest: folder_digest(&files), total_bytes, files, unreadable }
}

fn folder_digest(files: &[WeightsFile]) -> String {
    let mut hasher = blake3::Hasher::new();
    hasher.update(FORMAT.as_bytes()).update(b"\0");
    // A path cannot hold a NUL byte, so NUL-separated fields cannot run
    // into each other; the leading tag fixes how many fields follow.
    for file in files {
        match (&file.blake3, file.size) {
            (Some(digest), Some(size)) => {
                hasher.update(b"f\0").update(file.path.as_bytes()).update(b"\0");
                hasher.update(size.to_string().as_bytes()).update(b"\0").update(digest.as_bytes());
            }
            _ => {
                let why = file.unreadable.as_deref().unwrap_or("unreadable").replace('\0', " ");
                hasher.update(b"e\0").update(file.path.as_bytes()).update(b"\0").update(why.as_bytes());
            }
        }
        hasher.update(b"\0");
    }
    hasher.finalize().to_hex().to_string()
}

/// A file found below the root: its relative path, and its absolute path or
/// why it cannot be used (a dangling symlink, an unreadable folder).
struct Listed {
    rel: String,
    abs: Result<PathBuf, String>,
}

/// Every regular file below `root`, symlinks followed (a symlink loop is cut
/// where it comes back to a folder being listed), sorted by relative path.
fn list_folder(root: &Path) -> (Vec<Listed>, Option<String>) {
    let mut out = Vec::new();
    let mut ancestors = HashSet::new();
    let unreadable = match fs::metadata(root) {
        Ok(meta) => {
            ancestors.insert((meta.dev(), meta.ino()));
            let mut root_error = None;
            walk(root, "", &mut ancestors, &mut out, &mut root_error);
            root_error
        }
        Err(e) => Some(e.to_string()),
    };
    out.sort_by(|a, b| a.rel.cmp(&b.rel));
    (out, unreadable)
}

fn walk(
    dir: &Path,
    prefix: &str,
    ancestors: &mut HashSet<(u64, u64)>,
    out: &mut Vec<Listed>,
    root_error: &mut Option<String>,
) {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if prefix.is_empty() => {
            *root_error = Some(e.to_string());
            return;
        }
        Err(e) => {
            let rel = prefix.trim_end_matches('/').to_string();
            out.push(Listed { rel, abs: Err(format!("cannot list folder: {e}")) });
            return;
        }
    };
    let mut names: Vec<_> = entries.filter_map(Result::ok).map(|e| e.file_name()).collect();
    names.sort();
    for name in names {
        let shown = name.to_string_lossy();
        let rel = format!("{prefix}{shown}");
        let path = dir.join(&name);
        match fs::metadata(&path) {
            Err(e) => out.push(Listed { rel, abs: Err(e.to_string()) }),
            Ok(meta) if meta.is_dir() => {
                if shown == ".git" || shown == ".cache" {
                    continue;
                }
                let id = (meta.dev(), meta.ino());
                if ancestors.insert(id) {
                    walk(&path, &format!("{rel}/"), ancestors, out, root_error);
                    ancestors.remove(&id);
                }
            }
            Ok(meta) if meta.is_file() => out.push(Listed { rel, abs: Ok(path) }),
            Ok(_) => {} // sockets, fifos, devices: not weights
        }
    }
}

/// Hashes the listed files on a few threads, in the listed order.
fn hash_all(listed: Vec<Listed>, digest_cache: Option<&Path>) -> Vec<WeightsFile> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, MAX_HASH_THREADS);
    let threads = threads.min(listed.len().max(1));
    let results: Vec<Mutex<Option<WeightsFile>>> = listed.iter().map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = listed.get(i) else { break };
                    let file = match &item.abs {
                        Err(why) => WeightsFile {
                            path: item.rel.clone(),
                            size: None,
                            blake3: None,
                            unreadable: Some(why.clone()),
                        },
                        Ok(abs) => match file_digest(abs, digest_cache) {
                            Ok((size, digest)) => WeightsFile {
                                path: item.rel.clone(),
                                size: Some(size),
                                blake3: Some(digest),
                                unreadable: None,
                            },
                            Err((size, why)) => WeightsFile {
                                path: item.rel.clone(),
                                size,
                                blake3: None,
                                unreadable: Some(why),
                            },
                        },
                    };
                    if let Ok(mut slot) = results[i].lock() {
                        *slot = Some(file);
                    }
                }
            });
        }
    });
    results
        .into_iter()
        .zip(listed)
        .map(|(slot, item)| {
            slot.into_inner().ok().flatten().unwrap_or(WeightsFile {
                path: item.rel,
                size: None,
                blake3: None,
                unreadable: Some("hashing thread failed".to_string()),
            })
        })
        .collect()
}

/// What a cache entry is keyed by: the file's identity as `stat` sees it.
#[derive(PartialEq, Eq)]
struct StatKey {
    size: u64,
    mtime_ns: i128,
    inode: u64,
}

impl StatKey {
    fn of(meta: &fs::Metadata) -> StatKey {
        StatKey {
            size: meta.len(),
            mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
            inode: meta.ino(),
        }
    }

    /// Too recent to trust: a same-size write within the same mtime tick
    /// would keep this key.
    fn is_racy(&self) -> bool {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as i128);
        self.mtime_ns > now - RACY_WINDOW.as_nanos() as i128
    }
}

/// The size and blake3 of `path` (a regular file), from the cache when it
/// has this (canonical path, size, mtime, inode).
fn file_digest(path: &Path, digest_cache: Option<&Path>) -> Result<(u64, String), (Option<u64>, String)> {
    let meta = fs::metadata(path).map_err(|e| (None, e.to_string()))?;
    let before = StatKey::of(&meta);
    let size = Some(before.size);
    let canonical = fs::canonicalize(path).map_err(|e| (size, e.to_string()))?;
    let key =
        format!("{FORMAT}\0{}\0{}\0{}\0{}", canonical.display(), before.size, before.mtime_ns, before.inode);
    let entry = digest_cache.map(|dir| dir.join(blake3::hash(key.as_bytes()).to_hex().as_str()));
    if let Some(digest) = entry.as_deref().and_then(|entry| read_cache_entry(entry, &key)) {
        return Ok((before.size, digest));
    }
    let digest = hash_content(&canonical).map_err(|e| (size, e.to_string()))?;
    if let (Some(dir), Some(entry)) = (digest_cache, entry.as_deref()) {
        let unchanged = fs::metadata(&canonical).is_ok_and(|after| StatKey::of(&after) == before);
        if unchanged && !before.is_racy() {
            write_cache_entry(dir, entry, &key, &digest);
        }
    }
    Ok((before.size, digest))
}

fn hash_content(path: &Path) -> std::io::Result<String> {
    let mut file = fs::File::open(path)?;
    let mut hasher = blake3::Hasher::new();
    // Large reads let blake3 hash many chunks at once with SIMD.
    let mut buffer = vec![0u8; READ_BUFFER];
    loop {
        let n = match file.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        hasher.update(&buffer[..n]);
    }
    Ok(hasher.finalize().to_hex().to_string())
}

/// An entry is `<digest>\n<key>`; the key is checked, so a torn or foreign
/// file is a miss, never a wrong digest.
fn read_cache_entry(entry: &Path, key: &str) -> Option<String> {
    let text = fs::read_to_string(entry).ok()?;
    let (digest, stored_key) = text.split_once('\n')?;
    (stored_key == key && digest.len() == 64 && digest.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| digest.to_string())
}

/// Best effort: a cache that cannot be written only costs the next plan time.
fn write_cache_entry(dir: &Path, entry: &Path, key: &str, digest: &str) {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    if fs::create_dir_all(dir).is_err() {
        return;
    }
    let temp = dir.join(format!(
        ".tmp-{}-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed),
        entry.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
    ));
    // No fsync: an entry torn by a crash fails the key check and is a miss.
    let written =
        fs::File::create(&temp).and_then(|mut f| f.write_all(format!("{digest}\n{key}").as_bytes()));
    if written.is_err() || fs::rename(&temp, entry).is_err() {
        let _ = fs::remove_file(&temp);
    }
}
