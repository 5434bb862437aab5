//! `anvil-serving.benchmark/v1`, one cell's artifact, as one serde type:
//! written through it (field order is the document's key order) and read
//! through it. The reference fields keep the reference's meaning; the rest
//! are anvil's additions (docs/metrics.md). Sub-documents whose shape is
//! the statistics' own (metrics, repeats, series, per-target figures) are
//! JSON values built by their functions in [`super::artifact`]. Reading
//! tolerates unknown fields (a newer anvil's, kept in `other`) and missing
//! ones (an older anvil's: their defaults).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use super::server_series::ReplicaMetrics;
use serde_json::{Map, Value};

use crate::output::offered::{CapHolds, OfferedLoad};
use crate::workload::calibrate::Calibration;
use crate::workload::spec::{Api, Balance, CellSpec, Slo, ThinkingMode};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Benchmark {
    pub schema: String,
    pub measurement_protocol: String,
    /// Always `[redacted]`: no endpoint or key is written.
    pub base_url: String,
    pub clock_domain_id: Value,
    /// Performance-eligible requests.
    pub completed: u64,
    /// Closed loop: the workers; open loop: the in-flight cap.
    pub concurrency: u32,
    /// Filled by anvil's planner (null from the load generator alone).
    pub configuration_fingerprint: Option<String>,
    /// Planned context → request count.
    pub context_distribution: BTreeMap<String, u64>,
    pub context_seed: u64,
    pub context_tokens: u64,
    pub controlled_output_policy: String,
    pub engine: String,
    /// Attempted − eligible.
    pub failed: u64,
    /// Written from the record log (empty in memory).
    pub failures: Vec<Value>,
    pub finished_at: String,
    pub finished_at_unix_ns: u128,
    pub gpu: Option<String>,
    pub manifest: Value,
    pub max_context_tokens: Option<u64>,
    pub max_tokens: u32,
    pub metric_population: Value,
    /// Every distribution and aggregate, by name (docs/metrics.md).
    pub metrics: Map<String, Value>,
    pub model: String,
    pub performance_eligible: bool,
    pub prompt_cache_mode: String,
    pub request_canaries: bool,
    /// Written from the record log (empty in memory).
    pub request_timings: Vec<Value>,
    /// Attempted, all repeats.
    pub requests: u64,
    pub response_words: u32,
    pub responses_received: u64,
    pub run_id: String,
    pub sampling: Value,
    pub serve_flags: Value,
    pub shared_prefix_tokens: u64,
    pub source_recipe: Option<String>,
    pub started_at: String,
    pub started_at_unix_ns: u128,
    pub tier: Value,
    pub timestamp_precision: String,
    pub timing_methodology: Value,
    pub wall_clock_ms: f64,
    // --- anvil additions ---
    pub cell: String,
    pub api: Api,
    pub arrival: ArrivalDoc,
    /// Measured against anvil's simulated engine.
    pub simulated: bool,
    pub balance: Balance,
    pub targets: Vec<TargetLabel>,
    pub per_target: Value,
    /// Null for a staged cell (its stages' durations fix its count).
    pub requests_per_repeat: Option<u32>,
    pub repeat: u32,
    pub repeats: Repeats,
    pub failure_counts: BTreeMap<String, u64>,
    pub slo: Option<Slo>,
    pub calibration: Option<Calibration>,
    pub warmup: WarmupCounts,
    pub thinking_mode: ThinkingMode,
    pub request_timeout_ms: u64,
    pub loadgen_version: String,
    /// The load generator's threads for this cell (`--loadgen-workers`);
    /// absent in artifacts from before it was recorded (one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loadgen_workers: Option<u32>,
    pub connections: Value,
    pub series: crate::output::series::Series,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stages: Option<Vec<StageFigures>>,
    /// Replayed traffic: what it was (null: synthetic prompts).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub traffic: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_salt: Option<u64>,
    /// The cell as the load generator ran it, every default applied.
    pub resolved_cell: CellSpec,
    /// Where the cell sits on a load axis, as measured.
    pub offered_load: Option<OfferedLoad>,
    /// Open loop: the in-flight cap and how often it held a due request back.
    pub in_flight_cap: Option<CapHolds>,
    /// How the measurement ended (absent from artifacts written before anvil
    /// recorded it, which all ran to completion).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ending: Option<super::ending::Ending>,
    /// How far the client's own stamps may be off (docs/metrics.md "The client's own error").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_error: Option<super::client_error::ClientError>,
    /// `steady-load`: the unmeasured requests around the measured ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_margins: Option<crate::run::LoadMargins>,
    /// The steady-state window and the latencies over it (one-run cells
    /// without stages; docs/metrics.md "Steady state").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady_state: Option<super::steady_state::SteadyState>,
    /// A stopping rule's looks and intervals (docs/metrics.md "Stopping rules").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopping: Option<crate::observe::precision::StoppingRecord>,
    /// The model's own tokenizer and the server's account of the prompts'
    /// tokens, joined to the plan (docs/metrics.md "Tokens").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<super::tokens::TokenAccount>,
    /// Agent traffic: each task's figures and the cell's job metrics
    /// (docs/workloads.md "Job metrics"); the latter also in `metrics`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jobs: Option<super::jobs::Jobs>,
    // --- added by anvil's cell executor ---
    /// The servers' Prometheus deltas and GPU samples over the cell.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<Telemetry>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_warmup: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    /// Each replica's start, in ms (0 for an external endpoint).
    pub server_startup_ms: Option<Vec<u64>>,
    /// Keys this version does not know (a newer anvil's, a caller's own).
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// `repeats`: each measured run's aggregates, and their spread.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Repeats {
    pub count: u32,
    pub runs: Vec<RepeatRun>,
    /// Per aggregate (in the order the load generator lists them): mean,
    /// stddev, a Student-t 95% CI, min, max over the repeats; null where no
    /// repeat had a value.
    pub across_repeats: Map<String, Value>,
}

