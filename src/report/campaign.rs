//! Campaign outputs, written at the end of a run whose recipe has a
//! `decision`: `anvil-serving.benchmark-workload-manifest/v1` and
//! `anvil-serving.benchmark-decision-summary/v1`, every value computed from
//! this run's stored results.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use anvil_store::Store;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use crate::plan::Plan;
use crate::recipe::decls::{CellDecl, DecisionDecl, LoadDecl, ServerDecl};
use crate::recipe::words::Thinking;
use crate::recipe::{Decl, Kind, Spec};
use crate::results::{self, CellResult, CheckResult, DecisionResult, EvalStatus, GateResult, ScreenResult};
use crate::run::RunSummary;

/// Write the campaign's outputs for a finished run into `out/<campaign>/`:
/// the workload manifest and the decision summary.
pub fn write_outputs(summary: &RunSummary, store: &Store, out: &Path) -> std::io::Result<Vec<PathBuf>> {
    let plan = &summary.plan;
    let endings: Vec<(usize, &'static str, String)> =
        summary.steps.iter().enumerate().map(|(i, s)| (i, s.ending.as_str(), s.detail.clone())).collect();
    let outcomes = Outcomes {
        endings: &endings,
        finished_at: summary.finished_at.clone(),
        all_succeeded: summary.succeeded(),
    };
    let dir = out.join(&plan.recipe.campaign.name);
    std::fs::create_dir_all(&dir)?;
    let manifest = dir.join("workload-manifest.json");
    let decision = dir.join("decision-summary.json");
    // Serialising a Value cannot fail: its keys are strings.
    write_if_changed(&manifest, &serde_json::to_vec_pretty(&workload_manifest(plan)).unwrap_or_default())?;
    let summary_json = decision_summary(plan, store, &outcomes);
    write_if_changed(&decision, &serde_json::to_vec_pretty(&summary_json).unwrap_or_default())?;
    Ok(vec![manifest, decision])
}

/// A file rewritten with the bytes it already holds only costs: leave it.
fn write_if_changed(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if std::fs::read(path).is_ok_and(|old| old == bytes) {
        return Ok(());
    }
    std::fs::write(path, bytes)
}

/// How each step ended in this run, by step index (from the runner).
pub struct Outcomes<'a> {
    pub endings: &'a [(usize, &'static str, String)],
    pub finished_at: String,
    pub all_succeeded: bool,
}

