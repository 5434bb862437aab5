//! anvil-loadgen: the load generator and the capacity-v4 measurement
//! protocol. [`run_cell`] measures one cell (one server x one workload) and
//! returns its `anvil-serving.benchmark/v1` artifact; see docs/metrics.md
//! for every metric's definition.

// The artifact is one large `json!` literal.
#![recursion_limit = "256"]

mod error;
#[cfg(test)]
#[path = "../../../fuzz/harness.rs"]
mod fuzz_harness;
mod observe;
mod output;
mod run;
mod send;
mod workload;

use anyhow::Context as _;
use serde::{Deserialize, Serialize};

pub use anvil_tokens::{TokenizerSpec, hf_cache as tokenizer_cache};
pub use error::{CellError, SpecError};
pub use observe::failure::{FailedRequest, Failure, FailureClass};
pub use observe::precision::{Look, LookedAt, StoppingRecord};
/// The model server the over-saturation rules are judged against (tests, benches).
#[doc(hidden)]
pub use observe::queue_model;
pub use observe::record::{AgentCallRecord, ControlledOutput, RequestRecord};
pub use observe::saturation::{FlightLog, Saturated, SaturationWatch};
pub use observe::sse;
pub use output::answers::{Answer, Answers, digest as answer_digest};
pub use output::artifact::{PROTOCOL, SCHEMA};
pub use output::benchmark::{
    AcrossRepeats, ArrivalDoc, Benchmark, FieldSummary, GpuReadings, GpuTelemetry, RepeatRun, Repeats,
    ReplicaMetrics, StageFigures, TargetLabel, Telemetry, WarmupCounts,
};
pub use output::client_error::ClientError;
pub use output::drain::{self, Drain};
pub use output::ending::{EndReason, Ending};
pub use output::interval::{Estimate, Statistic, estimate};
pub use output::jobs::{Jobs, TaskRow};
pub use output::offered::{CapHolds, LoadAxis, OfferedLoad};
pub use output::series::Series;
pub use output::server_series::{
    ReplicaSeries, SeriesSample, ServerDerived, derive as derive_server_figures,
};
pub use output::stats::{Distribution, KeyStyle, nearest_rank, quantile_interval_ranks, write_distribution};
pub use output::steady_state::SteadyState;
pub use output::student_t::Level;
pub use output::table::render_table;
pub use output::tokens::TokenAccount;
pub use run::LoadMargins;
pub use workload::agent_trace::{
    AgentCall, AgentTask, AgentTrace, AgentTraceSummary, CallPrompt, CallTimes, CriticalPath,
    check_file as check_agent_trace,
};
pub use workload::answer_budget::parse as parse_answer_budget;
pub use workload::calibrate::{Calibration, Probe};
pub use workload::canary::CanaryResult;
pub use workload::error_budget::{DEFAULT_AFTER as DEFAULT_ERROR_BUDGET_AFTER, ErrorBudget};
pub use workload::input_check::{
    FileProblem, InputSummary, UNKNOWN_KEYS_NAMED, UnknownKey, check_dataset, check_trace,
};
pub use workload::options::{OptionKind, REQUEST_OPTIONS, RequestOption, RequestOptions, option_setting};
pub use workload::prompt::marker;
pub use workload::spec::{
    Api, Arrival, Balance, CellContext, CellSpec, Connect, OutputPolicy, Progress, PromptCacheMode, Slo,
    SloFrom, Stage, Target, ThinkingMode,
};
pub use workload::stopping::{DEFAULT_MIN_REQUESTS, StoppingRule, watched as watched_metric};
pub use workload::traffic::{
    AgentSpec, AgentTraceFormat, DatasetFormat, DatasetSpec, SessionSpec, TraceFormat, TraceSpec, Traffic,
};

/// What a finished cell hands back.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CellReport {
    /// The full benchmark/v1 document.
    pub artifact: serde_json::Value,
    /// Raw per-request records (also inside `artifact.request_timings`).
    pub records: Vec<RequestRecord>,
    /// With `keep_answers_bytes`: what the model answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answers: Option<Answers>,
}

