//! The executor interface: what the scheduler hands an executor (a ready
//! step, its inputs resolved), what comes back (how it ended), and the few
//! calls around them (starting for a run, cancelling, what the run record
//! keeps).
//!
//! A leaf: it names plan, recipe and store types only, so `run`, which
//! drives executors, and each executor, which implements this, import it
//! and never each other's internals.

use std::collections::BTreeSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use anvil_store::{Fingerprint, NodeStatus, Store};
use anvil_words::words;
use serde_json::Value;

use crate::document::StepDocument;
use crate::plan::Plan;
use crate::plan::search::ProbeSite;
use crate::step_kind::Kind;

/// A future an executor returns (trait objects cannot have `async fn`s).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Where a run's steps execute. The scheduler starts every step whose
/// dependencies are settled, and hands the ones this executor [`takes`]
/// to [`run`]; the others run in this process (the local executor,
/// `src/run/local.rs`).
///
/// [`takes`]: Executor::takes
/// [`run`]: Executor::run
pub trait Executor: Send + Sync {
    /// Whether steps of this kind run here. A cluster executor takes the
    /// steps that need a machine (cells, checks, searches, tasks); gates,
    /// screens, decisions and `finally` steps read stored results and
    /// evaluate on the head.
    fn takes(&self, kind: Kind) -> bool;

    /// How many steps may be in flight at once, given `--jobs` and the
    /// number of steps in the plan. A cluster's own scheduler decides
    /// placement, so it may take every ready step at once.
    fn in_flight(&self, jobs: usize, _steps: usize) -> usize {
        jobs
    }

    /// Run one ready step to its end. A step that is stored (and not
    /// forced) ends `cached` without running; a failure is never stored.
    fn run(self: Arc<Self>, step: ReadyStep) -> BoxFuture<'static, StepOutcome>;

    /// The run was interrupted (Ctrl-C): stop what this executor started
    /// and that is still going. The scheduler has aborted the steps' tasks.
    fn cancel_all(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }

    /// What the run record keeps under `extra.jobs` (the jobs this executor
    /// submitted and how they ended); None for nothing.
    fn jobs(&self) -> BoxFuture<'_, Option<Value>> {
        Box::pin(async { None })
    }
}

/// How an executor is started for one run: chosen by name in
/// `crate::executor::REGISTRY`, called once when the run starts, after the
/// plan is made. An error (no `sbatch`, a plan it cannot run) stops the run
/// before anything runs.
pub type Start = fn(&RunSpec<'_>) -> Result<Arc<dyn Executor>, StartError>;

/// Why an executor could not start: each executor's own error type (the
/// Slurm head's is `slurm::SlurmError`), shown by its message.
pub type StartError = Box<dyn std::error::Error + Send + Sync>;

/// What an executor is told when a run starts.
pub struct RunSpec<'a> {
    pub plan: &'a Plan,
    /// Steps `--only` selected (all without it).
    pub selected: &'a [bool],
    /// Steps `--force` reruns.
    pub forced: &'a BTreeSet<usize>,
    pub store: &'a Store,
    pub run_id: &'a str,
    /// `--keep-going`.
    pub keep_going: bool,
    /// `--loadgen-workers`, for the cells it measures.
    pub loadgen_workers: u32,
}

/// A step whose dependencies are settled, taken out of the plan: what an
/// executor needs to run it.
pub struct ReadyStep {
    /// Its position in the plan (`plan.nodes`).
    pub index: usize,
    pub kind: Kind,
    /// Its name in the plan (`plan.nodes[index].name`).
    pub name: String,
    pub fingerprint: Fingerprint,
    /// The step as a step document: its key (the preimage stored with its
    /// result) and how to run it (a cell is measured as its document says).
    pub document: StepDocument,
    pub forced: bool,
    /// The stored results it reads (gates, screens, decisions), when it
    /// will evaluate.
    pub inputs: Option<Value>,
    pub server: Option<usize>,
    /// Whether the server counted this step among its users (it was due to
    /// run): only then does finishing it release the server. A step the plan
    /// found stored is launched to report its verdict, and must not.
    pub counted: bool,
    /// A search's probes: how to name, fingerprint and judge them.
    pub probe_site: Option<ProbeSite>,
    /// A gate's or screen's cells that `extra-repeats` may measure again.
    pub extra_sites: Vec<crate::plan::extra_repeats::CellSite>,
}

/// How a step ended, for the scheduler.
#[derive(Debug, Clone)]
pub struct StepOutcome {
    pub ending: Ending,
    /// One line for the terminal (and the run record).
    pub detail: String,
    /// Evidence worth keeping in the run record (a log tail).
    pub evidence: Option<String>,
    pub duration: Duration,
    /// False for a result taken from the store.
    pub executed: bool,
    /// What from outside failed it, when it was one of the faults a user
    /// acts on (`run --json`'s `fault`).
    pub fault: Option<Fault>,
}

impl StepOutcome {
    /// A step that ended without executing (skipped, stored, or a server,
    /// which starts when its steps ask for it).
    pub fn without_work(ending: Ending, detail: String) -> StepOutcome {
        StepOutcome { ending, detail, evidence: None, duration: Duration::ZERO, executed: false, fault: None }
    }
}

words! {
    /// A failure that came from outside the recipe, classified for
    /// `anvil run --json` (the step's `detail` says what to do).
    pub enum Fault {
        /// A file it reads changed after the plan fingerprinted it.
        InputChanged = "input-changed",
        /// Its server went silent (`stall-timeout`); it is restarted.
        ServerStalled = "server-stalled",
        /// Its result did not fit on the store's disk (or the disk failed).
        DiskFull = "disk-full",
        /// Its requests failed past `abort-on-errors`: stored, not eligible.
        ErrorStorm = "error-storm",
    }
}

words! {
    /// How a step ended in this run.
    pub enum Ending {
        Ran = "ran",
        Cached = "cached",
        Failed = "failed",
        Rejected = "rejected",
        Skipped = "skipped",
    }
}

impl Ending {
    /// The run record's word for how a step ended (a rejection is a stored result).
    pub fn record_status(self) -> NodeStatus {
        match self {
            Ending::Ran | Ending::Rejected => NodeStatus::Ran,
            Ending::Cached => NodeStatus::Cached,
            Ending::Failed => NodeStatus::Failed,
            Ending::Skipped => NodeStatus::Skipped,
        }
    }

    /// The same for a `finally` step, which is never stored.
    pub fn finally_status(self) -> NodeStatus {
        match self {
            Ending::Ran => NodeStatus::FinallyRan,
            Ending::Cached => NodeStatus::FinallyCached,
            Ending::Failed => NodeStatus::FinallyFailed,
            Ending::Rejected => NodeStatus::FinallyRejected,
            Ending::Skipped => NodeStatus::FinallySkipped,
        }
    }
}
