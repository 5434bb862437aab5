//! Campaign outputs, written at the end of a run whose recipe has a
//! `decision`: `anvil-serving.benchmark-workload-manifest/v1` and
//! `anvil-serving.benchmark-decision-summary/v1`, every value computed from
//! this run's stored results.

use std::collections::BTreeSet;

use anvil_store::Store;
use serde_json::{Map, Value, json};

use crate::plan::Plan;
use crate::recipe::{Decl, Kind};

/// How each step ended in this run, by step index (from the runner).
pub struct Outcomes<'a> {
    pub endings: &'a [(usize, &'static str, String)],
    pub finished_at: String,
    pub all_succeeded: bool,
}

pub fn workload_manifest(plan: &Plan) -> Value {
    let recipe = &plan.recipe;
    let cells: Vec<&Decl> = recipe.steps.iter().filter(|s| s.kind == Kind::Cell).collect();
    let distinct = |key: &str| -> Vec<u64> {
        cells.iter().filter_map(|c| c.u64(key)).collect::<BTreeSet<_>>().into_iter().collect()
    };
    let headline = headline_cells(plan).into_iter().next();
    let classes: Vec<Value> = recipe
        .workloads
        .iter()
        .map(|w| json!({"id": w.name, "description": w.str("description").unwrap_or("")}))
        .collect();
    let controls: Vec<String> = decision(plan).map(|d| d.strings("control")).unwrap_or_default();
    let mut screen_controls: Vec<String> = recipe
        .steps
        .iter()
        .filter(|s| s.kind == Kind::Screen)
        .map(|s| {
            s.str("description").map(str::to_string).unwrap_or_else(|| {
                format!(
                    "screen {} over {} by {}",
                    s.name,
                    s.str("over").unwrap_or(""),
                    s.str("metric").unwrap_or("")
                )
            })
        })
        .collect();
    screen_controls.extend(controls);
    json!({
        "schema": "anvil-serving.benchmark-workload-manifest/v1",
        "campaign_id": recipe.campaign.name,
        "selection": {
            "contexts_actual_prompt_token_targets": distinct("context-tokens"),
            "concurrency": distinct("concurrency"),
            "natural_completion_screen_requests": cells.iter().filter(|c| c.u64("response-words").unwrap_or(0) == 0).filter_map(|c| c.u64("requests")).collect::<BTreeSet<_>>(),
            "headline_requests": headline.and_then(|h| h.u64("requests")),
            "headline_response_words": headline.and_then(|h| h.u64("response-words")),
            "headline_max_tokens": headline.and_then(|h| h.u64("max-tokens")),
            "headline_prompt_cache_mode": headline.map(|h| h.str("prompt-cache").unwrap_or("unique")),
            "headline_request_canaries": headline.map(|h| h.bool("canaries").unwrap_or(true)),
            "random_prefix_seed": recipe.campaign.seed,
            "thinking": headline.map(|h| match h.str("thinking") { Some("off") => "disabled", Some("on") => "enabled", _ => "server default" }),
        },
        "workload_classes": classes,
        "controls": screen_controls,
        "metrics": [
            "time_to_first_output_ms", "effective_prefill_tokens_per_second", "per_request_decode_tokens_per_second",
            "aggregate_output_tokens_per_second", "time_per_output_token_ms", "mean_inter_token_latency_ms", "end_to_end_ms",
            "prompt_and_completion_usage_tokens", "request_canary_correctness", "chunk_gap_distribution", "client_send_lag",
        ],
        "timing_definitions": {
            "ttft": "request start through first non-empty streamed content delta",
            "time_to_first_output": "request start through first non-empty reasoning or content delta",
            "effective_prefill": "API prompt tokens divided by time to first output; includes queueing, scheduling, prefill, and first-token work",
            "decode": "API completion tokens after the first token divided by client-observed generation time",
            "tpot": "client-observed generation time divided by API completion tokens after the first token",
            "mean_inter_token_latency": "same per-request aggregate as TPOT (kept for compatibility); anvil also records raw chunk-arrival gaps",
            "end_to_end": "request start through stream completion",
            "aggregate_throughput": "sum of API completion tokens divided by the wall-clock span of the concurrent run",
        },
        "statistics": {
            "distribution": ["mean", "standard deviation", "95 percent confidence interval for mean", "min", "p25", "p50", "p75", "p90", "p95", "p99", "max"],
            "percentile_method": "nearest rank",
        },
        "measurement_protocol": crate::plan::MEASUREMENT_PROTOCOL,
    })
}

