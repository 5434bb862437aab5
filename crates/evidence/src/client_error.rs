//! Re-derives an artifact's `client_error` (the client's bound on its own
//! arrival stamps) from its records, by docs/metrics.md "The client's own
//! error": per eligible request, 0.001 ms for a first content the kernel
//! stamped alone, the request's median event gap when it shared its read
//! with the next event, and for a read-time stamp the cell's p99 read
//! delay; the bound is the p99 (nearest rank) of those.

use serde_json::{Value, json};

use crate::records::Req;
use crate::report::Checker;

const STAMP_RESOLUTION_MS: f64 = 0.001;

/// Nearest-rank p99 of `values`; `None` when empty.
fn p99(values: Vec<f64>) -> Option<f64> {
    crate::stats::percentile(&values, 99)
}

/// One record's stamp bound; `None` for a read-time stamp.
fn bound(r: &Req<'_>) -> Option<f64> {
    if r.get("receive_clock").and_then(Value::as_str) != Some("kernel") {
        return None;
    }
    if r.get("first_content_shared_read").and_then(Value::as_bool) != Some(true) {
        return Some(STAMP_RESOLUTION_MS);
    }
    let mut gaps: Vec<u64> = r
        .get("chunk_gaps_us")
        .and_then(Value::as_array)
        .map(|g| g.iter().filter_map(Value::as_u64).filter(|g| *g > 0).collect())
        .unwrap_or_default();
    gaps.sort_unstable();
    gaps.get(gaps.len() / 2).map(|g| *g as f64 / 1000.0)
}

/// Checks `client_error` against `reqs` (nothing when the artifact has none).
pub fn check(c: &mut Checker<'_>, artifact: &Value, reqs: &[Req<'_>]) {
    if artifact.get("client_error").is_none() {
        return;
    }
    let eligible: Vec<&Req<'_>> = reqs.iter().filter(|r| r.eligible).collect();
    let bounds: Vec<Option<f64>> = eligible.iter().map(|r| bound(r)).collect();
    let read_delays: Vec<f64> = eligible
        .iter()
        .zip(&bounds)
        .filter(|(_, b)| b.is_some())
        .filter_map(|(r, _)| r.num("first_content_read_delay_us").map(|us| us / 1000.0))
        .collect();
    let read_delay_p99 = p99(read_delays);
    let filled: Option<Vec<f64>> = bounds.iter().map(|b| b.or(read_delay_p99)).collect();
    let kernel = bounds.iter().filter(|b| **b == Some(STAMP_RESOLUTION_MS)).count();
    let read = bounds.iter().filter(|b| b.is_none()).count();
    c.check("client_error.latency_bound_ms", json!(filled.and_then(p99)));
    c.check("client_error.kernel_stamped", json!(kernel));
    c.check("client_error.shared_first_reads", json!(bounds.len() - kernel - read));
    c.check("client_error.read_stamped", json!(read));
    c.check("client_error.read_delay_p99_ms", json!(read_delay_p99));
    // Open-loop records carry their latency from the schedule; send lag is over every attempted request.
    let open_loop = reqs
        .iter()
        .any(|r| r.get("ttft_from_schedule_ms").is_some() || r.get("e2e_from_schedule_ms").is_some());
    let lags: Vec<f64> =
        if open_loop { reqs.iter().filter_map(|r| r.num("send_lag_ms")).collect() } else { Vec::new() };
    c.check("client_error.send_lag_p99_ms", json!(p99(lags)));
    c.uncheck("client_error.method", "a description of the rule");
}
