//! Running a plan: independent steps in parallel, stored steps skipped,
//! servers started lazily, `finally` steps always, and a run record at the end.

mod cell;
mod check;
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
mod outcome;
mod progress;
mod record;
mod results;
mod scheduler;
mod screen;
#[cfg(test)]
mod screen_oc_tests;
mod search;
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

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anvil_store::{RunStatus, Store};
use serde_json::Value;

pub use crate::executor::interface::Ending;
pub use document_step::{DocumentOutcome, run_cell_documents};
pub use error::RunError;
pub use servers::registry_dir;
pub use summary::{RunSummary, StepReport};

use crate::executor::interface::{Executor, RunSpec, Start, StepOutcome};
use crate::plan::{Plan, Status};
use crate::recipe::decls::ServerDecl;
use crate::step_kind::Kind;
use crate::recipe::Spec;
use context::Context;
use log_folder::LogFolder;
use progress::Progress;
use servers::ServerPool;

#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    pub jobs: usize,
    pub force: Vec<String>,
    pub only: Vec<String>,
    pub keep_going: bool,
    /// `--gpus 0,1,…`; detected with nvidia-smi when absent.
    pub gpus: Option<String>,
    /// `--executor NAME` (`crate::executor::REGISTRY`): where the steps it
    /// takes run (None: every step runs here).
    pub executor: Option<Start>,
    /// `--loadgen-workers`: the load generator's threads per cell (0 is taken as 1).
    pub loadgen_workers: u32,
}

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

    // `--executor NAME`: the steps it takes run there (src/executor), the rest here.
    let executor: Option<Arc<dyn Executor>> = match options.executor {
        Some(start) => {
            let spec = RunSpec {
                plan: &plan,
                selected: &selected,
                forced: &forced,
                store: &store,
                run_id: &run_id,
                keep_going: options.keep_going,
                loadgen_workers: options.loadgen_workers.max(1),
            };
            Some(start(&spec).map_err(|e| RunError::Executor(e.to_string()))?)
        }
        None => None,
    };

    let cells_elsewhere = executor.as_ref().is_some_and(|e| e.takes(Kind::Cell));
    let executes = will_execute(&plan, &selected, &forced);
    let environment = if executes { None } else { record::carried_environment(&store, &plan) };
    let mut record = record::started(&plan, &run_id, &started_at, environment);
    // What the recipe says that a report shows, kept with the run: a report
    // never reads the recipe, which may have changed since.
    let mut extra = crate::run_extra::RunExtra::of(&record);
    extra.campaign_description = plan.recipe.campaign.description.clone();
    extra.descriptions =
        plan.recipe.steps.iter().filter_map(|s| Some((s.name.clone(), s.description.clone()?))).collect();
    // The run's inputs as they are now (src/run/frozen.rs): a run that
    // executes nothing reads none of them again.
    let frozen = if executes { frozen::freeze(&plan) } else { BTreeMap::new() };
    extra.frozen_inputs = frozen.clone();
    extra.write_to(&mut record);
    if executes {
        // A gc root while the run stores entries; a run that stores nothing
        // writes its record once, at the end.
        store.record_run(&record)?;
    }

    // A cluster executor may take every ready step at once (its scheduler places them).
    let jobs = executor.as_ref().map_or(options.jobs, |e| e.in_flight(options.jobs, plan.nodes.len()));
    // Waves: steps whose settings wait for upstream results are held until
    // nothing else can run, then settled on the stored results and run in the
    // next wave (with servers only they may need, `extends` of a winner). A
    // wave ends when nothing more can start: the server pool cannot take a
    // server settled while others run.
    let mut plan = plan;
    let mut selected = selected;
    let mut done: Vec<Option<StepOutcome>> = (0..plan.nodes.len()).map(|_| None).collect();
    let mut stop_reason = None;
    let mut logs = LogFolder::new(&run_id);
    let interrupted = loop {
        let held: Vec<bool> =
            (0..plan.nodes.len()).map(|i| !plan.nodes[i].waits_for.is_empty() && done[i].is_none()).collect();
        // Held and finished steps start no server in this wave.
        let this_wave: Vec<bool> =
            (0..plan.nodes.len()).map(|i| selected[i] && !held[i] && done[i].is_none()).collect();
        let ctx = wave_context(&plan, &this_wave, &forced, &options, &store, &mut logs, cells_elsewhere)?;
        let setup = scheduler::Setup {
            selected: selected.clone(),
            forced: forced.clone(),
            jobs,
            keep_going: options.keep_going,
            held: held.clone(),
            done,
            stop_reason: stop_reason.take(),
            executor: executor.clone(),
        };
        let schedule = scheduler::Scheduler::new(plan, store.clone(), ctx, setup).run().await?;
        (plan, done, stop_reason) = (schedule.plan, schedule.endings, schedule.stop_reason);
        if schedule.interrupted.is_some() || !held.contains(&true) {
            break schedule.interrupted;
        }
        let still_held = |plan: &Plan, done: &[Option<StepOutcome>]| {
            plan.waiting().into_iter().filter(|&i| done[i].is_none()).count()
        };
        let before = still_held(&plan, &done);
        let settled = plan.clone().settle_results(&store).map_err(|err| RunError::Recipe(Box::new(err)))?;
        plan = keep_what_ended(plan, settled, &done);
        let progress = Progress::new(0);
        for i in 0..plan.nodes.len() {
            // A file it reads was edited during the run: measuring it would mix two inputs in one run.
            let changed = frozen::changed_since_start(&plan, i, &frozen);
            if done[i].is_some() || changed.is_empty() {
                continue;
            }
            let (file, then, now) = &changed[0];
            let reason = format!(
                "{file} changed during the run (at its start {}, now {}): nothing was measured; run again to plan it anew",
                short_digest(then),
                short_digest(now)
            );
            let node = &plan.nodes[i];
            progress.finished(&node.name, node.kind, Ending::Failed, &reason, Duration::ZERO, selected[i]);
            let mut failed = StepOutcome::without_work(Ending::Failed, reason);
            failed.fault = Some(crate::executor::interface::Fault::InputChanged);
            done[i] = Some(failed);
        }
        for i in plan.waiting() {
            if done[i].is_none() && scheduler::waited_for(&plan, i).iter().all(|&d| done[d].is_some()) {
                // What it waits for ended without a value (failed, skipped): it cannot run.
                let node = &plan.nodes[i];
                let reason = format!("provisional: {} produced no result", node.waits_for.join(", "));
                let shown = selected[i] || node.kind != Kind::Server;
                progress.finished(&node.name, node.kind, Ending::Skipped, &reason, Duration::ZERO, shown);
                done[i] = Some(StepOutcome::without_work(Ending::Skipped, reason));
            }
        }
        progress.clear();
        if still_held(&plan, &done) == before && done.iter().any(Option::is_none) && before > 0 {
            // Nothing settled and nothing could: a next wave would start nothing new.
            break None;
        }
        selected = selection(&plan, &options.only)?;
    };

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
    let status = match (summary.interrupted, summary.succeeded()) {
        (Some(_), _) => RunStatus::Interrupted,
        (None, true) => RunStatus::Succeeded,
        (None, false) => RunStatus::Failed,
    };
    record::finish(&mut record, &summary.plan, &summary.steps, status, &summary.finished_at);
    record.nodes.extend(search::probe_nodes(&summary, &store));
    record.nodes.extend(measure_more::extra_nodes(&summary, &store));
    if let Some(executor) = &executor
        && let Some(jobs) = executor.jobs().await
    {
        let mut extra = crate::run_extra::RunExtra::of(&record);
        extra.jobs = Some(jobs);
        extra.write_to(&mut record);
    }
    if executes {
        store.record_run(&record)?;
    } else {
        // It stored nothing: losing its record to a power cut loses no result.
        store.record_run_lightly(&record)?;
    }
    Ok(summary)
}

