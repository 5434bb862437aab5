//! Agent runs replayed as graphs of calls, through the whole tool on the
//! simulated engine: a seeded graph of our own making (fan-out, joins,
//! tool delays, inherited prompts, a system prompt every task shares)
//! whose schedule, critical paths and ideal cache hits are known from the
//! graph; the records checked against them; job metrics read by a gate
//! and a capacity search; a broken agent trace stopped at plan time.

use std::collections::HashMap;

use crate::common::{Rng, Scratch};
use serde_json::Value;

/// Tokens per block of the trace, and of the sim's prefix cache.
const BLOCK: u64 = 16;

/// `tasks` seeded tasks: a planner, 2–4 readers fanned out after tool
/// delays (some two steps long), a patch joining the readers' last steps,
/// a final call after a long tool delay. Every planner begins with the
/// shared system blocks 0 and 1; every other call inherits a parent's
/// prompt, so the graph fixes each call's ideal cached tokens.
fn seeded_trace(seed: u64, tasks: usize) -> String {
    let mut rng = Rng::new(seed);
    let mut next_block = 100u64;
    let mut blocks = |n: u64| {
        let ids: Vec<u64> = (next_block..next_block + n).collect();
        next_block += n;
        ids
    };
    let mut lines = Vec::new();
    for t in 0..tasks {
        let task = format!("t{t}");
        let mut plan = vec![0, 1];
        plan.extend(blocks(2 + rng.below(3)));
        lines.push(serde_json::json!({"task": task, "call": "plan", "hash_ids": plan,
            "output_tokens": 16 + rng.below(16), "deadline_ms": 4000}));
        let mut joined = Vec::new();
        for r in 0..2 + rng.below(3) {
            let name = format!("read-{r}");
            lines.push(serde_json::json!({"task": task, "call": name, "parents": ["plan"], "inherit": "plan",
                "hash_ids": blocks(1 + rng.below(2)), "delay_ms": 20 + 20 * rng.below(5), "output_tokens": 8 + rng.below(8)}));
            let mut last = name.clone();
            if rng.below(2) == 0 {
                let step = format!("{name}-b");
                lines
                    .push(serde_json::json!({"task": task, "call": step, "parents": [name], "inherit": name,
                    "hash_ids": blocks(1), "delay_ms": 60, "output_tokens": 8}));
                last = step;
            }
            joined.push(last);
        }
        lines.push(serde_json::json!({"task": task, "call": "patch", "parents": joined, "inherit": "plan",
            "hash_ids": blocks(2), "delay_ms": 10, "output_tokens": 24}));
        lines.push(
            serde_json::json!({"task": task, "call": "final", "parents": ["patch"], "inherit": "patch",
            "hash_ids": blocks(1), "delay_ms": 150, "output_tokens": 8}),
        );
    }
    lines.iter().map(|l| format!("{l}\n")).collect()
}

const RECIPE: &str = r#"
campaign "agents" { seed 9; }

server "sim" {
    engine "sim"
    model "test-model"
    sim {
        prefill-tok-s 200000
        decode-step-ms 4
        max-running-seqs 2
        prefix-cache-block-tokens 16
    }
}

workload "runs" {
    agents "data/agents.jsonl" format="jsonl" block-tokens=16
}

cell "three-agents" server="sim" workload="runs" {
    concurrency 3
}

gate "on-time" {
    confidence 0.95
    require "cell.three-agents.metrics.task_deadline_share >= 0.5"
    require "cell.three-agents.metrics.task_p50_ms < 4000"
}

cell "one-agent" server="sim" workload="runs" { concurrency 1; }
cell "eight-agents" server="sim" workload="runs" { concurrency 8; }

search "most-agents" server="sim" workload="runs" {
    variable "concurrency"
    range 1 8
    slo "probe.task_p90_ms <= SLO_MS"
    budget 4
}
"#;

fn scratch(tasks: usize) -> (Scratch, std::path::PathBuf) {
    let scratch = Scratch::new();
    scratch.write("data/agents.jsonl", &seeded_trace(17, tasks));
    let recipe = scratch.write("recipe.kdl", &RECIPE.replace("SLO_MS", "1000000"));
    (scratch, recipe)
}

/// Each record by (repeat, task, call).
fn calls(artifact: &Value) -> HashMap<(u64, u64, u64), &Value> {
    artifact["request_timings"]
        .as_array()
        .expect("records")
        .iter()
        .map(|r| {
            let a = &r["agent"];
            ((r["repeat"].as_u64().unwrap(), a["task"].as_u64().unwrap(), a["call"].as_u64().unwrap()), r)
        })
        .collect()
}

