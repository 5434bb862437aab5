//! The decision's stated error rates, tested as statistics: seeded
//! campaigns whose truth is known, judged by the real gates over intervals
//! computed as artifacts compute them, each claim's false rate counted over
//! many campaigns, and the upper end of its Clopper–Pearson interval held
//! to the rate the decision states (a rate stated too low fails).

use serde_json::{Value, json};

use super::decision::run_decision;
use super::gate::evaluate_gate;
use super::statistics_testing::{
    assert_within, clopper_pearson, exponential, exponential_p50, exponential_p90,
};
use crate::document::testing;
use crate::results::DecisionResult;

const GATES: usize = 4;
/// Requests per cell: enough for a p90 interval at 95%.
const REQUESTS: usize = 200;
const CAMPAIGNS: u64 = 600;

/// Four gates, each on its own cell's p90 below its threshold; promotion
/// reads all four (`&&`), the label `any-ok` any of them (`||`), and the
/// label `all-ok` all four.
fn recipe(thresholds: [f64; GATES], confidence: bool) -> String {
    let mut text = String::from(
        "server \"s\" { model \"m\"; sim { decode-step-ms 1; } }\nworkload \"w\" { requests 200; canaries #false; }\n",
    );
    for g in 1..=GATES {
        text.push_str(&format!("cell \"c{g}\" server=\"s\" workload=\"w\"\n"));
        let level = if confidence { "confidence 0.95; " } else { "" };
        text.push_str(&format!(
            "gate \"g{g}\" {{ {level}blocking #false; require \"cell.c{g}.metrics.ttft_p90_ms < {}\"; }}\n",
            thresholds[g - 1]
        ));
    }
    let all = (1..=GATES).map(|g| format!("gate.g{g}.passed")).collect::<Vec<_>>();
    text.push_str(&format!(
        "decision \"d\" {{\n  rule label=\"any-ok\" when=\"{}\"\n  rule label=\"all-ok\" when=\"{}\"\n  promote-when \"{}\"\n}}\n",
        all.join(" || "),
        all.join(" && "),
        all.join(" && ")
    ));
    text
}

/// A cell's `metrics` as an artifact holds its p90: the estimate and its
/// 95% interval, computed by the load generator's own estimator.
fn cell_metrics(samples: &[f64]) -> Value {
    let e = anvil_loadgen::estimate(
        samples,
        anvil_loadgen::Statistic::Percentile(90),
        anvil_loadgen::Level::NINETY_FIVE,
    )
    .expect("samples");
    json!({ "metrics": {
        "ttft_p90_ms": e.value,
        "ttft_p90_ci95_low_ms": e.low,
        "ttft_p90_ci95_high_ms": e.high,
    }})
}

/// Each claim's count of campaigns where it held, and of campaigns where
/// some claim held (every claim is false in truth here).
struct Tally {
    promoted: u64,
    any_ok: u64,
    all_ok: u64,
    some_claim: u64,
    stated: DecisionResult,
}

fn campaigns(thresholds: [f64; GATES], confidence: bool) -> Tally {
    let recipe = recipe(thresholds, confidence);
    let gate = |g: usize| testing::gate(&recipe, &format!("g{g}"));
    let decision = &testing::decision(&recipe, "d");
    let gates: Vec<_> = (1..=GATES).map(gate).collect();
    let (mut promoted, mut any_ok, mut all_ok, mut some_claim) = (0, 0, 0, 0);
    let mut stated = None;
    for campaign in 0..CAMPAIGNS {
        let mut gate_results = serde_json::Map::new();
        for (i, decl) in gates.iter().enumerate() {
            let cells = json!({ "cell": { format!("c{}", i + 1): cell_metrics(&exponential(campaign * 97 + i as u64, REQUESTS)) } });
            let produced = evaluate_gate(decl, &cells).expect("gate judges");
            gate_results.insert(format!("g{}", i + 1), produced.result);
        }
        let inputs = json!({ "gate": gate_results });
        let result: DecisionResult =
            crate::results::from_value(run_decision(decision, &inputs).expect("decision").result)
                .expect("typed");
        let labelled = |l: &str| result.decision_labels.iter().any(|x| x == l);
        promoted += u64::from(result.promotion_authorized);
        any_ok += u64::from(labelled("any-ok"));
        all_ok += u64::from(labelled("all-ok"));
        some_claim += u64::from(result.promotion_authorized || !result.decision_labels.is_empty());
        stated.get_or_insert(result);
    }
    Tally { promoted, any_ok, all_ok, some_claim, stated: stated.expect("campaigns ran") }
}

fn stated_error(result: &DecisionResult, claim: &str) -> f64 {
    let control = result.error_control.as_ref().expect("error control stated");
    control.claims.iter().find(|c| c.claim == claim).and_then(|c| c.error_at_most).expect("a rate")
}

