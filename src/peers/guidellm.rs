//! guidellm's `--output kind=json` report: `{metadata, config, benchmarks}`,
//! each benchmark with its requests (`successful`, `errored`,
//! `incomplete`: per-request stats, latency in s, `*_ms` fields in ms,
//! epoch-second timings under `info.timings`) and its summaries
//! (`metrics.<name>.successful`: mean, median, std_dev, percentiles).

use serde_json::{Map, Value, json};

use super::fields::{Doc, FieldError, at};
use super::imported::{Check, Imported, SourceFile, Tool, Unfilled, fail, put, succeed};
use super::methods::Weighted;

/// The report schema versions (`metadata.version`) this importer reads (guidellm 0.8).
pub const REPORT_VERSIONS: &[u64] = &[2];

pub fn looks_like(v: &Value) -> bool {
    v.pointer("/metadata/guidellm_version").is_some()
        || (v.get("benchmarks").is_some_and(Value::is_array) && v.pointer("/metadata/version").is_some())
}

/// One request of a benchmark, with the list it came from.
struct Req<'a> {
    raw: &'a Value,
    list: &'static str,
    start: f64,
}

/// One `Imported` per benchmark of the report (a sweep holds several).
pub fn read(doc: Doc<'_>, v: &Value, files: &[SourceFile]) -> Result<Vec<Imported>, FieldError> {
    let version = doc.get(v, "metadata")?;
    let schema = version.get("version").and_then(Value::as_u64);
    if !schema.is_some_and(|s| REPORT_VERSIONS.contains(&s)) {
        return Err(doc.err(
            "metadata.version",
            format!(
                "is {}; anvil reads guidellm reports of version {} (guidellm 0.8)",
                version.get("version").unwrap_or(&Value::Null),
                REPORT_VERSIONS.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")
            ),
        ));
    }
    let tool_version = version.get("guidellm_version").and_then(Value::as_str).map(str::to_string);
    let benchmarks = doc.array(v, "benchmarks")?;
    if benchmarks.is_empty() {
        return Err(doc.err("benchmarks", "is empty: the report holds no benchmark"));
    }
    let mut out = Vec::new();
    for (i, b) in benchmarks.iter().enumerate() {
        let mut imported = one(doc, v, b, i, files.to_vec())?;
        imported.version.clone_from(&tool_version);
        if tool_version.is_none() {
            imported.version_note = Some("metadata.guidellm_version is missing".into());
        }
        imported.part = (benchmarks.len() > 1).then_some(i);
        out.push(imported);
    }
    Ok(out)
}

fn one(
    doc: Doc<'_>,
    report: &Value,
    b: &Value,
    index: usize,
    files: Vec<SourceFile>,
) -> Result<Imported, FieldError> {
    let at = |field: &str| format!("benchmarks[{index}].{field}");
    let requests = b.get("requests").ok_or_else(|| doc.err(&at("requests"), "is missing"))?;
    let mut reqs = Vec::new();
    for list in ["successful", "errored", "incomplete"] {
        let Some(items) = requests.get(list).and_then(Value::as_array) else { continue };
        for (j, raw) in items.iter().enumerate() {
            let start = raw
                .get("request_start_time")
                .and_then(Value::as_f64)
                .or_else(|| raw.pointer("/info/timings/request_start").and_then(Value::as_f64))
                .ok_or_else(|| {
                    doc.err(&at(&format!("requests.{list}[{j}].request_start_time")), "is missing")
                })?;
            reqs.push(Req { raw, list, start });
        }
    }
    reqs.sort_by(|a, b| a.start.total_cmp(&b.start));
    let mut out = Imported::new(Tool::Guidellm, files);
    let first = reqs.first().map_or(0.0, |r| r.start);
    for (i, q) in reqs.iter().enumerate() {
        let mut r = Map::new();
        let num = |k: &str| q.raw.get(k).and_then(Value::as_f64);
        r.insert("request_index".into(), json!(i));
        r.insert("repeat".into(), json!(0));
        r.insert("request_start_unix_ns".into(), json!((q.start * 1e9).round() as u64));
        let sent_ms = (q.start - first) * 1000.0;
        r.insert("actual_send_ms".into(), json!(sent_ms));
        put(&mut r, "request_id", q.raw.get("request_id").and_then(Value::as_str));
        put(&mut r, "response_id", q.raw.get("response_id").and_then(Value::as_str));
        match q.list {
            "successful" => succeed(&mut r),
            "errored" => {
                let detail = q.raw.pointer("/info/error").and_then(Value::as_str).unwrap_or("errored");
                fail(&mut r, detail);
            }
            _ => fail(&mut r, "incomplete: still running when the benchmark ended"),
        }
        put(&mut r, "ttft_ms", num("time_to_first_token_ms"));
        put(
            &mut r,
            "time_to_first_output_ms",
            num("time_to_first_output_token_ms").or(num("time_to_first_token_ms")),
        );
        // request_latency runs to the stream's end (after [DONE]), as anvil's e2e does.
        let e2e = num("request_latency").map(|s| s * 1000.0);
        put(&mut r, "e2e_ms", e2e);
        put(&mut r, "finished_ms", e2e.map(|e| sent_ms + e));
        put(&mut r, "output_tokens", q.raw.get("output_tokens").and_then(Value::as_u64));
        put(&mut r, "prompt_tokens", q.raw.get("prompt_tokens").and_then(Value::as_u64));
        put(
            &mut r,
            "content_chunks",
            q.raw.pointer("/info/timings/token_iterations").and_then(Value::as_u64),
        );
        out.records.push(r);
    }
    workload(report, b, &mut out);
    out.checks = checks(doc, b, index, &reqs)?;
    for (field, why) in UNFILLED {
        out.unfilled(field, *why);
    }
    Ok(out)
}

