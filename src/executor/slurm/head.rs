//! The head: submits each group of steps as one Slurm job, follows the jobs
//! with `scontrol`, and tells the scheduler how each step ended from what
//! the shared store holds. Gates, screens and decisions stay on the head.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anvil_store::{Fingerprint, Store};
use serde_json::Value;
use tokio::sync::{Mutex, watch};

use super::error::SlurmError;
use super::group::{gpus_of, group_for, runs_in_a_job};
use super::jobs::{self, JobRecord, JobStep};
use super::sbatch::{self, shell_quote};
use super::settings::SlurmSettings;
use super::state::JobState;
use crate::executor::interface::{BoxFuture, Ending, Executor, ReadyStep, RunSpec, StartError, StepOutcome};
use crate::plan::{EngineMode, Plan, Status};
use crate::results::{StoredVerdict, Verdict};
use crate::step_kind::Kind;

#[derive(Debug, Clone)]
struct Snapshot {
    state: JobState,
    nodes: String,
    reason: String,
}

struct Tracked {
    job_id: String,
    label: String,
    steps: Vec<usize>,
    /// Found running from an earlier head rather than submitted by this one.
    adopted: bool,
    log: PathBuf,
    status: watch::Receiver<Snapshot>,
    submitted: Instant,
}

#[derive(Default)]
struct State {
    /// Step index → position in `tracked`.
    assigned: BTreeMap<usize, usize>,
    tracked: Vec<Tracked>,
    submitted: usize,
    /// Steps waiting for their group to be submitted.
    requested: BTreeSet<usize>,
}

/// `--executor slurm` (the registry's `start`): the head of this run.
pub fn start(run: &RunSpec<'_>) -> Result<Arc<dyn Executor>, StartError> {
    let plan = run.plan;
    if let Some(&waiting) = plan.waiting().first() {
        // Steps are grouped by server when the run starts; these do not know theirs yet.
        return Err(SlurmError::WaitsForUpstream {
            step: plan.nodes[waiting].qualified(),
            waits_for: plan.nodes[waiting].waits_for.join(", "),
        }
        .into());
    }
    let head: Arc<dyn Executor> = Head::new(run)?;
    Ok(head)
}

/// The head drives the run's cells, checks, searches and tasks as jobs.
impl Executor for Head {
    fn takes(&self, kind: Kind) -> bool {
        runs_in_a_job(kind)
    }

    /// Every ready group is submitted at once; Slurm decides placement.
    fn in_flight(&self, _jobs: usize, steps: usize) -> usize {
        steps.max(1)
    }

    fn run(self: Arc<Self>, step: ReadyStep) -> BoxFuture<'static, StepOutcome> {
        Box::pin(self.run_step(step.index, step.forced))
    }

    fn cancel_all(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.cancel_submitted())
    }

    fn jobs(&self) -> BoxFuture<'_, Option<Value>> {
        Box::pin(async { Some(self.jobs_json().await) })
    }
}

/// What the head keeps of the plan (its own copy; the scheduler settles its own).
struct StepInfo {
    name: String,
    kind: Kind,
    fingerprint: Fingerprint,
    blocking: bool,
}

pub struct Head {
    settings: SlurmSettings,
    store: Store,
    plan: Plan,
    steps: Vec<StepInfo>,
    due: Vec<bool>,
    forced: BTreeSet<usize>,
    keep_going: bool,
    /// `--loadgen-workers`, passed on to each job's worker.
    loadgen_workers: u32,
    run_id: String,
    binary: PathBuf,
    recipe_path: PathBuf,
    cwd: PathBuf,
    state: Mutex<State>,
}

