//! run_cell over real HTTP on loopback against a hand-written SSE server.

use std::collections::HashMap;
use std::time::Duration;

use crate::support;
use crate::support::{Fault, ServerConfig};
use anvil_loadgen::{
    Api, Arrival, Balance, CellContext, CellReport, CellSpec, FailureClass, Progress, RequestRecord, Slo,
    Target, render_table, run_cell,
};
use serde_json::Value;

fn spec(requests: u32, concurrency: u32) -> CellSpec {
    CellSpec {
        name: "raw".into(),
        model: "test-model".into(),
        context_tokens: 400,
        concurrency,
        requests,
        max_tokens: 64,
        seed: 17,
        request_timeout_ms: 10_000,
        ..CellSpec::default()
    }
}

fn target(server: &support::RawServer, label: &str) -> Target {
    Target {
        base_url: server.base_url(),
        api_key: Some("secret-key".into()),
        label: label.into(),
        tls: Default::default(),
    }
}

async fn run(spec: &CellSpec, targets: &[Target], ctx: &CellContext) -> CellReport {
    let no_progress = |_: &Progress| {};
    run_cell(spec, targets, ctx, &no_progress).await.expect("cell runs")
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// The protocol's derived identities, on one eligible record.
fn check_identities(r: &RequestRecord) {
    let e2e = r.e2e_ms.unwrap();
    let tfo = r.time_to_first_output_ms.unwrap();
    let ttft = r.ttft_ms.unwrap();
    let n = r.output_tokens.unwrap() as f64;
    assert!(close(r.generation_ms.unwrap(), e2e - tfo));
    assert!(close(r.visible_generation_ms.unwrap(), e2e - ttft));
    assert!(close(r.decode_tok_s.unwrap(), (n - 1.0) / (r.generation_ms.unwrap() / 1000.0)));
    assert!(close(r.tpot_ms.unwrap(), r.generation_ms.unwrap() / (n - 1.0)));
    assert_eq!(r.tpot_ms, r.mean_inter_token_latency_ms);
    assert_eq!(r.tpot_ms, r.mean_time_per_output_token_ms);
    let prefill = r.prompt_tokens.unwrap() as f64 / (tfo / 1000.0);
    assert!(close(r.effective_prefill_tok_s.unwrap(), prefill));
    assert!(tfo <= ttft && ttft <= e2e);
}

fn reference() -> Value {
    let path =
        concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/reference/benchmark-v1.example.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("reference artifact")).expect("reference JSON")
}

fn missing_keys(ours: &Value, theirs: &Value) -> Vec<String> {
    let ours = ours.as_object().unwrap();
    theirs.as_object().unwrap().keys().filter(|k| !ours.contains_key(*k)).cloned().collect()
}

