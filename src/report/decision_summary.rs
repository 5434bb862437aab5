//! `anvil-serving.benchmark-decision-summary/v1`: a finished campaign's
//! identities, headline results, screens, gates, limitations and decision.
//! Written and read through these types only; unknown fields (a newer
//! anvil's) are ignored on reading, and a document of another schema or
//! version is refused by [`DecisionSummary::from_slice`].

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub const SCHEMA: &str = "anvil-serving.benchmark-decision-summary/v1";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecisionSummary {
    pub schema: String,
    pub campaign_id: String,
    pub complete: bool,
    pub evidence_cutoff: String,
    /// `server.key` -> the server's declared identity (model revision,
    /// image digest), hardware labels, and the decision's own identities.
    pub identity: Map<String, Value>,
    pub measurement: Measurement,
    pub headline_results: Vec<HeadlineResult>,
    /// `<screen>_<metric>` -> the screen's values by cell, `selected`,
    /// `selection_reason`.
    pub optimization_results: Map<String, Value>,
    pub gates: Vec<GateRow>,
    pub limitations: Vec<String>,
    pub decision: Decision,
    /// Accuracy with its interval per scored cell, and the arm comparisons
    /// (`quality_summary.rs`); absent when the campaign has neither.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quality: Option<super::quality_summary::QualitySummary>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    pub path: String,
    pub warm_cold_state: String,
    /// The first headline cell's workload as the load generator ran it.
    pub headline_workload: String,
    pub statistics: Vec<String>,
    pub metrics: Vec<String>,
    pub percentile_method: String,
    pub tpot_itl_semantics: String,
    pub simulated: bool,
}

/// One headline cell, from its stored result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeadlineResult {
    pub profile: String,
    /// Replicas and load as the load generator ran them ("1 replica, C6").
    pub topology: String,
    pub requests: Option<u64>,
    pub canaries_passed: Option<u64>,
    pub aggregate_tok_s: Option<f64>,
    pub ttft_ms: Block,
    pub effective_prefill_tok_s: Block,
    pub decode_tok_s: Block,
    pub tpot_mean_itl_ms: Block,
    pub e2e_ms: Block,
    pub simulated: bool,
    /// The cell's configuration fingerprint.
    pub evidence: String,
}

impl HeadlineResult {
    /// One metric's block by its key (`ttft_ms`, `decode_tok_s`, …).
    pub fn block(&self, key: &str) -> &Block {
        match key {
            "ttft_ms" => &self.ttft_ms,
            "effective_prefill_tok_s" => &self.effective_prefill_tok_s,
            "decode_tok_s" => &self.decode_tok_s,
            "tpot_mean_itl_ms" => &self.tpot_mean_itl_ms,
            "e2e_ms" => &self.e2e_ms,
            _ => &NO_BLOCK,
        }
    }
}

static NO_BLOCK: Block = Block { mean: Value::Null, p50: Value::Null, p95: Value::Null, p99: Value::Null };

/// Mean and percentiles of one metric (`null` where the cell had none).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Block {
    pub mean: Value,
    pub p50: Value,
    pub p95: Value,
    pub p99: Value,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateRow {
    pub name: String,
    /// `passed`, `rejected`, `undecided` or `missing`.
    pub status: String,
    pub detail: String,
    #[serde(default)]
    pub description: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    pub evidence_labels: Vec<String>,
    pub decision_labels: Option<Vec<String>>,
    /// *anvil*: the confidence each label was reached with, where its rule
    /// read gates or screens that judged with one (`null`: point values).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision_label_confidence: Option<Value>,
    /// *anvil*: how often each claim (promotion, every label) can be wrong
    /// and how often any of them can: the decision result's `error_control`
    /// (docs/metrics.md, "Decisions: what their verdicts guarantee").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision_error_control: Option<Value>,
    pub promotion_authorized: Option<bool>,
    pub rules: Option<Value>,
    pub winner: Value,
    pub single_card_selection: Value,
    pub alternate_runtime_result: Value,
    pub promotion_boundary: Value,
    pub reason: Option<String>,
}

impl Decision {
    /// A statement by its key (`winner`, `reason`, …), `None` when null.
    pub fn statement(&self, key: &str) -> Option<Value> {
        let value = match key {
            "winner" => self.winner.clone(),
            "single_card_selection" => self.single_card_selection.clone(),
            "alternate_runtime_result" => self.alternate_runtime_result.clone(),
            "promotion_boundary" => self.promotion_boundary.clone(),
            "reason" => self.reason.clone().map(Value::String).unwrap_or(Value::Null),
            _ => Value::Null,
        };
        (!value.is_null()).then_some(value)
    }
}

/// Why a document is not a decision summary this anvil reads.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("not JSON of a decision summary: {0}")]
    Json(#[from] serde_json::Error),
    #[error("schema `{0}` is not {SCHEMA}")]
    Schema(String),
}

impl DecisionSummary {
    pub fn from_slice(bytes: &[u8]) -> Result<DecisionSummary, ReadError> {
        #[derive(Deserialize)]
        struct Head {
            schema: String,
        }
        let head: Head = serde_json::from_slice(bytes)?;
        if head.schema != SCHEMA {
            return Err(ReadError::Schema(head.schema));
        }
        Ok(serde_json::from_slice(bytes)?)
    }

    pub fn to_vec_pretty(&self) -> Vec<u8> {
        // A struct of strings, numbers and JSON values always serialises.
        serde_json::to_vec_pretty(self).unwrap_or_default()
    }
}
