//! `anvil report` on agent cells (docs/reports.md "Agent cells"): one run
//! on the simulated engine of an agent cell, a capacity search over
//! concurrency (its probes are stored agent cells) and a plain cell. The
//! agent cell's section has a Jobs block with its stored job metrics and
//! the timeline of its median task, whose critical-path calls are the ones
//! marked; the plain cell has none of it; Across cells marks the agent
//! cells on the job-level Pareto front, as recomputed from the stored
//! artifacts.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use crate::common::{Scratch, entry_dir};
use serde_json::Value;

const TRACE: &str = include_str!("../examples/agents/coding-agents.jsonl");

const RECIPE: &str = r#"
campaign "report-agents" { seed 11; }

server "sim" {
    engine "sim"
    model "test-model"
    sim {
        prefill-tok-s 200000
        decode-step-ms 2
        max-running-seqs 8
        prefix-cache-block-tokens 16
    }
}

workload "runs" {
    agents "data/agents.jsonl" format="jsonl" block-tokens=16 time-scale=0.25 deadline="5s"
}

workload "plain" {
    context-tokens 128
    requests 8
    max-tokens 16
}

cell "two-agents" server="sim" workload="runs" { concurrency 2; }

cell "plain" server="sim" workload="plain" { concurrency 2; }

search "most-agents" server="sim" workload="runs" {
    variable "concurrency"
    range 1 4
    slo "probe.task_p90_ms <= 1000000"
    budget 2
}
"#;

/// The run shared by every test here: the scratch folder, the page, and
/// each stored cell's artifact by name.
struct Run {
    _scratch: Scratch,
    html: String,
    /// `anvil report --format md` and `--format csv` of the same run.
    markdown: String,
    csv: String,
    artifacts: BTreeMap<String, Value>,
}

fn run() -> &'static Run {
    static RUN: OnceLock<Run> = OnceLock::new();
    RUN.get_or_init(|| {
        let scratch = Scratch::new();
        scratch.write("data/agents.jsonl", TRACE);
        scratch.write("recipe.kdl", RECIPE);
        let summary = scratch.anvil(&["run", "recipe.kdl", "--report", "--json"]).expect_code(0).json();
        let report = summary["report"].as_str().expect("the report's path");
        let html = std::fs::read_to_string(scratch.path().join(report)).expect("the page");
        // Every cell of the run, the search's probes among them (the run record's nodes).
        let runs = scratch.runs();
        let nodes = runs.last().expect("the run")["nodes"].as_array().expect("nodes").clone();
        let mut artifacts = BTreeMap::new();
        for step in &nodes {
            if step["kind"] != "cell" {
                continue;
            }
            let fingerprint = step["fingerprint"].as_str().expect("fingerprint");
            let path = entry_dir(&scratch.store(), fingerprint).join("benchmark.json");
            let artifact = serde_json::from_slice(&std::fs::read(&path).expect("benchmark.json"))
                .expect("benchmark.json is JSON");
            artifacts.insert(step["name"].as_str().expect("name").to_string(), artifact);
        }
        let markdown = scratch.anvil(&["report", "recipe.kdl", "--format", "md"]).expect_code(0).stdout;
        let csv = scratch.anvil(&["report", "recipe.kdl", "--format", "csv"]).expect_code(0).stdout;
        Run { _scratch: scratch, html, markdown, csv, artifacts }
    })
}

/// A cell's folding section of the page, up to the next cell's or the
/// section's end.
fn cell_block<'a>(html: &'a str, name: &str) -> &'a str {
    let id: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect();
    let start = html
        .find(&format!("<details class=\"cell\" id=\"cell-{id}\""))
        .unwrap_or_else(|| panic!("no section for cell {name}"));
    let rest = &html[start + 1..];
    let end = [rest.find("<details class=\"cell\""), rest.find("</section>")].into_iter().flatten().min();
    &html[start..start + 1 + end.unwrap_or(rest.len())]
}

/// Every value of attribute `attr` in `html`, in order.
fn attrs(html: &str, attr: &str) -> Vec<String> {
    let needle = format!("{attr}=\"");
    html.match_indices(&needle)
        .filter_map(|(at, _)| html[at + needle.len()..].split_once('"').map(|(v, _)| v.to_string()))
        .collect()
}

/// The exact value a table cell shows for `key` (`data-metric`).
fn shown_value(html: &str, key: &str) -> f64 {
    let needle = format!("data-metric=\"{key}\" data-value=\"");
    let at = html.find(&needle).unwrap_or_else(|| panic!("no number {key} on the page"));
    let (value, _) = html[at + needle.len()..].split_once('"').expect("closing quote");
    value.parse().expect("data-value is a number")
}

