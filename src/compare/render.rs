//! A comparison as one screen per section: cells (headline metrics with
//! published, reproduced, delta and verdict), then screens, gates and the
//! decision labels.

use std::fmt::Write as _;

use anvil_evidence::Verdict;
use anvil_evidence::compare::Spread;

use super::report::{Agreement, CellReport, Report};

/// The comparison as text: one line per cell, then every metric of the
/// cells that differ (of all cells with `all`), then screens, gates, labels.
pub fn render(report: &Report, all: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "A: {}\nB: {}", report.a, report.b);
    let _ = writeln!(
        out,
        "verdicts: a 95% interval of B/A inside ±{:.0}% reproduces, wholly outside differs, else inconclusive; the spread between runs is in the interval, from repeats (each repeat's own figures) or, one run a side, as the published side states it (none stated: inconclusive)",
        report.threshold * 100.0
    );
    workloads(&mut out, report);
    definitions(&mut out, report);
    cell_lines(&mut out, report);
    // A cell against an imported result always shows its metrics: which are judged, which not.
    for cell in
        report.cells.iter().filter(|c| all || c.verdict == Verdict::Differs || !c.by_definition.is_empty())
    {
        cell_metrics(&mut out, cell);
    }
    if !all && report.cells.iter().any(|c| c.verdict != Verdict::Differs) {
        let _ = writeln!(out, "  (every metric of every cell: --all)");
    }
    section(&mut out, "screens (winner)", &report.screens);
    section(&mut out, "gates (status)", &report.gates);
    if let Some(labels) = &report.labels {
        section(&mut out, "decision", std::slice::from_ref(labels));
    }
    out
}

/// One line per cell: its verdict and the headline metrics' deltas; then
/// the inconclusive cells, with the runs a side that would settle each.
fn cell_lines(out: &mut String, report: &Report) {
    if !report.cells.is_empty() {
        let _ = writeln!(
            out,
            "\ncells (delta of B against A; verdict per metric: = reproduced, ≠ differs, ? inconclusive)"
        );
        let _ = writeln!(
            out,
            "  {:<28} {:<13} {:>10} {:>10} {:>10} {:>10} {:>10}",
            "cell", "verdict", "tok/s", "ttft p50", "tpot p50", "e2e p50", "decode"
        );
        for cell in &report.cells {
            let cols: Vec<String> =
                ["throughput_tok_s", "ttft_p50_ms", "tpot_p50_ms", "e2e_p50_ms", "decode_tok_s_mean"]
                    .iter()
                    .map(|metric| match cell.metrics.iter().find(|m| m.metric == *metric) {
                        Some(m) if cell.by_definition.contains(&m.metric) => "definition".into(),
                        Some(m) => short(m),
                        None => "—".into(),
                    })
                    .collect();
            let _ = writeln!(
                out,
                "  {:<28} {:<13} {:>10} {:>10} {:>10} {:>10} {:>10}",
                cell.name,
                word(cell.verdict),
                cols[0],
                cols[1],
                cols[2],
                cols[3],
                cols[4]
            );
        }
    }
    let unsettled: Vec<String> = report
        .cells
        .iter()
        .filter(|c| c.verdict == Verdict::Inconclusive)
        .map(|c| match c.settle_n {
            Some(n) => {
                // The unit of the metric that asks most: repeats where it was judged across them.
                let across = c.metrics.iter().any(|m| {
                    m.verdict == Verdict::Inconclusive
                        && m.settle_n == Some(n)
                        && m.spread == Spread::AcrossRepeats
                });
                let unit = if across { " repeats" } else { "" };
                format!("{} (about {n}{unit} per side would settle it)", c.name)
            }
            None => c.name.clone(),
        })
        .collect();
    if !unsettled.is_empty() {
        let _ = writeln!(out, "  inconclusive: {}", unsettled.join(", "));
    }
}

/// Every metric of one cell: both sides, the delta, the interval of B/A and
/// the verdict, with notes on how the spread was judged and on the
/// configuration that differs.
fn cell_metrics(out: &mut String, cell: &CellReport) {
    let _ = writeln!(out, "\ncell {}: {}", cell.name, word(cell.verdict).to_uppercase());
    if !cell.workload.alike {
        let _ = writeln!(out, "  not the same workload: {}", cell.workload.differences_words());
    }
    let _ = writeln!(
        out,
        "  {:<24} {:>12} {:>12} {:>8}  {:<16} verdict",
        "metric", "A", "B", "delta", "95% CI of B/A"
    );
    for m in &cell.metrics {
        let ci = match (m.ci_low, m.ci_high) {
            (Some(lo), Some(hi)) => format!("{lo:.3}…{hi:.3}"),
            _ => "—".to_string(),
        };
        let _ = writeln!(
            out,
            "  {:<24} {:>12} {:>12} {:>8}  {:<16} {}",
            m.metric,
            number(m.a),
            number(m.b),
            m.relative_delta.map_or_else(|| "—".into(), |d| format!("{:+.1}%", d * 100.0)),
            ci,
            if cell.by_definition.contains(&m.metric) {
                format!("not judged: definitions differ (would be {})", word(m.verdict))
            } else {
                format!("{}{}", verdict_with_settle(m), spread_mark(m.spread))
            }
        );
    }
    if cell.metrics.iter().any(|m| m.spread == Spread::WithinRun) {
        let _ = writeln!(
            out,
            "  [within run]: from the pooled requests; the interval holds each run's sampling error, not the spread between runs ({}), and no run-to-run spread is stated: not judged",
            within_run_why(cell)
        );
    }
    if cell.metrics.iter().any(|m| m.spread == Spread::Stated) {
        let _ = writeln!(
            out,
            "  [stated spread]: the within-run interval widened by the run-to-run spread the published side states (its method in --json says which)"
        );
    }
    if !cell.configuration.is_empty() {
        let shown: Vec<&String> = cell.configuration.iter().take(4).collect();
        let more = cell.configuration.len().saturating_sub(shown.len());
        let tail = if more > 0 { format!(" (+{more} more)") } else { String::new() };
        let joined = shown.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("; ");
        let _ = writeln!(out, "  configuration differs: {joined}{tail}");
    }
}

