//! The `anvil-serving.benchmark/v1` document of one cell, computed from the
//! raw request records only (so anyone holding the records can recompute it).

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value, json};

use crate::record::RequestRecord;
use crate::run::RunOutput;
use crate::spec::{Arrival, CellContext, CellSpec, PromptCacheMode, Target, ThinkingMode};
use crate::stats::{Distribution, KeyStyle, P99_MIN_SAMPLES, t95, write_distribution};

pub const SCHEMA: &str = "anvil-serving.benchmark/v1";
pub const PROTOCOL: &str = "capacity-v4-reasoning";
const FAILURE_POLICY: &str = "failed or contract-invalid responses retain sanitized timing and metadata but are excluded from performance distributions";

/// A distribution metric: artifact name, key style, and how to read it off a record.
struct MetricDef {
    name: &'static str,
    style: KeyStyle,
    value: fn(&RequestRecord) -> Option<f64>,
}

/// Per-request distributions, over performance-eligible requests.
const REQUEST_METRICS: &[MetricDef] = &[
    MetricDef {
        name: "completion_tokens",
        style: KeyStyle::Plain,
        value: |r| r.output_tokens.map(|v| v as f64),
    },
    MetricDef { name: "decode_tok_s", style: KeyStyle::Plain, value: |r| r.decode_tok_s },
    MetricDef { name: "e2e", style: KeyStyle::Millis, value: |r| r.e2e_ms },
    MetricDef {
        name: "effective_prefill_tok_s",
        style: KeyStyle::Plain,
        value: |r| r.effective_prefill_tok_s,
    },
    MetricDef { name: "generation", style: KeyStyle::Millis, value: |r| r.generation_ms },
    MetricDef {
        name: "mean_inter_token_latency_ms",
        style: KeyStyle::Plain,
        value: |r| r.mean_inter_token_latency_ms,
    },
    MetricDef {
        name: "mean_time_per_output_token",
        style: KeyStyle::Millis,
        value: |r| r.mean_time_per_output_token_ms,
    },
    MetricDef { name: "prompt_tokens", style: KeyStyle::Plain, value: |r| r.prompt_tokens.map(|v| v as f64) },
    MetricDef { name: "time_to_first_output", style: KeyStyle::Millis, value: |r| r.time_to_first_output_ms },
    MetricDef { name: "tpot", style: KeyStyle::Millis, value: |r| r.tpot_ms },
    MetricDef { name: "ttft", style: KeyStyle::Millis, value: |r| r.ttft_ms },
    MetricDef { name: "visible_generation", style: KeyStyle::Millis, value: |r| r.visible_generation_ms },
    MetricDef { name: "tokens_per_chunk", style: KeyStyle::Plain, value: |r| r.tokens_per_chunk },
];

fn values(records: &[&RequestRecord], f: impl Fn(&RequestRecord) -> Option<f64>) -> Vec<f64> {
    records.iter().filter_map(|r| f(r)).collect()
}

/// Wall-clock span of one measured run: first send to last response end.
pub fn wall_span_ms(records: &[&RequestRecord]) -> f64 {
    let first = records.iter().map(|r| r.actual_send_ms).fold(f64::INFINITY, f64::min);
    let last = records.iter().map(|r| r.finished_ms).fold(f64::NEG_INFINITY, f64::max);
    if records.is_empty() { 0.0 } else { (last - first).max(0.0) }
}

/// Sum of the wall spans of each repeat (repeats are separate runs; the
/// pauses between them are not part of any run).
pub fn total_wall_ms(records: &[RequestRecord]) -> f64 {
    let mut by_repeat: BTreeMap<u32, Vec<&RequestRecord>> = BTreeMap::new();
    for r in records {
        by_repeat.entry(r.repeat).or_default().push(r);
    }
    by_repeat.values().map(|rs| wall_span_ms(rs)).sum()
}

fn tokens(records: &[&RequestRecord]) -> u64 {
    records.iter().filter_map(|r| r.output_tokens).sum()
}

