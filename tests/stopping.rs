//! Stopping rules: `until … within=` ends a cell at a planned look once its
//! intervals are narrow enough, or at its bounds; the artifact says which,
//! and the recipe's mistakes are refused with a span before anything runs.

use serde_json::Value;

use crate::common::Scratch;

const SIM: &str = r#"
server "sim" {
    model "stop-model"
    sim { decode-step-ms 1; max-running-seqs 8; prefill-tok-s 50000; }
}
"#;

fn artifact(scratch: &Scratch, recipe: &std::path::Path, cell: &str) -> Value {
    scratch.stored_json(recipe, cell, "benchmark.json")
}

#[test]
fn a_cell_stops_at_the_first_planned_look_that_is_precise_or_at_its_budget() {
    let scratch = Scratch::new();
    let recipe = scratch.write(
        "stop.kdl",
        &format!(
            r#"{SIM}
cell "loose" server="sim" {{
    context-tokens 64
    max-tokens 8
    concurrency 4
    canaries #false
    until "ttft_p50_ms" "e2e_mean_ms" within="40%"
    min-requests 60
    max-requests 960
}}
cell "strict" server="sim" {{
    context-tokens 64
    max-tokens 8
    concurrency 4
    canaries #false
    until "e2e_p99_ms" within="0.01%"
    min-requests 50
    max-requests 130
}}
"#
        ),
    );
    let outcome = scratch.run(&recipe, &[], 0);
    assert!(outcome.transcript().contains("stopped by its rule"), "{}", outcome.transcript());

    check_loose(&artifact(&scratch, &recipe, "loose"));

    let strict = artifact(&scratch, &recipe, "strict");
    assert_eq!(strict["ending"]["reason"], "max-requests", "{}", strict["ending"]);
    assert!(strict["ending"]["detail"].as_str().unwrap().contains("e2e_p99_ms"), "{}", strict["ending"]);
    assert_eq!(strict["request_timings"].as_array().unwrap().len(), 130);
    assert_eq!(strict["stopping"]["looks"].as_array().unwrap().len(), 3, "50, 100 and 130");

    // A stopped cell is stored like any other: the rerun runs nothing.
    let again = scratch.run(&recipe, &[], 0);
    assert!(again.transcript().contains("0 ran"), "{}", again.transcript());
}

/// The loose cell: stopped at its first precise look, or, on a drifting
/// machine, never precise and stopped at its budget.
fn check_loose(loose: &serde_json::Value) {
    let stopping = &loose["stopping"];
    // On a busy machine the latencies drift with the machine's own load
    // (a stretch of E2E 30% slower while a build ran beside the test):
    // their batch means then look correlated, every look withholds that
    // interval, and the rule must go on to its budget, saying which one.
    if loose["ending"]["reason"] == "max-requests" {
        let detail = loose["ending"]["detail"].as_str().unwrap();
        assert!(detail.contains("unbounded"), "{}", loose["ending"]);
        let withheld = loose["metrics"]["intervals_withheld"].as_object().unwrap();
        assert!(withheld.contains_key("e2e_mean") || withheld.contains_key("ttft_p50"), "{withheld:?}");
        assert!(stopping["looks"].as_array().unwrap().iter().all(|l| l["precise"] == false), "{stopping}");
        eprintln!("the machine drifted: {detail}");
        return;
    }
    assert_eq!(loose["ending"]["reason"], "precise", "{}", loose["ending"]);
    assert_eq!(stopping["planned_looks"], serde_json::json!([60, 120, 240, 480, 960]));
    // Five looks hold together with 95%: each is above 95%, below Bonferroni's 99%.
    let level = stopping["look_confidence"].as_f64().unwrap();
    assert!(level > 0.95 && level < 0.99, "{stopping}");
    let looks = stopping["looks"].as_array().unwrap();
    let planned = stopping["planned_looks"].as_array().unwrap();
    assert_eq!(&planned[..looks.len()], looks.iter().map(|l| l["requests"].clone()).collect::<Vec<_>>());
    // Only the look it stopped at was precise, and there every metric was within 40%.
    let (last, before) = looks.split_last().unwrap();
    assert!(before.iter().all(|l| l["precise"] == false), "{stopping}");
    assert_eq!(last["precise"], true);
    for key in ["ttft_p50_ms", "e2e_mean_ms"] {
        let width = last["metrics"][key]["relative_half_width"].as_f64().unwrap();
        assert!(width <= 0.40, "{key} {width}");
        let at_end = &stopping["final_intervals"][key];
        assert!(at_end["low"].as_f64().unwrap() <= at_end["estimate"].as_f64().unwrap());
    }
    // Nothing was sent after the stop; the few in flight ended and count.
    let stopped_at = last["requests"].as_u64().unwrap();
    let recorded = loose["request_timings"].as_array().unwrap().len() as u64;
    assert!(
        (stopped_at..=stopped_at + 4).contains(&recorded),
        "{recorded} recorded, stopped at {stopped_at}"
    );
    assert_eq!(loose["ending"]["unsent"].as_u64().unwrap(), 960 - recorded);
    assert_eq!(loose["resolved_cell"]["stopping"]["max_requests"], 960);
}

fn refused(body: &str, says: &[&str]) {
    let scratch = Scratch::new();
    scratch.write("recipe.kdl", &format!("{SIM}\ncell \"c\" server=\"sim\" {{\n{body}\n}}\n"));
    let outcome = scratch.anvil(&["plan", "recipe.kdl"]).expect_code(2);
    assert!(outcome.stderr.contains("[recipe.kdl:"), "a span:\n{}", outcome.stderr);
    for needle in says {
        assert!(outcome.stderr.contains(needle), "expected {needle:?} in:\n{}", outcome.stderr);
    }
}

#[test]
fn a_stopping_rule_the_cell_cannot_follow_is_refused_with_its_place() {
    refused("    max-requests 500", &["`max-requests` bounds a stopping rule", "has no `until`"]);
    refused("    until \"ttft_p99\" within=\"5%\"", &["`ttft_p99` is not a per-request percentile or mean"]);
    refused("    until \"ttft_p99_ms\"", &["`until` needs `within=\"N%\"`"]);
    refused("    until \"ttft_p99_ms\" within=\"5\"", &["`until` needs `within=\"N%\"`"]);
    refused("    until \"ttft_p99_ms\" within=\"5%\"\n    repeat 3", &["a stopping rule measures one run"]);
    refused("    until \"ttft_p99_ms\" within=\"5%\" by=\"x\"", &["`until` has no property `by`"]);
}
