//! run_cell against the simulated engine (crates/sim), which shares no
//! protocol code with the load generator: each checks the other.

use anvil_loadgen::{CellContext, CellSpec, Progress, Target, ThinkingMode, run_cell};
use serde_json::Value;

fn reference() -> Value {
    let path =
        concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/reference/benchmark-v1.example.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("reference artifact")).expect("reference JSON")
}

fn missing(ours: &Value, theirs: &Value) -> Vec<String> {
    let ours = ours.as_object().expect("object");
    theirs.as_object().expect("object").keys().filter(|k| !ours.contains_key(*k)).cloned().collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_cell_is_complete_consistent_and_calibrated() {
    let mut profile = anvil_sim::SimProfile::default();
    profile.set("decode-step-ms", "1").unwrap();
    profile.set("thinking", "true").unwrap();
    profile.set("reasoning-tokens", "8").unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let sim = anvil_sim::spawn(profile, listener).await.unwrap();
    let spec = CellSpec {
        name: "sim".into(),
        model: "sim-model".into(),
        context_tokens: 512,
        concurrency: 4,
        requests: 12,
        warmup_requests: 2,
        response_words: 20,
        max_tokens: 256,
        thinking: ThinkingMode::On,
        seed: 5,
        request_timeout_ms: 30_000,
        ..CellSpec::default()
    };
    let target =
        [Target { base_url: sim.base_url(), api_key: None, label: "sim".into(), tls: Default::default() }];
    let ctx = CellContext { engine: "sim".into(), simulated: true, ..CellContext::default() };
    let quiet = |_: &Progress| {};
    let report = run_cell(&spec, &target, &ctx, &quiet).await.expect("cell runs");
    let a = &report.artifact;
    let reference = reference();
    assert_eq!(missing(a, &reference), Vec::<String>::new());
    assert_eq!(missing(&a["metrics"], &reference["metrics"]), Vec::<String>::new());
    assert_eq!(missing(&a["request_timings"][0], &reference["request_timings"][0]), Vec::<String>::new());
    assert_eq!(a["failed"], 0, "failures: {}", a["failures"]);
    assert_eq!(a["simulated"], true);
    assert_eq!(a["calibration"]["converged"], true, "{}", a["calibration"]);

    let mut tokens = 0;
    for r in &report.records {
        let (e2e, tfo, ttft) = (r.e2e_ms.unwrap(), r.time_to_first_output_ms.unwrap(), r.ttft_ms.unwrap());
        let n = r.output_tokens.unwrap() as f64;
        assert!(close(r.generation_ms.unwrap(), e2e - tfo));
        assert!(close(r.decode_tok_s.unwrap(), (n - 1.0) / (r.generation_ms.unwrap() / 1000.0)));
        assert!(close(r.effective_prefill_tok_s.unwrap(), r.prompt_tokens.unwrap() as f64 / (tfo / 1000.0)));
        assert!(tfo <= ttft, "thinking on: reasoning comes before content");
        assert!(r.reasoning_chunks > 0);
        assert!(r.request_canary.as_ref().unwrap().passed);
        assert!(r.prompt_tokens.unwrap().abs_diff(512) <= 12, "prompt tokens {:?}", r.prompt_tokens);
        tokens += r.output_tokens.unwrap();
    }
    let wall = a["wall_clock_ms"].as_f64().unwrap();
    assert!(close(a["metrics"]["throughput_tok_s"].as_f64().unwrap(), tokens as f64 / (wall / 1000.0)));
    sim.shutdown().await.unwrap();
}
