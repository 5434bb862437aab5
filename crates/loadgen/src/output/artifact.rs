//! The `anvil-serving.benchmark/v1` document of one cell, computed from the
//! raw request records only (so anyone holding the records can recompute it).

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value, json};

use crate::observe::precision::{StoppingRecord, write_stopping_intervals};
use crate::output::benchmark::{
    AcrossRepeats, ArrivalDoc, Benchmark, RepeatRun, Repeats, StageFigures, TargetLabel, WarmupCounts,
};
use crate::output::interval;
use crate::output::record_log::{FAILURE_CLASSES, GapCounts, Row, Stored, col, element_bytes, get, is};
use crate::output::replications;
use crate::output::stats::{Distribution, KeyStyle, P99_MIN_SAMPLES, t95, write_distribution};
use crate::output::student_t::Level;
use crate::run::RunOutput;
use crate::workload::spec::{Arrival, CellContext, CellSpec, PromptCacheMode, Target, ThinkingMode};
use crate::workload::stopping::watched;

pub const SCHEMA: &str = "anvil-serving.benchmark/v1";
pub const PROTOCOL: &str = "capacity-v4-reasoning";
const FAILURE_POLICY: &str = "failed or contract-invalid responses retain sanitized timing and metadata but are excluded from performance distributions";

/// A distribution metric: artifact name, key style, and its column in the stored rows.
struct MetricDef {
    name: &'static str,
    style: KeyStyle,
    column: usize,
}

/// Per-request distributions, over performance-eligible requests.
const REQUEST_METRICS: &[MetricDef] = &[
    MetricDef { name: "completion_tokens", style: KeyStyle::Plain, column: col::OUTPUT_TOKENS },
    MetricDef { name: "decode_tok_s", style: KeyStyle::Plain, column: col::DECODE },
    MetricDef { name: "e2e", style: KeyStyle::Millis, column: col::E2E },
    MetricDef { name: "effective_prefill_tok_s", style: KeyStyle::Plain, column: col::PREFILL },
    MetricDef { name: "generation", style: KeyStyle::Millis, column: col::GENERATION },
    MetricDef { name: "mean_inter_token_latency_ms", style: KeyStyle::Plain, column: col::MEAN_ITL },
    MetricDef { name: "mean_time_per_output_token", style: KeyStyle::Millis, column: col::MEAN_TPOT },
    MetricDef { name: "prompt_tokens", style: KeyStyle::Plain, column: col::PROMPT_TOKENS },
    MetricDef { name: "time_to_first_output", style: KeyStyle::Millis, column: col::TFO },
    MetricDef { name: "tpot", style: KeyStyle::Millis, column: col::TPOT },
    MetricDef { name: "ttft", style: KeyStyle::Millis, column: col::TTFT },
    MetricDef { name: "visible_generation", style: KeyStyle::Millis, column: col::VISIBLE_GENERATION },
    MetricDef { name: "tokens_per_chunk", style: KeyStyle::Plain, column: col::TOKENS_PER_CHUNK },
];

/// Latencies counted from the scheduled send (open loop only; closed-loop
/// cells write them with 0 samples). Kept out of `metric_population`,
/// whose p99 label would otherwise call every closed-loop cell descriptive.
const SCHEDULE_METRICS: &[MetricDef] = &[
    MetricDef { name: "ttft_from_schedule", style: KeyStyle::Millis, column: col::TTFT_FROM_SCHEDULE },
    MetricDef { name: "e2e_from_schedule", style: KeyStyle::Millis, column: col::E2E_FROM_SCHEDULE },
];

/// Which stored rows a computation covers.
#[derive(Clone, Copy)]
enum Subset {
    All,
    Repeat(u32),
    Target(usize),
    Stage(u32),
}

impl Subset {
    fn keeps(self, row: &Row) -> bool {
        match self {
            Self::All => true,
            Self::Repeat(r) => row[col::REPEAT] == f64::from(r),
            Self::Target(t) => row[col::TARGET] == t as f64,
            Self::Stage(s) => row[col::STAGE] == f64::from(s),
        }
    }
}

/// Counts and sums over one subset, gathered in one pass.
#[derive(Default)]
struct Tally {
    attempted: usize,
    eligible: usize,
    successful: usize,
    responses: usize,
    output_tokens: u64,
    prompt_tokens: u64,
    prompt_token_samples: usize,
    content_chunks: u64,
    reasoning_chunks: u64,
    sources: BTreeMap<&'static str, u64>,
    controlled: usize,
    controlled_exact: usize,
    controlled_unobservable: usize,
    canaries: usize,
    canaries_passed: usize,
    hit_sum: f64,
    hits: usize,
    good: usize,
    good_tokens: u64,
    first_send: f64,
    last_end: f64,
}

