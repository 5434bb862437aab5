//! The Searches section: for each `search`, its answer, why it stopped, its
//! curve (the SLO's first metric against the variable, `plot/search.rs`) and
//! the table of every probe with its stored cell's fingerprint.

use std::fmt::Write;

use super::format::short;
use super::link::step_link;
use super::page::{Page, escape};
use super::table::num_td;
use crate::report::model::{Body, Report};
use crate::report::plot::{CurvePoint, search_curve};
use crate::results::SearchResult;

pub(super) fn searches(page: &mut Page, report: &Report) {
    page.section("searches", "Searches");
    let searches: Vec<_> = report
        .steps
        .iter()
        .filter_map(|s| match &s.body {
            Body::Search(result) => Some((s, result)),
            _ => None,
        })
        .collect();
    if searches.is_empty() {
        page.push("<p class=\"note\">No searches.</p>");
    }
    for (step, result) in searches {
        let _ = write!(
            page.out,
            "<h3>search {}{}</h3><p><strong>{}</strong> · boundary {} · stopped: {} — {}</p>\
             <p class=\"note\">SLO: {} · precision {} · budget {} probes · cost: {} · {}</p>",
            step_link(step),
            if result.simulated { " <span class=\"sim-tag\">simulated</span>" } else { "" },
            escape(&result.claim()),
            escape(&result.boundary),
            escape(&result.stopped),
            escape(&result.detail),
            escape(&result.slo.join(" && ")),
            escape(&result.precision),
            result.budget,
            escape(&result.cost_words()),
            escape(&result.error_basis),
        );
        curve(page, result);
    }
    page.end();
}

/// A probe's verdict as the status classes spell it (`undecided` after
/// its extra repeats, with a confidence).
fn verdict_word(p: &crate::results::ProbePoint) -> &'static str {
    match (p.passed, p.verdict.as_str()) {
        (true, _) => "passed",
        (false, "undecided") => "undecided",
        (false, _) => "rejected",
    }
}

/// The plot (first SLO metric by value) and the probe table.
fn curve(page: &mut Page, result: &SearchResult) {
    let metric = result.curve.iter().find_map(|p| p.metrics.keys().next().cloned());
    let mut header = vec!["#", result.variable.as_str(), "verdict"];
    let metric_names: Vec<String> = {
        let mut names: Vec<String> = result.curve.iter().flat_map(|p| p.metrics.keys().cloned()).collect();
        names.sort();
        names.dedup();
        names
    };
    header.extend(metric_names.iter().map(String::as_str));
    header.extend(["throughput tok/s", "completed", "failed", "probe cell"]);
    let rows: Vec<Vec<String>> = result
        .curve
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let mut row = vec![
                (i + 1).to_string(),
                num_td(&result.variable, Some(p.value)),
                format!("<td class=\"status {0}\">{0}</td>", verdict_word(p)),
            ];
            row.extend(metric_names.iter().map(|m| num_td(m, p.metrics.get(m).and_then(|v| v.as_f64()))));
            row.push(num_td("throughput_tok_s", p.throughput_tok_s));
            row.push(p.completed.to_string());
            row.push(p.failed.to_string());
            row.push(format!("<code>{}</code>", escape(short(&p.fingerprint))));
            row
        })
        .collect();
    let Some(metric) = metric else {
        page.table("search", &header, &rows);
        return;
    };
    let probes: Vec<CurvePoint> = result
        .curve
        .iter()
        .filter_map(|p| {
            Some(CurvePoint { value: p.value, metric: p.metrics.get(&metric)?.as_f64()?, passed: p.passed })
        })
        .collect();
    let svg = search_curve(
        &format!("{metric} by {}", result.variable),
        &result.variable,
        &metric,
        &probes,
        result.max_value,
    );
    page.figure(&svg, &format!("every probe: {metric} against {}", result.variable), &header, &rows);
}
