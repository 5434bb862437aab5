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

use serde_json::{Value, json};

use crate::metrics::{DISTRIBUTIONS, Derived, metrics};
use crate::records::{self, EligibilitySource, Req, span_ms};
use crate::report::{Checker, Report};
use crate::stats::{P99_MIN_SAMPLES, Z95_PROTOCOL};

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
}

/// Top-level fields that are configuration or metadata: inputs, not claims.
const INPUTS: &[&str] = &[
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
const DERIVED: &[&str] = &[
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
    match obj.get("schema").and_then(Value::as_str) {
        Some(SCHEMA) => {}
        other => return Err(RederiveError::Schema(other.unwrap_or("").to_string())),
    }
    let (reqs, source) = records::read(artifact).ok_or(RederiveError::NoRecords)?;
    let mut c = Checker::new(artifact);
    match source {
        EligibilitySource::Flag => {}
        EligibilitySource::FailureField => c.note("eligibility from each record's `failure` (no flag)"),
        EligibilitySource::FailuresList => c.note(
            "records carry no performance_eligible flag: eligibility inferred from failures[] and canary results",
        ),
    }
    let all: Vec<&Req<'_>> = reqs.iter().collect();

    let derived_wall = records::repeats(&reqs)
        .iter()
        .map(|rep| span_ms(&all.iter().copied().filter(|r| r.repeat == *rep).collect::<Vec<_>>()))
        .sum::<Option<f64>>();
    let wall = match derived_wall {
        Some(w) => {
            c.check("wall_clock_ms", json!(w));
            Some(w)
        }
        None => {
            c.uncheck("wall_clock_ms", "records carry no actual_send_ms/finished_ms");
            let stored = artifact.get("wall_clock_ms").and_then(Value::as_f64);
            if stored.is_some() {
                c.note("throughput checked against the stored wall_clock_ms (not re-derivable)");
            }
            stored
        }
    };

    top_level(&mut c, artifact, &all);
    for (key, d) in metrics(&all, wall, opts.ci_z) {
        let path = format!("metrics.{key}");
        match d {
            Derived::Value(v) => c.check(&path, v),
            Derived::Unknown(why) => c.uncheck(&path, why),
        }
    }
    population(&mut c, artifact, &all);
    for r in &reqs {
        crate::per_request::check(&mut c, artifact, r);
    }
    crate::repeats::check_repeats(&mut c, artifact, &reqs, opts.ci_z);
    crate::repeats::check_per_target(&mut c, artifact, &reqs, wall);
    crate::stages::check_stages(&mut c, artifact, &reqs, opts.ci_z);
    crate::series::check_series(&mut c, artifact, &reqs);
    crate::client_error::check(&mut c, artifact, &reqs);
    crate::tokens::check(&mut c, artifact, &reqs);

    c.sweep("metrics", "not a metric benchmark/v1 defines");
    c.sweep("metric_population", "not a population field benchmark/v1 defines");
    c.sweep("repeats", "not a repeat field anvil defines");
    c.sweep("per_target", "not a per-target field anvil defines");
    c.sweep(
        "tokens",
        "measured before the clock (the tokenizer, its words, the template probes), not in the records",
    );
    for key in obj.keys() {
        if !INPUTS.contains(&key.as_str()) && !DERIVED.contains(&key.as_str()) {
            c.uncheck(key, "not defined by benchmark/v1 (added by the caller); not re-derived");
        }
    }
    Ok(c.finish())
}

fn top_level(c: &mut Checker<'_>, artifact: &Value, all: &[&Req<'_>]) {
    let eligible = all.iter().filter(|r| r.eligible).count();
    c.check("requests", json!(all.len()));
    c.check("completed", json!(eligible));
    c.check("failed", json!(all.len() - eligible));
    c.check("performance_eligible", json!(eligible > 0 && eligible == all.len()));
    if records::any_has(all, "http_status") {
        let ok = all.iter().filter(|r| r.int("http_status").is_some_and(|s| (200..300).contains(&s))).count();
        c.check("responses_received", json!(ok));
    } else {
        c.uncheck("responses_received", "records carry no http_status");
    }
    if records::any_has(all, "planned_context_tokens") {
        let mut dist = serde_json::Map::new();
        for r in all {
            let k = r.int("planned_context_tokens").map_or("null".to_string(), |v| v.to_string());
            let n = dist.get(&k).and_then(Value::as_u64).unwrap_or(0);
            dist.insert(k, json!(n + 1));
        }
        c.check("context_distribution", Value::Object(dist));
    }
    if records::any_has(all, "failure") {
        let mut counts = serde_json::Map::new();
        let mut list = Vec::new();
        for r in all.iter().filter(|r| r.get("failure").is_some()) {
            let class = r.failure_class.clone().unwrap_or_default();
            let n = counts.get(&class).and_then(Value::as_u64).unwrap_or(0);
            counts.insert(class.clone(), json!(n + 1));
            list.push(json!({
                "request_index": r.raw.get("request_index"),
                "repeat": r.raw.get("repeat"),
                "target": r.raw.get("target"),
                "class": class,
                "detail": r.raw.get("failure").and_then(|f| f.get("detail")),
                "http_status": r.raw.get("http_status"),
            }));
        }
        c.check("failure_counts", Value::Object(counts));
        c.check("failures", Value::Array(list));
    } else {
        c.uncheck("failures", "records carry no failure field: failures[] is the eligibility input");
        c.uncheck("failure_counts", "records carry no failure field");
    }
    for (iso, ns) in [("started_at", "started_at_unix_ns"), ("finished_at", "finished_at_unix_ns")] {
        match artifact.get(ns).and_then(Value::as_u64) {
            Some(ns) => c.check(iso, json!(iso_seconds(ns))),
            None => c.uncheck(iso, format!("no integer {ns}")),
        }
    }
}

