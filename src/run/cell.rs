//! `cell` steps: one server × one workload, measured by the load generator
//! under the capacity-v4 protocol; the artifact is `anvil-serving.benchmark/v1`.

use anvil_loadgen::{Balance, Benchmark, CellContext, GpuTelemetry, Telemetry};
use serde_json::Value;

use super::outcome::{Failure, Produced, ProducedFile};
use super::server_metrics;
use super::servers::ServerInfo;
use crate::document::CellExec;
use crate::results::{self, CELL_RESULT_SCHEMA, CellLoad, CellResult, FailedCell};

/// Where a cell is measured: the facts its artifact carries besides the cell itself.
pub struct CellRun<'a> {
    pub fingerprint: &'a str,
    pub run_id: &'a str,
    pub recipe: &'a str,
    pub progress: &'a super::progress::Progress,
    /// The load generator's threads (`--loadgen-workers`).
    pub loadgen_workers: u32,
}

pub async fn run_cell(
    name: &str,
    cell: &CellExec,
    server: &ServerInfo,
    at: &CellRun<'_>,
) -> Result<Produced, Failure> {
    let (spec, balance) = (cell.cell.clone(), cell.balance);
    let mut context = cell_context(server, at, balance);
    let name = name.to_string();
    let display = at.progress;
    let progress = |p: &anvil_loadgen::Progress| display.cell(&name, p.done, p.total, p.tok_s, p.failed);
    let watch = ServerWatch::start(server).await;
    context.cache_block_tokens =
        server_metrics::cache_block_tokens(&watch.before).or(server.cache_block_tokens);
    // Records stream to disk as they finish, so memory does not grow with the request count.
    let scratch = tempfile::Builder::new()
        .prefix(&super::log_folder::cell_scratch_prefix())
        .tempdir()
        .map_err(|e| Failure::new(format!("a scratch folder for the cell: {e}")))?;
    let report =
        anvil_loadgen::run_cell_streamed(&spec, &server.targets, &context, &progress, scratch.path()).await;
    if let Ok(report) = &report
        && let Some(failure) = stalled(report, server)
    {
        // Its /metrics would hold every scrape to its timeout: nothing more is asked of it.
        watch.abort().await;
        return Err(failure);
    }
    let telemetry = watch.stop(server).await;
    let mut report = report.map_err(|e| Failure::new(format!("cell failed: {e:#}")))?;
    // The document without its per-request lists, which are written from the record log.
    let mut artifact = std::mem::take(&mut report.artifact);
    let output_tokens = artifact.metric("output_tokens").as_u64().unwrap_or(0);
    artifact.telemetry = Some(telemetry.into_artifact(output_tokens));
    artifact.server_warmup = Some(server.warmup.clone());
    artifact.configuration_fingerprint = Some(at.fingerprint.to_string());
    artifact.simulated = server.simulated;
    artifact.server_startup_ms = Some(server.startup_ms.clone());
    let measured = Measured { report, artifact, scratch };
    if measured.artifact.completed == 0 {
        return Err(failed_cell(measured, server));
    }
    stored_cell(measured, server, &spec)
}

/// What the load generator is told about where the cell runs.
fn cell_context(server: &ServerInfo, at: &CellRun<'_>, balance: Balance) -> CellContext {
    CellContext {
        engine: server.engine.clone(),
        simulated: server.simulated,
        gpu: server.gpu_label.clone(),
        serve_flags: server.serve_flags.clone(),
        run_id: at.run_id.to_string(),
        source_recipe: Some(at.recipe.to_string()),
        max_context_tokens: None,
        balance,
        loadgen_workers: at.loadgen_workers,
        cache_block_tokens: None,
    }
}

/// What is watched on the server while a cell runs: its metrics before and
/// after, their series, and its GPUs.
struct ServerWatch {
    before: Vec<server_metrics::Scrape>,
    series: server_metrics::SeriesSampling,
    sampler: Option<anvil_proc::GpuSampler>,
}

/// What the watch saw, for the artifact's `telemetry`.
struct Watched {
    before: Vec<server_metrics::Scrape>,
    after: Vec<server_metrics::Scrape>,
    series: Vec<anvil_loadgen::ReplicaSeries>,
    gpu: GpuTelemetry,
    server: ServerInfo,
}

impl ServerWatch {
    async fn start(server: &ServerInfo) -> ServerWatch {
        let before = server_metrics::scrape_all(server).await;
        let series = server_metrics::SeriesSampling::start(server);
        let sampler = anvil_proc::GpuSampler::start(&server.gpu_ids, std::time::Duration::from_millis(500));
        ServerWatch { before, series, sampler }
    }

