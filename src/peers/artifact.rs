//! An imported result as an `anvil-serving.benchmark/v1` artifact: the
//! tool's moments per request, and every figure derived from them with
//! anvil's own definitions and code (the load generator's distributions:
//! nearest-rank percentiles, sample stddev, the same intervals), so
//! `anvil verify` re-derives it like any cell's.

use std::collections::BTreeMap;

use anvil_loadgen::{Distribution, KeyStyle, write_distribution};
use serde_json::{Map, Value, json};

use super::imported::Imported;

/// Named in the fingerprint: a change to how files are read makes new entries.
pub const IMPORTER: &str = "anvil-import-result/1";

/// Distributions over eligible requests: artifact name, key style, record key.
const DISTRIBUTIONS: &[(&str, KeyStyle, &str)] = &[
    ("completion_tokens", KeyStyle::Plain, "output_tokens"),
    ("decode_tok_s", KeyStyle::Plain, "decode_tok_s"),
    ("e2e", KeyStyle::Millis, "e2e_ms"),
    ("effective_prefill_tok_s", KeyStyle::Plain, "effective_prefill_tok_s"),
    ("generation", KeyStyle::Millis, "generation_ms"),
    ("mean_inter_token_latency_ms", KeyStyle::Plain, "mean_inter_token_latency_ms"),
    ("mean_time_per_output_token", KeyStyle::Millis, "mean_time_per_output_token_ms"),
    ("prompt_tokens", KeyStyle::Plain, "prompt_tokens"),
    ("time_to_first_output", KeyStyle::Millis, "time_to_first_output_ms"),
    ("tpot", KeyStyle::Millis, "tpot_ms"),
    ("ttft", KeyStyle::Millis, "ttft_ms"),
    ("visible_generation", KeyStyle::Millis, "visible_generation_ms"),
    ("tokens_per_chunk", KeyStyle::Plain, "tokens_per_chunk"),
];

/// Metrics whose p99 population `metric_population` describes.
const P99_METRICS: [&str; 3] = ["ttft", "tpot", "e2e"];

fn num(record: &Map<String, Value>, key: &str) -> Option<f64> {
    record.get(key).and_then(Value::as_f64)
}

/// Adds anvil's per-request derived values (docs/metrics.md "Per-request
/// timings") where their inputs are present: `null` where the formula is
/// undefined (fewer than two tokens), absent where an input is.
fn derive(record: &mut Map<String, Value>) {
    let e2e = num(record, "e2e_ms");
    let first_output = num(record, "time_to_first_output_ms");
    let ttft = num(record, "ttft_ms");
    let tokens = record.get("output_tokens").and_then(Value::as_u64);
    let generation = e2e.zip(first_output).map(|(e, t)| e - t);
    let prompt = record.get("prompt_tokens").and_then(Value::as_u64);
    let chunks = record.get("content_chunks").and_then(Value::as_u64);
    let decode = generation.zip(tokens).map(|(g, n)| {
        let after_first = (n >= 2 && g > 0.0).then(|| (n - 1) as f64);
        (after_first.map(|k| g / k), after_first.map(|k| k / (g / 1000.0)))
    });
    let derived: [(&str, Option<Option<f64>>); 8] = [
        ("generation_ms", generation.map(Some)),
        ("visible_generation_ms", e2e.zip(ttft).map(|(e, t)| Some(e - t))),
        ("tpot_ms", decode.map(|d| d.0)),
        ("mean_time_per_output_token_ms", decode.map(|d| d.0)),
        ("mean_inter_token_latency_ms", decode.map(|d| d.0)),
        ("decode_tok_s", decode.map(|d| d.1)),
        (
            "effective_prefill_tok_s",
            prompt.zip(first_output).map(|(p, t)| (t > 0.0).then(|| p as f64 / (t / 1000.0))),
        ),
        ("tokens_per_chunk", tokens.zip(chunks).map(|(n, c)| (c > 0).then(|| n as f64 / c as f64))),
    ];
    for (key, value) in derived {
        if let Some(v) = value {
            record.insert(key.into(), v.map_or(Value::Null, Value::from));
        }
    }
}