/// The stored task at the median latency: the nearest-rank p50 of the
/// completed tasks' latencies, the first such by repeat and place.
fn median_task(jobs: &Value) -> &Value {
    let tasks = jobs["tasks"].as_array().expect("jobs.tasks");
    let mut completed: Vec<&Value> = tasks.iter().filter(|t| t["completed"] == true).collect();
    assert!(!completed.is_empty(), "no task completed");
    let mut latencies: Vec<f64> = completed.iter().map(|t| t["latency_ms"].as_f64().unwrap()).collect();
    latencies.sort_by(f64::total_cmp);
    let rank = (50 * latencies.len()).div_ceil(100).max(1);
    let median = latencies[rank - 1];
    assert_eq!(jobs["metrics"]["task_p50_ms"].as_f64(), Some(median), "the stored p50 is that latency");
    completed.retain(|t| t["latency_ms"].as_f64() == Some(median));
    completed.sort_by_key(|t| (t["repeat"].as_u64(), t["task"].as_u64()));
    completed[0]
}

#[test]
fn an_agent_cell_has_a_jobs_block_and_its_median_task_with_the_critical_path_marked() {
    let run = run();
    let artifact = &run.artifacts["two-agents"];
    let jobs = &artifact["jobs"];
    let block = cell_block(&run.html, "two-agents");
    assert!(block.contains("<div class=\"jobs\""), "no Jobs block in the agent cell");
    assert_eq!(attrs(block, "data-jobs"), vec!["two-agents"]);

    // The figures are the stored ones.
    for key in ["tasks_per_min", "task_p50_ms", "task_p90_ms", "task_p95_ms", "task_goodput_per_min"] {
        let stored = jobs["metrics"][key].as_f64().unwrap_or_else(|| panic!("stored {key}"));
        assert_eq!(shown_value(block, &format!("two-agents.{key}")), stored, "{key}");
    }
    for key in ["task_deadline_share", "task_server_share", "task_tool_share", "task_cached_share"] {
        let stored = jobs["metrics"][key].as_f64().unwrap_or_else(|| panic!("stored {key}"));
        assert_eq!(shown_value(block, &format!("two-agents.{key}")), stored, "{key}");
    }

    // The task drawn is the median one, and says so.
    let task = median_task(jobs);
    let (task_id, repeat) = (task["task_id"].as_str().unwrap(), task["repeat"].as_u64().unwrap());
    assert_eq!(attrs(block, "data-task"), vec![task_id.to_string()]);
    assert_eq!(attrs(block, "data-repeat"), vec![repeat.to_string()]);
    assert!(block.contains(&format!("aria-label=\"two-agents: task {task_id} (repeat {repeat})\"")));
    assert!(block.contains("the task at the median latency"), "the caption says why this task");

    // Its calls, from the stored records: one row each, the critical path's marked.
    let calls: BTreeMap<u64, &str> = artifact["request_timings"]
        .as_array()
        .expect("records")
        .iter()
        .filter(|r| r["repeat"].as_u64() == Some(repeat) && r["agent"]["task"] == task["task"])
        .map(|r| (r["agent"]["call"].as_u64().unwrap(), r["agent"]["call_id"].as_str().unwrap()))
        .collect();
    assert!(calls.len() > 1, "the task has several calls");
    let critical: Vec<String> = task["critical_path"]
        .as_array()
        .expect("critical_path")
        .iter()
        .map(|c| calls[&c.as_u64().unwrap()].to_string())
        .collect();
    assert!(!critical.is_empty() && critical.len() < calls.len(), "some calls off the path: {critical:?}");
    assert_eq!(attrs(block, "data-critical-call"), critical, "the marked calls are the critical path");
    assert_eq!(attrs(block, "data-critical-path"), vec![critical.join(" ")]);
    let figure = &block[block.find("class=\"grid task-timeline\"").expect("the timeline")..];
    let table = &figure[figure.find("<table class=\"data\"").expect("its data")..];
    let table = &table[..table.find("</table>").expect("table end")];
    assert_eq!(table.matches("<tr>").count(), 1 + calls.len(), "a row per call");
    for id in calls.values() {
        assert!(figure.contains(&format!("<td>{id}</td>")), "call {id} in the data");
    }
    // On the plot: critical calls starred on their row label, the others not.
    let svg = &figure[..figure.find("</svg>").expect("svg")];
    let texts: Vec<&str> = svg
        .split("<text")
        .skip(1)
        .filter_map(|t| {
            t.split_once('>').and_then(|(_, rest)| rest.split_once("</text>")).map(|(t, _)| t.trim())
        })
        .collect();
    for id in calls.values() {
        let on_path = critical.iter().any(|c| c == id);
        let label = if on_path { format!("{id} ★") } else { id.to_string() };
        assert!(texts.contains(&label.as_str()), "row label {label:?} on the plot: {texts:?}");
    }
}