fn population(c: &mut Checker<'_>, artifact: &Value, all: &[&Req<'_>]) {
    let eligible = all.iter().filter(|r| r.eligible).count();
    let p = |k: &str| format!("metric_population.{k}");
    c.check(&p("attempted_requests"), json!(all.len()));
    c.check(&p("successful_requests"), json!(all.iter().filter(|r| r.successful()).count()));
    c.check(&p("performance_eligible_requests"), json!(eligible));
    c.check(&p("excluded_requests"), json!(all.len() - eligible));
    c.check(&p("aggregate_throughput_eligible"), json!(eligible > 0 && eligible == all.len()));
    c.check(&p("p99_minimum_recommended_samples"), json!(P99_MIN_SAMPLES));
    c.uncheck(&p("failure_policy"), "policy text, not a figure");
    let label =
        |n: usize| if n >= P99_MIN_SAMPLES { "nearest-rank" } else { "descriptive-nearest-rank-only" };
    let listed: Vec<String> = artifact
        .pointer("/metric_population/p99_samples_by_metric")
        .and_then(Value::as_object)
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    let mut smallest: Option<usize> = None;
    for name in &listed {
        let Some(def) = DISTRIBUTIONS.iter().find(|d| d.name == name) else {
            c.uncheck(&p(&format!("p99_samples_by_metric.{name}")), "unknown metric");
            smallest = None;
            break;
        };
        let Some(n) = def.values(all).map(|v| v.len()) else {
            c.uncheck(&p(&format!("p99_samples_by_metric.{name}")), "its source is not in the records");
            smallest = None;
            break;
        };
        c.check(&p(&format!("p99_samples_by_metric.{name}")), json!(n));
        c.check(&p(&format!("p99_interpretation_by_metric.{name}")), json!(label(n)));
        smallest = Some(smallest.map_or(n, |s: usize| s.min(n)));
    }
    if let Some(n) = smallest {
        c.check(&p("p99_interpretation"), json!(label(n)));
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
