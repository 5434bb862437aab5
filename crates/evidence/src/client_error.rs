//! Re-derives an artifact's `client_error` (the client's bound on its own
//! arrival stamps) from its records, by docs/metrics.md "The client's own
//! error": per eligible request, 0.001 ms for a first content the kernel
//! stamped alone, the request's median event gap when it shared its read
//! with the next event, and for a read-time stamp the cell's p99 read
//! delay; the bound is the p99 (nearest rank) of those.

use serde_json::{Map, Value, json};

use crate::columns::{Col, Row, Rows};

use crate::records::Req;
use crate::report::Checker;

const STAMP_RESOLUTION_MS: f64 = 0.001;

/// Nearest-rank p99 of `values` (sorted in place); `None` when empty.
fn p99(values: &mut [f64]) -> Option<f64> {
    values.sort_unstable_by(f64::total_cmp);
    (!values.is_empty()).then(|| crate::stats::percentile_sorted(values, 99))
}

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
/// none). `open_loop`: some record carries a latency from the schedule;
/// `(attempted, eligible)`: the cell's counts (room for one column, no more).
pub fn check(
    c: &mut Checker<'_>,
    artifact: &Map<String, Value>,
    rows: &Rows,
    open_loop: bool,
    (attempted, eligible_count): (usize, usize),
) {
    if artifact.get("client_error").is_none() {
        return;
    }
    let with_bound = |r: &Row| r.eligible() && r.get(Col::StampBound).is_some();
    let mut read_delays = rows.column_within(Col::FirstContentReadDelayUs, with_bound, eligible_count);
    read_delays.iter_mut().for_each(|us| *us /= 1000.0);
    let read_delay_p99 = p99(&mut read_delays);
    rows.recycle(read_delays);
    let (mut filled, mut complete) = (rows.buffer(eligible_count), true);
    let (mut eligible, mut kernel, mut read) = (0usize, 0usize, 0usize);
    rows.scan(|r| {
        if !r.eligible() {
            return;
        }
        let bound = r.get(Col::StampBound);
        eligible += 1;
        kernel += usize::from(bound == Some(STAMP_RESOLUTION_MS));
        read += usize::from(bound.is_none());
        match bound.or(read_delay_p99) {
            Some(b) => filled.push(b),
            None => complete = false,
        }
    });
    let bound = if complete { p99(&mut filled) } else { None };
    rows.recycle(filled);
    c.check("client_error.latency_bound_ms", json!(bound));
    c.check("client_error.kernel_stamped", json!(kernel));
    c.check("client_error.shared_first_reads", json!(eligible - kernel - read));
    c.check("client_error.read_stamped", json!(read));
    c.check("client_error.read_delay_p99_ms", json!(read_delay_p99));
    // Open-loop records carry their latency from the schedule; send lag is over every attempted request.
    let mut lags: Vec<f64> =
        if open_loop { rows.column_within(Col::SendLag, |_| true, attempted) } else { Vec::new() };
    c.check("client_error.send_lag_p99_ms", json!(p99(&mut lags)));
    rows.recycle(lags);
    c.uncheck("client_error.method", "a description of the rule");
}
