//! `anvil worker`: what runs inside a Slurm job. It plans the same recipe
//! against the shared store, runs only its steps with the normal executor
//! code (server pool, store lock, atomic commit), and writes its progress to
//! `<store>/jobs/<job id>.progress.json` for the head.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anvil_store::Store;

use super::jobs::{self, JobProgress, StepProgress};
use crate::plan::Plan;
use crate::plan::Status;
use crate::step_kind::Kind;
use crate::run::{Ending, RunOptions, execute};

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
    let input = WorkerError::Input;
    let job_id = args
        .job
        .clone()
        .filter(|j| !j.is_empty())
        .or_else(|| std::env::var("SLURM_JOB_ID").ok())
        .unwrap_or_else(|| format!("local-{}", std::process::id()));
    let steps: Vec<String> = args
        .steps
        .iter()
        .flat_map(|s| s.split(','))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect();
    let mine: BTreeSet<usize> = steps
        .iter()
        .map(|name| {
            plan.index_of(name).ok_or_else(|| input(format!("worker: no step `{name}` in the recipe")))
        })
        .collect::<Result<_, _>>()?;
    // The head put in a job only steps whose other inputs are stored: a
    // pending dependency outside the job would be run twice. Refuse.
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
    let node = anvil_store::hostname();
    let progress = Arc::new(Mutex::new(JobProgress {
        job_id: job_id.clone(),
        node,
        pid: std::process::id(),
        state: "running".into(),
        started_at: crate::run::now_rfc3339(),
        updated_at: crate::run::now_rfc3339(),
        steps: mine
            .iter()
            .map(|&i| {
                (plan.nodes[i].name.clone(), StepProgress { state: "pending".into(), detail: String::new() })
            })
            .collect(),
        began_ms,
        first_step_ms: None,
    }));
    let path = jobs::progress_path(store.root(), &job_id);
    let write = {
        let (progress, path) = (progress.clone(), path.clone());
        move || {
            let mut p = progress.lock().unwrap_or_else(|e| e.into_inner());
            p.updated_at = crate::run::now_rfc3339();
            if let Err(err) = jobs::write_json(&path, &*p) {
                eprintln!("anvil worker: cannot write {}: {err}", path.display());
            }
        }
    };
    write();
    eprintln!("anvil worker: job {job_id} on {}: {}", anvil_store::hostname(), steps.join(", "));

    // Mark steps as their entries appear, for the head's live view.
    let watched: BTreeMap<String, anvil_store::Fingerprint> =
        mine.iter().map(|&i| (plan.nodes[i].name.clone(), plan.nodes[i].fingerprint)).collect();
    let watcher = {
        let (store, progress, write) = (store.clone(), progress.clone(), write.clone());
        let forced: BTreeSet<String> = args.force.iter().cloned().collect();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(500)).await;
                let mut changed = false;
                {
                    let mut p = progress.lock().unwrap_or_else(|e| e.into_inner());
                    for (name, fp) in &watched {
                        let pending = p.steps.get(name).is_some_and(|s| s.state == "pending");
                        if pending && !forced.contains(name) && store.contains(fp) {
                            p.steps.insert(
                                name.clone(),
                                StepProgress { state: "stored".into(), detail: String::new() },
                            );
                            p.first_step_ms.get_or_insert_with(jobs::now_ms);
                            changed = true;
                        }
                    }
                }
                if changed {
                    write();
                }
            }
        })
    };

    // A step stored since the head grouped it (a twin another job produced)
    // is not run again; leaving it out of --only also keeps it from
    // counting as a user of the server.
    let to_run: Vec<String> = mine
        .iter()
        .filter(|&&i| plan.nodes[i].status == Status::Pending || args.force.contains(&plan.nodes[i].name))
        .map(|&i| plan.nodes[i].name.clone())
        .collect();
    {
        let mut p = progress.lock().unwrap_or_else(|e| e.into_inner());
        for &i in &mine {
            if !to_run.contains(&plan.nodes[i].name) {
                let stored = StepProgress { state: "cached".into(), detail: "stored".into() };
                p.steps.insert(plan.nodes[i].name.clone(), stored);
            }
        }
    }
    if to_run.is_empty() {
        progress.lock().unwrap_or_else(|e| e.into_inner()).state = "finished".into();
        write();
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
    let summary = match summary {
        Ok(summary) => summary,
        Err(err) => {
            let mut p = progress.lock().unwrap_or_else(|e| e.into_inner());
            p.state = "finished".into();
            for s in p.steps.values_mut().filter(|s| s.state == "pending") {
                *s = StepProgress { state: "failed".into(), detail: err.to_string() };
            }
            drop(p);
            write();
            return Err(WorkerError::Run(err));
        }
    };
    mark_worker_record(&store, &summary.run_id, &job_id);
    let mut ok = summary.interrupted.is_none();
    {
        let mut p = progress.lock().unwrap_or_else(|e| e.into_inner());
        for step in summary.steps.iter().filter(|s| to_run.contains(&s.name)) {
            ok &= matches!(step.outcome.ending, Ending::Ran | Ending::Cached);
            p.steps.insert(
                step.name.clone(),
                StepProgress {
                    state: step.outcome.ending.as_str().into(),
                    detail: step.outcome.detail.clone(),
                },
            );
        }
        p.first_step_ms.get_or_insert_with(jobs::now_ms);
        p.state = "finished".into();
    }
    write();
    eprintln!("anvil worker: job {job_id} done in {:.1}s", summary.elapsed.as_secs_f64());
    Ok(match summary.interrupted {
        Some(code) => code,
        None if ok => 0,
        None => 1,
    })
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