fn tally(store: &Stored, subset: Subset) -> std::io::Result<Tally> {
    let mut t = Tally { first_send: f64::INFINITY, last_end: f64::NEG_INFINITY, ..Tally::default() };
    store.scan(|row| {
        if !subset.keeps(row) {
            return;
        }
        t.attempted += 1;
        t.first_send = t.first_send.min(row[col::ACTUAL_SEND]);
        t.last_end = t.last_end.max(row[col::FINISHED]);
        t.successful += usize::from(is(row, col::SUCCESSFUL));
        t.responses += usize::from(is(row, col::HTTP_2XX));
        if is(row, col::CONTROLLED) {
            t.controlled += 1;
            t.controlled_exact += usize::from(is(row, col::CONTROLLED_EXACT));
            t.controlled_unobservable += usize::from(!is(row, col::CONTROLLED_OBSERVABLE));
        }
        if is(row, col::CANARY) {
            t.canaries += 1;
            t.canaries_passed += usize::from(is(row, col::CANARY_PASSED));
        }
        let output_tokens = get(row, col::OUTPUT_TOKENS).map(|v| v as u64);
        if is(row, col::SLO_MET) {
            t.good += 1;
            t.good_tokens += output_tokens.unwrap_or(0);
        }
        if !is(row, col::ELIGIBLE) {
            return;
        }
        t.eligible += 1;
        t.output_tokens += output_tokens.unwrap_or(0);
        let prompt = get(row, col::PROMPT_TOKENS).map(|v| v as u64);
        t.prompt_tokens += prompt.unwrap_or(0);
        t.prompt_token_samples += usize::from(prompt.is_some());
        t.content_chunks += row[col::CONTENT_CHUNKS] as u64;
        t.reasoning_chunks += row[col::REASONING_CHUNKS] as u64;
        *t.sources.entry(if output_tokens.is_some() { "usage" } else { "none" }).or_default() += 1;
        // Summed in request order, as the records are.
        if let (Some(cached), Some(p)) = (get(row, col::CACHED_PROMPT_TOKENS), prompt.filter(|p| *p > 0)) {
            t.hit_sum += cached / p as f64;
            t.hits += 1;
        }
    })?;
    Ok(t)
}

impl Tally {
    /// Wall-clock span: first send to last response end.
    fn wall_ms(&self) -> f64 {
        if self.attempted == 0 { 0.0 } else { (self.last_end - self.first_send).max(0.0) }
    }
}

/// Sum of the wall spans of each repeat (repeats are separate runs; the
/// pauses between them are not part of any run).
fn total_wall_ms(store: &Stored, repeats: u32) -> std::io::Result<f64> {
    let _ = repeats;
    wall_ms_of(store, Subset::All)
}

