//! Agent cells' job figures (`jobs`, and the same keys in `metrics`) and
//! the replay rule re-derive from the calls' records: a small hand-built
//! artifact whose answer is worked out below by hand, and edits of it that
//! must be caught.

use anvil_evidence::rederive::SCHEMA;
use anvil_evidence::{rederive, rederive_file};
use serde_json::{Map, Value, json};

use crate::common::{at, perturb};

/// One agent call's record.
#[allow(clippy::too_many_arguments)]
fn call(
    (repeat, task, place): (u64, u64, u64),
    parents: &[u64],
    delay: f64,
    start: f64,
    (intended, sent, end): (f64, f64, f64),
    eligible: bool,
    (prompt, output): (u64, u64),
    (cached, ideal): (Option<u64>, Option<u64>),
) -> Value {
    json!({
        "repeat": repeat,
        "request_index": task * 10 + place,
        "intended_send_ms": intended,
        "actual_send_ms": sent,
        "send_lag_ms": sent - intended,
        "finished_ms": end,
        "performance_eligible": eligible,
        "prompt_tokens": prompt,
        "output_tokens": output,
        "cached_prompt_tokens": cached,
        "ideal_cached_tokens": ideal,
        "agent": {
            "task": task, "task_id": format!("task-{task}"), "call": place, "call_id": format!("c{place}"),
            "parents": parents, "delay_ms": delay, "task_start_ms": start, "deadline_ms": 450.0,
        },
    })
}

/// Three tasks, every deadline 450 ms:
/// - repeat 0, task 0, from 0: a plan call (sent 0.5, ended 100), two
///   branches after delays 50 and 10 (150.5–400, 110.25–200), a join 20
///   after the later branch (420.25–500). Latency 500 (deadline missed);
///   critical path 0, 1, 3: server 99.5 + 249.5 + 79.75 = 428.75, tools 70,
///   client 1.25.
/// - repeat 0, task 1, from 200: a chain, 205–305 then 320–600. Latency
///   400 (met); server 380, tools 20; cached tokens on the first call only.
/// - repeat 1, task 0, from 10: one call, 10–310, not eligible: not
///   completed (latency 300, deadline missed).
fn records() -> Vec<Value> {
    let tok = |c, i| (Some(c), Some(i));
    vec![
        call((0, 0, 0), &[], 0.0, 0.0, (0.0, 0.5, 100.0), true, (100, 10), tok(50, 64)),
        call((0, 0, 1), &[0], 50.0, 0.0, (150.0, 150.5, 400.0), true, (100, 10), tok(50, 64)),
        call((0, 0, 2), &[0], 10.0, 0.0, (110.0, 110.25, 200.0), true, (100, 10), tok(50, 64)),
        call((0, 0, 3), &[1, 2], 20.0, 0.0, (420.0, 420.25, 500.0), true, (100, 10), tok(50, 64)),
        call((0, 1, 0), &[], 5.0, 200.0, (205.0, 205.0, 305.0), true, (200, 20), (Some(100), None)),
        call((0, 1, 1), &[0], 15.0, 200.0, (320.0, 320.0, 600.0), true, (200, 20), (None, None)),
        call((1, 0, 0), &[], 0.0, 10.0, (10.0, 10.0, 310.0), false, (50, 5), (None, Some(32))),
    ]
}