const UNFILLED: &[(&str, &str)] = &[
    ("engine", "the report does not say which server answered"),
    ("sampling", "sampling settings are not in the report's config"),
    (
        "request_timings[*].chunk_gaps_us",
        "guidellm keeps only the first and last token times of each request, no per-chunk stamps",
    ),
    (
        "request_timings[*].output_token_source",
        "output_tokens are the server's usage counts when it sent them, else guidellm's count of token iterations, and the report does not say which",
    ),
    ("request_timings[*].http_status", "not recorded"),
];

fn workload(report: &Value, b: &Value, out: &mut Imported) {
    let spec = report.pointer("/config/spec");
    let backend = spec.and_then(|s| s.get("backend"));
    let w = &mut out.workload;
    put(w, "model", backend.and_then(|b| b.get("model")).and_then(Value::as_str));
    w.insert("base_url".into(), json!("[redacted]"));
    match backend.and_then(|b| b.get("request_format")).and_then(Value::as_str) {
        Some("/v1/chat/completions") => put(w, "api", Some("chat")),
        Some("/v1/completions") => put(w, "api", Some("completions")),
        other => out.unfilled.push(Unfilled {
            field: "api".into(),
            why: format!("request_format {other:?} is not one anvil names"),
        }),
    }
    put(w, "stream", backend.and_then(|b| b.get("stream")).and_then(Value::as_bool));
    let strategy = b.pointer("/config/strategy");
    let kind = strategy.and_then(|s| s.get("type_")).and_then(Value::as_str);
    let rate = strategy.and_then(|s| s.get("rate")).and_then(Value::as_f64);
    match (kind, rate) {
        (Some("concurrent"), _) => {
            w.insert("arrival".into(), json!({"kind": "closed_loop"}));
            put(w, "concurrency", strategy.and_then(|s| s.get("streams")).and_then(Value::as_u64));
        }
        (Some("synchronous"), _) => {
            w.insert("arrival".into(), json!({"kind": "closed_loop"}));
            w.insert("concurrency".into(), json!(1));
        }
        (Some(kind @ ("constant" | "poisson")), Some(rate)) => {
            w.insert("arrival".into(), json!({"kind": kind, "rate_per_s": rate}));
        }
        _ => out.unfilled.push(Unfilled {
            field: "arrival".into(),
            why: format!("strategy {kind:?} has no anvil arrival"),
        }),
    }
    let data = spec.and_then(|s| s.pointer("/data/0"));
    // A fixed length is a setting; one with a spread is a distribution anvil's cells do not have.
    let fixed = |key: &str| {
        let d = data?;
        d.get(format!("{key}_stdev"))
            .is_none_or(Value::is_null)
            .then(|| d.get(key).and_then(Value::as_u64))
            .flatten()
    };
    out.workload_or_unfilled(
        "context_tokens",
        fixed("prompt_tokens"),
        "the report's data spec has no fixed prompt_tokens",
    );
    out.workload_or_unfilled(
        "max_tokens",
        fixed("output_tokens"),
        "the report's data spec has no fixed output_tokens",
    );
}

