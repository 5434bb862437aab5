//! Run records: atomic writes, ordering, lookup, forgetting.

use crate::common::{new_store, run_record};
use anvil_store::StoreError;

#[test]
fn record_list_and_find_runs() {
    let t = new_store();
    assert!(t.store.runs().unwrap().is_empty());
    assert!(t.store.last_run_of("bench").unwrap().is_none());

    // Written out of order; read back by start time.
    t.store.record_run(&run_record("run-c", "bench", "2025-03-01T10:00:00.500Z", &["x"])).unwrap();
    t.store.record_run(&run_record("run-a", "bench", "2025-03-01T09:00:00Z", &["x"])).unwrap();
    t.store.record_run(&run_record("run-b", "other", "2025-03-01T09:30:00.250Z", &["y"])).unwrap();

    let ids: Vec<String> = t.store.runs().unwrap().into_iter().map(|r| r.run_id).collect();
    assert_eq!(ids, ["run-a", "run-b", "run-c"]);
    assert_eq!(t.store.last_run_of("bench").unwrap().unwrap().run_id, "run-c");
    assert_eq!(t.store.last_run_of("other").unwrap().unwrap().run_id, "run-b");
    assert!(t.store.last_run_of("nope").unwrap().is_none());

    let original = run_record("run-a", "bench", "2025-03-01T09:00:00Z", &["x"]);
    assert_eq!(t.store.run("run-a").unwrap(), Some(original.clone()));

    // Recording again replaces (a run updates its record as it goes).
    let mut finished = original;
    finished.finished_at = Some("2025-03-01T09:05:00Z".into());
    finished.status = anvil_store::RunStatus::Failed;
    t.store.record_run(&finished).unwrap();
    assert_eq!(t.store.run("run-a").unwrap(), Some(finished));
    assert_eq!(t.store.runs().unwrap().len(), 3);

    t.store.forget_run("run-c").unwrap();
    assert_eq!(t.store.last_run_of("bench").unwrap().unwrap().run_id, "run-a");
    assert!(matches!(t.store.forget_run("run-c").unwrap_err(), StoreError::RunNotFound { .. }));
}

#[test]
fn run_ids_must_be_safe_file_names() {
    let t = new_store();
    for bad in ["", "../x", "a/b", ".hidden", "sp ace"] {
        let err = t.store.record_run(&run_record(bad, "r", "2025-01-01T00:00:00Z", &[])).unwrap_err();
        assert!(matches!(err, StoreError::InvalidRunId { .. }), "{bad:?}");
        assert!(matches!(t.store.forget_run(bad).unwrap_err(), StoreError::InvalidRunId { .. }));
    }
}

#[test]
fn a_corrupt_run_record_is_named_not_hidden() {
    let t = new_store();
    t.store.record_run(&run_record("good", "r", "2025-01-01T00:00:00Z", &[])).unwrap();
    let bad = t.store.root().join("runs/bad.json");
    std::fs::write(&bad, "{\"run_id\": 3").unwrap();
    match t.store.runs().unwrap_err() {
        StoreError::Corrupt { path, .. } => assert_eq!(path, bad),
        other => panic!("expected corrupt, got {other}"),
    }
    t.store.forget_run("bad").unwrap();
    assert_eq!(t.store.runs().unwrap().len(), 1);
}

#[test]
fn extra_and_optional_fields_round_trip_and_default() {
    let t = new_store();
    let minimal = r#"{"run_id":"m","recipe":"r","recipe_path":"/r.kdl","started_at":"2025-01-01T00:00:00Z","status":"ok"}"#;
    std::fs::write(t.store.root().join("runs/m.json"), minimal).unwrap();
    let run = t.store.run("m").unwrap().unwrap();
    assert!(run.nodes.is_empty() && run.finished_at.is_none() && run.extra.is_null());
}

#[test]
fn the_last_run_is_found_from_anvil_named_records_newest_first() {
    let t = new_store();
    let named = |id: &str, recipe: &str, at: &str| run_record(id, recipe, at, &["x"]);
    t.store.record_run(&named("run-20250301T090000-7", "bench", "2025-03-01T09:00:00Z")).unwrap();
    t.store.record_run(&named("run-20250301T100000-9", "other", "2025-03-01T10:00:00Z")).unwrap();
    // Two runs started in the same second: the id breaks the tie, as in `runs()`.
    t.store.record_run(&named("run-20250301T093000-12", "bench", "2025-03-01T09:30:00Z")).unwrap();
    t.store.record_run(&named("run-20250301T093000-3", "bench", "2025-03-01T09:30:00Z")).unwrap();
    let newest_bench = t.store.runs().unwrap().into_iter().rev().find(|r| r.recipe == "bench").unwrap();
    assert_eq!(t.store.last_run_of("bench").unwrap().unwrap().run_id, newest_bench.run_id);
    assert_eq!(t.store.last_run_of("other").unwrap().unwrap().run_id, "run-20250301T100000-9");

    // Digits that spell no date (hand-made): an unreadable time sorts first in
    // `runs()`, so it is not the newest however large its digits.
    t.store.record_run(&named("run-20251399T000000-1", "bench", "2025-13-99T00:00:00Z")).unwrap();
    assert_eq!(t.store.last_run_of("bench").unwrap().unwrap().run_id, newest_bench.run_id);
    assert_eq!(t.store.runs().unwrap()[0].run_id, "run-20251399T000000-1", "runs() agrees");

    // A record anvil did not name: its name says nothing of its time, so the
    // whole history is read and the content decides.
    t.store.record_run(&named("hand-made", "bench", "2026-01-01T00:00:00Z")).unwrap();
    assert_eq!(t.store.last_run_of("bench").unwrap().unwrap().run_id, "hand-made");
}
