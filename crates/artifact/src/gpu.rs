//! GPU telemetry of a cell: what `anvil_proc::GpuSampler` summarises and
//! the benchmark artifact stores under `telemetry.gpu`, one type for both.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The GPU sampler's summary over the cell (`anvil_proc::GpuSampler`), or
/// why there is none (`available: false`, `why`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GpuTelemetry {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub available: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_s: Option<f64>,
    /// By GPU id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpus: Option<BTreeMap<String, GpuReadings>>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// One GPU's readings: how many, and each field's mean, min and max
/// (`power_w`, `sm_clock_mhz`, `mem_clock_mhz`, `memory_used_mib`,
/// `temperature_c`, `utilization_pct`, …).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GpuReadings {
    #[serde(default)]
    pub samples: u64,
    #[serde(flatten)]
    pub fields: BTreeMap<String, FieldSummary>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct FieldSummary {
    pub mean: f64,
    pub min: f64,
    pub max: f64,
}