#[test]
fn every_call_starts_when_its_parents_end_plus_its_delay_and_the_graph_predicts_the_tasks() {
    let (scratch, recipe) = scratch(8);
    let run = scratch.run(&recipe, &["--only", "three-agents"], 0);
    assert_eq!(run.summary().failed, 0, "{}", run.transcript());
    let artifact = scratch.stored_json(&recipe, "three-agents", "benchmark.json");
    assert_eq!(artifact["simulated"], true);
    assert_eq!(artifact["traffic"]["kind"], "agents");
    let by_call = calls(&artifact);
    let trace = anvil_loadgen::AgentTrace::read(
        &scratch.path().join("data/agents.jsonl"),
        anvil_loadgen::AgentTraceFormat::Jsonl,
    )
    .expect("the seeded trace reads");
    assert_eq!(
        by_call.len(),
        trace.tasks.iter().map(|t| t.calls.len()).sum::<usize>(),
        "every call sent once"
    );

    let mut worst_lag: f64 = 0.0;
    let mut fan_out_overlaps = 0;
    for (t, task) in trace.tasks.iter().enumerate() {
        let rec = |c: usize| by_call[&(0, t as u64, c as u64)];
        let start = rec(0)["agent"]["task_start_ms"].as_f64().unwrap();
        for (c, call) in task.calls.iter().enumerate() {
            let r = rec(c);
            let ready = call
                .parents
                .iter()
                .map(|&p| rec(p as usize)["finished_ms"].as_f64().unwrap())
                .fold(start, f64::max);
            let intended = r["intended_send_ms"].as_f64().unwrap();
            assert!(
                (intended - (ready + call.delay_ms)).abs() < 1e-6,
                "task {t} call {c}: intended {intended}, parents' end + delay {}",
                ready + call.delay_ms
            );
            let lag = r["actual_send_ms"].as_f64().unwrap() - intended;
            assert!(lag >= -0.01, "task {t} call {c} sent {lag} ms early");
            worst_lag = worst_lag.max(lag);
            assert_eq!(
                r["ideal_cached_tokens"].as_u64(),
                task.ideal_cached_tokens(BLOCK as u32)[c],
                "task {t} call {c}"
            );
        }
        // Readers fanned out from the planner ran side by side.
        let readers: Vec<(f64, f64)> = task
            .children(0)
            .iter()
            .map(|&c| {
                let r = rec(c as usize);
                (r["actual_send_ms"].as_f64().unwrap(), r["finished_ms"].as_f64().unwrap())
            })
            .collect();
        if readers.iter().any(|a| readers.iter().any(|b| a != b && a.0 < b.1 && b.0 < a.1)) {
            fan_out_overlaps += 1;
        }
        // The graph's schedule with the observed time of each call (send
        // lag included) gives the observed ends and the stored critical path.
        let durations: Vec<f64> = (0..task.calls.len())
            .map(|c| rec(c)["finished_ms"].as_f64().unwrap() - rec(c)["intended_send_ms"].as_f64().unwrap())
            .collect();
        let schedule = task.schedule(&durations);
        for (c, times) in schedule.iter().enumerate() {
            let observed = rec(c)["finished_ms"].as_f64().unwrap() - start;
            assert!(
                (times.end_ms - observed).abs() < 1e-6,
                "task {t} call {c}: graph says {} observed {observed}",
                times.end_ms
            );
        }
        let row = &artifact["jobs"]["tasks"][t];
        let path: Vec<u32> =
            row["critical_path"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as u32).collect();
        assert_eq!(path, task.critical_path(&durations).calls, "task {t}");
        assert!(
            (row["latency_ms"].as_f64().unwrap() - task.critical_path(&durations).length_ms).abs() < 1e-6
        );
    }
    assert!(worst_lag < 50.0, "the client sent a call {worst_lag} ms after it was due");
    assert!(fan_out_overlaps >= trace.tasks.len() / 2, "fan-out ran in parallel in {fan_out_overlaps} tasks");

    // The sim's prefix cache holds at least what the graph promises (and
    // the shared system blocks across tasks on top).
    for r in by_call.values() {
        let (ideal, cached) =
            (r["ideal_cached_tokens"].as_u64().unwrap(), r["cached_prompt_tokens"].as_u64().unwrap());
        assert!(cached >= ideal, "cached {cached} below the graph's {ideal}");
    }
    // `anvil verify` re-derives the job metrics and the replay rule from the
    // records, independently of the load generator, and catches a call
    // moved before its parents ended.
    let stored = scratch.stored_path(&recipe, "three-agents", "benchmark.json");
    scratch.anvil(&["verify", stored.to_str().unwrap()]).expect_code(0);
    let mut tampered = artifact.clone();
    let child = tampered["request_timings"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|r| !r["agent"]["parents"].as_array().unwrap().is_empty())
        .expect("a call with parents");
    for key in ["intended_send_ms", "actual_send_ms"] {
        child[key] = Value::from(child[key].as_f64().unwrap() - 100.0);
    }
    let path = scratch.write("tampered.json", &tampered.to_string());
    let caught = scratch.anvil(&["verify", path.to_str().unwrap()]).expect_code(1);
    assert!(caught.transcript().contains("replay_rule"), "{}", caught.transcript());

    let m = &artifact["metrics"];
    assert_eq!(m["tasks"], 8);
    assert_eq!(m["tasks_completed"], 8);
    assert!(m["tasks_per_min"].as_f64().unwrap() > 0.0);
    assert_eq!(artifact["jobs"]["metrics"]["task_p50_ms"], m["task_p50_ms"]);
    let cached = m["task_cached_share"].as_f64().unwrap();
    let ideal = m["task_ideal_cached_share"].as_f64().unwrap();
    assert!(cached >= ideal && ideal > 0.3, "cached share {cached}, ideal {ideal}");
}