pub fn decision_summary(plan: &Plan, store: &Store, outcomes: &Outcomes<'_>) -> Value {
    let recipe = &plan.recipe;
    let result_of = |name: &str| -> Option<Value> {
        let i = plan.index_of(name)?;
        store.read(&plan.nodes[i].fingerprint).ok().flatten().map(|e| e.result)
    };
    let mut identity = Map::new();
    for server in recipe.steps.iter().filter(|s| s.kind == Kind::Server) {
        for (key, value) in server.props("identity") {
            identity.insert(format!("{}.{key}", server.name), value);
        }
        if let Some(label) = server.str("gpu-label") {
            identity.insert(format!("{}.hardware", server.name), json!(label));
        }
    }
    if let Some(d) = decision(plan) {
        for (key, value) in d.props("identity") {
            identity.insert(key, value);
        }
    }
    let simulated: Vec<String> = headline_cells(plan)
        .iter()
        .chain(recipe.steps.iter().filter(|s| s.kind == Kind::Cell).collect::<Vec<_>>().iter())
        .filter_map(|c| result_of(&c.name).filter(|r| r["simulated"] == json!(true)).map(|_| c.name.clone()))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();

    let headline_results: Vec<Value> = headline_cells(plan)
        .iter()
        .filter_map(|cell| {
            let r = result_of(&cell.name)?;
            let m = &r["metrics"];
            let block = |prefix: &str, suffix: &str| json!({"mean": m[format!("{prefix}_mean{suffix}")], "p50": m[format!("{prefix}_p50{suffix}")], "p95": m[format!("{prefix}_p95{suffix}")], "p99": m[format!("{prefix}_p99{suffix}")]});
            let server = cell.str("server").and_then(|s| recipe.step(s));
            let replicas = server.and_then(|s| s.u64("replicas")).unwrap_or(1);
            let i = plan.index_of(&cell.name)?;
            Some(json!({
                "profile": server.and_then(|s| s.str("description")).unwrap_or(cell.str("server").unwrap_or("")),
                "topology": format!("{} replica{}, C{}", replicas, if replicas == 1 { "" } else { "s" }, cell.u64("concurrency").unwrap_or(1)),
                "requests": r["requests"],
                "canaries_passed": r["canaries_passed"],
                "aggregate_tok_s": r["aggregate_tok_s"],
                "ttft_ms": block("ttft", "_ms"),
                "effective_prefill_tok_s": block("effective_prefill_tok_s", ""),
                "decode_tok_s": block("decode_tok_s", ""),
                "tpot_mean_itl_ms": block("tpot", "_ms"),
                "e2e_ms": block("e2e", "_ms"),
                "simulated": r["simulated"],
                "evidence": plan.nodes[i].fingerprint.to_string(),
            }))
        })
        .collect();

    let mut optimization = Map::new();
    let mut selected = Vec::new();
    let mut reasons = Vec::new();
    for screen in recipe.steps.iter().filter(|s| s.kind == Kind::Screen) {
        if let Some(r) = result_of(&screen.name) {
            optimization.insert(
                format!("{}_{}", screen.name, r["metric"].as_str().unwrap_or("metric")),
                r["values"].clone(),
            );
            if r["meaningful"] == json!(true) {
                selected.push(format!("{}: {}", screen.name, r["winner"].as_str().unwrap_or("")));
            } else {
                selected.push(format!("{}: no meaningful difference", screen.name));
            }
            reasons.push(format!("{}: {}", screen.name, r["selection_reason"].as_str().unwrap_or("")));
        }
    }
    optimization.insert("selected".into(), json!(selected.join("; ")));
    optimization.insert("selection_reason".into(), json!(reasons.join("; ")));

    let mut gates = Vec::new();
    for step in recipe.steps.iter().filter(|s| matches!(s.kind, Kind::Gate | Kind::Check)) {
        let (status, detail) = match result_of(&step.name) {
            Some(r) => (
                r["status"]
                    .as_str()
                    .unwrap_or(if r["passed"] == json!(true) { "passed" } else { "rejected" })
                    .to_string(),
                r["detail"].as_str().unwrap_or("").to_string(),
            ),
            None => (
                "missing".to_string(),
                ending_detail(plan, outcomes, &step.name).unwrap_or_else(|| "no stored result".into()),
            ),
        };
        gates.push(json!({"name": format!("{} {}", step.kind, step.name), "status": status, "detail": detail, "description": step.str("description")}));
    }
    let restorations: Vec<&(usize, &str, String)> =
        outcomes.endings.iter().filter(|(i, _, _)| plan.nodes[*i].kind == Kind::Finally).collect();
    if !restorations.is_empty() {
        let all_ran = restorations.iter().all(|(_, e, _)| *e == "ran");
        gates.push(json!({
            "name": "restoration",
            "status": if all_ran { "passed" } else if restorations.iter().any(|(_, e, _)| *e == "failed") { "rejected" } else { "missing" },
            "detail": restorations.iter().map(|(i, e, d)| format!("{} {e}: {d}", plan.nodes[*i].name)).collect::<Vec<_>>().join("; "),
        }));
    }

    let mut limitations: Vec<String> = decision(plan).map(|d| d.strings("limitation")).unwrap_or_default();
    if !simulated.is_empty() {
        limitations.push(format!("Simulated engine: {} measured anvil's simulated engine, not real hardware; numbers come from its performance model and prove the campaign's logic, not a deployment.", simulated.join(", ")));
    }
    for cell in headline_cells(plan) {
        if let Some(r) = result_of(&cell.name) {
            let n = r["metrics"]["ttft_samples"].as_u64().unwrap_or(0);
            if n < 100 {
                limitations.push(format!(
                    "{}: p99 over {n} samples is descriptive only (nearest rank below 100 samples).",
                    cell.name
                ));
            }
        }
    }
    let has_gpu_telemetry = which::which("nvidia-smi").is_ok();
    if !has_gpu_telemetry {
        limitations.push("No GPU telemetry (power, clocks, memory, temperature) was sampled: nvidia-smi was not available.".into());
    }

    let verdict = decision(plan).and_then(|d| result_of(&d.name)).unwrap_or(Value::Null);
    let mut evidence_labels = Vec::new();
    if recipe.steps.iter().any(|s| s.kind == Kind::Check) {
        evidence_labels.push("functional");
    }
    if recipe.steps.iter().any(|s| s.kind == Kind::Cell) {
        evidence_labels.push("capacity");
    }
    if recipe.steps.iter().any(|s| s.kind == Kind::Screen) {
        evidence_labels.push("matched-performance");
    }
    if gates.iter().any(|g| g["status"] == "rejected") {
        evidence_labels.push("correctness-rejection");
    }
    if !restorations.is_empty() && restorations.iter().all(|(_, e, _)| *e == "ran") {
        evidence_labels.push("exact-restoration");
    }
    json!({
        "schema": "anvil-serving.benchmark-decision-summary/v1",
        "campaign_id": recipe.campaign.name,
        "complete": outcomes.all_succeeded,
        "evidence_cutoff": outcomes.finished_at,
        "identity": identity,
        "measurement": {
            "path": "direct online streaming",
            "warm_cold_state": "service warm (warmup requests unmeasured); unique prompt variants per request",
            "headline_workload": headline_cells(plan).first().map(|h| describe_workload(h)).unwrap_or_default(),
            "statistics": ["mean", "p50", "p95", "p99", "aggregate output throughput"],
            "metrics": ["ttft", "effective_prefill", "decode", "tpot", "mean_itl", "e2e", "aggregate_throughput"],
            "percentile_method": "nearest rank",
            "tpot_itl_semantics": "tpot and mean_itl are per-request aggregates (generation time over completion tokens after the first); anvil additionally stores the raw chunk-arrival gap distribution in every cell artifact",
            "simulated": !simulated.is_empty(),
        },
        "headline_results": headline_results,
        "optimization_results": optimization,
        "gates": gates,
        "limitations": limitations,
        "decision": {
            "evidence_labels": evidence_labels,
            "decision_labels": verdict["decision_labels"],
            "promotion_authorized": verdict["promotion_authorized"],
            "rules": verdict["rules"],
            "winner": verdict["statements"]["winner"],
            "single_card_selection": verdict["statements"]["single_card_selection"],
            "alternate_runtime_result": verdict["statements"]["alternate_runtime_result"],
            "promotion_boundary": verdict["statements"]["promotion_boundary"],
            "reason": verdict["statements"]["reason"].as_str().map(str::to_string).or_else(|| verdict["rules"].as_array().map(|rules| rules.iter().filter(|r| r["status"] == "passed" && r["label"] != "").map(|r| format!("{}: {}", r["label"].as_str().unwrap_or(""), r["detail"].as_str().unwrap_or(""))).collect::<Vec<_>>().join("; "))),
        },
    })
}

