//! One small cell on the simulated engine: its stored `benchmark.json`
//! carries every field of the reference artifact, and its numbers follow
//! the capacity-v4 definitions.

use crate::common::protocol::assert_follows_reference;
use crate::common::{Scratch, entry_dir};
use serde_json::Value;

const RECIPE: &str = include_str!("fixtures/recipes/cell.kdl");
const REFERENCE: &str = include_str!("fixtures/reference/benchmark-v1.example.json");

/// Run the cell recipe once; return the scratch and the cell's fingerprint.
fn run_cell() -> (Scratch, String, Value) {
    let scratch = Scratch::new();
    let recipe = scratch.write("recipe.kdl", RECIPE);
    let summary = scratch.run(&recipe, &[], 0).summary();
    assert_eq!((summary.ran, summary.failed), (2, 0));
    let fingerprint = scratch.plan(&recipe, &[]).fingerprint("tiny");
    let path = entry_dir(&scratch.store(), &fingerprint).join("benchmark.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    let artifact: Value = serde_json::from_str(&text).expect("benchmark.json is JSON");
    (scratch, fingerprint, artifact)
}

#[test]
fn the_artifact_has_every_reference_field_and_the_numbers_follow_the_protocol() {
    let (scratch, fingerprint, artifact) = run_cell();
    let reference: Value = serde_json::from_str(REFERENCE).expect("reference JSON");

    assert_eq!(assert_follows_reference(&artifact, "tiny"), 6, "every record is eligible and checked");

    assert_eq!(artifact["schema"], "anvil-serving.benchmark/v1");
    assert_eq!(artifact["measurement_protocol"], reference["measurement_protocol"]);
    assert_eq!(artifact["configuration_fingerprint"], Value::String(fingerprint.clone()));
    assert_eq!(artifact["simulated"], true);
    assert_eq!(artifact["completed"], 6);

    let records = artifact["request_timings"].as_array().expect("request_timings is a list");
    assert_eq!(records.len(), 6);
    for (i, record) in records.iter().enumerate() {
        assert_eq!(record["request_canary"]["passed"], true, "record {i}: {record}");
    }

    // `show --json` lists the same file under the same fingerprint.
    let shown = scratch.anvil(&["show", &fingerprint[..12], "--json"]).expect_code(0).json();
    assert_eq!(shown["fingerprint"], Value::String(fingerprint));
    let files: Vec<&str> = shown["files"]
        .as_array()
        .map(|f| f.iter().filter_map(|x| x["name"].as_str()).collect())
        .unwrap_or_default();
    assert!(files.contains(&"benchmark.json"), "{files:?}");
    assert_eq!(shown["result"]["simulated"], true);
}

#[test]
fn a_stored_cell_does_not_start_its_server_again() {
    let (scratch, _, _) = run_cell();
    let recipe = scratch.path().join("recipe.kdl");
    let plan = scratch.plan(&recipe, &[]);
    assert_eq!(plan.statuses()["sim"], "cached", "a server whose cells are stored will not start");
    let outcome = scratch.run(&recipe, &[], 0);
    assert_eq!(outcome.summary().ran, 0);
    // A changed workload setting reruns the cell (and the gate reading it).
    scratch.write("recipe.kdl", &RECIPE.replace("requests 6", "requests 4"));
    assert_eq!(scratch.plan(&recipe, &[]).pending(), ["tiny", "tiny-ok"]);
}