/// A measured cell whose records live in its record log (unlinked
/// temporary files), not in memory: [`StreamedCell::write_artifact`]
/// writes the benchmark/v1 document from them.
pub struct StreamedCell {
    /// The benchmark/v1 document, except that `request_timings` and
    /// `failures` are empty: they are written from the record log. Set its
    /// fields (or add keys of your own to `other`) before writing.
    pub artifact: Benchmark,
    store: output::record_log::Stored,
    /// With `keep_answers_bytes`: what the model answered (not in the artifact).
    pub answers: Option<Answers>,
}

impl StreamedCell {
    /// Writes `artifact` (this cell's, with any keys added) as pretty JSON,
    /// exactly as `serde_json::to_writer_pretty` of the whole document
    /// would, streaming `request_timings` and `failures` from the records.
    pub fn write_artifact(&self, artifact: &Benchmark, out: &mut impl std::io::Write) -> std::io::Result<()> {
        let document = serde_json::to_value(artifact)?;
        output::artifact::write_pretty(&document, &self.store, out)
    }

    /// [`StreamedCell::write_artifact`] into a new file at `path`; returns its size.
    pub fn write_artifact_file(&self, artifact: &Benchmark, path: &std::path::Path) -> std::io::Result<u64> {
        let file = std::fs::File::create(path)?;
        let mut out = std::io::BufWriter::with_capacity(256 * 1024, file);
        self.write_artifact(artifact, &mut out)?;
        let file = out.into_inner().map_err(|e| e.into_error())?;
        file.sync_data()?;
        Ok(file.metadata()?.len())
    }

    /// The per-request records, read back one at a time would be cheaper;
    /// this parses them all (for tests and benches).
    pub fn records(&self) -> std::io::Result<Vec<RequestRecord>> {
        self.store.records()
    }

    /// The failed requests, at most `limit` of them (for error details).
    pub fn failures(&self, limit: usize) -> std::io::Result<Vec<FailedRequest>> {
        let failed = self.store.records()?.into_iter().filter_map(|r| {
            Some(FailedRequest {
                request_index: r.request_index,
                http_status: r.http_status,
                failure: r.failure?,
            })
        });
        Ok(failed.take(limit).collect())
    }

    /// The whole artifact as one value, every record in memory.
    pub fn into_report(self) -> Result<CellReport, CellError> {
        let records = if self.store.kept.is_empty() {
            self.store.records().map_err(CellError::measurement)?
        } else {
            self.store.kept.clone()
        };
        let document = serde_json::to_value(&self.artifact).map_err(CellError::measurement)?;
        let artifact =
            output::artifact::materialize(document, &self.store).map_err(CellError::measurement)?;
        Ok(CellReport { artifact, records, answers: self.answers })
    }
}

/// How many open-loop arrivals stage number `index` of a staged cell has
/// in repeat `repeat` under `seed` (its arrivals are seeded, so this is
/// known before the run: an uncapped stage's cap is this count).
pub fn stage_arrivals(stage: &Stage, seed: u64, repeat: u32, index: u32) -> usize {
    if matches!(stage.arrival, Arrival::ClosedLoop) {
        return 0;
    }
    let duration = std::time::Duration::from_millis(stage.duration_ms);
    workload::stages::arrivals_in(std::time::Instant::now(), duration, stage.arrival, seed, repeat, index)
        .len()
}

/// Measures one cell against `targets` (several targets = replicas) and
/// returns the whole artifact in memory; [`run_cell_streamed`] keeps the
/// records on disk instead, so memory does not grow with the request count.
pub async fn run_cell(
    spec: &CellSpec,
    targets: &[Target],
    ctx: &CellContext,
    progress: &(dyn Fn(&Progress) + Send + Sync),
) -> Result<CellReport, CellError> {
    run_cell_inner(spec, targets, ctx, progress, std::env::temp_dir(), true).await?.into_report()
}

