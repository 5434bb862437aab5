//! `anvil-serving.benchmark-workload-manifest/v1`: a campaign's workload
//! classes, the selection grid its cells ran, controls and metric
//! definitions. The selection comes from the cells' stored results (what
//! the load generator ran), never from the recipe.

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub const SCHEMA: &str = "anvil-serving.benchmark-workload-manifest/v1";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkloadManifest {
    pub schema: String,
    pub campaign_id: String,
    pub selection: Selection,
    pub workload_classes: Vec<WorkloadClass>,
    pub controls: Vec<String>,
    pub metrics: Vec<String>,
    /// Metric -> its definition in words.
    pub timing_definitions: serde_json::Map<String, Value>,
    pub statistics: Statistics,
    pub measurement_protocol: String,
}

/// The grid the campaign's cells ran, as resolved: every default applied.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Selection {
    /// Prompt-length targets of the cells sending synthetic prompts.
    pub contexts_actual_prompt_token_targets: Vec<u64>,
    /// Closed-loop concurrencies (open-loop cells are on `request_rates`).
    pub concurrency: Vec<u64>,
    /// Open-loop cells' measured request rates (req/s, one decimal).
    #[serde(default)]
    pub request_rates: Vec<f64>,
    /// Traces replayed (file names).
    #[serde(default)]
    pub traces: Vec<String>,
    /// Request counts of the cells that let replies end naturally.
    pub natural_completion_screen_requests: Vec<u64>,
    pub headline_requests: Option<u64>,
    pub headline_response_words: Option<u64>,
    pub headline_max_tokens: Option<u64>,
    pub headline_prompt_cache_mode: Option<String>,
    pub headline_request_canaries: Option<bool>,
    pub random_prefix_seed: u64,
    pub thinking: Option<String>,
    /// Cells whose results carry no resolved load (stored by an older anvil).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cells_without_recorded_load: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkloadClass {
    pub id: String,
    pub description: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Statistics {
    pub distribution: Vec<String>,
    pub percentile_method: String,
}
