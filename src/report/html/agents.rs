//! Agent cells judged as jobs (docs/workloads.md "Job metrics"): in each
//! agent cell, a Jobs block (the cell's job metrics with their intervals)
//! and the timeline of its median task, call by call, its critical path
//! marked; across the run's agent cells (a search's probes among them),
//! task p90 against tasks completed per minute with the Pareto front.
//!
//! Everything comes from the cell's stored artifact: `jobs` (read with its
//! head) and, for the one task drawn, its calls' records (`agent` beside
//! their times), streamed from the file. A cell without agent traffic has
//! no `jobs` and gets nothing from here.

use std::fmt::Write;

use plotters::chart::SeriesLabelPosition;
use serde::Deserialize;

use super::format::{count, num};
use super::link::{anchor, step_link};
use super::page::{Page, escape};
use super::pareto::pareto;
use super::stats::quantile;
use super::table::num_td;
use crate::report::model::{Cell, FailureView, Jobs, Report, Step, TaskRow};
use crate::report::plot::{self, CallBar, Series};

/// At most this many calls of a task drawn (the first, by place in the task).
const CALLS_MAX: usize = 120;

/// A cell's Jobs block: its job metrics and its median task's timeline.
/// Nothing for a cell without agent traffic.
pub(super) fn jobs(page: &mut Page, step: &Step, cell: &Cell) {
    let Some(jobs) = &cell.artifact.jobs else { return };
    let _ = write!(
        page.out,
        "<div class=\"jobs\" id=\"{}\" data-jobs=\"{}\"><h4>Jobs</h4>\
         <p class=\"note\">The cell's agent tasks judged as jobs: a task counts when every call got a whole reply; \
         latencies are from a task's start to its last reply, with 95% intervals over tasks.</p>",
        anchor("jobs", &step.name),
        escape(&step.name)
    );
    figures(page, step, jobs);
    match median_task(jobs) {
        Some((task, why)) => timeline(page, step, cell, task, &why),
        None => page.push("<p class=\"note\">No task ran: no timeline.</p>"),
    }
    page.push("</div>");
}

/// The job metrics, as a key–value table like the cell's facts.
fn figures(page: &mut Page, step: &Step, jobs: &Jobs) {
    let key = |k: &str| format!("{}.{k}", step.name);
    let m = |k: &str| jobs.metric(k);
    let of = |part: Option<f64>, whole: Option<f64>| match (part, whole) {
        (Some(p), Some(w)) => format!("{} of {}", count(p), count(w)),
        _ => "—".into(),
    };
    let percentile = |p: u32| interval_td(jobs, &key(&format!("task_p{p}_ms")), &format!("task_p{p}"), "_ms");
    let failed_calls: u32 = jobs.tasks.iter().map(|t| t.failed_calls).sum();
    let with_deadline = jobs.tasks.iter().filter(|t| t.deadline_ms.is_some()).count();
    let rows = vec![
        vec![
            "tasks completed".into(),
            format!(
                "<td class=\"num\" data-metric=\"{}\" data-value=\"{}\">{}</td>",
                escape(&key("tasks_completed")),
                m("tasks_completed").unwrap_or(0.0),
                of(m("tasks_completed"), m("tasks"))
            ),
            "tasks completed per minute".into(),
            num_td(&key("tasks_per_min"), m("tasks_per_min")),
        ],
        vec!["task p50 ms (95% CI)".into(), percentile(50), "task p90 ms (95% CI)".into(), percentile(90)],
        vec![
            "task p95 ms (95% CI)".into(),
            percentile(95),
            "task mean ms".into(),
            num_td(&key("task_mean_ms"), m("task_mean_ms")),
        ],
        vec![
            "deadline met".into(),
            match m("task_deadline_share") {
                Some(v) => format!(
                    "{} · share <span data-metric=\"{}\" data-value=\"{v}\">{}</span>",
                    of(m("task_deadline_met"), Some(with_deadline as f64)),
                    escape(&key("task_deadline_share")),
                    escape(&interval_text(jobs, "task_deadline_share", "", share))
                ),
                None => "no deadline".into(),
            },
            "goodput (tasks in deadline) per minute".into(),
            num_td(&key("task_goodput_per_min"), m("task_goodput_per_min")),
        ],
        vec![
            "critical paths: server / tools".into(),
            format!(
                "{} / {}",
                share_span(&key("task_server_share"), m("task_server_share")),
                share_span(&key("task_tool_share"), m("task_tool_share"))
            ),
            "prompt tokens cached: server / ideal".into(),
            format!(
                "{} / {}",
                share_span(&key("task_cached_share"), m("task_cached_share")),
                share_span(&key("task_ideal_cached_share"), m("task_ideal_cached_share"))
            ),
        ],
        vec![
            "calls per task (mean)".into(),
            num_td(&key("task_calls_mean"), m("task_calls_mean")),
            "failed calls".into(),
            failed_calls.to_string(),
        ],
    ];
    page.table("kv jobs-figures", &["", "", "", ""], &rows);
}

