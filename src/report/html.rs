//! `anvil report`'s page: one self-contained HTML file (inline CSS and SVG,
//! no script, nothing fetched), top to bottom: the campaign, the decision,
//! gates, screens, headline cells, the cells compared, each cell, other
//! steps, and an index of every step with its fingerprint and files.
//!
//! Sections go by step kind (`SECTIONS`): a new kind (searches, stages)
//! is one more entry there and one function; until then its steps show in
//! "Other steps" as their stored JSON.

use std::fmt::Write;

use serde_json::Value;

use super::model::{Body, Cell, Report, Step, Timing};
use plotters::chart::SeriesLabelPosition;

use super::plot::{self, Bar, Series, Span, escape};
use crate::results::ScreenResult;

/// At most this many requests drawn on one cell's timeline (fewer when
/// there are many cells, so the page stays light).
const TIMELINE_MAX: usize = 300;
/// Points drawn per cumulative distribution.
const CDF_POINTS: usize = 200;
const BINS: usize = 40;

/// Render the page.
pub fn render(report: &Report) -> String {
    let mut page = Page { out: String::with_capacity(256 * 1024), tables: 0 };
    page.head(report);
    campaign(&mut page, report);
    for (_, section) in SECTIONS {
        section(&mut page, report);
    }
    page.out.push_str("</main>\n<footer>Written by anvil ");
    page.out.push_str(&escape(env!("CARGO_PKG_VERSION")));
    page.out.push_str(" <code>anvil report</code>. Self-contained: no script, font or file is fetched.</footer>\n</body>\n</html>\n");
    page.out
}

type Section = fn(&mut Page, &Report);

/// The page's sections after the campaign header, in order.
const SECTIONS: [(&str, Section); 8] = [
    ("decision", decision),
    ("gates", gates),
    ("screens", screens),
    ("headline", headline),
    ("across", across_cells),
    ("cells", cells),
    ("other", other_steps),
    ("steps", step_index),
];

struct Page {
    out: String,
    tables: usize,
}

impl Page {
    fn push(&mut self, s: &str) {
        self.out.push_str(s);
    }

    fn head(&mut self, report: &Report) {
        let _ = write!(
            self.out,
            "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
             <meta name=\"generator\" content=\"anvil {}\">\n<title>{} — anvil report</title>\n<style>{}</style>\n</head>\n<body>\n",
            escape(env!("CARGO_PKG_VERSION")),
            escape(&report.campaign),
            CSS
        );
    }

    /// A table: header cells, then rows of already-escaped cell HTML.
    fn table(&mut self, class: &str, header: &[&str], rows: &[Vec<String>]) {
        self.tables += 1;
        let _ = write!(self.out, "<table class=\"{class}\"><thead><tr>");
        for h in header {
            let _ = write!(self.out, "<th scope=\"col\">{}</th>", escape(h));
        }
        self.out.push_str("</tr></thead><tbody>");
        for row in rows {
            self.out.push_str("<tr>");
            for cell in row {
                if cell.starts_with("<td") || cell.starts_with("<th") {
                    self.out.push_str(cell);
                } else {
                    let _ = write!(self.out, "<td>{cell}</td>");
                }
            }
            self.out.push_str("</tr>");
        }
        self.out.push_str("</tbody></table>\n");
    }

    /// A plot and its numbers as a table, folded under it.
    fn figure(&mut self, svg: &str, caption: &str, header: &[&str], rows: &[Vec<String>]) {
        self.out.push_str("<figure>");
        self.out.push_str(svg);
        let _ = write!(self.out, "<figcaption>{}</figcaption>", escape(caption));
        let _ = write!(self.out, "<details class=\"data\"><summary>data ({} rows)</summary>", rows.len());
        self.table("data", header, rows);
        self.out.push_str("</details></figure>\n");
    }

    fn section(&mut self, id: &str, title: &str) {
        let _ = writeln!(self.out, "<section id=\"{id}\"><h2>{}</h2>", escape(title));
    }

    fn end(&mut self) {
        self.out.push_str("</section>\n");
    }
}

/// A number as the page shows it: 1 decimal from 100, 2 from 1, else 3.
pub fn num(value: Option<f64>) -> String {
    match value {
        Some(v) if v.is_finite() => {
            if v.abs() >= 100.0 {
                format!("{v:.1}")
            } else if v.abs() >= 1.0 {
                format!("{v:.2}")
            } else {
                format!("{v:.3}")
            }
        }
        _ => "—".into(),
    }
}

/// A load level: an integer as an integer.
pub fn count(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 { format!("{}", v as i64) } else { num(Some(v)) }
}

/// A table cell holding a number, with its exact stored value in `data-value`.
fn num_td(key: &str, value: Option<f64>) -> String {
    match value {
        Some(v) if v.is_finite() => {
            format!(
                "<td class=\"num\" data-metric=\"{}\" data-value=\"{v}\">{}</td>",
                escape(key),
                num(value)
            )
        }
        _ => format!("<td class=\"num\" data-metric=\"{}\">—</td>", escape(key)),
    }
}