/// The artifact of `imported`, stored under `fingerprint` as cell `cell`.
pub fn build(imported: &Imported, fingerprint: &str, cell: &str) -> Value {
    let mut records = imported.records.clone();
    records.iter_mut().for_each(derive);
    let eligible: Vec<&Map<String, Value>> =
        records.iter().filter(|r| r.get("performance_eligible") == Some(&Value::Bool(true))).collect();
    let attempted = records.len();
    let wall_ms = wall_clock_ms(&records);
    let metrics = metrics(&records, &eligible, wall_ms);
    let (failure_counts, failures) = failures(&records);
    let all_eligible = !eligible.is_empty() && eligible.len() == attempted;

    let mut doc = Map::new();
    doc.insert("schema".into(), json!(anvil_loadgen::SCHEMA));
    doc.insert("measurement_protocol".into(), json!(format!("imported from {}", imported.tool.as_str())));
    doc.insert("configuration_fingerprint".into(), json!(fingerprint));
    doc.insert("cell".into(), json!(cell));
    doc.insert("imported_from".into(), imported_from(imported));
    doc.extend(imported.workload.clone());
    doc.insert("requests".into(), json!(attempted));
    doc.insert("requests_per_repeat".into(), json!(attempted));
    doc.insert("repeat".into(), json!(1));
    doc.insert("completed".into(), json!(eligible.len()));
    doc.insert("failed".into(), json!(attempted - eligible.len()));
    doc.insert("performance_eligible".into(), json!(all_eligible));
    if let Some(wall) = wall_ms {
        doc.insert("wall_clock_ms".into(), json!(wall));
    }
    if let Some((first, last)) = run_span_unix_ns(&records) {
        doc.insert("started_at".into(), json!(iso_seconds(first)));
        doc.insert("started_at_unix_ns".into(), json!(first));
        doc.insert("finished_at".into(), json!(iso_seconds(last)));
        doc.insert("finished_at_unix_ns".into(), json!(last));
    }
    doc.insert("failure_counts".into(), json!(failure_counts));
    doc.insert("failures".into(), Value::Array(failures));
    doc.insert("metrics".into(), Value::Object(metrics));
    doc.insert("metric_population".into(), population(&records, &eligible));
    doc.insert(
        "timing_methodology".into(),
        json!(format!(
            "imported from {}: each request's moments as that tool stamped them (its definitions: docs/peers.md); every figure derived from them with anvil's definitions (docs/metrics.md)",
            imported.tool.title()
        )),
    );
    doc.insert("request_timings".into(), Value::Array(records.into_iter().map(Value::Object).collect()));
    Value::Object(doc)
}

/// anvil's wall clock: the first send to the last end, over the records that have both.
fn wall_clock_ms(records: &[Map<String, Value>]) -> Option<f64> {
    let spans: Vec<(f64, f64)> =
        records.iter().filter_map(|r| Some((num(r, "actual_send_ms")?, num(r, "finished_ms")?))).collect();
    match spans.is_empty() {
        true => None,
        false => {
            let first = spans.iter().map(|s| s.0).fold(f64::INFINITY, f64::min);
            let last = spans.iter().map(|s| s.1).fold(f64::NEG_INFINITY, f64::max);
            Some((last - first).max(0.0))
        }
    }
}

/// The cell's `metrics`, from the eligible records with anvil's own code:
/// the distributions, pooled chunk gaps, token sums and sources, and the
/// throughput over `wall_ms`.
fn metrics(
    records: &[Map<String, Value>],
    eligible: &[&Map<String, Value>],
    wall_ms: Option<f64>,
) -> Map<String, Value> {
    let mut metrics = Map::new();
    for &(name, style, key) in DISTRIBUTIONS {
        if !records.iter().any(|r| r.contains_key(key)) {
            continue;
        }
        let values: Vec<f64> = eligible.iter().filter_map(|r| num(r, key)).collect();
        write_distribution(&mut metrics, name, style, Distribution::of(&values).as_ref());
    }
    if records.iter().any(|r| r.contains_key("chunk_gaps_us")) {
        // Pooled gaps, as the load generator writes them: counts of whole µs.
        let mut counts: BTreeMap<u64, u64> = BTreeMap::new();
        for r in eligible {
            for gap in r.get("chunk_gaps_us").and_then(Value::as_array).into_iter().flatten() {
                if let Some(us) = gap.as_u64() {
                    *counts.entry(us).or_default() += 1;
                }
            }
        }
        let sorted: Vec<(f64, u64)> = counts.into_iter().map(|(us, c)| (us as f64 / 1000.0, c)).collect();
        write_distribution(
            &mut metrics,
            "chunk_gap",
            KeyStyle::Millis,
            Distribution::of_sorted_counts(&sorted).as_ref(),
        );
    }
    let sum = |key: &str| eligible.iter().filter_map(|r| r.get(key).and_then(Value::as_u64)).sum::<u64>();
    let output_tokens = sum("output_tokens");
    metrics.insert("output_tokens".into(), json!(output_tokens));
    if records.iter().any(|r| r.contains_key("prompt_tokens")) {
        metrics.insert("prompt_tokens".into(), json!(sum("prompt_tokens")));
        let samples = eligible.iter().filter(|r| r.get("prompt_tokens").is_some_and(Value::is_u64)).count();
        metrics.insert("prompt_token_samples".into(), json!(samples));
    }
    if records.iter().any(|r| r.contains_key("content_chunks")) {
        metrics.insert("content_chunks".into(), json!(sum("content_chunks")));
    }
    let mut sources: BTreeMap<&str, u64> = BTreeMap::new();
    for r in eligible {
        if let Some(source) = r.get("output_token_source").and_then(Value::as_str) {
            *sources.entry(source).or_default() += 1;
        }
    }
    if !sources.is_empty() {
        metrics.insert("output_token_sources".into(), json!(sources));
    }
    let all_eligible = !eligible.is_empty() && eligible.len() == records.len();
    metrics.insert("throughput_performance_eligible".into(), json!(all_eligible));
    if let Some(wall) = wall_ms.filter(|w| *w > 0.0) {
        metrics.insert("throughput_tok_s".into(), json!(output_tokens as f64 / (wall / 1000.0)));
        metrics.insert("request_throughput_req_s".into(), json!(eligible.len() as f64 / (wall / 1000.0)));
    }
    metrics
}

