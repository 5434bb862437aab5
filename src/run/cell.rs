//! `cell` steps: one server × one workload, measured by the load generator
//! under the capacity-v4 protocol; the artifact is `anvil-serving.benchmark/v1`.

use anvil_loadgen::{
    Api, Arrival, Balance, CellContext, CellSpec, DatasetFormat, DatasetSpec, OutputPolicy, PromptCacheMode,
    SessionSpec, Slo, ThinkingMode, TraceFormat, TraceSpec, Traffic,
};
use std::time::Duration;

use serde_json::{Value, json};

use super::outcome::{Failure, Produced, ProducedFile};
use super::servers::ServerInfo;
use crate::recipe::decls::load::TrafficDecl;
use crate::recipe::decls::{self, CellDecl};
use crate::recipe::placeholders::unescape;
use crate::recipe::words;
use crate::results::{self, CELL_RESULT_SCHEMA, CellResult};

/// The load generator's spec for a cell: the recipe's words mapped onto
/// the load generator's types, its defaults where the recipe is silent.
pub fn cell_spec(name: &str, cell: &CellDecl, model: &str, seed: u64) -> CellSpec {
    let defaults = CellSpec::default();
    let load = &cell.load;
    let count =
        |value: Option<u64>, default: u32| value.map_or(default, |v| v.min(u64::from(u32::MAX)) as u32);
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    CellSpec {
        name: name.to_string(),
        model: model.to_string(),
        api: match load.api {
            words::Api::Chat => Api::Chat,
            words::Api::Completions => Api::Completions,
            words::Api::Responses => Api::Responses,
        },
        context_tokens: load.context_tokens.unwrap_or(defaults.context_tokens),
        concurrency: count(load.concurrency, default_concurrency(&load.traffic, defaults.concurrency)).max(1),
        arrival: match load.arrival {
            decls::Arrival::Closed => Arrival::ClosedLoop,
            decls::Arrival::Poisson { rate_per_s } => Arrival::Poisson { rate_per_s },
            decls::Arrival::Constant { rate_per_s } => Arrival::Constant { rate_per_s },
        },
        requests: count(load.requests, defaults.requests).max(1),
        warmup_requests: count(load.warmup_requests, defaults.warmup_requests),
        response_words: count(load.response_words, defaults.response_words),
        max_tokens: count(load.max_tokens, defaults.max_tokens),
        prompt_cache_mode: match load.prompt_cache {
            words::PromptCache::Unique => PromptCacheMode::Unique,
            words::PromptCache::SharedPrefix => {
                PromptCacheMode::SharedPrefix { prefix_tokens: load.prefix_tokens }
            }
        },
        canaries: load.canaries.unwrap_or(defaults.canaries),
        thinking: match load.thinking {
            words::Thinking::Default => ThinkingMode::Default,
            words::Thinking::On => ThinkingMode::On,
            words::Thinking::Off => ThinkingMode::Off,
        },
        temperature: load.temperature,
        top_p: load.top_p,
        sampling_seed: load.sampling_seed,
        prompt_salt: load.prompt_salt.unwrap_or(0),
        controlled_output_policy: match load.output_policy {
            words::OutputPolicy::Observe => OutputPolicy::Observe,
            words::OutputPolicy::Strict => OutputPolicy::Strict,
        },
        request_timeout_ms: load.timeout.map_or(defaults.request_timeout_ms, |t| t.as_millis() as u64),
        seed,
        extra_body: load.extra_body.as_ref().map(unescape_strings).unwrap_or(Value::Null),
        slo: load.slo.map(|slo| Slo {
            ttft_ms: slo.ttft.map(ms),
            tpot_ms: slo.tpot.map(ms),
            e2e_ms: slo.e2e.map(ms),
            from: match slo.from {
                decls::load::SloFrom::Send => anvil_loadgen::SloFrom::Send,
                decls::load::SloFrom::Schedule => anvil_loadgen::SloFrom::Schedule,
            },
        }),
        repeat: count(load.repeat, 1).max(1),
        connect: match load.connect {
            decls::load::ConnectWord::Ahead => anvil_loadgen::Connect::Ahead,
            decls::load::ConnectWord::OnDemand => anvil_loadgen::Connect::OnDemand,
        },
        stages: load.stages.iter().map(|s| stage(s, count(load.concurrency, defaults.concurrency))).collect(),
        traffic: traffic(&load.traffic),
    }
}

/// A trace's arrivals are its own, so its in-flight cap is wide unless set;
/// sessions hold one connection each.
fn default_concurrency(traffic: &TrafficDecl, synthetic: u32) -> u32 {
    match traffic {
        TrafficDecl::Trace(_) => 1024,
        TrafficDecl::Sessions(s) => s.sessions.min(u64::from(u32::MAX)) as u32,
        TrafficDecl::Synthetic | TrafficDecl::Dataset(_) => synthetic,
    }
}