    /// Stop watching without a last look (a stalled server would not answer).
    async fn abort(self) {
        self.series.abort();
        if let Some(sampler) = self.sampler {
            sampler.stop().await;
        }
    }

    async fn stop(self, server: &ServerInfo) -> Watched {
        let gpu = match self.sampler {
            Some(s) => s.stop().await,
            None => GpuTelemetry {
                available: Some(false),
                why: Some("nvidia-smi not found or no GPUs assigned".into()),
                ..GpuTelemetry::default()
            },
        };
        let series = self.series.stop().await;
        let after = server_metrics::scrape_all(server).await;
        Watched { before: self.before, after, series, gpu, server: server.clone() }
    }
}

impl Watched {
    fn into_artifact(self, output_tokens: u64) -> Telemetry {
        let server_metrics_delta = server_metrics::deltas(&self.server, &self.before, &self.after);
        Telemetry {
            server_derived: anvil_loadgen::derive_server_figures(&server_metrics_delta, output_tokens),
            server_metrics_delta,
            gpu: self.gpu,
            server_metrics_series: self.series,
        }
    }
}

/// The failure of a cell whose server stopped answering mid-cell.
fn stalled(report: &anvil_loadgen::StreamedCell, server: &ServerInfo) -> Option<Failure> {
    let ending = report.artifact.ending.as_ref().filter(|e| e.reason == anvil_loadgen::EndReason::Stalled)?;
    let counts = &report.artifact;
    Some(
        Failure::new(format!(
            "server `{}` stalled: {} ({} ok, {} failed, {} unsent); it is restarted before its next step",
            server.name, ending.detail, counts.completed, counts.failed, ending.unsent
        ))
        .with_fault(crate::executor::interface::Fault::ServerStalled),
    )
}

/// A measured cell: the load generator's report, its artifact (telemetry
/// added) and the scratch folder its records stream to.
struct Measured {
    report: anvil_loadgen::StreamedCell,
    artifact: Benchmark,
    scratch: tempfile::TempDir,
}

/// A cell that completed no request: nothing to store as a result; what was
/// sent and received, and why it failed, is kept with the run as a failed
/// measurement.
fn failed_cell(measured: Measured, server: &ServerInfo) -> Failure {
    let Measured { report, artifact, scratch } = measured;
    let failures = report.failures(FAILURES_READ).unwrap_or_default();
    let stopped = artifact.ending.as_ref().filter(|e| e.stopped_early()).map(|e| e.detail.clone());
    let failed = FailedCell::from_failures(&failures, stopped);
    let path = scratch.path().join("benchmark.json");
    let mut evidence = vec![ProducedFile::Bytes {
        name: "failed-cell.json".into(),
        bytes: serde_json::to_vec_pretty(&failed).unwrap_or_default(),
    }];
    if report.write_artifact_file(&artifact, &path).is_ok() {
        evidence.push(ProducedFile::Scratch {
            name: "benchmark.json".into(),
            folder: scratch,
            file: "benchmark.json".into(),
        });
    }
    evidence.extend(server_logs(server));
    Failure::new(failed.reason.clone())
        .with_detail(serde_json::to_string(&failed).unwrap_or_default())
        .with_evidence(evidence)
}

/// A cell that completed requests: its result, its artifact, its kept
/// answers and its server's logs, to store.
fn stored_cell(
    measured: Measured,
    server: &ServerInfo,
    spec: &anvil_loadgen::CellSpec,
) -> Result<Produced, Failure> {
    let Measured { report, artifact, scratch } = measured;
    // The load generator always measures the offered load; only an
    // artifact read back from an older one lacks it.
    let load = artifact.offered_load.clone().map(|offered| CellLoad {
        resolved: artifact.resolved_cell.clone(),
        offered,
        in_flight_cap: artifact.in_flight_cap.clone(),
        targets: artifact.targets.iter().map(|t| t.label.clone()).collect(),
    });
    let mut result = CellResult { load, ..cell_result(server, &artifact) };
    let answers = report.answers.as_ref().map(|answers| {
        crate::quality::answers::for_cell(answers, &spec.traffic, server.simulated).map_err(Failure::new)
    });
    let answers = answers.transpose()?.map(|stored| {
        (result.answers, result.accuracy) = (Some(stored.kept), stored.accuracy);
        ProducedFile::Bytes { name: crate::results::ANSWERS_FILE.into(), bytes: stored.file }
    });
    let acceptance =
        artifact.telemetry.as_ref().and_then(|t| t.server_derived.as_ref()?.spec_acceptance_rate);
    let mut line = run_line(&result, server.simulated, acceptance);
    // Unique prompts the server had cached anyway: say so, loudly.
    if let Some(warning) = artifact.tokens.as_ref().and_then(|t| t.cold?.warning()) {
        line.push_str(&format!("; {warning}"));
    }
    let path = scratch.path().join("benchmark.json");
    report
        .write_artifact_file(&artifact, &path)
        .map_err(|e| Failure::new(format!("writing benchmark.json: {e}")))?;
    let mut files = vec![ProducedFile::Scratch {
        name: "benchmark.json".into(),
        folder: scratch,
        file: "benchmark.json".into(),
    }];
    files.extend(answers);
    files.extend(server_logs(server));
    let storm = artifact.ending.as_ref().is_some_and(|e| e.reason == anvil_loadgen::EndReason::ErrorStorm);
    let fault = storm.then_some(crate::executor::interface::Fault::ErrorStorm);
    Ok(Produced { result: results::to_value(&result), files, summary: line, fault, ..Produced::default() })
}

