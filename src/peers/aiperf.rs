//! AIPerf's export folder: `profile_export.jsonl` (one record per request,
//! `metrics` in ms, `metadata` with wall-clock ns stamps) and the summary
//! `profile_export_aiperf.json` next to it (`schema_version`,
//! `aiperf_version`, the resolved `input_config`, and per metric
//! `{unit, avg, std, p1 … p99}`).

use serde_json::{Map, Value, json};

use super::fields::{Doc, FieldError};
use super::imported::{Check, Imported, SourceFile, Tool, Unfilled, fail, gaps_us, put, succeed};
use super::methods::{linear_percentile, mean, population_std};

/// The summary's name in an export folder.
pub const SUMMARY: &str = "profile_export_aiperf.json";
/// The per-request records' name in an export folder.
pub const RECORDS: &str = "profile_export.jsonl";
/// The summary schema versions this importer reads (AIPerf 0.13).
pub const SCHEMA_VERSIONS: &[&str] = &["1.4"];

pub fn looks_like_summary(v: &Value) -> bool {
    v.get("aiperf_version").is_some()
        || (v.get("schema_version").is_some() && v.get("input_config").is_some())
}

pub fn looks_like_record(v: &Value) -> bool {
    v.pointer("/metadata/request_start_ns").is_some() && v.get("metrics").is_some()
}

/// Parses the records file: one JSON object per non-empty line.
pub fn parse_lines(doc: Doc<'_>, text: &str) -> Result<Vec<Value>, FieldError> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l)
                .map_err(|e| doc.err(&format!("line {}", i + 1), format!("is not JSON: {e}")))
        })
        .collect()
}

/// A record's metric value in ms (`None` when the record lacks it).
fn millis(doc: Doc<'_>, rec: &Value, tag: &str, line: usize) -> Result<Option<f64>, FieldError> {
    let Some(m) = rec.get("metrics").and_then(|m| m.get(tag)) else { return Ok(None) };
    let field = format!("line {line}: metrics.{tag}");
    if let Some(unit) = m.get("unit").and_then(Value::as_str).filter(|u| *u != "ms") {
        return Err(doc.err(&field, format!("unit is {unit:?}, expected \"ms\"")));
    }
    m.get("value").and_then(Value::as_f64).map(Some).ok_or_else(|| doc.err(&field, "value is not a number"))
}

fn tokens(rec: &Value, tag: &str) -> Option<u64> {
    rec.pointer(&format!("/metrics/{tag}/value")).and_then(Value::as_u64)
}

fn chunk_gaps(doc: Doc<'_>, rec: &Value, line: usize) -> Result<Option<Vec<f64>>, FieldError> {
    let Some(v) = rec.pointer("/metrics/inter_chunk_latency/value") else { return Ok(None) };
    v.as_array().and_then(|a| a.iter().map(Value::as_f64).collect::<Option<Vec<f64>>>()).map(Some).ok_or_else(
        || doc.err(&format!("line {line}: metrics.inter_chunk_latency.value"), "is not a list of numbers"),
    )
}

/// One profiling-phase record, with its line in the file.
struct Rec<'a> {
    line: usize,
    raw: &'a Value,
    start_ns: u64,
    ok: bool,
}