/// A share as a percentage, its exact value in `data-value`.
fn share(v: f64) -> String {
    format!("{:.1}%", v * 100.0)
}

fn share_span(key: &str, value: Option<f64>) -> String {
    match value {
        Some(v) => format!("<span data-metric=\"{}\" data-value=\"{v}\">{}</span>", escape(key), share(v)),
        None => "—".into(),
    }
}

/// `stem` + `suffix` with its interval (`stem_ci95_low` + `suffix`, …), as
/// text: a null bound is unbounded (too few tasks to bound it), an absent
/// one unknown.
fn interval_text(jobs: &Jobs, stem: &str, suffix: &str, show: fn(f64) -> String) -> String {
    let bound = |side: &str, unbounded: &str| match jobs.metrics.get(&format!("{stem}_ci95_{side}{suffix}")) {
        Some(v) if v.is_null() => unbounded.to_string(),
        Some(v) => v.as_f64().map_or_else(|| "—".into(), show),
        None => "—".into(),
    };
    let value = jobs.metric(&format!("{stem}{suffix}")).map_or_else(|| "—".into(), show);
    format!("{value} ({} – {})", bound("low", "unbounded"), bound("high", "unbounded"))
}

/// A percentile's cell: the value and its interval, the exact value in
/// `data-value`.
fn interval_td(jobs: &Jobs, key: &str, stem: &str, suffix: &str) -> String {
    let value = jobs.metric(&format!("{stem}{suffix}"));
    let text = interval_text(jobs, stem, suffix, |v| num(Some(v)));
    match value {
        Some(v) => format!(
            "<td class=\"num\" data-metric=\"{}\" data-value=\"{v}\">{}</td>",
            escape(key),
            escape(&text)
        ),
        None => format!("<td class=\"num\" data-metric=\"{}\">—</td>", escape(key)),
    }
}

/// The task drawn: the one at the median latency (the nearest-rank p50 of
/// the completed tasks, as `task_p50_ms`; the first such by repeat and
/// place), or of all tasks when none completed; and why, in words.
fn median_task(jobs: &Jobs) -> Option<(&TaskRow, String)> {
    let completed: Vec<&TaskRow> = jobs.tasks.iter().filter(|t| t.completed).collect();
    let (pool, whose) = if completed.is_empty() {
        (jobs.tasks.iter().collect::<Vec<_>>(), "of all tasks (none completed)")
    } else {
        (completed, "of the completed tasks")
    };
    let mut latencies: Vec<f64> = pool.iter().map(|t| t.latency_ms).collect();
    latencies.sort_by(f64::total_cmp);
    let median = quantile(&latencies, 50)?;
    let mut at_median: Vec<&TaskRow> = pool.into_iter().filter(|t| t.latency_ms == median).collect();
    at_median.sort_by_key(|t| (t.repeat, t.task));
    let task = at_median.first()?;
    Some((
        task,
        format!(
            "the task at the median latency: its {} ms is the p50 {whose} (nearest rank over {}), so it shows a typical task, not the slowest",
            num(Some(median)),
            latencies.len()
        ),
    ))
}