/// Sum over repeats of the span of `subset`'s requests in that repeat.
fn wall_ms_of(store: &Stored, subset: Subset) -> std::io::Result<f64> {
    let mut spans: BTreeMap<u32, (f64, f64)> = BTreeMap::new();
    store.scan(|row| {
        if !subset.keeps(row) {
            return;
        }
        let span = spans.entry(row[col::REPEAT] as u32).or_insert((f64::INFINITY, f64::NEG_INFINITY));
        span.0 = span.0.min(row[col::ACTUAL_SEND]);
        span.1 = span.1.max(row[col::FINISHED]);
    })?;
    Ok(spans.values().map(|(first, last)| (last - first).max(0.0)).sum())
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

fn eligible_in(subset: Subset) -> impl Fn(&Row) -> bool {
    move |row| subset.keeps(row) && is(row, col::ELIGIBLE)
}

/// The `metrics` block over a subset of the attempted requests spanning `wall_ms`.
fn metrics(
    store: &Stored,
    subset: Subset,
    t: &Tally,
    gaps: &GapCounts,
    wall_ms: f64,
    spec: &CellSpec,
) -> std::io::Result<Map<String, Value>> {
    let mut m = Map::new();
    // A repeated cell's intervals are across its repeats (replications.rs).
    let repeats = if matches!(subset, Subset::All) { spec.repeat } else { 1 };
    let truth = if repeats >= 2 { replications::THIS_CONFIGURATION } else { replications::THIS_RUN };
    m.insert(replications::TRUTH_KEY.into(), truth.into());
    let distribution =
        |column: usize, keep: &dyn Fn(&Row) -> bool| -> std::io::Result<Option<Distribution>> {
            if repeats < 2 {
                return Ok(Distribution::of_vec(store.column(column, keep)?));
            }
            Ok(replications::replicated(&column_by_repeat(store, column, repeats, keep)?))
        };
    // One metric's values in memory at a time.
    for def in REQUEST_METRICS {
        let d = distribution(def.column, &eligible_in(subset))?;
        write_distribution(&mut m, def.name, def.style, d.as_ref());
    }
    // Raw chunk gaps, pooled over every eligible request (real inter-chunk latency).
    let gaps: Vec<(f64, u64)> = gaps.sorted().into_iter().map(|(g, n)| (f64::from(g) / 1000.0, n)).collect();
    write_distribution(&mut m, "chunk_gap", KeyStyle::Millis, Distribution::of_sorted_counts(&gaps).as_ref());
    for def in SCHEDULE_METRICS {
        let d = distribution(def.column, &eligible_in(subset))?;
        write_distribution(&mut m, def.name, def.style, d.as_ref());
    }
    // Client schedule lag covers every attempted request: it is about the client.
    let lags = distribution(col::SEND_LAG, &|row| subset.keeps(row))?;
    write_distribution(&mut m, "send_lag", KeyStyle::Millis, lags.as_ref());
    // How long the first content sat in the socket before the client read
    // it: also about the client (did it keep up?), not the engine.
    let read_delays = distribution(col::READ_DELAY, &eligible_in(subset))?;
    write_distribution(&mut m, "first_content_read_delay", KeyStyle::Millis, read_delays.as_ref());

    m.insert("output_tokens".into(), json!(t.output_tokens));
    m.insert("prompt_tokens".into(), json!(t.prompt_tokens));
    m.insert("prompt_token_samples".into(), json!(t.prompt_token_samples));
    m.insert("content_chunks".into(), json!(t.content_chunks));
    m.insert("reasoning_chunks".into(), json!(t.reasoning_chunks));
    // Present in the reference as null; its meaning is not defined there, so we do not guess one.
    m.insert("content_chunks_s".into(), Value::Null);
    m.insert("output_token_sources".into(), json!(t.sources));

    m.insert("controlled_output_samples".into(), json!(t.controlled));
    m.insert("controlled_output_exact_adherence".into(), json!(t.controlled_exact));
    m.insert(
        "controlled_output_exact_adherence_rate".into(),
        if t.controlled == 0 { Value::Null } else { json!(t.controlled_exact as f64 / t.controlled as f64) },
    );
    m.insert("controlled_output_unobservable".into(), json!(t.controlled_unobservable));

    m.insert("request_canary_samples".into(), json!(t.canaries));
    m.insert("request_canary_passed".into(), json!(t.canaries_passed));

    let hit_avg = if t.hits == 0 { Value::Null } else { json!(t.hit_sum / t.hits as f64) };
    m.insert("prefix_cache_hit_avg".into(), hit_avg);
    m.insert("prefix_cache_hit_samples".into(), json!(t.hits));

    let throughput_eligible = t.eligible > 0 && t.eligible == t.attempted;
    m.insert("throughput_tok_s".into(), per_second(t.output_tokens as f64, wall_ms));
    m.insert("throughput_performance_eligible".into(), json!(throughput_eligible));
    m.insert("request_throughput_req_s".into(), per_second(t.eligible as f64, wall_ms));

    if spec.slo.is_some() {
        m.insert("goodput_requests".into(), json!(t.good));
        m.insert(
            "goodput_rate".into(),
            if t.attempted == 0 { Value::Null } else { json!(t.good as f64 / t.attempted as f64) },
        );
        m.insert("goodput_req_s".into(), per_second(t.good as f64, wall_ms));
        m.insert("goodput_tok_s".into(), per_second(t.good_tokens as f64, wall_ms));
    }
    Ok(m)
}

/// `column`'s values of the rows `keep` takes, one list per repeat (in
/// recorded order); a repeat without values has an empty list.
fn column_by_repeat(
    store: &Stored,
    column: usize,
    repeats: u32,
    keep: &dyn Fn(&Row) -> bool,
) -> std::io::Result<Vec<Vec<f64>>> {
    let mut by_repeat = vec![Vec::new(); repeats as usize];
    store.scan(|row| {
        if keep(row)
            && let Some(v) = get(row, column)
            && let Some(values) = by_repeat.get_mut(row[col::REPEAT] as usize)
        {
            values.push(v);
        }
    })?;
    Ok(by_repeat)
}

/// A stopped cell's intervals a verdict may read (docs/metrics.md "Stopping
/// rules"): each watched metric over every measured request, in recorded
/// order as the `_ci95_` keys are, at the rule's look level, beside that level.
fn stopping_intervals(
    store: &Stored,
    stopping: &StoppingRecord,
    m: &mut Map<String, Value>,
) -> std::io::Result<()> {
    let level = Level { confidence: stopping.look_confidence };
    let mut intervals = BTreeMap::new();
    for key in &stopping.rule.until {
        let Ok(w) = watched(key) else { continue };
        let Some(def) = REQUEST_METRICS.iter().chain(SCHEDULE_METRICS).find(|d| d.name == w.base) else {
            continue;
        };
        let mut values = store.column(def.column, eligible_in(Subset::All))?;
        values.retain(|v| v.is_finite());
        if let Some(e) = interval::estimate(&values, w.statistic, level) {
            intervals.insert(key.clone(), e);
        }
    }
    write_stopping_intervals(m, level, &intervals);
    Ok(())
}

fn metric_population(t: &Tally, metrics: &Map<String, Value>) -> Value {
    let (eligible, successful, attempted) = (t.eligible, t.successful, t.attempted);
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
        "aggregate_throughput_eligible": eligible > 0 && eligible == attempted,
        "attempted_requests": attempted,
        "excluded_requests": attempted - eligible,
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

/// Each request option by its body field: what the recipe asked for and
/// what every request carried (the same: options are sent as written).
fn sampling(spec: &CellSpec) -> Value {
    let sent: Map<String, Value> =
        spec.options.body_fields().into_iter().map(|(f, v)| (f.to_string(), v)).collect();
    let entries = crate::workload::options::REQUEST_OPTIONS.iter().filter_map(|option| {
        let field = option.body_field?;
        let value = sent.get(field).cloned().unwrap_or(Value::Null);
        let entry = json!({"requested": value, "sent": !value.is_null(), "effective_request": value});
        Some((field.to_string(), entry))
    });
    Value::Object(entries.collect())
}

/// The caller's serve flags, completed with the reference's keys where absent.
fn serve_flags(spec: &CellSpec, ctx: &CellContext) -> Value {
    let mut flags = match &ctx.serve_flags {
        Value::Object(m) => m.clone(),
        _ => Map::new(),
    };
    let thinking = spec.thinking.as_str();
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
        "request_start": "closed loop: just before the client takes an open keep-alive connection (or opens one, when none is open: then request_timings[].connect_ms is inside every timing) and writes the request; open loop: when the sender thread writes the request on an already open connection (with connect on-demand, a request finding none open starts at its due time, before its connect)",
        "connections": "connect ahead (default): before each measured run's clock starts, the descriptor table is pre-sized and the connections the run can use at once are opened (connections.opened_ahead), so no connect or descriptor-table growth lands inside a timing; connect on-demand: idle connections are closed first and each is opened when a request needs it, so connection setup is measured",
        "e2e": "request start through arrival of the stream's end marker ([DONE] or response.completed)",
        "visible_generation": "client-observed E2E minus ttft",
        "throughput": "sum of usage completion tokens of performance-eligible requests divided by the measured wall-clock span (first request sent to last response ended, summed over repeats)",
        "chunk_gap": "raw gaps between consecutive non-empty reasoning or content events of a request, pooled over eligible requests; events arriving in one read share a timestamp",
        "tokens_per_chunk": "per request, usage completion tokens divided by non-empty reasoning plus content events",
        "first_content_read_delay": "kernel arrival of the bytes holding the first content to the client's read of them, over eligible requests; not part of ttft (which ends at arrival); large values mean the client was busy",
        "first_content_shared_read": "request_timings[].first_content_shared_read: the first content arrived in one read with the next output event; the kernel stamps a read with its newest bytes, so that request's ttft is an upper bound, late by at most its first chunk gap",
        "send_lag": "actual send time minus the schedule's intended send time (closed loop: the end of the worker's previous request; open loop: the seeded arrival time), over all attempted requests",
        "goodput": "requests meeting every configured SLO (ttft, tpot, e2e limits) among attempted requests; failed requests never meet an SLO",
        "prompt_calibration": "filler length chosen by probing the server's usage.prompt_tokens with one-token requests before warmup; planned and actual prompt tokens are recorded per request",
        "repeats": "each repeat is a separate measured run; across-repeat CIs use Student t over per-repeat aggregates",
        "from_schedule": "open loop only: ttft_from_schedule_ms = ttft_ms + send_lag_ms and e2e_from_schedule_ms = e2e_ms + send_lag_ms per request, i.e. measured from the scheduled send, so time the client spent behind its schedule is not hidden (coordinated omission); distributions over eligible open-loop requests; an slo with from=\"schedule\" judges ttft and e2e by them",
        "stages": "stages[]: consecutive windows of one measured run, each with its own rate or concurrency; a stage's duration bounds when its requests start, requests in flight at its end finish and count for it; its metrics are the cell's over its own requests, throughput over their span",
        "series": "series: per interval_s of each run (repeat), from the records: in_flight (time-averaged requests between actual send and finish), sent, completed and failed (by finish), output_tok_s (eligible output tokens spread evenly from first output to finish), ttft_p50_ms/ttft_p99_ms (nearest rank over eligible requests sent in the interval)",
    })
}

