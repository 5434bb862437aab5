//! Decisions with a confidence: a gate or screen with `confidence 0.95`
//! judges over the 95% intervals of what it reads, says `undecided` when
//! they allow either answer, and a decision's labels carry the confidence
//! they were reached with.

use serde_json::Value;

use crate::common::Scratch;

/// Three simulated servers: `b` is `a` again, `slow` is twice as slow;
/// the `pair-` cells are far apart, the `twin-` cells one engine twice.
/// The pairs are measured three times: their intervals are across the
/// repeats (`interval_truth: this-configuration`), which a drift of the
/// machine inside one run cannot withhold; one run's batch means can
/// be (a busy test machine drifts over 120 requests).
const SERVERS: &str = r#"
server "sim-a" { model "m"; sim { prefill-tok-s 200000; decode-step-ms 2; max-running-seqs 16; } }
server "sim-b" { model "m"; sim { prefill-tok-s 200000; decode-step-ms 2; max-running-seqs 16; } }
server "sim-slow" { model "m"; sim { prefill-tok-s 200000; decode-step-ms 4; max-running-seqs 16; } }
workload "w" { context-tokens 64; max-tokens 16; concurrency 4; requests 120; canaries #false; }
workload "w3" { context-tokens 64; max-tokens 16; concurrency 4; requests 120; repeat 3; canaries #false; }
cell "twin-a" server="sim-a" workload="w"
cell "twin-b" server="sim-b" workload="w"
cell "pair-fast" server="sim-a" workload="w3"
cell "pair-slow" server="sim-slow" workload="w3"
"#;

fn stored(scratch: &Scratch, recipe: &std::path::Path, step: &str) -> Value {
    scratch.stored_json(recipe, step, "result.json")
}

#[test]
fn gates_and_screens_decide_only_what_their_intervals_settle() {
    let scratch = Scratch::new();
    let recipe = scratch.write(
        "confidence.kdl",
        &format!(
            r#"{SERVERS}
gate "faster" {{
    confidence 0.95
    require "cell.pair-fast.metrics.e2e_mean_ms < cell.pair-slow.metrics.e2e_mean_ms"
}}
gate "not-slower" {{
    confidence 0.95
    blocking #false
    require "cell.pair-slow.metrics.e2e_mean_ms < cell.pair-fast.metrics.e2e_mean_ms"
}}
// 120 requests cannot bound a p99 from above: no verdict on a threshold far above it.
gate "tail" {{
    confidence 0.95
    blocking #false
    require "cell.twin-a.metrics.ttft_p99_ms > 10000"
}}
// Counts are exact; a throughput measured once has no interval.
gate "counted" {{
    confidence 0.95
    require "cell.pair-fast.completed == 360"
}}
gate "throughput-once" {{
    confidence 0.95
    blocking #false
    require "cell.twin-a.aggregate_tok_s > cell.twin-b.aggregate_tok_s"
}}
// Across three repeats a median's interval reads how far the repeats'
// distributions disagree at the pooled median: on a near-constant E2E, far
// (unbounded); the mean's is the repeats' t-interval.
screen "clear" {{ over "cell.pair-*"; metric "metrics.e2e_mean_ms"; goal "minimize"; confidence 0.95; }}
screen "twins" {{ over "cell.twin-*"; metric "metrics.e2e_p50_ms"; goal "minimize"; confidence 0.95; }}
decision "d" {{
    rule label="a-is-faster" when="gate.faster.passed"
    promote-when "gate.faster.passed && gate.counted.passed"
    family-error 0.2
}}
"#
        ),
    );
    let outcome = scratch.run(&recipe, &[], 0);
    let transcript = outcome.transcript();

    let faster = stored(&scratch, &recipe, "faster");
    assert_eq!(faster["status"], "passed", "{faster}");
    assert_eq!(faster["confidence"], 0.95);
    assert!(faster["detail"].as_str().unwrap().contains("holds over the 95% intervals"), "{faster}");
    let slower = stored(&scratch, &recipe, "not-slower");
    assert_eq!(slower["status"], "rejected", "{slower}");
    let tail = stored(&scratch, &recipe, "tail");
    assert_eq!(tail["status"], "undecided", "{tail}");
    assert_eq!(tail["passed"], false);
    assert_eq!(tail["requirements"][0]["status"], "undecided");
    assert!(transcript.contains("undecided"), "{transcript}");

    let counted = stored(&scratch, &recipe, "counted");
    assert_eq!(counted["status"], "passed", "{counted}");
    assert!(counted["detail"].as_str().unwrap().contains("exact"), "{counted}");
    let once = stored(&scratch, &recipe, "throughput-once");
    assert_eq!(once["status"], "undecided", "{once}");
    assert!(once["detail"].as_str().unwrap().contains("without an interval"), "{once}");

    let clear = stored(&scratch, &recipe, "clear");
    assert_eq!(clear["meaningful"], true, "{clear}");
    assert_eq!(clear["winner"], "pair-fast", "{clear}");
    // a and b are one engine twice: whichever leads, their intervals overlap.
    let twins = stored(&scratch, &recipe, "twins");
    assert!(twins.get("winner").is_none(), "an undecided screen names no winner: {twins}");
    assert_eq!(twins["meaningful"], false);
    assert!(twins["selection_reason"].as_str().unwrap().contains("undecided at 95% confidence"), "{twins}");

    let decision = stored(&scratch, &recipe, "d");
    assert_eq!(decision["decision_labels"], serde_json::json!(["a-is-faster"]));
    // `faster` reads two intervals: its `passed` errs at most 2 × 5%.
    assert_eq!(faster["passed_error_at_most"], 0.1, "{faster}");
    assert_eq!(decision["label_confidence"]["a-is-faster"], 0.9, "{decision}");
    // Promotion reads two verdicts through `&&`: it errs at most as the worse
    // of them (`faster`, 10%; `counted` is exact); with the label, the
    // family at most 20%, as declared.
    let control = &decision["error_control"];
    assert_eq!(control["claims"][0]["claim"], "promotion", "{control}");
    assert_eq!(control["claims"][0]["error_at_most"], 0.1, "{control}");
    assert_eq!(control["claims"][0]["verdicts"], serde_json::json!(["gate.counted", "gate.faster"]));
    assert_eq!(control["family_error_at_most"], 0.2, "{control}");
    assert_eq!(control["family_error_declared"], 0.2, "{control}");
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(find_summary(&scratch)).unwrap()).unwrap();
    assert_eq!(
        summary["decision"]["decision_label_confidence"]["a-is-faster"], 0.9,
        "{}",
        summary["decision"]
    );
    // The summary states what the decision's claims guarantee, as stored.
    assert_eq!(summary["decision"]["decision_error_control"], decision["error_control"]);
    scratch.anvil(&["report", recipe.to_str().unwrap()]).expect_code(0);
    let page = std::fs::read_to_string(find_summary(&scratch).with_file_name("report.html")).unwrap();
    assert!(page.contains("How often these claims can be wrong"), "report lacks the error control");
    assert!(
        page.contains("Any of them wrong: at most 0.2 (declared `family-error` 0.2)"),
        "report lacks the family"
    );
}

/// The one decision summary the run wrote.
fn find_summary(scratch: &Scratch) -> std::path::PathBuf {
    let results = scratch.path().join("results");
    for campaign in std::fs::read_dir(&results).unwrap().flatten() {
        let file = campaign.path().join("decision-summary.json");
        if file.exists() {
            return file;
        }
    }
    panic!("no decision-summary.json under {}", results.display());
}

/// `family-error` is checked when the recipe loads: claims that could err
/// more together are refused at the setting, each claim's share named; a
/// claim with no stated rate (`!` of a verdict) says why.
#[test]
fn a_family_error_the_claims_cannot_meet_is_refused_with_its_place() {
    let scratch = Scratch::new();
    let gates = r#"
gate "g1" { confidence 0.95; require "cell.twin-a.metrics.e2e_p50_ms < 1000"; }
gate "g2" { confidence 0.95; require "cell.twin-b.metrics.e2e_p50_ms < 1000"; }
"#;
    scratch.write(
        "recipe.kdl",
        &format!(
            "{SERVERS}{gates}decision \"d\" {{\n    rule label=\"either\" when=\"gate.g1.passed || gate.g2.passed\"\n    promote-when \"gate.g1.passed && gate.g2.passed\"\n    family-error 0.1\n}}\n"
        ),
    );
    let outcome = scratch.anvil(&["plan", "recipe.kdl"]).expect_code(2);
    assert!(outcome.stderr.contains("[recipe.kdl:"), "{}", outcome.stderr);
    assert!(
        outcome.stderr.contains("up to 0.15 (promotion 0.05, label \"either\" 0.1)"),
        "{}",
        outcome.stderr
    );

    scratch.write(
        "recipe.kdl",
        &format!(
            "{SERVERS}{gates}decision \"d\" {{\n    rule label=\"slow\" when=\"!gate.g1.passed\"\n    family-error 0.2\n}}\n"
        ),
    );
    let outcome = scratch.anvil(&["plan", "recipe.kdl"]).expect_code(2);
    assert!(outcome.stderr.contains("no error rate can be stated"), "{}", outcome.stderr);
    assert!(outcome.stderr.contains("undecided"), "{}", outcome.stderr);

    scratch.write("recipe.kdl", &format!("{SERVERS}{gates}decision \"d\" {{\n    family-error 1.5\n}}\n"));
    let outcome = scratch.anvil(&["plan", "recipe.kdl"]).expect_code(2);
    assert!(outcome.stderr.contains("between 0 and 1"), "{}", outcome.stderr);
}

#[test]
fn a_level_other_than_the_intervals_is_refused_with_its_place() {
    let scratch = Scratch::new();
    scratch.write(
        "recipe.kdl",
        &format!(
            "{SERVERS}\ngate \"g\" {{\n    confidence 0.9\n    require \"cell.twin-a.completed > 1\"\n}}\n"
        ),
    );
    let outcome = scratch.anvil(&["plan", "recipe.kdl"]).expect_code(2);
    assert!(outcome.stderr.contains("[recipe.kdl:"), "{}", outcome.stderr);
    assert!(outcome.stderr.contains("`confidence` is 0.95"), "{}", outcome.stderr);
}

/// `extra-repeats`: an undecided verdict measures its deciding cells again,
/// judges over their pooled requests, and stores every extra repeat.
/// Throughput measured once has no interval (undecided); across 2+ repeats it
/// has one. `pair-` is 2× apart, so a round or two decides it; the `twin-`
/// cells are one engine twice (with run-to-run noise; `max-running-seqs`
/// differs above the concurrency only to give them fingerprints of their
/// own) and stay undecided.
const MORE: &str = r#"
server "sim-a" { model "m"; sim { prefill-tok-s 200000; decode-step-ms 2; max-running-seqs 16; step-jitter-pct 3; } }
server "sim-b" { model "m"; sim { prefill-tok-s 200000; decode-step-ms 2; max-running-seqs 17; step-jitter-pct 3; } }
server "sim-c" { model "m"; sim { prefill-tok-s 200000; decode-step-ms 2; max-running-seqs 18; } }
server "sim-slow" { model "m"; sim { prefill-tok-s 200000; decode-step-ms 4; max-running-seqs 16; } }
workload "w" { context-tokens 64; max-tokens 16; concurrency 4; requests 40; }
cell "twin-a" server="sim-a" workload="w"
cell "twin-b" server="sim-b" workload="w"
cell "pair-fast" server="sim-c" workload="w"
cell "pair-slow" server="sim-slow" workload="w"
screen "twins" { over "cell.twin-*"; metric "aggregate_tok_s"; confidence 0.95; extra-repeats 2; }
decision "d" { rule label="a-is-faster" when="gate.faster.passed"; }
"#;

fn more_recipe(threshold: &str) -> String {
    format!(
        "{MORE}gate \"faster\" {{\n    confidence 0.95\n    extra-repeats 4\n    require \"cell.pair-fast.aggregate_tok_s > cell.pair-slow.aggregate_tok_s{threshold}\"\n}}\n\
         // An exact count next to a sampled one: it must read the pooled cell's counts.\n\
         gate \"counted\" {{\n    confidence 0.95\n    extra-repeats 4\n    require \"cell.pair-slow.canaries_passed == cell.pair-slow.requests\"\n    require \"cell.pair-fast.aggregate_tok_s > cell.pair-slow.aggregate_tok_s\"\n}}\n"
    )
}

#[test]
fn an_undecided_verdict_measures_its_cells_again_and_a_rerun_reuses_them() {
    let scratch = Scratch::new();
    let recipe = scratch.write("more.kdl", &more_recipe(""));
    let first = scratch.run(&recipe, &[], 0);

    let faster = stored(&scratch, &recipe, "faster");
    assert_eq!(faster["status"], "passed", "{faster}");
    let more = &faster["measured_more"];
    let rounds = more["rounds"].as_u64().expect("rounds");
    assert!((1..=4).contains(&rounds), "{more}");
    assert_eq!(more["stopped"], "decided", "{more}");
    assert_eq!(more["looks"], rounds + 1);
    let cells = more["cells"].as_array().unwrap();
    let names: Vec<&str> = cells.iter().map(|c| c["cell"].as_str().unwrap()).collect();
    assert_eq!(names, ["pair-fast", "pair-slow"], "{more}");
    for cell in cells {
        assert_eq!(cell["extra_repeats"].as_array().unwrap().len() as u64, rounds, "{cell}");
        // 40 requests of its own and 40 per extra repeat, pooled.
        assert_eq!(cell["pooled_requests"], 40 * (rounds + 1), "{cell}");
    }
    // Counts read the pooled cell too: every pooled request's canary passed.
    let counted = stored(&scratch, &recipe, "counted");
    assert_eq!(counted["status"], "passed", "{counted}");
    let at_least = more["confidence_at_least"].as_f64().unwrap();
    // The procedure's confidence: its budget of 4 extra rounds allows 5 looks,
    // whichever look decided, each erring as `faster`'s `passed` (two
    // intervals: 10%).
    assert!((at_least - (1.0 - 0.1 * 5.0)).abs() < 1e-9, "{more}");
    // The decision's label carries the procedure's bound: 5 looks, each
    // erring as `faster`'s `passed` (two intervals: 10%), not 0.95.
    let decision = stored(&scratch, &recipe, "d");
    let per_look = faster["passed_error_at_most"].as_f64().expect("a gate's bound");
    assert_eq!(per_look, 0.1, "{faster}");
    let label = decision["label_confidence"]["a-is-faster"].as_f64().expect("a label confidence");
    assert!((label - (1.0 - 5.0 * per_look)).abs() < 1e-9, "{decision}");
    assert_eq!(label, at_least, "{decision}");

    // The twins overlap however often they are measured: no winner after the budget.
    let twins = stored(&scratch, &recipe, "twins");
    assert!(twins.get("winner").is_none(), "{twins}");
    assert_eq!(twins["measured_more"]["rounds"], 2, "{twins}");
    assert_eq!(twins["measured_more"]["stopped"], "budget spent: still undecided", "{twins}");
    let transcript = first.transcript();
    assert!(transcript.contains("measured in this run"), "{transcript}");

    // The run record lists every extra repeat as a cell it ran.
    let records: String = std::fs::read_dir(scratch.path().join("store/runs"))
        .expect("run records")
        .flatten()
        .map(|f| std::fs::read_to_string(f.path()).unwrap_or_default())
        .collect();
    assert!(records.contains("\"pair-fast#extra-1\""), "{records}");
    // Its artifact names it so too, not the cell it repeats.
    let extra = cells[0]["extra_repeats"][0].as_str().expect("an extra repeat's fingerprint");
    let entry = scratch.path().join("store/entries").join(&extra[..2]).join(extra);
    let artifact: Value =
        serde_json::from_str(&std::fs::read_to_string(entry.join("benchmark.json")).expect("its artifact"))
            .unwrap();
    assert_eq!(artifact["cell"], "pair-fast#extra-1", "{entry:?}");

    // A changed threshold evaluates the gate again over the stored extra repeats.
    std::fs::write(&recipe, more_recipe(" * 1.01")).unwrap();
    let second = scratch.run(&recipe, &[], 0);
    let again = stored(&scratch, &recipe, "faster");
    assert_eq!(again["status"], "passed", "{again}");
    assert_eq!(again["measured_more"]["cells"], faster["measured_more"]["cells"], "{again}");
    let transcript = second.transcript();
    assert!(!transcript.contains("measured in this run"), "nothing measured again: {transcript}");

    // A bundle carries the extra repeats, and verify pools them again.
    scratch.anvil(&["export", "more.kdl", "-o", "more.anvil"]).expect_code(0);
    let verified = scratch.anvil(&["verify", "more.anvil"]).expect_code(0);
    assert!(verified.stdout.contains("verified: clean"), "{}", verified.transcript());
    assert!(
        verified.stdout.contains("4 gates, screens and decisions evaluated again"),
        "{}",
        verified.transcript()
    );
}

#[test]
fn extra_repeats_without_a_confidence_or_out_of_range_are_refused_with_their_place() {
    let scratch = Scratch::new();
    for (name, settings, message) in [
        ("no-level.kdl", "extra-repeats 3", "measures more only when a verdict"),
        ("too-many.kdl", "confidence 0.95; extra-repeats 17", "`extra-repeats` is 1 to 16; found 17"),
    ] {
        scratch.write(
            name,
            &format!(
                "{SERVERS}\ngate \"g\" {{\n    {settings}\n    require \"cell.twin-a.completed > 1\"\n}}\n"
            ),
        );
        let outcome = scratch.anvil(&["plan", name]).expect_code(2);
        // The settings line: after the servers and the gate's opening line.
        let line = format!("{SERVERS}\ngate \"g\" {{\n").matches('\n').count() + 1;
        assert!(outcome.stderr.contains(&format!("[{name}:{line}:")), "{}", outcome.stderr);
        assert!(outcome.stderr.contains(message), "{}", outcome.stderr);
    }
}