/// One call's record, the fields the timeline uses.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct CallRecord {
    repeat: u32,
    intended_send_ms: f64,
    actual_send_ms: f64,
    finished_ms: f64,
    time_to_first_output_ms: Option<f64>,
    performance_eligible: bool,
    failure: Option<FailureView>,
    agent: Option<anvil_loadgen::AgentCallRecord>,
}

/// The calls of `task`, read from the artifact's records, by place in the task.
fn calls_of(cell: &Cell, task: &TaskRow) -> Result<Vec<CallRecord>, String> {
    let mut calls = Vec::new();
    anvil_evidence::artifact_file::for_each_record(&cell.artifact_file, |_, r: CallRecord| {
        if r.repeat == task.repeat && r.agent.as_ref().is_some_and(|a| a.task == task.task) {
            calls.push(r);
        }
        Ok::<(), std::convert::Infallible>(())
    })
    .map_err(|e| e.to_string())?;
    calls.sort_by_key(|r| r.agent.as_ref().map_or(0, |a| a.call));
    Ok(calls)
}

/// The task's calls on a time axis from its start, and their numbers.
fn timeline(page: &mut Page, step: &Step, cell: &Cell, task: &TaskRow, why: &str) {
    let calls = match calls_of(cell, task) {
        Ok(calls) if !calls.is_empty() => calls,
        Ok(_) => {
            page.push(
                "<p class=\"note\">The artifact holds no records of this task's calls: no timeline.</p>",
            );
            return;
        }
        Err(e) => {
            let _ = write!(page.out, "<p class=\"note\">The task's calls do not read: {}</p>", escape(&e));
            return;
        }
    };
    let drawn = &calls[..calls.len().min(CALLS_MAX)];
    let start = drawn.iter().find_map(|r| r.agent.as_ref().map(|a| a.task_start_ms)).unwrap_or(0.0);
    let id_of = |place: u32| {
        calls
            .iter()
            .filter_map(|r| r.agent.as_ref())
            .find(|a| a.call == place)
            .map_or_else(|| place.to_string(), |a| a.call_id.clone())
    };
    let bars = call_bars(drawn, start, task);
    let note =
        (calls.len() > drawn.len()).then(|| format!("the first {} of {} calls", drawn.len(), calls.len()));
    let title = format!("{}: task {} (repeat {})", step.name, task.task_id, task.repeat);
    let svg = plot::task_timeline(&title, &bars, note.as_deref());
    let rows = call_rows(drawn, &bars, &id_of);
    let path: Vec<String> = task.critical_path.iter().map(|&c| id_of(c)).collect();
    let caption = timeline_caption(task, why, &path);
    let _ = write!(
        page.out,
        "<div class=\"grid task-timeline\" data-task=\"{}\" data-repeat=\"{}\" data-critical-path=\"{}\">",
        escape(&task.task_id),
        task.repeat,
        escape(&path.join(" "))
    );
    page.figure(
        &svg,
        &caption,
        &[
            "call",
            "id",
            "parents",
            "delay ms",
            "ready ms",
            "sent ms",
            "first output ms",
            "end ms",
            "on server ms",
            "critical path",
            "failure",
        ],
        &rows,
    );
    page.push("</div>");
}

/// Each drawn call as a bar on the task's clock (`start`: the task's start, ms).
fn call_bars(drawn: &[CallRecord], start: f64, task: &TaskRow) -> Vec<CallBar> {
    drawn
        .iter()
        .filter_map(|r| {
            let a = r.agent.as_ref()?;
            let due = r.intended_send_ms - start;
            Some(CallBar {
                name: a.call_id.clone(),
                ready: (due - a.delay_ms).max(0.0),
                due,
                send: r.actual_send_ms - start,
                end: r.finished_ms - start,
                critical: task.critical_path.contains(&a.call),
                failed: !r.performance_eligible || r.failure.is_some(),
            })
        })
        .collect()
}