/// The across-repeat summary of one per-repeat aggregate.
fn across(values: &[f64]) -> Value {
    let Some(d) = Distribution::of(values) else { return Value::Null };
    let half = d.stddev.zip(t95(d.samples.saturating_sub(1))).map(|(s, t)| t * s / (d.samples as f64).sqrt());
    let spread = AcrossRepeats {
        mean: d.mean,
        stddev: d.stddev,
        ci95_low: half.map(|h| d.mean - h),
        ci95_high: half.map(|h| d.mean + h),
        min: d.min,
        max: d.max,
        samples: d.samples,
    };
    serde_json::to_value(spread).unwrap_or_default()
}

fn repeats(spec: &CellSpec, store: &Stored) -> std::io::Result<Repeats> {
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
    let no_gaps = GapCounts::default();
    for repeat in 0..spec.repeat {
        let subset = Subset::Repeat(repeat);
        let t = tally(store, subset)?;
        let wall = t.wall_ms();
        let m = metrics(store, subset, &t, store.gaps.get(&repeat).unwrap_or(&no_gaps), wall, spec)?;
        let mut figures = Map::new();
        figures.insert("output_tokens".into(), m["output_tokens"].clone());
        for key in KEYS {
            let v = m.get(key).cloned().unwrap_or(Value::Null);
            if let Some(x) = v.as_f64() {
                per_key.entry(key).or_default().push(x);
            }
            figures.insert(key.into(), v);
        }
        runs.push(RepeatRun {
            repeat,
            attempted: t.attempted as u64,
            completed: t.eligible as u64,
            wall_clock_ms: wall,
            metrics: figures,
        });
    }
    let across_repeats: Map<String, Value> =
        KEYS.iter().map(|k| (k.to_string(), across(per_key.get(k).map_or(&[][..], |v| v)))).collect();
    Ok(Repeats { count: spec.repeat, runs, across_repeats })
}