/// Every gate's truth sits exactly at its threshold (`p90 < threshold` is
/// false in truth), the case where a verdict's false pass is likeliest: each
/// claim holds falsely no more often than the decision says, nor does the
/// family, judged by the Clopper–Pearson interval of each observed share.
#[test]
fn each_claim_and_the_family_err_no_more_than_stated() {
    let tally = campaigns([exponential_p90(); GATES], true);
    let stated = &tally.stated;
    let control = stated.error_control.as_ref().expect("stated");
    assert_eq!(stated_error(stated, "promotion"), 0.05);
    assert_eq!(stated_error(stated, "all-ok"), 0.05);
    assert_eq!(stated_error(stated, "any-ok"), 0.2);
    assert_eq!(control.family_error_at_most, Some(0.3));
    for (what, count, bound) in [
        ("promotion", tally.promoted, 0.05),
        ("all-ok", tally.all_ok, 0.05),
        ("any-ok", tally.any_ok, 0.2),
        ("the family", tally.some_claim, 0.3),
    ] {
        assert_within(&format!("{what} held falsely"), count, CAMPAIGNS, bound);
    }
    // The test can see errors: the disjunction errs in some campaigns.
    assert!(tally.any_ok > 0, "no false `any-ok` in {CAMPAIGNS} campaigns: the test would not see an excess");
}

/// The same campaigns judged on point values: about half of the gates pass
/// falsely, so a claim reading them is wrong far above any stated rate, and
/// the decision states none.
#[test]
fn point_verdicts_err_far_more_and_state_no_rate() {
    let tally = campaigns([exponential_p90(); GATES], false);
    let control = tally.stated.error_control.as_ref().expect("stated");
    assert!(control.claims.iter().all(|c| c.error_at_most.is_none() && c.why.is_some()), "{control:?}");
    assert_eq!(control.family_error_at_most, None);
    let (low, _) = clopper_pearson(tally.any_ok, CAMPAIGNS);
    assert!(low > 0.5, "any-ok on point values held falsely {}/{CAMPAIGNS}", tally.any_ok);
}

/// Where the conjunction errs most: one gate at its threshold, the other
/// three true with room (their thresholds twice the truth). `all-ok` and
/// promotion are false in truth and hold only when the first gate passes
/// falsely: at most its own 5%, with no adjustment for the four it reads.
#[test]
fn a_conjunction_errs_no_more_than_its_worst_verdict() {
    let p90 = exponential_p90();
    let tally = campaigns([p90, 2.0 * p90, 2.0 * p90, 2.0 * p90], true);
    for (what, count) in [("promotion", tally.promoted), ("all-ok", tally.all_ok)] {
        assert_within(
            &format!("{what} with one gate at its threshold: held falsely"),
            count,
            CAMPAIGNS,
            0.05,
        );
    }
    // `any-ok` is true in truth here (three gates pass in truth): not a false claim.
    assert!(tally.any_ok > CAMPAIGNS * 9 / 10, "the true gates pass: {}", tally.any_ok);
}

/// A label that reads a gate's rejection (`status == "rejected"`) over a
/// gate of eight requirements, each just true: the label is false in
/// truth whenever it holds. The decision states the gate's union bound for
/// it (8 × 5%), not one requirement's 5%, and the label holds within it.
#[test]
fn a_claim_on_a_rejection_errs_as_the_union_of_the_gates_requirements() {
    let mut text = String::from("server \"s\" { model \"m\"; }\n");
    let mut requires = String::new();
    let threshold = exponential_p50() * 1.0001;
    for c in 1..=8 {
        text.push_str(&format!("cell \"c{c}\" server=\"s\" {{ requests 200; }}\n"));
        requires.push_str(&format!("require \"cell.c{c}.metrics.ttft_p50_ms < {threshold}\"; "));
    }
    text.push_str(&format!("gate \"g\" {{ confidence 0.95; blocking #false; {requires}}}\n"));
    text.push_str("decision \"d\" { rule label=\"regressed\" when=\"gate.g.status == 'rejected'\"; family-error 0.4; }\n");
    let gate = &testing::gate(&text, "g");
    let decision = &testing::decision(&text, "d");
    let campaigns = 300;
    let (mut regressed, mut stated) = (0, None);
    for campaign in 0..campaigns {
        let mut cells = serde_json::Map::new();
        for c in 1..=8u64 {
            let samples = exponential(campaign * 8 + c, REQUESTS);
            cells.insert(format!("c{c}"), p50_metrics(&samples));
        }
        let produced = evaluate_gate(gate, &json!({ "cell": cells })).expect("gate judges");
        let inputs = json!({ "gate": { "g": produced.result } });
        let result: DecisionResult =
            crate::results::from_value(run_decision(decision, &inputs).expect("decision").result)
                .expect("typed");
        regressed += u64::from(result.decision_labels.iter().any(|l| l == "regressed"));
        stated.get_or_insert(stated_error(&result, "regressed"));
    }
    let stated = stated.expect("campaigns ran");
    assert_eq!(stated, 0.4);
    assert_within(
        "`regressed` (a rejection of eight just-true requirements) held falsely",
        regressed,
        campaigns,
        stated,
    );
    // The test sees errors: an excess over the stated rate would show.
    assert!(regressed > 0, "no false rejection in {campaigns} campaigns: the test would not see an excess");
}

/// A cell's p50 and its interval, as an artifact computes them.
fn p50_metrics(samples: &[f64]) -> Value {
    let e = anvil_loadgen::estimate(
        samples,
        anvil_loadgen::Statistic::Percentile(50),
        anvil_loadgen::Level::NINETY_FIVE,
    )
    .expect("samples");
    json!({ "metrics": { "ttft_p50_ms": e.value, "ttft_p50_ci95_low_ms": e.low, "ttft_p50_ci95_high_ms": e.high } })
}
