//! The Gates and checks section: from the decision summary when there is
//! one (it names every gate), else from the stored gate and check steps.

use super::failed::failed_evidence;
use super::link::step_link;
use super::page::{Page, escape};
use super::table::status_td;
use crate::report::model::{Body, Report};

pub(super) fn gates(page: &mut Page, report: &Report) {
    page.section("gates", "Gates and checks");
    let mut rows: Vec<Vec<String>> = Vec::new();
    match &report.summary {
        Some(summary) => {
            for g in &summary.gates {
                let (name, status) = (g.name.as_str(), g.status.as_str());
                let step = name.split_once(' ').and_then(|(_, n)| report.steps.iter().find(|s| s.name == n));
                rows.push(vec![
                    step.map_or_else(|| escape(name), |s| format!("{} {}", escape(&s.kind), step_link(s))),
                    status_td(name, status),
                    escape(&g.detail),
                ]);
            }
        }
        None => {
            for step in &report.steps {
                let (status, detail) = match &step.body {
                    Body::Gate(g) => (g.status.as_str().to_string(), g.detail.clone()),
                    Body::Check(c) => (c.status.as_str().to_string(), c.detail.clone()),
                    Body::Missing(why) if step.kind == "gate" || step.kind == "check" => {
                        ("missing".into(), why.clone())
                    }
                    _ => continue,
                };
                let label = format!("{} {}", step.kind, step.name);
                rows.push(vec![
                    format!("{} {}", escape(&step.kind), step_link(step)),
                    status_td(&label, &status),
                    escape(&detail),
                ]);
            }
        }
    }
    if rows.is_empty() {
        page.push("<p class=\"note\">No gates or checks.</p>");
    } else {
        page.table("gates", &["gate", "status", "detail"], &rows);
    }
    // Checks that could not complete: why, with what they judged before.
    for step in report.steps.iter().filter(|s| s.kind == "check") {
        if let Some(failed) = &step.failed {
            failed_evidence(page, report, step, failed);
        }
    }
    page.end();
}
