//! The load a cell offered its server, as measured: where the cell sits on
//! a load axis (its request rate for open loop and traces, its concurrency
//! for closed loop), and whether an in-flight cap held open-loop requests
//! back from their schedule.

use anvil_words::words;
use serde::{Deserialize, Serialize};

use crate::output::record_log::{Stored, col};
use crate::workload::spec::{Arrival, CellSpec};

words! {
    #[serde]
    /// Which load axis a cell's offered load is measured on, by the artifact's word for it.
    pub enum LoadAxis {
        /// Requests per second, measured from the actual sends.
        RequestRate = "request_rate",
        /// Requests in flight at once, as the closed loop kept them.
        Concurrency = "concurrency",
    }
}

impl LoadAxis {
    /// The axis label a plot or table prints.
    pub fn label(self) -> &'static str {
        match self {
            LoadAxis::RequestRate => "request rate (req/s)",
            LoadAxis::Concurrency => "concurrency",
        }
    }
}

/// The artifact's `offered_load`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OfferedLoad {
    pub axis: LoadAxis,
    /// Requests per second or requests in flight; `None` where a rate
    /// cannot be measured (fewer than two sends in every repeat).
    pub value: Option<f64>,
    /// How `value` was obtained, in words.
    pub basis: String,
}

/// The artifact's `in_flight_cap`: an open-loop cell's cap and what it did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CapHolds {
    /// Requests the client lets be in flight at once.
    pub limit: u32,
    /// Requests that found the cap full when they were due, and waited.
    pub held_requests: u64,
    /// The longest such wait, in ms (0 when none waited).
    pub longest_hold_ms: f64,
}

impl CapHolds {
    pub fn held_back(&self) -> bool {
        self.held_requests > 0
    }
}

/// Whether any of the cell's requests are sent on a schedule (an open-loop
/// arrival, a trace's timestamps, an open-loop stage) rather than by
/// closed-loop workers.
pub fn is_open_loop(spec: &CellSpec, trace: bool) -> bool {
    let open = |a: Arrival| !matches!(a, Arrival::ClosedLoop);
    match spec.stages.is_empty() {
        true => trace || open(spec.arrival),
        false => spec.stages.iter().any(|s| open(s.arrival)),
    }
}

/// The offered load of a finished cell: open loop, the measured request
/// rate (sends after the first of each repeat over the span of that
/// repeat's sends); closed loop, its concurrency (for stages, the widest).
pub fn measure(
    spec: &CellSpec,
    trace: bool,
    closed_basis: Option<&'static str>,
    store: &Stored,
) -> std::io::Result<OfferedLoad> {
    if !is_open_loop(spec, trace) {
        let widest = spec.stages.iter().map(|s| s.concurrency).max().unwrap_or(spec.concurrency);
        let basis = match (closed_basis, spec.stages.is_empty()) {
            (Some(basis), _) => basis,
            (None, true) => "closed loop: the cell's concurrency",
            (None, false) => "closed loop: the widest stage's concurrency",
        };
        return Ok(OfferedLoad {
            axis: LoadAxis::Concurrency,
            value: Some(f64::from(widest)),
            basis: basis.into(),
        });
    }
    let mut spans: std::collections::BTreeMap<u32, (f64, f64, u64)> = Default::default();
    store.scan(|row| {
        let send = row[col::ACTUAL_SEND];
        let span = spans.entry(row[col::REPEAT] as u32).or_insert((f64::INFINITY, f64::NEG_INFINITY, 0));
        span.0 = span.0.min(send);
        span.1 = span.1.max(send);
        span.2 += 1;
    })?;
    let (gaps, span_ms) = spans
        .values()
        .filter(|(_, _, n)| *n >= 2)
        .fold((0u64, 0.0), |(g, s), (first, last, n)| (g + n - 1, s + (last - first)));
    let value = (gaps > 0 && span_ms > 0.0).then(|| gaps as f64 / (span_ms / 1000.0));
    Ok(OfferedLoad {
        axis: LoadAxis::RequestRate,
        value,
        basis: "open loop: measured, sends after the first over the span of the sends".into(),
    })
}