/// The timeline's table: a row per drawn call beside its bar (`id_of`: a
/// call's id by its place in the task).
fn call_rows(drawn: &[CallRecord], bars: &[CallBar], id_of: &dyn Fn(u32) -> String) -> Vec<Vec<String>> {
    drawn
        .iter()
        .zip(bars)
        .filter_map(|(r, b)| {
            let a = r.agent.as_ref()?;
            let parents: Vec<String> = a.parents.iter().map(|&p| id_of(p)).collect();
            Some(vec![
                a.call.to_string(),
                escape(&a.call_id),
                escape(&parents.join(", ")),
                num(Some(a.delay_ms)),
                num(Some(b.ready)),
                num(Some(b.send)),
                num(r.time_to_first_output_ms.map(|f| b.send + f)),
                num(Some(b.end)),
                num(Some(b.end - b.send)),
                if b.critical {
                    format!(
                        "<td class=\"critical\" data-critical-call=\"{}\">★ critical path</td>",
                        escape(&a.call_id)
                    )
                } else {
                    String::new()
                },
                r.failure.as_ref().map(|f| escape(&f.class)).unwrap_or_default(),
            ])
        })
        .collect()
}

/// What the timeline shows of the task (`why` it was drawn, its critical `path` by call id).
fn timeline_caption(task: &TaskRow, why: &str, path: &[String]) -> String {
    let deadline = match (task.deadline_ms, task.deadline_met) {
        (Some(d), Some(met)) => {
            format!(" Deadline {} ms: {}.", num(Some(d)), if met { "met" } else { "missed" })
        }
        _ => String::new(),
    };
    format!(
        "Task {} (repeat {}), {why}. One row per call, first call on top: grey the delay before it (tool or think time after its parents replied), \
         then a bar from its send to its reply's end. The critical path ({}) is vermillion and starred: along it {} ms on the server, {} ms in delays, {} ms in the client. \
         Blue calls are off the path; red ones failed. Latency {} ms.{deadline}",
        task.task_id,
        task.repeat,
        path.join(" → "),
        num(Some(task.server_ms)),
        num(Some(task.tool_ms)),
        num(Some(task.client_ms)),
        num(Some(task.latency_ms)),
    )
}

/// Where an agent cell sits on its load axis: closed loop, its concurrent
/// agents; open loop, the tasks per minute it offered (measured from the
/// tasks' starts: per repeat, the starts after the first over their span).
fn agent_load(cell: &Cell, jobs: &Jobs) -> Option<(&'static str, f64)> {
    let offered = &cell.result.load.as_ref()?.offered;
    if offered.axis == anvil_loadgen::LoadAxis::Concurrency {
        return Some(("concurrent agents", offered.value?));
    }
    let (mut after_first, mut span_ms) = (0usize, 0.0);
    let mut repeats: Vec<u32> = jobs.tasks.iter().map(|t| t.repeat).collect();
    repeats.sort_unstable();
    repeats.dedup();
    for repeat in repeats {
        let starts = jobs.tasks.iter().filter(|t| t.repeat == repeat).map(|t| t.start_ms);
        let (lo, hi) =
            starts.clone().fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), s| (l.min(s), h.max(s)));
        after_first += starts.count().saturating_sub(1);
        span_ms += (hi - lo).max(0.0);
    }
    (span_ms > 0.0).then(|| ("offered tasks per minute", after_first as f64 * 60_000.0 / span_ms))
}

