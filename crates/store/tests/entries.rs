//! Writing and reading entries: atomic commit, immutability, opening.

use std::fs;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::common::{fp, new_store, put};
use anvil_store::{Store, StoreError};
use serde_json::json;

#[test]
fn committed_entry_reads_back() {
    let t = new_store();
    assert!(!t.store.contains(&fp("a")));
    assert!(t.store.read(&fp("a")).unwrap().is_none());

    let written = put(&t.store, "a");
    assert!(t.store.contains(&fp("a")));
    let entry = t.store.read(&fp("a")).unwrap().expect("entry exists");
    assert_eq!(entry.fingerprint, fp("a"));
    assert_eq!(entry.dir, t.store.entry_dir(&fp("a")));
    assert_eq!(entry.result, json!({ "label": "a", "tokens": 42 }));
    assert_eq!(entry.preimage["node"], "a");
    let names: Vec<&str> = entry.files.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["logs/server.log", "preimage.json", "result.json"]);
    assert_eq!(entry.content_hash, written.content_hash);
    assert_eq!(fs::read_to_string(entry.path_of("logs/server.log")).unwrap(), "log of a\n");
    let log = entry.files.iter().find(|f| f.name == "logs/server.log").unwrap();
    assert_eq!(log.blake3, blake3::hash(b"log of a\n").to_hex().to_string());
    assert_eq!(log.bytes, 9);
    assert!(fs::metadata(entry.path_of("result.json")).unwrap().permissions().readonly());
    assert_eq!(t.store.list().unwrap(), vec![fp("a")]);
}

#[test]
fn copy_file_brings_outside_files_in() {
    let t = new_store();
    let outside = t.dir.path().join("raw.jsonl");
    fs::write(&outside, "{\"i\":1}\n").unwrap();
    let mut staged = t.store.stage(&fp("c")).unwrap();
    staged.write_json("preimage.json", &json!({})).unwrap();
    staged.write_json("result.json", &json!(null)).unwrap();
    staged.copy_file("raw/requests.jsonl", &outside).unwrap();
    // Files written straight into dir() count too.
    fs::write(staged.dir().join("direct.txt"), "d").unwrap();
    let entry = staged.commit().unwrap();
    let names: Vec<&str> = entry.files.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["direct.txt", "preimage.json", "raw/requests.jsonl", "result.json"]);
    assert!(t.store.verify().unwrap().is_clean());
}

#[test]
fn drop_without_commit_leaves_nothing() {
    let t = new_store();
    let staged_dir;
    {
        let mut staged = t.store.stage(&fp("x")).unwrap();
        staged.write_json("preimage.json", &json!({})).unwrap();
        staged.write_json("result.json", &json!({})).unwrap();
        staged_dir = staged.dir().to_path_buf();
        assert!(staged_dir.is_dir());
        assert!(!t.store.contains(&fp("x")));
    }
    assert!(!staged_dir.exists());
    assert!(!t.store.contains(&fp("x")));
    let staging = t.store.root().join("staging");
    assert_eq!(fs::read_dir(staging).unwrap().count(), 0, "staging dir and its lock file are gone");
    let report = t.store.verify().unwrap();
    assert!(report.is_clean() && report.leftovers.is_empty(), "{report:?}");
}

#[test]
fn commit_requires_preimage_and_result() {
    let t = new_store();
    let mut staged = t.store.stage(&fp("m")).unwrap();
    staged.write_json("result.json", &json!({})).unwrap();
    let err = staged.commit().unwrap_err();
    assert!(matches!(err, StoreError::MissingRequiredFile { name: "preimage.json", .. }), "{err}");
    assert!(!t.store.contains(&fp("m")));

    let mut staged = t.store.stage(&fp("m")).unwrap();
    staged.write_json("preimage.json", &json!({})).unwrap();
    staged.write_bytes("result.json", b"{not json").unwrap();
    assert!(matches!(staged.commit().unwrap_err(), StoreError::Corrupt { .. }));
    assert!(!t.store.contains(&fp("m")));
}

#[test]
fn bad_file_names_are_refused() {
    let t = new_store();
    let mut staged = t.store.stage(&fp("n")).unwrap();
    for name in ["../escape", "/etc/passwd", "manifest.json", "a//b", ""] {
        let err = staged.write_bytes(name, b"x").unwrap_err();
        assert!(matches!(err, StoreError::InvalidName { .. }), "{name:?}: {err}");
    }
    assert!(!t.dir.path().join("escape").exists());
}

#[cfg(unix)]
#[test]
fn symlinks_are_refused_at_commit() {
    let t = new_store();
    let mut staged = t.store.stage(&fp("s")).unwrap();
    staged.write_json("preimage.json", &json!({})).unwrap();
    staged.write_json("result.json", &json!({})).unwrap();
    std::os::unix::fs::symlink("/etc/hostname", staged.dir().join("link")).unwrap();
    let err = staged.commit().unwrap_err();
    assert!(matches!(err, StoreError::UnsupportedFile { .. }), "{err}");
    assert!(!t.store.contains(&fp("s")));
}

