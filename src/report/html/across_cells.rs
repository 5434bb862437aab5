//! The Across cells section: throughput against load per server, and TTFT
//! against throughput with the Pareto front; agent cells' job front after
//! them (`agents.rs`).

use plotters::chart::SeriesLabelPosition;

use super::format::count;
use super::link::step_link;
use super::page::{Page, escape};
use super::pareto::pareto;
use super::table::num_td;
use crate::report::model::{Cell, Report, Step};
use crate::report::plot::{self, Series};

pub(super) fn across_cells(page: &mut Page, report: &Report) {
    page.section("across", "Across cells");
    let cells: Vec<(&Step, &Cell)> =
        report.cells().filter(|(_, c)| c.result.aggregate_tok_s.is_some()).collect();
    if cells.len() < 2 {
        page.push("<p class=\"note\">Fewer than two measured cells: nothing to compare.</p>");
        super::agents::front(page, report);
        page.end();
        return;
    }
    // Throughput against the load each cell offered, one plot per load
    // axis (a rate and a concurrency are not one scale), one series per server.
    let axes: Vec<&'static str> = {
        let mut axes: Vec<&'static str> = cells.iter().filter_map(|(_, c)| Some(c.load_axis()?.0)).collect();
        axes.sort_unstable();
        axes.dedup();
        axes
    };
    for axis in axes {
        throughput_against(page, &cells, axis);
    }

    // Latency against throughput, with the Pareto front (more tok/s, less TTFT).
    let points: Vec<(f64, f64, &str)> = cells
        .iter()
        .filter_map(|(s, c)| Some((c.result.aggregate_tok_s?, c.result.ttft_p50_ms?, s.name.as_str())))
        .collect();
    let front = pareto(&points);
    let front_names: Vec<&str> = front.iter().map(|&i| points[i].2).collect();
    let mut front_points: Vec<(f64, f64)> = front.iter().map(|&i| (points[i].0, points[i].1)).collect();
    front_points.sort_by(|a, b| a.0.total_cmp(&b.0));
    let series = vec![(
        Series { name: "cells".into(), points: points.iter().map(|p| (p.0, p.1)).collect() },
        points.iter().map(|p| p.2.to_string()).collect(),
    )];
    let svg = plot::scatter(
        SeriesLabelPosition::UpperLeft,
        "TTFT p50 vs throughput",
        "aggregate output tok/s",
        "TTFT p50 ms",
        &series,
        Some(&front_points),
        false,
    );
    let rows: Vec<Vec<String>> = points
        .iter()
        .map(|p| {
            vec![
                escape(p.2),
                num_td(&format!("{}.aggregate_tok_s", p.2), Some(p.0)),
                num_td(&format!("{}.ttft_p50_ms", p.2), Some(p.1)),
                if front_names.contains(&p.2) { "on the front".into() } else { String::new() },
            ]
        })
        .collect();
    page.figure(
        &svg,
        "Ringed points are on the Pareto front: no other cell has both more throughput and a lower TTFT p50.",
        &["cell", "aggregate tok/s", "TTFT p50 ms", "Pareto"],
        &rows,
    );
    super::agents::front(page, report);
    page.end();
}

/// Throughput against `axis` for the cells placed on it.
fn throughput_against(page: &mut Page, cells: &[(&Step, &Cell)], axis: &'static str) {
    type Points = Vec<(f64, f64)>;
    let on_axis: Vec<(&Step, &Cell, f64)> = cells
        .iter()
        .filter_map(|(s, c)| c.load_axis().filter(|(a, _)| *a == axis).map(|(_, x)| (*s, *c, x)))
        .collect();
    let mut by_server: Vec<(String, Points, Vec<String>)> = Vec::new();
    for (step, cell, x) in &on_axis {
        let y = cell.result.aggregate_tok_s.unwrap_or(0.0);
        let server = cell.server();
        match by_server.iter_mut().find(|(s, _, _)| *s == server) {
            Some((_, points, names)) => {
                points.push((*x, y));
                names.push(step.name.clone());
            }
            None => by_server.push((server, vec![(*x, y)], vec![step.name.clone()])),
        }
    }
    let series: Vec<(Series, Vec<String>)> = by_server
        .into_iter()
        .map(|(server, points, names)| {
            let mut joined: Vec<((f64, f64), String)> = points.into_iter().zip(names).collect();
            joined.sort_by(|a, b| a.0.0.total_cmp(&b.0.0));
            let (points, names): (Vec<_>, Vec<_>) = joined.into_iter().unzip();
            (Series { name: server, points }, names)
        })
        .collect();
    let svg = plot::scatter(
        SeriesLabelPosition::LowerRight,
        &format!("Throughput vs {axis}"),
        axis,
        "aggregate output tok/s",
        &series,
        None,
        true,
    );
    let rows: Vec<Vec<String>> = on_axis
        .iter()
        .map(|(step, cell, x)| {
            vec![
                step_link(step),
                escape(&cell.server()),
                format!(
                    "<td class=\"num\" data-cell=\"{}\" data-offered=\"{x}\">{}</td>",
                    escape(&step.name),
                    offered(*x)
                ),
                num_td(&format!("{}.aggregate_tok_s", step.name), cell.result.aggregate_tok_s),
                num_td(&format!("{}.ttft_p50_ms", step.name), cell.result.ttft_p50_ms),
                num_td(&format!("{}.ttft_p99_ms", step.name), cell.result.ttft_p99_ms),
                num_td(&format!("{}.e2e_p50_ms", step.name), cell.metric("e2e_p50_ms")),
            ]
        })
        .collect();
    page.figure(
        &svg,
        "Each point is a cell, placed by the load it offered (an open loop's measured request rate, a closed loop's concurrency); a server's cells are joined in order of load.",
        &["cell", "server", axis, "aggregate tok/s", "TTFT p50 ms", "TTFT p99 ms", "E2E p50 ms"],
        &rows,
    );
}

/// A load value as a table shows it: whole counts whole, rates to a tenth.
fn offered(x: f64) -> String {
    if x.fract() == 0.0 { count(x) } else { format!("{x:.1}") }
}
