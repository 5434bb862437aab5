//! Running a plan: independent steps in parallel, stored steps skipped,
//! servers started lazily, `finally` steps always, and a run record at the end.

mod cell;
mod check;
mod clock;
mod commit;
mod context;
mod decision;
#[cfg(test)]
mod decision_family_tests;
mod document_step;
mod error;
mod frozen;
mod gate;
#[cfg(test)]
mod gate_oc_tests;
mod inner_cell_node;
pub(crate) mod interval_verdict;
mod launch;
mod local;
mod log_folder;
mod measure;
mod measure_more;
mod options;
mod outcome;
mod progress;
mod record;
mod results;
mod run_documents;
mod scheduler;
mod screen;
#[cfg(test)]
mod screen_oc_tests;
mod search;
mod selection;
mod server_info;
mod server_metrics;
mod servers;
#[cfg(test)]
mod statistics_testing;
mod step;
mod store_full;
mod summary;
mod task;
mod unchanged_inputs;
mod warmup;
mod waves;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Instant;

use anvil_store::{RunStatus, Store};
use serde_json::Value;

pub use crate::executor::interface::Ending;
pub use clock::now_rfc3339;
pub use document_step::{DocumentOutcome, run_step_documents};
pub use error::RunError;
pub use options::RunOptions;
pub use servers::registry_dir;
pub use summary::{RunSummary, StepReport};

use crate::document::Exec;
use crate::executor::interface::{Executor, RunSpec, StepOutcome};
use crate::plan::{Plan, Status};
use crate::step_kind::Kind;
use selection::{selection, unknown_step};
use waves::Frozen;

/// Run a plan: every selected step not in the store, then the campaign
/// outputs, with a run record from start to end.
pub async fn execute(plan: Plan, store: Store, options: RunOptions) -> Result<RunSummary, RunError> {
    let started = Instant::now();
    let started_at = now_rfc3339();
    let run_id =
        format!("run-{}-{}", started_at.replace([':', '-'], "").trim_end_matches('Z'), std::process::id());
    let selected = selection(&plan, &options.only)?;
    let forced: BTreeSet<usize> = options
        .force
        .iter()
        .map(|name| plan.index_of(name).ok_or_else(|| unknown_step("--force", name, &plan)))
        .collect::<Result<_, _>>()?;

    let executor = start_executor(&plan, &selected, &forced, &store, &run_id, &options)?;
    let executes = will_execute(&plan, &selected, &forced);
    let (mut record, frozen) = start_record(&plan, &store, &run_id, &started_at, executes)?;
    let run = waves::Run {
        store: &store,
        options: &options,
        forced: &forced,
        executor: &executor,
        frozen: &frozen,
    };
    let (plan, done, interrupted) = waves::run_waves(&run, plan, selected, &run_id).await?;

    let unfinished = if interrupted.is_some() { "interrupted" } else { "never reached" };
    let steps: Vec<StepReport> = done
        .into_iter()
        .enumerate()
        .map(|(i, outcome)| {
            let node = &plan.nodes[i];
            StepReport {
                name: node.name.clone(),
                kind: node.kind,
                fingerprint: node.fingerprint,
                outcome: outcome
                    .unwrap_or_else(|| StepOutcome::without_work(Ending::Skipped, unfinished.into())),
            }
        })
        .collect();
    let summary = RunSummary {
        run_id,
        steps,
        elapsed: started.elapsed(),
        finished_at: now_rfc3339(),
        interrupted,
        plan,
    };
    finish_record(&mut record, &summary, &store, executor.as_deref()).await;
    if executes {
        store.record_run(&record)?;
    } else {
        // It stored nothing: losing its record to a power cut loses no result.
        store.record_run_lightly(&record)?;
    }
    Ok(summary)
}

/// `--executor NAME`: the steps it takes run there (src/executor), the rest here.
fn start_executor(
    plan: &Plan,
    selected: &[bool],
    forced: &BTreeSet<usize>,
    store: &Store,
    run_id: &str,
    options: &RunOptions,
) -> Result<Option<Arc<dyn Executor>>, RunError> {
    let Some(start) = options.executor else { return Ok(None) };
    let spec = RunSpec {
        plan,
        selected,
        forced,
        store,
        run_id,
        keep_going: options.keep_going,
        loadgen_workers: options.loadgen_workers.max(1),
    };
    start(&spec).map(Some).map_err(|e| RunError::Executor(e.to_string()))
}

