//! anvil's own artifacts re-derive: the committed fixture (failures, two
//! replicas, two repeats, SLOs) and one produced live by the anvil binary.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{LOADGEN_OLD_Z, anvil_tiny, at, every_checked, perturb};
use anvil_evidence::{Options, Report, rederive, rederive_file, rederive_with};
use serde_json::Value;

/// The only known difference: CIs of the mean written with z =
/// 1.959963984540054 instead of the protocol's 1.96 (loadgen before its fix).
fn assert_clean_but_for_old_z(artifact: &Value) -> Report {
    let report = rederive(artifact).unwrap();
    for m in &report.mismatches {
        assert!(m.path.starts_with("metrics.") && m.path.contains("_mean_ci95_"), "{m:?}");
    }
    if !report.is_clean() {
        let old = rederive_with(artifact, &Options { ci_z: LOADGEN_OLD_Z }).unwrap();
        assert!(old.is_clean(), "{:#?}", old.mismatches);
    }
    report
}

#[test]
fn committed_anvil_artifact_verifies() {
    let a = anvil_tiny();
    let report = assert_clean_but_for_old_z(&a);
    println!("{}", report.summary());
    assert!(report.fields_checked() >= 650, "{}", report.summary());
    for path in [
        "wall_clock_ms",
        "metrics.goodput_tok_s",
        "metrics.chunk_gap_p99_ms",
        "metrics.send_lag_samples",
        "repeats.runs[1].throughput_tok_s",
        "repeats.across_repeats.ttft_p50_ms.ci95_high",
        "per_target[1].throughput_tok_s",
        "failures",
        "failure_counts",
        "request_timings[3].performance_eligible",
        "request_timings[8].request_canary.passed",
        "request_timings[0].slo_met",
    ] {
        assert!(report.was_checked(path), "{path} not checked");
    }
    // Only fields anvil's runner adds next to the loadgen's, and two without a definition.
    let unchecked: Vec<&str> = report.unchecked.iter().map(|u| u.path.as_str()).collect();
    for path in &unchecked {
        assert!(
            [
                "metrics.content_chunks_s",
                "metric_population.failure_policy",
                "telemetry",
                "server_warmup",
                "server_startup_ms"
            ]
            .contains(path),
            "{path}"
        );
    }
    assert!(a["failed"].as_u64().unwrap() > 0, "the fixture exercises exclusions");
}

#[test]
fn every_checked_anvil_field_catches_its_own_edit() {
    let opts = Options { ci_z: LOADGEN_OLD_Z };
    let base = anvil_tiny();
    let checked = every_checked(&rederive_with(&base, &opts).unwrap(), &base);
    for path in &checked {
        let mut a = base.clone();
        perturb(at(&mut a, path));
        let report = rederive_with(&a, &opts).unwrap();
        assert!(report.mismatch(path).is_some(), "edit of {path} not reported: {:?}", report.mismatches);
        if !path.starts_with("request_timings") {
            assert_eq!(report.mismatches.len(), 1, "{path}: {:?}", report.mismatches);
        }
    }
}

fn find(dir: &Path, name: &str, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = entry.path();
        if p.is_dir() {
            find(&p, name, out);
        } else if p.file_name().is_some_and(|n| n == name) {
            out.push(p);
        }
    }
}

#[test]
fn live_anvil_artifact_verifies() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let bin = root.join("target/debug/anvil");
    if !bin.exists() {
        eprintln!(
            "SKIP live_anvil_artifact_verifies: {} is absent (run `cargo build` at the root)",
            bin.display()
        );
        return;
    }
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let dir = std::env::temp_dir().join(format!("anvil-evidence-live-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let recipe = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiny.kdl");
    let out = Command::new(&bin)
        .arg("run")
        .arg(&recipe)
        .arg("--store")
        .arg(dir.join("store"))
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let mut found = Vec::new();
    find(&dir.join("store"), "benchmark.json", &mut found);
    assert_eq!(found.len(), 1, "{found:?}");
    let artifact: Value = serde_json::from_str(&std::fs::read_to_string(&found[0]).unwrap()).unwrap();
    let report = assert_clean_but_for_old_z(&artifact);
    // Streamed from the file, the same engine finds the same.
    assert_eq!(rederive_file(&found[0]).unwrap(), report, "file and memory differ");
    println!("live: {}", report.summary());
    assert!(report.fields_checked() >= 600, "{}", report.summary());
    // 80 requests: the cell's own distributions are cut into batches, so
    // the batch-means intervals were re-derived, not only the independent ones.
    assert!(
        artifact["metrics"]["ttft_batches"].as_u64().is_some(),
        "{}",
        artifact["metrics"]["ttft_batches"]
    );
    assert!(report.checked.iter().any(|c| c.contains("ttft_mean_batch_ci95_low_ms")), "{}", report.summary());
    // The client's bound on its own stamps re-derives from the records too.
    for path in
        ["client_error.latency_bound_ms", "client_error.kernel_stamped", "client_error.read_delay_p99_ms"]
    {
        assert!(report.was_checked(path), "{path} not checked: {}", report.summary());
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// A send lag well under a microsecond, between two send times of ~10⁴ ms:
/// the difference of the parsed times may be an ulp of the operands away
/// from the stored lag, which is agreement (the tolerance scales with the
/// operands); a lag off by a tenth of a microsecond is still a mismatch.
#[test]
fn a_tiny_send_lag_agrees_within_its_operands_precision() {
    let mut a = anvil_tiny();
    let (intended, actual) = (12_345.678_9_f64, 12_345.679_123_4_f64);
    let lag_path = "request_timings[0].send_lag_ms";
    let records = a["request_timings"].as_array().map_or(0, Vec::len);
    assert!(records > 0 && a["request_timings"][0].get("send_lag_ms").is_some(), "the fixture has lags");
    let set = |a: &mut Value, lag: f64| {
        let r = &mut a["request_timings"][0];
        r["intended_send_ms"] = serde_json::json!(intended);
        r["actual_send_ms"] = serde_json::json!(actual);
        r["send_lag_ms"] = serde_json::json!(lag);
    };
    // Two ulps of 12,345 ms off the exact difference.
    set(&mut a, (actual - intended) + 4e-12);
    let report = rederive(&a).unwrap();
    assert!(report.mismatch(lag_path).is_none(), "{:?}", report.mismatch(lag_path));
    set(&mut a, (actual - intended) + 1e-4);
    assert!(rederive(&a).unwrap().mismatch(lag_path).is_some(), "a wrong lag passed");
}
