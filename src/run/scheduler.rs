//! The scheduler: starts every step whose dependencies are settled, up to
//! `--jobs` at once; skips what was not selected or follows a failure;
//! decides whether `finally` steps have anything to restore; and stops
//! everything on Ctrl-C. It hands each step to an executor
//! (`crate::executor::interface::Executor`): the run's chosen one if it takes the
//! step's kind, the local one otherwise.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use anvil_store::Store;
use tokio::task::JoinSet;

use super::context::Context;
use super::error::RunError;
use super::local::Local;
use super::progress::Progress;
use super::{results, step};
use crate::document::{Exec, document_of};
use crate::executor::interface::{Ending, Executor, ReadyStep, StepOutcome};
use crate::plan::{Plan, Status, reads_results};
use crate::step_kind::Kind;

pub(super) struct Scheduler {
    plan: Plan,
    store: Store,
    ctx: Arc<Context>,
    progress: Arc<Progress>,
    /// Runs a step in this process, with this wave's servers.
    local: Arc<dyn Executor>,
    /// The run's chosen executor (`--executor`), for the kinds it takes.
    executor: Option<Arc<dyn Executor>>,
    /// Steps `--only` selected (all without it).
    selected: Vec<bool>,
    forced: BTreeSet<usize>,
    jobs: usize,
    keep_going: bool,
    endings: Vec<Option<StepOutcome>>,
    launched: Vec<bool>,
    /// Every step before this position in `plan.order` is launched: a pass
    /// starts here, so a long run does not rescan its finished prefix after
    /// every step (that made a 100,000-step run quadratic).
    first_unlaunched: usize,
    running: JoinSet<(usize, StepOutcome)>,
    /// Set by the first failure unless `--keep-going`: why later steps do not start.
    stop_reason: Option<String>,
}

/// What a finished schedule leaves: how each step ended (None: never
/// reached) and the exit code a signal asked for.
pub(super) struct Schedule {
    pub plan: Plan,
    pub endings: Vec<Option<StepOutcome>>,
    pub interrupted: Option<i32>,
    pub stop_reason: Option<String>,
}

/// How the scheduler is set up for one run.
pub(super) struct Setup {
    pub selected: Vec<bool>,
    pub forced: BTreeSet<usize>,
    pub jobs: usize,
    pub keep_going: bool,
    /// Steps whose settings wait for upstream results: not started in this
    /// wave (the runner settles them for the next, `plan/provisional.rs`).
    pub held: Vec<bool>,
    /// How steps ended in earlier waves of the same run.
    pub done: Vec<Option<StepOutcome>>,
    /// Why steps do not start (a failure in an earlier wave).
    pub stop_reason: Option<String>,
    /// The run's chosen executor (None: every step runs here).
    pub executor: Option<Arc<dyn Executor>>,
}

impl Scheduler {
    pub fn new(plan: Plan, store: Store, ctx: Arc<Context>, setup: Setup) -> Scheduler {
        let n = plan.nodes.len();
        debug_assert!(setup.held.len() == n && setup.done.len() == n);
        let progress = ctx.progress.clone();
        progress.set_total(
            plan.nodes
                .iter()
                .enumerate()
                .filter(|(i, n)| setup.selected[*i] && n.kind != Kind::Server)
                .filter(|(i, _)| !setup.held[*i] && setup.done[*i].is_none())
                .count(),
        );
        Scheduler {
            plan,
            store,
            local: Arc::new(Local::new(ctx.clone())),
            executor: setup.executor,
            ctx,
            progress,
            selected: setup.selected,
            forced: setup.forced,
            jobs: setup.jobs.max(1),
            keep_going: setup.keep_going,
            launched: (0..n).map(|i| setup.held[i] || setup.done[i].is_some()).collect(),
            endings: setup.done,
            first_unlaunched: 0,
            running: JoinSet::new(),
            stop_reason: setup.stop_reason,
        }
    }