/// At most this many failed records are read to name a failed cell's classes.
const FAILURES_READ: usize = 10_000;

/// The server's logs as they stand, one file per replica.
fn server_logs(server: &ServerInfo) -> Vec<ProducedFile> {
    let logs = server.log_paths.iter().enumerate().filter(|(_, log)| log.exists());
    logs.map(|(i, log)| ProducedFile::Copy { name: format!("server-{i}.log"), from: log.clone() }).collect()
}

/// The cell's line in the run's output: its figures, the load it offered,
/// whether an in-flight cap held open-loop requests back, and whether the
/// server kept up (`over_saturated_at_end`: the verdict at the end, when it did not).
fn run_line(result: &CellResult, simulated: bool, acceptance: Option<f64>) -> String {
    let load = result.load.as_ref();
    let mut line = format!(
        "{} ok / {} failed, {:.1} tok/s aggregate, ttft p50 {:.1} ms",
        result.completed,
        result.failed,
        result.aggregate_tok_s.unwrap_or(0.0),
        result.ttft_p50_ms.unwrap_or(0.0),
    );
    if let Some(load) = load {
        line.push_str(&format!(", {}", load.offered_words()));
    }
    if let Some(cap) = load.and_then(|l| l.in_flight_cap.as_ref()).filter(|c| c.held_back()) {
        line.push_str(&format!(
            "; the in-flight cap of {} held {} requests back (up to {:.0} ms)",
            cap.limit, cap.held_requests, cap.longest_hold_ms
        ));
    }
    match &result.stopped_early {
        Some(ending) if ending.lost() => line.push_str(&format!(
            "; stopped early ({} unsent, {} cancelled): {}",
            ending.unsent, ending.cancelled, ending.detail
        )),
        Some(ending) => {
            line.push_str(&format!("; stopped by its rule ({} unsent): {}", ending.unsent, ending.detail))
        }
        None => {}
    }
    if let Some(rate) = acceptance {
        line.push_str(&format!(", draft acceptance {:.1}%", rate * 100.0));
    }
    if let Some(a) = &result.accuracy {
        line.push_str(&format!(
            ", accuracy {}/{} [{:.3}, {:.3}]",
            a.correct, a.n, a.share_ci95_low, a.share_ci95_high
        ));
    }
    // Completed, but the server never kept up: its numbers stand, marked.
    if let Some(drain) = &result.over_saturated_at_end {
        line.push_str(&format!("; over-saturated at the end: {}", drain.describe()));
    }
    if simulated {
        line.push_str(" (simulated)");
    }
    line
}

/// The stored result: the artifact's headline figures and its metrics.
fn cell_result(server: &ServerInfo, artifact: &Benchmark) -> CellResult {
    let metrics = Value::Object(artifact.metrics.clone());
    CellResult {
        load: None,
        stopped_early: artifact.ending.clone().filter(anvil_loadgen::Ending::stopped_early),
        over_saturated_at_end: artifact.ending.as_ref().and_then(|e| e.over_saturated_at_end()).cloned(),
        schema: CELL_RESULT_SCHEMA.into(),
        engine: server.engine.clone(),
        simulated: server.simulated,
        completed: artifact.completed,
        failed: artifact.failed,
        aggregate_tok_s: artifact.metric("throughput_tok_s").as_f64(),
        ttft_p50_ms: artifact.metric("ttft_p50_ms").as_f64(),
        ttft_p99_ms: artifact.metric("ttft_p99_ms").as_f64(),
        decode_tok_s_mean: artifact.metric("decode_tok_s_mean").as_f64(),
        wall_clock_ms: artifact.wall_clock_ms,
        performance_eligible: Some(artifact.performance_eligible),
        canaries_passed: artifact.metric("request_canary_passed").as_u64(),
        requests: Some(artifact.requests),
        repeats: Value::Object(artifact.repeats.across_repeats.clone()),
        metrics,
        answers: None,
        accuracy: None,
    }
}