#[test]
fn a_gate_and_a_capacity_search_read_the_task_latency_and_probes_are_stored_cells() {
    let (scratch, recipe) = scratch(6);
    // Two sequences at a time on the sim: eight agents queue, one does not.
    scratch.run(&recipe, &["--only", "one-agent", "--only", "eight-agents"], 0);
    let p90 = |cell: &str| {
        scratch.stored_json(&recipe, cell, "benchmark.json")["metrics"]["task_p90_ms"].as_f64().unwrap()
    };
    let (alone, crowded) = (p90("one-agent"), p90("eight-agents"));
    assert!(crowded > alone * 1.2, "eight agents queue: task p90 {crowded} ms against {alone} ms alone");
    let slo = (alone + crowded) / 2.0;
    let recipe = scratch.write("recipe.kdl", &RECIPE.replace("SLO_MS", &format!("{slo:.0}")));
    let run = scratch.run(&recipe, &[], 0);
    let summary = run.summary();
    assert!(summary.ok && summary.failed == 0 && summary.rejected == 0, "{}", run.transcript());
    let gate = scratch.stored_json(&recipe, "on-time", "result.json");
    assert_eq!(gate["passed"], true, "{gate}");
    // The search's answer is the largest passing concurrency below the
    // first failing one, each probe judged on its own stored task p90.
    let search = scratch.stored_json(&recipe, "most-agents", "result.json");
    let max = search["max_concurrency"].as_f64().expect("a capacity was found");
    assert!((1.0..8.0).contains(&max), "the SLO lies between 1 and 8 agents: {search}");
    for probe in search["curve"].as_array().unwrap() {
        let (value, p90) =
            (probe["value"].as_f64().unwrap(), probe["metrics"]["task_p90_ms"].as_f64().unwrap());
        assert_eq!(probe["passed"], p90 <= slo.round(), "{probe}");
        assert_eq!(probe["passed"], value <= max, "concurrency {value} against the answer {max}: {search}");
    }
    // Every probe is a stored cell: a rerun measures nothing.
    let again = scratch.run(&recipe, &[], 0).summary();
    assert_eq!(again.ran, 0, "{again:?}");
}

#[test]
fn a_broken_agent_trace_stops_the_plan_at_its_line() {
    let scratch = Scratch::new();
    scratch.write(
        "data/agents.jsonl",
        "{\"task\": \"a\", \"call\": \"x\", \"parents\": [\"y\"], \"hash_ids\": [1], \"output_tokens\": 4}\n\
         {\"task\": \"a\", \"call\": \"y\", \"parents\": [\"x\"], \"hash_ids\": [2], \"output_tokens\": 4}\n",
    );
    let recipe = scratch.write("recipe.kdl", &RECIPE.replace("SLO_MS", "1000"));
    let out = scratch.anvil(&["plan", recipe.to_str().unwrap()]).expect_code(2);
    let text = out.transcript();
    assert!(text.contains("data/agents.jsonl") && text.contains("line 1"), "{text}");
    assert!(scratch.runs().is_empty(), "nothing ran");
}

const AGENTIC_MOONCAKE: &str = include_str!("../crates/loadgen/tests/fixtures/agent-agentic-mooncake.jsonl");

