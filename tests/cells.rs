//! One small cell on the simulated engine: its stored `benchmark.json`
//! carries every field of the reference artifact, and its numbers follow
//! the capacity-v4 definitions.

mod common;

use std::collections::BTreeSet;

use common::{entry_dir, Scratch};
use serde_json::Value;

const RECIPE: &str = include_str!("fixtures/recipes/cell.kdl");
const REFERENCE: &str = include_str!("fixtures/reference/benchmark-v1.example.json");

fn keys(value: &Value) -> BTreeSet<String> {
    value.as_object().map(|o| o.keys().cloned().collect()).unwrap_or_default()
}

fn number(value: &Value, what: &str) -> f64 {
    value.as_f64().unwrap_or_else(|| panic!("{what} is not a number: {value}"))
}

fn assert_close(actual: f64, expected: f64, what: &str) {
    let tolerance = 1e-6 * expected.abs().max(1e-12);
    assert!((actual - expected).abs() <= tolerance, "{what}: {actual} vs expected {expected}");
}

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

    let missing = |want: &Value, have: &Value| -> Vec<String> { keys(want).difference(&keys(have)).cloned().collect() };
    assert_eq!(missing(&reference, &artifact), Vec::<String>::new(), "top-level keys missing");
    assert_eq!(missing(&reference["metrics"], &artifact["metrics"]), Vec::<String>::new(), "metrics keys missing");
    assert_eq!(missing(&reference["request_timings"][0], &artifact["request_timings"][0]), Vec::<String>::new(), "request_timings[0] keys missing");

    assert_eq!(artifact["schema"], "anvil-serving.benchmark/v1");
    assert_eq!(artifact["measurement_protocol"], reference["measurement_protocol"]);
    assert_eq!(artifact["configuration_fingerprint"], Value::String(fingerprint.clone()));
    assert_eq!(artifact["simulated"], true);
    assert_eq!(artifact["completed"], 6);

    let records = artifact["request_timings"].as_array().expect("request_timings is a list");
    assert_eq!(records.len(), 6);
    let mut total_output = 0.0;
    for (i, record) in records.iter().enumerate() {
        let output = number(&record["output_tokens"], "output_tokens");
        let generation = number(&record["generation_ms"], "generation_ms");
        let first_output = number(&record["time_to_first_output_ms"], "time_to_first_output_ms");
        let prompt = number(&record["prompt_tokens"], "prompt_tokens");
        assert!(output > 1.0 && generation > 0.0 && first_output > 0.0, "record {i}: {record}");
        assert_close(number(&record["decode_tok_s"], "decode_tok_s"), (output - 1.0) / generation * 1000.0, &format!("record {i} decode_tok_s"));
        assert_close(number(&record["effective_prefill_tok_s"], "effective_prefill_tok_s"), prompt / first_output * 1000.0, &format!("record {i} effective_prefill_tok_s"));
        assert_close(number(&record["e2e_ms"], "e2e_ms") - first_output, generation, &format!("record {i} generation = e2e - time_to_first_output"));
        assert_eq!(record["output_token_source"], "usage");
        assert_eq!(record["request_canary"]["passed"], true, "record {i}: {record}");
        total_output += output;
    }
    let metrics = &artifact["metrics"];
    assert_close(number(&metrics["output_tokens"], "metrics.output_tokens"), total_output, "Σ output tokens");
    let wall = number(&artifact["wall_clock_ms"], "wall_clock_ms");
    assert_close(number(&metrics["throughput_tok_s"], "metrics.throughput_tok_s"), total_output / wall * 1000.0, "aggregate throughput");

    // `show --json` lists the same file under the same fingerprint.
    let shown = scratch.anvil(&["show", &fingerprint[..12], "--json"]).expect_code(0).json();
    assert_eq!(shown["fingerprint"], Value::String(fingerprint));
    let files: Vec<&str> = shown["files"].as_array().map(|f| f.iter().filter_map(|x| x["name"].as_str()).collect()).unwrap_or_default();
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