/// The cell's figures, by hand. Spans: repeat 0 from 0 to 600, repeat 1
/// from 10 to 310: 900 ms. Completed latencies 400 and 500.
fn cell_metrics() -> Map<String, Value> {
    let m = json!({
        "tasks": 3,
        "tasks_completed": 2,
        "tasks_span_ms": 900.0,
        "tasks_per_min": 2.0 * 60_000.0 / 900.0,
        "task_mean_ms": 450.0,
        "task_max_ms": 500.0,
        // Nearest rank of 2: p50 is rank 1, the others rank 2. Intervals
        // (B = Binomial(2, p)): a low rank l when B(l − 1) ≤ 0.025 — p50:
        // B(0) = 0.25, none; p90: 0.01 and p95: 0.0025, rank 1; p99:
        // B(1) = 1 − 0.99² = 0.0199, rank 2 — and no high one (B(1) < 0.975).
        "task_p50_ms": 400.0, "task_p50_ci95_low_ms": null, "task_p50_ci95_high_ms": null,
        "task_p90_ms": 500.0, "task_p90_ci95_low_ms": 400.0, "task_p90_ci95_high_ms": null,
        "task_p95_ms": 500.0, "task_p95_ci95_low_ms": 400.0, "task_p95_ci95_high_ms": null,
        "task_p99_ms": 500.0, "task_p99_ci95_low_ms": 500.0, "task_p99_ci95_high_ms": null,
        "task_deadline_met": 1,
        "task_deadline_share": 1.0 / 3.0,
        // Clopper–Pearson of 1 in 3: the 0.025 quantile of Beta(1, 3)
        // (CDF 1 − (1 − x)³) and the 0.975 one of Beta(2, 2) (CDF 3x² − 2x³).
        "task_deadline_share_ci95_low": 1.0 - 0.975f64.powf(1.0 / 3.0),
        "task_deadline_share_ci95_high": solve(|x| 3.0 * x * x - 2.0 * x * x * x, 0.975),
        "task_goodput_per_min": 60_000.0 / 900.0,
        "task_server_share": (428.75 + 380.0) / 900.0,
        "task_tool_share": 90.0 / 900.0,
        // Tasks reporting cached tokens: 200 of 400 and 100 of 400.
        "task_cached_share": 300.0 / 800.0,
        // Ideal: 256 + 32 of every task's 400 + 400 + 50 prompt tokens.
        "task_ideal_cached_share": 288.0 / 850.0,
        "task_calls_mean": 7.0 / 3.0,
        "task_prompt_tokens_mean": 850.0 / 3.0,
        "task_output_tokens_mean": 85.0 / 3.0,
    });
    m.as_object().unwrap().clone()
}

/// The x in [0, 1] where the rising `cdf` reaches `p`, by bisection.
fn solve(cdf: impl Fn(f64) -> f64, p: f64) -> f64 {
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    for _ in 0..200 {
        let mid = (lo + hi) / 2.0;
        if cdf(mid) < p { lo = mid } else { hi = mid }
    }
    (lo + hi) / 2.0
}

fn rows() -> Value {
    json!([
        {"repeat": 0, "task": 0, "task_id": "task-0", "start_ms": 0.0, "end_ms": 500.0, "latency_ms": 500.0,
         "completed": true, "calls": 4, "failed_calls": 0, "prompt_tokens": 400, "output_tokens": 40,
         "cached_tokens": 200, "ideal_cached_tokens": 256, "critical_path": [0, 1, 3],
         "server_ms": 428.75, "tool_ms": 70.0, "client_ms": 1.25, "deadline_ms": 450.0, "deadline_met": false},
        {"repeat": 0, "task": 1, "task_id": "task-1", "start_ms": 200.0, "end_ms": 600.0, "latency_ms": 400.0,
         "completed": true, "calls": 2, "failed_calls": 0, "prompt_tokens": 400, "output_tokens": 40,
         "cached_tokens": 100, "ideal_cached_tokens": null, "critical_path": [0, 1],
         "server_ms": 380.0, "tool_ms": 20.0, "client_ms": 0.0, "deadline_ms": 450.0, "deadline_met": true},
        {"repeat": 1, "task": 0, "task_id": "task-0", "start_ms": 10.0, "end_ms": 310.0, "latency_ms": 300.0,
         "completed": false, "calls": 1, "failed_calls": 1, "prompt_tokens": 50, "output_tokens": 5,
         "cached_tokens": null, "ideal_cached_tokens": 32, "critical_path": [0],
         "server_ms": 300.0, "tool_ms": 0.0, "client_ms": 0.0, "deadline_ms": 450.0, "deadline_met": false},
    ])
}

fn artifact() -> Value {
    json!({
        "schema": SCHEMA,
        "metrics": cell_metrics(),
        "jobs": {"metrics": cell_metrics(), "tasks": rows()},
        "request_timings": records(),
    })
}

/// The mismatches' paths.
fn paths(a: &Value) -> Vec<String> {
    rederive(a).unwrap().mismatches.into_iter().map(|m| m.path).collect()
}

#[test]
fn the_hand_built_agent_cell_verifies() {
    let a = artifact();
    let report = rederive(&a).unwrap();
    assert!(report.is_clean(), "{:#?}", report.mismatches);
    let keys = cell_metrics();
    for key in keys.keys() {
        assert!(report.was_checked(&format!("jobs.metrics.{key}")), "jobs.metrics.{key}");
        assert!(report.was_checked(&format!("metrics.{key}")), "metrics.{key}");
    }
    for field in rows()[0].as_object().unwrap().keys() {
        assert!(report.was_checked(&format!("jobs.tasks[2].{field}")), "jobs.tasks[2].{field}");
    }
    assert_eq!(report.checked_per_request.get("request_timings[*].intended_send_ms"), Some(&7));
    let unchecked: Vec<&str> = report.unchecked.iter().map(|u| u.path.as_str()).collect();
    assert!(
        !unchecked.iter().any(|p| p.starts_with("jobs") || p.contains("agent") || p.contains("ideal_cached")),
        "{unchecked:?}"
    );
}

