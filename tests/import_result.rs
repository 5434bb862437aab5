//! `anvil import-result`: the peer tools' real result files
//! (tests/fixtures/peers/, made by vLLM bench serve 0.33.0, AIPerf 0.13.0
//! and guidellm 0.8.1 against anvil's sim) imported into a scratch store
//! by the real binary; the tools' printed summaries re-derived, read here
//! from the fixture files themselves; the stored artifact verified; and a
//! comparison with an anvil cell of the vLLM fixture's workload.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{Scratch, entry_dir};

fn fixture(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/peers").join(path)
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).expect("read the fixture")).expect("the fixture is JSON")
}

/// A value of `root` at `a.b[2].c`, read here (not through anvil's code).
fn at<'a>(root: &'a Value, path: &str) -> Option<&'a Value> {
    let mut cur = root;
    for part in path.split('.') {
        let (key, index) = match part.split_once('[') {
            Some((key, rest)) => (key, rest.trim_end_matches(']').parse::<usize>().ok()),
            None => (part, None),
        };
        cur = cur.get(key)?;
        if let Some(i) = index {
            cur = cur.get(i)?;
        }
    }
    Some(cur)
}

/// Imports `target` and returns the one result of its `--json` output.
fn import(scratch: &Scratch, target: &Path, code: i32) -> Value {
    let out = scratch.anvil(&["import-result", target.to_str().unwrap(), "--json"]).expect_code(code);
    let json = out.json();
    assert_eq!(json["results"].as_array().map(Vec::len), Some(1), "{}", out.stdout);
    json["results"][0].clone()
}

/// Every check's printed value is the fixture's own value at the place the
/// check names, and the value re-derived from the per-request data equals
/// it to the tool's rounding (full doubles: 1e-9 relative).
fn assert_rederived(result: &Value, printed_file: &Value, place: impl Fn(&str) -> String) {
    let checks = result["checks"].as_array().expect("checks");
    for metric in ["TTFT", "TPOT", "ITL", "E2E"] {
        for stat in ["mean", "p50", "p90", "p95", "p99"] {
            assert!(
                checks.iter().any(|c| c["metric"] == metric && c["stat"] == stat),
                "no check of {metric} {stat}: {checks:#?}"
            );
        }
    }
    for c in checks {
        let path = place(c["printed_at"].as_str().unwrap());
        let printed = at(printed_file, &path)
            .and_then(Value::as_f64)
            .unwrap_or_else(|| panic!("{path} in the fixture"));
        assert_eq!(c["printed"].as_f64(), Some(printed), "{path}");
        let derived = c["rederived"].as_f64().unwrap_or_else(|| panic!("{path}: nothing re-derived"));
        assert!(
            (derived - printed).abs() <= 1e-9 * printed.abs().max(derived.abs()) + 1e-12,
            "MISMATCH {} {}: the file printed {printed}, its own per-request data give {derived}",
            c["metric"],
            c["stat"]
        );
        assert_eq!(c["matches"], true);
    }
}

/// The stored artifact: the unfilled fields absent, `anvil verify` clean.
fn assert_stored(scratch: &Scratch, result: &Value) -> Value {
    let dir = entry_dir(&scratch.store(), result["fingerprint"].as_str().unwrap());
    let path = dir.join("benchmark.json");
    let artifact = read_json(&path);
    assert_eq!(artifact["schema"], "anvil-serving.benchmark/v1");
    assert_eq!(artifact["imported_from"]["tool"], result["tool"]);
    assert_eq!(artifact["requests"], result["requests"]);
    let records = artifact["request_timings"].as_array().expect("request_timings");
    assert_eq!(records.len() as u64, result["requests"].as_u64().unwrap());
    let unfilled = result["unfilled"].as_array().expect("unfilled");
    assert!(!unfilled.is_empty());
    for u in unfilled {
        let field = u["field"].as_str().unwrap();
        assert!(!u["why"].as_str().unwrap().is_empty(), "{field} has a reason");
        match field.strip_prefix("request_timings[*].") {
            Some(key) => {
                assert!(records.iter().all(|r| r.get(key).is_none()), "{key} is absent from every record")
            }
            None => assert!(artifact.get(field).is_none(), "{field} is absent from the artifact"),
        }
    }
    // A successful request has its timings in ms, never a 0 placeholder.
    let first = &records[0];
    assert!(first["ttft_ms"].as_f64().is_some_and(|v| v > 0.0), "{first}");
    let verify = scratch.anvil(&["verify", path.to_str().unwrap()]).expect_code(0);
    assert!(verify.stdout.contains("0 mismatches"), "{}", verify.transcript());
    artifact
}