impl Repeats {
    /// One aggregate's spread over the repeats, when it has one.
    pub fn across(&self, key: &str) -> Option<AcrossRepeats> {
        AcrossRepeats::deserialize(self.across_repeats.get(key)?).ok()
    }
}

/// One measured run of a repeated cell.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RepeatRun {
    pub repeat: u32,
    pub attempted: u64,
    pub completed: u64,
    pub wall_clock_ms: f64,
    /// `output_tokens` and the aggregates of [`Repeats::across_repeats`].
    #[serde(flatten)]
    pub metrics: Map<String, Value>,
}

/// An aggregate's spread over a cell's repeats.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct AcrossRepeats {
    pub mean: f64,
    pub stddev: Option<f64>,
    pub ci95_low: Option<f64>,
    pub ci95_high: Option<f64>,
    pub min: f64,
    pub max: f64,
    pub samples: usize,
}

/// One load stage's window and figures (`stages[]`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct StageFigures {
    pub stage: u32,
    pub arrival: ArrivalDoc,
    /// Closed loop: the workers; open loop: the in-flight cap.
    pub concurrency: u32,
    pub duration_ms: u64,
    /// `[start, end)` in ms after the run's start.
    pub window_ms: [f64; 2],
    pub attempted: u64,
    pub completed: u64,
    pub failed: u64,
    pub wall_clock_ms: f64,
    /// The stage's own distributions and aggregates.
    pub metrics: Map<String, Value>,
}

impl StageFigures {
    pub fn metric(&self, key: &str) -> &Value {
        self.metrics.get(key).unwrap_or(&Value::Null)
    }
}

/// When requests were sent: `kind` `closed_loop`, `poisson`, `constant`
/// (with `rate_per_s`) or `trace` (with the replay's `time_scale`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ArrivalDoc {
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_per_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_scale: Option<Value>,
}

/// What the servers and GPUs reported over the cell.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Telemetry {
    /// Each replica's Prometheus counters, after minus before.
    pub server_metrics_delta: Vec<ReplicaMetrics>,
    pub gpu: GpuTelemetry,
    /// Each replica's metrics sampled during the cell.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub server_metrics_series: Vec<super::server_series::ReplicaSeries>,
    /// What the server's counters say per cell (acceptance, energy per token).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_derived: Option<super::server_series::ServerDerived>,
}

pub use anvil_artifact::gpu::{FieldSummary, GpuReadings, GpuTelemetry};

/// A target as the artifact names it: its label only.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TargetLabel {
    pub label: String,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct WarmupCounts {
    pub requests: u32,
    pub completed: u32,
    pub failed: u32,
}

impl Benchmark {
    /// One metric by name (`null` when the cell has none).
    pub fn metric(&self, key: &str) -> &Value {
        self.metrics.get(key).unwrap_or(&Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The GPU sampler's summary (anvil-proc) and the no-GPU form read into
    /// the artifact's type and write back the same JSON.
    #[test]
    fn gpu_telemetry_reads_the_samplers_summary() {
        let sampled = json!({
            "source": "nvidia-smi", "interval_ms": 500, "duration_s": 2.5,
            "gpus": {"0": {"samples": 5, "power_w": {"mean": 300.5, "min": 290.0, "max": 310.0}}},
        });
        let gpu: GpuTelemetry = serde_json::from_value(sampled.clone()).unwrap();
        assert_eq!(gpu.gpus.as_ref().unwrap()["0"].fields["power_w"].max, 310.0);
        assert_eq!(serde_json::to_value(&gpu).unwrap(), sampled);
        let none = json!({"available": false, "why": "nvidia-smi not found or no GPUs assigned"});
        let gpu: GpuTelemetry = serde_json::from_value(none.clone()).unwrap();
        assert_eq!(serde_json::to_value(&gpu).unwrap(), none);
    }

    /// An artifact written by an older load generator (no `resolved_cell`,
    /// `offered_load`, intervals) reads, with defaults for what it lacks.
    #[test]
    fn an_older_artifact_reads() {
        let old = json!({"schema": "anvil-serving.benchmark/v1", "completed": 3, "metrics": {"ttft_p50_ms": 1.5},
            "arrival": {"kind": "closed_loop"}, "targets": [{"label": "sim"}], "some_future_key": 1});
        let b: Benchmark = serde_json::from_value(old).unwrap();
        assert_eq!((b.completed, b.metric("ttft_p50_ms").as_f64()), (3, Some(1.5)));
        assert!(b.offered_load.is_none());
        assert_eq!(b.other["some_future_key"], 1);
    }
}
