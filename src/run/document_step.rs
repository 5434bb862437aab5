//! Running cells, checks and tasks from their step documents alone (`anvil
//! worker --document`): no recipe and no plan, only the steps' documents,
//! their server's document beside them (a task has none), and a store. Each step is run by the
//! same code a run uses (server pool, load generator or checker, commit) and
//! stored under its document's fingerprint with its key as the preimage, so
//! the entry is the one `anvil run` of the recipe would have made.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anvil_store::{Fingerprint, NodeStatus, RunNode, RunRecord, RunStatus, Store};

use super::commit::commit_entry;
use super::context::Context;
use super::log_folder::LogFolder;
use super::measure::{Target, measure_cell};
use super::progress::Progress;
use super::servers::ServerPool;
use crate::document::{DocumentError, Exec, ServerExec, StepDocument};
use crate::plan::EngineMode;

/// How one document's step ended.
pub struct DocumentOutcome {
    pub name: String,
    /// `ran`, `cached` (stored already) or `failed`.
    pub state: &'static str,
    pub line: String,
}

/// The steps of one job (the cells and checks of one server, or tasks),
/// read and checked before anything starts.
struct Job {
    steps: Vec<(PathBuf, StepDocument)>,
    /// The server's document, when a step needs one.
    server: Option<(PathBuf, StepDocument)>,
}

impl Job {
    fn read(paths: &[PathBuf]) -> Result<Job, DocumentError> {
        let mut steps = Vec::new();
        let mut server: Option<(PathBuf, StepDocument)> = None;
        for path in paths {
            let document = StepDocument::read(path)?;
            let workdir = match server_of(path, &document)? {
                // A task: its files are found from the recipe's folder it names.
                None => match &document.exec {
                    Exec::Task(task) => task.workdir.clone(),
                    _ => PathBuf::new(),
                },
                Some(server_fp) => {
                    if server.as_ref().is_none_or(|(_, s)| s.fingerprint != server_fp) {
                        if server.is_some() {
                            return Err(DocumentError::TwoServers { path: path.clone() });
                        }
                        let server_path = path.with_file_name(StepDocument::file_name(server_fp));
                        let read = StepDocument::read(&server_path)?;
                        server = Some((server_path, read));
                    }
                    let (server_path, read) = server.as_ref().expect("read above");
                    server_exec(server_path, read)?.workdir.clone()
                }
            };
            document.check_inputs(path, &workdir)?;
            steps.push((path.clone(), document));
        }
        if steps.is_empty() {
            return Err(DocumentError::Nothing);
        }
        Ok(Job { steps, server })
    }

    /// The folder relative paths start from: the server's, else the first task's.
    fn workdir(&self) -> PathBuf {
        let task = self.steps.iter().find_map(|(_, d)| match &d.exec {
            Exec::Task(task) => Some(task.workdir.clone()),
            _ => None,
        });
        match &self.server {
            Some((_, server)) => match &server.exec {
                Exec::Server(launch) => launch.workdir.clone(),
                _ => PathBuf::new(),
            },
            None => task.unwrap_or_default(),
        }
    }
}

/// The fingerprint of the server a cell or check document runs against;
/// None for a task, which needs none.
fn server_of<'a>(path: &Path, document: &'a StepDocument) -> Result<Option<&'a str>, DocumentError> {
    match &document.exec {
        Exec::Cell(cell) => Ok(Some(&cell.server)),
        Exec::Check(check) => Ok(Some(&check.server)),
        Exec::Task(_) => Ok(None),
        _ => Err(DocumentError::WrongKind {
            path: path.into(),
            kind: document.kind.clone(),
            wanted: "a cell, a check or a task",
        }),
    }
}

fn server_exec<'a>(path: &Path, document: &'a StepDocument) -> Result<&'a ServerExec, DocumentError> {
    match &document.exec {
        Exec::Server(server) => Ok(server),
        _ => Err(DocumentError::WrongKind {
            path: path.into(),
            kind: document.kind.clone(),
            wanted: "a server",
        }),
    }
}

/// Run the steps of `paths` (documents of one server's cells and checks,
/// in order), starting their server once, and store each under its
/// fingerprint (a stored one only when `forced` names it). `report` hears
/// each step as it ends.
pub async fn run_step_documents(
    store: Store,
    paths: &[PathBuf],
    forced: &[String],
    loadgen_workers: u32,
    report: &mut dyn FnMut(&DocumentOutcome),
) -> Result<DocumentRun, DocumentError> {
    let job = Job::read(paths)?;
    let server = match &job.server {
        Some((path, document)) => Some((document.name.as_str(), server_exec(path, document)?)),
        None => None,
    };
    let started_at = super::clock::now_rfc3339();
    let run_id =
        format!("run-{}-{}", started_at.replace([':', '-'], "").trim_end_matches('Z'), std::process::id());
    let to_measure: Vec<bool> = job
        .steps
        .iter()
        .map(|(_, d)| forced.contains(&d.name) || !store.contains(&d.key_fingerprint()))
        .collect();
    let mut logs = LogFolder::new(&run_id);
    // Its artifacts name the recipe the cells were planned from, as a run of it would.
    let recipe = job.steps.iter().find_map(|(_, d)| match &d.exec {
        Exec::Cell(cell) => Some(cell.recipe.clone()),
        _ => None,
    });
    let shared = Shared { run_id: &run_id, recipe: recipe.unwrap_or_default(), loadgen_workers };
    let recipe = shared.recipe.clone();
    let ctx = context(&store, server, &job.workdir(), &shared, &mut logs, &to_measure)?;
    let mut outcomes = Vec::new();
    let mut nodes = Vec::new();
    for ((_, document), measure) in job.steps.iter().zip(to_measure) {
        let fingerprint = document.key_fingerprint();
        let began = std::time::Instant::now();
        let outcome = match measure {
            false => DocumentOutcome {
                name: document.name.clone(),
                state: "cached",
                line: format!("{}: stored {fingerprint}", document.name),
            },
            true => measure_document(&ctx, document, &fingerprint).await,
        };
        ctx.servers.release(0).await;
        report(&outcome);
        nodes.push(RunNode {
            name: document.name.clone(),
            kind: document.kind.clone(),
            fingerprint,
            status: match outcome.state {
                "ran" => NodeStatus::Ran,
                "cached" => NodeStatus::Cached,
                _ => NodeStatus::Failed,
            },
            started_at: Some(started_at.clone()),
            duration_ms: Some(began.elapsed().as_millis() as u64),
            detail: Some(outcome.line.clone()),
        });
        outcomes.push(outcome);
    }
    ctx.servers.stop_all().await;
    record(&store, Record { run_id: run_id.clone(), recipe, started_at, nodes }, paths);
    Ok(DocumentRun { run_id, outcomes })
}