fn per_second(count: f64, wall_ms: f64) -> Value {
    if wall_ms > 0.0 { json!(count / (wall_ms / 1000.0)) } else { Value::Null }
}

fn iso_seconds(t: SystemTime) -> String {
    humantime::format_rfc3339_seconds(t).to_string()
}

fn unix_ns(t: SystemTime) -> u128 {
    t.duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0)
}

/// The `metrics` block over `all` attempted requests of a run spanning `wall_ms`.
pub fn metrics(all: &[&RequestRecord], wall_ms: f64, spec: &CellSpec) -> Map<String, Value> {
    let eligible: Vec<&RequestRecord> = all.iter().copied().filter(|r| r.performance_eligible).collect();
    let mut m = Map::new();
    for def in REQUEST_METRICS {
        let d = Distribution::of(&values(&eligible, def.value));
        write_distribution(&mut m, def.name, def.style, d.as_ref());
    }
    // Raw chunk gaps, pooled over every eligible request (real inter-chunk latency).
    let gaps: Vec<f64> =
        eligible.iter().flat_map(|r| r.chunk_gaps_us.iter().map(|g| f64::from(*g) / 1000.0)).collect();
    write_distribution(&mut m, "chunk_gap", KeyStyle::Millis, Distribution::of(&gaps).as_ref());
    // Client schedule lag covers every attempted request: it is about the client.
    write_distribution(
        &mut m,
        "send_lag",
        KeyStyle::Millis,
        Distribution::of(&values(all, |r| Some(r.send_lag_ms))).as_ref(),
    );
    // How long the first content sat in the socket before the client read
    // it: also about the client (did it keep up?), not the engine.
    let read_delays = values(&eligible, |r| r.first_content_read_delay_us.map(|us| f64::from(us) / 1000.0));
    write_distribution(
        &mut m,
        "first_content_read_delay",
        KeyStyle::Millis,
        Distribution::of(&read_delays).as_ref(),
    );

    let output_tokens = tokens(&eligible);
    m.insert("output_tokens".into(), json!(output_tokens));
    m.insert("prompt_tokens".into(), json!(eligible.iter().filter_map(|r| r.prompt_tokens).sum::<u64>()));
    m.insert(
        "prompt_token_samples".into(),
        json!(eligible.iter().filter(|r| r.prompt_tokens.is_some()).count()),
    );
    m.insert(
        "content_chunks".into(),
        json!(eligible.iter().map(|r| u64::from(r.content_chunks)).sum::<u64>()),
    );
    m.insert(
        "reasoning_chunks".into(),
        json!(eligible.iter().map(|r| u64::from(r.reasoning_chunks)).sum::<u64>()),
    );
    // Present in the reference as null; its meaning is not defined there, so we do not guess one.
    m.insert("content_chunks_s".into(), Value::Null);
    let mut sources: BTreeMap<&str, u64> = BTreeMap::new();
    for r in &eligible {
        *sources.entry(r.output_token_source.as_str()).or_default() += 1;
    }
    m.insert("output_token_sources".into(), json!(sources));

    let controlled: Vec<_> = all.iter().filter_map(|r| r.controlled_output.as_ref()).collect();
    let exact = controlled.iter().filter(|c| c.exact).count();
    m.insert("controlled_output_samples".into(), json!(controlled.len()));
    m.insert("controlled_output_exact_adherence".into(), json!(exact));
    m.insert(
        "controlled_output_exact_adherence_rate".into(),
        if controlled.is_empty() { Value::Null } else { json!(exact as f64 / controlled.len() as f64) },
    );
    m.insert(
        "controlled_output_unobservable".into(),
        json!(controlled.iter().filter(|c| !c.observable).count()),
    );

    let canaries: Vec<_> = all.iter().filter_map(|r| r.request_canary.as_ref()).collect();
    m.insert("request_canary_samples".into(), json!(canaries.len()));
    m.insert("request_canary_passed".into(), json!(canaries.iter().filter(|c| c.passed).count()));

    let hits: Vec<f64> = eligible
        .iter()
        .filter_map(|r| Some(r.cached_prompt_tokens? as f64 / r.prompt_tokens.filter(|p| *p > 0)? as f64))
        .collect();
    let hit_avg =
        if hits.is_empty() { Value::Null } else { json!(hits.iter().sum::<f64>() / hits.len() as f64) };
    m.insert("prefix_cache_hit_avg".into(), hit_avg);
    m.insert("prefix_cache_hit_samples".into(), json!(hits.len()));

    let throughput_eligible = !eligible.is_empty() && eligible.len() == all.len();
    m.insert("throughput_tok_s".into(), per_second(output_tokens as f64, wall_ms));
    m.insert("throughput_performance_eligible".into(), json!(throughput_eligible));
    m.insert("request_throughput_req_s".into(), per_second(eligible.len() as f64, wall_ms));

    if spec.slo.is_some() {
        let good: Vec<&RequestRecord> = all.iter().copied().filter(|r| r.slo_met == Some(true)).collect();
        m.insert("goodput_requests".into(), json!(good.len()));
        m.insert(
            "goodput_rate".into(),
            if all.is_empty() { Value::Null } else { json!(good.len() as f64 / all.len() as f64) },
        );
        m.insert("goodput_req_s".into(), per_second(good.len() as f64, wall_ms));
        m.insert("goodput_tok_s".into(), per_second(tokens(&good) as f64, wall_ms));
    }
    m
}