/// Across the run's agent cells: task p90 against tasks completed per
/// minute, the cells on the Pareto front ringed (no other cell both
/// finishes more tasks per minute and has a lower task p90), task p90
/// against each load axis, and a table of them all. Nothing when the run
/// has no agent cell.
pub(super) fn front(page: &mut Page, report: &Report) {
    let cells: Vec<AgentCell<'_>> =
        report.cells().filter_map(|(s, c)| Some((s, c, c.artifact.jobs.as_ref()?))).collect();
    if cells.is_empty() {
        return;
    }
    page.push("<h3 id=\"jobs-front\">Agent cells as jobs</h3><div class=\"grid\">");
    let on_front = front_scatter(page, &cells);
    // Task p90 against each load axis, a series per server joined by load.
    let loads: Vec<Option<(&'static str, f64)>> = cells.iter().map(|(_, c, j)| agent_load(c, j)).collect();
    load_axis_figures(page, &cells, &loads);
    page.push("</div><div class=\"wide\">");
    front_table(page, &cells, &loads, &on_front);
    page.push("</div>");
}

/// An agent cell, its step and its job figures.
type AgentCell<'a> = (&'a Step, &'a Cell, &'a Jobs);

/// Task p90 against tasks completed per minute, the Pareto front ringed;
/// the names of the cells on the front.
fn front_scatter<'a>(page: &mut Page, cells: &[AgentCell<'a>]) -> Vec<&'a str> {
    let points: Vec<(f64, f64, &str)> = cells
        .iter()
        .filter_map(|(s, _, j)| Some((j.metric("tasks_per_min")?, j.metric("task_p90_ms")?, s.name.as_str())))
        .collect();
    let on_front: Vec<&str> = pareto(&points).into_iter().map(|i| points[i].2).collect();
    let mut front_points: Vec<(f64, f64)> =
        points.iter().filter(|p| on_front.contains(&p.2)).map(|p| (p.0, p.1)).collect();
    front_points.sort_by(|a, b| a.0.total_cmp(&b.0));
    let series = vec![(
        Series { name: "agent cells".into(), points: points.iter().map(|p| (p.0, p.1)).collect() },
        points.iter().map(|p| p.2.to_string()).collect(),
    )];
    let svg = plot::scatter(
        SeriesLabelPosition::UpperLeft,
        "Task p90 vs tasks completed per minute",
        "tasks completed per minute",
        "task p90 ms",
        &series,
        Some(&front_points),
        false,
    );
    page.push("<figure>");
    page.push(&svg);
    page.push(
        "<figcaption>Each point is an agent cell. Ringed points are on the Pareto front: no other cell both \
         completes more tasks per minute and has a lower task p90. The table below has the numbers.</figcaption></figure>",
    );
    on_front
}

/// Task p90 against each load axis (`loads`: each cell's), a series per
/// server joined in order of load.
fn load_axis_figures(page: &mut Page, cells: &[AgentCell<'_>], loads: &[Option<(&'static str, f64)>]) {
    let mut axes: Vec<&'static str> = loads.iter().flatten().map(|(a, _)| *a).collect();
    axes.sort_unstable();
    axes.dedup();
    for axis in axes {
        let mut by_server: Vec<(String, Vec<Named>)> = Vec::new();
        for ((step, cell, jobs), load) in cells.iter().zip(loads) {
            let (Some((a, x)), Some(y)) = (load, jobs.metric("task_p90_ms")) else { continue };
            if *a != axis {
                continue;
            }
            let server = cell.server();
            let point = ((*x, y), step.name.clone());
            match by_server.iter_mut().find(|(s, _)| *s == server) {
                Some((_, points)) => points.push(point),
                None => by_server.push((server, vec![point])),
            }
        }
        let series: Vec<(Series, Vec<String>)> = by_server
            .into_iter()
            .map(|(server, mut points)| {
                points.sort_by(|a, b| a.0.0.total_cmp(&b.0.0));
                let (points, names): (Vec<_>, Vec<_>) = points.into_iter().unzip();
                (Series { name: server, points }, names)
            })
            .collect();
        let svg = plot::scatter(
            SeriesLabelPosition::UpperLeft,
            &format!("Task p90 vs {axis}"),
            axis,
            "task p90 ms",
            &series,
            None,
            true,
        );
        page.push("<figure>");
        page.push(&svg);
        let _ = write!(
            page.out,
            "<figcaption>Task p90 of each agent cell against its {}; a server's cells joined in order of load.</figcaption></figure>",
            escape(axis)
        );
    }
}