/// An error report's words on one line (miette wraps and frames them).
fn flat(stderr: &str) -> String {
    stderr.replace(['│', '×'], " ").split_whitespace().collect::<Vec<_>>().join(" ")
}

fn entries(scratch: &Scratch) -> usize {
    walk(&scratch.store().join("entries"))
}

fn walk(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| if e.path().join("benchmark.json").exists() { 1 } else { walk(&e.path()) })
                .sum()
        })
        .unwrap_or(0)
}

#[test]
fn vllm_bench_serve_detailed_result_imports_and_its_summaries_rederive() {
    let scratch = Scratch::new();
    let file = fixture("vllm-bench/vllm-bench.json");
    let result = import(&scratch, &file, 0);
    assert_eq!((result["tool"].as_str(), result["version"].as_str()), (Some("vllm-bench"), None));
    assert!(result["version_note"].as_str().unwrap().contains("records no vLLM version"));
    let fixture_json = read_json(&file);
    assert_eq!(result["requests"], fixture_json["num_prompts"]);
    assert_eq!(result["failed"], fixture_json["failed"]);
    assert_rederived(&result, &fixture_json, str::to_string);
    let unfilled: Vec<&str> =
        result["unfilled"].as_array().unwrap().iter().map(|u| u["field"].as_str().unwrap()).collect();
    assert!(unfilled.contains(&"base_url") && unfilled.contains(&"engine"), "{unfilled:?}");
    let artifact = assert_stored(&scratch, &result);
    assert_eq!(
        (artifact["model"].as_str(), artifact["api"].as_str()),
        (Some("anvil-sim"), Some("completions"))
    );
    assert_eq!(artifact["concurrency"], 4);
    // The text form says the same, for a person.
    let text = scratch.anvil(&["import-result", file.to_str().unwrap()]).expect_code(0);
    for words in [
        "imported vLLM bench serve",
        "requests 50, failed 0",
        "base_url: vLLM's result file records no server URL",
        "all equal to the tool's rounding",
        "already stored",
    ] {
        assert!(text.stdout.contains(words), "{words:?} in\n{}", text.stdout);
    }
}

#[test]
fn an_aiperf_export_imports_from_either_file_or_its_folder_as_one_entry() {
    let scratch = Scratch::new();
    let folder = fixture("aiperf");
    let result = import(&scratch, &folder, 0);
    assert_eq!((result["tool"].as_str(), result["version"].as_str()), (Some("aiperf"), Some("0.13.0")));
    let summary = read_json(&folder.join("profile_export_aiperf.json"));
    assert_eq!(result["requests"].as_f64(), summary["request_count"]["avg"].as_f64());
    assert_rederived(&result, &summary, str::to_string);
    let artifact = assert_stored(&scratch, &result);
    assert_eq!(artifact["imported_from"]["version"], summary["aiperf_version"]);
    // Token counts are the server's usage, as anvil's are (not AIPerf's client-side OSL).
    assert_eq!(
        artifact["metrics"]["output_tokens"].as_f64(),
        summary["total_usage_completion_tokens"]["avg"].as_f64()
    );
    let before = (entries(&scratch), scratch.runs().len());
    for file in ["profile_export.jsonl", "profile_export_aiperf.json"] {
        let again = import(&scratch, &folder.join(file), 0);
        assert_eq!(again["fingerprint"], result["fingerprint"], "{file}");
        assert_eq!(again["added"], false);
    }
    assert_eq!((entries(&scratch), scratch.runs().len()), before, "a second import adds nothing");
}

