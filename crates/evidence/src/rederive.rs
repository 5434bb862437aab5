//! Re-derives an `anvil-serving.benchmark/v1` artifact from its own raw
//! request records (`request_timings`), independently of the load
//! generator's code: a second implementation written from the protocol's
//! definitions, so that a bug in one cannot confirm itself.
//!
//! # Statistics (capacity-v4-reasoning)
//!
//! Every distribution block `NAME_{mean, stddev, mean_ci95_low,
//! mean_ci95_high, min, p25, p50, p75, p90, p95, p99, max, samples}` is taken
//! over the non-null per-request values of its source key among the
//! **performance-eligible** requests (`send_lag`: all attempted requests):
//!
//! - percentile q: nearest rank, the value at rank ⌈q·n/100⌉ of the sorted
//!   sample (integer arithmetic; no interpolation);
//! - `mean` = Σx/n; `stddev` = sqrt(Σ(x − mean)²/(n − 1)), null below 2;
//! - `mean_ci95_*` = mean ∓ 1.96 · stddev/√n (z exactly 1.96, as the
//!   protocol and the reference use it), null below 2;
//! - `samples` = n; no values: every statistic null, `samples` 0.
//!
//! Millisecond metrics put `_ms` after the statistic (`ttft_p50_ms`), except
//! `NAME_samples`. Sources: see [`crate::metrics::DISTRIBUTIONS`]; `chunk_gap`
//! pools every element of `chunk_gaps_us` / 1000, `first_content_read_delay`
//! is `first_content_read_delay_us` / 1000.
//!
//! Eligibility: see [`crate::records`]. Scalars: sums of `output_tokens`,
//! `prompt_tokens`, `content_chunks`, `reasoning_chunks` over eligible
//! requests; `output_token_sources` counts eligible requests per source;
//! canary and controlled-output counts are over all attempted requests that
//! carry a canary / controlled-output record (stored `passed` / `exact` /
//! `observable` flags; each flag is itself re-derived per request, see
//! [`crate::per_request`]); `prefix_cache_hit_avg` is the mean of
//! cached/prompt over eligible requests reporting cached tokens.
//!
//! Wall clock: Σ over repeats of (latest `finished_ms` − earliest
//! `actual_send_ms`) of that repeat's requests. Records without those times
//! (the reference) leave `wall_clock_ms` unchecked, and throughput is then
//! checked against the stored `wall_clock_ms`. `throughput_tok_s` =
//! Σ eligible output tokens / (wall/1000); `request_throughput_req_s` =
//! eligible / (wall/1000); `goodput_*`: requests with `slo_met` true, their
//! share of attempted requests, their rate and token rate over the wall.
//!
//! Across repeats (anvil): per-repeat aggregates re-derived from each
//! repeat's records, then mean, stddev and mean ∓ t · sd/√n with
//! t = t_{0.975, n−1} rounded to 3 decimals (the printed table, computed
//! here from the t distribution itself).
//!
//! Stages and the per-interval series (anvil): see [`crate::stages`] and
//! [`crate::series`].
//!
//! Comparison: integers exactly; other numbers within
//! `|stored − derived| ≤ 1e-9·max(|stored|, |derived|) + 1e-12`. A field the
//! artifact carries but that cannot be re-derived is listed in
//! [`Report::unchecked`] with its reason; one it does not carry is no claim.

use std::path::Path;

use serde_json::{Map, Value};

use crate::pass::Pass;
use crate::report::Report;
use crate::stats::Z95_PROTOCOL;

/// The schema this checker knows.
pub const SCHEMA: &str = "anvil-serving.benchmark/v1";

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RederiveError {
    #[error("not a JSON object")]
    NotAnObject,
    #[error("schema is {0:?}, expected \"anvil-serving.benchmark/v1\"")]
    Schema(String),
    #[error("request_timings is missing or not an array of objects")]
    NoRecords,
    /// The file could not be opened, or is not JSON (truncated, damaged).
    #[error("{path}: {message}")]
    File { path: String, message: String },
    /// The checker's own temporary row file failed.
    #[error("temporary row file: {0}")]
    Scratch(String),
}

/// Top-level fields that are configuration or metadata: inputs, not claims.
pub(crate) const INPUTS: &[&str] = &[
    "schema",
    "measurement_protocol",
    "base_url",
    "clock_domain_id",
    "concurrency",
    "configuration_fingerprint",
    "context_seed",
    "context_tokens",
    "controlled_output_policy",
    "engine",
    "finished_at_unix_ns",
    "gpu",
    "manifest",
    "max_context_tokens",
    "max_tokens",
    "model",
    "prompt_cache_mode",
    "request_canaries",
    "response_words",
    "run_id",
    "sampling",
    "serve_flags",
    "shared_prefix_tokens",
    "source_recipe",
    "started_at_unix_ns",
    "tier",
    "timestamp_precision",
    "timing_methodology",
    "request_timings",
    "cell",
    "api",
    "arrival",
    "simulated",
    "balance",
    "targets",
    "requests_per_repeat",
    "repeat",
    "slo",
    "calibration",
    "warmup",
    "thinking_mode",
    "request_timeout_ms",
    "loadgen_version",
];