fn status_td(label: &str, status: &str) -> String {
    format!("<td class=\"status {0}\" data-gate=\"{1}\">{0}</td>", escape(status), escape(label))
}

fn code(text: &str) -> String {
    format!("<code>{}</code>", escape(text))
}

fn short(fp: &str) -> &str {
    &fp[..fp.len().min(12)]
}

fn anchor(kind: &str, name: &str) -> String {
    let safe: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect();
    format!("{kind}-{safe}")
}

fn step_link(step: &Step) -> String {
    format!("<a href=\"#{}\">{}</a>", anchor("step", &step.name), escape(&step.name))
}

fn campaign(page: &mut Page, report: &Report) {
    let simulated = report.simulated_cells();
    let summary_simulated =
        report.summary.as_ref().and_then(|s| s.pointer("/measurement/simulated")).and_then(Value::as_bool);
    if !simulated.is_empty() || summary_simulated == Some(true) {
        let _ = writeln!(
            page.out,
            "<div class=\"banner-sim\" id=\"simulated\" role=\"alert\"><strong>SIMULATED SERVERS.</strong> \
             {} measured anvil's simulated engine, not real hardware: its numbers come from a performance model \
             and prove the campaign's logic, not a deployment.</div>",
            if simulated.is_empty() { "This campaign".to_string() } else { escape(&simulated.join(", ")) }
        );
    }
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
    page.push("</header>\n<nav><ul>");
    for (id, title) in [
        ("decision", "Decision"),
        ("gates", "Gates"),
        ("screens", "Screens"),
        ("headline", "Headline"),
        ("across", "Across cells"),
        ("cells", "Cells"),
        ("other", "Other steps"),
        ("steps", "Steps"),
    ] {
        let _ = write!(page.out, "<li><a href=\"#{id}\">{title}</a></li>");
    }
    page.push("</ul></nav>\n<main>\n");

    page.section("campaign", "Campaign");
    let mut rows = vec![
        vec!["recipe".into(), code(&run.recipe_path)],
        vec!["run".into(), code(&run.run_id)],
        vec!["status".into(), escape(run.status.as_str())],
        vec!["anvil".into(), escape(&report.anvil_version())],
    ];
    let invocation = report.invocation();
    if !invocation.is_null() {
        rows.push(vec!["invocation".into(), code(&compact(invocation))]);
    }
    page.push("<div class=\"cols\"><div><h3>Run</h3>");
    page.table("kv", &["", ""], &rows);
    page.push("</div><div><h3>Environment</h3>");
    let mut env = Vec::new();
    flatten("", report.environment(), &mut env);
    let env: Vec<Vec<String>> = env.into_iter().map(|(k, v)| vec![code(&k), escape(&v)]).collect();
    page.table("kv", &["", ""], &env);
    page.push("</div>");
    if let Some(identity) = report.summary.as_ref().and_then(|s| s.get("identity")) {
        let mut ids = Vec::new();
        flatten("", identity, &mut ids);
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
             or <code>results/&lt;campaign&gt;/decision-summary.json</code> is from another run): \
             the sections below read the stored steps only.</p>",
        );
    }
    page.end();
}

fn decision(page: &mut Page, report: &Report) {
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
    let summary_decision = report.summary.as_ref().and_then(|s| s.get("decision"));
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
                if let Some(v) = sd.get(key).filter(|v| !v.is_null())
                    && !d.statements.contains(key)
                {
                    rows.push(vec![code(key), escape(&plain(v))]);
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
    }
    if let Some(limitations) = report.summary.as_ref().and_then(|s| s.get("limitations")?.as_array().cloned())
        && !limitations.is_empty()
    {
        page.push("<h3>Limitations</h3><ul class=\"limitations\">");
        for l in limitations {
            let _ = write!(page.out, "<li>{}</li>", escape(&plain(&l)));
        }
        page.push("</ul>");
    }
    page.end();
}