/// The declared traffic as the load generator reads it (file paths as
/// written; [`run_cell`] resolves them against the recipe's folder).
fn traffic(decl: &TrafficDecl) -> Traffic {
    match decl {
        TrafficDecl::Synthetic => Traffic::Synthetic,
        TrafficDecl::Trace(t) => Traffic::Trace(TraceSpec {
            path: t.file.clone().into(),
            format: if t.format == "jsonl" { TraceFormat::Jsonl } else { TraceFormat::Mooncake },
            block_tokens: t.block_tokens.min(u64::from(u32::MAX)) as u32,
            time_scale: t.time_scale,
            start_ms: t.start.as_millis() as u64,
            duration_ms: t.duration.map(|d| d.as_millis() as u64),
            max_requests: t.max_requests,
            looped: t.looped,
            ignore_eos: t.ignore_eos,
        }),
        TrafficDecl::Dataset(d) => Traffic::Dataset(DatasetSpec {
            path: d.file.clone().into(),
            format: if d.format == "jsonl" { DatasetFormat::Jsonl } else { DatasetFormat::Sharegpt },
        }),
        TrafficDecl::Sessions(s) => Traffic::Sessions(SessionSpec {
            sessions: s.sessions.min(u64::from(u32::MAX)) as u32,
            turns: s.turns.min(u64::from(u32::MAX)) as u32,
            think_time_ms: s.think_time.as_millis() as u64,
            turn_texts: s.turn_texts.clone(),
        }),
    }
}

/// Trace and dataset paths are relative to the recipe's folder (as its
/// fingerprint reads them).
fn resolve_paths(spec: &mut CellSpec, recipe_key: &str) {
    let dir = std::path::Path::new(recipe_key).parent().unwrap_or(std::path::Path::new("."));
    match &mut spec.traffic {
        Traffic::Trace(t) => t.path = dir.join(&t.path),
        Traffic::Dataset(d) => d.path = dir.join(&d.path),
        Traffic::Synthetic | Traffic::Sessions(_) => {}
    }
}

/// A declared stage as the load generator runs it: with a rate, open loop
/// capped at its own or the cell's concurrency; without, closed loop.
fn stage(s: &decls::load::StageDecl, cell_concurrency: u32) -> anvil_loadgen::Stage {
    let concurrency = s.concurrency.map_or(cell_concurrency, |c| c.min(u64::from(u32::MAX)) as u32).max(1);
    let arrival = match (s.rate, s.arrival) {
        (None, _) => Arrival::ClosedLoop,
        (Some(rate_per_s), words::ArrivalWord::Constant) => Arrival::Constant { rate_per_s },
        (Some(rate_per_s), _) => Arrival::Poisson { rate_per_s },
    };
    anvil_loadgen::Stage { arrival, concurrency, duration_ms: s.duration.as_millis() as u64 }
}

/// Where a cell is measured: the facts its artifact carries besides the cell itself.
pub struct CellRun<'a> {
    pub seed: u64,
    pub fingerprint: &'a str,
    pub run_id: &'a str,
    pub recipe: &'a str,
    pub progress: &'a super::progress::Progress,
}

