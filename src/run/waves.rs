//! A run's waves. Steps whose settings wait for upstream results are held
//! until nothing else can run, then settled on the stored results and run in
//! the next wave (with servers only they may need, `extends` of a winner). A
//! wave ends when nothing more can start: the server pool cannot take a
//! server settled while others run.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use anvil_store::Store;

use super::context::Context;
use super::error::RunError;
use super::frozen;
use super::frozen::short_digest;
use super::log_folder::LogFolder;
use super::options::RunOptions;
use super::progress::Progress;
use super::scheduler;
use super::selection::selection;
use super::servers::ServerPool;
use crate::document::{Exec, ServerExec};
use crate::executor::interface::{Ending, Executor, Fault, StepOutcome};
use crate::plan::{Plan, Status};
use crate::run_extra::FrozenInput;
use crate::step_kind::Kind;

/// The run's inputs as they were when it started, by path.
pub(super) type Frozen = BTreeMap<String, FrozenInput>;

/// What every wave of one run shares.
pub(super) struct Run<'a> {
    pub store: &'a Store,
    pub options: &'a RunOptions,
    pub forced: &'a BTreeSet<usize>,
    pub executor: &'a Option<Arc<dyn Executor>>,
    pub frozen: &'a Frozen,
}

/// How each step ended, by plan index (None: never reached).
type Endings = Vec<Option<StepOutcome>>;

/// Run waves until nothing is held or nothing more can settle: the plan as
/// it ended (settled), each step's ending, and the exit code of an interruption.
pub(super) async fn run_waves(
    run: &Run<'_>,
    mut plan: Plan,
    mut selected: Vec<bool>,
    run_id: &str,
) -> Result<(Plan, Endings, Option<i32>), RunError> {
    let cells_elsewhere = run.executor.as_ref().is_some_and(|e| e.takes(Kind::Cell));
    // A cluster executor may take every ready step at once (its scheduler places them).
    let jobs =
        run.executor.as_ref().map_or(run.options.jobs, |e| e.in_flight(run.options.jobs, plan.nodes.len()));
    let mut done: Endings = (0..plan.nodes.len()).map(|_| None).collect();
    let mut stop_reason = None;
    let mut logs = LogFolder::new(run_id);
    loop {
        let held: Vec<bool> =
            (0..plan.nodes.len()).map(|i| !plan.nodes[i].waits_for.is_empty() && done[i].is_none()).collect();
        // Held and finished steps start no server in this wave.
        let this_wave: Vec<bool> =
            (0..plan.nodes.len()).map(|i| selected[i] && !held[i] && done[i].is_none()).collect();
        let ctx =
            wave_context(&plan, &this_wave, run.forced, run.options, run.store, &mut logs, cells_elsewhere)?;
        let setup = scheduler::Setup {
            selected: selected.clone(),
            forced: run.forced.clone(),
            jobs,
            keep_going: run.options.keep_going,
            held: held.clone(),
            done,
            stop_reason: stop_reason.take(),
            executor: run.executor.clone(),
        };
        let schedule = scheduler::Scheduler::new(plan, run.store.clone(), ctx, setup).run().await?;
        (plan, done, stop_reason) = (schedule.plan, schedule.endings, schedule.stop_reason);
        if schedule.interrupted.is_some() || !held.contains(&true) {
            return Ok((plan, done, schedule.interrupted));
        }
        let before = still_held(&plan, &done);
        plan = settle_between_waves(plan, run, &selected, &mut done)?;
        if still_held(&plan, &done) == before && done.iter().any(Option::is_none) && before > 0 {
            // Nothing settled and nothing could: a next wave would start nothing new.
            return Ok((plan, done, None));
        }
        selected = selection(&plan, &run.options.only)?;
    }
}

/// Steps still held for results.
fn still_held(plan: &Plan, done: &Endings) -> usize {
    plan.waiting().into_iter().filter(|&i| done[i].is_none()).count()
}

/// Settle the held steps on the results now stored; fail those whose input
/// files changed during the run and skip those whose awaited results never
/// came.
fn settle_between_waves(
    plan: Plan,
    run: &Run<'_>,
    selected: &[bool],
    done: &mut Endings,
) -> Result<Plan, RunError> {
    let settled = plan.clone().settle_results(run.store).map_err(|err| RunError::Settle(Box::new(err)))?;
    let plan = keep_what_ended(plan, settled, done);
    let progress = Progress::new(0);
    for i in 0..plan.nodes.len() {
        // A file it reads was edited during the run: measuring it would mix two inputs in one run.
        let changed = frozen::changed_since_start(&plan, i, run.frozen);
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
        failed.fault = Some(Fault::InputChanged);
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
    Ok(plan)
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
        servers: ServerPool::new(servers_of(plan), users, plan.mode, log_dir, plan.recipe.dir(), gpus),
        recipe_dir: plan.recipe.dir(),
        recipe_key: plan.recipe.key.clone(),
        seed: plan.recipe.campaign.seed,
        run_id: logs.run_id().to_string(),
        progress: Arc::new(Progress::new(0)),
        cells_elsewhere,
        loadgen_workers: options.loadgen_workers.max(1),
    }))
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

/// Every server of the plan by its index, with its name.
fn servers_of(plan: &Plan) -> BTreeMap<usize, (String, ServerExec)> {
    (0..plan.nodes.len())
        .filter(|&i| plan.nodes[i].kind == Kind::Server)
        .filter_map(|i| match crate::document::document_of(plan, i).exec {
            Exec::Server(server) => Some((i, (plan.nodes[i].name.clone(), *server))),
            _ => None,
        })
        .collect()
}
