//! What a result-reading step (gate, screen, decision) hashes for each stored
//! result it reads: the blake3 of the result's canonical JSON.
//!
//! A stored result never changes, so its digest is kept once computed, in
//! the store's cache (`cache/result-digests/<fingerprint>`): replanning a
//! 1,000-cell sweep whose screen and gate read every cell otherwise parses
//! and re-serializes every one of those results, 212 ms a plan instead of 34
//! (docs/benchmarks.md, "Planning: the parse and digest caches"). The kept
//! digest names the `result.json` it was taken from (device, inode, size,
//! times); a result written again under the same fingerprint (after gc, or
//! by hand) is a different file, so its digest is computed afresh.

use std::fs;
use std::path::Path;

use anvil_store::{Fingerprint, Store};

use super::canonical::canonical_bytes;

/// `blake3:<hex>` of the stored result of `fingerprint`; None when the
/// store does not hold it.
pub fn result_digest(store: &Store, fingerprint: &Fingerprint) -> Option<String> {
    if !store.contains(fingerprint) {
        return None;
    }
    let result_file = store.result_file(fingerprint);
    let identity = anvil_store::cache::file_identity(&result_file);
    let kept = store.cache_dir("result-digests").join(fingerprint.to_string());
    if let Some(identity) = &identity
        && let Some(digest) = read_kept(&kept, identity)
    {
        return Some(digest);
    }
    let result = store.read_result(fingerprint).ok().flatten()?;
    let digest = format!("blake3:{}", blake3::hash(&canonical_bytes(&result)).to_hex());
    if let Some(identity) = identity {
        // A cache that cannot be written only costs the next run this work.
        let _ = keep(&kept, &identity, &digest);
    }
    Some(digest)
}

/// A kept digest is two lines: the result file's identity, then the digest.
fn read_kept(kept: &Path, identity: &str) -> Option<String> {
    let text = fs::read_to_string(kept).ok()?;
    let (kept_identity, digest) = text.trim_end().split_once('\n')?;
    let hex = digest.strip_prefix("blake3:")?;
    let well_formed = hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit());
    (kept_identity == identity && well_formed).then(|| digest.to_string())
}

fn keep(kept: &Path, identity: &str, digest: &str) -> std::io::Result<()> {
    anvil_store::cache::write_whole(kept, format!("{identity}\n{digest}\n").as_bytes())
}

#[cfg(test)]
mod tests {
    use anvil_store::{Fingerprint, Store};
    use serde_json::{Value, json};

    use super::result_digest;
    use crate::plan::canonical_bytes;

    fn store_result(store: &Store, fp: &Fingerprint, result: &Value) {
        let mut staged = store.stage(fp).unwrap();
        staged.write_json("preimage.json", &json!({"step": "x"})).unwrap();
        staged.write_json("result.json", result).unwrap();
        staged.commit().unwrap();
    }

    fn computed(result: &Value) -> String {
        format!("blake3:{}", blake3::hash(&canonical_bytes(result)).to_hex())
    }

    #[test]
    fn a_kept_digest_is_the_computed_one_until_the_result_is_written_again() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let fp = Fingerprint::of_bytes(b"a cell");
        assert_eq!(result_digest(&store, &fp), None, "nothing stored, nothing to hash");

        let first = json!({"b": 1, "a": [1.5, "x"]});
        store_result(&store, &fp, &first);
        assert_eq!(result_digest(&store, &fp), Some(computed(&first)), "computed, then kept");
        let kept = dir.path().join("cache/result-digests").join(fp.to_string());
        assert!(kept.is_file());
        assert_eq!(result_digest(&store, &fp), Some(computed(&first)), "read back from what was kept");

        // gc removes the unrooted entry; a new run stores another result under the same fingerprint.
        store.gc(false).unwrap();
        assert_eq!(result_digest(&store, &fp), None, "the kept digest outlives no entry");
        let second = json!({"b": 2});
        store_result(&store, &fp, &second);
        assert_eq!(result_digest(&store, &fp), Some(computed(&second)), "a new result file is hashed again");

        std::fs::write(&kept, "garbage").unwrap();
        assert_eq!(result_digest(&store, &fp), Some(computed(&second)), "a damaged kept digest is ignored");
    }
}