/// Failed records by class, and the artifact's `failures` (one per failed record).
fn failures(records: &[Map<String, Value>]) -> (BTreeMap<String, u64>, Vec<Value>) {
    let mut failure_counts: BTreeMap<String, u64> = BTreeMap::new();
    let mut failures = Vec::new();
    for r in records.iter().filter(|r| r.get("failure").is_some_and(|f| !f.is_null())) {
        let failure = &r["failure"];
        let class = failure.get("class").and_then(Value::as_str).unwrap_or_default().to_string();
        *failure_counts.entry(class.clone()).or_default() += 1;
        failures.push(json!({
            "request_index": r.get("request_index"),
            "repeat": r.get("repeat"),
            "target": null,
            "class": class,
            "detail": failure.get("detail"),
            "http_status": null,
        }));
    }
    (failure_counts, failures)
}

/// The first request's start and the last one's end, ns since the Unix
/// epoch, over the records that have a start (and, for the end, an e2e).
fn run_span_unix_ns(records: &[Map<String, Value>]) -> Option<(u64, u64)> {
    let starts: Vec<(u64, Option<f64>)> = records
        .iter()
        .filter_map(|r| Some((r.get("request_start_unix_ns")?.as_u64()?, num(r, "e2e_ms"))))
        .collect();
    Some((
        starts.iter().map(|s| s.0).min()?,
        starts.iter().filter_map(|(s, e)| Some(*s + (e.as_ref()? * 1e6) as u64)).max()?,
    ))
}

fn imported_from(imported: &Imported) -> Value {
    let (file, others) = match imported.files.split_first() {
        Some((first, rest)) => (Some(first), rest),
        None => (None, &[][..]),
    };
    json!({
        "tool": imported.tool.as_str(),
        "version": imported.version,
        "version_note": imported.version_note,
        "file": file.map(|f| &f.name),
        "file_blake3": file.map(|f| &f.blake3),
        "other_files": others,
        "part": imported.part,
        "importer": IMPORTER,
        "unfilled": imported.unfilled,
        "notes": imported.notes,
    })
}

fn population(records: &[Map<String, Value>], eligible: &[&Map<String, Value>]) -> Value {
    let mut by_metric = Map::new();
    let mut interpretation = Map::new();
    let label = |n: usize| if n >= 100 { "nearest-rank" } else { "descriptive-nearest-rank-only" };
    let mut smallest: Option<usize> = None;
    for name in P99_METRICS {
        let key = format!("{name}_ms");
        if !records.iter().any(|r| r.contains_key(&key)) {
            continue;
        }
        let n = eligible.iter().filter(|r| num(r, &key).is_some()).count();
        by_metric.insert(name.into(), json!(n));
        interpretation.insert(name.into(), json!(label(n)));
        smallest = Some(smallest.map_or(n, |s| s.min(n)));
    }
    let successful = records.iter().filter(|r| r.get("failure").is_none_or(Value::is_null)).count();
    json!({
        "attempted_requests": records.len(),
        "successful_requests": successful,
        "performance_eligible_requests": eligible.len(),
        "excluded_requests": records.len() - eligible.len(),
        "aggregate_throughput_eligible": !eligible.is_empty() && eligible.len() == records.len(),
        "p99_minimum_recommended_samples": 100,
        "p99_samples_by_metric": by_metric,
        "p99_interpretation_by_metric": interpretation,
        "p99_interpretation": smallest.map(label),
    })
}

/// `YYYY-MM-DDTHH:MM:SSZ`, as the load generator writes `started_at`.
fn iso_seconds(unix_ns: u64) -> String {
    let time = std::time::UNIX_EPOCH + std::time::Duration::from_nanos(unix_ns);
    humantime::format_rfc3339_seconds(time).to_string()
}