fn per_target(targets: &[Target], store: &Stored, wall_ms: f64) -> std::io::Result<Value> {
    let mut rows = Vec::new();
    for (i, t) in targets.iter().enumerate() {
        let subset = Subset::Target(i);
        let tl = tally(store, subset)?;
        let ttft = Distribution::of_vec(store.column(col::TTFT, eligible_in(subset))?);
        let tpot = Distribution::of_vec(store.column(col::TPOT, eligible_in(subset))?);
        let e2e = Distribution::of_vec(store.column(col::E2E, eligible_in(subset))?);
        rows.push(json!({
            "label": t.label,
            "attempted": tl.attempted,
            "completed": tl.eligible,
            "failed": tl.attempted - tl.eligible,
            "output_tokens": tl.output_tokens,
            // Same denominator as the cell: per-target rates add up to the cell's exactly.
            "throughput_tok_s": per_second(tl.output_tokens as f64, wall_ms),
            "ttft_p50_ms": ttft.as_ref().map(|d| d.percentiles[1]),
            "ttft_p99_ms": ttft.as_ref().map(|d| d.percentiles[5]),
            "ttft_mean_ms": ttft.as_ref().map(|d| d.mean),
            "tpot_mean_ms": tpot.as_ref().map(|d| d.mean),
            "e2e_p50_ms": e2e.as_ref().map(|d| d.percentiles[1]),
        }));
    }
    Ok(Value::Array(rows))
}

