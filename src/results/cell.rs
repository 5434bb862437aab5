//! A `cell`'s result: the load generator's summary of one measured cell,
//! with its full metrics (the artifact itself is the step's `benchmark.json`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The `schema` every cell result carries.
pub const CELL_RESULT_SCHEMA: &str = "anvil-serving.cell-result/v1";

/// `anvil-serving.cell-result/v1`. The figures are the load generator's;
/// `None` (stored as `null`) where it had none (no completed request to
/// take a percentile of, a key its artifact lacks).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellResult {
    /// [`CELL_RESULT_SCHEMA`].
    pub schema: String,
    pub engine: String,
    pub simulated: bool,
    pub completed: u64,
    pub failed: u64,
    pub aggregate_tok_s: Option<f64>,
    pub ttft_p50_ms: Option<f64>,
    pub ttft_p99_ms: Option<f64>,
    pub decode_tok_s_mean: Option<f64>,
    pub wall_clock_ms: f64,
    /// The artifact's `performance_eligible`: every request completed.
    pub performance_eligible: Option<bool>,
    /// The artifact's `metrics.request_canary_passed`.
    pub canaries_passed: Option<u64>,
    /// The artifact's `requests`: how many were measured.
    pub requests: Option<u64>,
    /// The artifact's `repeats.across_repeats` (per-metric mean and 95% CI
    /// over repeats), `null` for a cell measured once. The load generator's
    /// structure, kept as it wrote it.
    pub repeats: Value,
    /// The artifact's `metrics`, as the load generator wrote them.
    pub metrics: Value,
}

impl CellResult {
    /// One of the load generator's metrics (`null` when it has none by
    /// that name).
    pub fn metric(&self, key: &str) -> &Value {
        self.metrics.get(key).unwrap_or(&Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// What `run_cell` built before results were typed.
    #[allow(clippy::too_many_arguments)]
    fn old_way(
        engine: &str,
        simulated: bool,
        completed: u32,
        failed: u32,
        throughput: Option<f64>,
        p50: Option<f64>,
        p99: Option<f64>,
        decode: Option<f64>,
        wall: f64,
        artifact: &Value,
    ) -> Value {
        let metrics = artifact["metrics"].clone();
        json!({
            "schema": "anvil-serving.cell-result/v1",
            "engine": engine,
            "simulated": simulated,
            "completed": completed,
            "failed": failed,
            "aggregate_tok_s": throughput,
            "ttft_p50_ms": p50,
            "ttft_p99_ms": p99,
            "decode_tok_s_mean": decode,
            "wall_clock_ms": wall,
            "performance_eligible": artifact["performance_eligible"],
            "canaries_passed": artifact["metrics"]["request_canary_passed"],
            "requests": artifact["requests"],
            "repeats": artifact["repeats"]["across_repeats"],
            "metrics": metrics,
        })
    }

    fn new_way(
        engine: &str,
        simulated: bool,
        (completed, failed): (u32, u32),
        [throughput, p50, p99, decode]: [Option<f64>; 4],
        wall: f64,
        artifact: &Value,
    ) -> Value {
        let metrics = artifact.get("metrics").cloned().unwrap_or(Value::Null);
        super::super::to_value(&CellResult {
            schema: CELL_RESULT_SCHEMA.into(),
            engine: engine.into(),
            simulated,
            completed: completed.into(),
            failed: failed.into(),
            aggregate_tok_s: throughput,
            ttft_p50_ms: p50,
            ttft_p99_ms: p99,
            decode_tok_s_mean: decode,
            wall_clock_ms: wall,
            performance_eligible: artifact.get("performance_eligible").and_then(Value::as_bool),
            canaries_passed: metrics.get("request_canary_passed").and_then(Value::as_u64),
            requests: artifact.get("requests").and_then(Value::as_u64),
            repeats: artifact
                .get("repeats")
                .and_then(|r| r.get("across_repeats"))
                .cloned()
                .unwrap_or_default(),
            metrics,
        })
    }

    fn assert_same(old: &Value, new: &Value) {
        assert_eq!(old, new);
        // Same key order too: the stored file reads the same.
        assert_eq!(serde_json::to_string_pretty(old).unwrap(), serde_json::to_string_pretty(new).unwrap());
        // And the stored form reads back into the type, unchanged.
        let back: CellResult = super::super::from_value(old.clone()).unwrap();
        assert_eq!(&super::super::to_value(&back), old);
    }

    #[test]
    fn same_json_as_before() {
        let artifact = json!({
            "completed": 30, "failed": 2, "requests": 32, "performance_eligible": false,
            "metrics": {"throughput_tok_s": 812.5, "ttft_p50_ms": 41.0, "ttft_samples": 30,
                        "request_canary_passed": 30, "ttft_mean_ms": null},
            "repeats": {"count": 3, "runs": [], "across_repeats": {"throughput_tok_s": {"mean": 812.5, "ci95_low": 800.0, "ci95_high": 825.0}}},
        });
        let (p50, p99, decode) = (Some(41.0), Some(97.25), Some(55.5));
        let old = old_way("sim", true, 30, 2, Some(812.5), p50, p99, decode, 1234.5, &artifact);
        let new = new_way("sim", true, (30, 2), [Some(812.5), p50, p99, decode], 1234.5, &artifact);
        assert_same(&old, &new);
        let typed: CellResult = super::super::from_value(new).unwrap();
        assert_eq!(typed.metric("ttft_samples").as_u64(), Some(30));
        assert_eq!(typed.metric("no_such_metric"), &Value::Null);
    }

    #[test]
    fn nulls_stay_null() {
        // Measured once (no `repeats.across_repeats`), no percentiles, no canaries.
        let artifact =
            json!({"requests": 4, "performance_eligible": true, "metrics": {}, "repeats": {"count": 1}});
        let old = old_way("vllm", false, 4, 0, None, None, None, None, 10.0, &artifact);
        let new = new_way("vllm", false, (4, 0), [None; 4], 10.0, &artifact);
        assert_same(&old, &new);
        assert_eq!(new["repeats"], Value::Null);
        assert_eq!(new["canaries_passed"], Value::Null);
        // Not finite: `json!` wrote null, and so does the type.
        let nan = f64::NAN;
        let old = old_way("vllm", false, 4, 0, Some(nan), None, None, None, 10.0, &artifact);
        let new = new_way("vllm", false, (4, 0), [Some(nan), None, None, None], 10.0, &artifact);
        assert_eq!(old, new);
        assert_eq!(new["aggregate_tok_s"], Value::Null);
    }
}