/// guidellm's summaries re-computed from its successful requests with its
/// own definitions: TTFT = first token − request start; ITL = (last token −
/// first token) / (output tokens − 1), weighted by output tokens − 1;
/// TPOT = (last token − request start) / output tokens (the first token
/// included), weighted by output tokens; E2E = request_latency (s);
/// percentiles the weighted inverted CDF, std the weighted population one.
fn checks(doc: Doc<'_>, b: &Value, index: usize, reqs: &[Req<'_>]) -> Result<Vec<Check>, FieldError> {
    let mut ttft = Vec::new();
    let mut itl = Vec::new();
    let mut tpot = Vec::new();
    let mut e2e = Vec::new();
    for (j, q) in reqs.iter().filter(|q| q.list == "successful").enumerate() {
        let field = |k: &str| format!("benchmarks[{index}].requests.successful[{j}].{k}");
        let t = |k: &str| {
            q.raw
                .pointer(&format!("/info/timings/{k}"))
                .and_then(Value::as_f64)
                .ok_or_else(|| doc.err(&field(&format!("info.timings.{k}")), "is missing or not a number"))
        };
        let (start, first, last) =
            (t("request_start")?, t("first_token_iteration")?, t("last_token_iteration")?);
        let tokens = q
            .raw
            .get("output_tokens")
            .and_then(Value::as_f64)
            .ok_or_else(|| doc.err(&field("output_tokens"), "is missing or not a number"))?;
        ttft.push(((first - start) * 1000.0, 1.0));
        if tokens > 1.0 {
            itl.push(((last - first) * 1000.0 / (tokens - 1.0), tokens - 1.0));
        }
        if tokens > 0.0 {
            tpot.push(((last - start) * 1000.0 / tokens, tokens));
        }
        let latency = q
            .raw
            .get("request_latency")
            .and_then(Value::as_f64)
            .ok_or_else(|| doc.err(&field("request_latency"), "is missing or not a number"))?;
        e2e.push((latency, 1.0));
    }
    let mut out = Vec::new();
    for (metric, name, unit, values) in [
        ("TTFT", "time_to_first_token_ms", "ms", ttft),
        ("TPOT", "time_per_output_token_ms", "ms", tpot),
        ("ITL", "inter_token_latency_ms", "ms", itl),
        ("E2E", "request_latency", "s", e2e),
    ] {
        let Some(printed) = b.pointer(&format!("/metrics/{name}/successful")) else { continue };
        let dist = Weighted::of(&values);
        let mut stats: Vec<(String, String, Option<f64>)> = vec![
            ("mean".into(), "mean".into(), dist.as_ref().map(Weighted::mean)),
            ("median".into(), "median".into(), dist.as_ref().map(|d| d.inverted_cdf(50.0))),
            ("std_dev".into(), "std".into(), dist.as_ref().map(Weighted::std)),
        ];
        let mut keys: Vec<(f64, String)> = printed
            .get("percentiles")
            .and_then(Value::as_object)
            .into_iter()
            .flat_map(|o| o.keys())
            .filter_map(|k| Some((percent_of(k)?, k.clone())))
            .collect();
        keys.sort_by(|a, b| a.0.total_cmp(&b.0));
        for (p, k) in keys {
            let stat = format!("p{p}");
            stats.push((format!("percentiles.{k}"), stat, dist.as_ref().map(|d| d.inverted_cdf(p))));
        }
        for (key, stat, rederived) in stats {
            let Some(value) = at(printed, &key).and_then(Value::as_f64) else { continue };
            out.push(Check {
                metric: metric.into(),
                printed_at: format!("benchmarks[{index}].metrics.{name}.successful.{key}"),
                stat,
                unit: unit.into(),
                printed: value,
                rederived,
            });
        }
    }
    Ok(out)
}

/// guidellm's percentile keys: `p50` is 50, `p001` 0.1, `p999` 99.9.
fn percent_of(key: &str) -> Option<f64> {
    let digits = key.strip_prefix('p')?;
    let n: f64 = digits.parse().ok()?;
    Some(if digits.len() == 3 { n / 10.0 } else { n })
}
