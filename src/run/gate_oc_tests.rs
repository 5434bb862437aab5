//! A gate's operating characteristic: how often it passes, rejects or
//! stays undecided against the true distance of its metric from its
//! threshold, with and without measuring more, over seeded cells whose
//! truth is known. Each look judges the real gate over the cell's records
//! pooled as `measure_more` pools them (`anvil_evidence::pool`); the rounds
//! follow its rule: measure one more repeat while undecided, up to the
//! budget.
//!
//! The whole table is a bench (2,100 seeded cells per budget, ~30 s in
//! release): `cargo test --release --lib gate_oc -- --ignored --nocapture`
//! prints it. The default tier checks the threshold itself.

use serde_json::{Value, json};

use super::gate::evaluate_gate;
use super::statistics_testing::{clopper_pearson, exponential, exponential_p90};
use crate::recipe::Spec;
use crate::recipe::decls::GateDecl;
use crate::recipe::testing::load_text;

const REQUESTS: usize = 200;

fn gate(threshold: f64) -> GateDecl {
    let recipe = load_text(&format!(
        "server \"s\" {{ model \"m\"; }}\ncell \"c\" server=\"s\" {{ requests 200; }}\n\
         gate \"g\" {{ confidence 0.95; require \"cell.c.metrics.ttft_p90_ms < {threshold}\"; }}\n"
    ))
    .expect("recipe loads");
    match &recipe.step("g").expect("gate").spec {
        Spec::Gate(gate) => gate.clone(),
        _ => unreachable!(),
    }
}

/// One measurement of the cell as its artifact's records hold it.
fn artifact(seed: u64) -> Value {
    let timings: Vec<Value> = exponential(seed, REQUESTS)
        .iter()
        .enumerate()
        .map(|(i, ttft)| {
            let sent = i as f64 * 50.0;
            json!({
                "request_index": i, "repeat": 0, "performance_eligible": true,
                "actual_send_ms": sent, "finished_ms": sent + ttft + 20.0,
                "ttft_ms": ttft, "output_tokens": 8,
            })
        })
        .collect();
    json!({ "request_timings": timings })
}

#[derive(Default, Clone, Copy)]
struct Outcomes {
    passed: u64,
    rejected: u64,
    undecided: u64,
}

/// The gate's verdicts over `trials` seeded cells whose threshold is the
/// true p90 moved by `distance`, measuring up to `budget` more repeats.
fn operate(distance: f64, budget: u32, trials: u64) -> Outcomes {
    let truth = exponential_p90();
    let gate = gate(truth * (1.0 + distance));
    let mut outcomes = Outcomes::default();
    for trial in 0..trials {
        let mut measured = vec![artifact(trial * 1_000)];
        let status = loop {
            let pooled = anvil_evidence::pool::pool(&measured.iter().collect::<Vec<_>>()).expect("pools");
            let inputs = json!({ "cell": { "c": { "metrics": pooled.metrics } } });
            let result = evaluate_gate(&gate, &inputs).expect("gate judges").result;
            let status = result["status"].as_str().unwrap_or_default().to_string();
            if status != "undecided" || measured.len() > budget as usize {
                break status;
            }
            measured.push(artifact(trial * 1_000 + measured.len() as u64));
        };
        match status.as_str() {
            "passed" => outcomes.passed += 1,
            "rejected" => outcomes.rejected += 1,
            _ => outcomes.undecided += 1,
        }
    }
    outcomes
}

/// At its threshold (the requirement false in truth, where a false pass
/// is likeliest), a gate that may measure one more repeat passes no more
/// often than its stated (1 + 1) · 5%.
#[test]
fn at_its_threshold_a_gate_that_measures_more_passes_falsely_no_more_than_stated() {
    let trials = 80;
    let o = operate(0.0, 1, trials);
    let (low, high) = clopper_pearson(o.passed, trials);
    assert!(low <= 0.1, "{}/{trials} passed falsely (95% CP {low:.3}–{high:.3})", o.passed);
    assert_eq!(o.passed + o.rejected + o.undecided, trials);
}

/// `p90 < threshold` with the threshold at distances from the true p90:
/// below or at it (distance ≤ 0) the requirement is false in truth and a
/// pass is an error; above it a rejection is. Each error's share stays
/// within the gate's stated rate (5% at one look; (N + 1) · 5% with
/// `extra-repeats N`), judged by its Clopper–Pearson interval; measuring
/// more decides more of the near cases.
#[test]
#[ignore = "a bench: 4,200 seeded cells; run in release with --ignored --nocapture"]
fn operating_characteristic() {
    const TRIALS: u64 = 300;
    let distances = [-0.2, -0.1, -0.05, 0.0, 0.05, 0.1, 0.2];
    eprintln!(
        "| threshold / true p90 − 1 | extra-repeats | passed | rejected | undecided | error share (95% CP) | stated |"
    );
    eprintln!("|---:|---:|---:|---:|---:|---|---:|");
    let mut decided = [0u64; 2];
    for (b, budget) in [0u32, 2].into_iter().enumerate() {
        let stated = f64::from(budget + 1) * 5.0;
        for distance in distances {
            let o = operate(distance, budget, TRIALS);
            let errors = if distance <= 0.0 { o.passed } else { o.rejected };
            let (low, high) = clopper_pearson(errors, TRIALS);
            eprintln!(
                "| {distance:+.2} | {budget} | {} | {} | {} | {errors}/{TRIALS} ({low:.3}–{high:.3}) | {stated}% |",
                o.passed, o.rejected, o.undecided
            );
            assert!(low <= stated / 100.0, "distance {distance}, budget {budget}: {errors}/{TRIALS} errors");
            if distance.abs() == 0.1 {
                decided[b] += o.passed + o.rejected;
            }
        }
    }
    // Measuring more decides more of the near cases.
    assert!(
        decided[1] > decided[0],
        "extra repeats decided {} of the ±10% cases, one look {}",
        decided[1],
        decided[0]
    );
}
