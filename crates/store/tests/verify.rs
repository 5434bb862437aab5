//! `verify` finds damage, names the paths, and survives garbage.

use std::fs;
use std::path::Path;

use crate::common::{fp, new_store, put, run_record};
use anvil_store::{ProblemKind, VerifyReport};

fn make_writable(path: &Path) {
    let mut permissions = fs::metadata(path).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    permissions.set_readonly(false);
    fs::set_permissions(path, permissions).unwrap();
}

fn kinds(report: &VerifyReport) -> Vec<&ProblemKind> {
    report.problems.iter().map(|p| &p.kind).collect()
}

#[test]
fn clean_store_verifies_clean() {
    let t = new_store();
    put(&t.store, "a");
    put(&t.store, "b");
    t.store.record_run(&run_record("r1", "recipe", "2025-01-01T00:00:00Z", &["a", "b"])).unwrap();
    let report = t.store.verify().unwrap();
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(report.entries_checked, 2);
    assert_eq!(report.files_checked, 6);
    assert!(report.bytes_checked > 0);
}

#[test]
fn flipped_byte_is_a_content_mismatch() {
    let t = new_store();
    let entry = put(&t.store, "a");
    put(&t.store, "untouched");
    let log = entry.path_of("logs/server.log");
    make_writable(&log);
    let mut bytes = fs::read(&log).unwrap();
    bytes[0] ^= 0x01;
    fs::write(&log, &bytes).unwrap();

    let report = t.store.verify().unwrap();
    assert_eq!(report.problems.len(), 1, "{report:?}");
    let problem = &report.problems[0];
    assert_eq!(problem.path, log);
    assert_eq!(problem.fingerprint, Some(fp("a")));
    assert!(matches!(&problem.kind, ProblemKind::ContentMismatch { expected_bytes: 9, actual_bytes: 9, .. }));
    assert!(problem.to_string().contains("content changed"), "{problem}");
    assert_eq!(t.store.verify_entry(&fp("a")).len(), 1);
    assert!(t.store.verify_entry(&fp("untouched")).is_empty());
}

#[test]
fn missing_and_extra_files_are_reported() {
    let t = new_store();
    let entry = put(&t.store, "a");
    fs::remove_file(entry.path_of("logs/server.log")).unwrap();
    fs::write(entry.dir.join("planted.txt"), "not mine").unwrap();

    let report = t.store.verify().unwrap();
    assert_eq!(report.problems.len(), 2, "{report:?}");
    assert!(
        report
            .problems
            .iter()
            .any(|p| p.path == entry.path_of("logs/server.log") && p.kind == ProblemKind::MissingFile)
    );
    assert!(
        report.problems.iter().any(|p| p.path == entry.dir.join("planted.txt")
            && matches!(p.kind, ProblemKind::UnexpectedFile { .. }))
    );
}

#[test]
fn truncated_manifest_is_a_bad_manifest() {
    let t = new_store();
    let entry = put(&t.store, "a");
    let manifest = entry.dir.join("manifest.json");
    make_writable(&manifest);
    let bytes = fs::read(&manifest).unwrap();
    fs::write(&manifest, &bytes[..bytes.len() / 2]).unwrap();

    let report = t.store.verify().unwrap();
    assert_eq!(report.problems.len(), 1, "{report:?}");
    assert_eq!(report.problems[0].path, manifest);
    assert!(matches!(report.problems[0].kind, ProblemKind::BadManifest { .. }));
    // Readers get an error, not a panic or a half entry.
    assert!(t.store.read(&fp("a")).is_err());
}

#[test]
fn edited_manifest_hash_is_detected() {
    let t = new_store();
    let entry = put(&t.store, "a");
    let manifest_path = entry.dir.join("manifest.json");
    make_writable(&manifest_path);
    let text = fs::read_to_string(&manifest_path).unwrap();
    let log_hash = &entry.files.iter().find(|f| f.name == "logs/server.log").unwrap().blake3;
    fs::write(&manifest_path, text.replace(log_hash.as_str(), &"0".repeat(64))).unwrap();
    let report = t.store.verify().unwrap();
    assert!(matches!(kinds(&report)[..], [ProblemKind::BadManifest { .. }]), "{report:?}");
}

#[test]
fn manifest_pointing_outside_the_entry_is_refused() {
    let t = new_store();
    let entry = put(&t.store, "a");
    let manifest_path = entry.dir.join("manifest.json");
    make_writable(&manifest_path);
    let text = fs::read_to_string(&manifest_path).unwrap();
    fs::write(&manifest_path, text.replace("\"logs/server.log\"", "\"../../../../STORE\"")).unwrap();
    let report = t.store.verify().unwrap();
    assert!(matches!(kinds(&report)[..], [ProblemKind::BadManifest { .. }]), "{report:?}");
}

#[test]
fn garbage_in_the_store_is_reported_without_panicking() {
    let t = new_store();
    put(&t.store, "a");
    let root = t.store.root().to_path_buf();
    fs::write(root.join("random.bin"), [0xffu8, 0x00, 0x13]).unwrap();
    fs::write(root.join("entries/not-a-shard"), "x").unwrap();
    fs::create_dir_all(root.join("entries/ab/not-a-fingerprint")).unwrap();
    fs::create_dir_all(root.join("entries/zz")).unwrap();
    // An entry-shaped directory with nothing inside.
    let empty_entry = root.join(format!("entries/00/00{}", "1".repeat(62)));
    fs::create_dir_all(&empty_entry).unwrap();
    fs::write(root.join("runs/broken.json"), "{ this is not json").unwrap();
    fs::write(root.join("runs/wrong-shape.json"), "[1, 2, 3]").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let weird = std::ffi::OsStr::from_bytes(b"bad-\xff-name");
        fs::write(root.join(weird), "x").unwrap();
        fs::write(t.store.entry_dir(&fp("a")).join(weird), "x").unwrap();
        std::os::unix::fs::symlink("/etc", root.join("entries/cd")).unwrap();
    }

    let report = t.store.verify().unwrap();
    let count = |pred: fn(&ProblemKind) -> bool| report.problems.iter().filter(|p| pred(&p.kind)).count();
    assert_eq!(count(|k| matches!(k, ProblemKind::BadRunRecord { .. })), 2, "{report:#?}");
    assert_eq!(count(|k| matches!(k, ProblemKind::BadManifest { .. })), 1, "{report:#?}");
    let expected_strays = if cfg!(unix) { 6 } else { 4 };
    assert_eq!(count(|k| matches!(k, ProblemKind::StrayPath { .. })), expected_strays, "{report:#?}");
    if cfg!(unix) {
        assert_eq!(count(|k| matches!(k, ProblemKind::UnexpectedFile { .. })), 1, "{report:#?}");
    }
    // Every problem can be printed and serialized, non-UTF-8 paths included.
    for problem in &report.problems {
        assert!(!problem.to_string().is_empty());
    }
    let json = serde_json::to_value(&report).unwrap();
    assert!(json["problems"].as_array().unwrap().len() == report.problems.len());
}

#[test]
fn runs_referencing_missing_entries_are_reported() {
    let t = new_store();
    put(&t.store, "present");
    t.store.record_run(&run_record("r1", "recipe", "2025-01-01T00:00:00Z", &["present", "absent"])).unwrap();
    let report = t.store.verify().unwrap();
    assert_eq!(report.problems.len(), 1, "{report:?}");
    assert_eq!(report.problems[0].fingerprint, Some(fp("absent")));
    assert!(
        matches!(&report.problems[0].kind, ProblemKind::MissingReferencedEntry { node, .. } if node == "absent")
    );
}
