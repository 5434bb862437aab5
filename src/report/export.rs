//! `anvil report --format md` (for a pull request or an issue) and
//! `--format csv` (one row per cell with the headline metrics).

use std::fmt::Write;

use serde_json::Value;

use super::html::num;
use super::model::{Body, Report};
use crate::results::CellLoad;

/// The CSV's first columns: identity of the cell, then its headline
/// metrics as stored; [`JOB_COLUMNS`] follow them.
const CELL_COLUMNS: [&str; 21] = [
    "cell",
    "status",
    "fingerprint",
    "server",
    "engine",
    "simulated",
    "concurrency",
    "offered_load_axis",
    "offered_load",
    "requests",
    "completed",
    "failed",
    "aggregate_tok_s",
    "ttft_p50_ms",
    "ttft_p95_ms",
    "ttft_p99_ms",
    "e2e_p50_ms",
    "e2e_p99_ms",
    "tpot_mean_ms",
    "decode_tok_s_mean",
    "canaries_passed",
];

/// An agent cell's job metrics, the CSV's last columns (empty for other cells).
const JOB_COLUMNS: [&str; 7] = [
    "tasks",
    "tasks_completed",
    "tasks_per_min",
    "task_p50_ms",
    "task_p95_ms",
    "task_deadline_share",
    "task_goodput_per_min",
];

pub fn csv(report: &Report) -> String {
    let mut out = [CELL_COLUMNS.as_slice(), JOB_COLUMNS.as_slice()].concat().join(",");
    out.push('\n');
    for step in report.steps.iter().filter(|s| s.kind == "cell") {
        let mut row: Vec<String> = vec![step.name.clone(), step.status.clone(), step.fingerprint.clone()];
        match &step.body {
            Body::Cell(cell) => {
                let r = &cell.result;
                let f = |v: Option<f64>| v.map(|v| v.to_string()).unwrap_or_default();
                let u = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
                row.extend([
                    cell.server(),
                    r.engine.clone(),
                    r.simulated.to_string(),
                    f(cell.artifact.concurrency),
                    r.load.as_ref().map(|l| l.offered.axis.as_str().to_string()).unwrap_or_default(),
                    f(r.load.as_ref().and_then(|l| l.offered.value)),
                    u(r.requests),
                    r.completed.to_string(),
                    r.failed.to_string(),
                    f(r.aggregate_tok_s),
                    f(r.ttft_p50_ms),
                    f(cell.metric("ttft_p95_ms")),
                    f(r.ttft_p99_ms),
                    f(cell.metric("e2e_p50_ms")),
                    f(cell.metric("e2e_p99_ms")),
                    f(cell.metric("tpot_mean_ms")),
                    f(r.decode_tok_s_mean),
                    u(r.canaries_passed),
                ]);
                let jobs = cell.artifact.jobs.as_ref();
                row.extend(JOB_COLUMNS.iter().map(|key| f(jobs.and_then(|j| j.metric(key)))));
            }
            _ => row.resize(CELL_COLUMNS.len() + JOB_COLUMNS.len(), String::new()),
        }
        let line: Vec<String> = row.iter().map(|v| csv_field(v)).collect();
        out.push_str(&line.join(","));
        out.push('\n');
    }
    out
}

fn csv_field(v: &str) -> String {
    if v.contains([',', '"', '\n', '\r']) { format!("\"{}\"", v.replace('"', "\"\"")) } else { v.to_string() }
}