fn gates(page: &mut Page, report: &Report) {
    page.section("gates", "Gates and checks");
    let mut rows: Vec<Vec<String>> = Vec::new();
    let from_summary = report.summary.as_ref().and_then(|s| s.get("gates")?.as_array().cloned());
    match from_summary {
        Some(gates) => {
            for g in gates {
                let name = g.get("name").and_then(Value::as_str).unwrap_or("");
                let status = g.get("status").and_then(Value::as_str).unwrap_or("missing");
                let step = name.split_once(' ').and_then(|(_, n)| report.steps.iter().find(|s| s.name == n));
                rows.push(vec![
                    step.map_or_else(|| escape(name), |s| format!("{} {}", escape(&s.kind), step_link(s))),
                    status_td(name, status),
                    escape(g.get("detail").and_then(Value::as_str).unwrap_or("")),
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
    page.end();
}

/// The across-repeats key of a screen metric, for its whiskers.
fn repeats_key(metric: &str) -> &str {
    match metric {
        "aggregate_tok_s" => "throughput_tok_s",
        other => other,
    }
}

fn screens(page: &mut Page, report: &Report) {
    page.section("screens", "Screens");
    let screens: Vec<(&Step, &ScreenResult)> = report
        .steps
        .iter()
        .filter_map(|s| match &s.body {
            Body::Screen(r) => Some((s, r)),
            _ => None,
        })
        .collect();
    if screens.is_empty() {
        page.push("<p class=\"note\">No screens.</p>");
    }
    for (step, screen) in screens {
        let _ = write!(page.out, "<h3>screen {}</h3>", step_link(step));
        if let Some(d) = &step.description {
            let _ = write!(page.out, "<p>{}</p>", escape(d));
        }
        let verdict = if screen.meaningful {
            format!(
                "winner <strong class=\"winner\" data-screen=\"{0}\">{1}</strong>",
                escape(&step.name),
                escape(&screen.winner)
            )
        } else {
            format!(
                "<strong class=\"no-difference\" data-screen=\"{}\">no meaningful difference</strong> (best measured: {})",
                escape(&step.name),
                escape(&screen.winner)
            )
        };
        let _ = write!(page.out, "<p>{verdict} — {}</p>", escape(&screen.selection_reason));
        let mut bars = Vec::new();
        let mut rows = Vec::new();
        for (name, value) in screen.values.iter() {
            let cell = report.cells().find(|(s, _)| s.name == name).map(|(_, c)| c);
            let across = cell.and_then(|c| c.result.repeats.get(repeats_key(&screen.metric)));
            let ci = across.and_then(|a| Some((a.get("ci95_low")?.as_f64()?, a.get("ci95_high")?.as_f64()?)));
            let samples = across.and_then(|a| a.get("samples")?.as_u64()).unwrap_or(1);
            let rank = screen.ranking.iter().position(|r| r == name).map(|i| i + 1);
            let winner = screen.meaningful && name == screen.winner;
            bars.push(Bar {
                label: name.to_string(),
                value: value.unwrap_or(0.0),
                interval: ci,
                highlight: winner,
            });
            rows.push(vec![
                escape(name),
                num_td(&format!("{}.{}", name, screen.metric), *value),
                num_td("ci95_low", ci.map(|c| c.0)),
                num_td("ci95_high", ci.map(|c| c.1)),
                samples.to_string(),
                rank.map_or_else(|| "—".into(), |r| r.to_string()),
                if winner { "winner".into() } else { String::new() },
            ]);
        }
        let title = format!("{} by {} ({})", step.name, screen.metric, screen.goal.as_str());
        let svg = plot::bars(&title, &screen.metric, &bars);
        let caption = if screen.meaningful {
            format!(
                "The winner ({}) is green; whiskers are 95% intervals across repeats where there are repeats.",
                screen.winner
            )
        } else {
            "No meaningful difference: no bar is marked as the winner. Whiskers are 95% intervals across repeats where there are repeats.".into()
        };
        page.figure(
            &svg,
            &caption,
            &["variant", &screen.metric, "ci95 low", "ci95 high", "repeats", "rank", ""],
            &rows,
        );
    }
    page.end();
}

const HEADLINE_BLOCKS: [(&str, &str); 5] = [
    ("ttft_ms", "TTFT ms"),
    ("e2e_ms", "E2E ms"),
    ("tpot_mean_itl_ms", "TPOT ms"),
    ("decode_tok_s", "decode tok/s"),
    ("effective_prefill_tok_s", "prefill tok/s"),
];

fn headline(page: &mut Page, report: &Report) {
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

fn across_cells(page: &mut Page, report: &Report) {
    page.section("across", "Across cells");
    let cells: Vec<(&Step, &Cell)> =
        report.cells().filter(|(_, c)| c.result.aggregate_tok_s.is_some()).collect();
    if cells.len() < 2 {
        page.push("<p class=\"note\">Fewer than two measured cells: nothing to compare.</p>");
        page.end();
        return;
    }
    // Throughput against load, one series per server.
    type Points = Vec<(f64, f64)>;
    let mut by_server: Vec<(String, Points, Vec<String>)> = Vec::new();
    let mut axis = "concurrency";
    for (step, cell) in &cells {
        let Some((name, x)) = cell.load_axis() else { continue };
        axis = name;
        let y = cell.result.aggregate_tok_s.unwrap_or(0.0);
        let server = cell.server();
        match by_server.iter_mut().find(|(s, _, _)| *s == server) {
            Some((_, points, names)) => {
                points.push((x, y));
                names.push(step.name.clone());
            }
            None => by_server.push((server, vec![(x, y)], vec![step.name.clone()])),
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
    let mut rows = Vec::new();
    for (step, cell) in &cells {
        rows.push(vec![
            step_link(step),
            escape(&cell.server()),
            cell.load_axis().map(|(_, x)| count(x)).unwrap_or_default(),
            num_td(&format!("{}.aggregate_tok_s", step.name), cell.result.aggregate_tok_s),
            num_td(&format!("{}.ttft_p50_ms", step.name), cell.result.ttft_p50_ms),
            num_td(&format!("{}.ttft_p99_ms", step.name), cell.result.ttft_p99_ms),
            num_td(&format!("{}.e2e_p50_ms", step.name), cell.metric("e2e_p50_ms")),
        ]);
    }
    page.figure(
        &svg,
        "Each point is a cell; a server's cells are joined in order of load.",
        &["cell", "server", axis, "aggregate tok/s", "TTFT p50 ms", "TTFT p99 ms", "E2E p50 ms"],
        &rows,
    );

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
    page.end();
}

/// Indices of the points no other point beats on both: higher x, lower y.
pub fn pareto(points: &[(f64, f64, &str)]) -> Vec<usize> {
    (0..points.len())
        .filter(|&i| {
            let (x, y, _) = points[i];
            !points.iter().any(|&(ox, oy, _)| ox >= x && oy <= y && (ox > x || oy < y))
        })
        .collect()
}

fn cells(page: &mut Page, report: &Report) {
    page.section("cells", "Cells");
    let all: Vec<(&Step, &Cell)> = report.cells().collect();
    if all.is_empty() {
        page.push("<p class=\"note\">No measured cells.</p>");
    }
    let headline = report.headline_names();
    let timeline_max = (8_000 / all.len().max(1)).clamp(50, TIMELINE_MAX);
    for (i, (step, cell)) in all.iter().enumerate() {
        let open = headline.contains(&step.name) || (headline.is_empty() && i == 0) || all.len() <= 3;
        cell_section(page, step, cell, open, timeline_max);
    }
    // Cells that did not finish still get a line.
    for step in report.steps.iter().filter(|s| s.kind == "cell" && matches!(s.body, Body::Missing(_))) {
        let _ = write!(
            page.out,
            "<p class=\"note\" id=\"{}\">cell {}: {} — {}</p>",
            anchor("cell", &step.name),
            escape(&step.name),
            escape(&step.status),
            escape(&step.detail)
        );
    }
    page.end();
}

fn cell_section(page: &mut Page, step: &Step, cell: &Cell, open: bool, timeline_max: usize) {
    let r = &cell.result;
    let a = &cell.artifact;
    let _ = writeln!(
        page.out,
        "<details class=\"cell\" id=\"{}\"{}><summary><strong>{}</strong> — {} · {} ok / {} failed · {} tok/s · TTFT p50 {} ms{}</summary>",
        anchor("cell", &step.name),
        if open { " open" } else { "" },
        escape(&step.name),
        escape(&cell.server()),
        r.completed,
        r.failed,
        num(r.aggregate_tok_s),
        num(r.ttft_p50_ms),
        if r.simulated { " · <span class=\"sim-tag\">simulated</span>" } else { "" }
    );
    if let Some(d) = &step.description {
        let _ = write!(page.out, "<p>{}</p>", escape(d));
    }
    let facts = vec![
        vec!["engine".into(), escape(&r.engine), "model".into(), escape(a.model.as_deref().unwrap_or("—"))],
        vec![
            "load".into(),
            escape(&cell.load_axis().map(|(k, v)| format!("{k} {}", count(v))).unwrap_or_default()),
            "context tokens".into(),
            a.context_tokens.map(|c| c.to_string()).unwrap_or_default(),
        ],
        vec![
            "requests".into(),
            r.requests.map(|n| n.to_string()).unwrap_or_default(),
            "wall clock ms".into(),
            num(Some(r.wall_clock_ms)),
        ],
        vec![
            "aggregate tok/s".into(),
            num_td(&format!("{}.aggregate_tok_s", step.name), r.aggregate_tok_s),
            "TTFT p50 / p99 ms".into(),
            format!("{} / {}", num(r.ttft_p50_ms), num(r.ttft_p99_ms)),
        ],
        vec![
            "decode tok/s mean".into(),
            num(r.decode_tok_s_mean),
            "canaries".into(),
            format!(
                "{} of {}",
                r.canaries_passed.map(|n| n.to_string()).unwrap_or_else(|| "—".into()),
                r.requests.map(|n| n.to_string()).unwrap_or_else(|| "—".into())
            ),
        ],
    ];
    page.table("kv facts", &["", "", "", ""], &facts);
    let timings = &a.request_timings;
    if timings.is_empty() {
        page.push("<p class=\"note\">The artifact holds no per-request timings.</p></details>\n");
        return;
    }
    let eligible: Vec<&Timing> = timings.iter().filter(|t| t.performance_eligible).collect();
    page.push("<div class=\"grid\">");

    // TTFT and E2E distributions.
    let ttft = sorted(eligible.iter().filter_map(|t| t.ttft_ms));
    let e2e = sorted(eligible.iter().filter_map(|t| t.e2e_ms));
    for (label, values) in [("TTFT", &ttft), ("E2E", &e2e)] {
        let (points, thinned) = cdf(values);
        let note = thinned.then(|| format!("CDF drawn through {CDF_POINTS} of {} points", values.len()));
        let svg = plot::lines(
            &format!("{}: {label} (CDF)", step.name),
            "ms",
            "fraction of requests",
            &[Series { name: label.into(), points }],
            note.as_deref(),
        );
        let rows: Vec<Vec<String>> = (0..=20)
            .map(|k| {
                let q = k as f64 * 5.0;
                vec![format!("p{q:.0}"), num(quantile(values, q))]
            })
            .collect();
        let caption = match label {
            "TTFT" => {
                "Time to first token per request (eligible requests), cumulative: read the median at 0.5."
            }
            _ => "End-to-end latency per request (eligible requests), cumulative.",
        };
        page.figure(&svg, caption, &["percentile", &format!("{label} ms")], &rows);
    }

    // TPOT and decode rate.
    let tpot = sorted(eligible.iter().filter_map(|t| t.tpot_ms));
    let (bins, note) = histogram_bins(&tpot);
    let svg = plot::histogram(&format!("{}: TPOT", step.name), "ms per output token", &bins, note.as_deref());
    page.figure(
        &svg,
        "Time per output token after the first, per request.",
        &["from ms", "to ms", "requests"],
        &bin_rows(&bins),
    );
    let decode = sorted(eligible.iter().filter_map(|t| t.decode_tok_s));
    let (bins, note) = histogram_bins(&decode);
    let svg =
        plot::histogram(&format!("{}: decode tok/s", step.name), "tokens per second", &bins, note.as_deref());
    page.figure(&svg, "Per-request decode rate.", &["from tok/s", "to tok/s", "requests"], &bin_rows(&bins));

    // Chunk gaps, pooled over requests.
    let gaps = sorted(eligible.iter().flat_map(|t| t.chunk_gaps_us.iter().map(|&g| g as f64 / 1000.0)));
    let (bins, note) = histogram_bins(&gaps);
    let svg = plot::histogram(
        &format!("{}: chunk gaps", step.name),
        "ms between streamed chunks",
        &bins,
        note.as_deref(),
    );
    page.figure(
        &svg,
        &format!(
            "Raw gaps between consecutive output-bearing chunks, {} gaps over every eligible request.",
            gaps.len()
        ),
        &["from ms", "to ms", "gaps"],
        &bin_rows(&bins),
    );

    // The timeline.
    let mut by_send: Vec<&Timing> = timings.iter().collect();
    by_send.sort_by(|a, b| a.actual_send_ms.total_cmp(&b.actual_send_ms));
    let step_by = by_send.len().div_ceil(timeline_max).max(1);
    let shown: Vec<&Timing> = by_send.iter().copied().step_by(step_by).collect();
    let spans: Vec<Span> = shown
        .iter()
        .map(|t| Span {
            send: t.actual_send_ms,
            first: t.time_to_first_output_ms.map(|f| t.actual_send_ms + f),
            end: t.finished_ms.max(t.actual_send_ms),
            failed: t.failure.is_some(),
        })
        .collect();
    let note = (step_by > 1)
        .then(|| format!("downsampled: {} of {} requests (every {step_by}th)", shown.len(), by_send.len()));
    let svg = plot::timeline(&format!("{}: request timeline", step.name), &spans, note.as_deref());
    let rows: Vec<Vec<String>> = shown
        .iter()
        .zip(&spans)
        .map(|(t, s)| {
            vec![
                t.request_index.to_string(),
                t.repeat.to_string(),
                num(Some(s.send)),
                num(s.first),
                num(Some(s.end)),
                t.failure.as_ref().map(|f| escape(&f.class)).unwrap_or_default(),
            ]
        })
        .collect();
    page.figure(
        &svg,
        "Each line is a request: amber from send to first output (queueing, prefill), blue to the end; red failed. A long amber start means queueing; a gap in blue lines a stall.",
        &["request", "repeat", "send ms", "first output ms", "end ms", "failure"],
        &rows,
    );

    // Output rate over the run (client side).
    let (series, width) = rate_over_time(timings);
    let svg = plot::lines(
        &format!("{}: output tokens per second over the run", step.name),
        "s after the run started",
        "tok/s",
        &[Series { name: "output tok/s".into(), points: series.clone() }],
        None,
    );
    let rows: Vec<Vec<String>> = series.iter().map(|(t, v)| vec![num(Some(*t)), num(Some(*v))]).collect();
    page.figure(
        &svg,
        &format!("Output tokens of requests finishing in each {:.2} s window, as a rate (client-side throughput over time).", width),
        &["window end s", "tok/s"],
        &rows,
    );
    page.push("</div>");

    // Failures and canaries.
    let mut failures: Vec<Vec<String>> =
        a.failure_counts.iter().map(|(class, n)| vec![code(class), n.to_string()]).collect();
    if failures.is_empty() {
        let mut counted: std::collections::BTreeMap<&str, u64> = Default::default();
        for t in timings {
            if let Some(f) = &t.failure {
                *counted.entry(f.class.as_str()).or_default() += 1;
            }
        }
        failures = counted.into_iter().map(|(c, n)| vec![code(c), n.to_string()]).collect();
    }
    page.push("<div class=\"cols\"><div><h4>Failures by class</h4>");
    if failures.is_empty() {
        page.push("<p class=\"ok\">No failed requests.</p>");
    } else {
        page.table("failures", &["class", "requests"], &failures);
    }
    let canaries_checked = timings.iter().filter(|t| t.request_canary.is_some()).count();
    let canaries_passed =
        timings.iter().filter(|t| t.request_canary.as_ref().is_some_and(|c| c.passed)).count();
    page.push("</div><div><h4>Canaries</h4>");
    if canaries_checked == 0 {
        page.push("<p class=\"note\">Canaries were off for this cell.</p>");
    } else {
        let class = if canaries_passed == canaries_checked { "ok" } else { "bad" };
        let _ = write!(
            page.out,
            "<p class=\"{class}\" data-canaries=\"{}\">{canaries_passed} of {canaries_checked} requests carried their own marker and no other.</p>",
            escape(&step.name)
        );
    }
    page.push("</div></div>");
    telemetry(page, step, cell);
    page.push("</details>\n");
}

fn telemetry(page: &mut Page, step: &Step, cell: &Cell) {
    let t = &cell.artifact.telemetry;
    let deltas = t.get("server_metrics_delta").and_then(Value::as_array);
    let mut rows = Vec::new();
    for replica in deltas.into_iter().flatten() {
        let name = replica.get("replica").and_then(Value::as_str).unwrap_or("");
        if let Some(delta) = replica.get("delta").and_then(Value::as_object) {
            for (metric, v) in delta {
                if v.as_f64().is_some_and(|v| v != 0.0) {
                    rows.push(vec![escape(name), code(metric), num(v.as_f64())]);
                }
            }
        }
    }
    let gpu = t.get("gpu");
    let gpus = gpu.and_then(|g| g.get("gpus")).and_then(Value::as_object);
    if rows.is_empty() && gpus.is_none() {
        return;
    }
    let _ = write!(page.out, "<h4>Server telemetry ({})</h4>", escape(&step.name));
    if !rows.is_empty() {
        page.push("<details class=\"data\"><summary>Prometheus counters: change over the cell (");
        page.push(&rows.len().to_string());
        page.push(" non-zero)</summary>");
        page.table("telemetry", &["replica", "metric", "delta"], &rows);
        page.push("</details>");
    }
    match gpus {
        Some(gpus) => {
            let mut rows = Vec::new();
            for (id, g) in gpus {
                for field in [
                    "power_w",
                    "sm_clock_mhz",
                    "mem_clock_mhz",
                    "memory_used_mib",
                    "temperature_c",
                    "utilization_pct",
                ] {
                    if let Some(f) = g.get(field) {
                        rows.push(vec![
                            escape(id),
                            code(field),
                            num(f.get("mean").and_then(Value::as_f64)),
                            num(f.get("min").and_then(Value::as_f64)),
                            num(f.get("max").and_then(Value::as_f64)),
                        ]);
                    }
                }
            }
            page.table("telemetry", &["GPU", "field", "mean", "min", "max"], &rows);
        }
        None => {
            let why = gpu.and_then(|g| g.get("why")).and_then(Value::as_str).unwrap_or("not sampled");
            let _ = write!(page.out, "<p class=\"note\">No GPU telemetry: {}.</p>", escape(why));
        }
    }
}

fn other_steps(page: &mut Page, report: &Report) {
    page.section("other", "Other steps");
    let mut rows = Vec::new();
    let mut unknown = Vec::new();
    for step in &report.steps {
        match &step.body {
            Body::Task(task) => rows.push(vec![
                format!("{} {}", escape(&step.kind), step_link(step)),
                task.exit_code.map_or_else(|| "—".into(), |c| c.to_string()),
                format!("<pre>{}</pre>", escape(&first_lines(&task.stdout, 6))),
                format!("<pre>{}</pre>", escape(&first_lines(&task.stderr, 6))),
            ]),
            Body::Other(value) => unknown.push((step, value)),
            _ => {}
        }
    }
    if rows.is_empty() && unknown.is_empty() {
        page.push("<p class=\"note\">No tasks.</p>");
    }
    if !rows.is_empty() {
        page.table("tasks", &["task", "exit", "stdout", "stderr"], &rows);
    }
    for (step, value) in unknown {
        let _ = write!(
            page.out,
            "<h3>{} {}</h3><pre class=\"json\">{}</pre>",
            escape(&step.kind),
            step_link(step),
            escape(&serde_json::to_string_pretty(value).unwrap_or_default())
        );
    }
    page.end();
}

fn step_index(page: &mut Page, report: &Report) {
    page.section("steps", "Steps");
    page.push("<div class=\"wide\"><table class=\"steps\"><thead><tr><th>step</th><th>kind</th><th>status</th><th>duration</th><th>fingerprint</th><th>show</th><th>stored files</th></tr></thead><tbody>");
    for step in &report.steps {
        let files: Vec<String> = step
            .files
            .iter()
            .map(|f| match (&step.dir, report.link_files) {
                (Some(dir), true) => {
                    format!(
                        "<a href=\"file://{}\">{}</a>",
                        escape(&dir.join(f).display().to_string()),
                        escape(f)
                    )
                }
                _ => code(&format!("entries/{}/{f}", short(&step.fingerprint))),
            })
            .collect();
        let _ = write!(
            page.out,
            "<tr id=\"{}\"><td>{}</td><td>{}</td><td class=\"status {}\">{}</td><td class=\"num\">{}</td><td><code title=\"{}\">{}</code></td><td><code>anvil show {}</code></td><td>{}</td></tr>",
            anchor("step", &step.name),
            escape(&step.name),
            escape(&step.kind),
            escape(&step.status),
            escape(&step.status),
            duration(step.duration_ms),
            escape(&step.fingerprint),
            escape(short(&step.fingerprint)),
            escape(short(&step.fingerprint)),
            files.join(" ")
        );
    }
    page.push("</tbody></table></div>");
    page.end();
}

fn duration(ms: u64) -> String {
    match ms {
        0 => "-".into(),
        1..1000 => format!("{ms}ms"),
        _ => format!("{:.1}s", ms as f64 / 1000.0),
    }
}

fn sorted(values: impl Iterator<Item = f64>) -> Vec<f64> {
    let mut v: Vec<f64> = values.filter(|v| v.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    v
}

/// Nearest-rank percentile of sorted values.
fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((q / 100.0) * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

/// Step-free CDF points (value, fraction ≤ value), at most CDF_POINTS; true when thinned.
fn cdf(sorted: &[f64]) -> (Vec<(f64, f64)>, bool) {
    let n = sorted.len();
    if n <= CDF_POINTS {
        return (sorted.iter().enumerate().map(|(i, &v)| (v, (i + 1) as f64 / n as f64)).collect(), false);
    }
    let points = (0..CDF_POINTS)
        .map(|k| {
            let i = (k * (n - 1)) / (CDF_POINTS - 1);
            (sorted[i], (i + 1) as f64 / n as f64)
        })
        .collect();
    (points, true)
}

/// Equal-width bins from the minimum to the p99.5; values above fold into
/// the last bin, and the note says so.
fn histogram_bins(sorted: &[f64]) -> (Vec<(f64, f64, u64)>, Option<String>) {
    let Some(&lo) = sorted.first() else { return (Vec::new(), None) };
    let top = quantile(sorted, 99.5).unwrap_or(lo);
    let max = *sorted.last().unwrap_or(&lo);
    let hi = if top > lo { top } else { lo + 1e-6_f64.max(lo.abs() * 0.01) };
    let bins = BINS.min(sorted.len().max(1));
    let width = (hi - lo) / bins as f64;
    let mut counts = vec![0u64; bins];
    for &v in sorted {
        let i = (((v - lo) / width) as usize).min(bins - 1);
        counts[i] += 1;
    }
    let folded = sorted.iter().filter(|&&v| v > hi).count();
    let note = (folded > 0)
        .then(|| format!("{folded} values above {} (max {}) in the last bin", num(Some(hi)), num(Some(max))));
    let out = counts
        .into_iter()
        .enumerate()
        .map(|(i, n)| (lo + i as f64 * width, lo + (i + 1) as f64 * width, n))
        .collect();
    (out, note)
}

fn bin_rows(bins: &[(f64, f64, u64)]) -> Vec<Vec<String>> {
    bins.iter().map(|(lo, hi, n)| vec![num(Some(*lo)), num(Some(*hi)), n.to_string()]).collect()
}

/// Output tokens of requests finishing in each window, as tok/s; ≤ 60 windows.
fn rate_over_time(timings: &[Timing]) -> (Vec<(f64, f64)>, f64) {
    let end = timings.iter().map(|t| t.finished_ms).fold(0.0, f64::max) / 1000.0;
    if end <= 0.0 {
        return (Vec::new(), 0.0);
    }
    let windows = (timings.len() / 8).clamp(2, 60);
    let width = end / windows as f64;
    let mut tokens = vec![0u64; windows];
    for t in timings.iter().filter(|t| t.failure.is_none()) {
        let i = ((t.finished_ms / 1000.0 / width) as usize).min(windows - 1);
        tokens[i] += t.output_tokens.unwrap_or(0);
    }
    let points =
        tokens.iter().enumerate().map(|(i, &n)| ((i + 1) as f64 * width, n as f64 / width)).collect();
    (points, width)
}

fn first_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().take(n).collect();
    let more = text.lines().count() > n;
    format!("{}{}", lines.join("\n"), if more { "\n…" } else { "" })
}

/// A value as plain text: strings without quotes.
fn plain(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => "—".into(),
        other => other.to_string(),
    }
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

const CSS: &str = r#"
:root{--fg:#1b1f24;--muted:#5b6470;--line:#d9dee4;--bg:#fff;--pass:#0a7a45;--fail:#b3261e;--warn:#8a5a00;--accent:#0072b2}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;color:var(--fg);background:var(--bg)}
header,main,nav,footer{max-width:1240px;margin:0 auto;padding:0 20px}
header h1{margin:18px 0 4px;font-size:26px}
.lead{font-size:16px;margin:0 0 6px}
.meta,.note,footer{color:var(--muted)}
nav ul{list-style:none;padding:0;margin:8px 0 0;display:flex;flex-wrap:wrap;gap:6px 14px;border-bottom:1px solid var(--line);padding-bottom:8px}
nav a{color:var(--accent);text-decoration:none}
section{margin:22px 0;padding-top:4px}
h2{font-size:20px;border-bottom:2px solid var(--line);padding-bottom:4px;margin:0 0 10px}
h3{font-size:16px;margin:16px 0 6px}h4{font-size:14px;margin:12px 0 4px}
table{border-collapse:collapse;margin:6px 0 10px;font-size:13px}
th,td{border:1px solid var(--line);padding:3px 7px;text-align:left;vertical-align:top}
thead th{background:#f3f5f7}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
table.kv td:first-child{color:var(--muted)}
table.kv thead{display:none}
.wide{overflow-x:auto}
.cols{display:flex;flex-wrap:wrap;gap:8px 28px}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(520px,1fr));gap:10px 18px}
figure{margin:6px 0;border:1px solid var(--line);border-radius:6px;padding:6px 8px;background:#fff}
figcaption{color:var(--muted);font-size:12px;margin:2px 0}
svg.plot{width:100%;max-width:860px;height:auto;display:block}
details.identities>summary h3{display:inline}details.identities>summary{cursor:pointer}
details.data summary{cursor:pointer;color:var(--accent);font-size:12px}
details.cell{border:1px solid var(--line);border-radius:8px;padding:6px 12px;margin:10px 0;background:#fcfcfd}
details.cell>summary{cursor:pointer;font-size:15px;padding:4px 0}
.status.passed,.passed,.ok{color:var(--pass);font-weight:600}
.status.rejected,.status.failed,.rejected,.bad{color:var(--fail);font-weight:600}
.status.missing,.status.skipped{color:var(--warn);font-weight:600}
.label{display:inline-block;background:#e8f1fa;border:1px solid #b9d3ea;border-radius:12px;padding:1px 10px;margin:2px 4px 2px 0;font-weight:600}
.winner{color:var(--pass)}.no-difference{color:var(--warn)}
.banner-sim{background:#fff3cd;border-bottom:4px solid #d08c00;color:#5c3b00;padding:14px 20px;font-size:17px;text-align:center}
.sim-tag{background:#fff3cd;border:1px solid #d08c00;border-radius:4px;padding:0 6px;font-size:12px}
pre{margin:0;white-space:pre-wrap;font-size:12px}
code{font-size:12px;background:#f3f5f7;padding:0 3px;border-radius:3px}
footer{border-top:1px solid var(--line);padding:10px 20px 30px}
@media print{details{display:block}nav{display:none}}
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_round_as_documented() {
        assert_eq!(num(Some(647.1517)), "647.2");
        assert_eq!(num(Some(63.395)), "63.40");
        assert_eq!(num(Some(0.12345)), "0.123");
        assert_eq!(num(None), "—");
        assert_eq!(num(Some(f64::NAN)), "—");
    }

    #[test]
    fn pareto_keeps_the_undominated() {
        let points = [(10.0, 5.0, "a"), (20.0, 6.0, "b"), (15.0, 7.0, "c"), (5.0, 4.0, "d")];
        assert_eq!(pareto(&points), vec![0, 1, 3]);
    }

    #[test]
    fn quantiles_are_nearest_rank() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile(&v, 50.0), Some(2.0));
        assert_eq!(quantile(&v, 0.0), Some(1.0));
        assert_eq!(quantile(&v, 100.0), Some(4.0));
    }

    #[test]
    fn cdf_thins_to_its_budget() {
        let v: Vec<f64> = (0..10_000).map(f64::from).collect();
        let (points, thinned) = cdf(&v);
        assert!(thinned);
        assert_eq!(points.len(), CDF_POINTS);
        assert_eq!(points.last().map(|p| p.1), Some(1.0));
    }

    #[test]
    fn histogram_counts_everything() {
        let v: Vec<f64> = (0..1000).map(|i| f64::from(i) / 10.0).collect();
        let (bins, note) = histogram_bins(&v);
        assert_eq!(bins.iter().map(|b| b.2).sum::<u64>(), 1000);
        assert!(note.is_some());
    }
}