/// The inputs among [`INPUTS`] that the checks read.
const READ_INPUTS: &[&str] = &[
    "schema",
    "context_seed",
    "response_words",
    "slo",
    "repeat",
    "targets",
    "started_at_unix_ns",
    "finished_at_unix_ns",
];

/// Whether the head keeps a top-level member's value: one the checks read
/// or compare. Any other (telemetry, connections, methodology text) is
/// kept as present only (null), which is all its listing needs.
pub(crate) fn kept(key: &str) -> bool {
    READ_INPUTS.contains(&key) || DERIVED.contains(&key)
}

/// Knobs of a re-derivation. The default is the protocol.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// z of the 95% CI of the mean; the protocol's is exactly 1.96.
    pub ci_z: f64,
}

impl Default for Options {
    fn default() -> Self {
        Self { ci_z: Z95_PROTOCOL }
    }
}

/// Top-level fields this module re-derives (or lists as unchecked itself).
pub(crate) const DERIVED: &[&str] = &[
    "metrics",
    "client_error",
    "tokens",
    "metric_population",
    "repeats",
    "per_target",
    "failures",
    "failure_counts",
    "wall_clock_ms",
    "requests",
    "completed",
    "failed",
    "performance_eligible",
    "responses_received",
    "context_distribution",
    "started_at",
    "finished_at",
    "stages",
    "series",
];

/// Re-derives every figure of `artifact` that its records determine, by the protocol.
pub fn rederive(artifact: &Value) -> Result<Report, RederiveError> {
    rederive_with(artifact, &Options::default())
}

/// [`rederive`] with other [`Options`] (e.g. another z, to show that a
/// CI mismatch is exactly a different z).
pub fn rederive_with(artifact: &Value, opts: &Options) -> Result<Report, RederiveError> {
    let obj = artifact.as_object().ok_or(RederiveError::NotAnObject)?;
    // The head is small (records excluded), so it is copied: the engine
    // reads a head and records, from memory or a file alike.
    let head: Map<String, Value> = obj
        .iter()
        .filter(|(k, _)| *k != "request_timings")
        .map(|(k, v)| (k.clone(), if kept(k) { v.clone() } else { Value::Null }))
        .collect();
    schema(&head)?;
    let records = obj.get("request_timings").and_then(Value::as_array).ok_or(RederiveError::NoRecords)?;
    let mut pass = Pass::new(&head, opts)?;
    for (pos, record) in records.iter().enumerate() {
        pass.record(pos, record.as_object().ok_or(RederiveError::NoRecords)?)?;
    }
    pass.finish()
}

/// [`rederive`] of the artifact file at `path`, streamed: memory holds its
/// head and one record at a time, never the whole document.
pub fn rederive_file(path: &Path) -> Result<Report, RederiveError> {
    rederive_file_with(path, &Options::default())
}

/// [`rederive_file`] with other [`Options`].
pub fn rederive_file_with(path: &Path, opts: &Options) -> Result<Report, RederiveError> {
    let head = crate::stream::head_with(path, &kept)?;
    schema(&head)?;
    let mut pass = Pass::new(&head, opts)?;
    let found = crate::stream::records(path, |pos, record| match record {
        Value::Object(raw) => pass.record(pos, &raw),
        _ => Err(RederiveError::NoRecords),
    })?;
    if !found {
        return Err(RederiveError::NoRecords);
    }
    pass.finish()
}

fn schema(head: &Map<String, Value>) -> Result<(), RederiveError> {
    match head.get("schema").and_then(Value::as_str) {
        Some(SCHEMA) => Ok(()),
        other => Err(RederiveError::Schema(other.unwrap_or("").to_string())),
    }
}

/// `YYYY-MM-DDTHH:MM:SSZ` of a Unix time in ns, truncated to the second.
pub fn iso_seconds(unix_ns: u64) -> String {
    let secs = unix_ns / 1_000_000_000;
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let (h, m, s) = (rem / 3600, rem % 3600 / 60, rem % 60);
    format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}Z")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn iso_by_hand() {
        assert_eq!(iso_seconds(0), "1970-01-01T00:00:00Z");
        assert_eq!(iso_seconds(951_782_400_999_999_999), "2000-02-29T00:00:00Z");
        assert_eq!(iso_seconds(1_791_192_203_670_804_700), "2026-10-05T09:23:23Z");
    }

    #[test]
    fn rejects_other_documents() {
        assert_eq!(rederive(&json!([])), Err(RederiveError::NotAnObject));
        assert!(matches!(rederive(&json!({"schema": "x"})), Err(RederiveError::Schema(_))));
        assert_eq!(rederive(&json!({"schema": SCHEMA})), Err(RederiveError::NoRecords));
    }
}