/// A row per agent cell: its load, job figures, and whether it is on the front.
fn front_table(
    page: &mut Page,
    cells: &[AgentCell<'_>],
    loads: &[Option<(&'static str, f64)>],
    on_front: &[&str],
) {
    let rows: Vec<Vec<String>> = cells
        .iter()
        .zip(loads)
        .map(|((step, cell, jobs), load)| {
            let key = |k: &str| format!("{}.{k}", step.name);
            vec![
                step_link(step),
                escape(&cell.server()),
                escape(&load.map_or_else(|| "—".into(), |(a, x)| format!("{a} {}", load_value(x)))),
                num_td(&key("tasks_per_min"), jobs.metric("tasks_per_min")),
                interval_td(jobs, &key("task_p90_ms"), "task_p90", "_ms"),
                num_td(&key("task_goodput_per_min"), jobs.metric("task_goodput_per_min")),
                jobs.metric("task_deadline_share").map_or_else(|| "—".into(), share),
                if on_front.contains(&step.name.as_str()) {
                    format!("<td data-front=\"{}\">on the front</td>", escape(&step.name))
                } else {
                    String::new()
                },
            ]
        })
        .collect();
    page.table(
        "jobs-front",
        &[
            "cell",
            "server",
            "load",
            "tasks completed per minute",
            "task p90 ms (95% CI)",
            "goodput per minute",
            "deadline share",
            "Pareto",
        ],
        &rows,
    );
}

/// A point and the cell it stands for.
type Named = ((f64, f64), String);

/// A load value: whole counts whole, rates to a tenth.
fn load_value(x: f64) -> String {
    if x.fract() == 0.0 { count(x) } else { format!("{x:.1}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(task: u64, latency_ms: f64, completed: bool) -> TaskRow {
        TaskRow { task, latency_ms, completed, task_id: format!("t{task}"), ..TaskRow::default() }
    }

    #[test]
    fn the_median_task_is_the_nearest_rank_p50_of_completed_tasks() {
        let jobs = Jobs {
            metrics: serde_json::Map::new(),
            tasks: vec![
                task(0, 300.0, true),
                task(1, 100.0, true),
                task(2, 50.0, false),
                task(3, 200.0, true),
                task(4, 400.0, true),
            ],
        };
        // Completed latencies 100, 200, 300, 400: nearest rank p50 is 200.
        let (median, why) = median_task(&jobs).expect("a task");
        assert_eq!(median.task, 3, "{why}");
        assert!(why.contains("completed"), "{why}");
        let none_completed = Jobs {
            metrics: serde_json::Map::new(),
            tasks: vec![task(0, 10.0, false), task(1, 30.0, false), task(2, 20.0, false)],
        };
        let (median, why) = median_task(&none_completed).expect("a task");
        assert_eq!(median.task, 2);
        assert!(why.contains("none completed"), "{why}");
        assert!(median_task(&Jobs::default()).is_none());
    }

    #[test]
    fn intervals_say_unbounded_for_null_and_dash_for_absent() {
        let metrics = serde_json::json!({"task_p90_ms": 1287.9, "task_p90_ci95_low_ms": 1121.6, "task_p90_ci95_high_ms": null});
        let jobs = Jobs { metrics: metrics.as_object().cloned().unwrap_or_default(), tasks: Vec::new() };
        assert_eq!(interval_text(&jobs, "task_p90", "_ms", |v| num(Some(v))), "1287.9 (1121.6 – unbounded)");
        assert_eq!(interval_text(&jobs, "task_p50", "_ms", |v| num(Some(v))), "— (— – —)");
    }
}
