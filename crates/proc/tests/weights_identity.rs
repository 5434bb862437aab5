//! Weights are identified by their bytes (a local folder) or by the
//! snapshot commit the Hugging Face cache holds (a hub id).

use std::fs::{self, File, FileTimes};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, SystemTime};

use anvil_proc::{LocalWeights, WeightsIdentity, weights_identity, weights_identity_with_hub_cache};

const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";

fn local(identity: WeightsIdentity) -> LocalWeights {
    match identity {
        WeightsIdentity::Local(local) => local,
        other => panic!("not local: {other:?}"),
    }
}

/// Sets a file's mtime an hour back: older than the racy window, so its
/// digest may be cached.
fn age(path: &Path) -> SystemTime {
    let old = SystemTime::now() - Duration::from_secs(3600);
    File::options()
        .write(true)
        .open(path)
        .expect("open")
        .set_times(FileTimes::new().set_modified(old))
        .expect("mtime");
    old
}

fn model_folder(root: &Path) {
    fs::create_dir_all(root.join("sub")).expect("dirs");
    fs::write(root.join("config.json"), "{\"hidden\": 64}").expect("config");
    fs::write(root.join("model.safetensors"), vec![7u8; 300_000]).expect("weights");
    fs::write(root.join("sub/tokenizer.json"), "{}").expect("tokenizer");
    fs::create_dir_all(root.join(".git")).expect(".git");
    fs::write(root.join(".git/HEAD"), "ref: refs/heads/main").expect("HEAD");
}

#[test]
fn a_folder_has_stable_digests_and_one_byte_changes_them() {
    let dir = tempfile::tempdir().expect("dir");
    let root = dir.path().join("model");
    model_folder(&root);
    let weights = root.display().to_string();

    let first = local(weights_identity(&weights, None, None));
    let again = local(weights_identity(&weights, Some("ignored-for-a-path"), None));
    assert_eq!(first, again);
    let paths: Vec<&str> = first.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["config.json", "model.safetensors", "sub/tokenizer.json"], ".git is skipped");
    assert_eq!(first.total_bytes, 300_000 + 14 + 2);
    assert_eq!(first.files[2].blake3.as_deref(), Some(blake3::hash(b"{}").to_hex().as_str()));
    assert_eq!(first.unreadable, None);
    assert_eq!(first.digest.len(), 64);

    let mut bytes = vec![7u8; 300_000];
    bytes[123_456] = 8;
    fs::write(root.join("model.safetensors"), bytes).expect("rewrite");
    let changed = local(weights_identity(&weights, None, None));
    assert_ne!(changed.digest, first.digest);
    assert_ne!(changed.files[1].blake3, first.files[1].blake3);
    assert_eq!(changed.files[0], first.files[0]);

    let json = serde_json::to_string(&WeightsIdentity::Local(changed.clone())).expect("serialize");
    assert!(json.contains("\"source\":\"local\""), "{json}");
    assert_eq!(local(serde_json::from_str(&json).expect("deserialize")), changed);
}

#[test]
fn the_digest_cache_spares_reading_the_bytes_again() {
    let dir = tempfile::tempdir().expect("dir");
    let root = dir.path().join("model");
    model_folder(&root);
    let cache = dir.path().join("digests");
    let file = root.join("model.safetensors");
    for path in ["config.json", "model.safetensors", "sub/tokenizer.json"] {
        age(&root.join(path));
    }
    let weights = root.display().to_string();

    let cold = local(weights_identity(&weights, None, Some(&cache)));
    assert_eq!(fs::read_dir(&cache).expect("cache").count(), 3, "one entry per file");
    let warm = local(weights_identity(&weights, None, Some(&cache)));
    assert_eq!(warm, cold);

    // Same size, same inode, mtime put back: the cache cannot tell, and its
    // answer shows the bytes were not read. This is the known limit of a
    // stat-keyed cache (git's index has it too).
    let inode = fs::metadata(&file).expect("stat").ino();
    let mtime = fs::metadata(&file).expect("stat").modified().expect("mtime");
    fs::write(&file, vec![9u8; 300_000]).expect("same size, other bytes");
    File::options()
        .write(true)
        .open(&file)
        .expect("open")
        .set_times(FileTimes::new().set_modified(mtime))
        .expect("mtime");
    assert_eq!(fs::metadata(&file).expect("stat").ino(), inode);
    let cached = local(weights_identity(&weights, None, Some(&cache)));
    assert_eq!(cached, cold, "the cached digest was used");
    let uncached = local(weights_identity(&weights, None, None));
    assert_ne!(uncached.digest, cold.digest, "without the cache the new bytes are seen");

    // Any other mtime is a miss: the new bytes are hashed.
    File::options()
        .write(true)
        .open(&file)
        .expect("open")
        .set_times(FileTimes::new().set_modified(mtime + Duration::from_secs(1)))
        .expect("mtime");
    let touched = local(weights_identity(&weights, None, Some(&cache)));
    assert_eq!(touched.digest, uncached.digest);
}