fn metric_population(all: &[&RequestRecord], metrics: &Map<String, Value>) -> Value {
    let eligible = all.iter().filter(|r| r.performance_eligible).count();
    let successful =
        all.iter().filter(|r| r.failure.as_ref().is_none_or(|f| f.class.is_contract_violation())).count();
    let mut samples = Map::new();
    let mut interpretation = Map::new();
    let names =
        REQUEST_METRICS.iter().map(|d| d.name).chain(["chunk_gap", "send_lag", "first_content_read_delay"]);
    for name in names {
        let n = metrics.get(&format!("{name}_samples")).and_then(Value::as_u64).unwrap_or(0);
        samples.insert(name.to_string(), json!(n));
        interpretation.insert(name.to_string(), json!(p99_label(n as usize)));
    }
    let min_samples = samples.values().filter_map(Value::as_u64).min().unwrap_or(0);
    json!({
        "aggregate_throughput_eligible": eligible > 0 && eligible == all.len(),
        "attempted_requests": all.len(),
        "excluded_requests": all.len() - eligible,
        "failure_policy": FAILURE_POLICY,
        "p99_interpretation": p99_label(min_samples as usize),
        "p99_interpretation_by_metric": interpretation,
        "p99_minimum_recommended_samples": P99_MIN_SAMPLES,
        "p99_samples_by_metric": samples,
        "performance_eligible_requests": eligible,
        "successful_requests": successful,
    })
}

fn p99_label(samples: usize) -> &'static str {
    if samples >= P99_MIN_SAMPLES { "nearest-rank" } else { "descriptive-nearest-rank-only" }
}

fn sampling(spec: &CellSpec) -> Value {
    let entry = |v: Option<f64>| json!({"requested": v, "sent": v.is_some(), "effective_request": v});
    json!({
        "temperature": entry(spec.temperature),
        "top_p": entry(spec.top_p),
        "seed": {"requested": spec.sampling_seed, "sent": spec.sampling_seed.is_some(), "effective_request": spec.sampling_seed},
    })
}

/// The caller's serve flags, completed with the reference's keys where absent.
fn serve_flags(spec: &CellSpec, ctx: &CellContext) -> Value {
    let mut flags = match &ctx.serve_flags {
        Value::Object(m) => m.clone(),
        _ => Map::new(),
    };
    let thinking = match spec.thinking {
        ThinkingMode::Default => "default",
        ThinkingMode::On => "on",
        ThinkingMode::Off => "off",
    };
    let defaults = [
        ("no_thinking", json!(spec.thinking == ThinkingMode::Off)),
        ("reasoning_effort", Value::Null),
        ("shared_prefix_burst", json!(false)),
        ("thinking_mode", json!(thinking)),
    ];
    for (k, v) in defaults {
        flags.entry(k).or_insert(v);
    }
    Value::Object(flags)
}