pub fn markdown(report: &Report) -> String {
    let mut out = String::new();
    run_header(&mut out, report);
    decisions(&mut out, report);
    gates(&mut out, report);
    screens(&mut out, report);
    cells(&mut out, report);
    agent_tasks(&mut out, report);
    limitations(&mut out, report);
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

/// The campaign, its description, a warning for simulated servers, and the run's line.
fn run_header(out: &mut String, report: &Report) {
    let run = &report.run;
    let _ = writeln!(out, "## {}\n", report.campaign);
    if let Some(d) = &report.description {
        let _ = writeln!(out, "{d}\n");
    }
    let simulated = report.simulated_cells();
    if !simulated.is_empty() {
        let _ = writeln!(
            out,
            "> **⚠ SIMULATED SERVERS.** {} measured anvil's simulated engine, not real hardware.\n",
            simulated.join(", ")
        );
    }
    let _ = writeln!(
        out,
        "Run `{}` · {} · finished {} · anvil {} · `{}`\n",
        run.run_id,
        run.status.as_str(),
        run.finished_at.as_deref().unwrap_or("—"),
        report.anvil_version(),
        run.recipe_path
    );
}

/// Each decision's labels and statements.
fn decisions(out: &mut String, report: &Report) {
    for step in &report.steps {
        if let Body::Decision(d) = &step.body {
            let _ = writeln!(out, "### Decision `{}`\n", step.name);
            let labels: Vec<String> = d.decision_labels.iter().map(|l| format!("`{l}`")).collect();
            let _ = writeln!(
                out,
                "Labels: {}; promotion {}.\n",
                labels.join(", "),
                if d.promotion_authorized { "authorized" } else { "not authorized" }
            );
            for (key, value) in d.statements.iter() {
                let _ = writeln!(out, "- **{key}**: {}", md(&plain(value)));
            }
            if !d.statements.is_empty() {
                out.push('\n');
            }
        }
    }
}

/// The gates and checks: the decision summary's rows, else the steps' own verdicts.
fn gates(out: &mut String, report: &Report) {
    let gates: Vec<(String, String, String)> = match &report.summary {
        Some(summary) => {
            summary.gates.iter().map(|g| (g.name.clone(), g.status.clone(), g.detail.clone())).collect()
        }
        None => report
            .steps
            .iter()
            .filter_map(|s| match &s.body {
                Body::Gate(g) => {
                    Some((format!("gate {}", s.name), g.status.as_str().to_string(), g.detail.clone()))
                }
                Body::Check(c) => {
                    Some((format!("check {}", s.name), c.status.as_str().to_string(), c.detail.clone()))
                }
                _ => None,
            })
            .collect(),
    };
    if !gates.is_empty() {
        out.push_str("### Gates\n\n| gate | status | detail |\n|---|---|---|\n");
        for (name, status, detail) in gates {
            let _ = writeln!(out, "| {} | **{}** | {} |", md(&name), status, md(&detail));
        }
        out.push('\n');
    }
}

/// Each screen's winner and why.
fn screens(out: &mut String, report: &Report) {
    let screens: Vec<_> = report
        .steps
        .iter()
        .filter_map(|s| match &s.body {
            Body::Screen(r) => Some((s, r)),
            _ => None,
        })
        .collect();
    if !screens.is_empty() {
        out.push_str("### Screens\n\n| screen | metric | winner | reason |\n|---|---|---|---|\n");
        for (step, r) in screens {
            let winner = match (&r.winner, r.meaningful) {
                (Some(winner), true) => format!("`{winner}`"),
                (None, _) => "undecided at 95% confidence".into(),
                (Some(_), false) => "no meaningful difference".into(),
            };
            let _ =
                writeln!(out, "| {} | {} | {} | {} |", step.name, r.metric, winner, md(&r.selection_reason));
        }
        out.push('\n');
    }
}

/// A row per cell, the headline ones marked.
fn cells(out: &mut String, report: &Report) {
    out.push_str("### Cells\n\n| cell | server | offered load | ok/failed | tok/s | TTFT p50 ms | TTFT p99 ms | E2E p50 ms | TPOT mean ms |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
    let headline = report.headline_names();
    for (step, cell) in report.cells() {
        let r = &cell.result;
        let name = if headline.contains(&step.name) {
            format!("**{}** (headline)", step.name)
        } else {
            step.name.clone()
        };
        let _ = writeln!(
            out,
            "| {} | {}{} | {} | {}/{} | {} | {} | {} | {} | {} |",
            name,
            md(&cell.server()),
            if r.simulated { " (sim)" } else { "" },
            r.load.as_ref().map(CellLoad::offered_short).unwrap_or_default(),
            r.completed,
            r.failed,
            num(r.aggregate_tok_s),
            num(r.ttft_p50_ms),
            num(r.ttft_p99_ms),
            num(cell.metric("e2e_p50_ms")),
            num(cell.metric("tpot_mean_ms")),
        );
    }
}

/// The decision summary's limitations, when it has any.
fn limitations(out: &mut String, report: &Report) {
    if let Some(limitations) = report.summary.as_ref().map(|s| &s.limitations)
        && !limitations.is_empty()
    {
        out.push_str("\n### Limitations\n\n");
        for l in limitations {
            let _ = writeln!(out, "- {}", md(l));
        }
    }
}

/// Agent cells' job metrics (docs/workloads.md "Job metrics"), when the run has any.
fn agent_tasks(out: &mut String, report: &Report) {
    let agent_cells: Vec<_> =
        report.cells().filter_map(|(step, cell)| Some((step, cell.artifact.jobs.as_ref()?))).collect();
    if agent_cells.is_empty() {
        return;
    }
    out.push_str("\n### Agent tasks\n\n| cell | tasks done/all | tasks/min | task p50 ms | task p95 ms (95% CI) | deadline met | goodput tasks/min |\n|---|---:|---:|---:|---:|---:|---:|\n");
    for (step, jobs) in agent_cells {
        let m = |key: &str| jobs.metric(key);
        let whole = |key: &str| m(key).map(|v| format!("{v:.0}")).unwrap_or_else(|| "—".into());
        let interval = match (m("task_p95_ci95_low_ms"), m("task_p95_ci95_high_ms")) {
            (Some(low), Some(high)) => format!(" ({}–{})", num(Some(low)), num(Some(high))),
            (Some(low), None) => format!(" ({}–unbounded)", num(Some(low))),
            _ => " (too few tasks)".into(),
        };
        let deadline = match m("task_deadline_share") {
            Some(share) => format!("{:.0}%", share * 100.0),
            None => "no deadline".into(),
        };
        let _ = writeln!(
            out,
            "| {} | {}/{} | {} | {} | {}{} | {} | {} |",
            step.name,
            whole("tasks_completed"),
            whole("tasks"),
            num(m("tasks_per_min")),
            num(m("task_p50_ms")),
            num(m("task_p95_ms")),
            interval,
            deadline,
            num(m("task_goodput_per_min")),
        );
    }
}

fn plain(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Table-safe markdown text: pipes escaped, one line.
fn md(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}