/// Each stage's figures: the cell's metric of the same name over the
/// requests the stage sent.
const STAGE_KEYS: [&str; 17] = [
    "throughput_tok_s",
    "request_throughput_req_s",
    "output_tokens",
    "ttft_mean_ms",
    "ttft_p50_ms",
    "ttft_p90_ms",
    "ttft_p99_ms",
    "tpot_p50_ms",
    "tpot_p99_ms",
    "e2e_p50_ms",
    "e2e_p99_ms",
    "ttft_from_schedule_p50_ms",
    "ttft_from_schedule_p99_ms",
    "e2e_from_schedule_p50_ms",
    "e2e_from_schedule_p99_ms",
    "send_lag_p50_ms",
    "send_lag_p99_ms",
];

/// The `stages` array of a staged cell: each stage's settings, its window
/// on the run's clock and its metrics (throughput over the span of its own
/// requests, summed over repeats, as the cell's).
fn stages(spec: &CellSpec, store: &Stored) -> std::io::Result<Vec<StageFigures>> {
    let no_gaps = GapCounts::default();
    let mut out = Vec::new();
    for (i, (stage, (start, end))) in
        (0u32..).zip(spec.stages.iter().zip(crate::workload::stages::windows_ms(&spec.stages)))
    {
        let subset = Subset::Stage(i);
        let t = tally(store, subset)?;
        let wall = wall_ms_of(store, subset)?;
        let m = metrics(store, subset, &t, &no_gaps, wall, spec)?;
        let mut picked = Map::new();
        let goodput = ["goodput_rate", "goodput_req_s"];
        for key in STAGE_KEYS.iter().chain(goodput.iter().filter(|_| spec.slo.is_some())) {
            picked.insert(key.to_string(), m.get(*key).cloned().unwrap_or(Value::Null));
        }
        out.push(StageFigures {
            stage: i,
            arrival: arrival_json(stage.arrival),
            concurrency: stage.concurrency,
            duration_ms: stage.duration_ms,
            window_ms: [start, end],
            attempted: t.attempted as u64,
            completed: t.eligible as u64,
            failed: (t.attempted - t.eligible) as u64,
            wall_clock_ms: wall,
            metrics: picked,
        });
    }
    Ok(out)
}

fn arrival_json(arrival: Arrival) -> ArrivalDoc {
    let (kind, rate_per_s) = match arrival {
        Arrival::ClosedLoop => ("closed_loop", None),
        Arrival::Poisson { rate_per_s } => ("poisson", Some(rate_per_s)),
        Arrival::Constant { rate_per_s } => ("constant", Some(rate_per_s)),
    };
    ArrivalDoc { kind: kind.into(), rate_per_s, time_scale: None }
}

/// The unmeasured warmup requests: planned, completed, failed.
fn warmup_counts(spec: &CellSpec, out: &RunOutput) -> WarmupCounts {
    WarmupCounts {
        requests: spec.warmup_requests,
        completed: out.warmup_completed,
        failed: out.warmup_failed,
    }
}

/// The connections a cell opened before its clocks started.
fn connections(spec: &CellSpec, out: &RunOutput) -> Value {
    json!({
        "connect": spec.connect.as_str(),
        "fd_table_slots": out.preparation.fd_table_slots,
        "opened_ahead": out.preparation.ahead.iter().map(|c| {
            let mut opened = json!({
                "repeat": c.repeat,
                "target": c.target,
                "connection_id": c.connection_id,
                "connect_ms": c.connect_ms,
            });
            // https only: the handshake's part of connect_ms.
            if let Some(ms) = c.tls_handshake_ms {
                opened["tls_handshake_ms"] = json!(ms);
            }
            opened
        }).collect::<Vec<_>>(),
    })
}

/// The cell's figures over all its measured requests, from the stored records.
struct Figures {
    tally: Tally,
    wall_ms: f64,
    /// Every distribution and aggregate; a stopping rule's intervals and
    /// agent tasks' job metrics among them.
    metrics: Map<String, Value>,
    population: Value,
    failure_counts: BTreeMap<String, u64>,
    /// Planned context → request count.
    context_distribution: BTreeMap<String, u64>,
}