pub fn read(
    summary_doc: Doc<'_>,
    summary: &Value,
    records_doc: Doc<'_>,
    lines: &[Value],
    files: Vec<SourceFile>,
) -> Result<Imported, FieldError> {
    let schema = summary_doc.str(summary, "schema_version")?;
    if !SCHEMA_VERSIONS.contains(&schema) {
        return Err(summary_doc.err(
            "schema_version",
            format!(
                "is {schema:?}; anvil reads AIPerf profile exports of schema_version {} (AIPerf 0.13)",
                SCHEMA_VERSIONS.join(", ")
            ),
        ));
    }
    let mut out = Imported::new(Tool::Aiperf, files);
    out.version = Some(summary_doc.str(summary, "aiperf_version")?.to_string());
    let mut recs = Vec::new();
    let mut warmup = 0;
    for (i, raw) in lines.iter().enumerate() {
        let line = i + 1;
        let start_ns =
            raw.pointer("/metadata/request_start_ns").and_then(Value::as_u64).ok_or_else(|| {
                records_doc.err(
                    &format!("line {line}: metadata.request_start_ns"),
                    "is missing or not a whole number",
                )
            })?;
        // Warm-up requests are outside the measurement, as anvil's are.
        if raw.pointer("/metadata/benchmark_phase").and_then(Value::as_str) == Some("warmup") {
            warmup += 1;
            continue;
        }
        let cancelled = raw.pointer("/metadata/was_cancelled").and_then(Value::as_bool) == Some(true);
        let ok = raw.get("error").is_none_or(Value::is_null) && !cancelled;
        recs.push(Rec { line, raw, start_ns, ok });
    }
    if warmup > 0 {
        out.notes.push(format!("{warmup} warm-up records left out (benchmark_phase \"warmup\")"));
    }
    // The file is in record-processing order; anvil's records are in send order.
    recs.sort_by_key(|r| (r.start_ns, r.line));
    let first_ns = recs.first().map_or(0, |r| r.start_ns);
    for (index, rec) in recs.iter().enumerate() {
        let mut r = Map::new();
        r.insert("request_index".into(), json!(index));
        r.insert("repeat".into(), json!(0));
        r.insert("request_start_unix_ns".into(), json!(rec.start_ns));
        let sent_ms = (rec.start_ns - first_ns) as f64 / 1e6;
        r.insert("actual_send_ms".into(), json!(sent_ms));
        put(&mut r, "request_id", rec.raw.pointer("/metadata/x_request_id").and_then(Value::as_str));
        if rec.ok {
            succeed(&mut r);
        } else {
            let error = rec.raw.get("error").filter(|e| !e.is_null());
            let detail = error
                .and_then(|e| e.get("message").or(e.get("type")).and_then(Value::as_str))
                .unwrap_or("cancelled");
            fail(&mut r, detail);
        }
        let ttft = millis(records_doc, rec.raw, "time_to_first_token", rec.line)?;
        let first_output = millis(records_doc, rec.raw, "time_to_first_output_token", rec.line)?.or(ttft);
        let e2e = millis(records_doc, rec.raw, "request_latency", rec.line)?;
        put(&mut r, "ttft_ms", ttft);
        put(&mut r, "time_to_first_output_ms", first_output);
        put(&mut r, "e2e_ms", e2e);
        put(&mut r, "finished_ms", e2e.map(|e| sent_ms + e));
        // anvil counts tokens as the server's usage reports them, not a client tokenizer.
        let output = tokens(rec.raw, "usage_completion_tokens");
        put(&mut r, "output_tokens", output);
        put(&mut r, "prompt_tokens", tokens(rec.raw, "usage_prompt_tokens"));
        put(&mut r, "cached_prompt_tokens", tokens(rec.raw, "usage_prompt_cache_read_tokens"));
        put(&mut r, "output_token_source", output.map(|_| "usage"));
        if let Some(gaps) = chunk_gaps(records_doc, rec.raw, rec.line)? {
            r.insert("content_chunks".into(), json!(gaps.len() + 1));
            r.insert("chunk_gaps_us".into(), gaps_us(gaps));
        }
        out.records.push(r);
    }
    workload(summary_doc, summary, &mut out)?;
    out.checks = checks(records_doc, summary, &recs)?;
    for (field, why) in UNFILLED {
        out.unfilled(field, *why);
    }
    Ok(out)
}

const UNFILLED: &[(&str, &str)] = &[
    ("engine", "the export does not say which server answered"),
    ("sampling", "sampling settings are not in input_config"),
    ("request_timings[*].http_status", "AIPerf's records carry no HTTP status"),
    ("request_timings[*].response_id", "AIPerf's records carry no server response id"),
    ("request_timings[*].finish_reason", "not recorded at the default export level"),
];

