//! Gates judged over the whole range of their intervals, and the error a
//! decision states for them, on the simulated engine: an `abs` requirement
//! between two identical servers is never rejected, and a decision that
//! asks less error of a gate's rejection than its requirements can add up
//! to is refused at plan, with the bound it really has.

use crate::common::Scratch;

/// Two servers alike but for a setting above the concurrency (fingerprints
/// of their own), one cell of 1,500 requests and one of 120, and the
/// requirement that their medians are within 10%: true in truth. The
/// requirement moves both ways with each median, so the corners of the
/// intervals are not its extremes.
fn twins(seed: u32) -> String {
    format!(
        r#"campaign "twins" {{ seed {seed}; }}
server "sim-a" {{ model "m"; sim {{ prefill-tok-s 400000; decode-step-ms 1; max-running-seqs 32; step-jitter-pct 20; }} }}
server "sim-b" {{ model "m"; sim {{ prefill-tok-s 400000; decode-step-ms 1; max-running-seqs 33; step-jitter-pct 20; }} }}
workload "w" {{ context-tokens 32; max-tokens 4; concurrency 16; canaries #false; }}
cell "short" server="sim-a" workload="w" {{ requests 1500; }}
cell "long" server="sim-b" workload="w" {{ requests 120; }}
gate "same" {{
    confidence 0.95
    blocking #false
    require "abs(cell.short.metrics.e2e_p50_ms / cell.long.metrics.e2e_p50_ms - 1) < 0.1"
}}
"#
    )
}

#[test]
fn an_abs_requirement_between_identical_servers_is_never_rejected() {
    for seed in 1..=3 {
        let scratch = Scratch::new();
        let recipe = scratch.write("twins.kdl", &twins(seed));
        scratch.run(&recipe, &[], 0);
        let gate = scratch.stored_json(&recipe, "same", "result.json");
        assert_ne!(gate["status"], "rejected", "seed {seed}: {gate}");
        // What its verdict would risk, stated whichever it is: two intervals.
        assert_eq!(gate["passed_error_at_most"], 0.1, "{gate}");
        assert_eq!(gate["rejected_error_at_most"], 0.1, "{gate}");
    }
}

/// Eight requirements on one cell's percentiles: the gate's rejection is
/// wrong when any of eight intervals misses, up to 8 × 5%. A decision that
/// claims a rejection with `family-error 0.05` exits 2 at plan, naming 0.4;
/// one that reads the gate's `passed` (the worst requirement: 5%) plans.
#[test]
fn a_family_error_below_a_gates_union_is_refused_at_plan() {
    let scratch = Scratch::new();
    let requires: String = [50, 75, 90, 95, 99, 25, 10, 5]
        .iter()
        .map(|p| format!("    require \"cell.c.metrics.ttft_p{p}_ms < 500\"\n"))
        .collect();
    let recipe = |when: &str| {
        format!(
            "server \"s\" {{ model \"m\"; sim {{ decode-step-ms 1; }} }}\nworkload \"w\" {{ requests 200; canaries #false; }}\n\
             cell \"c\" server=\"s\" workload=\"w\"\ngate \"slo\" {{\n    confidence 0.95\n{requires}}}\n\
             decision \"d\" {{\n    rule label=\"regressed\" when=\"{when}\"\n    family-error 0.05\n}}\n"
        )
    };
    scratch.write("recipe.kdl", &recipe("gate.slo.status == 'rejected'"));
    let outcome = scratch.anvil(&["plan", "recipe.kdl"]).expect_code(2);
    assert!(outcome.stderr.contains("[recipe.kdl:"), "{}", outcome.stderr);
    // The message as one line, whatever width the terminal wrapped it at.
    let words: Vec<&str> = outcome.stderr.split_whitespace().filter(|w| *w != "│").collect();
    let message = words.join(" ");
    assert!(
        message.contains("can be wrong together up to 0.4 (label \"regressed\" 0.4)"),
        "{}",
        outcome.stderr
    );
    scratch.write("recipe.kdl", &recipe("gate.slo.passed"));
    scratch.anvil(&["plan", "recipe.kdl"]).expect_code(0);
}