#[test]
fn streamed_from_a_file_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("benchmark.json");
    std::fs::write(&path, serde_json::to_vec(&artifact()).unwrap()).unwrap();
    assert_eq!(rederive_file(&path).unwrap(), rederive(&artifact()).unwrap());
}

#[test]
fn a_tampered_task_latency_is_caught() {
    let mut a = artifact();
    a["jobs"]["tasks"][1]["latency_ms"] = json!(390.0);
    assert_eq!(paths(&a), ["jobs.tasks[1].latency_ms"]);
    // The cell's figure, in either place it is stored.
    let mut a = artifact();
    a["metrics"]["task_p50_ms"] = json!(390.0);
    a["jobs"]["metrics"]["task_mean_ms"] = json!(445.0);
    assert_eq!(paths(&a), ["jobs.metrics.task_mean_ms", "metrics.task_p50_ms"]);
}

#[test]
fn a_later_reply_in_the_records_moves_every_figure_it_sets() {
    // Task 1's last call ends 100 ms later (past the deadline): its
    // latency, end, server time, and the cell's span, rates and shares no
    // longer agree.
    let mut a = artifact();
    a["request_timings"][5]["finished_ms"] = json!(700.0);
    let found = paths(&a);
    for p in [
        "jobs.tasks[1].latency_ms",
        "jobs.tasks[1].end_ms",
        "jobs.tasks[1].server_ms",
        "jobs.tasks[1].deadline_met",
        "jobs.metrics.tasks_span_ms",
        "metrics.tasks_per_min",
        "metrics.task_mean_ms",
        "metrics.task_deadline_met",
    ] {
        assert!(found.iter().any(|f| f == p), "{p} not caught: {found:?}");
    }
    assert!(!found.iter().any(|f| f.starts_with("replay_rule")), "no child of that call: {found:?}");
}

#[test]
fn a_call_sent_before_its_parent_ended_is_caught() {
    // The join of task 0 intended (and sent) at 390, before its parent 1
    // ended at 400; the rule gives 400 + 20.
    let mut a = artifact();
    let r = &mut a["request_timings"][3];
    r["intended_send_ms"] = json!(390.0);
    r["actual_send_ms"] = json!(390.25);
    let report = rederive(&a).unwrap();
    let count = report.mismatch("replay_rule.calls_off_rule").expect("the count");
    assert_eq!((&count.stored, &count.derived), (&json!(0), &json!(1)));
    let worst = report.mismatch("request_timings[3].intended_send_ms").expect("the worst call");
    assert_eq!((&worst.stored, &worst.derived), (&json!(390.0), &json!(420.0)));
    assert!(
        report.notes.iter().any(|n| n.contains("1 of 7") && n.contains("task 0, call 3")),
        "{:?}",
        report.notes
    );
}

#[test]
fn an_early_send_is_caught_and_the_worst_of_several_named() {
    let mut a = artifact();
    // Branch 2 sent at 105 against its intended 110 (its intended is right).
    a["request_timings"][2]["actual_send_ms"] = json!(105.0);
    a["request_timings"][2]["send_lag_ms"] = json!(-5.0);
    let report = rederive(&a).unwrap();
    let worst = report.mismatch("request_timings[2].actual_send_ms").expect("the early send");
    assert_eq!((&worst.stored, &worst.derived), (&json!(105.0), &json!(110.0)));
    // And the second call of task 1 intended 30 ms after the rule: worse.
    a["request_timings"][5]["intended_send_ms"] = json!(350.0);
    a["request_timings"][5]["send_lag_ms"] = json!(-30.0);
    let report = rederive(&a).unwrap();
    assert_eq!(report.mismatch("replay_rule.calls_off_rule").unwrap().derived, json!(2));
    assert!(report.mismatch("request_timings[5].intended_send_ms").is_some(), "{:#?}", report.mismatches);
    assert!(report.mismatch("request_timings[2].actual_send_ms").is_none(), "only the worst is named");
}

