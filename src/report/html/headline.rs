//! The Headline cells section: the decision summary's headline rows as one
//! wide table, every latency block at mean / p50 / p95 / p99.

use std::fmt::Write;

use super::format::{code, short};
use super::link::step_link;
use super::page::{Page, escape};
use super::table::num_td;
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
    let rows_in = report.summary.as_ref().map(|s| &s.headline_results);
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
    for row in rows_in {
        let fp = row.evidence.as_str();
        let step = report.steps.iter().find(|s| s.fingerprint == fp);
        let name = step.map(|s| s.name.as_str()).unwrap_or("");
        let mut cells = vec![
            step.map_or_else(|| code(short(fp)), step_link),
            escape(&row.profile),
            escape(&row.topology),
            row.requests.map(|n| n.to_string()).unwrap_or_default(),
            row.canaries_passed.map(|n| n.to_string()).unwrap_or_default(),
            num_td(&format!("{name}.aggregate_tok_s"), row.aggregate_tok_s),
        ];
        for (key, block) in HEADLINE_BLOCKS.iter().map(|(key, _)| (key, row.block(key))) {
            for (stat, v) in
                [("mean", &block.mean), ("p50", &block.p50), ("p95", &block.p95), ("p99", &block.p99)]
            {
                let v = v.as_f64();
                cells.push(num_td(&format!("{name}.{key}.{stat}"), v));
            }
        }
        rows.push(cells);
    }
    page.push("<div class=\"wide\">");
    page.table("headline", &header, &rows);
    page.push("</div>");
    if let Some(w) = report.summary.as_ref().map(|s| s.measurement.headline_workload.as_str()) {
        let _ = write!(page.out, "<p class=\"note\">Workload: {}</p>", escape(w));
    }
    page.end();
}
