//! `anvil worker --document …`: a Slurm job that runs from step documents
//! alone. The head wrote the documents of the job's cells and their server
//! into the store (`<store>/documents/`); the node reads them, needs no
//! recipe, plans nothing, and reports its progress to the head in
//! `<store>/jobs/<job id>.progress.json` as the recipe worker does.

use std::path::PathBuf;

use anvil_store::Store;

use super::jobs::{self, JobProgress, StepProgress};
use crate::document::{DocumentError, StepDocument};
use crate::run::{DocumentOutcome, run_cell_documents};

/// What a document job is told.
pub struct DocumentJob {
    /// The cells' documents, in the order they are measured.
    pub documents: Vec<PathBuf>,
    /// Steps to measure again though stored.
    pub force: Vec<String>,
    /// The Slurm job id (default $SLURM_JOB_ID).
    pub job: Option<String>,
    pub loadgen_workers: u32,
}

/// Run the job: 0 when every cell was measured or found stored, 1 when one failed.
pub async fn document_worker(store: Store, args: DocumentJob) -> Result<i32, DocumentError> {
    let job_id = args
        .job
        .clone()
        .filter(|j| !j.is_empty())
        .or_else(|| std::env::var("SLURM_JOB_ID").ok())
        .unwrap_or_else(|| format!("local-{}", std::process::id()));
    let mut progress = JobProgress {
        job_id: job_id.clone(),
        node: anvil_store::hostname(),
        pid: std::process::id(),
        state: "running".into(),
        started_at: crate::run::now_rfc3339(),
        updated_at: crate::run::now_rfc3339(),
        steps: Default::default(),
        began_ms: jobs::now_ms(),
        first_step_ms: None,
    };
    for path in &args.documents {
        let document = StepDocument::read(path)?;
        progress.steps.insert(document.name, StepProgress { state: "pending".into(), detail: String::new() });
    }
    let path = jobs::progress_path(store.root(), &job_id);
    let write = |progress: &mut JobProgress| {
        progress.updated_at = crate::run::now_rfc3339();
        if let Err(err) = jobs::write_json(&path, &*progress) {
            eprintln!("anvil worker: cannot write {}: {err}", path.display());
        }
    };
    write(&mut progress);
    eprintln!("anvil worker: job {job_id} on {}: {} step documents", progress.node, args.documents.len());
    let mut heard = |outcome: &DocumentOutcome| {
        println!("{}", outcome.line);
        let state = StepProgress { state: outcome.state.into(), detail: outcome.line.clone() };
        progress.steps.insert(outcome.name.clone(), state);
        progress.first_step_ms.get_or_insert_with(jobs::now_ms);
        write(&mut progress);
    };
    let ran =
        run_cell_documents(store.clone(), &args.documents, &args.force, args.loadgen_workers, &mut heard)
            .await;
    progress.state = "finished".into();
    if let Err(err) = &ran {
        for step in progress.steps.values_mut().filter(|s| s.state == "pending") {
            *step = StepProgress { state: "failed".into(), detail: err.to_string() };
        }
    }
    write(&mut progress);
    let ran = ran?;
    super::worker::mark_worker_record(&store, &ran.run_id, &job_id);
    Ok(i32::from(ran.outcomes.iter().any(|o| o.state == "failed")))
}