#[test]
fn committing_an_existing_fingerprint_changes_nothing() {
    let t = new_store();
    let first = put(&t.store, "same");
    let manifest_before = fs::read(first.dir.join("manifest.json")).unwrap();

    let mut second = t.store.stage(&fp("same")).unwrap();
    second.write_json("preimage.json", &json!({ "other": true })).unwrap();
    second.write_json("result.json", &json!({ "different": "result" })).unwrap();
    let second_dir = second.dir().to_path_buf();
    let returned = second.commit().unwrap();

    assert_eq!(returned.content_hash, first.content_hash);
    assert_eq!(returned.result, first.result);
    assert_eq!(fs::read(first.dir.join("manifest.json")).unwrap(), manifest_before);
    assert!(!second_dir.exists(), "the losing staging dir is discarded");
    assert!(t.store.verify().unwrap().is_clean());
}

#[test]
fn two_stagings_race_and_the_first_commit_wins() {
    let t = new_store();
    let mut a = t.store.stage(&fp("race")).unwrap();
    let mut b = t.store.stage(&fp("race")).unwrap();
    for (staged, who) in [(&mut a, "a"), (&mut b, "b")] {
        staged.write_json("preimage.json", &json!({})).unwrap();
        staged.write_json("result.json", &json!({ "writer": who })).unwrap();
    }
    let b_entry = b.commit().unwrap();
    let a_entry = a.commit().unwrap();
    assert_eq!(b_entry.result["writer"], "b");
    assert_eq!(a_entry.result["writer"], "b", "the later commit returns the existing entry");
    let report = t.store.verify().unwrap();
    assert!(report.is_clean() && report.leftovers.is_empty(), "{report:?}");
}

/// A reader polling while entries are committed either sees no entry or a
/// complete one, never a partial directory.
#[test]
fn readers_never_see_a_partial_entry() {
    let t = new_store();
    let store = t.store.clone();
    let done = Arc::new(AtomicBool::new(false));
    let labels: Vec<String> = (0..40).map(|i| format!("entry-{i}")).collect();

    let reader = {
        let store = store.clone();
        let done = Arc::clone(&done);
        let labels = labels.clone();
        std::thread::spawn(move || {
            let mut complete_reads = 0usize;
            while !done.load(Ordering::SeqCst) {
                for label in &labels {
                    if let Some(entry) =
                        store.read(&fp(label)).expect("read never fails on a committed entry")
                    {
                        assert_eq!(entry.result["label"], label.as_str());
                        assert_eq!(entry.files.len(), 3);
                        for file in &entry.files {
                            assert!(entry.path_of(&file.name).is_file(), "{} missing", file.name);
                        }
                        complete_reads += 1;
                    }
                }
            }
            complete_reads
        })
    };
    for label in &labels {
        put(&store, label);
    }
    done.store(true, Ordering::SeqCst);
    let complete_reads = reader.join().expect("reader saw only complete entries");
    assert!(complete_reads >= labels.len(), "the final pass reads every entry");
}

#[test]
fn open_creates_reopens_and_refuses_other_directories() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("new/nested/store");
    let store = Store::open(&root).unwrap();
    for sub in ["entries", "staging", "locks", "runs"] {
        assert!(root.join(sub).is_dir(), "{sub}");
    }
    assert!(root.join("STORE").is_file());
    put(&store, "kept");
    drop(store);
    let reopened = Store::open(&root).unwrap();
    assert!(reopened.contains(&fp("kept")));

    // An empty existing directory becomes a store.
    let empty = dir.path().join("empty");
    fs::create_dir(&empty).unwrap();
    Store::open(&empty).unwrap();

    // A directory with other things in it is not taken over.
    let project = dir.path().join("project");
    fs::create_dir(&project).unwrap();
    fs::write(project.join("notes.txt"), "mine").unwrap();
    let err = Store::open(&project).unwrap_err();
    assert!(matches!(err, StoreError::NotAStore { ref found, .. } if found == "notes.txt"), "{err}");
    assert!(err.to_string().contains("not an anvil store"));
    assert!(!project.join("STORE").exists(), "nothing written into a foreign directory");

    // A marker from a future format is refused, not overwritten.
    let future = dir.path().join("future");
    fs::create_dir(&future).unwrap();
    fs::write(future.join("STORE"), "{\"format\":\"anvil-store\",\"version\":99}\n").unwrap();
    assert!(matches!(Store::open(&future).unwrap_err(), StoreError::UnsupportedFormat { .. }));
}