impl Figures {
    fn of(spec: &CellSpec, out: &RunOutput) -> std::io::Result<Self> {
        let store = &out.store;
        let mut all_gaps = GapCounts::default();
        for g in store.gaps.values() {
            all_gaps.merge(g);
        }
        let tally = tally(store, Subset::All)?;
        let wall_ms = total_wall_ms(store, spec.repeat)?;
        let mut metrics = metrics(store, Subset::All, &tally, &all_gaps, wall_ms, spec)?;
        if let Some(stopping) = &out.stopping {
            stopping_intervals(store, stopping, &mut metrics)?;
        }
        // A task's figures sit beside the requests' so gates and searches read them alike.
        if let Some(jobs) = &out.jobs {
            metrics.extend(jobs.metrics.clone());
        }
        let population = metric_population(&tally, &metrics);
        let (failure_counts, context_distribution) = record_counts(store)?;
        Ok(Self { tally, wall_ms, metrics, population, failure_counts, context_distribution })
    }
}

/// Failed records by class, and records by planned context.
fn record_counts(store: &Stored) -> std::io::Result<(BTreeMap<String, u64>, BTreeMap<String, u64>)> {
    let mut failure_counts: BTreeMap<&str, u64> = BTreeMap::new();
    let mut context_distribution: BTreeMap<String, u64> = BTreeMap::new();
    store.scan(|row| {
        if let Some(code) = get(row, col::FAILURE_CLASS) {
            *failure_counts.entry(FAILURE_CLASSES[code as usize].as_str()).or_default() += 1;
        }
        *context_distribution.entry((row[col::PLANNED_CONTEXT] as u64).to_string()).or_default() += 1;
    })?;
    let failure_counts = failure_counts.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    Ok((failure_counts, context_distribution))
}

/// The artifact's `prompt_cache_mode` and `shared_prefix_tokens`.
fn prompt_cache(mode: PromptCacheMode) -> (&'static str, u64) {
    match mode {
        PromptCacheMode::Unique => ("unique", 0),
        PromptCacheMode::SharedPrefix { prefix_tokens } => ("shared-prefix", prefix_tokens),
    }
}

/// The artifact's `arrival`: the cell's, or a replayed trace's own (its
/// arrivals are the trace's, at its time scale).
fn arrival_doc(arrival: Arrival, traffic: Option<&Value>) -> ArrivalDoc {
    match traffic {
        Some(t) if t["kind"] == "trace" => {
            ArrivalDoc { kind: "trace".into(), rate_per_s: None, time_scale: Some(t["time_scale"].clone()) }
        }
        _ => arrival_json(arrival),
    }
}

