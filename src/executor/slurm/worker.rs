//! `anvil worker --recipe …`: what runs inside a Slurm job that cannot run
//! from step documents alone. It plans the same recipe against the shared
//! store, runs only its steps with the normal executor code (server pool,
//! store lock, atomic commit), and writes its progress to
//! `<store>/jobs/<job id>.progress.json` for the head.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use anvil_store::{Fingerprint, Store};

use super::jobs;
use super::progress_file::{ProgressFile, job_id_of};
use crate::plan::Plan;
use crate::plan::Status;
use crate::run::{Ending, RunOptions, RunSummary, execute};
use crate::step_kind::Kind;

pub struct WorkerArgs {
    pub steps: Vec<String>,
    pub force: Vec<String>,
    pub keep_going: bool,
    pub job: Option<String>,
    /// `--loadgen-workers` of the run that submitted the job.
    pub loadgen_workers: u32,
}

/// Why a worker could not run its steps.
#[derive(Debug)]
pub enum WorkerError {
    /// The job names steps it cannot run (exit 2).
    Input(String),
    Run(crate::run::RunError),
}

/// Run a job's steps of `plan` (the recipe as the command line loaded it
/// against `store`): `began_ms` is when the worker process started.
pub async fn worker(store: Store, plan: Plan, args: WorkerArgs, began_ms: u64) -> Result<i32, WorkerError> {
    let job_id = job_id_of(args.job.as_deref());
    let names = step_names(&args.steps);
    let mine = steps_of_job(&plan, &names)?;
    let mine_names: Vec<String> = mine.iter().map(|&i| plan.nodes[i].name.clone()).collect();
    let progress = ProgressFile::start(store.root(), &job_id, &mine_names, began_ms);
    eprintln!("anvil worker: job {job_id} on {}: {}", anvil_store::hostname(), names.join(", "));

    let watched: BTreeMap<String, Fingerprint> =
        mine.iter().map(|&i| (plan.nodes[i].name.clone(), plan.nodes[i].fingerprint)).collect();
    let watcher = watch_entries(store.clone(), progress.clone(), watched, args.force.clone());

    // A step stored since the head grouped it (a twin another job produced)
    // is not run again; leaving it out of --only also keeps it from
    // counting as a user of the server.
    let to_run: Vec<String> = mine
        .iter()
        .filter(|&&i| plan.nodes[i].status == Status::Pending || args.force.contains(&plan.nodes[i].name))
        .map(|&i| plan.nodes[i].name.clone())
        .collect();
    progress.update(|p| {
        for name in mine_names.iter().filter(|n| !to_run.contains(n)) {
            p.steps
                .insert(name.clone(), jobs::StepProgress { state: "cached".into(), detail: "stored".into() });
        }
    });
    if to_run.is_empty() {
        watcher.abort();
        progress.finish(None);
        return Ok(0);
    }
    let options = RunOptions {
        jobs: 4,
        only: to_run.clone(),
        force: args.force.clone(),
        keep_going: args.keep_going,
        loadgen_workers: args.loadgen_workers,
        // The allocation's GPUs (Slurm sets CUDA_VISIBLE_DEVICES for --gres).
        gpus: Some(std::env::var("CUDA_VISIBLE_DEVICES").unwrap_or_default()),
        ..RunOptions::default()
    };
    let summary = execute(plan, store.clone(), options).await;
    watcher.abort();
    let summary =
        summary.inspect_err(|err| progress.finish(Some(&err.to_string()))).map_err(WorkerError::Run)?;
    mark_worker_record(&store, &summary.run_id, &job_id);
    let ok = report_endings(&progress, &summary, &to_run);
    progress.finish(None);
    eprintln!("anvil worker: job {job_id} done in {:.1}s", summary.elapsed.as_secs_f64());
    Ok(match summary.interrupted {
        Some(code) => code,
        None if ok => 0,
        None => 1,
    })
}

/// `--steps a,b --steps c` as names.
fn step_names(steps: &[String]) -> Vec<String> {
    steps
        .iter()
        .flat_map(|s| s.split(','))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

/// The plan indices of the job's steps. The head put in a job only steps
/// whose other inputs are stored: a pending dependency outside the job
/// would be run twice, so it is refused.
fn steps_of_job(plan: &Plan, names: &[String]) -> Result<BTreeSet<usize>, WorkerError> {
    let input = WorkerError::Input;
    let mine: BTreeSet<usize> = names
        .iter()
        .map(|name| {
            plan.index_of(name).ok_or_else(|| input(format!("worker: no step `{name}` in the recipe")))
        })
        .collect::<Result<_, _>>()?;
    let mut stack: Vec<usize> = mine.iter().copied().collect();
    let mut seen = BTreeSet::new();
    while let Some(i) = stack.pop() {
        if !seen.insert(i) {
            continue;
        }
        for &d in &plan.nodes[i].deps {
            let node = &plan.nodes[d];
            if node.kind == Kind::Finally {
                continue;
            }
            if !mine.contains(&d) && node.kind != Kind::Server && node.status == Status::Pending {
                return Err(input(format!(
                    "worker: step `{}` needs `{}`, which is neither stored nor in this job",
                    plan.nodes[i].name, node.name
                )));
            }
            stack.push(d);
        }
    }
    Ok(mine)
}

/// Mark steps `stored` as their entries appear, for the head's live view.
fn watch_entries(
    store: Store,
    progress: ProgressFile,
    watched: BTreeMap<String, Fingerprint>,
    forced: Vec<String>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_millis(500)).await;
            for (name, fp) in &watched {
                if progress.pending(name) && !forced.contains(name) && store.contains(fp) {
                    progress.step(name, "stored", "");
                }
            }
        }
    })
}

/// Each of the job's steps as the run ended it; whether all ran or were stored.
fn report_endings(progress: &ProgressFile, summary: &RunSummary, to_run: &[String]) -> bool {
    let mut ok = summary.interrupted.is_none();
    for step in summary.steps.iter().filter(|s| to_run.contains(&s.name)) {
        ok &= matches!(step.outcome.ending, Ending::Ran | Ending::Cached);
        progress.step(&step.name, step.outcome.ending.as_str(), &step.outcome.detail);
    }
    progress.update(|p| {
        p.first_step_ms.get_or_insert_with(jobs::now_ms);
    });
    ok
}

/// The worker's run record stays a gc root, but it is a part of the head's
/// run, not a run of the recipe: its key says which job it was, so "the
/// recipe's latest run" (diff, export) is the head's.
pub(super) fn mark_worker_record(store: &anvil_store::Store, run_id: &str, job_id: &str) {
    let Some(mut record) = store.runs().unwrap_or_default().into_iter().find(|r| r.run_id == run_id) else {
        return;
    };
    record.recipe = format!("{}#slurm-job-{job_id}", record.recipe);
    let mut extra = crate::run_extra::RunExtra::of(&record);
    extra.slurm_job = Some(job_id.to_string());
    extra.write_to(&mut record);
    if let Err(err) = store.record_run(&record) {
        eprintln!("anvil worker: cannot mark run record {run_id}: {err}");
    }
}