#[test]
fn a_file_written_just_now_is_not_cached() {
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("model.gguf");
    fs::write(&file, b"GGUF fresh").expect("write");
    let cache = dir.path().join("digests");

    let identity = local(weights_identity(&file.display().to_string(), None, Some(&cache)));

    assert_eq!(identity.files.len(), 1);
    assert_eq!(identity.files[0].path, "model.gguf");
    assert_eq!(identity.files[0].blake3.as_deref(), Some(blake3::hash(b"GGUF fresh").to_hex().as_str()));
    assert_eq!(fs::read_dir(&cache).map(Iterator::count).unwrap_or(0), 0, "racily clean: not cached");
}

#[test]
fn snapshot_symlinks_are_followed_and_dangling_ones_recorded() {
    let dir = tempfile::tempdir().expect("dir");
    let repo = dir.path().join("models--Org--Name");
    fs::create_dir_all(repo.join("blobs")).expect("blobs");
    fs::create_dir_all(repo.join("snapshots").join(COMMIT)).expect("snapshot");
    fs::write(repo.join("blobs/aaaa"), b"weights").expect("blob");
    let snapshot = repo.join("snapshots").join(COMMIT);
    std::os::unix::fs::symlink("../../blobs/aaaa", snapshot.join("model.safetensors")).expect("link");
    std::os::unix::fs::symlink("../../blobs/gone", snapshot.join("config.json")).expect("dangling");
    std::os::unix::fs::symlink(".", snapshot.join("loop")).expect("loop");

    let identity = local(weights_identity(&snapshot.display().to_string(), None, None));

    let paths: Vec<&str> = identity.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["config.json", "model.safetensors"], "the loop is cut");
    assert_eq!(identity.files[1].blake3.as_deref(), Some(blake3::hash(b"weights").to_hex().as_str()));
    assert!(identity.files[0].unreadable.is_some() && identity.files[0].blake3.is_none());
    assert_eq!(identity.total_bytes, 7);
}

#[test]
fn a_missing_path_is_recorded_not_an_error() {
    let identity = local(weights_identity("/no/such/weights", None, None));
    assert!(identity.unreadable.is_some());
    assert!(identity.files.is_empty());
}

#[test]
fn a_hub_id_resolves_from_the_hugging_face_cache() {
    let dir = tempfile::tempdir().expect("dir");
    let hub = dir.path();
    let refs = hub.join("models--Org--Name/refs");
    fs::create_dir_all(&refs).expect("refs");
    fs::write(refs.join("main"), COMMIT).expect("main");

    let hub_of = |identity| match identity {
        WeightsIdentity::Hub(hub) => hub,
        other => panic!("not hub: {other:?}"),
    };

    let main = hub_of(weights_identity_with_hub_cache("Org/Name", None, None, Some(hub)));
    assert_eq!(main.hub_id, "Org/Name");
    assert_eq!(main.snapshot_commit.as_deref(), Some(COMMIT));
    assert_eq!(main.why_unresolved, None);

    let tag = hub_of(weights_identity_with_hub_cache("Org/Name", Some("v2"), None, Some(hub)));
    assert_eq!(tag.revision_asked.as_deref(), Some("v2"));
    assert_eq!(tag.snapshot_commit, None);
    assert!(tag.why_unresolved.as_deref().is_some_and(|why| why.contains("v2")), "{tag:?}");

    let pinned = "fedcba9876543210fedcba9876543210fedcba98";
    let commit = hub_of(weights_identity_with_hub_cache("Other/Model", Some(pinned), None, Some(hub)));
    assert_eq!(commit.snapshot_commit.as_deref(), Some(pinned));

    let absent = hub_of(weights_identity_with_hub_cache("Other/Model", None, None, Some(hub)));
    assert!(absent.snapshot_commit.is_none() && absent.why_unresolved.is_some());

    let no_cache = hub_of(weights_identity_with_hub_cache("Org/Name", None, None, None));
    assert!(no_cache.why_unresolved.is_some());
}
