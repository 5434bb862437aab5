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
use crate::plan::campaign_view::{CampaignView, StepKind, StepView, StepWhat};
use anvil_loadgen::{LoadAxis, PromptCacheMode, Traffic};

use super::decision_summary::{self, Block, Decision, DecisionSummary, GateRow, HeadlineResult, Measurement};
use super::workload_manifest::{self, Selection, Statistics, WorkloadClass, WorkloadManifest};
use crate::results::{
    self, CellLoad, CellResult, CheckResult, DecisionResult, EvalStatus, GateResult, ScreenResult,
};
use crate::run::RunSummary;
use anvil_loadgen::ThinkingMode;

/// Store the campaign's outputs for a finished run with that run (the
/// workload manifest and the decision summary; see [`super::stored_outputs`]),
/// then copy them into `out/<campaign>/` for people.
pub fn write_outputs(summary: &RunSummary, store: &Store, out: &Path) -> std::io::Result<Vec<PathBuf>> {
    let view = summary.plan.campaign_view();
    let endings: Vec<(usize, &'static str, String)> = summary
        .steps
        .iter()
        .enumerate()
        .map(|(i, s)| (i, s.outcome.ending.as_str(), s.outcome.detail.clone()))
        .collect();
    let outcomes = Outcomes {
        endings: &endings,
        finished_at: summary.finished_at.clone(),
        all_succeeded: summary.succeeded(),
    };
    let dir = out.join(&view.name);
    std::fs::create_dir_all(&dir)?;
    let manifest = dir.join("workload-manifest.json");
    let decision = dir.join("decision-summary.json");
    // Each cell's result is read once for both documents.
    let facts = cell_facts(&view, store);
    // Serialising these types cannot fail: their maps have string keys.
    let manifest_bytes = serde_json::to_vec_pretty(&workload_manifest(&view, &facts)).unwrap_or_default();
    let summary_bytes = summary_with(&view, store, &outcomes, &facts).to_vec_pretty();
    let files = [("workload-manifest.json", manifest_bytes), ("decision-summary.json", summary_bytes)];
    super::stored_outputs::store_with_run(store, &summary.run_id, &files)
        .map_err(|e| std::io::Error::other(format!("storing them with run {}: {e}", summary.run_id)))?;
    write_if_changed(&manifest, &files[0].1)?;
    write_if_changed(&decision, &files[1].1)?;
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

/// What both documents read of every cell's stored result: whether the
/// simulated engine produced it, and its load as the load generator ran it
/// (its metrics, most of its bytes, are skipped).
#[derive(serde::Deserialize)]
struct CellFacts {
    simulated: bool,
    #[serde(default)]
    load: Option<CellLoad>,
}

/// Every cell of the plan with a stored result, and those facts of it.
fn cell_facts<'a>(view: &'a CampaignView, store: &Store) -> Vec<(&'a StepView, CellFacts)> {
    view.cells().filter_map(|(c, _)| Some((c, stored::<CellFacts>(view, store, &c.name)?.ok()?))).collect()
}

fn workload_manifest(view: &CampaignView, facts: &[(&StepView, CellFacts)]) -> WorkloadManifest {
    let classes = view
        .workloads
        .iter()
        .map(|w| WorkloadClass { id: w.name.clone(), description: w.description.clone().unwrap_or_default() })
        .collect();
    let controls: Vec<String> = view.decision().map(|(_, d)| d.controls.clone()).unwrap_or_default();
    let mut screen_controls: Vec<String> = view
        .steps
        .iter()
        .filter_map(|s| match &s.what {
            StepWhat::Screen { over, metric } => Some(
                s.description.clone().unwrap_or_else(|| format!("screen {} over {over} by {metric}", s.name)),
            ),
            _ => None,
        })
        .collect();
    screen_controls.extend(controls);
    let selection = selection(view, facts);
    let words = |items: &[&str]| items.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let definitions: Map<String, Value> = [
        ("ttft", "request start through first non-empty streamed content delta"),
        ("time_to_first_output", "request start through first non-empty reasoning or content delta"),
        ("effective_prefill", "API prompt tokens divided by time to first output; includes queueing, scheduling, prefill, and first-token work"),
        ("decode", "API completion tokens after the first token divided by client-observed generation time"),
        ("tpot", "client-observed generation time divided by API completion tokens after the first token"),
        ("mean_inter_token_latency", "same per-request aggregate as TPOT (kept for compatibility); anvil also records raw chunk-arrival gaps"),
        ("end_to_end", "request start through stream completion"),
        ("aggregate_throughput", "sum of API completion tokens divided by the wall-clock span of the concurrent run"),
        ("offered_load", "open loop and traces: measured request rate (sends after the first over the span of the sends); closed loop: concurrency"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), json!(v)))
    .collect();
    WorkloadManifest {
        schema: workload_manifest::SCHEMA.into(),
        campaign_id: view.name.clone(),
        selection,
        workload_classes: classes,
        controls: screen_controls,
        metrics: words(&[
            "time_to_first_output_ms",
            "effective_prefill_tokens_per_second",
            "per_request_decode_tokens_per_second",
            "aggregate_output_tokens_per_second",
            "time_per_output_token_ms",
            "mean_inter_token_latency_ms",
            "end_to_end_ms",
            "prompt_and_completion_usage_tokens",
            "request_canary_correctness",
            "chunk_gap_distribution",
            "client_send_lag",
        ]),
        timing_definitions: definitions,
        statistics: Statistics {
            distribution: words(&[
                "mean",
                "standard deviation",
                "95 percent confidence interval for mean",
                "min",
                "p25",
                "p50",
                "p75",
                "p90",
                "p95",
                "p99",
                "max",
            ]),
            percentile_method: "nearest rank".into(),
        },
        measurement_protocol: crate::plan::MEASUREMENT_PROTOCOL.into(),
    }
}

