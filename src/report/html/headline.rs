//! The Headline cells section: the decision summary's headline rows as one
//! wide table, every latency block at mean / p50 / p95 / p99.

use std::fmt::Write;

use serde_json::Value;

use super::format::{code, plain, short};
use super::link::step_link;
use super::table::num_td;
use super::{Page, escape};
use crate::report::model::Report;

const HEADLINE_BLOCKS: [(&str, &str); 5] = [
    ("ttft_ms", "TTFT ms"),
    ("e2e_ms", "E2E ms"),
    ("tpot_mean_itl_ms", "TPOT ms"),
    ("decode_tok_s", "decode tok/s"),
    ("effective_prefill_tok_s", "prefill tok/s"),
];

pub(super) fn headline(page: &mut Page, report: &Report) {
    page.section("headline", "Headline cells");
    let rows_in = report.summary.as_ref().and_then(|s| s.get("headline_results")?.as_array().cloned());
    let Some(rows_in) = rows_in.filter(|r| !r.is_empty()) else {
        page.push("<p class=\"note\">No headline cells (the decision names none, or no decision summary was found).</p>");
        page.end();
        return;
    };
    let mut header = vec!["cell", "profile", "topology", "requests", "canaries", "aggregate tok/s"];
    let mut labels = Vec::new();
    for (_, label) in HEADLINE_BLOCKS {
        for stat in ["mean", "p50", "p95", "p99"] {
            labels.push(format!("{label} {stat}"));
        }
    }
    header.extend(labels.iter().map(String::as_str));
    let mut rows = Vec::new();
    for row in &rows_in {
        let fp = row.get("evidence").and_then(Value::as_str).unwrap_or("");
        let step = report.steps.iter().find(|s| s.fingerprint == fp);
        let name = step.map(|s| s.name.as_str()).unwrap_or("");
        let mut cells = vec![
            step.map_or_else(|| code(short(fp)), step_link),
            escape(row.get("profile").and_then(Value::as_str).unwrap_or("")),
            escape(row.get("topology").and_then(Value::as_str).unwrap_or("")),
            row.get("requests").map(plain).unwrap_or_default(),
            row.get("canaries_passed").map(plain).unwrap_or_default(),
            num_td(&format!("{name}.aggregate_tok_s"), row.get("aggregate_tok_s").and_then(Value::as_f64)),
        ];
        for (key, _) in HEADLINE_BLOCKS {
            for stat in ["mean", "p50", "p95", "p99"] {
                let v = row.get(key).and_then(|b| b.get(stat)).and_then(Value::as_f64);
                cells.push(num_td(&format!("{name}.{key}.{stat}"), v));
            }
        }
        rows.push(cells);
    }
    page.push("<div class=\"wide\">");
    page.table("headline", &header, &rows);
    page.push("</div>");
    if let Some(w) =
        report.summary.as_ref().and_then(|s| s.pointer("/measurement/headline_workload")?.as_str())
    {
        let _ = write!(page.out, "<p class=\"note\">Workload: {}</p>", escape(w));
    }
    page.end();
}