fn timing_methodology() -> Value {
    json!({
        "artifact_timestamps": "SystemTime Unix nanoseconds; independent artifacts may align them only when the operator supplied the same explicit clock_domain_id",
        "clock": "client std::time::Instant (monotonic); each read is stamped with the kernel's software receive time of its newest bytes (SO_TIMESTAMPNS, mapped onto the monotonic clock), or with Instant::now() after the read where the kernel gives none (request_timings[].receive_clock says which)",
        "controlled_output": "--response-words adherence is recorded; observe preserves historical behavior while strict rejects non-exact or truncated completions; visible response capture is capped at 8192 characters",
        "decode": "usage completion tokens after the first token divided by client-observed generation time; completion tokens may include reasoning tokens",
        "distributions": "request-level mean, sample standard deviation, normal-approximation 95% confidence interval for the mean, min, p25, p50, p75, p90, p95, p99, and max using the nearest-rank percentile method",
        "effective_prefill": "usage.prompt_tokens divided by client-observed time to first output; includes queueing, scheduling, prefill, and first-token work",
        "generation": "client-observed E2E minus time to first output",
        "mean_inter_token_latency": "legacy key for a TPOT proxy: client-observed generation time divided by completion tokens after the first token; not raw per-token ITL",
        "p99": "numeric nearest-rank p99 is always retained for compatibility; it is descriptive only below 100 eligible samples",
        "request_canaries": "when enabled, each response must begin with its own synthetic marker and contain no other ANVIL_REQ marker; bounded/truncated captures fail closed and are excluded from performance metrics",
        "time_to_first_output": "request start through the first non-empty streamed reasoning or content delta",
        "tpot": "client-observed mean time per output token after the first output; identical to the legacy mean_inter_token_latency key",
        "ttft": "request start through the first non-empty streamed content delta",
        "e2e": "request start through arrival of the stream's end marker ([DONE] or response.completed)",
        "visible_generation": "client-observed E2E minus ttft",
        "throughput": "sum of usage completion tokens of performance-eligible requests divided by the measured wall-clock span (first request sent to last response ended, summed over repeats)",
        "chunk_gap": "raw gaps between consecutive non-empty reasoning or content events of a request, pooled over eligible requests; events arriving in one read share a timestamp",
        "tokens_per_chunk": "per request, usage completion tokens divided by non-empty reasoning plus content events",
        "first_content_read_delay": "kernel arrival of the bytes holding the first content to the client's read of them, over eligible requests; not part of ttft (which ends at arrival); large values mean the client was busy",
        "send_lag": "actual send time minus the schedule's intended send time (closed loop: the end of the worker's previous request; open loop: the seeded arrival time), over all attempted requests",
        "goodput": "requests meeting every configured SLO (ttft, tpot, e2e limits) among attempted requests; failed requests never meet an SLO",
        "prompt_calibration": "filler length chosen by probing the server's usage.prompt_tokens with one-token requests before warmup; planned and actual prompt tokens are recorded per request",
        "repeats": "each repeat is a separate measured run; across-repeat CIs use Student t over per-repeat aggregates",
    })
}

/// The across-repeat summary of one per-repeat aggregate.
fn across(values: &[f64]) -> Value {
    let Some(d) = Distribution::of(values) else { return Value::Null };
    let half = d.stddev.zip(t95(d.samples.saturating_sub(1))).map(|(s, t)| t * s / (d.samples as f64).sqrt());
    json!({
        "mean": d.mean,
        "stddev": d.stddev,
        "ci95_low": half.map(|h| d.mean - h),
        "ci95_high": half.map(|h| d.mean + h),
        "min": d.min,
        "max": d.max,
        "samples": d.samples,
    })
}