/// What a run of documents did: its run record's id, and each step's ending.
pub struct DocumentRun {
    pub run_id: String,
    pub outcomes: Vec<DocumentOutcome>,
}

/// What every cell of the job shares besides its server.
struct Shared<'a> {
    run_id: &'a str,
    recipe: String,
    loadgen_workers: u32,
}

/// The run's shared state around a pool holding the one server (none for tasks).
fn context(
    store: &Store,
    server: Option<(&str, &ServerExec)>,
    workdir: &Path,
    shared: &Shared<'_>,
    logs: &mut LogFolder,
    to_measure: &[bool],
) -> Result<Arc<Context>, DocumentError> {
    let users = to_measure.iter().filter(|&&m| m).count();
    let log_dir = logs.path().map_err(|(path, source)| DocumentError::Io { path, source })?;
    let gpus = match std::env::var("CUDA_VISIBLE_DEVICES") {
        Ok(list) => anvil_proc::GpuPool::from_list(&list),
        Err(_) if users == 0 => anvil_proc::GpuPool::from_list(""),
        Err(_) => anvil_proc::GpuPool::detect(),
    };
    let twin = server.is_some_and(|(_, launch)| launch.simulated_twin);
    let mode = if twin { EngineMode::SimulatedTwins } else { EngineMode::AsDeclared };
    let servers = ServerPool::new(
        server.map(|(name, launch)| (0, (name.to_string(), launch.clone()))).into_iter().collect(),
        // Every step releases it as it ends, measured or not: the last stops it.
        server.map(|_| (0, to_measure.len())).into_iter().collect(),
        mode,
        log_dir,
        workdir.to_path_buf(),
        gpus,
    );
    Ok(Arc::new(Context {
        store: store.clone(),
        servers,
        recipe_dir: workdir.to_path_buf(),
        recipe_key: shared.recipe.clone(),
        // Each document carries its own seed (`CellExec::seed`), used as its cell is measured.
        seed: 0,
        run_id: shared.run_id.to_string(),
        progress: Arc::new(Progress::new(to_measure.len())),
        cells_elsewhere: false,
        loadgen_workers: shared.loadgen_workers.max(1),
    }))
}

/// Run one cell or check document on the pool's server, or a task's
/// command, and commit it.
async fn measure_document(
    ctx: &Context,
    document: &StepDocument,
    fingerprint: &Fingerprint,
) -> DocumentOutcome {
    let name = document.name.clone();
    let produced = match &document.exec {
        Exec::Cell(cell) => {
            let target = Target { name: &name, cell, fingerprint };
            measure_cell(ctx, 0, target, "the cell", |f| f).await
        }
        Exec::Check(check) => match ctx.servers.acquire(0).await {
            Ok(info) => super::check::run_check(check, &info).await,
            Err(err) => Err(super::outcome::Failure::new(err)),
        },
        Exec::Task(task) => super::task::run_task(task).await,
        _ => return DocumentOutcome { name, state: "failed", line: "not a cell, a check or a task".into() },
    };
    let (state, line) = match produced {
        Ok(produced) => match commit_entry(&ctx.store, fingerprint, &document.key, &produced) {
            Ok(note) => ("ran", format!("{name}: {}{note}", produced.summary)),
            Err(err) => ("failed", format!("{name}: storing its result failed: {err}")),
        },
        Err(failure) => ("failed", format!("{name}: {}", failure.reason)),
    };
    DocumentOutcome { name, state, line }
}

/// The run record: a gc root for what it stored, and a part of some run of
/// the recipe rather than a run of it (its key says so).
struct Record {
    run_id: String,
    /// The recipe the documents were planned from (a label).
    recipe: String,
    started_at: String,
    nodes: Vec<RunNode>,
}

fn record(store: &Store, Record { run_id, recipe, started_at, nodes }: Record, paths: &[PathBuf]) {
    let failed = nodes.iter().any(|n| n.status == NodeStatus::Failed);
    let record = RunRecord {
        run_id,
        recipe: format!("{recipe}#documents"),
        recipe_path: recipe,
        started_at,
        finished_at: Some(super::clock::now_rfc3339()),
        status: if failed { RunStatus::Failed } else { RunStatus::Succeeded },
        nodes,
        extra: serde_json::json!({"documents": paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>()}),
    };
    if let Err(err) = store.record_run(&record) {
        eprintln!("anvil worker: cannot record the run: {err}");
    }
}