impl Head {
    /// Set up for one run: `due` marks the steps this run will execute
    /// unless something stops it. Jobs an earlier head left running for
    /// these fingerprints are adopted: this run waits for them.
    fn new(run: &RunSpec<'_>) -> Result<Arc<Head>, SlurmError> {
        let RunSpec { plan, selected, forced, run_id, keep_going, loadgen_workers, .. } = *run;
        let store = run.store.clone();
        let settings = plan.recipe.slurm_settings();
        if !sbatch::available() {
            return Err(SlurmError::NoSbatch);
        }
        let binary = match &settings.anvil_binary {
            Some(path) => path.clone(),
            None => std::env::current_exe()
                .map_err(|source| SlurmError::Process { what: "the anvil binary's path", source })?,
        };
        // The head's own locks (gates, screens, decisions) are leases too.
        anvil_store::treat_stores_as_shared();
        let cwd = std::env::current_dir()
            .map_err(|source| SlurmError::Process { what: "the current folder", source })?;
        let recipe_path = std::path::absolute(&plan.recipe.path).unwrap_or_else(|_| plan.recipe.path.clone());
        let due: Vec<bool> = plan
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| selected[i] && (n.status == Status::Pending || forced.contains(&i)))
            .collect();
        let steps = (0..plan.nodes.len())
            .map(|i| {
                let n = &plan.nodes[i];
                // Only a gate's or check's verdict can be non-blocking: no other step's document is built for it.
                let verdict = matches!(n.kind, Kind::Gate | Kind::Check);
                let blocking = !verdict || crate::document::document_of(plan, i).blocking();
                StepInfo { name: n.name.clone(), kind: n.kind, fingerprint: n.fingerprint, blocking }
            })
            .collect();
        let head = Head {
            settings,
            store,
            plan: plan.clone(),
            steps,
            due,
            forced: forced.clone(),
            keep_going,
            loadgen_workers,
            run_id: run_id.to_string(),
            binary,
            recipe_path,
            cwd,
            state: Mutex::new(State::default()),
        };
        head.adopt_running_jobs();
        Ok(Arc::new(head))
    }

    fn adopt_running_jobs(&self) {
        let by_fp: BTreeMap<String, usize> = self
            .steps
            .iter()
            .enumerate()
            .filter(|(i, s)| self.due[*i] && runs_in_a_job(s.kind) && !self.forced.contains(i))
            .map(|(i, s)| (s.fingerprint.to_string(), i))
            .collect();
        let mut state = self.state.try_lock().expect("nobody else has the head yet");
        for record in jobs::all_records(self.store.root()) {
            let mine: Vec<usize> =
                record.steps.iter().filter_map(|s| by_fp.get(&s.fingerprint).copied()).collect();
            if mine.is_empty() || mine.iter().any(|i| state.assigned.contains_key(i)) {
                continue;
            }
            let Some(info) = sbatch::show_job_blocking(&record.job_id) else { continue };
            if info.state.is_terminal() {
                continue;
            }
            eprintln!(
                "  slurm    job {} ({}) is still {} from run {}: waiting for it instead of submitting",
                record.job_id,
                record.label,
                info.state.as_str(),
                record.run_id
            );
            let snapshot = Snapshot { state: info.state, nodes: info.nodes, reason: info.reason };
            let position = state.tracked.len();
            state.tracked.push(self.follow(
                &record.job_id,
                &record.label,
                mine.clone(),
                true,
                record.log,
                snapshot,
            ));
            for i in mine {
                state.assigned.insert(i, position);
            }
        }
    }

    /// Run step `index` in its group's job (submitting it if this is the
    /// first step of the group to come), and wait for it to end.
    async fn run_step(self: Arc<Self>, index: usize, forced: bool) -> StepOutcome {
        let started = Instant::now();
        let fp = self.steps[index].fingerprint;
        let ended = |ending, detail: String, evidence, executed| StepOutcome {
            ending,
            detail,
            evidence,
            executed,
            duration: started.elapsed(),
            // The worker's classification is in its detail; not carried across jobs.
            fault: None,
        };
        if !forced && self.store.contains(&fp) {
            let (ending, detail) = self.stored_ending(index, "stored".into());
            return ended(ending, detail, None, false);
        }
        let (job_id, label, log, mut status, submitted) = match self.job_for(index).await {
            Ok(job) => job,
            Err(err) => return ended(Ending::Failed, format!("submitting to Slurm: {err}"), None, false),
        };
        let _ = (label, submitted);
        loop {
            if !forced && self.store.contains(&fp) {
                let mut node = status.borrow().nodes.clone();
                if node.is_empty() {
                    // Done before the poller saw it run: the worker says where.
                    node =
                        jobs::read_progress(self.store.root(), &job_id).map(|p| p.node).unwrap_or_default();
                }
                let (ending, detail) = self.stored_ending(index, format!("slurm job {job_id} on {node}"));
                return ended(ending, detail, None, true);
            }
            let snapshot = status.borrow().clone();
            if snapshot.state.is_terminal() {
                return self.after_end(index, &job_id, &snapshot, &log, forced, started);
            }
            tokio::select! {
                _ = status.changed() => {}
                _ = tokio::time::sleep(Duration::from_millis(300)) => {}
            }
        }
    }

    /// The job ended: the store and the worker's progress say how the step did.
    fn after_end(
        &self,
        index: usize,
        job_id: &str,
        snapshot: &Snapshot,
        log: &Path,
        forced: bool,
        started: Instant,
    ) -> StepOutcome {
        let fp = self.steps[index].fingerprint;
        let name = &self.steps[index].name;
        let progress = jobs::read_progress(self.store.root(), job_id);
        let reported = progress.as_ref().and_then(|p| p.steps.get(name)).cloned();
        let on = if snapshot.nodes.is_empty() { String::new() } else { format!(" on {}", snapshot.nodes) };
        let outcome = |ending, detail, evidence, executed| StepOutcome {
            ending,
            detail,
            evidence,
            executed,
            duration: started.elapsed(),
            // The worker's classification is in its detail; not carried across jobs.
            fault: None,
        };
        let worker_said = reported.as_ref().map(|r| r.state.as_str());
        if self.store.contains(&fp) && (!forced || matches!(worker_said, Some("ran" | "rejected" | "cached")))
        {
            let (ending, detail) = self.stored_ending(index, format!("slurm job {job_id}{on}"));
            return outcome(ending, detail, None, true);
        }
        // The worker skipped it (an upstream step of the job failed) and exited on its own.
        if let Some(r) = &reported
            && r.state == "skipped"
            && matches!(snapshot.state, JobState::Completed | JobState::Failed)
        {
            return outcome(Ending::Skipped, format!("slurm job {job_id}: {}", r.detail), None, false);
        }
        let why = match reported.filter(|r| r.state == "failed") {
            Some(r) => r.detail,
            None => snapshot.state.explain().to_string(),
        };
        let reason = match snapshot.reason.as_str() {
            "" | "None" => String::new(),
            r => format!(", {r}"),
        };
        let detail = format!("slurm job {job_id}{on} {}{reason}: {why}", snapshot.state.as_str());
        let tail = jobs::tail(log, 20);
        let evidence = (!tail.is_empty()).then(|| format!("job log {} (last lines):\n{tail}", log.display()));
        outcome(Ending::Failed, detail, evidence, true)
    }

    /// A stored result still counts: a stored rejection of a blocking check fails the run.
    fn stored_ending(&self, index: usize, how: String) -> (Ending, String) {
        let stored = self.store.read(&self.steps[index].fingerprint).ok().flatten();
        match stored.as_ref().and_then(|e| StoredVerdict::of(&e.result)) {
            Some(StoredVerdict { status: Verdict::Rejected, detail }) if self.steps[index].blocking => {
                (Ending::Rejected, format!("{how}: rejected: {detail}"))
            }
            _ => {
                let ending = if how == "stored" { Ending::Cached } else { Ending::Ran };
                (ending, how)
            }
        }
    }

    #[allow(clippy::type_complexity)]
    async fn job_for(
        &self,
        index: usize,
    ) -> Result<(String, String, PathBuf, watch::Receiver<Snapshot>, Instant), String> {
        {
            let mut state = self.state.lock().await;
            if !state.assigned.contains_key(&index) {
                state.requested.insert(index);
            }
        }
        // Steps the scheduler starts together ask together: submit their
        // groups in plan order, not in the order their tasks happen to run
        // (Slurm starts jobs of equal priority in submission order).
        tokio::time::sleep(Duration::from_millis(30)).await;
        let mut state = self.state.lock().await;
        if !state.assigned.contains_key(&index) {
            let waiting: Vec<usize> = self
                .plan
                .order
                .iter()
                .copied()
                .filter(|r| state.requested.contains(r) && !state.assigned.contains_key(r))
                .collect();
            for r in waiting {
                if state.assigned.contains_key(&r) {
                    continue;
                }
                // Another step's failure is reported by that step's own call.
                if let Err(err) = self.submit_group(&mut state, r)
                    && r == index
                {
                    state.requested.remove(&index);
                    return Err(err);
                }
            }
        }
        state.requested.remove(&index);
        let position = *state.assigned.get(&index).ok_or("the step's group was not submitted")?;
        let t = &state.tracked[position];
        Ok((t.job_id.clone(), t.label.clone(), t.log.clone(), t.status.clone(), t.submitted))
    }

    /// Form the group of step `index` and submit it as one job.
    fn submit_group(&self, state: &mut State, index: usize) -> Result<(), String> {
        let assigned: BTreeSet<usize> = state.assigned.keys().copied().collect();
        let stored = |d: usize| self.store.contains(&self.steps[d].fingerprint);
        let members = group_for(&self.plan, &self.due, &assigned, index, &stored);
        let server = self.plan.server_of(index);
        let label = match server {
            Some(s) => format!("server {}", self.steps[s].name),
            None => format!("{} {}", self.steps[index].kind, self.steps[index].name),
        };
        state.submitted += 1;
        let sequence = state.submitted;
        let (job_id, log) = self.submit(&members, server, &label, sequence)?;
        let names: Vec<&str> = members.iter().map(|&m| self.steps[m].name.as_str()).collect();
        eprintln!("  slurm    job {job_id} submitted: {label} ({})", names.join(", "));
        let snapshot = Snapshot { state: JobState::Pending, nodes: String::new(), reason: String::new() };
        let tracked = self.follow(&job_id, &label, members.clone(), false, log, snapshot);
        let position = state.tracked.len();
        state.tracked.push(tracked);
        for m in members {
            state.assigned.insert(m, position);
        }
        Ok(())
    }

    /// A worker that plans the recipe again on the node and runs `names` of it.
    fn recipe_worker_args(&self, names: &[String]) -> Vec<String> {
        let mut args = vec!["--recipe".into(), shell_quote(&self.recipe_path.display().to_string())];
        for set in &self.plan.recipe.overrides {
            args.extend(["--set".into(), shell_quote(set)]);
        }
        if self.plan.mode == EngineMode::SimulatedTwins {
            args.push("--sim".into());
        }
        if self.keep_going {
            args.push("--keep-going".into());
        }
        args.extend(["--steps".into(), shell_quote(&names.join(","))]);
        args
    }

    fn submit(
        &self,
        members: &[usize],
        server: Option<usize>,
        label: &str,
        sequence: usize,
    ) -> Result<(String, PathBuf), String> {
        let root = self.store.root();
        let dir = jobs::jobs_dir(root);
        std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        let names: Vec<String> = members.iter().map(|&m| self.steps[m].name.clone()).collect();
        let mut command = vec![
            shell_quote(&self.binary.display().to_string()),
            "worker".into(),
            "--store".into(),
            shell_quote(&root.display().to_string()),
        ];
        match super::documents::job_documents(&self.plan, root, members, server)? {
            // Cells, checks and tasks: the node runs their documents and reads no recipe.
            Some(documents) => {
                for document in documents {
                    command.extend(["--document".into(), shell_quote(&document.display().to_string())]);
                }
            }
            None => command.extend(self.recipe_worker_args(&names)),
        }
        if self.loadgen_workers > 1 {
            command.extend(["--loadgen-workers".into(), self.loadgen_workers.to_string()]);
        }
        for &m in members.iter().filter(|m| self.forced.contains(m)) {
            command.extend(["--force".into(), shell_quote(&self.steps[m].name)]);
        }
        command.extend(["--job".into(), "\"$SLURM_JOB_ID\"".into()]);
        let script = dir.join(format!("{}-{sequence}.sh", self.run_id));
        let text = format!(
            "#!/bin/sh\n# anvil {}: {label} ({})\nexport ANVIL_STORE_SHARED=1\nexec {}\n",
            self.plan.recipe.campaign.name,
            names.join(", "),
            command.join(" ")
        );
        std::fs::write(&script, text).map_err(|e| format!("writing {}: {e}", script.display()))?;
        let log_pattern = dir.join("slurm-%j.log");
        let job_name = format!("anvil-{}", label.replace(' ', "-"));
        let mut args = vec![
            format!("--job-name={job_name}"),
            format!("--output={}", log_pattern.display()),
            format!("--chdir={}", self.cwd.display()),
            "--export=ALL,ANVIL_STORE_SHARED=1".into(),
            "--nodes=1".into(),
        ];
        let gpus = gpus_of(&self.plan, server);
        if gpus > 0 {
            args.push(format!("--gres=gpu:{gpus}"));
        }
        args.extend(self.settings.sbatch_args());
        let submitted_ms = jobs::now_ms();
        let job_id = sbatch::submit(&args, &script).map_err(|e| e.to_string())?;
        let log = dir.join(format!("slurm-{job_id}.log"));
        let record = JobRecord {
            job_id: job_id.clone(),
            run_id: self.run_id.clone(),
            recipe: self.plan.recipe.key.clone(),
            label: label.to_string(),
            steps: members
                .iter()
                .map(|&m| JobStep {
                    name: self.steps[m].name.clone(),
                    fingerprint: self.steps[m].fingerprint.to_string(),
                })
                .collect(),
            gpus,
            submitted_at: crate::run::now_rfc3339(),
            submitted_ms,
            log: log.clone(),
        };
        if let Err(err) = jobs::write_json(&jobs::record_path(root, &job_id), &record) {
            eprintln!("anvil: warning: cannot record job {job_id} in the store: {err}");
        }
        Ok((job_id, log))
    }

    /// Follow a job with scontrol until it ends, printing its transitions.
    fn follow(
        &self,
        job_id: &str,
        label: &str,
        steps: Vec<usize>,
        adopted: bool,
        log: PathBuf,
        first: Snapshot,
    ) -> Tracked {
        let (tx, rx) = watch::channel(first);
        let (id, what, poll) = (job_id.to_string(), label.to_string(), self.settings.poll_interval());
        tokio::spawn(async move {
            let mut shown = String::new();
            let mut misses = 0;
            loop {
                let snapshot = match sbatch::show_job(&id).await {
                    Ok(Some(info)) => Snapshot { state: info.state, nodes: info.nodes, reason: info.reason },
                    Ok(None) => {
                        Snapshot { state: JobState::Unknown, nodes: String::new(), reason: String::new() }
                    }
                    Err(err) => {
                        misses += 1;
                        if misses == 10 {
                            eprintln!("anvil: warning: {err}");
                        }
                        tokio::time::sleep(poll).await;
                        continue;
                    }
                };
                let line = format!("{} {}", snapshot.state.as_str(), snapshot.nodes);
                if line != shown {
                    let on = if snapshot.nodes.is_empty() {
                        match snapshot.reason.as_str() {
                            "" | "None" => String::new(),
                            r => format!(" ({r})"),
                        }
                    } else {
                        format!(" on {}", snapshot.nodes)
                    };
                    eprintln!("  slurm    job {id} {}{on}: {what}", snapshot.state.as_str());
                    shown = line;
                }
                let over = snapshot.state.is_terminal();
                if tx.send(snapshot).is_err() || over {
                    return;
                }
                tokio::time::sleep(poll).await;
            }
        });
        Tracked {
            job_id: job_id.to_string(),
            label: label.to_string(),
            steps,
            adopted,
            log,
            status: rx,
            submitted: Instant::now(),
        }
    }

    /// Ctrl-C: cancel the jobs this head submitted that have not ended.
    async fn cancel_submitted(&self) {
        let state = self.state.lock().await;
        let ids: Vec<String> = state
            .tracked
            .iter()
            .filter(|t| !t.adopted && !t.status.borrow().state.is_terminal())
            .map(|t| t.job_id.clone())
            .collect();
        if !ids.is_empty() {
            eprintln!("anvil: cancelling slurm jobs {}", ids.join(" "));
            if let Err(err) = sbatch::cancel(&ids) {
                eprintln!("anvil: {err}");
            }
        }
    }

    /// The jobs of this run, for its record (`extra.jobs`). A job's last
    /// step is stored a moment before the job ends: wait (a while) for
    /// every job to end, so the record says how.
    async fn jobs_json(&self) -> Value {
        let receivers: Vec<watch::Receiver<Snapshot>> =
            self.state.lock().await.tracked.iter().filter(|t| !t.adopted).map(|t| t.status.clone()).collect();
        let _ = tokio::time::timeout(Duration::from_secs(30), async {
            for mut rx in receivers {
                while !rx.borrow().state.is_terminal() {
                    if rx.changed().await.is_err() {
                        break;
                    }
                }
            }
        })
        .await;
        let state = self.state.lock().await;
        Value::Array(
            state
                .tracked
                .iter()
                .map(|t| {
                    let snapshot = t.status.borrow().clone();
                    let root = self.store.root();
                    let submitted = jobs::read_record(root, &t.job_id).map(|r| r.submitted_ms).unwrap_or(0);
                    let progress = jobs::read_progress(root, &t.job_id).unwrap_or_default();
                    // Overhead: submit → the worker started on its node → its first step ended.
                    let since = |ms: u64| (submitted > 0 && ms >= submitted).then(|| ms - submitted);
                    let summary = jobs::JobSummary {
                        job_id: t.job_id.clone(),
                        label: t.label.clone(),
                        steps: t.steps.iter().map(|&i| self.steps[i].name.clone()).collect(),
                        state: snapshot.state.as_str().to_string(),
                        nodes: snapshot.nodes.clone(),
                        adopted: t.adopted,
                        log: t.log.clone(),
                        start_latency_ms: since(progress.began_ms),
                        first_step_ms: progress.first_step_ms.and_then(since),
                    };
                    serde_json::to_value(summary).unwrap_or_default()
                })
                .collect(),
        )
    }
}