fn repeats(spec: &CellSpec, records: &[RequestRecord]) -> Value {
    const KEYS: [&str; 8] = [
        "throughput_tok_s",
        "ttft_p50_ms",
        "ttft_p99_ms",
        "ttft_mean_ms",
        "tpot_mean_ms",
        "e2e_p50_ms",
        "decode_tok_s_mean",
        "request_throughput_req_s",
    ];
    let mut runs = Vec::new();
    let mut per_key: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for repeat in 0..spec.repeat {
        let rs: Vec<&RequestRecord> = records.iter().filter(|r| r.repeat == repeat).collect();
        let wall = wall_span_ms(&rs);
        let m = metrics(&rs, wall, spec);
        let mut run = Map::new();
        run.insert("repeat".into(), json!(repeat));
        run.insert("attempted".into(), json!(rs.len()));
        run.insert("completed".into(), json!(rs.iter().filter(|r| r.performance_eligible).count()));
        run.insert("wall_clock_ms".into(), json!(wall));
        run.insert("output_tokens".into(), m["output_tokens"].clone());
        for key in KEYS {
            let v = m.get(key).cloned().unwrap_or(Value::Null);
            if let Some(x) = v.as_f64() {
                per_key.entry(key).or_default().push(x);
            }
            run.insert(key.into(), v);
        }
        runs.push(Value::Object(run));
    }
    let across_repeats: Map<String, Value> =
        KEYS.iter().map(|k| (k.to_string(), across(per_key.get(k).map_or(&[][..], |v| v)))).collect();
    json!({"count": spec.repeat, "runs": runs, "across_repeats": across_repeats})
}

fn per_target(targets: &[Target], records: &[RequestRecord], wall_ms: f64) -> Value {
    let rows: Vec<Value> = targets
        .iter()
        .map(|t| {
            let rs: Vec<&RequestRecord> = records.iter().filter(|r| r.target == t.label).collect();
            let eligible: Vec<&RequestRecord> =
                rs.iter().copied().filter(|r| r.performance_eligible).collect();
            let ttft = Distribution::of(&values(&eligible, |r| r.ttft_ms));
            let tpot = Distribution::of(&values(&eligible, |r| r.tpot_ms));
            let e2e = Distribution::of(&values(&eligible, |r| r.e2e_ms));
            json!({
                "label": t.label,
                "attempted": rs.len(),
                "completed": eligible.len(),
                "failed": rs.len() - eligible.len(),
                "output_tokens": tokens(&eligible),
                // Same denominator as the cell: per-target rates add up to the cell's exactly.
                "throughput_tok_s": per_second(tokens(&eligible) as f64, wall_ms),
                "ttft_p50_ms": ttft.as_ref().map(|d| d.percentiles[1]),
                "ttft_p99_ms": ttft.as_ref().map(|d| d.percentiles[5]),
                "ttft_mean_ms": ttft.as_ref().map(|d| d.mean),
                "tpot_mean_ms": tpot.as_ref().map(|d| d.mean),
                "e2e_p50_ms": e2e.as_ref().map(|d| d.percentiles[1]),
            })
        })
        .collect();
    Value::Array(rows)
}

