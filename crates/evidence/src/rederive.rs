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
//! Agent tasks (anvil's `jobs`, and the same keys in `metrics`): see
//! [`crate::jobs`], which also checks every agent call's replay rule.
//!
//! Comparison: integers exactly; other numbers within
//! `|stored − derived| ≤ 1e-9·max(|stored|, |derived|) + 1e-12`; a
//! difference of two stored numbers (`send_lag_ms`) within `1e-9` of its
//! operands instead, since they are parsed to within an ulp. A field the
//! artifact carries but that cannot be re-derived is listed in
//! [`Report::unchecked`] with its reason; one it does not carry is no claim.

use std::path::Path;

use serde_json::{Map, Value};

use crate::artifact_file::{self, Member};
use crate::fields::kept;
use crate::pass::Pass;
use crate::report::Report;

pub use crate::civil_time::iso_seconds;
pub use crate::error::RederiveError;
pub use crate::fields::SCHEMA;
pub use crate::pass::Options;

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
    let head = artifact_file::head_with(path, &|key| {
        if kept(key) { Member::Kept } else { Member::Null }
    })?;
    schema(&head)?;
    let mut pass = Pass::new(&head, opts)?;
    let found = artifact_file::for_each_record(path, |pos, record| match record {
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rejects_other_documents() {
        assert_eq!(rederive(&json!([])), Err(RederiveError::NotAnObject));
        assert!(matches!(rederive(&json!({"schema": "x"})), Err(RederiveError::Schema(_))));
        assert_eq!(rederive(&json!({"schema": SCHEMA})), Err(RederiveError::NoRecords));
    }
}
