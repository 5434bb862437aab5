//! `steady-load`: an open loop leads its measured requests with its
//! `warmup-requests` on its own schedule and keeps sending after them until
//! every measured one has ended; only the measured ones are recorded.

use serde_json::Value;

use crate::common::Scratch;

#[test]
fn the_measured_requests_sit_inside_a_longer_schedule() {
    let scratch = Scratch::new();
    let recipe = scratch.write(
        "steady.kdl",
        r#"
server "sim" { model "m"; sim { prefill-tok-s 200000; decode-step-ms 2; max-running-seqs 32; } }
workload "w" { context-tokens 64; max-tokens 16; arrival "poisson"; rate 150; requests 120; warmup-requests 40; canaries #false; }
cell "steady" server="sim" workload="w" { steady-load #true; }
cell "plain" server="sim" workload="w"
"#,
    );
    scratch.run(&recipe, &[], 0);
    let artifact = |cell: &str| -> Value { scratch.stored_json(&recipe, cell, "benchmark.json") };
    let steady = artifact("steady");
    assert_eq!(steady["load_margins"]["lead"], 40, "{}", steady["load_margins"]);
    let tail = steady["load_margins"]["tail"].as_u64().unwrap();
    assert!(tail <= 120, "the tail is bounded by the measured count: {tail}");
    let records = steady["request_timings"].as_array().unwrap();
    assert_eq!(records.len(), 120, "only the measured requests are recorded");
    // Their clock starts at the first measured arrival, not at the lead's.
    let first_send = records.iter().map(|r| r["intended_send_ms"].as_f64().unwrap()).fold(f64::MAX, f64::min);
    assert!(first_send.abs() < 1e-6, "{first_send}");
    // The lead replaced the closed-loop warmup.
    assert_eq!(steady["warmup"]["completed"], 0, "{}", steady["warmup"]);

    let plain = artifact("plain");
    assert!(plain.get("load_margins").is_none(), "{}", plain["load_margins"]);
    assert_eq!(plain["warmup"]["completed"], 40, "{}", plain["warmup"]);
}
