//! The client's own measurement error in one cell (`client_error`): how far
//! anvil's stamps of when a response's first content arrived may be off,
//! from what each request's reads recorded. A difference between two cells
//! smaller than their errors combined is not a difference anvil can see,
//! and `compare`/`reproduce` do not call it one.
//!
//! Per request, the first content's stamp is off by at most:
//! - the kernel stamp's resolution, [`STAMP_RESOLUTION_MS`], when the kernel
//!   stamped the read that brought it (`receive_clock` `kernel`) and nothing
//!   else came with it;
//! - the request's median gap between output events, when it shared its
//!   read with the next event (`first_content_shared_read`): the stamp is
//!   the later bytes', and they come one gap after it;
//! - the cell's p99 read delay (kernel arrival → the client's read) when the
//!   read was stamped by the client's clock after it returned (no kernel
//!   stamp): that is how late this client's reads ran in this cell.
//!
//! The cell's bound is the p99 of those over its eligible requests. It
//! bounds TTFT and E2E (each counts from a send the client stamps just
//! before its write, to an arrival stamped as above); send lag, the
//! client's lateness against an open loop's schedule, enters only the
//! `*_from_schedule` latencies and is reported beside it.

use serde::{Deserialize, Serialize};

use super::record_log::{Stored, col, is};
pub use crate::observe::record::STAMP_RESOLUTION_MS;

/// The artifact's `client_error`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ClientError {
    /// p99 over eligible requests of each one's first-content stamp bound, ms.
    pub latency_bound_ms: Option<f64>,
    /// Eligible requests whose first content the kernel stamped alone.
    pub kernel_stamped: u64,
    /// … that shared its read with the next event (bounded by the stream's gap).
    pub shared_first_reads: u64,
    /// … stamped by the client's clock after the read (bounded by the cell's read delay).
    pub read_stamped: u64,
    /// p99 of kernel arrival → read of the first content, ms: what a client
    /// stamping in user space would have added to TTFT here.
    pub read_delay_p99_ms: Option<f64>,
    /// p99 of open-loop send lag, ms (in `*_from_schedule`, not in TTFT).
    pub send_lag_p99_ms: Option<f64>,
    pub method: String,
}

pub const METHOD: &str = "per request: kernel stamp alone 0.001 ms; first content sharing its read with the next event: the request's median event gap; read-time stamp: the cell's p99 read delay; the cell's bound is the p99 over eligible requests (docs/metrics.md \"The client's own error\")";

fn p99(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    Some(crate::output::stats::nearest_rank(&values, 99))
}

/// The cell's `client_error`, from its stored rows.
pub fn of(store: &Stored) -> std::io::Result<ClientError> {
    let eligible = |row: &super::record_log::Row| is(row, col::ELIGIBLE);
    let mut bounds = Vec::new();
    let mut read_delays = Vec::new();
    let (mut kernel, mut shared, mut read) = (0, 0, 0);
    // Open-loop requests (a cell's, or a stage's) carry latency from their schedule.
    let mut open_loop = false;
    store.scan(|row| {
        open_loop |= !row[col::TTFT_FROM_SCHEDULE].is_nan() || !row[col::E2E_FROM_SCHEDULE].is_nan();
        if !eligible(row) {
            return;
        }
        let bound = row[col::STAMP_BOUND];
        match (bound.is_nan(), bound == STAMP_RESOLUTION_MS) {
            (true, _) => read += 1,
            (false, true) => kernel += 1,
            (false, false) => shared += 1,
        }
        bounds.push(bound);
        if !bound.is_nan() && !row[col::READ_DELAY].is_nan() {
            read_delays.push(row[col::READ_DELAY]);
        }
    })?;
    let read_delay_p99_ms = p99(read_delays);
    // A read-time stamp is off by what reads were late here; with no kernel stamp at all, unknown.
    let filled: Option<Vec<f64>> =
        bounds.iter().map(|b| if b.is_nan() { read_delay_p99_ms } else { Some(*b) }).collect();
    let lags = if open_loop { store.column(col::SEND_LAG, |_| true)? } else { Vec::new() };
    Ok(ClientError {
        latency_bound_ms: filled.and_then(p99),
        kernel_stamped: kernel,
        shared_first_reads: shared,
        read_stamped: read,
        read_delay_p99_ms,
        send_lag_p99_ms: p99(lags),
        method: METHOD.into(),
    })
}

#[cfg(test)]
mod tests {
    use super::STAMP_RESOLUTION_MS;
    use crate::observe::record::first_content_stamp_bound_ms as bound_of;

    #[test]
    fn each_stamp_is_bounded_by_what_its_reads_recorded() {
        assert_eq!(bound_of("kernel", false, &[900, 1100]), Some(STAMP_RESOLUTION_MS));
        // Shared with the next event: one median gap late at most.
        assert_eq!(bound_of("kernel", true, &[0, 900, 1000, 1100]), Some(1.0));
        assert_eq!(bound_of("kernel", true, &[0]), None, "no gap to bound it by");
        assert_eq!(bound_of("read", false, &[900]), None, "the cell's read delay bounds it");
        assert_eq!(bound_of("mixed", false, &[900]), None);
    }
}
