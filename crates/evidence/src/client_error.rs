//! Re-derives an artifact's `client_error` (the client's bound on its own
//! arrival stamps) from its records, by docs/metrics.md "The client's own
//! error": per eligible request, 0.001 ms for a first content the kernel
//! stamped alone, the request's median event gap when it shared its read
//! with the next event, and for a read-time stamp the cell's p99 read
//! delay; the bound is the p99 (nearest rank) of those.

use serde_json::{Map, Value, json};

use crate::columns::{Col, Row, Rows, Visited};

use crate::records::Req;
use crate::report::Checker;

const STAMP_RESOLUTION_MS: f64 = 0.001;

/// One record's stamp bound; `None` for a read-time stamp.
pub fn bound(r: &Req<'_>) -> Option<f64> {
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

/// Checks `client_error` against the rows (nothing when the artifact has
/// none). `open_loop`: some record carries a latency from the schedule.
pub fn check(c: &mut Checker<'_>, artifact: &Map<String, Value>, rows: &Rows, open_loop: bool) {
    if artifact.get("client_error").is_none() {
        return;
    }
    // Each percentile by selection over the rows read again: no column held.
    let read_delay = |r: &Row| {
        (r.eligible() && r.get(Col::StampBound).is_some())
            .then(|| r.get(Col::FirstContentReadDelayUs).map(|us| us / 1000.0))
            .flatten()
    };
    let read_delay_p99 = Visited::new(rows, &read_delay).percentile(99);
    let mut complete = true;
    let (mut eligible, mut kernel, mut read) = (0usize, 0usize, 0usize);
    rows.scan(|r| {
        if !r.eligible() {
            return;
        }
        let bound = r.get(Col::StampBound);
        eligible += 1;
        kernel += usize::from(bound == Some(STAMP_RESOLUTION_MS));
        read += usize::from(bound.is_none());
        complete &= bound.or(read_delay_p99).is_some();
    });
    let filled = |r: &Row| r.eligible().then(|| r.get(Col::StampBound).or(read_delay_p99)).flatten();
    let bound = if complete { Visited::new(rows, &filled).percentile(99) } else { None };
    c.check("client_error.latency_bound_ms", json!(bound));
    c.check("client_error.kernel_stamped", json!(kernel));
    c.check("client_error.shared_first_reads", json!(eligible - kernel - read));
    c.check("client_error.read_stamped", json!(read));
    c.check("client_error.read_delay_p99_ms", json!(read_delay_p99));
    // Open-loop records carry their latency from the schedule; send lag is over every attempted request.
    let lag = |r: &Row| r.get(Col::SendLag);
    let lag_p99 = if open_loop { Visited::new(rows, &lag).percentile(99) } else { None };
    c.check("client_error.send_lag_p99_ms", json!(lag_p99));
    c.uncheck("client_error.method", "a description of the rule");
}
