//! The campaign header (name, run, status) and the Campaign section: how
//! the run was invoked, its environment and the identities of its servers.

use std::fmt::Write;

use serde_json::Value;

use super::format::{code, plain};
use super::page::{Page, escape};
use crate::report::model::Report;

/// The page's `<header>`: what ran, when, and where the report read it from.
pub(super) fn header(page: &mut Page, report: &Report) {
    page.push("<header>");
    let _ = write!(page.out, "<h1>{}</h1>", escape(&report.campaign));
    if let Some(description) = &report.description {
        let _ = write!(page.out, "<p class=\"lead\">{}</p>", escape(description));
    }
    let run = &report.run;
    let _ = write!(
        page.out,
        "<p class=\"meta\">run <code id=\"run-id\">{0}</code> · <span class=\"status {1}\">{1}</span> · started {2} · finished {3} · anvil {4} · from {5}</p>",
        escape(&run.run_id),
        escape(run.status.as_str()),
        escape(&run.started_at),
        escape(run.finished_at.as_deref().unwrap_or("—")),
        escape(&report.anvil_version()),
        escape(&report.source)
    );
    page.push("</header>\n");
}

pub(super) fn campaign(page: &mut Page, report: &Report) {
    let run = &report.run;
    page.section("campaign", "Campaign");
    let mut rows = vec![
        vec!["recipe".into(), code(&run.recipe_path)],
        vec!["run".into(), code(&run.run_id)],
        vec!["status".into(), escape(run.status.as_str())],
        vec!["anvil".into(), escape(&report.anvil_version())],
    ];
    let invocation = serde_json::to_value(report.invocation()).unwrap_or_default();
    rows.push(vec!["invocation".into(), code(&compact(&invocation))]);
    page.push("<div class=\"cols\"><div><h3>Run</h3>");
    page.table("kv", &["", ""], &rows);
    page.push("</div><div><h3>Environment</h3>");
    let mut env = Vec::new();
    // Shown key by key, as recorded (a newer anvil's keys too).
    flatten("", &serde_json::to_value(report.environment()).unwrap_or_default(), &mut env);
    let env: Vec<Vec<String>> = env.into_iter().map(|(k, v)| vec![code(&k), escape(&v)]).collect();
    page.table("kv", &["", ""], &env);
    page.push("</div>");
    if let Some(summary) = &report.summary {
        let mut ids = Vec::new();
        flatten("", &serde_json::Value::Object(summary.identity.clone()), &mut ids);
        let ids: Vec<Vec<String>> = ids.into_iter().map(|(k, v)| vec![code(&k), escape(&v)]).collect();
        // Many servers × identity keys: folded past a dozen, so the decision stays in view.
        let _ = write!(
            page.out,
            "<div><details class=\"identities\"{}><summary><h3>Identities ({})</h3></summary>",
            if ids.len() <= 12 { " open" } else { "" },
            ids.len()
        );
        page.table("kv", &["", ""], &ids);
        page.push("</details></div>");
    }
    page.push("</div>\n");
    if report.summary.is_none() {
        page.push(
            "<p class=\"note\">No decision summary of this run was found (the recipe has no <code>decision</code>, \
             or the run was recorded by an anvil that did not store its outputs with it): \
             the sections below read the stored steps only.</p>",
        );
    }
    page.end();
}

fn compact(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// `a.b.c = leaf` pairs of a JSON object.
fn flatten(prefix: &str, value: &Value, out: &mut Vec<(String, String)>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                flatten(&key, v, out);
            }
        }
        Value::Array(items) if items.iter().any(|i| i.is_object()) => {
            for (i, v) in items.iter().enumerate() {
                flatten(&format!("{prefix}[{i}]"), v, out);
            }
        }
        other => out.push((prefix.to_string(), plain(other))),
    }
}