fn workload(doc: Doc<'_>, summary: &Value, out: &mut Imported) -> Result<(), FieldError> {
    let config = doc.get(summary, "input_config")?;
    let w = &mut out.workload;
    put(w, "model", config.pointer("/models/items/0/name").and_then(Value::as_str));
    // anvil never writes an endpoint; AIPerf's is in the file, so the field is redacted like anvil's.
    w.insert("base_url".into(), json!("[redacted]"));
    match config.pointer("/endpoint/type").and_then(Value::as_str) {
        Some("chat") => put(w, "api", Some("chat")),
        Some("completions") => put(w, "api", Some("completions")),
        other => out.unfilled.push(Unfilled {
            field: "api".into(),
            why: format!("endpoint type {other:?} is not one anvil names"),
        }),
    }
    put(w, "stream", config.pointer("/endpoint/streaming").and_then(Value::as_bool));
    let phases = config.get("phases").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let profiling = phases.iter().find(|p| p.get("kind").and_then(Value::as_str) == Some("profiling"));
    match profiling.and_then(|p| Some((p.get("type")?.as_str()?, p))) {
        Some(("concurrency", p)) => {
            w.insert("arrival".into(), json!({"kind": "closed_loop"}));
            put(w, "concurrency", p.get("concurrency").and_then(Value::as_u64));
        }
        other => out.unfilled.push(Unfilled {
            field: "arrival".into(),
            why: format!(
                "the profiling phase's type {:?} is not mapped to an anvil arrival",
                other.map(|(t, _)| t)
            ),
        }),
    }
    // A fixed length (stddev 0) is a setting; a spread is a distribution anvil's cells do not have.
    let fixed = |key: &str| {
        let d = config.pointer(&format!("/datasets/0/prompts/{key}"))?;
        (d.get("stddev").and_then(Value::as_f64).unwrap_or(0.0) == 0.0)
            .then(|| d.get("mean").and_then(Value::as_f64))
            .flatten()
            .map(|m| m.round() as u64)
    };
    out.workload_or_unfilled(
        "context_tokens",
        fixed("isl"),
        "input_config has no fixed input length (isl with stddev 0)",
    );
    // AIPerf sends its output length as the request's max_tokens.
    out.workload_or_unfilled(
        "max_tokens",
        fixed("osl"),
        "input_config has no fixed output length (osl with stddev 0)",
    );
    Ok(())
}

/// AIPerf's summaries re-computed from its records with its own
/// definitions: profiling records without error; TTFT and E2E per record;
/// its "inter_token_latency" per record `(request_latency − TTFT) / (OSL −
/// 1)` with OSL its client-side `output_sequence_length`; its
/// "inter_chunk_latency" pooled over every gap; numpy mean, population std
/// and linear percentiles.
fn checks(doc: Doc<'_>, summary: &Value, recs: &[Rec<'_>]) -> Result<Vec<Check>, FieldError> {
    let ok: Vec<&Rec<'_>> = recs.iter().filter(|r| r.ok).collect();
    let mut ttft = Vec::new();
    let mut tpot = Vec::new();
    let mut gaps = Vec::new();
    let mut e2e = Vec::new();
    for r in &ok {
        let t = millis(doc, r.raw, "time_to_first_token", r.line)?;
        let e = millis(doc, r.raw, "request_latency", r.line)?;
        ttft.extend(t);
        e2e.extend(e);
        let osl = r.raw.pointer("/metrics/output_sequence_length/value").and_then(Value::as_f64);
        if let (Some(t), Some(e), Some(osl)) = (t, e, osl.filter(|n| *n > 1.0)) {
            tpot.push((e - t) / (osl - 1.0));
        }
        gaps.extend(chunk_gaps(doc, r.raw, r.line)?.unwrap_or_default());
    }
    let mut out = Vec::new();
    for (metric, tag, values) in [
        ("TTFT", "time_to_first_token", ttft),
        ("TPOT", "inter_token_latency", tpot),
        ("ITL", "inter_chunk_latency", gaps),
        ("E2E", "request_latency", e2e),
    ] {
        let Some(printed) = summary.get(tag).and_then(Value::as_object) else { continue };
        let unit = printed.get("unit").and_then(Value::as_str).unwrap_or("ms").to_string();
        let mut keys: Vec<(f64, &String)> =
            printed.keys().filter_map(|k| Some((k.strip_prefix('p')?.parse::<f64>().ok()?, k))).collect();
        keys.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut stats: Vec<(String, Option<f64>)> =
            vec![("avg".into(), mean(&values)), ("std".into(), population_std(&values))];
        stats.extend(keys.into_iter().map(|(p, k)| (k.clone(), linear_percentile(&values, p))));
        for (stat, rederived) in stats {
            let Some(value) = printed.get(&stat).and_then(Value::as_f64) else { continue };
            out.push(Check {
                metric: metric.into(),
                printed_at: format!("{tag}.{stat}"),
                stat: if stat == "avg" { "mean".into() } else { stat },
                unit: unit.clone(),
                printed: value,
                rederived,
            });
        }
    }
    Ok(out)
}
