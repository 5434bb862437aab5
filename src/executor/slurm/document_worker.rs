//! `anvil worker --document …`: a Slurm job that runs from step documents
//! alone. The head wrote the documents of the job's cells and their server
//! into the store (`<store>/documents/`); the node reads them, needs no
//! recipe, plans nothing, and reports its progress to the head in
//! `<store>/jobs/<job id>.progress.json` as the recipe worker does.

use std::path::PathBuf;

use anvil_store::Store;

use super::progress_file::{ProgressFile, job_id_of};
use crate::document::{DocumentError, StepDocument};
use crate::run::{DocumentOutcome, run_step_documents};

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
    let job_id = job_id_of(args.job.as_deref());
    let names: Vec<String> = args
        .documents
        .iter()
        .map(|path| StepDocument::read(path).map(|d| d.name))
        .collect::<Result<_, _>>()?;
    let progress = ProgressFile::start(store.root(), &job_id, &names, super::jobs::now_ms());
    eprintln!("anvil worker: job {job_id} on {}: {} step documents", anvil_store::hostname(), names.len());
    let mut heard = |outcome: &DocumentOutcome| {
        println!("{}", outcome.line);
        progress.step(&outcome.name, outcome.state, &outcome.line);
    };
    let ran =
        run_step_documents(store.clone(), &args.documents, &args.force, args.loadgen_workers, &mut heard)
            .await;
    let ran = ran.inspect_err(|err| progress.finish(Some(&err.to_string())))?;
    progress.finish(None);
    super::worker::mark_worker_record(&store, &ran.run_id, &job_id);
    Ok(i32::from(ran.outcomes.iter().any(|o| o.state == "failed")))
}