/// Before any verdict: whether each pair of cells measured the same thing.
fn workloads(out: &mut String, report: &Report) {
    if report.cells.is_empty() {
        return;
    }
    let unlike: Vec<_> = report.cells.iter().filter(|c| !c.workload.alike).collect();
    if unlike.is_empty() {
        let _ = writeln!(
            out,
            "\nworkloads: each cell alike on both sides ({})",
            super::alike::compared_settings()
        );
    } else {
        let _ = writeln!(
            out,
            "\nworkloads (from each side's artifact): verdicts below compare different measurements where they differ"
        );
        for cell in unlike {
            let _ = writeln!(out, "  {:<28} NOT ALIKE: {}", cell.name, cell.workload.differences_words());
        }
    }
    let mut unrecorded: Vec<&str> =
        report.cells.iter().flat_map(|c| c.workload.unrecorded.iter().map(String::as_str)).collect();
    unrecorded.sort_unstable();
    unrecorded.dedup();
    if !unrecorded.is_empty() {
        let _ = writeln!(out, "  recorded on one side only (not compared): {}", unrecorded.join(", "));
    }
}

/// Before any verdict, where a side is imported from a peer tool: how each
/// side defines each metric, and which metrics get no verdict for it.
fn definitions(out: &mut String, report: &Report) {
    use crate::peers::definitions::Alike;
    for cell in report.cells.iter().filter(|c| !c.definitions.is_empty()) {
        let _ =
            writeln!(out, "\ndefinitions ({}: one side imported from a peer tool, docs/peers.md)", cell.name);
        for d in &cell.definitions {
            let mark = match d.alike {
                Alike::Same => "same",
                Alike::Close => "close",
                Alike::Differs => "DIFFER",
            };
            let _ = writeln!(out, "  {:<17} {:<7} A {}", d.metric, mark, d.a);
            let _ = writeln!(out, "  {:<17} {:<7} B {}", "", "", d.b);
        }
        if !cell.by_definition.is_empty() {
            let _ = writeln!(
                out,
                "  not judged, the difference may come from the definitions: {}",
                cell.by_definition.join(", ")
            );
        }
        let _ = writeln!(
            out,
            "  close: a bounded difference (the stream's tail after its last content), verdict kept"
        );
    }
}

fn section(out: &mut String, title: &str, rows: &[Agreement]) {
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n{title}");
    for row in rows {
        let mark = if row.same { "same" } else { "CHANGED" };
        let _ = writeln!(out, "  {:<32} {:<8} A {}  B {}", row.name, mark, row.a, row.b);
    }
}

/// `+1.2% =`: the delta and a one-character verdict.
fn short(m: &anvil_evidence::Comparison) -> String {
    let mark = match m.verdict {
        Verdict::Reproduced => '=',
        Verdict::Differs => '≠',
        Verdict::Inconclusive => '?',
    };
    match m.relative_delta {
        Some(d) => format!("{:+.1}% {mark}", d * 100.0),
        None => format!("— {mark}"),
    }
}

fn word(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Reproduced => "reproduced",
        Verdict::Differs => "differs",
        Verdict::Inconclusive => "inconclusive",
    }
}

fn number(x: Option<f64>) -> String {
    match x {
        Some(x) if x.abs() >= 100.0 => format!("{x:.1}"),
        Some(x) => format!("{x:.3}"),
        None => "—".to_string(),
    }
}

/// A metric's verdict, with the samples (requests, or repeats where it was
/// judged across repeats) per side that would settle an inconclusive one.
fn verdict_with_settle(m: &anvil_evidence::Comparison) -> String {
    let unit = if m.spread == Spread::AcrossRepeats { " repeats" } else { "" };
    match (m.verdict, m.settle_n) {
        (Verdict::Inconclusive, Some(n)) => format!("{} (~{n}{unit} per side)", word(m.verdict)),
        _ => word(m.verdict).to_string(),
    }
}

/// After a verdict: which variation its interval holds, where that is only
/// the within-run sampling error.
fn spread_mark(spread: Spread) -> &'static str {
    match spread {
        Spread::WithinRun => " [within run]",
        Spread::Stated => " [stated spread]",
        Spread::AcrossRepeats | Spread::NoInterval => "",
    }
}

/// Why a cell's per-request rows were judged within runs: one run on a
/// side, else repeats too small for the statistic.
fn within_run_why(cell: &super::report::CellReport) -> &'static str {
    if cell.runs.iter().any(|&r| r < 2) {
        "measured once on a side"
    } else {
        "a repeat has too few requests for the statistic; the reason in --json says which"
    }
}
