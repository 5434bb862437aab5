//! What a report shows, read once from a store: the run record, every
//! step's stored result as its kind's type, each cell's per-request timings
//! (only the fields the plots use) and the campaign's decision summary.
//!
//! Nothing here renders; `html` and `export` read a [`Report`].

use std::collections::BTreeMap;
use std::path::PathBuf;

use anvil_store::{NodeStatus, RunRecord, Store};
use serde::Deserialize;
use serde_json::Value;

use super::decision_summary::DecisionSummary;
use crate::results::{
    self, CellResult, CheckResult, DecisionResult, FailedCell, FailedCheck, FailureClassCount, GateResult,
    ScreenResult, SearchResult, TaskResult,
};
use crate::run_extra::{Invocation, RunExtra};

/// A campaign's run, ready to render.
pub struct Report {
    pub campaign: String,
    pub description: Option<String>,
    /// Where the run came from: "recipe … (run …)", "bundle … (digest)".
    pub source: String,
    pub run: RunRecord,
    /// The run record's anvil part, read once.
    pub extra: RunExtra,
    /// Whether the stored files can be linked (`file://`): false for a
    /// bundle, whose temporary store is gone once the page is written.
    pub link_files: bool,
    /// `anvil-serving.benchmark-decision-summary/v1` of this run, when found.
    pub summary: Option<DecisionSummary>,
    /// Steps in the run record's order (servers left out).
    pub steps: Vec<Step>,
}

pub struct Step {
    pub name: String,
    pub kind: String,
    pub fingerprint: String,
    /// The run record's word for how it ended (ran, cached, failed, …).
    pub status: String,
    pub duration_ms: u64,
    pub detail: String,
    pub description: Option<String>,
    /// The stored entry's folder and file names, when stored.
    pub dir: Option<PathBuf>,
    pub files: Vec<String>,
    pub body: Body,
    /// What it kept of why it failed in this run (a cell that measured
    /// nothing, a check that could not complete), when it did.
    pub failed: Option<Failed>,
}

/// A failed step's evidence, as its run kept it (`failed/<run_id>/<fingerprint>/`).
pub struct Failed {
    pub why: FailedWhy,
    /// The evidence folder (what was sent and received, the server's log).
    pub dir: PathBuf,
}

pub enum FailedWhy {
    Cell(FailedCell),
    Check(FailedCheck),
}

impl Failed {
    /// The failure classes, what counts most first, each with its first reply.
    pub fn classes(&self) -> &[FailureClassCount] {
        match &self.why {
            FailedWhy::Cell(cell) => &cell.classes,
            FailedWhy::Check(check) => &check.classes,
        }
    }
}

pub enum Body {
    Cell(Box<Cell>),
    Screen(ScreenResult),
    Gate(GateResult),
    Check(CheckResult),
    Decision(DecisionResult),
    Task(TaskResult),
    Search(SearchResult),
    /// A kind this anvil has no section for (searches, stages…): shown as JSON.
    Other(Value),
    /// Nothing stored (failed or skipped), or what is stored does not read.
    Missing(String),
}

/// A measured cell: its typed result, the parts of its artifact the page
/// shows, and where the artifact is (its per-request records are streamed
/// from there when the cell's plots are drawn, one cell at a time).
pub struct Cell {
    pub result: CellResult,
    pub artifact: Artifact,
    pub artifact_file: std::path::PathBuf,
}

/// The fields of an `anvil-serving.benchmark/v1` artifact the report uses.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Artifact {
    pub engine: Option<String>,
    pub model: Option<String>,
    pub concurrency: Option<f64>,
    pub arrival: anvil_loadgen::ArrivalDoc,
    pub requests: Option<u64>,
    pub completed: Option<u64>,
    pub failed: Option<u64>,
    pub context_tokens: Option<u64>,
    pub metrics: Value,
    pub failure_counts: BTreeMap<String, u64>,
    pub repeats: Value,
    pub telemetry: Option<anvil_loadgen::Telemetry>,
    /// The tokenizer and the server's account of the prompts' tokens.
    pub tokens: Option<anvil_loadgen::TokenAccount>,
    pub targets: Vec<anvil_loadgen::TargetLabel>,
    pub wall_clock_ms: Option<f64>,
    pub simulated: Option<bool>,
    /// Load stages (staged cells only) and the per-second series.
    pub stages: Vec<anvil_loadgen::StageFigures>,
    pub series: anvil_loadgen::Series,
    /// Agent traffic only: the job metrics and one row per task.
    pub jobs: Option<Jobs>,
}