#[test]
fn within_the_rule_s_tolerances_is_clean() {
    let mut a = artifact();
    // Branch 2 (off the critical path): 0.9 µs off the rule's time, and
    // sent 5 µs before it: float rounding and clock reads.
    let r = &mut a["request_timings"][2];
    r["intended_send_ms"] = json!(110.0009);
    r["actual_send_ms"] = json!(109.9959);
    r["send_lag_ms"] = json!(109.9959 - 110.0009);
    let report = rederive(&a).unwrap();
    assert!(report.is_clean(), "{:#?}", report.mismatches);
}

#[test]
fn every_checked_job_field_catches_its_own_edit() {
    let base = artifact();
    let report = rederive(&base).unwrap();
    let checked: Vec<&String> =
        report.checked.iter().filter(|p| p.starts_with("jobs.") || p.starts_with("metrics.task")).collect();
    assert_eq!(checked.len(), 2 * 30 + 3 * 19, "{checked:?}");
    for path in checked {
        let mut a = base.clone();
        perturb(at(&mut a, path));
        let report = rederive(&a).unwrap();
        assert!(report.mismatch(path).is_some(), "edit of {path} not reported: {:?}", report.mismatches);
        assert_eq!(report.mismatches.len(), 1, "{path}: {:?}", report.mismatches);
    }
}

#[test]
fn a_missing_row_or_an_extra_one_is_caught() {
    let mut a = artifact();
    a["jobs"]["tasks"].as_array_mut().unwrap().pop();
    assert_eq!(paths(&a), ["jobs.tasks[2]"]);
    let mut a = artifact();
    let extra = a["jobs"]["tasks"][0].clone();
    a["jobs"]["tasks"].as_array_mut().unwrap().push(extra);
    assert_eq!(paths(&a), ["jobs.tasks[3]"]);
}

#[test]
fn a_missing_call_fails_its_task() {
    // Branch 2 of task 0 has no record: the task did not complete, and the
    // join (whose parent it is) cannot be held to the rule.
    let mut a = artifact();
    a["request_timings"].as_array_mut().unwrap().remove(2);
    let report = rederive(&a).unwrap();
    let completed = report.mismatch("jobs.tasks[0].completed").expect("task 0 not completed");
    assert_eq!(completed.derived, json!(false));
    assert_eq!(report.mismatch("metrics.tasks_completed").unwrap().derived, json!(1));
    assert_eq!(report.checked_per_request.get("request_timings[*].intended_send_ms"), Some(&5));
    assert!(report.mismatch("replay_rule.calls_off_rule").is_none());
}

#[test]
fn a_record_without_its_agent_inputs_fails_and_leaves_the_figures_unchecked() {
    let mut a = artifact();
    a["request_timings"][4]["agent"].as_object_mut().unwrap().remove("delay_ms");
    let report = rederive(&a).unwrap();
    let m = report.mismatch("request_timings[4].agent").expect("the malformed record");
    assert!(m.derived.as_str().unwrap().contains("agent.delay_ms"), "{m:?}");
    assert!(report.unchecked.iter().any(|u| u.path == "jobs.metrics.tasks"), "{:?}", report.unchecked);
    assert!(!report.was_checked("metrics.task_mean_ms"));
}

#[test]
fn a_task_whose_calls_disagree_on_its_start_is_caught() {
    let mut a = artifact();
    a["request_timings"][1]["agent"]["task_start_ms"] = json!(1.0);
    assert!(paths(&a).contains(&"request_timings[1].agent.task_start_ms".to_string()), "{:?}", paths(&a));
}

#[test]
fn job_figures_without_agent_records_are_refuted() {
    // An artifact that claims tasks its records do not have.
    let mut a = artifact();
    for r in a["request_timings"].as_array_mut().unwrap() {
        r.as_object_mut().unwrap().remove("agent");
    }
    let found = paths(&a);
    assert!(found.contains(&"jobs.metrics.tasks".to_string()), "{found:?}");
    assert!(found.contains(&"jobs.tasks[0]".to_string()), "{found:?}");
}

#[test]
fn an_artifact_without_agents_has_no_job_checks() {
    let mut a = artifact();
    a.as_object_mut().unwrap().remove("jobs");
    let m = a["metrics"].as_object_mut().unwrap();
    m.retain(|k, _| !k.starts_with("task"));
    for r in a["request_timings"].as_array_mut().unwrap() {
        r.as_object_mut().unwrap().remove("agent");
    }
    let report = rederive(&a).unwrap();
    assert!(report.is_clean(), "{:#?}", report.mismatches);
    assert!(!report.checked_per_request.contains_key("request_timings[*].intended_send_ms"));
}