    /// Run to the end, or until a signal: the conventional exit code
    /// (128 + signal number) is then recorded.
    pub async fn run(mut self) -> Result<Schedule, RunError> {
        let mut interrupt = Box::pin(interruption());
        let mut interrupted = None;
        loop {
            self.start_ready().await;
            let joined = tokio::select! {
                joined = self.running.join_next() => joined,
                code = &mut interrupt => {
                    // Ctrl-C (or SIGTERM/SIGHUP): stop what runs, stop the servers, record it.
                    self.running.abort_all();
                    if let Some(executor) = &self.executor {
                        executor.cancel_all().await;
                    }
                    interrupted = Some(code);
                    self.progress.clear();
                    eprintln!("anvil: interrupted; stopping servers");
                    break;
                }
            };
            let Some(joined) = joined else { break };
            let (i, outcome) = joined.map_err(|err| RunError::Crashed(err.to_string()))?;
            self.on_finished(i, outcome);
        }
        self.ctx.servers.stop_all().await;
        self.progress.clear();
        Ok(Schedule { plan: self.plan, endings: self.endings, interrupted, stop_reason: self.stop_reason })
    }

    /// Start every step whose dependencies are settled, up to `--jobs` at once.
    async fn start_ready(&mut self) {
        let order_len = self.plan.order.len();
        while self.first_unlaunched < order_len && self.launched[self.plan.order[self.first_unlaunched]] {
            self.first_unlaunched += 1;
        }
        for position in self.first_unlaunched..order_len {
            let i = self.plan.order[position];
            if self.launched[i] || !self.dependencies_settled(i) {
                continue;
            }
            if self.running.len() >= self.jobs {
                break; // the pool is full; the next step to finish calls again
            }
            self.launched[i] = true;
            match self.skip_reason(i) {
                Some(reason) => self.skip(i, reason).await,
                // A server "runs" when its steps ask for it (lazily, in the pool).
                None if self.plan.nodes[i].kind == Kind::Server => {
                    self.endings[i] = Some(StepOutcome::without_work(Ending::Ran, String::new()));
                }
                None => self.launch(i),
            }
        }
    }

    fn dependencies_settled(&self, i: usize) -> bool {
        // A finally step waits for everything but another finally step.
        self.plan.nodes[i]
            .deps
            .iter()
            .all(|&d| self.endings[d].is_some() || self.plan.nodes[d].kind == Kind::Finally)
    }

    fn skip_reason(&self, i: usize) -> Option<String> {
        let node = &self.plan.nodes[i];
        if !self.selected[i] {
            return Some("not selected by --only".to_string());
        }
        if node.kind == Kind::Finally {
            // Restoring is needed only if this run touched anything.
            let executed = self.endings.iter().flatten().any(|f| f.executed);
            let always = matches!(document_of(&self.plan, i).exec, Exec::Task(task) if task.always);
            return (!executed && !always).then(|| {
                "nothing ran, so nothing to restore (set `always #true` to run it anyway)".to_string()
            });
        }
        if let Some(reason) = &self.stop_reason {
            return Some(reason.clone());
        }
        node.deps
            .iter()
            .find(|&&d| {
                self.plan.nodes[d].kind != Kind::Server
                    && self.endings[d]
                        .as_ref()
                        .is_some_and(|f| matches!(f.ending, Ending::Failed | Ending::Skipped))
            })
            .map(|&d| format!("upstream {} did not succeed", self.plan.nodes[d].qualified()))
    }

    /// Whether a run will execute step `i` unless something stops it.
    fn due(&self, i: usize) -> bool {
        self.selected[i] && (self.plan.nodes[i].status == Status::Pending || self.forced.contains(&i))
    }

