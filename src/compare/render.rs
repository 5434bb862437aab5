//! A comparison as one screen per section: cells (headline metrics with
//! published, reproduced, delta and verdict), then screens, gates and the
//! decision labels.

use std::fmt::Write as _;

use anvil_evidence::Verdict;

use super::{Agreement, Report};

pub fn render(report: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "A: {}\nB: {}", report.a, report.b);
    let _ = writeln!(
        out,
        "verdicts: a 95% interval of B/A inside ±{:.0}% reproduces, wholly outside differs, else inconclusive",
        report.threshold * 100.0
    );
    for cell in &report.cells {
        let _ = writeln!(out, "\ncell {}: {}", cell.name, word(cell.verdict).to_uppercase());
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
                word(m.verdict)
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
    section(&mut out, "screens (winner)", &report.screens);
    section(&mut out, "gates (status)", &report.gates);
    if let Some(labels) = &report.labels {
        section(&mut out, "decision", std::slice::from_ref(labels));
    }
    out
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
