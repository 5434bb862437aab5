//! `rederive_file` (the artifact streamed from its file) and `rederive`
//! (the artifact in memory) are one engine: the same report for the same
//! artifact, and a damaged file is refused with an error naming it.

use std::io::Write;

use crate::common::{LOADGEN_OLD_Z, anvil_tiny, fixture_path, reference, reference_path};
use anvil_evidence::{Options, RederiveError, rederive, rederive_file, rederive_file_with, rederive_with};
use serde_json::Value;

fn file_of(text: &str) -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(text.as_bytes()).unwrap();
    f
}

#[test]
fn the_committed_artifacts_give_the_same_report_from_file_and_memory() {
    for (path, value) in
        [(reference_path(), reference()), (fixture_path("anvil-tiny-benchmark-v1.json"), anvil_tiny())]
    {
        let name = path.display();
        let from_file = rederive_file(&path).unwrap();
        assert_eq!(from_file, rederive(&value).unwrap(), "{name}");
        assert!(
            from_file.fields_checked() > from_file.checked.len() as u64,
            "{name}: per-request fields counted"
        );
        let opts = Options { ci_z: LOADGEN_OLD_Z };
        assert_eq!(rederive_file_with(&path, &opts).unwrap(), rederive_with(&value, &opts).unwrap());
    }
}

#[test]
fn records_before_the_head_read_the_same() {
    // JSON does not order members: the records first, the head after.
    let a = anvil_tiny();
    let obj = a.as_object().unwrap();
    let mut text = format!("{{\"request_timings\": {}", obj["request_timings"]);
    for (k, v) in obj.iter().filter(|(k, _)| *k != "request_timings") {
        text.push_str(&format!(", {}: {v}", Value::from(k.as_str())));
    }
    text.push('}');
    let f = file_of(&text);
    assert_eq!(rederive_file(f.path()).unwrap(), rederive(&a).unwrap());
}

#[test]
fn a_mismatch_is_still_listed_at_its_own_record() {
    let mut a = reference();
    a["request_timings"][5]["tpot_ms"] = Value::from(1.5);
    let f = file_of(&a.to_string());
    let report = rederive_file(f.path()).unwrap();
    assert!(report.mismatch("request_timings[5].tpot_ms").is_some(), "{:?}", report.mismatches);
    assert_eq!(report, rederive(&a).unwrap());
}

#[test]
fn a_truncated_or_garbage_file_is_refused_naming_it() {
    let text = std::fs::read_to_string(reference_path()).unwrap();
    for damaged in
        [&text[..text.len() / 2], "not json at all", "", "{\"schema\": \"anvil-serving.benchmark/v1\""]
    {
        let f = file_of(damaged);
        let err = rederive_file(f.path()).unwrap_err();
        let shown = err.to_string();
        assert!(matches!(err, RederiveError::File { .. }), "{damaged:.40}: {err:?}");
        assert!(shown.contains(&f.path().display().to_string()), "{shown}");
    }
    let missing = std::env::temp_dir().join("anvil-evidence-no-such-artifact.json");
    assert!(
        rederive_file(&missing).unwrap_err().to_string().contains("anvil-evidence-no-such-artifact.json")
    );
}

#[test]
fn other_documents_are_refused_as_in_memory() {
    for text in [
        r#"{"schema": "x", "request_timings": []}"#,
        r#"{"schema": "anvil-serving.benchmark/v1"}"#,
        r#"{"schema": "anvil-serving.benchmark/v1", "request_timings": 3}"#,
        r#"{"schema": "anvil-serving.benchmark/v1", "request_timings": [1]}"#,
    ] {
        let v: Value = serde_json::from_str(text).unwrap();
        assert_eq!(rederive_file(file_of(text).path()).unwrap_err(), rederive(&v).unwrap_err(), "{text}");
    }
    // A top-level array is not an object: named as a damaged file.
    assert!(matches!(rederive_file(file_of("[]").path()), Err(RederiveError::File { .. })));
}

#[test]
fn per_request_fields_are_counted_per_field_not_listed_per_record() {
    let mut a = reference();
    for i in [1, 4, 7] {
        a["request_timings"][i]["connect_ms"] = Value::from(0.5);
    }
    let report = rederive(&a).unwrap();
    let listed: Vec<&str> = report
        .unchecked
        .iter()
        .map(|u| u.path.as_str())
        .filter(|p| p.starts_with("request_timings"))
        .collect();
    assert_eq!(listed, ["request_timings[*].connect_ms"]);
    assert_eq!(report.unchecked_per_request["request_timings[*].connect_ms"], 3);
    let records = a["request_timings"].as_array().unwrap().len() as u64;
    assert_eq!(report.checked_per_request["request_timings[*].tpot_ms"], records);
    // The summary counts every field: 6 unchecked outside the records, 3 in them.
    assert!(report.summary().ends_with(", 9 unchecked"), "{}", report.summary());
    assert!(report.summary().contains(&format!("checked {} fields", report.fields_checked())));
    assert!(
        report.was_checked("request_timings[2].tpot_ms") && !report.was_checked("request_timings[2].nope")
    );
}