#[test]
fn a_guidellm_report_imports_and_its_weighted_percentiles_rederive() {
    let scratch = Scratch::new();
    let file = fixture("guidellm/benchmarks.json");
    let result = import(&scratch, &file, 0);
    assert_eq!((result["tool"].as_str(), result["version"].as_str()), (Some("guidellm"), Some("0.8.1")));
    let report = read_json(&file);
    assert_eq!(result["requests"], report["benchmarks"][0]["metrics"]["request_totals"]["total"]);
    assert_rederived(&result, &report, str::to_string);
    assert_stored(&scratch, &result);
    // Stored like a cell: gc keeps it, export-data reads it through its run.
    scratch.anvil(&["gc"]).expect_code(0);
    assert_eq!(entries(&scratch), 1, "gc keeps an imported result");
    let run = scratch.runs()[0]["run_id"].as_str().unwrap().to_string();
    let out = scratch.anvil(&["export-data", &run, "-o", "data"]).expect_code(0);
    assert!(out.stdout.contains("(50 rows)"), "{}", out.stdout);
    let md = scratch.anvil(&["report", "--run", &run, "--format", "md"]).expect_code(0);
    assert!(md.stdout.contains("guidellm-benchmarks"), "{}", md.stdout);
    scratch.anvil(&["show", &result["fingerprint"].as_str().unwrap()[..12]]).expect_code(0);
}

#[test]
fn garbage_and_unknown_versions_fail_with_what_anvil_reads() {
    let scratch = Scratch::new();
    let garbage = scratch.write("garbage.json", "{\"hello\": 1}");
    let out = scratch.anvil(&["import-result", garbage.to_str().unwrap()]).expect_code(2);
    assert!(
        flat(&out.stderr).contains("not a result anvil recognises") && flat(&out.stderr).contains("guidellm"),
        "{}",
        out.stderr
    );
    let text = scratch.write("notes.txt", "not json at all");
    scratch.anvil(&["import-result", text.to_str().unwrap()]).expect_code(2);

    let mut report = read_json(&fixture("guidellm/benchmarks.json"));
    report["metadata"]["version"] = 99.into();
    let newer = scratch.write("newer.json", &report.to_string());
    let out = scratch.anvil(&["import-result", newer.to_str().unwrap()]).expect_code(2);
    assert!(
        flat(&out.stderr).contains("metadata.version") && flat(&out.stderr).contains("version 2"),
        "{}",
        out.stderr
    );

    let mut summary = read_json(&fixture("aiperf/profile_export_aiperf.json"));
    summary["schema_version"] = "9.0".into();
    scratch.write("aiperf/profile_export_aiperf.json", &summary.to_string());
    let records = std::fs::read_to_string(fixture("aiperf/profile_export.jsonl")).unwrap();
    scratch.write("aiperf/profile_export.jsonl", &records);
    let out = scratch.anvil(&["import-result", "aiperf"]).expect_code(2);
    assert!(
        flat(&out.stderr).contains("schema_version") && flat(&out.stderr).contains("1.4"),
        "{}",
        out.stderr
    );

    // Without --save-detailed, and with a malformed value: the field is named.
    let mut vllm = read_json(&fixture("vllm-bench/vllm-bench.json"));
    vllm["ttfts"][3] = "soon".into();
    let bad = scratch.write("bad-vllm.json", &vllm.to_string());
    let out = scratch.anvil(&["import-result", bad.to_str().unwrap()]).expect_code(2);
    assert!(flat(&out.stderr).contains("ttfts[3]"), "{}", out.stderr);
    vllm.as_object_mut().unwrap().remove("ttfts");
    let summary_only = scratch.write("summary-vllm.json", &vllm.to_string());
    let out = scratch.anvil(&["import-result", summary_only.to_str().unwrap()]).expect_code(2);
    assert!(flat(&out.stderr).contains("--save-detailed"), "{}", out.stderr);
    let out = scratch.anvil(&[
        "import-result",
        "--from",
        "guidellm",
        fixture("vllm-bench/vllm-bench.json").to_str().unwrap(),
    ]);
    let out = out.expect_code(2);
    assert!(flat(&out.stderr).contains("looks like a vLLM bench serve result"), "{}", out.stderr);
    assert_eq!(entries(&scratch), 0, "nothing stored for bad input");
}