/// Builds the full artifact.
pub fn build(spec: &CellSpec, targets: &[Target], ctx: &CellContext, out: &RunOutput) -> Value {
    let records = &out.records;
    let all: Vec<&RequestRecord> = records.iter().collect();
    let wall_ms = total_wall_ms(records);
    let metrics = metrics(&all, wall_ms, spec);
    let population = metric_population(&all, &metrics);
    let completed = all.iter().filter(|r| r.performance_eligible).count();
    let failures: Vec<Value> = records
        .iter()
        .filter_map(|r| {
            let f = r.failure.as_ref()?;
            Some(json!({
                "request_index": r.request_index,
                "repeat": r.repeat,
                "target": r.target,
                "class": f.class,
                "detail": f.detail,
                "http_status": r.http_status,
            }))
        })
        .collect();
    let mut failure_counts: BTreeMap<&str, u64> = BTreeMap::new();
    for r in records {
        if let Some(f) = &r.failure {
            *failure_counts.entry(f.class.as_str()).or_default() += 1;
        }
    }
    let mut context_distribution: BTreeMap<String, u64> = BTreeMap::new();
    for r in records {
        *context_distribution.entry(r.planned_context_tokens.to_string()).or_default() += 1;
    }
    let (cache_mode, shared_prefix_tokens) = match spec.prompt_cache_mode {
        PromptCacheMode::Unique => ("unique", 0),
        PromptCacheMode::SharedPrefix { prefix_tokens } => ("shared-prefix", prefix_tokens),
    };
    let arrival = match spec.arrival {
        Arrival::ClosedLoop => json!({"kind": "closed_loop"}),
        Arrival::Poisson { rate_per_s } => json!({"kind": "poisson", "rate_per_s": rate_per_s}),
        Arrival::Constant { rate_per_s } => json!({"kind": "constant", "rate_per_s": rate_per_s}),
    };
    let policy = match spec.controlled_output_policy {
        crate::spec::OutputPolicy::Observe => "observe",
        crate::spec::OutputPolicy::Strict => "strict",
    };
    let timings: Vec<Value> =
        records.iter().map(|r| serde_json::to_value(r).unwrap_or(Value::Null)).collect();
    json!({
        "schema": SCHEMA,
        "measurement_protocol": PROTOCOL,
        "base_url": "[redacted]",
        "clock_domain_id": null,
        "completed": completed,
        "concurrency": spec.concurrency,
        "configuration_fingerprint": null,
        "context_distribution": context_distribution,
        "context_seed": spec.seed,
        "context_tokens": spec.context_tokens,
        "controlled_output_policy": policy,
        "engine": ctx.engine,
        "failed": records.len() - completed,
        "failures": failures,
        "finished_at": iso_seconds(out.finished_at),
        "finished_at_unix_ns": unix_ns(out.finished_at),
        "gpu": ctx.gpu,
        "manifest": null,
        "max_context_tokens": ctx.max_context_tokens,
        "max_tokens": spec.max_tokens,
        "metric_population": population,
        "metrics": metrics,
        "model": spec.model,
        "performance_eligible": completed > 0 && completed == records.len(),
        "prompt_cache_mode": cache_mode,
        "request_canaries": spec.canaries,
        "request_timings": timings,
        "requests": records.len(),
        "response_words": spec.response_words,
        "responses_received": records.iter().filter(|r| r.http_status.is_some_and(|s| (200..300).contains(&s))).count(),
        "run_id": ctx.run_id,
        "sampling": sampling(spec),
        "serve_flags": serve_flags(spec, ctx),
        "shared_prefix_tokens": shared_prefix_tokens,
        "source_recipe": ctx.source_recipe,
        "started_at": iso_seconds(out.started_at),
        "started_at_unix_ns": unix_ns(out.started_at),
        "tier": null,
        "timestamp_precision": "nanosecond-unix-fields; ISO labels are second precision",
        "timing_methodology": timing_methodology(),
        "wall_clock_ms": wall_ms,
        // --- anvil additions ---
        "cell": spec.name,
        "api": spec.api,
        "arrival": arrival,
        "simulated": ctx.simulated,
        "balance": ctx.balance,
        "targets": targets.iter().map(|t| json!({"label": t.label})).collect::<Vec<_>>(),
        "per_target": per_target(targets, records, wall_ms),
        "requests_per_repeat": spec.requests,
        "repeat": spec.repeat,
        "repeats": repeats(spec, records),
        "failure_counts": failure_counts,
        "slo": spec.slo,
        "calibration": out.calibration,
        "warmup": {"requests": spec.warmup_requests, "completed": out.warmup_completed, "failed": out.warmup_failed},
        "thinking_mode": spec.thinking,
        "request_timeout_ms": spec.request_timeout_ms,
        "loadgen_version": env!("CARGO_PKG_VERSION"),
    })
}
