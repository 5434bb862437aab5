//! `<root>/cache/<purpose>/`: derived data kept beside the store by the
//! layers above it (parsed recipes, result digests). The store never reads
//! it and no entry depends on it: any of it may be deleted, and each file is
//! written whole or not at all, so a reader never sees half of one.

use std::io::{self, Write};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// Write `bytes` to `path` (its folder created if need be) by a rename, so
/// concurrent writers and readers see one whole file or the other. No
/// fsync: a cache file lost in a crash is only work to redo.
pub fn write_whole(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut staged = tempfile::NamedTempFile::new_in(dir)?;
    staged.write_all(bytes)?;
    staged.persist(path).map_err(|err| err.error)?;
    Ok(())
}

/// Which file is at `path` now: device, inode, size and modification and
/// change times. Replacing or rewriting the file changes it, so derived data
/// stamped with it is not taken for data of another file.
pub fn file_identity(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    Some(format!(
        "dev={} ino={} size={} mtime={}.{:09} ctime={}.{:09}",
        meta.dev(),
        meta.ino(),
        meta.size(),
        meta.mtime(),
        meta.mtime_nsec(),
        meta.ctime(),
        meta.ctime_nsec()
    ))
}