/// Measures one cell against `targets` (several targets = replicas),
/// streaming each finished record into unlinked temporary files in
/// `scratch_dir` (best: the directory the artifact will be written to).
///
/// The measurement runs on a dedicated thread with its own tokio runtime
/// (`ctx.loadgen_workers` worker threads), apart from the caller's (which
/// may host the simulated engine or a UI), so their work cannot delay our
/// timestamps;
/// `progress` is called on the caller's task after each measured request.
/// Dropping the returned future cancels the measurement.
pub async fn run_cell_streamed(
    spec: &CellSpec,
    targets: &[Target],
    ctx: &CellContext,
    progress: &(dyn Fn(&Progress) + Send + Sync),
    scratch_dir: &std::path::Path,
) -> Result<StreamedCell, CellError> {
    run_cell_inner(spec, targets, ctx, progress, scratch_dir.to_path_buf(), false).await
}

async fn run_cell_inner(
    spec: &CellSpec,
    targets: &[Target],
    ctx: &CellContext,
    progress: &(dyn Fn(&Progress) + Send + Sync),
    scratch_dir: std::path::PathBuf,
    keep_records: bool,
) -> Result<StreamedCell, CellError> {
    run::validate(spec, targets)?;
    // Trace and dataset files are read once, here; a trace or sessions fix the request count.
    let staged = (!spec.stages.is_empty()).then_some(workload::stages::UNMEASURED_INDEX_BASE);
    let source = workload::source::Source::load(&spec.traffic, spec.seed, spec.requests, spec.repeat, staged)
        .with_context(|| format!("cell `{}`", spec.name))
        .map_err(CellError::input)?;
    let mut spec = spec.clone();
    if let Some(n) = source.requests() {
        spec.requests = u32::try_from(n).map_err(|_| {
            CellError::Input(format!("cell `{}`: more than 4 billion requests per repeat", spec.name))
        })?;
    }
    let spec = &spec;
    let (progress_tx, mut progress_rx) = tokio::sync::mpsc::unbounded_channel();
    let (result_tx, mut result_rx) = tokio::sync::oneshot::channel();
    let (spec_owned, targets_owned, ctx_owned) = (spec.clone(), targets.to_vec(), ctx.clone());
    std::thread::Builder::new().name(format!("anvil-loadgen-{}", spec.name)).spawn(move || {
        let mut result_tx = result_tx;
        // One worker: everything on one thread, no work stealing to pay for.
        let runtime = match ctx_owned.workers() {
            1 => tokio::runtime::Builder::new_current_thread().enable_all().build(),
            n => tokio::runtime::Builder::new_multi_thread()
                .worker_threads(n as usize)
                .thread_name("anvil-loadgen-worker")
                .enable_all()
                .build(),
        };
        let result = match runtime {
            Ok(rt) => rt.block_on(async {
                tokio::select! {
                    r = run::measure(spec_owned, source, targets_owned, ctx_owned, progress_tx, scratch_dir, keep_records) => Some(r),
                    () = result_tx.closed() => None, // the caller went away
                }
            }),
            Err(e) => Some(Err(anyhow::anyhow!("starting the load generator runtime: {e}"))),
        };
        if let Some(result) = result {
            let _ = result_tx.send(result);
        }
    })
    .map_err(CellError::measurement)?;
    let output = loop {
        tokio::select! {
            Some(p) = progress_rx.recv() => progress(&p),
            r = &mut result_rx => break r
                .map_err(|_| CellError::Measurement("the load generator thread died".into()))?
                .map_err(CellError::measurement)?,
        }
    };
    while let Ok(p) = progress_rx.try_recv() {
        progress(&p);
    }
    let artifact = output::artifact::build(spec, targets, ctx, &output)
        .context("reading the request records")
        .map_err(CellError::measurement)?;
    Ok(StreamedCell { artifact, store: output.store, answers: output.answers })
}
