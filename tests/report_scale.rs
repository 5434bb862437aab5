//! A benchmark, not a check of speed: `anvil report` on a synthetic run of
//! 100 cells × 1,000 requests (written straight into a store), printing the
//! render time and the page size of each format. It asserts only that the
//! page is complete and that the timelines say they were downsampled.
//!
//! `cargo test --release --test main report_scale:: -- --nocapture` for numbers
//! that mean something (a debug build is several times slower).

use std::time::Instant;

use crate::common::Scratch;
use anvil_store::{Fingerprint, Store};
use serde_json::{Value, json};

const CELLS: usize = 100;
const REQUESTS: usize = 1000;

fn artifact(cell: usize) -> Value {
    let concurrency = 1 + (cell % 10) * 4;
    let timings: Vec<Value> = (0..REQUESTS)
        .map(|i| {
            let send = (i / concurrency) as f64 * 400.0 + (i % concurrency) as f64 * 0.3;
            let ttft = 40.0 + (i % 17) as f64 * 3.5 + cell as f64 * 0.1;
            let e2e = ttft + 320.0 + (i % 29) as f64;
            let gaps: Vec<u32> = (0..64).map(|k| 4000 + ((i * 31 + k * 17) % 2500) as u32).collect();
            json!({
                "request_index": i, "repeat": 0, "actual_send_ms": send, "finished_ms": send + e2e,
                "ttft_ms": ttft, "time_to_first_output_ms": ttft, "e2e_ms": e2e,
                "tpot_ms": (e2e - ttft) / 63.0, "decode_tok_s": 63_000.0 / (e2e - ttft), "output_tokens": 64,
                "chunk_gaps_us": gaps, "performance_eligible": i % 97 != 0,
                "failure": if i % 97 == 0 { json!({"class": "timeout", "detail": "synthetic"}) } else { Value::Null },
                "request_canary": {"passed": true},
            })
        })
        .collect();
    json!({
        "schema": "anvil-serving.benchmark/v1", "engine": "anvil-sim", "model": "synthetic",
        "concurrency": concurrency, "arrival": {"kind": "closed_loop"}, "requests": REQUESTS,
        "targets": [{"label": format!("server-{}", cell / 10)}], "simulated": true,
        "failure_counts": {"timeout": REQUESTS.div_ceil(97)},
        "telemetry": {"server_metrics_delta": [{"replica": "r0", "delta": {"vllm:generation_tokens_total": 64000.0}}],
                      "gpu": {"available": false, "why": "synthetic"}},
        "request_timings": timings,
    })
}

fn cell_result(cell: usize) -> Value {
    let tok_s = 500.0 + (cell % 10) as f64 * 90.0 - (cell / 10) as f64 * 7.0;
    json!({
        "schema": "anvil-serving.cell-result/v1", "engine": "anvil-sim", "simulated": true,
        "completed": REQUESTS - REQUESTS.div_ceil(97), "failed": REQUESTS.div_ceil(97),
        "aggregate_tok_s": tok_s, "ttft_p50_ms": 60.0 + (cell % 10) as f64 * 11.0, "ttft_p99_ms": 120.0,
        "decode_tok_s_mean": 190.0, "wall_clock_ms": 40_000.0, "performance_eligible": true,
        "canaries_passed": REQUESTS, "requests": REQUESTS, "repeats": {},
        "metrics": {"e2e_p50_ms": 400.0, "tpot_mean_ms": 5.1, "ttft_p95_ms": 110.0, "e2e_p99_ms": 450.0},
    })
}

#[test]
fn a_hundred_cells_of_a_thousand_requests() {
    let scratch = Scratch::new();
    let store = Store::open(&scratch.store()).expect("open the store");
    let started = Instant::now();
    let mut nodes = Vec::new();
    for cell in 0..CELLS {
        let preimage = json!({"kind": "cell", "name": format!("cell-{cell:03}"), "synthetic": true});
        let fp = Fingerprint::of_bytes(&serde_json::to_vec(&preimage).unwrap());
        let mut staged = store.stage(&fp).expect("stage");
        staged.write_json("preimage.json", &preimage).unwrap();
        staged.write_json("result.json", &cell_result(cell)).unwrap();
        staged.write_bytes("benchmark.json", &serde_json::to_vec(&artifact(cell)).unwrap()).unwrap();
        staged.commit().expect("commit");
        nodes.push(json!({"name": format!("cell-{cell:03}"), "kind": "cell", "fingerprint": fp.to_string(),
                          "status": "ran", "duration_ms": 40_000, "detail": "synthetic"}));
    }
    let run: anvil_store::RunRecord = serde_json::from_value(json!({
        "run_id": "run-synthetic", "recipe": "/nowhere/synthetic.kdl", "recipe_path": "synthetic.kdl",
        "started_at": "2026-01-01T00:00:00Z", "finished_at": "2026-01-01T01:00:00Z", "status": "succeeded",
        "nodes": nodes, "extra": {"campaign": "synthetic"},
    }))
    .expect("a run record");
    store.record_run(&run).expect("record the run");
    let stored_bytes: u64 = walk(&scratch.store());
    eprintln!(
        "wrote {CELLS} cells × {REQUESTS} requests ({:.1} MB stored) in {:.1}s",
        stored_bytes as f64 / 1e6,
        started.elapsed().as_secs_f64()
    );

    println!("| format | render (incl. process start) | output |");
    println!("|---|---:|---:|");
    for (format, file) in [("html", "big.html"), ("md", "big.md"), ("csv", "big.csv")] {
        let t = Instant::now();
        scratch.anvil(&["report", "--run", "run-synthetic", "--format", format, "-o", file]).expect_code(0);
        let elapsed = t.elapsed();
        let size = std::fs::metadata(scratch.path().join(file)).map(|m| m.len()).unwrap_or(0);
        println!("| {format} | {:.2} s | {:.1} KiB |", elapsed.as_secs_f64(), size as f64 / 1024.0);
    }
    let html = scratch.read("big.html");
    // ANVIL_REPORT_SCALE_KEEP=FILE keeps the page, e.g. to time a browser opening it.
    if let Some(keep) = std::env::var_os("ANVIL_REPORT_SCALE_KEEP") {
        std::fs::write(&keep, &html).expect("keep the page");
    }
    assert_eq!(html.matches("<details class=\"cell\"").count(), CELLS, "a section per cell");
    assert!(
        html.contains("downsampled: 77 of 1000 requests (every 13th)"),
        "the timeline says it is thinned"
    );
    assert!(html.contains("CDF drawn through 200 of"), "the CDF says it is thinned");
    assert!(html.contains("Pareto front"));
    assert_eq!(scratch.read("big.csv").lines().count(), CELLS + 1);
}

fn walk(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => walk(&e.path()),
            _ => e.metadata().map(|m| m.len()).unwrap_or(0),
        })
        .sum()
}
