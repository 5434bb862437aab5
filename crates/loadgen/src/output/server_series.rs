//! The server's side of a cell in the artifact's `telemetry`: its
//! Prometheus series sampled during the cell (`server_metrics_series`), and
//! what follows per cell from its counters' deltas (`server_derived`):
//! speculative decoding's acceptance, and energy per output token where a
//! DCGM exporter's energy counter is among the scraped endpoints (the
//! engine's replicas and the server's `scrape` targets).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One replica's Prometheus counters over the cell, after minus before,
/// or a `scrape` target's (an exporter's).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ReplicaMetrics {
    /// The replica's label, or a `scrape` target's URL.
    pub replica: String,
    /// A target of the server's `scrape` setting, not one of its replicas.
    #[serde(skip_serializing_if = "is_false")]
    pub scrape_target: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delta: Option<BTreeMap<String, f64>>,
    /// Why the replica's `/metrics` could not be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
}

/// One replica's sampled series (anvil-proc's `SampledMetrics`, read into the artifact's type).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ReplicaSeries {
    /// The replica's label, or a `scrape` target's URL.
    pub replica: String,
    /// A target of the server's `scrape` setting, not one of its replicas.
    #[serde(skip_serializing_if = "is_false")]
    pub scrape_target: bool,
    pub interval_ms: u64,
    /// When sampling started (ns since the Unix epoch): `at_ms` counts from here.
    pub started_unix_ns: u64,
    pub samples: Vec<SeriesSample>,
    pub failed_scrapes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_error: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SeriesSample {
    pub at_ms: f64,
    pub values: BTreeMap<String, f64>,
}

/// Per-cell figures from the server's own counters, over every replica.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ServerDerived {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spec_drafts: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spec_draft_tokens: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spec_accepted_tokens: Option<f64>,
    /// Accepted draft tokens / drafted tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spec_acceptance_rate: Option<f64>,
    /// Accepted draft tokens per draft (vLLM's "mean acceptance length" is this plus 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spec_mean_accepted_per_draft: Option<f64>,
    /// The energy the GPUs used over the cell (J): the increase of an energy
    /// counter ([`Self::energy_counter`]), summed over its series (one per GPU).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub energy_j: Option<f64>,
    /// `energy_j` over the measured requests' output tokens (J).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub energy_per_output_token_j: Option<f64>,
    /// The counter `energy_j` is the increase of (`DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub energy_counter: Option<String>,
    /// `energy_j` in mJ (the report reads it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub energy_mj: Option<f64>,
    /// `energy_per_output_token_j` in mJ (the report reads it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub energy_per_output_token_mj: Option<f64>,
}

fn is_false(value: &bool) -> bool {
    !value
}

/// The counters' names, per engine, that each figure sums.
const DRAFTS: &[&str] = &["vllm:spec_decode_num_drafts_total", "llamacpp:spec_decode_num_drafts_total"];
const DRAFT_TOKENS: &[&str] =
    &["vllm:spec_decode_num_draft_tokens_total", "llamacpp:spec_decode_num_draft_tokens_total"];
const ACCEPTED: &[&str] =
    &["vllm:spec_decode_num_accepted_tokens_total", "llamacpp:spec_decode_num_accepted_tokens_total"];
/// Energy counters, in millijoules: DCGM's (per GPU, labelled `gpu`).
const ENERGY_MJ: &[&str] = &["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"];

/// The sum over replicas and label sets of the deltas of `names` (`None`: no replica exports one).
fn summed(deltas: &[ReplicaMetrics], names: &[&str]) -> Option<f64> {
    let values: Vec<f64> = deltas
        .iter()
        .filter_map(|r| r.delta.as_ref())
        .flat_map(|d| d.iter())
        .filter(|(key, _)| names.contains(&key.split('{').next().unwrap_or(key)))
        .map(|(_, v)| *v)
        .collect();
    (!values.is_empty()).then(|| values.iter().sum())
}

/// What the deltas say per cell; `None` when they say nothing of it.
pub fn derive(deltas: &[ReplicaMetrics], output_tokens: u64) -> Option<ServerDerived> {
    let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    };
    let (drafts, draft_tokens, accepted) =
        (summed(deltas, DRAFTS), summed(deltas, DRAFT_TOKENS), summed(deltas, ACCEPTED));
    // The first energy counter any target exports, every GPU's series summed.
    let energy = ENERGY_MJ.iter().find_map(|name| Some((*name, summed(deltas, &[name])?)));
    let energy_mj = energy.map(|(_, mj)| mj);
    let energy_j = energy_mj.map(|mj| mj / 1000.0);
    let derived = ServerDerived {
        spec_drafts: drafts,
        spec_draft_tokens: draft_tokens,
        spec_accepted_tokens: accepted,
        spec_acceptance_rate: ratio(accepted, draft_tokens),
        spec_mean_accepted_per_draft: ratio(accepted, drafts),
        energy_j,
        energy_per_output_token_j: ratio(energy_j, Some(output_tokens as f64)),
        energy_counter: energy.map(|(name, _)| name.to_string()),
        energy_mj,
        energy_per_output_token_mj: ratio(energy_mj, Some(output_tokens as f64)),
    };
    (derived != ServerDerived::default()).then_some(derived)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replica(pairs: &[(&str, f64)]) -> ReplicaMetrics {
        ReplicaMetrics {
            replica: "r".into(),
            delta: Some(pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()),
            ..ReplicaMetrics::default()
        }
    }

    #[test]
    fn acceptance_and_energy_from_the_counters() {
        let deltas = [
            replica(&[
                ("vllm:spec_decode_num_drafts_total{model_name=\"m\"}", 10.0),
                ("vllm:spec_decode_num_draft_tokens_total{model_name=\"m\"}", 40.0),
                ("vllm:spec_decode_num_accepted_tokens_total{model_name=\"m\"}", 30.0),
                ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"0\"}", 5000.0),
            ]),
            replica(&[("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"1\"}", 3000.0)]),
        ];
        let d = derive(&deltas, 400).unwrap();
        assert_eq!(d.spec_acceptance_rate, Some(0.75));
        assert_eq!(d.spec_mean_accepted_per_draft, Some(3.0));
        assert_eq!(d.energy_j, Some(8.0));
        assert_eq!(d.energy_per_output_token_j, Some(0.02));
        assert_eq!(d.energy_counter.as_deref(), Some("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"));
        assert_eq!((d.energy_mj, d.energy_per_output_token_mj), (Some(8000.0), Some(20.0)));
        // No output tokens: the energy, not a per-token figure.
        let d = derive(&deltas[1..], 0).unwrap();
        assert_eq!((d.energy_j, d.energy_per_output_token_j), (Some(3.0), None));
        assert_eq!(derive(&[replica(&[("vllm:num_requests_running", 2.0)])], 10), None);
    }
}
