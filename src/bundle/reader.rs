//! Reading a bundle: every member is unpacked under a folder of the
//! caller's choosing while its size and blake3 are checked against the
//! manifest. Nothing is trusted before the whole bundle has checked out:
//! callers only act on the folder once this returns Ok.

use std::fs::File;
use std::io::{self, BufReader, Read, Write};
use std::path::{Path, PathBuf};

use flate2::read::GzDecoder;

use super::manifest::{BundleManifest, FORMAT, MANIFEST_NAME, Member};
use super::member_path::safe_relative;

/// The largest manifest we read into memory (a manifest lists members, it does not hold them).
const MANIFEST_LIMIT: u64 = 64 << 20;

#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    #[error("cannot read {}: {source}", path.display())]
    Open { path: PathBuf, source: io::Error },
    #[error("not an anvil bundle: {0}")]
    NotABundle(String),
    /// A member that is missing, unexpected, of the wrong size or hash, or unreadable.
    #[error("damaged bundle: member `{member}` {why}")]
    Damaged { member: String, why: String },
    #[error("{what} {}: {source}", path.display())]
    Io { what: &'static str, path: PathBuf, source: io::Error },
}

/// A bundle that checked out: its manifest, the manifest's own bytes (whose
/// hash is the bundle's digest) and where its members were unpacked.
#[derive(Debug)]
pub struct Verified {
    pub manifest: BundleManifest,
    pub digest: String,
    pub dir: PathBuf,
    /// Uncompressed bytes read, manifest included.
    pub bytes: u64,
}

/// Unpack `bundle` into `into` (an empty folder), checking every member.
pub fn read_verified(bundle: &Path, into: &Path) -> Result<Verified, BundleError> {
    let file =
        File::open(bundle).map_err(|source| BundleError::Open { path: bundle.to_path_buf(), source })?;
    let mut archive = tar::Archive::new(GzDecoder::new(BufReader::new(file)));
    let mut entries = archive.entries().map_err(|e| BundleError::NotABundle(e.to_string()))?;

    let first = entries
        .next()
        .ok_or_else(|| BundleError::NotABundle("it is empty".into()))?
        .map_err(|e| BundleError::NotABundle(e.to_string()))?;
    let (manifest, manifest_bytes) = read_manifest(first)?;
    let mut expected = manifest.members.iter();
    let mut total = manifest_bytes.len() as u64;

    for entry in entries {
        let entry = entry.map_err(|e| damaged(expected.clone().next(), &format!("cannot be read: {e}")))?;
        let name = entry.path().map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
        let Some(member) = expected.next() else {
            return Err(BundleError::Damaged { member: name, why: "is not listed in the manifest".into() });
        };
        if name != member.path {
            return Err(BundleError::Damaged {
                member: member.path.clone(),
                why: format!("is missing (found `{name}` in its place)"),
            });
        }
        total += unpack(entry, member, into)?;
    }
    if let Some(missing) = expected.next() {
        return Err(damaged(Some(missing), "is missing (the bundle ends before it)"));
    }
    let digest = BundleManifest::digest_of(&manifest_bytes);
    Ok(Verified { manifest, digest, dir: into.to_path_buf(), bytes: total })
}

fn read_manifest(entry: tar::Entry<'_, impl Read>) -> Result<(BundleManifest, Vec<u8>), BundleError> {
    let name = entry.path().map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
    if name != MANIFEST_NAME {
        return Err(BundleError::NotABundle(format!("its first member is `{name}`, not {MANIFEST_NAME}")));
    }
    let mut bytes = Vec::new();
    entry.take(MANIFEST_LIMIT).read_to_end(&mut bytes).map_err(|e| BundleError::Damaged {
        member: MANIFEST_NAME.into(),
        why: format!("cannot be read: {e}"),
    })?;
    let manifest: BundleManifest = serde_json::from_slice(&bytes).map_err(|e| BundleError::Damaged {
        member: MANIFEST_NAME.into(),
        why: format!("is not valid: {e}"),
    })?;
    if manifest.format != FORMAT {
        return Err(BundleError::NotABundle(format!(
            "format `{}`, this anvil reads {FORMAT}",
            manifest.format
        )));
    }
    for member in &manifest.members {
        if safe_relative(&member.path).is_none() {
            return Err(damaged(Some(member), "has a path that is not a plain relative name"));
        }
    }
    Ok((manifest, bytes))
}

/// Stream one member to `into/<path>`, hashing as it goes.
fn unpack(mut entry: tar::Entry<'_, impl Read>, member: &Member, into: &Path) -> Result<u64, BundleError> {
    let relative = safe_relative(&member.path).ok_or_else(|| damaged(Some(member), "has an unsafe path"))?;
    let target = into.join(relative);
    if let Some(parent) = target.parent() {
        std::fs::create_dir_all(parent).map_err(|source| BundleError::Io {
            what: "creating",
            path: parent.to_path_buf(),
            source,
        })?;
    }
    let mut out = File::create(&target).map_err(|source| BundleError::Io {
        what: "writing",
        path: target.clone(),
        source,
    })?;
    let mut hasher = blake3::Hasher::new();
    let mut buffer = vec![0u8; 256 << 10];
    let mut bytes = 0u64;
    loop {
        let n =
            entry.read(&mut buffer).map_err(|e| damaged(Some(member), &format!("cannot be read: {e}")))?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
        out.write_all(&buffer[..n]).map_err(|source| BundleError::Io {
            what: "writing",
            path: target.clone(),
            source,
        })?;
        bytes += n as u64;
    }
    if bytes != member.bytes {
        return Err(damaged(
            Some(member),
            &format!("holds {bytes} bytes, the manifest says {}", member.bytes),
        ));
    }
    let hash = hasher.finalize().to_hex().to_string();
    if hash != member.blake3 {
        return Err(damaged(
            Some(member),
            &format!("has blake3 {hash}, the manifest says {}", member.blake3),
        ));
    }
    Ok(bytes)
}

fn damaged(member: Option<&Member>, why: &str) -> BundleError {
    BundleError::Damaged {
        member: member.map_or_else(|| "(after the last)".to_string(), |m| m.path.clone()),
        why: why.to_string(),
    }
}
