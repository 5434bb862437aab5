//! The artifact's top-level fields as the checker sorts them: the inputs
//! (configuration, metadata) and the figures it re-derives.

/// The schema this checker knows.
pub const SCHEMA: &str = "anvil-serving.benchmark/v1";

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
    "loadgen_workers",
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

/// Top-level fields the re-derivation checks (or lists as unchecked itself).
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
    "jobs",
];