#[test]
fn a_cell_without_agent_traffic_has_no_jobs_block() {
    let run = run();
    assert!(run.artifacts["plain"].get("jobs").is_none(), "the plain cell has no jobs");
    let block = cell_block(&run.html, "plain");
    assert!(block.contains("request timeline"), "the plain cell drew its plots");
    for marker in ["class=\"jobs\"", "<h4>Jobs</h4>", "task-timeline", "data-critical-call", "task_p90_ms"] {
        assert!(!block.contains(marker), "plain cell shows {marker}");
    }
    // Nor is it among the agent cells compared as jobs.
    let front = &run.html[run.html.find("<h3 id=\"jobs-front\"").expect("the jobs front")..];
    let front = &front[..front.find("</table>").expect("its table")];
    assert!(!front.contains(">plain<"), "plain cell in the jobs table");
}

#[test]
fn the_job_front_marks_the_agent_cells_no_other_beats_on_tasks_per_minute_and_p90() {
    let run = run();
    let agent: Vec<(&str, f64, f64)> = run
        .artifacts
        .iter()
        .filter_map(|(name, a)| {
            let m = &a.get("jobs")?["metrics"];
            Some((name.as_str(), m["tasks_per_min"].as_f64()?, m["task_p90_ms"].as_f64()?))
        })
        .collect();
    assert!(agent.len() >= 3, "the agent cell and the search's probes: {agent:?}");
    let mut expected: Vec<String> = agent
        .iter()
        .filter(|(_, x, y)| !agent.iter().any(|(_, ox, oy)| ox >= x && oy <= y && (ox > x || oy < y)))
        .map(|(name, _, _)| name.to_string())
        .collect();
    let front = &run.html[run.html.find("<h3 id=\"jobs-front\"").expect("the jobs front")..];
    let front = &front[..front.find("</table>").expect("its table")];
    assert!(front.contains("Task p90 vs tasks completed per minute"), "the front's plot");
    assert!(front.contains("Task p90 vs concurrent agents"), "p90 against the load axis");
    let mut marked = attrs(front, "data-front");
    expected.sort();
    marked.sort();
    assert!(!expected.is_empty());
    assert_eq!(marked, expected, "cells on the front");
    for (name, per_min, p90) in &agent {
        assert_eq!(shown_value(front, &format!("{name}.tasks_per_min")), *per_min, "{name}");
        assert_eq!(shown_value(front, &format!("{name}.task_p90_ms")), *p90, "{name}");
    }
}

#[test]
fn the_csv_and_markdown_exports_carry_each_agent_cells_stored_job_metrics() {
    let run = run();
    let mut lines = run.csv.lines();
    let header: Vec<&str> = lines.next().expect("the header").split(',').collect();
    let rows: BTreeMap<&str, Vec<&str>> =
        lines.map(|l| (l.split(',').next().unwrap(), l.split(',').collect())).collect();
    let column = |row: &[&str], key: &str| -> String {
        let at = header.iter().position(|h| *h == key).unwrap_or_else(|| panic!("no column {key}"));
        row[at].to_string()
    };
    let jobs = &run.artifacts["two-agents"]["jobs"]["metrics"];
    for key in
        ["tasks", "tasks_completed", "tasks_per_min", "task_p50_ms", "task_p95_ms", "task_deadline_share"]
    {
        let stored = jobs[key].as_f64().unwrap_or_else(|| panic!("stored {key}"));
        let shown: f64 = column(&rows["two-agents"], key).parse().unwrap_or_else(|_| panic!("csv {key}"));
        assert_eq!(shown, stored, "{key}");
        assert_eq!(column(&rows["plain"], key), "", "the plain cell has no {key}");
    }
    // The markdown table: one row per agent cell, none for the plain cell.
    let heading = "### Agent tasks\n\n";
    let table = &run.markdown[run.markdown.find(heading).expect("the agent tasks table") + heading.len()..];
    let table = &table[..table.find("\n\n").unwrap_or(table.len())];
    let row = table.lines().find(|l| l.starts_with("| two-agents |")).expect("the agent cell's row");
    let done = format!("| {}/{} |", jobs["tasks_completed"], jobs["tasks"]);
    assert!(row.contains(&done), "{row} lacks {done}");
    assert!(!table.contains("| plain |"), "plain cell among agent tasks: {table}");
}