#[tokio::test]
async fn happy_path_carries_every_reference_field_and_identity() {
    let server = support::spawn(ServerConfig::default()).await;
    let ctx = CellContext { engine: "raw".into(), run_id: "run-1".into(), ..CellContext::default() };
    let report = run(&spec(24, 4), &[target(&server, "a")], &ctx).await;
    let a = &report.artifact;

    let reference = reference();
    assert_eq!(missing_keys(a, &reference), Vec::<String>::new(), "top-level");
    assert_eq!(missing_keys(&a["metrics"], &reference["metrics"]), Vec::<String>::new(), "metrics");
    assert_eq!(missing_keys(&a["metric_population"], &reference["metric_population"]), Vec::<String>::new());
    assert_eq!(
        missing_keys(&a["timing_methodology"], &reference["timing_methodology"]),
        Vec::<String>::new()
    );
    assert_eq!(missing_keys(&a["sampling"], &reference["sampling"]), Vec::<String>::new());
    assert_eq!(missing_keys(&a["serve_flags"], &reference["serve_flags"]), Vec::<String>::new());
    let timing = &a["request_timings"][0];
    assert_eq!(
        missing_keys(timing, &reference["request_timings"][0]),
        Vec::<String>::new(),
        "request_timings"
    );
    assert_eq!(
        missing_keys(&timing["request_canary"], &reference["request_timings"][0]["request_canary"]),
        Vec::<String>::new()
    );

    let text = a.to_string();
    assert!(!text.contains("secret-key"), "API key leaked");
    assert!(!text.contains(&server.addr.to_string()), "base_url leaked");
    assert_eq!(a["base_url"], "[redacted]");
    assert_eq!(a["configuration_fingerprint"], Value::Null);

    assert_eq!(a["completed"], 24);
    assert_eq!(a["failed"], 0);
    assert_eq!(report.records.len(), 24);
    let mut tokens = 0;
    for r in &report.records {
        assert!(r.performance_eligible, "{r:?}");
        assert!(r.request_canary.as_ref().unwrap().passed);
        assert_eq!(r.reasoning_chunks, 3);
        assert_eq!(r.content_chunks, 6);
        assert_eq!(r.output_tokens, Some(9));
        assert_eq!(r.chunk_gaps_us.len(), 8);
        assert_eq!(r.planned_context_tokens, 400);
        assert_eq!(r.output_token_source, "usage");
        check_identities(r);
        // Linux stamps every read on loopback with its receive time.
        assert_eq!(r.receive_clock, "kernel", "{r:?}");
        assert!(r.response_reads >= 1);
        assert!(r.first_content_read_delay_us.is_some(), "{r:?}");
        tokens += r.output_tokens.unwrap();
    }
    let m = &a["metrics"];
    assert_eq!(m["output_tokens"], tokens);
    assert_eq!(m["ttft_samples"], 24);
    assert_eq!(m["request_canary_passed"], 24);
    assert_eq!(m["reasoning_chunks"], 72);
    let wall = a["wall_clock_ms"].as_f64().unwrap();
    let first_send = report.records.iter().map(|r| r.actual_send_ms).fold(f64::INFINITY, f64::min);
    let last_end = report.records.iter().map(|r| r.finished_ms).fold(0.0, f64::max);
    assert!(close(wall, last_end - first_send));
    assert!(close(m["throughput_tok_s"].as_f64().unwrap(), tokens as f64 / (wall / 1000.0)));
    assert_eq!(m["chunk_gap_samples"], 24 * 8);
    assert_eq!(m["first_content_read_delay_samples"], 24);
    assert!(m["first_content_read_delay_min_ms"].as_f64().unwrap() >= 0.0);
    assert_eq!(a["metric_population"]["p99_interpretation"], "descriptive-nearest-rank-only");

    // Calibration reached the planned prompt length as the server counts it.
    let cal = &a["calibration"];
    assert_eq!(cal["converged"], true, "{cal}");
    for r in &report.records {
        assert!(r.prompt_tokens.unwrap().abs_diff(400) <= 6, "prompt_tokens {:?}", r.prompt_tokens);
    }
    // Calibration and warmup never reuse a measured index (no cache priming).
    assert!(server.requests.load(std::sync::atomic::Ordering::Relaxed) >= 25);
    // Keep-alive: calibration, warmup and all 24 requests ran over one
    // connection per concurrent stream.
    assert_eq!(server.connections.load(std::sync::atomic::Ordering::Relaxed), 4);

    let table = render_table(a);
    assert!(table.contains("ttft (ms)") && table.contains("completed 24"), "{table}");
    assert!(table.contains("first content read delay (ms)") && table.contains("send lag (ms)"), "{table}");
    assert_eq!(report.artifact["completed"], 24);
}

