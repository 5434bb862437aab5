//! `gc` keeps what runs reference and removes the rest.

use std::fs;

use crate::common::{fp, new_store, put, run_record};
use anvil_store::StoreError;
use serde_json::json;

#[test]
fn keeps_referenced_entries_and_removes_the_rest() {
    let t = new_store();
    for label in ["a", "b", "c", "d"] {
        put(&t.store, label);
    }
    t.store.record_run(&run_record("r1", "recipe", "2025-01-01T00:00:00Z", &["a"])).unwrap();
    let mut r2 = run_record("r2", "recipe", "2025-01-02T00:00:00Z", &["b", "never-stored"]);
    r2.nodes[1].status = anvil_store::NodeStatus::Failed; // failures are never stored
    t.store.record_run(&r2).unwrap();
    let c_bytes: u64 = t.store.read(&fp("c")).unwrap().unwrap().files.iter().map(|f| f.bytes).sum();

    let preview = t.store.gc(true).unwrap();
    assert!(preview.dry_run);
    assert_eq!(preview.roots, 3);
    assert_eq!(preview.entries_kept, 2);
    let mut doomed = vec![fp("c"), fp("d")];
    doomed.sort();
    let mut previewed = preview.entries_removed.clone();
    previewed.sort();
    assert_eq!(previewed, doomed);
    assert!(preview.bytes_freed > 2 * c_bytes, "counts manifests too: {}", preview.bytes_freed);
    assert!(t.store.contains(&fp("c")) && t.store.contains(&fp("d")), "dry run removes nothing");

    let report = t.store.gc(false).unwrap();
    assert_eq!(report.entries_removed.len(), 2);
    assert_eq!(report.bytes_freed, preview.bytes_freed);
    assert!(t.store.contains(&fp("a")) && t.store.contains(&fp("b")));
    assert!(!t.store.contains(&fp("c")) && !t.store.contains(&fp("d")));
    let verify = t.store.verify().unwrap();
    assert!(verify.is_clean() && verify.leftovers.is_empty(), "{verify:?}");

    // Forgetting the last run that references an entry makes it garbage.
    t.store.forget_run("r1").unwrap();
    let report = t.store.gc(false).unwrap();
    assert_eq!(report.entries_removed, vec![fp("a")]);
    assert_eq!(t.store.list().unwrap(), vec![fp("b")]);

    // Nothing left to collect.
    let again = t.store.gc(false).unwrap();
    assert!(again.entries_removed.is_empty() && again.bytes_freed == 0, "{again:?}");
}

#[test]
fn clears_the_cache_of_derived_data_but_not_in_a_dry_run() {
    let t = new_store();
    let kept = t.store.cache_dir("result-digests").join("x");
    anvil_store::cache::write_whole(&kept, b"derived").unwrap();
    let dry = t.store.gc(true).unwrap();
    assert_eq!(dry.cache_bytes, 7);
    assert!(kept.is_file(), "a dry run changes nothing");
    let report = t.store.gc(false).unwrap();
    assert_eq!((report.cache_bytes, report.bytes_freed), (7, 7));
    assert!(!t.store.root().join("cache").exists());
    assert!(t.store.verify().unwrap().is_clean());
}

#[test]
fn removes_unheld_locks_and_keeps_held_ones() {
    let t = new_store();
    let held = t.store.lock(&fp("held")).unwrap();
    drop(t.store.lock(&fp("released")).unwrap());
    let report = t.store.gc(false).unwrap();
    assert_eq!(report.locks_removed, 1);
    assert!(held.path().is_file());
    assert!(!t.store.root().join(format!("locks/{}.lock", fp("released"))).exists());
    // The lock still excludes others after gc.
    assert!(t.store.try_lock(&fp("held")).unwrap().is_none());
    drop(held);
    assert!(t.store.try_lock(&fp("held")).unwrap().is_some());
}

#[test]
fn removes_dead_staging_but_not_live_staging() {
    let t = new_store();
    let mut live = t.store.stage(&fp("live")).unwrap();
    live.write_json("preimage.json", &json!({})).unwrap();
    // A dead writer's remains: a staging dir with no held lock, and a
    // stray temporary file from an interrupted run record write.
    let dead = t.store.root().join("staging/12345-deadbeef-0");
    fs::create_dir_all(dead.join("logs")).unwrap();
    fs::write(dead.join("logs/x.log"), "partial").unwrap();
    fs::write(t.store.root().join("staging/12345-deadbeef-0.lock"), "").unwrap();
    let tmp = t.store.root().join("runs/.tmp-1-2-3-r.json");
    fs::write(&tmp, "{").unwrap();

    let verify = t.store.verify().unwrap();
    assert!(verify.is_clean(), "leftovers are not damage: {verify:?}");
    assert_eq!(verify.leftovers.len(), 3, "{verify:?}");
    assert_eq!(verify.in_progress.len(), 2, "live dir and its lock: {verify:?}");

    let report = t.store.gc(false).unwrap();
    assert_eq!(report.leftovers_removed.len(), 3, "{report:?}");
    assert!(!dead.exists() && !tmp.exists());
    assert!(live.dir().is_dir(), "a live staging dir survives gc");

    live.write_json("result.json", &json!({})).unwrap();
    live.commit().unwrap();
    assert!(t.store.contains(&fp("live")));
}

#[test]
fn refuses_when_a_run_record_is_unreadable() {
    let t = new_store();
    put(&t.store, "a");
    fs::write(t.store.root().join("runs/broken.json"), "not json").unwrap();
    assert!(matches!(t.store.gc(false).unwrap_err(), StoreError::Corrupt { .. }));
    assert!(t.store.contains(&fp("a")), "unknown roots: nothing removed");
}

#[test]
fn leaves_unknown_files_alone() {
    let t = new_store();
    let stray = t.store.root().join("entries/ab/not-an-entry");
    fs::create_dir_all(&stray).unwrap();
    fs::write(stray.join("keep"), "x").unwrap();
    t.store.gc(false).unwrap();
    assert!(stray.join("keep").is_file(), "gc deletes only what it knows it made");
}
