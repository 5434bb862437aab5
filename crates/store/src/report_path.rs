//! Serializing paths in reports. serde refuses non-UTF-8 paths, but a
//! damaged store may contain exactly those, and a report must still print.

use std::path::{Path, PathBuf};

use serde::Serializer;
use serde::ser::SerializeSeq;

pub(crate) fn lossy<S: Serializer>(path: &Path, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(&path.display())
}

pub(crate) fn lossy_list<S: Serializer>(paths: &[PathBuf], serializer: S) -> Result<S::Ok, S::Error> {
    let mut seq = serializer.serialize_seq(Some(paths.len()))?;
    for path in paths {
        seq.serialize_element(&path.display().to_string())?;
    }
    seq.end()
}