#[tokio::test]
async fn faults_are_classified_kept_and_excluded() {
    let faults = HashMap::from([
        (1, Fault::Http500),
        (2, Fault::DisconnectMidStream),
        (3, Fault::MalformedEvent),
        (4, Fault::MissingUsage),
        (5, Fault::ForeignCanary),
        (6, Fault::InStreamError),
        (7, Fault::Stall(Duration::from_millis(1500))),
    ]);
    let server = support::spawn(ServerConfig { faults, ..ServerConfig::default() }).await;
    let mut spec = spec(10, 3);
    spec.context_tokens = 0; // no calibration: indices map 1:1 to faults
    spec.request_timeout_ms = 700;
    let report = run(&spec, &[target(&server, "a")], &CellContext::default()).await;
    let class = |i: u64| report.records[i as usize].failure.as_ref().map(|f| f.class);
    assert_eq!(class(0), None);
    assert_eq!(class(1), Some(FailureClass::HttpStatus));
    assert_eq!(report.records[1].http_status, Some(500));
    assert_eq!(class(2), Some(FailureClass::Disconnect));
    assert_eq!(class(3), Some(FailureClass::MalformedStream));
    assert_eq!(class(4), Some(FailureClass::MissingUsage));
    assert_eq!(class(5), Some(FailureClass::CanaryFailure));
    assert_eq!(report.records[5].request_canary.as_ref().unwrap().foreign_marker_count, 1);
    assert_eq!(class(6), Some(FailureClass::StreamError));
    assert_eq!(class(7), Some(FailureClass::Timeout));
    assert_eq!(class(8), None);

    let a = &report.artifact;
    assert_eq!(a["completed"], 3);
    assert_eq!(a["failed"], 7);
    assert_eq!(a["failures"].as_array().unwrap().len(), 7);
    assert_eq!(a["request_timings"].as_array().unwrap().len(), 10, "failed requests stay in request_timings");
    assert_eq!(a["metrics"]["ttft_samples"], 3);
    assert_eq!(a["metrics"]["throughput_performance_eligible"], false);
    assert_eq!(a["performance_eligible"], false);
    assert_eq!(a["metric_population"]["excluded_requests"], 7);
    // A reply that arrived whole but broke the contract is a successful response.
    assert_eq!(a["metric_population"]["successful_requests"], 5);
    // Eligible requests' tokens only.
    assert_eq!(a["metrics"]["output_tokens"], 27);
}

#[tokio::test]
async fn two_replicas_split_exactly_and_balance() {
    let (s1, s2) =
        (support::spawn(ServerConfig::default()).await, support::spawn(ServerConfig::default()).await);
    let targets = [target(&s1, "r1"), target(&s2, "r2")];
    for balance in [Balance::RoundRobin, Balance::LeastOutstanding] {
        let ctx = CellContext { balance, ..CellContext::default() };
        let report = run(&spec(20, 4), &targets, &ctx).await;
        let a = &report.artifact;
        let rows = a["per_target"].as_array().unwrap();
        assert_eq!(rows.len(), 2);
        let attempted: u64 = rows.iter().map(|r| r["attempted"].as_u64().unwrap()).sum();
        assert_eq!(attempted, 20);
        if balance == Balance::RoundRobin {
            assert!(rows.iter().all(|r| r["attempted"] == 10), "{rows:?}");
        } else {
            assert!(rows.iter().all(|r| r["attempted"].as_u64().unwrap() > 0), "{rows:?}");
        }
        let sum: f64 = rows.iter().map(|r| r["throughput_tok_s"].as_f64().unwrap()).sum();
        assert!(close(sum, a["metrics"]["throughput_tok_s"].as_f64().unwrap()));
    }
}