    async fn skip(&mut self, i: usize, reason: String) {
        let node = &self.plan.nodes[i];
        // The server was counted for this step: it no longer waits for it.
        if let Some(server) = self.plan.server_of(i)
            && self.due(i)
        {
            self.ctx.servers.release(server).await;
        }
        if self.selected[i] || node.kind != Kind::Server {
            self.progress.finished(
                &node.name,
                node.kind,
                Ending::Skipped,
                &reason,
                Duration::ZERO,
                self.selected[i],
            );
        }
        self.endings[i] = Some(StepOutcome::without_work(Ending::Skipped, reason));
    }

    fn launch(&mut self, i: usize) {
        let inputs = if reads_results(self.plan.nodes[i].kind) {
            // Its inputs exist now: settle its fingerprint on their results,
            // unless the plan already hashed them all (nothing it reads ran).
            let upstream_ran =
                self.plan.nodes[i].deps.iter().any(|&d| self.endings[d].as_ref().is_some_and(|f| f.executed));
            if self.plan.nodes[i].provisional || upstream_ran {
                self.plan.settle(i, &self.store);
            }
            // A stored verdict is reused as is: only an evaluation reads the inputs.
            let will_evaluate =
                self.forced.contains(&i) || !self.store.contains(&self.plan.nodes[i].fingerprint);
            will_evaluate.then(|| results::inputs_of(&self.plan, i, &self.store))
        } else {
            None
        };
        let node = &self.plan.nodes[i];
        if !self.due(i) && node.kind != Kind::Finally && self.store.contains(&node.fingerprint) {
            // Stored and not forced: nothing to run, so no task to spawn (a
            // fully cached rerun used to send every step through the pool).
            let (ending, detail) = step::stored_ending(
                &self.store,
                node.kind,
                || document_of(&self.plan, i).blocking(),
                &node.fingerprint,
                "stored",
            );
            self.progress.started(&node.name, node.kind);
            self.on_finished(i, StepOutcome::without_work(ending, detail));
            return;
        }
        let job = ReadyStep {
            index: i,
            kind: node.kind,
            name: node.name.clone(),
            fingerprint: node.fingerprint,
            document: document_of(&self.plan, i),
            forced: self.forced.contains(&i),
            inputs,
            server: self.plan.server_of(i),
            counted: self.due(i),
            probe_site: self.plan.probe_site(i),
            extra_sites: self.plan.extra_repeat_sites(i),
        };
        self.progress.started(&node.name, node.kind);
        let executor = match &self.executor {
            Some(chosen) if chosen.takes(node.kind) => chosen.clone(),
            _ => self.local.clone(),
        };
        self.running.spawn(async move { (i, executor.run(job).await) });
    }

    fn on_finished(&mut self, i: usize, finished: StepOutcome) {
        let node = &self.plan.nodes[i];
        self.progress.finished(
            &node.name,
            node.kind,
            finished.ending,
            &finished.detail,
            finished.duration,
            true,
        );
        if finished.ending == Ending::Failed && !self.keep_going && self.stop_reason.is_none() {
            self.stop_reason = Some(format!(
                "not started: {} failed (use --keep-going to go on past failures)",
                self.plan.nodes[i].qualified()
            ));
        }
        self.endings[i] = Some(finished);
    }
}

/// The steps whose results held step `i` waits for (`PlannedNode::waits_for`).
pub(super) fn waited_for(plan: &Plan, i: usize) -> Vec<usize> {
    plan.nodes[i]
        .waits_for
        .iter()
        .filter_map(|qualified| qualified.split_once('.').and_then(|(_, name)| plan.index_of(name)))
        .collect()
}

/// Resolves when the user asks anvil to stop: the conventional exit code
/// (128 + signal number).
async fn interruption() -> i32 {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term), Ok(mut hup)) =
        (signal(SignalKind::interrupt()), signal(SignalKind::terminate()), signal(SignalKind::hangup()))
    else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = int.recv() => 130,
        _ = term.recv() => 143,
        _ = hup.recv() => 129,
    }
}