/// One wave's servers (a fresh pool: a server settled in this wave may be
/// new) around what every step shares. `this_wave`: the steps it may run.
fn wave_context(
    plan: &Plan,
    this_wave: &[bool],
    forced: &BTreeSet<usize>,
    options: &RunOptions,
    store: &Store,
    logs: &mut LogFolder,
    cells_elsewhere: bool,
) -> Result<Arc<Context>, RunError> {
    let users = server_users(plan, this_wave, forced);
    // No server to start: no log folder and no GPU detection (nvidia-smi),
    // which a fully cached rerun would otherwise pay for every time.
    let log_dir = if users.is_empty() {
        std::env::temp_dir()
    } else {
        logs.path().map_err(|(path, source)| RunError::Io {
            what: "creating the log folder in",
            path,
            source,
        })?
    };
    let gpus = match &options.gpus {
        Some(list) => anvil_proc::GpuPool::from_list(list),
        None if users.is_empty() => anvil_proc::GpuPool::from_list(""),
        None => anvil_proc::GpuPool::detect(),
    };
    Ok(Arc::new(Context {
        store: store.clone(),
        servers: ServerPool::new(server_decls(plan), users, plan.mode, log_dir, plan.recipe.dir(), gpus),
        recipe_dir: plan.recipe.dir(),
        recipe_key: plan.recipe.key.clone(),
        seed: plan.recipe.campaign.seed,
        run_id: logs.run_id().to_string(),
        progress: Arc::new(Progress::new(0)),
        cells_elsewhere,
        loadgen_workers: options.loadgen_workers.max(1),
    }))
}