fn decision(plan: &Plan) -> Option<&Decl> {
    plan.recipe.steps.iter().find(|s| s.kind == Kind::Decision)
}

fn headline_cells(plan: &Plan) -> Vec<&Decl> {
    decision(plan)
        .map(|d| d.strings("headline").iter().filter_map(|n| plan.recipe.step(n)).collect())
        .unwrap_or_default()
}

fn ending_detail(plan: &Plan, outcomes: &Outcomes<'_>, name: &str) -> Option<String> {
    let i = plan.index_of(name)?;
    outcomes.endings.iter().find(|(j, _, _)| *j == i).map(|(_, e, d)| format!("{e}: {d}"))
}

fn describe_workload(cell: &Decl) -> String {
    format!(
        "{} requests, {} context target, C{}, {} prompts, canaries {}, {} requested words, {}-token ceiling, thinking {}",
        cell.u64("requests").unwrap_or(0),
        cell.u64("context-tokens").unwrap_or(0),
        cell.u64("concurrency").unwrap_or(1),
        cell.str("prompt-cache").unwrap_or("unique"),
        if cell.bool("canaries").unwrap_or(true) { "on" } else { "off" },
        cell.u64("response-words").unwrap_or(0),
        cell.u64("max-tokens").unwrap_or(0),
        cell.str("thinking").unwrap_or("default"),
    )
}
