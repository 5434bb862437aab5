//! `cell` steps: one server × one workload, measured by the load generator
//! under the capacity-v4 protocol; the artifact is `anvil-serving.benchmark/v1`.

use anvil_loadgen::{
    Api, Arrival, Balance, CellContext, CellSpec, OutputPolicy, PromptCacheMode, Slo, ThinkingMode,
};
use serde_json::{Value, json};

use super::outcome::{Failure, Produced, ProducedFile};
use super::servers::ServerInfo;
use crate::recipe::Decl;

pub fn cell_spec(step: &Decl, model: &str, seed: u64) -> CellSpec {
    let defaults = CellSpec::default();
    let u32_of = |key: &str, default: u32| step.u64(key).map_or(default, |v| v.min(u32::MAX as u64) as u32);
    let slo = step.get("slo").map(|_| {
        let props = step.props("slo");
        let ms = |key: &str| {
            props
                .get(key)
                .and_then(Value::as_str)
                .and_then(|t| crate::recipe::parse_duration(t).ok())
                .map(|d| d.as_secs_f64() * 1000.0)
        };
        Slo { ttft_ms: ms("ttft"), tpot_ms: ms("tpot"), e2e_ms: ms("e2e") }
    });
    CellSpec {
        name: step.name.clone(),
        model: model.to_string(),
        api: match step.str("api") {
            Some("completions") => Api::Completions,
            Some("responses") => Api::Responses,
            _ => Api::Chat,
        },
        context_tokens: step.u64("context-tokens").unwrap_or(defaults.context_tokens),
        concurrency: u32_of("concurrency", defaults.concurrency).max(1),
        arrival: match (step.str("arrival"), step.f64("rate")) {
            (Some("poisson"), Some(rate)) => Arrival::Poisson { rate_per_s: rate },
            (Some("constant"), Some(rate)) => Arrival::Constant { rate_per_s: rate },
            _ => Arrival::ClosedLoop,
        },
        requests: u32_of("requests", defaults.requests).max(1),
        warmup_requests: u32_of("warmup-requests", defaults.warmup_requests),
        response_words: u32_of("response-words", defaults.response_words),
        max_tokens: u32_of("max-tokens", defaults.max_tokens),
        prompt_cache_mode: match step.str("prompt-cache") {
            Some("shared-prefix") => {
                PromptCacheMode::SharedPrefix { prefix_tokens: step.u64("prefix-tokens").unwrap_or(0) }
            }
            _ => PromptCacheMode::Unique,
        },
        canaries: step.bool("canaries").unwrap_or(defaults.canaries),
        thinking: match step.str("thinking") {
            Some("on") => ThinkingMode::On,
            Some("off") => ThinkingMode::Off,
            _ => ThinkingMode::Default,
        },
        temperature: step.f64("temperature"),
        top_p: step.f64("top-p"),
        sampling_seed: step.u64("sampling-seed"),
        controlled_output_policy: if step.str("output-policy") == Some("strict") {
            OutputPolicy::Strict
        } else {
            OutputPolicy::Observe
        },
        request_timeout_ms: step.u64("timeout").unwrap_or(defaults.request_timeout_ms),
        seed,
        extra_body: step.get("extra-body").map(unescape_strings).unwrap_or(Value::Null),
        slo,
        repeat: u32_of("repeat", 1).max(1),
    }
}

pub async fn run_cell(
    step: &Decl,
    server: &ServerInfo,
    seed: u64,
    fingerprint: &str,
    run_id: &str,
    recipe: &str,
    display: &super::progress::Progress,
) -> Result<Produced, Failure> {
    let spec = cell_spec(step, &server.model, seed);
    let context = CellContext {
        engine: server.engine.clone(),
        simulated: server.simulated,
        gpu: server.gpu_label.clone(),
        serve_flags: server.serve_flags.clone(),
        run_id: run_id.to_string(),
        source_recipe: Some(recipe.to_string()),
        max_context_tokens: None,
        balance: if step.str("balance") == Some("least-outstanding") {
            Balance::LeastOutstanding
        } else {
            Balance::RoundRobin
        },
    };
    let name = step.name.clone();
    let progress = |p: &anvil_loadgen::Progress| display.cell(&name, p.done, p.total, p.tok_s, p.failed);
    let before = scrape_all(server).await;
    let sampler = anvil_proc::GpuSampler::start(&server.gpu_ids, std::time::Duration::from_millis(500));
    let report = anvil_loadgen::run_cell(&spec, &server.targets, &context, &progress).await;
    let gpu = match sampler {
        Some(s) => s.stop().await,
        None => json!({"available": false, "why": "nvidia-smi not found or no GPUs assigned"}),
    };
    let after = scrape_all(server).await;
    let report = report.map_err(|e| Failure::new(format!("cell failed: {e:#}")))?;
    let mut artifact = report.artifact;
    artifact["telemetry"] =
        json!({"server_metrics_delta": metric_deltas(server, &before, &after), "gpu": gpu});
    artifact["server_warmup"] = server.warmup.clone();
    artifact["configuration_fingerprint"] = json!(fingerprint);
    artifact["simulated"] = json!(server.simulated);
    artifact["server_startup_ms"] = json!(server.startup_ms);
    let summary = &report.summary;
    if summary.completed == 0 {
        return Err(Failure::new(format!("no request completed ({} failed)", summary.failed))
            .with_detail(artifact["failures"].to_string()));
    }
    let metrics = artifact["metrics"].clone();
    let result = json!({
        "schema": "anvil-serving.cell-result/v1",
        "engine": server.engine,
        "simulated": server.simulated,
        "completed": summary.completed,
        "failed": summary.failed,
        "aggregate_tok_s": summary.throughput_tok_s,
        "ttft_p50_ms": summary.ttft_p50_ms,
        "ttft_p99_ms": summary.ttft_p99_ms,
        "decode_tok_s_mean": summary.decode_tok_s_mean,
        "wall_clock_ms": summary.wall_clock_ms,
        "performance_eligible": artifact["performance_eligible"],
        "canaries_passed": artifact["metrics"]["request_canary_passed"],
        "requests": artifact["requests"],
        "repeats": artifact["repeats"]["across_repeats"],
        "metrics": metrics,
    });
    let mut files = vec![ProducedFile::Bytes {
        name: "benchmark.json".into(),
        bytes: serde_json::to_vec_pretty(&artifact).unwrap_or_default(),
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
    Ok(Produced { result, files, rejected: false, summary: line })
}

/// Each replica's Prometheus counters (None where `/metrics` is not served).
async fn scrape_all(server: &ServerInfo) -> Vec<Result<std::collections::BTreeMap<String, f64>, String>> {
    let mut out = Vec::new();
    for target in &server.targets {
        out.push(anvil_proc::scrape_metrics(&target.base_url).await.map_err(|e| e.to_string()));
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
        Value::String(s) => Value::String(super::servers::unescape(s)),
        Value::Array(items) => Value::Array(items.iter().map(unescape_strings).collect()),
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), unescape_strings(v))).collect())
        }
        other => other.clone(),
    }
}
