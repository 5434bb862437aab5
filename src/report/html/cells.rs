//! The Cells section: one folding block per measured cell, with its facts,
//! latency distributions, request timeline, output rate, failures and
//! canaries; cells that did not finish get a line each.

use std::fmt::Write;

use super::cell_plots::{CellPlots, Row, col, get};
use super::failed::failed_evidence;
use super::format::{code, count, num};
use super::link::anchor;
use super::page::{Page, escape};
use super::stats::{
    CDF_POINTS, bin_rows, cdf, histogram_bins, histogram_bins_counted, quantile, rate_over_time,
};
use super::table::num_td;
use super::telemetry::{telemetry, tokens};
use crate::report::model::{Body, Cell, Report, Step};
use crate::report::plot::{self, Series, Span};

/// At most this many requests drawn on one cell's timeline (fewer when
/// there are many cells, so the page stays light).
const TIMELINE_MAX: usize = 300;

pub(super) fn cells(page: &mut Page, report: &Report) {
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
        if let Some(failed) = &step.failed {
            failed_evidence(page, report, step, failed);
        }
    }
    page.end();
}

fn cell_section(page: &mut Page, step: &Step, cell: &Cell, open: bool, timeline_max: usize) {
    cell_facts(page, step, cell, open);
    super::agents::jobs(page, step, cell);
    let Some(plots) = CellPlots::read(&cell.artifact_file).filter(|p| p.requests > 0) else {
        page.push("<p class=\"note\">The artifact holds no per-request timings.</p></details>\n");
        return;
    };
    page.push("<div class=\"grid\">");
    latency_figures(page, step, &plots);
    chunk_gap_figure(page, step, &plots);
    timeline_figure(page, step, &plots, timeline_max);
    output_rate_figure(page, step, &plots);
    stages(page, step, cell);
    page.push("</div>");
    failures_and_canaries(page, step, cell, &plots);
    tokens(page, step, cell);
    telemetry(page, step, cell);
    page.push("</details>\n");
}

/// The cell's summary line (it opens its `<details>`), its description,
/// and the table of its facts.
fn cell_facts(page: &mut Page, step: &Step, cell: &Cell, open: bool) {
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
}

/// TTFT and E2E as CDFs; TPOT and the decode rate as histograms.
fn latency_figures(page: &mut Page, step: &Step, plots: &CellPlots) {
    for (label, column) in [("TTFT", col::TTFT), ("E2E", col::E2E)] {
        let values = plots.eligible_sorted(column);
        let (points, thinned) = cdf(&values);
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
                let q = k * 5;
                vec![format!("p{q}"), num(quantile(&values, q))]
            })
            .collect();
        plots.recycle(values);
        let caption = match label {
            "TTFT" => {
                "Time to first token per request (eligible requests), cumulative: read the median at 0.5."
            }
            _ => "End-to-end latency per request (eligible requests), cumulative.",
        };
        page.figure(&svg, caption, &["percentile", &format!("{label} ms")], &rows);
    }

    // TPOT and decode rate.
    let tpots = plots.eligible_sorted(col::TPOT);
    let (bins, note) = histogram_bins(&tpots);
    plots.recycle(tpots);
    let svg = plot::histogram(&format!("{}: TPOT", step.name), "ms per output token", &bins, note.as_deref());
    page.figure(
        &svg,
        "Time per output token after the first, per request.",
        &["from ms", "to ms", "requests"],
        &bin_rows(&bins),
    );
    let decodes = plots.eligible_sorted(col::DECODE);
    let (bins, note) = histogram_bins(&decodes);
    plots.recycle(decodes);
    let svg =
        plot::histogram(&format!("{}: decode tok/s", step.name), "tokens per second", &bins, note.as_deref());
    page.figure(&svg, "Per-request decode rate.", &["from tok/s", "to tok/s", "requests"], &bin_rows(&bins));
}

/// Chunk gaps, pooled over requests (counted per distinct µs value).
fn chunk_gap_figure(page: &mut Page, step: &Step, plots: &CellPlots) {
    // Read from the counts in place (a list of them would be a second copy).
    let gaps = plots.gaps_us.iter().map(|(&us, &n)| (f64::from(us) / 1000.0, n));
    let (bins, note) = histogram_bins_counted(gaps);
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
            plots.gaps_us.values().sum::<u64>()
        ),
        &["from ms", "to ms", "gaps"],
        &bin_rows(&bins),
    );
}

