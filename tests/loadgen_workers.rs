//! `anvil run --loadgen-workers N`: one cell's open loop spread over N
//! runtime threads and N sender lanes keeps the one seeded schedule, one
//! clock and one record log: the same requests at the same intended times,
//! recorded once each in order, an artifact the checker re-derives, and the
//! same fingerprint (how a cell is measured is not what it is).

use serde_json::Value;

use crate::common::Scratch;

const RECIPE: &str = r#"
campaign "workers" { seed 5; }
server "sim" { model "m"; sim { prefill-tok-s 200000; decode-step-ms 1; max-running-seqs 64; } }
workload "w" { context-tokens 32; max-tokens 8; arrival "poisson"; rate 400; requests 600; warmup-requests 8; concurrency 64; canaries #false; }
cell "open" server="sim" workload="w"
"#;

fn measured(extra: &[&str]) -> (Scratch, Value) {
    let scratch = Scratch::new();
    let recipe = scratch.write("workers.kdl", RECIPE);
    let summary = scratch.run(&recipe, extra, 0).summary();
    assert_eq!((summary.ran, summary.failed), (1, 0), "the cell ran");
    let artifact = scratch.stored_json(&recipe, "open", "benchmark.json");
    (scratch, artifact)
}

fn column(artifact: &Value, key: &str) -> Vec<Value> {
    artifact["request_timings"].as_array().expect("request_timings").iter().map(|r| r[key].clone()).collect()
}

#[test]
fn two_workers_keep_the_schedule_the_records_and_the_fingerprint() {
    let (two, spread) = measured(&["--loadgen-workers", "2"]);
    let (_one, single) = measured(&[]);

    assert_eq!(spread["loadgen_workers"], 2);
    assert_eq!(single["loadgen_workers"], 1);
    assert_eq!(spread["configuration_fingerprint"], single["configuration_fingerprint"]);
    assert_eq!(spread["completed"], 600, "failures: {}", spread["failures"]);

    // Every request once, in index order, due at the one schedule's times.
    let indices: Vec<Value> = (0..600u64).map(Value::from).collect();
    assert_eq!(column(&spread, "request_index"), indices);
    assert_eq!(column(&spread, "intended_send_ms"), column(&single, "intended_send_ms"));

    // The checker re-derives every figure from the records.
    let path = two.path().join("spread.json");
    std::fs::write(&path, serde_json::to_vec(&spread).unwrap()).unwrap();
    two.anvil(&["verify", path.to_str().unwrap()]).expect_code(0);

    // Stored is stored: a rerun with one worker measures nothing again.
    let recipe = two.path().join("workers.kdl");
    let again = two.run(&recipe, &[], 0).summary();
    assert_eq!(again.ran, 0, "{again:?}");
}

#[test]
fn a_worker_count_out_of_range_is_refused_before_anything_runs() {
    let scratch = Scratch::new();
    let recipe = scratch.write("workers.kdl", RECIPE);
    let refused = scratch.run(&recipe, &["--loadgen-workers", "0"], 2);
    assert!(refused.transcript().contains("--loadgen-workers"), "{}", refused.transcript());
    assert!(!scratch.store().exists(), "no store was opened");
}