#[test]
fn tasks_start_at_their_recorded_arrivals_and_dynamo_rows_replay_as_graphs() {
    let scratch = Scratch::new();
    // The seeded graph with an arrival every 400 ms, replayed at half scale.
    let arrivals: String = seeded_trace(23, 5)
        .lines()
        .map(|line| {
            let mut call: Value = serde_json::from_str(line).unwrap();
            let task: u64 = call["task"].as_str().unwrap()[1..].parse().unwrap();
            if call["call"] == "plan" {
                call["arrival_ms"] = Value::from(1000 + 400 * task);
            }
            format!("{call}\n")
        })
        .collect();
    scratch.write("data/arrivals.jsonl", &arrivals);
    scratch.write("data/dynamo.jsonl", AGENTIC_MOONCAKE);
    let recipe = scratch.write(
        "recipe.kdl",
        r#"
campaign "arrivals" { seed 3; }
server "sim" { engine "sim"; model "m"; sim { decode-step-ms 2; prefix-cache-block-tokens 16; } }
cell "recorded" server="sim" {
    agents "data/arrivals.jsonl" format="jsonl" block-tokens=16 arrivals="recorded" time-scale=0.5
}
cell "dynamo" server="sim" {
    agents "data/dynamo.jsonl" format="agentic-mooncake" block-tokens=16 arrivals="recorded" time-scale=0.1
}
cell "poisson" server="sim" {
    agents "data/arrivals.jsonl" format="jsonl" block-tokens=16
    arrival "poisson"
    rate 20
}
"#,
    );
    let run = scratch.run(&recipe, &[], 0);
    assert_eq!(run.summary().failed, 0, "{}", run.transcript());

    let recorded = scratch.stored_json(&recipe, "recorded", "benchmark.json");
    assert_eq!(recorded["offered_load"]["axis"], "request_rate", "{}", recorded["offered_load"]);
    for row in recorded["jobs"]["tasks"].as_array().unwrap() {
        let task = row["task"].as_f64().unwrap();
        let start = row["start_ms"].as_f64().unwrap();
        assert!(
            (start - 200.0 * task).abs() < 1e-6,
            "task {task} started at {start} ms, due at {}",
            200.0 * task
        );
    }
    for r in recorded["request_timings"].as_array().unwrap() {
        if r["agent"]["parents"].as_array().unwrap().is_empty() {
            let late = r["actual_send_ms"].as_f64().unwrap() - r["agent"]["task_start_ms"].as_f64().unwrap();
            assert!((0.0..50.0).contains(&late), "a root sent {late} ms after its task arrived");
        }
    }

    // Tasks (not calls) on a seeded Poisson schedule of 20 a second: each
    // starts at its own due time, whatever the tasks before it are doing.
    let poisson = scratch.stored_json(&recipe, "poisson", "benchmark.json");
    let starts: Vec<f64> = poisson["jobs"]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["start_ms"].as_f64().unwrap())
        .collect();
    assert_eq!(starts.len(), 5);
    assert!(starts.windows(2).all(|w| w[0] <= w[1]) && starts[4] > starts[0], "{starts:?}");
    assert!(starts[4] < 5_000.0, "five arrivals at 20/s come within seconds: {starts:?}");

    // Dynamo's rows: two tasks (the main agent with its sub-agents, and
    // another session), every call after its `wait_for` plus its delays.
    let dynamo = scratch.stored_json(&recipe, "dynamo", "benchmark.json");
    let records = dynamo["request_timings"].as_array().unwrap();
    assert_eq!(records.len(), 7);
    assert_eq!(dynamo["metrics"]["tasks"], 2);
    let end = |task: &Value, call: u64| {
        records.iter().find(|r| &r["agent"]["task"] == task && r["agent"]["call"] == call).unwrap()["finished_ms"]
            .as_f64()
            .unwrap()
    };
    for r in records {
        let a = &r["agent"];
        let ready = a["parents"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| end(&a["task"], p.as_u64().unwrap()))
            .fold(a["task_start_ms"].as_f64().unwrap(), f64::max);
        let intended = r["intended_send_ms"].as_f64().unwrap();
        assert!((intended - (ready + a["delay_ms"].as_f64().unwrap())).abs() < 1e-6, "{r}");
    }
    // `m-2` joins three calls after `tool_wait_ms`-free delay 30 ms × 0.1.
    let join = records.iter().find(|r| r["agent"]["call_id"] == "m-2").expect("the join");
    assert_eq!(join["agent"]["parents"].as_array().unwrap().len(), 3, "{join}");
    assert!((join["agent"]["delay_ms"].as_f64().unwrap() - 3.0).abs() < 1e-9, "{join}");
}
