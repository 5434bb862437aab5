//! A `cell`'s result: the load generator's summary of one measured cell,
//! with its full metrics (the artifact itself is the step's `benchmark.json`).

use anvil_loadgen::{Arrival, CapHolds, CellSpec, LoadAxis, OfferedLoad, Traffic};
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
    /// What the load generator did: absent from results stored before
    /// anvil recorded it (their consumers say "not recorded").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<CellLoad>,
    /// Set only when a rule stopped the measurement before its planned
    /// requests (the artifact's `ending`): its figures cover what ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_early: Option<anvil_loadgen::Ending>,
    /// Set when the cell completed but its server never kept up (the
    /// artifact's `ending.drain`, docs/metrics.md "Over-saturated at the
    /// end"): its figures are of a load the server never carried.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub over_saturated_at_end: Option<anvil_loadgen::Drain>,
    /// With `keep-answers` or a scored dataset: the answers kept beside it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answers: Option<super::answers::KeptAnswers>,
    /// Over a scored dataset: the share answered right, with its interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accuracy: Option<super::answers::ScoredAccuracy>,
}

/// A cell's load as the load generator ran it (the artifact's
/// `resolved_cell`, `offered_load`, `in_flight_cap` and target labels):
/// what every consumer of a cell reads about its load.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellLoad {
    pub resolved: CellSpec,
    pub offered: OfferedLoad,
    /// Open loop only: the cap and how often it held a due request back.
    pub in_flight_cap: Option<CapHolds>,
    /// The replicas' labels, one per target measured.
    pub targets: Vec<String>,
}

impl CellResult {
    /// One of the load generator's metrics (`null` when it has none by
    /// that name).
    pub fn metric(&self, key: &str) -> &Value {
        self.metrics.get(key).unwrap_or(&Value::Null)
    }
}

impl CellLoad {
    /// Where the cell sits on its load axis: "19.8 req/s offered (measured)",
    /// "C6 (closed loop)".
    pub fn offered_words(&self) -> String {
        match (self.offered.axis, self.offered.value) {
            (LoadAxis::RequestRate, Some(_)) => format!("{} offered (measured)", self.offered_short()),
            (LoadAxis::RequestRate, None) => "open loop, too few sends to measure a rate".into(),
            (LoadAxis::Concurrency, _) => format!("{} (closed loop)", self.offered_short()),
        }
    }

    /// The offered load in a table cell: "8.3 req/s", "C4".
    pub fn offered_short(&self) -> String {
        match (self.offered.axis, self.offered.value) {
            (LoadAxis::RequestRate, Some(rate)) => format!("{rate:.1} req/s"),
            (LoadAxis::RequestRate, None) => "open loop".into(),
            (LoadAxis::Concurrency, value) => format!("C{}", value.unwrap_or(0.0)),
        }
    }

    /// "1 replica, C6", "2 replicas, poisson 20 req/s (19.8 measured), cap 40":
    /// the decision summary's topology of a headline cell.
    pub fn topology(&self) -> String {
        let n = self.targets.len().max(1);
        let replicas = format!("{n} replica{}", if n == 1 { "" } else { "s" });
        let spec = &self.resolved;
        let measured = self.offered.value.map(|v| format!(" ({v:.1} measured)")).unwrap_or_default();
        let cap = self.in_flight_cap.as_ref().map(|c| c.limit).unwrap_or(spec.concurrency);
        let load = match (&spec.traffic, spec.arrival, spec.stages.is_empty()) {
            (Traffic::Sessions(s), _, _) => {
                format!("{} sessions x {} turns, closed loop", s.sessions, s.turns)
            }
            (Traffic::Trace(_), _, _) => {
                format!("trace replay on its own schedule{measured} req/s, cap {cap}")
            }
            (_, _, false) => format!("{} load stages, {}", spec.stages.len(), self.offered_words()),
            (_, Arrival::ClosedLoop, true) => format!("C{}", spec.concurrency),
            (_, Arrival::Poisson { rate_per_s } | Arrival::Constant { rate_per_s }, true) => {
                let kind =
                    if matches!(spec.arrival, Arrival::Poisson { .. }) { "poisson" } else { "constant" };
                format!("{kind} {rate_per_s} req/s{measured}, cap {cap}")
            }
        };
        format!("{replicas}, {load}")
    }

    /// The workload in one line, as the load generator ran it (the
    /// decision summary's `headline_workload`).
    pub fn workload_words(&self) -> String {
        let spec = &self.resolved;
        let source = match &spec.traffic {
            Traffic::Synthetic => format!("{} context target", spec.context_tokens),
            Traffic::Trace(t) => format!("trace {}", file_name(&t.path)),
            Traffic::Dataset(d) => format!("dataset {}", file_name(&d.path)),
            Traffic::Sessions(s) => format!("{} sessions x {} turns", s.sessions, s.turns),
            Traffic::Agents(a) => format!("agent runs {}", file_name(&a.path)),
        };
        let prompts = match spec.prompt_cache_mode {
            anvil_loadgen::PromptCacheMode::Unique => "unique".to_string(),
            anvil_loadgen::PromptCacheMode::SharedPrefix { prefix_tokens } => {
                format!("shared-prefix ({prefix_tokens} tokens)")
            }
        };
        let thinking = match spec.thinking {
            anvil_loadgen::ThinkingMode::Default => "server default",
            anvil_loadgen::ThinkingMode::On => "on",
            anvil_loadgen::ThinkingMode::Off => "off",
        };
        let requests = if spec.stages.is_empty() {
            format!("{} requests", u64::from(spec.requests) * u64::from(spec.repeat.max(1)))
        } else {
            format!("{} load stages", spec.stages.len())
        };
        format!(
            "{requests}, {source}, {}, {prompts} prompts, canaries {}, {} requested words, {}-token ceiling, thinking {thinking}",
            self.topology(),
            if spec.canaries { "on" } else { "off" },
            spec.response_words,
            spec.max_tokens,
        )
    }
}

fn file_name(path: &std::path::Path) -> String {
    path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
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
            load: None,
            stopped_early: None,
            over_saturated_at_end: None,
            answers: None,
            accuracy: None,
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