pub async fn run_cell(
    name: &str,
    cell: &CellDecl,
    server: &ServerInfo,
    at: &CellRun<'_>,
) -> Result<Produced, Failure> {
    let (fingerprint, display) = (at.fingerprint, at.progress);
    let mut spec = cell_spec(name, cell, &server.model, at.seed);
    resolve_paths(&mut spec, at.recipe);
    let context = CellContext {
        engine: server.engine.clone(),
        simulated: server.simulated,
        gpu: server.gpu_label.clone(),
        serve_flags: server.serve_flags.clone(),
        run_id: at.run_id.to_string(),
        source_recipe: Some(at.recipe.to_string()),
        max_context_tokens: None,
        balance: match cell.load.balance {
            words::Balance::RoundRobin => Balance::RoundRobin,
            words::Balance::LeastOutstanding => Balance::LeastOutstanding,
        },
    };
    let name = name.to_string();
    let progress = |p: &anvil_loadgen::Progress| display.cell(&name, p.done, p.total, p.tok_s, p.failed);
    let before = scrape_all(server).await;
    let sampler = anvil_proc::GpuSampler::start(&server.gpu_ids, std::time::Duration::from_millis(500));
    // Records stream to disk as they finish, so memory does not grow with the request count.
    let scratch = tempfile::Builder::new()
        .prefix("anvil-cell-")
        .tempdir()
        .map_err(|e| Failure::new(format!("a scratch folder for the cell: {e}")))?;
    let report =
        anvil_loadgen::run_cell_streamed(&spec, &server.targets, &context, &progress, scratch.path()).await;
    let gpu = match sampler {
        Some(s) => s.stop().await,
        None => json!({"available": false, "why": "nvidia-smi not found or no GPUs assigned"}),
    };
    let after = scrape_all(server).await;
    let mut report = report.map_err(|e| Failure::new(format!("cell failed: {e:#}")))?;
    // The document without its per-request lists, which are written from the record log.
    let mut artifact = std::mem::take(&mut report.artifact);
    artifact["telemetry"] =
        json!({"server_metrics_delta": metric_deltas(server, &before, &after), "gpu": gpu});
    artifact["server_warmup"] = server.warmup.clone();
    artifact["configuration_fingerprint"] = json!(fingerprint);
    artifact["simulated"] = json!(server.simulated);
    artifact["server_startup_ms"] = json!(server.startup_ms);
    let summary = &report.summary;
    if summary.completed == 0 {
        let failures = report.failures(50).unwrap_or_default();
        return Err(Failure::new(format!("no request completed ({} failed)", summary.failed))
            .with_detail(serde_json::to_string(&failures).unwrap_or_default()));
    }
    let result = cell_result(server, summary, &artifact);
    let path = scratch.path().join("benchmark.json");
    report
        .write_artifact_file(&artifact, &path)
        .map_err(|e| Failure::new(format!("writing benchmark.json: {e}")))?;
    let mut files = vec![ProducedFile::Scratch {
        name: "benchmark.json".into(),
        folder: scratch,
        file: "benchmark.json".into(),
    }];
    for (i, log) in server.log_paths.iter().enumerate() {
        if log.exists() {
            files.push(ProducedFile::Copy { name: format!("server-{i}.log"), from: log.clone() });
        }
    }
    let line = format!(
        "{} ok / {} failed, {:.1} tok/s aggregate, ttft p50 {:.1} ms{}",
        summary.completed,
        summary.failed,
        summary.throughput_tok_s.unwrap_or(0.0),
        summary.ttft_p50_ms.unwrap_or(0.0),
        if server.simulated { " (simulated)" } else { "" }
    );
    Ok(Produced { result: results::to_value(&result), files, rejected: false, summary: line })
}

/// The stored result: the summary's figures and the artifact's metrics.
fn cell_result(server: &ServerInfo, summary: &anvil_loadgen::CellSummary, artifact: &Value) -> CellResult {
    let metrics = artifact.get("metrics").cloned().unwrap_or_default();
    CellResult {
        schema: CELL_RESULT_SCHEMA.into(),
        engine: server.engine.clone(),
        simulated: server.simulated,
        completed: summary.completed.into(),
        failed: summary.failed.into(),
        aggregate_tok_s: summary.throughput_tok_s,
        ttft_p50_ms: summary.ttft_p50_ms,
        ttft_p99_ms: summary.ttft_p99_ms,
        decode_tok_s_mean: summary.decode_tok_s_mean,
        wall_clock_ms: summary.wall_clock_ms,
        performance_eligible: artifact.get("performance_eligible").and_then(Value::as_bool),
        canaries_passed: metrics.get("request_canary_passed").and_then(Value::as_u64),
        requests: artifact.get("requests").and_then(Value::as_u64),
        repeats: artifact.get("repeats").and_then(|r| r.get("across_repeats")).cloned().unwrap_or_default(),
        metrics,
    }
}

/// Each replica's Prometheus counters (None where `/metrics` is not served).
async fn scrape_all(server: &ServerInfo) -> Vec<Result<std::collections::BTreeMap<String, f64>, String>> {
    let mut out = Vec::new();
    for target in &server.targets {
        let scraped = anvil_proc::scrape_metrics_with_tls(&target.base_url, &target.tls).await;
        out.push(scraped.map_err(|e| e.to_string()));
    }
    out
}

fn metric_deltas(
    server: &ServerInfo,
    before: &[Result<std::collections::BTreeMap<String, f64>, String>],
    after: &[Result<std::collections::BTreeMap<String, f64>, String>],
) -> Value {
    let per_replica: Vec<Value> = server
        .targets
        .iter()
        .zip(before.iter().zip(after))
        .map(|(target, pair)| match pair {
            (Ok(b), Ok(a)) => json!({"replica": target.label, "delta": anvil_proc::metric_deltas(b, a)}),
            (Err(e), _) | (_, Err(e)) => json!({"replica": target.label, "unavailable": e}),
        })
        .collect();
    Value::Array(per_replica)
}

/// Literal braces (`{{`) in `extra-body` strings; `{marker}`, `{index}` and
/// `{seed}` stay for the load generator to fill per request.
fn unescape_strings(value: &Value) -> Value {
    match value {
        Value::String(s) => Value::String(unescape(s)),
        Value::Array(items) => Value::Array(items.iter().map(unescape_strings).collect()),
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), unescape_strings(v))).collect())
        }
        other => other.clone(),
    }
}