/// The artifact's `jobs` (docs/workloads.md "Job metrics"): the load
/// generator's own type, so a renamed field fails to build, not to show.
pub use anvil_loadgen::{Jobs, TaskRow};

/// One request as the plots need it (ms after the run started, or
/// durations in ms): each record of `request_timings` is parsed straight
/// into one, never the whole list at once.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub struct Timing {
    pub request_index: u64,
    pub repeat: u32,
    pub actual_send_ms: f64,
    pub finished_ms: f64,
    pub ttft_ms: Option<f64>,
    pub time_to_first_output_ms: Option<f64>,
    pub e2e_ms: Option<f64>,
    pub tpot_ms: Option<f64>,
    pub decode_tok_s: Option<f64>,
    pub output_tokens: Option<u64>,
    pub chunk_gaps_us: Vec<u32>,
    pub performance_eligible: bool,
    pub failure: Option<FailureView>,
    pub request_canary: Option<CanaryView>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub struct FailureView {
    pub class: String,
    pub detail: String,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub struct CanaryView {
    pub passed: bool,
}

impl Cell {
    /// Where the cell sits on a load axis, by the load it offered: its
    /// measured request rate (open loop, traces) or its concurrency
    /// (closed loop), as the load generator recorded it. `None` for a
    /// result stored before anvil recorded it.
    pub fn load_axis(&self) -> Option<(&'static str, f64)> {
        let offered = &self.result.load.as_ref()?.offered;
        Some((offered.axis.label(), offered.value?))
    }

    /// The server (replica label) the cell measured.
    pub fn server(&self) -> String {
        let labels: Vec<&str> = self.artifact.targets.iter().map(|t| t.label.as_str()).collect();
        if labels.is_empty() { self.result.engine.clone() } else { labels.join("+") }
    }

    pub fn metric(&self, key: &str) -> Option<f64> {
        self.result.metric(key).as_f64()
    }
}

impl Report {
    pub fn cells(&self) -> impl Iterator<Item = (&Step, &Cell)> {
        self.steps.iter().filter_map(|s| match &s.body {
            Body::Cell(c) => Some((s, c.as_ref())),
            _ => None,
        })
    }

    /// Names of the cells measured on a simulated engine.
    pub fn simulated_cells(&self) -> Vec<&str> {
        self.cells().filter(|(_, c)| c.result.simulated).map(|(s, _)| s.name.as_str()).collect()
    }

    /// The decision summary's headline cells (by evidence fingerprint), in its order.
    pub fn headline_names(&self) -> Vec<String> {
        let Some(summary) = &self.summary else { return Vec::new() };
        summary
            .headline_results
            .iter()
            .filter_map(|row| {
                self.steps.iter().find(|s| s.fingerprint == row.evidence).map(|s| s.name.clone())
            })
            .collect()
    }

    pub fn environment(&self) -> &crate::environment::Environment {
        &self.extra.environment
    }

    pub fn invocation(&self) -> &Invocation {
        &self.extra.invocation
    }

    /// The version of the anvil that ran, and whether it was an unoptimised
    /// build (as its run record states).
    pub fn anvil_version(&self) -> String {
        let environment = self.environment();
        let version =
            environment.anvil_version.clone().unwrap_or_else(|| env!("CARGO_PKG_VERSION").to_string());
        match environment.anvil_optimised {
            Some(false) => format!("{version} (unoptimised build)"),
            _ => version,
        }
    }
}

/// Where to look for what the run did not store itself.
pub struct Sources {
    /// The run's campaign outputs folder (`results/<campaign>/`, or a bundle's `outputs/`).
    pub outputs: Option<PathBuf>,
    pub label: String,
    pub link_files: bool,
}

/// Read a run and everything it stored.
///
/// Everything comes from the run's stored documents: its record (with the
/// descriptions the recipe gave when the run started), its entries and its
/// outputs. The recipe file is never read: it may have changed since.
pub fn load(store: &Store, run: RunRecord, sources: Sources) -> Report {
    let extra = RunExtra::of(&run);
    let description_of = |name: &str| extra.descriptions.get(name).cloned();
    let steps = run
        .nodes
        .iter()
        .filter(|n| n.kind != "server" && super::stored_outputs::is_step(n))
        .map(|node| {
            let entry =
                if node.status.stored() { store.read(&node.fingerprint).ok().flatten() } else { None };
            let body = match &entry {
                Some(entry) => body_of(&node.kind, entry),
                None => Body::Missing(format!(
                    "nothing stored: {} {}",
                    node.status.as_str(),
                    node.detail.as_deref().unwrap_or("")
                )),
            };
            Step {
                name: node.name.clone(),
                kind: node.kind.clone(),
                fingerprint: node.fingerprint.to_string(),
                status: node.status.as_str().to_string(),
                duration_ms: node.duration_ms.unwrap_or(0),
                detail: node.detail.clone().unwrap_or_default(),
                description: description_of(&node.name),
                dir: entry.as_ref().map(|e| e.dir.clone()),
                files: entry.map(|e| e.files.into_iter().map(|f| f.name).collect()).unwrap_or_default(),
                body,
                failed: (node.status == NodeStatus::Failed)
                    .then(|| failed_of(store, &run.run_id, &node.fingerprint))
                    .flatten(),
            }
        })
        .collect();
    let campaign = extra.campaign.clone().unwrap_or_else(|| run.recipe_path.clone());
    let summary = sources
        .outputs
        .as_deref()
        .and_then(|dir| std::fs::read(dir.join("decision-summary.json")).ok())
        .and_then(|bytes| DecisionSummary::from_slice(&bytes).ok())
        .filter(|s| summary_is_of(s, &run));
    Report {
        campaign,
        description: extra.campaign_description.clone(),
        source: sources.label,
        run,
        extra,
        link_files: sources.link_files,
        summary,
        steps,
    }
}

/// A decision summary belongs to a run when it was cut when the run
/// finished and its headline evidence is among the run's steps.
fn summary_is_of(summary: &DecisionSummary, run: &RunRecord) -> bool {
    if run.finished_at.as_deref() != Some(summary.evidence_cutoff.as_str()) {
        return false;
    }
    let fingerprints: Vec<String> = run.nodes.iter().map(|n| n.fingerprint.to_string()).collect();
    summary.headline_results.iter().all(|r| fingerprints.contains(&r.evidence))
}

/// The document a failed step kept with its run, if it kept one.
fn failed_of(store: &Store, run_id: &str, fingerprint: &anvil_store::Fingerprint) -> Option<Failed> {
    let dir = store.failed_dir(run_id, fingerprint);
    let read = |name: &str| std::fs::read(dir.join(name)).ok();
    let why = if let Some(bytes) = read("failed-cell.json") {
        FailedWhy::Cell(serde_json::from_slice(&bytes).ok()?)
    } else {
        FailedWhy::Check(serde_json::from_slice(&read("failed-check.json")?).ok()?)
    };
    Some(Failed { why, dir })
}

fn body_of(kind: &str, entry: &anvil_store::Entry) -> Body {
    let result = entry.result.clone();
    let unreadable =
        |e: serde_json::Error| Body::Missing(format!("stored result does not read as a {kind}: {e}"));
    match kind {
        "cell" => {
            let result: CellResult = match results::from_value(result) {
                Ok(r) => r,
                Err(e) => return unreadable(e),
            };
            let artifact_file = entry.path_of("benchmark.json");
            let artifact = read_artifact(&artifact_file).unwrap_or_default();
            Body::Cell(Box::new(Cell { result, artifact, artifact_file }))
        }
        "screen" => results::from_value(result).map_or_else(unreadable, Body::Screen),
        "gate" => results::from_value(result).map_or_else(unreadable, Body::Gate),
        "check" => results::from_value(result).map_or_else(unreadable, Body::Check),
        "decision" => results::from_value(result).map_or_else(unreadable, Body::Decision),
        "search" => results::from_value(result).map_or_else(unreadable, Body::Search),
        "task" | "finally" => match results::from_value(result.clone()) {
            Ok(task) => Body::Task(task),
            Err(_) => Body::Other(result),
        },
        _ => Body::Other(result),
    }
}

/// The parts of a stored artifact the page shows: its head, read without
/// its per-request lists.
fn read_artifact(path: &std::path::Path) -> Option<Artifact> {
    let head = anvil_evidence::artifact_file::head(path).ok()?;
    serde_json::from_value(Value::Object(head)).ok()
}
