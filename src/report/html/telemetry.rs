//! A cell's server telemetry: the Prometheus counters that moved over the
//! cell, the server's gauges sampled during it, what its counters say per
//! cell (speculative acceptance, energy per token), and the GPU samples
//! (or why there are none).

use std::fmt::Write;

use super::format::{code, num};
use super::page::{Page, escape};
use crate::report::model::{Cell, Step};
use crate::report::plot::{self, Series};

/// Lines drawn at most in the server-series chart (one per gauge and replica).
const MAX_SERIES_LINES: usize = 6;

/// What the cell's prompts were built with and the server's account of their tokens.
pub(super) fn tokens(page: &mut Page, step: &Step, cell: &Cell) {
    let Some(tokens) = &cell.artifact.tokens else { return };
    let lines = tokens.summary_lines();
    if lines.is_empty() {
        return;
    }
    let _ = write!(page.out, "<h4>Tokens ({})</h4><ul>", escape(&step.name));
    for line in lines {
        let _ = write!(page.out, "<li>{}</li>", escape(&line));
    }
    page.push("</ul>");
}

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
    if rows.is_empty() && gpus.is_none() && t.server_metrics_series.is_empty() {
        return;
    }
    let _ = write!(page.out, "<h4>Server telemetry ({})</h4>", escape(&step.name));
    if let Some(d) = &t.server_derived {
        let mut said = Vec::new();
        if let Some(rate) = d.spec_acceptance_rate {
            said.push(format!(
                "speculative decoding accepted {} of {} drafted tokens ({:.1}%), {} per draft",
                num(d.spec_accepted_tokens),
                num(d.spec_draft_tokens),
                rate * 100.0,
                num(d.spec_mean_accepted_per_draft)
            ));
        }
        if let Some(mj) = d.energy_per_output_token_mj {
            said.push(format!("{} mJ per output token ({} mJ in all)", num(Some(mj)), num(d.energy_mj)));
        }
        if !said.is_empty() {
            let _ = write!(page.out, "<p>The server's own counters: {}.</p>", escape(&said.join("; ")));
        }
    }
    series_chart(page, step, t);
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

/// The sampled gauges (not the counters, whose deltas are above) over the cell.
fn series_chart(page: &mut Page, step: &Step, t: &anvil_loadgen::Telemetry) {
    let mut lines: Vec<Series> = Vec::new();
    for replica in &t.server_metrics_series {
        let keys: std::collections::BTreeSet<&String> = replica
            .samples
            .iter()
            .flat_map(|s| s.values.keys())
            .filter(|k| !anvil_proc::is_cumulative(k))
            .collect();
        for key in keys {
            let points = replica
                .samples
                .iter()
                .filter_map(|s| s.values.get(key).map(|v| (s.at_ms / 1000.0, *v)))
                .collect();
            let name = match t.server_metrics_series.len() {
                1 => anvil_proc::metric_name(key).to_string(),
                _ => format!("{} {}", replica.replica, anvil_proc::metric_name(key)),
            };
            lines.push(Series { name, points });
        }
    }
    if lines.is_empty() {
        return;
    }
    let shown = lines.len().min(MAX_SERIES_LINES);
    let svg = plot::lines(
        &format!("{}: the server's gauges during the cell", step.name),
        "s after sampling started",
        "value",
        &lines[..shown],
        None,
    );
    let rows: Vec<Vec<String>> = lines
        .iter()
        .map(|l| {
            let values: Vec<f64> = l.points.iter().map(|p| p.1).collect();
            let max = values.iter().copied().fold(f64::NAN, f64::max);
            vec![code(&l.name), l.points.len().to_string(), num(values.last().copied()), num(Some(max))]
        })
        .collect();
    page.figure(
        &svg,
        &format!(
            "The server's Prometheus gauges, scraped every {} ms while the cell ran ({} of {} drawn).",
            t.server_metrics_series[0].interval_ms,
            shown,
            lines.len()
        ),
        &["series", "samples", "last", "max"],
        &rows,
    );
}