/// The vLLM fixture's workload as an anvil cell, on the sim profile the
/// fixtures were made against (tests/fixtures/peers/README.md): completions,
/// ~128-token prompts, 32 output tokens, 50 requests, 4 at a time.
const SAME_WORKLOAD: &str = r#"
server "sim" {
    model "anvil-sim"
    sim { decode-step-ms 4; decode-step-ms-per-seq 0.25; step-jitter-pct 10; seed 1; }
}
cell "c" server="sim" {
    api "completions"
    context-tokens 128
    max-tokens 32
    extra-body { ignore_eos #true; }
    requests 50
    concurrency 4
    canaries #false
}
"#;

#[test]
fn compare_with_an_imported_vllm_result_names_definitions_before_verdicts() {
    let scratch = Scratch::new();
    let result = import(&scratch, &fixture("vllm-bench/vllm-bench.json"), 0);
    let recipe = scratch.write("same.kdl", SAME_WORKLOAD);
    scratch.run(&recipe, &[], 0);
    let fp = result["fingerprint"].as_str().unwrap();
    let out = scratch.anvil(&["compare", &fp[..16], recipe.to_str().unwrap()]).expect_code(0);
    let text = &out.stdout;
    let definitions = text.find("\ndefinitions").unwrap_or_else(|| panic!("a definitions section\n{text}"));
    let verdicts = text.find("\ncells").expect("the cells' verdicts");
    assert!(definitions < verdicts, "definitions come before any verdict\n{text}");
    for words in [
        "ttft              DIFFER",
        "any `choices`, even an empty one",
        "tpot              DIFFER",
        "(latency − ttft) / (output_len − 1)",
        "numpy linear interpolation",
        "not judged, the difference may come from the definitions: ttft_p50_ms, ttft_p95_ms, tpot_p50_ms, tpot_p95_ms, decode_tok_s_mean",
    ] {
        assert!(text.contains(words), "{words:?} in\n{text}");
    }
    // The rest keep their verdicts.
    let table = &text[verdicts..];
    for metric in ["throughput_tok_s", "e2e_p50_ms"] {
        let line = table
            .lines()
            .find(|l| l.trim_start().starts_with(metric))
            .unwrap_or_else(|| panic!("{metric}\n{text}"));
        assert!(
            ["reproduced", "differs", "inconclusive"].iter().any(|v| line.contains(v))
                && !line.contains("not judged"),
            "{line}"
        );
    }
    let ttft = table.lines().find(|l| l.trim_start().starts_with("ttft_p50_ms")).unwrap();
    assert!(ttft.contains("not judged: definitions differ"), "{ttft}");
    // The workload facts the file has are compared like any cell's: model,
    // API, concurrency, arrival and request count agree; the prompts do
    // not. vLLM sized them at 128 of SmolLM2's tokens, which the sim counts
    // as ~215 of its own; anvil's 128 are the sim's. The server's counts
    // say so before any verdict.
    let lens = read_json(&fixture("vllm-bench/vllm-bench.json"))["input_lens"].clone();
    let lens: Vec<f64> = lens.as_array().expect("input_lens").iter().filter_map(Value::as_f64).collect();
    let vllm_mean = (lens.iter().sum::<f64>() / lens.len() as f64 * 10.0).round() / 10.0;
    let unlike = text.lines().find(|l| l.contains("NOT ALIKE")).unwrap_or_else(|| panic!("{text}"));
    assert!(
        unlike.ends_with(&format!("prompt tokens per request (measured mean) {vllm_mean:?} vs 128.0")),
        "only the measured prompt length differs: {unlike}"
    );
    let json =
        scratch.anvil(&["compare", &fp[..16], recipe.to_str().unwrap(), "--json"]).expect_code(0).json();
    let cell = &json["cells"][0];
    assert!(cell["workload"]["unrecorded"].as_array().unwrap().iter().any(|k| k == "context_tokens"));
    assert_eq!(cell["by_definition"].as_array().map(Vec::len), Some(5));
}
