//! A cell's server telemetry: the Prometheus counters that moved over the
//! cell, and the GPU samples (or why there are none).

use std::fmt::Write;

use super::format::{code, num};
use super::page::{Page, escape};
use crate::report::model::{Cell, Step};

pub(super) fn telemetry(page: &mut Page, step: &Step, cell: &Cell) {
    let Some(t) = &cell.artifact.telemetry else { return };
    let mut rows = Vec::new();
    for replica in &t.server_metrics_delta {
        for (metric, v) in replica.delta.iter().flatten() {
            if *v != 0.0 {
                rows.push(vec![escape(&replica.replica), code(metric), num(Some(*v))]);
            }
        }
    }
    let gpu = &t.gpu;
    let gpus = gpu.gpus.as_ref();
    if rows.is_empty() && gpus.is_none() {
        return;
    }
    let _ = write!(page.out, "<h4>Server telemetry ({})</h4>", escape(&step.name));
    if !rows.is_empty() {
        page.push("<details class=\"data\"><summary>Prometheus counters: change over the cell (");
        page.push(&rows.len().to_string());
        page.push(" non-zero)</summary>");
        page.table("telemetry", &["replica", "metric", "delta"], &rows);
        page.push("</details>");
    }
    match gpus {
        Some(gpus) => {
            let mut rows = Vec::new();
            for (id, g) in gpus {
                for field in [
                    "power_w",
                    "sm_clock_mhz",
                    "mem_clock_mhz",
                    "memory_used_mib",
                    "temperature_c",
                    "utilization_pct",
                ] {
                    if let Some(f) = g.fields.get(field) {
                        rows.push(vec![
                            escape(id),
                            code(field),
                            num(Some(f.mean)),
                            num(Some(f.min)),
                            num(Some(f.max)),
                        ]);
                    }
                }
            }
            page.table("telemetry", &["GPU", "field", "mean", "min", "max"], &rows);
        }
        None => {
            let why = gpu.why.as_deref().unwrap_or("not sampled");
            let _ = write!(page.out, "<p class=\"note\">No GPU telemetry: {}.</p>", escape(why));
        }
    }
}