pub fn workload_manifest(plan: &Plan) -> Value {
    let recipe = &plan.recipe;
    let cells: Vec<&LoadDecl> = cells(plan).map(|(_, c)| &c.load).collect();
    let distinct = |value: fn(&LoadDecl) -> Option<u64>| -> Vec<u64> {
        cells.iter().filter_map(|c| value(c)).collect::<BTreeSet<_>>().into_iter().collect()
    };
    let headline = headline_cells(plan).into_iter().next().map(|(_, cell)| &cell.load);
    let classes: Vec<Value> = recipe
        .workloads
        .iter()
        .map(|w| json!({"id": w.name, "description": w.description.as_deref().unwrap_or("")}))
        .collect();
    let controls: Vec<String> = decision(plan).map(|(_, d)| d.controls.clone()).unwrap_or_default();
    let mut screen_controls: Vec<String> =
        recipe
            .steps
            .iter()
            .filter_map(|s| match &s.spec {
                Spec::Screen(screen) => Some(s.description.clone().unwrap_or_else(|| {
                    format!("screen {} over {} by {}", s.name, screen.over, screen.metric)
                })),
                _ => None,
            })
            .collect();
    screen_controls.extend(controls);
    let natural_completion_requests: BTreeSet<u64> =
        cells.iter().filter(|c| c.response_words.unwrap_or(0) == 0).filter_map(|c| c.requests).collect();
    json!({
        "schema": "anvil-serving.benchmark-workload-manifest/v1",
        "campaign_id": recipe.campaign.name,
        "selection": {
            "contexts_actual_prompt_token_targets": distinct(|c| c.context_tokens),
            "concurrency": distinct(|c| c.concurrency),
            "natural_completion_screen_requests": natural_completion_requests,
            "headline_requests": headline.and_then(|h| h.requests),
            "headline_response_words": headline.and_then(|h| h.response_words),
            "headline_max_tokens": headline.and_then(|h| h.max_tokens),
            "headline_prompt_cache_mode": headline.map(|h| h.prompt_cache.as_str()),
            "headline_request_canaries": headline.map(|h| h.canaries.unwrap_or(true)),
            "random_prefix_seed": recipe.campaign.seed,
            "thinking": headline.map(|h| thinking_label(h.thinking)),
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
    // The headline cells' results read whole, once; of the others only
    // whether they were simulated (metrics are most of a result's bytes,
    // and the summary shows none of theirs).
    let cell_results: HashMap<&str, CellResult> = headline_cells(plan)
        .into_iter()
        .filter_map(|(c, _)| Some((c.name.as_str(), stored::<CellResult>(plan, store, &c.name)?.ok()?)))
        .collect();
    let cell_of = |name: &str| cell_results.get(name);
    let was_simulated = |name: &str| match cell_of(name) {
        Some(result) => result.simulated,
        None => stored::<Simulated>(plan, store, name).and_then(Result::ok).is_some_and(|r| r.simulated),
    };
    let mut identity = Map::new();
    for (step, server) in servers(plan) {
        for (key, value) in &server.identity {
            identity.insert(format!("{}.{key}", step.name), value.clone());
        }
        if let Some(label) = &server.gpu_label {
            identity.insert(format!("{}.hardware", step.name), json!(label));
        }
    }
    if let Some((_, d)) = decision(plan) {
        for (key, value) in &d.identity {
            identity.insert(key.clone(), value.clone());
        }
    }
    let simulated: Vec<String> = cells(plan)
        .filter(|(c, _)| was_simulated(&c.name))
        .map(|(c, _)| c.name.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();

    let headline_results: Vec<Value> = headline_cells(plan)
        .iter()
        .filter_map(|&(step, cell)| {
            let r = cell_of(&step.name)?;
            let m = |stat: &str, prefix: &str, suffix: &str| r.metric(&format!("{prefix}_{stat}{suffix}")).clone();
            let block = |prefix: &str, suffix: &str| json!({"mean": m("mean", prefix, suffix), "p50": m("p50", prefix, suffix), "p95": m("p95", prefix, suffix), "p99": m("p99", prefix, suffix)});
            let server = recipe.step(&cell.server);
            let replicas = server.and_then(|s| match &s.spec {
                Spec::Server(server) => Some(server.replicas),
                _ => None,
            });
            let replicas = replicas.unwrap_or(1);
            let i = plan.index_of(&step.name)?;
            Some(json!({
                "profile": server.and_then(|s| s.description.as_deref()).unwrap_or(&cell.server),
                "topology": format!("{} replica{}, C{}", replicas, if replicas == 1 { "" } else { "s" }, cell.load.concurrency.unwrap_or(1)),
                "requests": r.requests,
                "canaries_passed": r.canaries_passed,
                "aggregate_tok_s": r.aggregate_tok_s,
                "ttft_ms": block("ttft", "_ms"),
                "effective_prefill_tok_s": block("effective_prefill_tok_s", ""),
                "decode_tok_s": block("decode_tok_s", ""),
                "tpot_mean_itl_ms": block("tpot", "_ms"),
                "e2e_ms": block("e2e", "_ms"),
                "simulated": r.simulated,
                "evidence": plan.nodes[i].fingerprint.to_string(),
            }))
        })
        .collect();

    let mut optimization = Map::new();
    let mut selected = Vec::new();
    let mut reasons = Vec::new();
    for screen in recipe.steps.iter().filter(|s| matches!(s.spec, Spec::Screen(_))) {
        if let Some(Ok(r)) = stored::<ScreenResult>(plan, store, &screen.name) {
            optimization.insert(format!("{}_{}", screen.name, r.metric), results::to_value(&r.values));
            if r.meaningful {
                selected.push(format!("{}: {}", screen.name, r.winner));
            } else {
                selected.push(format!("{}: no meaningful difference", screen.name));
            }
            reasons.push(format!("{}: {}", screen.name, r.selection_reason));
        }
    }
    optimization.insert("selected".into(), json!(selected.join("; ")));
    optimization.insert("selection_reason".into(), json!(reasons.join("; ")));

    let mut gates = Vec::new();
    let mut any_rejected = false;
    for step in recipe.steps.iter().filter(|s| matches!(s.kind, Kind::Gate | Kind::Check)) {
        let verdict = match step.kind {
            Kind::Check => {
                stored::<CheckResult>(plan, store, &step.name).map(|r| r.map(|r| (r.status, r.detail)))
            }
            _ => stored::<GateResult>(plan, store, &step.name).map(|r| r.map(|r| (r.status, r.detail))),
        };
        let (status, detail) = match verdict {
            Some(Ok((status, detail))) => (status.as_str(), detail),
            Some(Err(err)) => ("missing", format!("stored result unreadable: {err}")),
            None => (
                "missing",
                ending_detail(plan, outcomes, &step.name).unwrap_or_else(|| "no stored result".into()),
            ),
        };
        any_rejected |= status == "rejected";
        gates.push(json!({"name": format!("{} {}", step.kind, step.name), "status": status, "detail": detail, "description": step.description}));
    }
    let restorations: Vec<&(usize, &str, String)> =
        outcomes.endings.iter().filter(|(i, _, _)| plan.nodes[*i].kind == Kind::Finally).collect();
    if !restorations.is_empty() {
        let all_ran = restorations.iter().all(|(_, e, _)| *e == "ran");
        let status = if all_ran {
            "passed"
        } else if restorations.iter().any(|(_, e, _)| *e == "failed") {
            "rejected"
        } else {
            "missing"
        };
        any_rejected |= status == "rejected";
        gates.push(json!({
            "name": "restoration",
            "status": status,
            "detail": restorations.iter().map(|(i, e, d)| format!("{} {e}: {d}", plan.nodes[*i].name)).collect::<Vec<_>>().join("; "),
        }));
    }

    let mut limitations: Vec<String> = decision(plan).map(|(_, d)| d.limitations.clone()).unwrap_or_default();
    if !simulated.is_empty() {
        limitations.push(format!("Simulated engine: {} measured anvil's simulated engine, not real hardware; numbers come from its performance model and prove the campaign's logic, not a deployment.", simulated.join(", ")));
    }
    for (cell, _) in headline_cells(plan) {
        if let Some(r) = cell_of(&cell.name) {
            let n = r.metric("ttft_samples").as_u64().unwrap_or(0);
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

    let verdict: Option<DecisionResult> =
        decision(plan).and_then(|(d, _)| stored::<DecisionResult>(plan, store, &d.name)?.ok());
    // A statement as the rules made it (any JSON value), null when none did.
    let statement =
        |key: &str| verdict.as_ref().and_then(|v| v.statements.get(key)).cloned().unwrap_or(Value::Null);
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
    if any_rejected {
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
            "headline_workload": headline_cells(plan).first().map(|(_, h)| describe_workload(&h.load)).unwrap_or_default(),
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
            "decision_labels": verdict.as_ref().map(|v| &v.decision_labels),
            "promotion_authorized": verdict.as_ref().map(|v| v.promotion_authorized),
            "rules": verdict.as_ref().map(|v| &v.rules),
            "winner": statement("winner"),
            "single_card_selection": statement("single_card_selection"),
            "alternate_runtime_result": statement("alternate_runtime_result"),
            "promotion_boundary": statement("promotion_boundary"),
            "reason": verdict.as_ref().map(decision_reason),
        },
    })
}

/// Of a cell's result, only whether the simulated engine produced it.
#[derive(serde::Deserialize)]
struct Simulated {
    simulated: bool,
}

/// A step's stored result as its kind's type: None when nothing is stored,
/// an error when what is stored does not read as that kind.
fn stored<T: DeserializeOwned>(
    plan: &Plan,
    store: &Store,
    name: &str,
) -> Option<Result<T, serde_json::Error>> {
    let i = plan.index_of(name)?;
    let bytes = store.read_result_bytes(&plan.nodes[i].fingerprint).ok().flatten()?;
    Some(serde_json::from_slice(&bytes))
}

/// The decision's `reason` statement, or else the labels and details of the
/// labelled rules that hold.
fn decision_reason(verdict: &DecisionResult) -> String {
    if let Some(reason) = verdict.statement("reason") {
        return reason.to_string();
    }
    verdict
        .rules
        .iter()
        .filter(|r| r.status == EvalStatus::Passed && !r.label.is_empty())
        .map(|r| format!("{}: {}", r.label, r.detail))
        .collect::<Vec<_>>()
        .join("; ")
}

fn decision(plan: &Plan) -> Option<(&Decl, &DecisionDecl)> {
    plan.recipe.steps.iter().find_map(|s| match &s.spec {
        Spec::Decision(d) => Some((s, d)),
        _ => None,
    })
}

fn cells(plan: &Plan) -> impl Iterator<Item = (&Decl, &CellDecl)> {
    plan.recipe.steps.iter().filter_map(|s| match &s.spec {
        Spec::Cell(c) => Some((s, c)),
        _ => None,
    })
}

fn servers(plan: &Plan) -> impl Iterator<Item = (&Decl, &ServerDecl)> {
    plan.recipe.steps.iter().filter_map(|s| match &s.spec {
        Spec::Server(server) => Some((s, server)),
        _ => None,
    })
}

fn headline_cells(plan: &Plan) -> Vec<(&Decl, &CellDecl)> {
    let Some((_, d)) = decision(plan) else { return Vec::new() };
    d.headline
        .iter()
        .filter_map(|name| plan.recipe.step(name))
        .filter_map(|s| match &s.spec {
            Spec::Cell(c) => Some((s, c)),
            _ => None,
        })
        .collect()
}

fn thinking_label(thinking: Thinking) -> &'static str {
    match thinking {
        Thinking::Off => "disabled",
        Thinking::On => "enabled",
        Thinking::Default => "server default",
    }
}

fn ending_detail(plan: &Plan, outcomes: &Outcomes<'_>, name: &str) -> Option<String> {
    let i = plan.index_of(name)?;
    outcomes.endings.iter().find(|(j, _, _)| *j == i).map(|(_, e, d)| format!("{e}: {d}"))
}

fn describe_workload(load: &LoadDecl) -> String {
    format!(
        "{} requests, {} context target, C{}, {} prompts, canaries {}, {} requested words, {}-token ceiling, thinking {}",
        load.requests.unwrap_or(0),
        load.context_tokens.unwrap_or(0),
        load.concurrency.unwrap_or(1),
        load.prompt_cache.as_str(),
        if load.canaries.unwrap_or(true) { "on" } else { "off" },
        load.response_words.unwrap_or(0),
        load.max_tokens.unwrap_or(0),
        load.thinking.as_str(),
    )
}