/// The timeline: every `step_by`-th request in send order, so that at most
/// `timeline_max` are drawn.
fn timeline_figure(page: &mut Page, step: &Step, plots: &CellPlots, timeline_max: usize) {
    let total = plots.requests;
    let step_by = total.div_ceil(timeline_max).max(1);
    let shown: Vec<Row> = plots.every_in_send_order(step_by);
    let spans: Vec<Span> = shown
        .iter()
        .map(|r| {
            let send = r[col::ACTUAL_SEND];
            Span {
                send,
                first: get(r, col::TIME_TO_FIRST_OUTPUT).map(|f| send + f),
                end: r[col::FINISHED].max(send),
                failed: get(r, col::FAILURE).is_some(),
            }
        })
        .collect();
    let note = (step_by > 1)
        .then(|| format!("downsampled: {} of {total} requests (every {step_by}th)", shown.len()));
    let svg = plot::timeline(&format!("{}: request timeline", step.name), &spans, note.as_deref());
    let rows: Vec<Vec<String>> = shown
        .iter()
        .zip(&spans)
        .map(|(r, s)| {
            vec![
                (r[col::REQUEST_INDEX] as u64).to_string(),
                (r[col::REPEAT] as u32).to_string(),
                num(Some(s.send)),
                num(s.first),
                num(Some(s.end)),
                plots.failure_of(r).map(escape).unwrap_or_default(),
            ]
        })
        .collect();
    page.figure(
        &svg,
        "Each line is a request: amber from send to first output (queueing, prefill), blue to the end; red failed. A long amber start means queueing; a gap in blue lines a stall.",
        &["request", "repeat", "send ms", "first output ms", "end ms", "failure"],
        &rows,
    );
}

/// Output rate over the run (client side).
fn output_rate_figure(page: &mut Page, step: &Step, plots: &CellPlots) {
    let (series, width) = rate_over_time(plots);
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
}

/// Failures by class (the artifact's counts, else the records'), and the canaries.
fn failures_and_canaries(page: &mut Page, step: &Step, cell: &Cell, plots: &CellPlots) {
    let a = &cell.artifact;
    let mut failures: Vec<Vec<String>> =
        a.failure_counts.iter().map(|(class, n)| vec![code(class), n.to_string()]).collect();
    if failures.is_empty() {
        failures = plots.failures.iter().map(|(c, n)| vec![code(c), n.to_string()]).collect();
    }
    page.push("<div class=\"cols\"><div><h4>Failures by class</h4>");
    if failures.is_empty() {
        page.push("<p class=\"ok\">No failed requests.</p>");
    } else {
        page.table("failures", &["class", "requests"], &failures);
    }
    let (canaries_checked, canaries_passed) = (plots.canaries_checked, plots.canaries_passed);
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
}

/// A staged cell: its load over the run (the artifact's per-second series,
/// first repeat) with the stage edges, and each stage's figures.
fn stages(page: &mut Page, step: &Step, cell: &Cell) {
    let stages = &cell.artifact.stages;
    if stages.is_empty() {
        return;
    }
    let series = &cell.artifact.series;
    let repeat: Vec<f64> = series.repeat.iter().map(|&r| f64::from(r)).collect();
    let (t, in_flight, tok_s) = (&series.t, &series.in_flight, &series.output_tok_s);
    let first_run = |values: &[f64]| -> Vec<(f64, f64)> {
        t.iter().zip(values).zip(&repeat).filter(|(_, r)| **r == 0.0).map(|((t, v), _)| (*t, *v)).collect()
    };
    let starts: Vec<f64> = stages.iter().map(|s| s.window_ms[0] / 1000.0).collect();
    let (flight, tokens) = (first_run(in_flight), first_run(tok_s));
    let svg = plot::load_over_time(&format!("{}: load by stage", step.name), &flight, &tokens, &starts);
    let rows: Vec<Vec<String>> = flight
        .iter()
        .zip(&tokens)
        .map(|((t, f), (_, k))| vec![num(Some(*t)), num(Some(*f)), num(Some(*k))])
        .collect();
    page.figure(
        &svg,
        "Requests in flight (time-averaged) and output tokens per second, per second of the first run; grey lines mark where each stage starts.",
        &["s", "in flight", "output tok/s"],
        &rows,
    );
    let rows: Vec<Vec<String>> = stages
        .iter()
        .map(|s| {
            let m = |key: &str| s.metric(key).as_f64();
            let load = match s.arrival.rate_per_s {
                Some(rate) => format!("{} {rate} req/s (cap {})", s.arrival.kind, s.concurrency),
                None => format!("concurrency {}", s.concurrency),
            };
            vec![
                s.stage.to_string(),
                escape(&load),
                num(Some(s.duration_ms as f64 / 1000.0)),
                s.completed.to_string(),
                s.failed.to_string(),
                num(m("throughput_tok_s")),
                num(m("ttft_p50_ms")),
                num(m("ttft_p99_ms")),
                num(m("ttft_from_schedule_p99_ms")),
                num(m("e2e_p99_ms")),
            ]
        })
        .collect();
    page.table(
        "stages",
        &[
            "stage",
            "load",
            "s",
            "completed",
            "failed",
            "tok/s",
            "TTFT p50 ms",
            "TTFT p99 ms",
            "from schedule p99 ms",
            "E2E p99 ms",
        ],
        &rows,
    );
}