/// The run record as the run starts, with what a report shows of the recipe
/// (a report never reads the recipe, which may have changed since) and the
/// run's inputs as they are now (src/run/frozen.rs): a run that executes
/// nothing reads none of them again. Written at once when the run will store
/// entries (it is their gc root meanwhile).
fn start_record(
    plan: &Plan,
    store: &Store,
    run_id: &str,
    started_at: &str,
    executes: bool,
) -> Result<(anvil_store::RunRecord, Frozen), RunError> {
    let environment = if executes { None } else { record::carried_environment(store, plan) };
    let mut record = record::started(plan, run_id, started_at, environment);
    let mut extra = crate::run_extra::RunExtra::of(&record);
    extra.campaign_description = plan.recipe.campaign.description.clone();
    extra.descriptions =
        plan.recipe.steps.iter().filter_map(|s| Some((s.name.clone(), s.description.clone()?))).collect();
    let frozen = if executes { frozen::freeze(plan) } else { BTreeMap::new() };
    extra.frozen_inputs = frozen.clone();
    extra.write_to(&mut record);
    if executes {
        store.record_run(&record)?;
    }
    Ok((record, frozen))
}

/// The run record as the run ends: each step's ending, the probes and extra
/// repeats measured inside steps, and the jobs a cluster executor ran.
async fn finish_record(
    record: &mut anvil_store::RunRecord,
    summary: &RunSummary,
    store: &Store,
    executor: Option<&dyn Executor>,
) {
    let status = match (summary.interrupted, summary.succeeded()) {
        (Some(_), _) => RunStatus::Interrupted,
        (None, true) => RunStatus::Succeeded,
        (None, false) => RunStatus::Failed,
    };
    record::finish(record, &summary.plan, &summary.steps, status, &summary.finished_at);
    record.nodes.extend(search::probe_nodes(summary, store));
    record.nodes.extend(measure_more::extra_nodes(summary, store));
    let mut extra = crate::run_extra::RunExtra::of(record);
    extra.documents = run_documents::keep_documents(&summary.plan, store);
    if let Some(executor) = executor {
        extra.jobs = executor.jobs().await;
    }
    extra.write_to(record);
}

/// Whether a run will execute anything: a selected step that is pending
/// (a `finally` step is pending only when something else runs, or `always`)
/// or forced.
fn will_execute(plan: &Plan, selected: &[bool], forced: &BTreeSet<usize>) -> bool {
    plan.nodes.iter().enumerate().any(|(i, node)| {
        selected[i] && node.kind != Kind::Server && (node.status == Status::Pending || forced.contains(&i))
    })
}

/// Evaluate a result-reading step (gate, screen, decision) of a settled plan
/// again from the stored results of its inputs, or a search from its stored
/// probes, as `anvil verify` does: the same executor code, no server,
/// nothing stored. None for other kinds.
pub(crate) fn reevaluate(plan: &Plan, index: usize, store: &Store) -> Option<Result<Value, String>> {
    let inputs = results::inputs_of(plan, index, store);
    let document = crate::document::document_of(plan, index);
    let judge = measure_more::Judge::of(&document.exec);
    let produced = match &document.exec {
        // The rounds it pooled, replayed over the stored extra repeats.
        _ if let Some(judge) = judge.filter(|j| j.budget() > 0) => {
            let budget = judge.budget();
            let sites = plan.extra_repeat_sites(index);
            let mut read = measure_more::Artifacts::new();
            match measure_more::replay(
                judge,
                budget,
                &sites,
                &inputs,
                store,
                &mut read,
                measure_more::Unstored::Fail,
            ) {
                Ok(measure_more::Replay::Done(produced)) => Ok(produced),
                Ok(measure_more::Replay::Measure(_)) => {
                    Err(outcome::Failure::new("an extra repeat is not stored"))
                }
                Err(failure) => Err(failure),
            }
        }
        Exec::Gate(gate) => gate::evaluate_gate(gate, &inputs),
        Exec::Screen(screen) => screen::run_screen(screen, &inputs),
        Exec::Decision(decision) => decision::run_decision(decision, &inputs),
        _ if document.kind == Kind::Search.as_str() => search::rejudge(plan, index, store),
        _ => return None,
    };
    Some(produced.map(|p| p.result).map_err(|f| f.reason))
}