/// The settled plan, except for steps that already ended: they keep the
/// node they ran with.
fn keep_what_ended(ran: Plan, mut settled: Plan, done: &[Option<StepOutcome>]) -> Plan {
    for (i, node) in ran.nodes.into_iter().enumerate() {
        if done[i].is_some() {
            settled.nodes[i] = node;
        }
    }
    settled
}

/// Whether a run will execute anything: a selected step that is pending
/// (a `finally` step is pending only when something else runs, or `always`)
/// or forced.
fn will_execute(plan: &Plan, selected: &[bool], forced: &BTreeSet<usize>) -> bool {
    plan.nodes.iter().enumerate().any(|(i, node)| {
        selected[i] && node.kind != Kind::Server && (node.status == Status::Pending || forced.contains(&i))
    })
}

/// How many selected steps that will run need each server (cached ones
/// never start it); the last one to finish stops it.
fn server_users(plan: &Plan, selected: &[bool], forced: &BTreeSet<usize>) -> BTreeMap<usize, usize> {
    let mut users: BTreeMap<usize, usize> = BTreeMap::new();
    for (i, node) in plan.nodes.iter().enumerate() {
        // Exactly the steps that will acquire and release it (a finally step
        // waits for every server but uses none, and must not keep them up).
        let due = selected[i] && (node.status == Status::Pending || forced.contains(&i));
        if let Some(server) = plan.server_of(i).filter(|_| due) {
            *users.entry(server).or_default() += 1;
        }
        // A gate's or screen's extra repeats borrow their cells' servers
        // (`ServerPool::borrow`): known here, so their wave has a log
        // folder and its GPUs.
        if due {
            for site in plan.extra_repeat_sites(i) {
                users.entry(site.server).or_default();
            }
        }
    }
    users
}

fn server_decls(plan: &Plan) -> BTreeMap<usize, (String, ServerDecl)> {
    plan.recipe
        .steps
        .iter()
        .enumerate()
        .filter_map(|(i, step)| match &step.spec {
            Spec::Server(server) => Some((i, (step.name.clone(), server.clone()))),
            _ => None,
        })
        .collect()
}

fn unknown_step(flag: &'static str, name: &str, plan: &Plan) -> RunError {
    let hint = crate::recipe::did_you_mean(name, plan.nodes.iter().map(|n| n.name.as_str()))
        .map(|h| format!(" ({h})"))
        .unwrap_or_default();
    RunError::UnknownStep { flag, name: name.to_string(), hint }
}

/// `--only a b`: those steps and everything they depend on.
fn selection(plan: &Plan, only: &[String]) -> Result<Vec<bool>, RunError> {
    if only.is_empty() {
        return Ok(vec![true; plan.nodes.len()]);
    }
    let mut selected = vec![false; plan.nodes.len()];
    let mut stack = Vec::new();
    for name in only {
        stack.push(plan.index_of(name).ok_or_else(|| unknown_step("--only", name, plan))?);
    }
    while let Some(i) = stack.pop() {
        if !std::mem::replace(&mut selected[i], true) {
            stack.extend(plan.nodes[i].deps.iter().copied().filter(|&d| plan.nodes[d].kind != Kind::Finally));
        }
    }
    Ok(selected)
}

fn short_digest(digest: &str) -> String {
    match digest.strip_prefix("blake3:") {
        Some(hex) => format!("blake3:{}…", &hex[..hex.len().min(12)]),
        None => digest.to_string(),
    }
}

pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

/// Evaluate a result-reading step (gate, screen, decision) of a settled plan
/// again from the stored results of its inputs, or a search from its stored
/// probes, as `anvil verify` does: the same executor code, no server,
/// nothing stored. None for other kinds.
pub(crate) fn reevaluate(plan: &Plan, index: usize, store: &Store) -> Option<Result<Value, String>> {
    let inputs = results::inputs_of(plan, index, store);
    let step = &plan.recipe.steps[index];
    let budget = crate::plan::extra_repeats::budget_of(step);
    let produced = match &step.spec {
        // The rounds it pooled, replayed over the stored extra repeats.
        Spec::Gate(_) | Spec::Screen(_) if budget > 0 => {
            let judge = measure_more::Judge::of(&step.spec)?;
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
        Spec::Gate(gate) => gate::evaluate_gate(gate, &inputs),
        Spec::Screen(screen) => screen::run_screen(screen, &inputs),
        Spec::Decision(decision) => decision::run_decision(decision, &inputs),
        Spec::Search(_) => search::rejudge(plan, index, store),
        _ => return None,
    };
    Some(produced.map(|p| p.result).map_err(|f| f.reason))
}
