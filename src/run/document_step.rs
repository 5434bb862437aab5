//! Running a cell from its step document alone (`anvil worker --document`):
//! no recipe and no plan, only the cell's document, its server's document
//! beside it, and a store. The cell is measured by the same code a run
//! uses (server pool, load generator, commit) and stored under the
//! document's fingerprint with its key as the preimage, so the entry is the
//! one `anvil run` of the recipe would have made.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use anvil_store::{Fingerprint, NodeStatus, RunNode, RunRecord, RunStatus, Store};

use super::cell::CellToRun;
use super::commit::commit_entry;
use super::context::Context;
use super::log_folder::LogFolder;
use super::measure::{Target, measure_cell};
use super::progress::Progress;
use super::servers::ServerPool;
use crate::document::{DocumentError, Exec, StepDocument};
use crate::plan::EngineMode;

/// How a document's step ended, for the command line.
pub struct DocumentOutcome {
    /// 0: measured or already stored; 1: it failed.
    pub code: i32,
    pub line: String,
}

/// Measure the cell of `document` (read from `path`) on the server whose
/// document lies beside it, and store it under the cell's fingerprint.
pub async fn run_cell_document(
    store: Store,
    path: &Path,
    force: bool,
    loadgen_workers: u32,
) -> Result<DocumentOutcome, DocumentError> {
    let document = StepDocument::read(path)?;
    let Exec::Cell(cell) = &document.exec else {
        return Err(DocumentError::WrongKind { path: path.into(), kind: document.kind, wanted: "a cell" });
    };
    let server_path = path.with_file_name(StepDocument::file_name(&cell.server));
    let server = StepDocument::read(&server_path)?;
    let Exec::Server(launch) = &server.exec else {
        return Err(DocumentError::WrongKind { path: server_path, kind: server.kind, wanted: "a server" });
    };
    document.check_inputs(path, &launch.workdir)?;
    let fingerprint: Fingerprint = document.key_fingerprint();
    if store.contains(&fingerprint) && !force {
        return Ok(DocumentOutcome { code: 0, line: format!("{}: stored {fingerprint}", document.name) });
    }
    let started_at = super::now_rfc3339();
    let run_id =
        format!("run-{}-{}", started_at.replace([':', '-'], "").trim_end_matches('Z'), std::process::id());
    let mut logs = LogFolder::new(&run_id);
    let log_dir = logs.path().map_err(|(path, source)| DocumentError::Io { path, source })?;
    let gpus = match std::env::var("CUDA_VISIBLE_DEVICES") {
        Ok(list) => anvil_proc::GpuPool::from_list(&list),
        Err(_) => anvil_proc::GpuPool::detect(),
    };
    let mode = if launch.simulated_twin { EngineMode::SimulatedTwins } else { EngineMode::AsDeclared };
    let servers = ServerPool::new(
        BTreeMap::from([(0, (server.name.clone(), launch.server.clone()))]),
        BTreeMap::from([(0, 1)]),
        mode,
        log_dir,
        launch.workdir.clone(),
        gpus,
    );
    let ctx = Arc::new(Context {
        store: store.clone(),
        servers,
        recipe_dir: launch.workdir.clone(),
        recipe_key: cell.recipe.clone(),
        seed: cell.seed,
        run_id: run_id.clone(),
        progress: Arc::new(Progress::new(1)),
        cells_elsewhere: false,
        loadgen_workers: loadgen_workers.max(1),
    });
    let began = std::time::Instant::now();
    let target = Target {
        name: &document.name,
        cell: CellToRun::Resolved(cell),
        fingerprint: &fingerprint,
        seed: cell.seed,
    };
    let measured = measure_cell(&ctx, 0, target, "the cell", |f| f).await;
    ctx.servers.stop_all().await;
    let (status, line) = match measured {
        Ok(produced) => match commit_entry(&store, &fingerprint, &document.key, &produced) {
            Ok(note) => (NodeStatus::Ran, format!("{}: {}{note}", document.name, produced.summary)),
            Err(err) => (NodeStatus::Failed, format!("{}: storing its result failed: {err}", document.name)),
        },
        Err(failure) => (NodeStatus::Failed, format!("{}: {}", document.name, failure.reason)),
    };
    let node = RunNode {
        name: document.name.clone(),
        kind: document.kind.clone(),
        fingerprint,
        status,
        started_at: Some(started_at.clone()),
        duration_ms: Some(began.elapsed().as_millis() as u64),
        detail: Some(line.clone()),
    };
    let failed = status == NodeStatus::Failed;
    let record = RunRecord {
        run_id,
        // A part of some run of the recipe, not a run of it: its key says so.
        recipe: format!("{}#document", cell.recipe),
        recipe_path: cell.recipe.clone(),
        started_at,
        finished_at: Some(super::now_rfc3339()),
        status: if failed { RunStatus::Failed } else { RunStatus::Succeeded },
        nodes: vec![node],
        extra: serde_json::json!({"document": path.display().to_string()}),
    };
    if let Err(err) = store.record_run(&record) {
        eprintln!("anvil worker: cannot record the run: {err}");
    }
    Ok(DocumentOutcome { code: i32::from(failed), line })
}
