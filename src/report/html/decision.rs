//! The Decision section: each decision step's labels, promotion, statements
//! and rules, then the limitations the summary names.

use std::fmt::Write;

use super::format::{code, plain};
use super::link::step_link;
use super::page::{Page, escape};
use super::table::status_td;
use crate::report::model::{Body, Report, Step};

pub(super) fn decision(page: &mut Page, report: &Report) {
    page.section("decision", "Decision");
    let decisions: Vec<(&Step, &crate::results::DecisionResult)> = report
        .steps
        .iter()
        .filter_map(|s| match &s.body {
            Body::Decision(d) => Some((s, d)),
            _ => None,
        })
        .collect();
    if decisions.is_empty() {
        page.push("<p class=\"note\">This campaign has no decision step.</p>");
    }
    let summary_decision = report.summary.as_ref().map(|s| &s.decision);
    for (step, d) in decisions {
        let _ = write!(page.out, "<h3>{} {}</h3><p class=\"labels\">", escape(&step.kind), step_link(step));
        for label in &d.decision_labels {
            let _ = write!(page.out, "<span class=\"label\" data-label=\"{0}\">{0}</span> ", escape(label));
        }
        let _ = write!(
            page.out,
            "</p><p>Promotion <strong class=\"{}\">{}</strong>{}</p>",
            if d.promotion_authorized { "passed" } else { "rejected" },
            if d.promotion_authorized { "authorized" } else { "not authorized" },
            d.promotion.when.as_ref().map(|w| format!(" (promote-when {})", code(w))).unwrap_or_default()
        );
        let mut rows = Vec::new();
        for (key, value) in d.statements.iter() {
            rows.push(vec![code(key), escape(&plain(value))]);
        }
        if let Some(sd) = summary_decision {
            for key in ["winner", "reason", "single_card_selection", "promotion_boundary"] {
                if let Some(v) = sd.statement(key)
                    && !d.statements.contains(key)
                {
                    rows.push(vec![code(key), escape(&plain(&v))]);
                }
            }
        }
        if !rows.is_empty() {
            page.push("<h4>Statements</h4>");
            page.table("kv", &["", ""], &rows);
        }
        let rules: Vec<Vec<String>> = d
            .rules
            .iter()
            .map(|r| {
                vec![
                    escape(&r.label),
                    code(&r.when),
                    status_td(&format!("rule {}", r.label), r.status.as_str()),
                    escape(&r.detail),
                ]
            })
            .collect();
        page.push("<h4>Rules</h4>");
        page.table("rules", &["label", "when", "status", "detail"], &rules);
        if let Some(control) = &d.error_control {
            error_control(page, control);
        }
    }
    if let Some(limitations) = report.summary.as_ref().map(|s| &s.limitations)
        && !limitations.is_empty()
    {
        page.push("<h3>Limitations</h3><ul class=\"limitations\">");
        for l in limitations {
            let _ = write!(page.out, "<li>{}</li>", escape(l));
        }
        page.push("</ul>");
    }
    page.end();
}

/// How often each claim can be wrong, and the family.
fn error_control(page: &mut Page, control: &crate::results::ErrorControl) {
    let rate =
        |e: Option<f64>| e.map_or_else(|| "no stated rate".to_string(), |e| format!("at most {}", fmt(e)));
    let rows: Vec<Vec<String>> = control
        .claims
        .iter()
        .map(|c| {
            vec![
                escape(&c.claim),
                escape(&rate(c.error_at_most)),
                escape(&c.verdicts.join(", ")),
                escape(c.why.as_deref().unwrap_or("")),
            ]
        })
        .collect();
    page.push("<h4>How often these claims can be wrong</h4>");
    page.table("error-control", &["claim", "wrong", "verdicts read", "why no rate"], &rows);
    let declared = control
        .family_error_declared
        .map(|d| format!(" (declared `family-error` {})", fmt(d)))
        .unwrap_or_default();
    let _ = write!(
        page.out,
        "<p>Any of them wrong: {}{}. {}</p>",
        escape(&rate(control.family_error_at_most)),
        escape(&declared),
        escape(&control.procedure)
    );
}

fn fmt(x: f64) -> String {
    anvil_expr::format_number(x)
}