/// What the campaign's cells covered, as their results recorded it: the
/// contexts, concurrencies, rates and traces measured, and the headline
/// cell's workload.
fn selection(view: &CampaignView, facts: &[(&StepView, CellFacts)]) -> Selection {
    let loads: Vec<&CellLoad> = facts.iter().filter_map(|(_, f)| f.load.as_ref()).collect();
    let distinct = |value: &dyn Fn(&CellLoad) -> Option<u64>| -> Vec<u64> {
        loads.iter().filter_map(|l| value(l)).collect::<BTreeSet<_>>().into_iter().collect()
    };
    let synthetic = |l: &CellLoad| matches!(l.resolved.traffic, Traffic::Synthetic);
    let closed = |l: &CellLoad| l.offered.axis == LoadAxis::Concurrency;
    let mut rates: Vec<f64> = loads
        .iter()
        .filter(|l| !closed(l))
        .filter_map(|l| l.offered.value.map(|v| (v * 10.0).round() / 10.0))
        .collect();
    rates.sort_by(f64::total_cmp);
    rates.dedup();
    let traces: BTreeSet<String> = loads
        .iter()
        .filter_map(|l| match &l.resolved.traffic {
            Traffic::Trace(t) => t.path.file_name().map(|n| n.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect();
    let headline_name = view.headline_cells().into_iter().next().map(|(d, _)| d.name.as_str());
    let headline = facts
        .iter()
        .find(|(d, _)| Some(d.name.as_str()) == headline_name)
        .and_then(|(_, f)| f.load.as_ref())
        .map(|l| &l.resolved);
    let natural = |l: &CellLoad| l.resolved.response_words == 0 && l.resolved.stages.is_empty();
    Selection {
        contexts_actual_prompt_token_targets: distinct(&|l| {
            synthetic(l).then_some(l.resolved.context_tokens)
        }),
        concurrency: distinct(&|l| closed(l).then_some(u64::from(l.resolved.concurrency))),
        request_rates: rates,
        traces: traces.into_iter().collect(),
        natural_completion_screen_requests: distinct(&|l| {
            natural(l).then_some(u64::from(l.resolved.requests) * u64::from(l.resolved.repeat.max(1)))
        }),
        headline_requests: headline
            .filter(|h| h.stages.is_empty())
            .map(|h| u64::from(h.requests) * u64::from(h.repeat.max(1))),
        headline_response_words: headline.map(|h| u64::from(h.response_words)),
        headline_max_tokens: headline.map(|h| u64::from(h.max_tokens)),
        headline_prompt_cache_mode: headline.map(|h| match h.prompt_cache_mode {
            PromptCacheMode::Unique => "unique".to_string(),
            PromptCacheMode::SharedPrefix { .. } => "shared-prefix".to_string(),
        }),
        headline_request_canaries: headline.map(|h| h.canaries),
        random_prefix_seed: view.seed,
        thinking: headline.map(|h| thinking_label(h.thinking).to_string()),
        cells_without_recorded_load: facts
            .iter()
            .filter(|(_, f)| f.load.is_none())
            .map(|(d, _)| d.name.clone())
            .collect(),
    }
}

/// The decision summary of `plan`'s run from its stored results (what
/// `anvil verify` rebuilds).
pub fn decision_summary(plan: &Plan, store: &Store, outcomes: &Outcomes<'_>) -> DecisionSummary {
    let view = plan.campaign_view();
    summary_with(&view, store, outcomes, &cell_facts(&view, store))
}

/// The headline cells' stored results, by cell name.
type HeadlineCells<'a> = HashMap<&'a str, CellResult>;

fn summary_with(
    view: &CampaignView,
    store: &Store,
    outcomes: &Outcomes<'_>,
    facts: &[(&StepView, CellFacts)],
) -> DecisionSummary {
    // The headline cells' results read whole (the summary shows their
    // metrics); of the others, the facts read once.
    let cells: HeadlineCells<'_> = view
        .headline_cells()
        .into_iter()
        .filter_map(|(c, _)| Some((c.name.as_str(), stored::<CellResult>(view, store, &c.name)?.ok()?)))
        .collect();
    let simulated: Vec<String> = facts
        .iter()
        .filter(|(_, f)| f.simulated)
        .map(|(c, _)| c.name.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let gates = gates(view, store, outcomes);
    let verdict: Option<DecisionResult> =
        view.decision().and_then(|(d, _)| stored::<DecisionResult>(view, store, &d.name)?.ok());
    let evidence_labels = evidence_labels(view, &gates);
    DecisionSummary {
        schema: decision_summary::SCHEMA.into(),
        campaign_id: view.name.clone(),
        complete: outcomes.all_succeeded,
        evidence_cutoff: outcomes.finished_at.clone(),
        identity: identity(view),
        measurement: measurement(view, &cells, !simulated.is_empty()),
        headline_results: headline_results(view, &cells),
        optimization_results: optimization_results(view, store),
        gates: gates.rows,
        limitations: limitations(view, &cells, &simulated),
        decision: decision(verdict.as_ref(), &evidence_labels),
        quality: super::quality_summary::quality_summary(view, store),
    }
}

/// The servers' identities (`<step>.<key>`, and `<step>.hardware`), then
/// the decision's own.
fn identity(view: &CampaignView) -> Map<String, Value> {
    let mut identity = Map::new();
    for (step, server_identity, gpu_label) in view.servers() {
        for (key, value) in server_identity {
            identity.insert(format!("{}.{key}", step.name), value.clone());
        }
        if let Some(label) = gpu_label {
            identity.insert(format!("{}.hardware", step.name), json!(label));
        }
    }
    if let Some((_, d)) = view.decision() {
        for (key, value) in &d.identity {
            identity.insert(key.clone(), value.clone());
        }
    }
    identity
}

/// How the campaign measured: fixed words, and the first headline cell's
/// workload as the load generator ran it.
fn measurement(view: &CampaignView, cells: &HeadlineCells<'_>, simulated: bool) -> Measurement {
    let words = |items: &[&str]| items.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let headline_workload = view
        .headline_cells()
        .first()
        .and_then(|(h, _)| cells.get(h.name.as_str()))
        .map(|r| {
            r.load.as_ref().map_or_else(
                || "not recorded (a result stored before anvil recorded its load)".to_string(),
                CellLoad::workload_words,
            )
        })
        .unwrap_or_default();
    Measurement {
        path: "direct online streaming".into(),
        warm_cold_state: "service warm (warmup requests unmeasured); unique prompt variants per request".into(),
        headline_workload,
        statistics: words(&["mean", "p50", "p95", "p99", "aggregate output throughput"]),
        metrics: words(&["ttft", "effective_prefill", "decode", "tpot", "mean_itl", "e2e", "aggregate_throughput"]),
        percentile_method: "nearest rank".into(),
        tpot_itl_semantics: "tpot and mean_itl are per-request aggregates (generation time over completion tokens after the first); anvil additionally stores the raw chunk-arrival gap distribution in every cell artifact".into(),
        simulated,
    }
}

/// Each headline cell with a stored result: its server's profile, its
/// topology, and its metrics' blocks.
fn headline_results(view: &CampaignView, cells: &HeadlineCells<'_>) -> Vec<HeadlineResult> {
    view.headline_cells()
        .iter()
        .filter_map(|&(step, server_name)| {
            let r = cells.get(step.name.as_str())?;
            let m = |stat: &str, prefix: &str, suffix: &str| {
                r.metric(&format!("{prefix}_{stat}{suffix}")).clone()
            };
            let block = |prefix: &str, suffix: &str| Block {
                mean: m("mean", prefix, suffix),
                p50: m("p50", prefix, suffix),
                p95: m("p95", prefix, suffix),
                p99: m("p99", prefix, suffix),
            };
            let server = view.step(server_name).map(|(_, s)| s);
            Some(HeadlineResult {
                profile: server
                    .and_then(|s| s.description.clone())
                    .unwrap_or_else(|| server_name.to_string()),
                // What the load generator ran, from the stored result.
                topology: r.load.as_ref().map_or_else(
                    || "not recorded (a result stored before anvil recorded its load)".to_string(),
                    CellLoad::topology,
                ),
                requests: r.requests,
                canaries_passed: r.canaries_passed,
                aggregate_tok_s: r.aggregate_tok_s,
                ttft_ms: block("ttft", "_ms"),
                effective_prefill_tok_s: block("effective_prefill_tok_s", ""),
                decode_tok_s: block("decode_tok_s", ""),
                tpot_mean_itl_ms: block("tpot", "_ms"),
                e2e_ms: block("e2e", "_ms"),
                simulated: r.simulated,
                evidence: step.fingerprint.to_string(),
            })
        })
        .collect()
}

/// Each screen's values by its metric, then what the screens selected and why.
fn optimization_results(view: &CampaignView, store: &Store) -> Map<String, Value> {
    let mut optimization = Map::new();
    let mut selected = Vec::new();
    let mut reasons = Vec::new();
    for screen in view.steps.iter().filter(|s| matches!(s.what, StepWhat::Screen { .. })) {
        if let Some(Ok(r)) = stored::<ScreenResult>(view, store, &screen.name) {
            optimization.insert(format!("{}_{}", screen.name, r.metric), results::to_value(&r.values));
            if let Some(winner) = r.winner.as_ref().filter(|_| r.meaningful) {
                selected.push(format!("{}: {winner}", screen.name));
            } else if r.winner.is_none() {
                selected.push(format!("{}: undecided at 95% confidence", screen.name));
            } else {
                selected.push(format!("{}: no meaningful difference", screen.name));
            }
            reasons.push(format!("{}: {}", screen.name, r.selection_reason));
        }
    }
    optimization.insert("selected".into(), json!(selected.join("; ")));
    optimization.insert("selection_reason".into(), json!(reasons.join("; ")));
    optimization
}

/// The summary's gate rows, and what the evidence labels read of them.
struct Gates {
    rows: Vec<GateRow>,
    /// A gate, a check or the restoration rejected.
    any_rejected: bool,
    /// The run had `finally` steps and every one ran.
    restored: bool,
}

/// A row per gate and check (its stored verdict, else how its step
/// ended), then one for the `finally` steps' restoration, if any.
fn gates(view: &CampaignView, store: &Store, outcomes: &Outcomes<'_>) -> Gates {
    let mut rows = Vec::new();
    let mut any_rejected = false;
    for step in view.steps.iter().filter(|s| matches!(s.kind, StepKind::Gate | StepKind::Check)) {
        let verdict = match step.kind {
            StepKind::Check => {
                stored::<CheckResult>(view, store, &step.name).map(|r| r.map(|r| (r.status, r.detail)))
            }
            _ => stored::<GateResult>(view, store, &step.name).map(|r| r.map(|r| (r.status, r.detail))),
        };
        let (status, detail) = match verdict {
            Some(Ok((status, detail))) => (status.as_str(), detail),
            Some(Err(err)) => ("missing", format!("stored result unreadable: {err}")),
            None => (
                "missing",
                ending_detail(view, outcomes, &step.name).unwrap_or_else(|| "no stored result".into()),
            ),
        };
        any_rejected |= status == "rejected";
        rows.push(GateRow {
            name: format!("{} {}", step.kind, step.name),
            status: status.to_string(),
            detail,
            description: step.description.clone(),
        });
    }
    let restorations: Vec<&(usize, &str, String)> =
        outcomes.endings.iter().filter(|(i, _, _)| view.steps[*i].kind == StepKind::Finally).collect();
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
        rows.push(GateRow {
            name: "restoration".into(),
            status: status.to_string(),
            detail: restorations
                .iter()
                .map(|(i, e, d)| format!("{} {e}: {d}", view.steps[*i].name))
                .collect::<Vec<_>>()
                .join("; "),
            description: None,
        });
    }
    let restored = !restorations.is_empty() && restorations.iter().all(|(_, e, _)| *e == "ran");
    Gates { rows, any_rejected, restored }
}

/// The decision's own limitations, then what this run's evidence lacks:
/// simulated cells, p99s over too few samples, GPU telemetry.
fn limitations(view: &CampaignView, cells: &HeadlineCells<'_>, simulated: &[String]) -> Vec<String> {
    let mut limitations: Vec<String> =
        view.decision().map(|(_, d)| d.limitations.clone()).unwrap_or_default();
    if !simulated.is_empty() {
        limitations.push(format!("Simulated engine: {} measured anvil's simulated engine, not real hardware; numbers come from its performance model and prove the campaign's logic, not a deployment.", simulated.join(", ")));
    }
    for (cell, _) in view.headline_cells() {
        if let Some(r) = cells.get(cell.name.as_str()) {
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
    limitations
}

/// What kinds of evidence the run holds, by its steps and their gates.
fn evidence_labels(view: &CampaignView, gates: &Gates) -> Vec<String> {
    let mut labels = Vec::new();
    if view.has_kind(StepKind::Check) {
        labels.push("functional");
    }
    if view.has_kind(StepKind::Cell) {
        labels.push("capacity");
    }
    if view.has_kind(StepKind::Screen) {
        labels.push("matched-performance");
    }
    if gates.any_rejected {
        labels.push("correctness-rejection");
    }
    if gates.restored {
        labels.push("exact-restoration");
    }
    labels.iter().map(|s| s.to_string()).collect()
}

/// The decision as its rules made it (`verdict`: its stored result), with
/// the run's evidence labels.
fn decision(verdict: Option<&DecisionResult>, evidence_labels: &[String]) -> Decision {
    // A statement as the rules made it (any JSON value), null when none did.
    let statement = |key: &str| verdict.and_then(|v| v.statements.get(key)).cloned().unwrap_or(Value::Null);
    Decision {
        evidence_labels: evidence_labels.to_vec(),
        decision_labels: verdict.map(|v| v.decision_labels.clone()),
        decision_label_confidence: verdict
            .filter(|v| !v.label_confidence.is_empty())
            .map(|v| results::to_value(&v.label_confidence)),
        decision_error_control: verdict.and_then(|v| v.error_control.as_ref()).map(results::to_value),
        promotion_authorized: verdict.map(|v| v.promotion_authorized),
        rules: verdict.map(|v| results::to_value(&v.rules)),
        winner: statement("winner"),
        single_card_selection: statement("single_card_selection"),
        alternate_runtime_result: statement("alternate_runtime_result"),
        promotion_boundary: statement("promotion_boundary"),
        reason: verdict.map(decision_reason),
    }
}

/// A step's stored result as its kind's type: None when nothing is stored,
/// an error when what is stored does not read as that kind.
fn stored<T: DeserializeOwned>(
    view: &CampaignView,
    store: &Store,
    name: &str,
) -> Option<Result<T, serde_json::Error>> {
    let (_, step) = view.step(name)?;
    let bytes = store.read_result_bytes(&step.fingerprint).ok().flatten()?;
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

fn thinking_label(thinking: ThinkingMode) -> &'static str {
    match thinking {
        ThinkingMode::Off => "disabled",
        ThinkingMode::On => "enabled",
        ThinkingMode::Default => "server default",
    }
}

fn ending_detail(view: &CampaignView, outcomes: &Outcomes<'_>, name: &str) -> Option<String> {
    let (i, _) = view.step(name)?;
    outcomes.endings.iter().find(|(j, _, _)| *j == i).map(|(_, e, d)| format!("{e}: {d}"))
}