#[tokio::test]
async fn open_loop_repeats_slo_and_progress() {
    let server = support::spawn(ServerConfig::default()).await;
    let mut spec = spec(8, 8);
    spec.arrival = Arrival::Poisson { rate_per_s: 200.0 };
    spec.repeat = 3;
    spec.warmup_requests = 2;
    spec.slo = Some(Slo { ttft_ms: Some(60_000.0), e2e_ms: Some(0.001), ..Slo::default() });
    let seen = std::sync::Mutex::new(Vec::new());
    let progress = |p: &Progress| seen.lock().unwrap().push(*p);
    let report = run_cell(&spec, &[target(&server, "a")], &CellContext::default(), &progress).await.unwrap();
    let a = &report.artifact;
    assert_eq!(a["requests"], 24);
    let indices: Vec<u64> = report.records.iter().map(|r| r.request_index).collect();
    assert_eq!(indices, (0..24).collect::<Vec<_>>());
    let runs = a["repeats"]["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 3);
    let across = &a["repeats"]["across_repeats"]["throughput_tok_s"];
    assert_eq!(across["samples"], 3);
    assert!(across["ci95_low"].as_f64().unwrap() <= across["ci95_high"].as_f64().unwrap());
    // Total wall = sum of per-repeat spans; throughput identity holds over it.
    let wall: f64 = runs.iter().map(|r| r["wall_clock_ms"].as_f64().unwrap()).sum();
    assert!(close(wall, a["wall_clock_ms"].as_f64().unwrap()));
    assert_eq!(a["metrics"]["send_lag_samples"], 24);
    assert!(report.records.iter().all(|r| r.send_lag_ms >= 0.0));
    // An impossible e2e SLO: nobody meets it.
    assert_eq!(a["metrics"]["goodput_requests"], 0);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.last().map(|p| (p.done, p.total)), Some((24, 24)));
}

#[tokio::test]
async fn completions_and_responses_apis() {
    let server = support::spawn(ServerConfig::default()).await;
    for api in [Api::Completions, Api::Responses] {
        let mut spec = spec(4, 2);
        spec.api = api;
        let report = run(&spec, &[target(&server, "a")], &CellContext::default()).await;
        assert_eq!(report.artifact["completed"], 4, "{api:?}: {}", report.artifact["failures"]);
        for r in &report.records {
            check_identities(r);
        }
        let reasoning: u32 = report.records.iter().map(|r| r.reasoning_chunks).sum();
        assert_eq!(reasoning, if api == Api::Responses { 12 } else { 0 });
    }
}

#[tokio::test]
async fn unreachable_target_is_a_connect_failure_not_a_panic() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let mut spec = spec(2, 1);
    spec.context_tokens = 0;
    let t = Target {
        base_url: format!("http://{addr}"),
        api_key: None,
        label: "gone".into(),
        tls: Default::default(),
    };
    let report = run(&spec, &[t], &CellContext::default()).await;
    assert!(report.records.iter().all(|r| r.failure.as_ref().unwrap().class == FailureClass::Connect));
    // Calibration against an unreachable server is an error, not a silent guess.
    let no_progress = |_: &Progress| {};
    let t = Target {
        base_url: format!("http://{addr}"),
        api_key: None,
        label: "gone".into(),
        tls: Default::default(),
    };
    assert!(run_cell(&self::spec(2, 1), &[t], &CellContext::default(), &no_progress).await.is_err());
}

/// A server that closes every connection after its response while
/// advertising keep-alive: the closed idle connections are noticed before
/// reuse (or the request is re-sent once), and no request fails.
#[tokio::test]
async fn connections_closed_after_each_response_are_not_reused() {
    let server = support::spawn(ServerConfig { close_after_response: true, ..ServerConfig::default() }).await;
    for arrival in [Arrival::ClosedLoop, Arrival::Poisson { rate_per_s: 400.0 }] {
        let mut spec = spec(12, 3);
        spec.arrival = arrival;
        let report = run(&spec, &[target(&server, "a")], &CellContext::default()).await;
        assert_eq!(report.artifact["failed"], 0, "{arrival:?}: {}", report.artifact["failures"]);
        assert_eq!(report.records.len(), 12);
    }
    // One connection per request: calibration probes, warmups and the 24
    // measured requests each opened their own.
    let requests = server.requests.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(server.connections.load(std::sync::atomic::Ordering::Relaxed), requests);
}