/// Builds the artifact with empty `request_timings` and `failures`
/// (written from the stored records by [`write_pretty`]).
pub fn build(
    spec: &CellSpec,
    targets: &[Target],
    ctx: &CellContext,
    out: &RunOutput,
) -> std::io::Result<Benchmark> {
    let store = &out.store;
    let Figures { tally: t, wall_ms, metrics, population, failure_counts, context_distribution } =
        Figures::of(spec, out)?;
    let (cache_mode, shared_prefix_tokens) = prompt_cache(spec.prompt_cache_mode);
    // Replayed traffic: what it was.
    let traffic = (!out.traffic.is_null()).then(|| out.traffic.clone());
    Ok(Benchmark {
        schema: SCHEMA.into(),
        measurement_protocol: PROTOCOL.into(),
        base_url: "[redacted]".into(),
        clock_domain_id: Value::Null,
        completed: t.eligible as u64,
        concurrency: spec.concurrency,
        configuration_fingerprint: None,
        context_distribution,
        context_seed: spec.seed,
        context_tokens: spec.context_tokens,
        controlled_output_policy: spec.controlled_output_policy.as_str().into(),
        engine: ctx.engine.clone(),
        failed: (t.attempted - t.eligible) as u64,
        failures: Vec::new(),
        finished_at: iso_seconds(out.finished_at),
        finished_at_unix_ns: unix_ns(out.finished_at),
        gpu: ctx.gpu.clone(),
        manifest: Value::Null,
        max_context_tokens: ctx.max_context_tokens,
        max_tokens: spec.max_tokens,
        metric_population: population,
        metrics,
        model: spec.model.clone(),
        performance_eligible: t.eligible > 0 && t.eligible == t.attempted,
        prompt_cache_mode: cache_mode.into(),
        request_canaries: spec.canaries,
        request_timings: Vec::new(),
        requests: t.attempted as u64,
        response_words: spec.response_words,
        responses_received: t.responses as u64,
        run_id: ctx.run_id.clone(),
        sampling: sampling(spec),
        serve_flags: serve_flags(spec, ctx),
        shared_prefix_tokens,
        source_recipe: ctx.source_recipe.clone(),
        started_at: iso_seconds(out.started_at),
        started_at_unix_ns: unix_ns(out.started_at),
        tier: Value::Null,
        timestamp_precision: "nanosecond-unix-fields; ISO labels are second precision".into(),
        timing_methodology: timing_methodology(),
        wall_clock_ms: wall_ms,
        cell: spec.name.clone(),
        api: spec.api,
        arrival: arrival_doc(spec.arrival, traffic.as_ref()),
        simulated: ctx.simulated,
        balance: ctx.balance,
        targets: targets.iter().map(|t| TargetLabel { label: t.label.clone() }).collect(),
        per_target: per_target(targets, store, wall_ms)?,
        // A staged cell sends what its stages' durations allow: no fixed count.
        requests_per_repeat: spec.stages.is_empty().then_some(spec.requests),
        repeat: spec.repeat,
        repeats: repeats(spec, store)?,
        failure_counts,
        slo: spec.slo,
        calibration: out.calibration.clone(),
        warmup: warmup_counts(spec, out),
        thinking_mode: spec.thinking,
        request_timeout_ms: spec.request_timeout_ms,
        loadgen_version: env!("CARGO_PKG_VERSION").into(),
        loadgen_workers: Some(ctx.workers()),
        connections: connections(spec, out),
        series: crate::output::series::build(store, spec.repeat)?,
        stages: if spec.stages.is_empty() { None } else { Some(stages(spec, store)?) },
        traffic,
        prompt_salt: (spec.prompt_salt != 0).then_some(spec.prompt_salt),
        // What the load generator did, as every consumer (report, decision
        // summary, manifest, `anvil show`) reads it: the cell as resolved
        // (every default applied), the load it offered, what its cap did.
        resolved_cell: spec.clone(),
        offered_load: Some(out.offered.clone()),
        in_flight_cap: out.cap_holds.clone(),
        ending: Some(out.ending.clone()),
        client_error: Some(crate::output::client_error::of(store)?),
        load_margins: out.load_margins,
        steady_state: crate::output::steady_state::of(store, spec.repeat, !spec.stages.is_empty())?,
        stopping: out.stopping.clone(),
        tokens: (!out.tokens.is_empty()).then(|| out.tokens.clone()),
        jobs: out.jobs.clone(),
        telemetry: None,
        server_warmup: None,
        server_startup_ms: None,
        other: Map::new(),
    })
}

/// Top-level keys whose values are the stored per-request arrays.
const STREAMED_KEYS: [&str; 2] = ["request_timings", "failures"];

/// Writes `artifact` as `serde_json::to_writer_pretty` would, with the
/// stored `request_timings` and `failures` in place of the placeholders
/// (copied from the record log, never all in memory).
pub fn write_pretty(artifact: &Value, store: &Stored, out: &mut impl std::io::Write) -> std::io::Result<()> {
    let Value::Object(map) = artifact else {
        return serde_json::to_writer_pretty(out, artifact).map_err(std::io::Error::from);
    };
    if map.is_empty() {
        return out.write_all(b"{}");
    }
    out.write_all(b"{\n")?;
    for (i, (key, value)) in map.iter().enumerate() {
        out.write_all(b"  ")?;
        serde_json::to_writer(&mut *out, key)?;
        out.write_all(b": ")?;
        match key.as_str() {
            k if STREAMED_KEYS.contains(&k) => store.write_array(k == "failures", out)?,
            _ => out.write_all(&element_bytes(value, 2)?)?,
        }
        out.write_all(if i + 1 < map.len() { b",\n" } else { b"\n" })?;
    }
    out.write_all(b"}")
}

/// The full artifact as one value (every record in memory).
pub fn materialize(mut artifact: Value, store: &Stored) -> std::io::Result<Value> {
    let records = if store.kept.is_empty() { store.records()? } else { store.kept.clone() };
    let mut failures = Vec::new();
    for r in &records {
        if let Some(f) = &r.failure {
            failures.push(json!({
                "request_index": r.request_index,
                "repeat": r.repeat,
                "target": r.target,
                "class": f.class,
                "detail": f.detail,
                "http_status": r.http_status,
            }));
        }
    }
    let timings: Vec<Value> =
        records.iter().map(|r| serde_json::to_value(r).unwrap_or(Value::Null)).collect();
    artifact["failures"] = Value::Array(failures);
    artifact["request_timings"] = Value::Array(timings);
    Ok(artifact)
}