/// `a` and `b` are the same JSON, floats within a few ulps (the records are
/// parsed back from the record log, and serde_json's parser may be 1 ulp off).
fn same_json(a: &Value, b: &Value, path: &str) {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) if x.is_f64() || y.is_f64() => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            assert!((x - y).abs() <= 1e-12 * x.abs().max(y.abs()), "{path}: {x} vs {y}");
        }
        (Value::Array(x), Value::Array(y)) => {
            assert_eq!(x.len(), y.len(), "{path}: lengths");
            for (i, (x, y)) in x.iter().zip(y).enumerate() {
                same_json(x, y, &format!("{path}[{i}]"));
            }
        }
        (Value::Object(x), Value::Object(y)) => {
            assert_eq!(x.keys().collect::<Vec<_>>(), y.keys().collect::<Vec<_>>(), "{path}: keys");
            for (k, v) in x {
                same_json(v, &y[k], &format!("{path}.{k}"));
            }
        }
        _ => assert_eq!(a, b, "{path}"),
    }
}

#[tokio::test]
async fn the_streamed_artifact_is_the_in_memory_one() {
    let faults = HashMap::from([(1, Fault::Http500), (4, Fault::MissingUsage)]);
    let server = support::spawn(ServerConfig { faults, ..ServerConfig::default() }).await;
    let spec = CellSpec {
        context_tokens: 0,
        repeat: 2,
        slo: Some(Slo { ttft_ms: Some(500.0), ..Slo::default() }),
        ..spec(6, 3)
    };
    let targets = [target(&server, "a"), target(&server, "b")];
    let ctx = CellContext { balance: Balance::RoundRobin, ..CellContext::default() };
    let dir = std::env::temp_dir().join(format!("anvil-loadgen-streamed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let no_progress = |_: &Progress| {};
    let cell =
        anvil_loadgen::run_cell_streamed(&spec, &targets, &ctx, &no_progress, &dir).await.expect("cell runs");
    // The record log's files are unlinked: nothing is left in the directory.
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    let mut artifact = cell.artifact.clone();
    artifact.other.insert("added_by_caller".into(), serde_json::json!({"k": [1, 2]}));
    let mut streamed = Vec::new();
    cell.write_artifact(&artifact, &mut streamed).unwrap();
    let streamed: Value = serde_json::from_slice(&streamed).expect("valid JSON");
    assert_eq!(streamed["request_timings"].as_array().unwrap().len(), 12);
    assert_eq!(streamed["failures"].as_array().unwrap().len(), 2);
    assert_eq!(cell.failures(1).unwrap().len(), 1);
    let report = cell.into_report().unwrap();
    let mut whole = report.artifact.clone();
    whole["added_by_caller"] = serde_json::json!({"k": [1, 2]});
    same_json(&streamed, &whole, "");
    // Pretty output is the serde_json layout.
    let mut again = Vec::new();
    serde_json::to_writer_pretty(&mut again, &streamed).unwrap();
    let indices: Vec<u64> = report.records.iter().map(|r| r.request_index).collect();
    assert_eq!(indices, (0..12).collect::<Vec<_>>());
    for r in &report.records {
        assert!(r.connection_id > 0, "{r:?}");
        // Connections were opened ahead: no request of the fault-free repeat
        // connected (in the first, an HTTP 500 closes its connection).
        if r.repeat == 1 {
            assert_eq!(r.connect_ms, None, "request {}", r.request_index);
        }
    }
    let ahead = streamed["connections"]["opened_ahead"].as_array().unwrap();
    assert_eq!(streamed["connections"]["connect"], "ahead");
    assert!(!ahead.is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn on_demand_connects_inside_the_measurement() {
    let server = support::spawn(ServerConfig::default()).await;
    let spec = CellSpec {
        context_tokens: 0,
        warmup_requests: 4,
        connect: anvil_loadgen::Connect::OnDemand,
        ..spec(8, 4)
    };
    let report = run(&spec, &[target(&server, "a")], &CellContext::default()).await;
    let connected = report.records.iter().filter(|r| r.connect_ms.is_some()).count();
    // Warmup's connections were closed: the first wave connects, the rest reuse.
    assert_eq!(connected, 4, "{:?}", report.records.iter().map(|r| r.connect_ms).collect::<Vec<_>>());
    assert_eq!(report.artifact["connections"]["connect"], "on-demand");
}
