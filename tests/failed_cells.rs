//! A cell whose every request fails keeps its evidence: the run line names
//! the failure classes and the first reply, `anvil show` and `run --json`
//! show them, the records and the server's log are kept with the run
//! (never under the cell's fingerprint: a rerun runs it again), and `gc`
//! keeps them while the run's record exists.

use serde_json::Value;

use crate::common::Scratch;

const RECIPE: &str = r#"
server "sim" {
    sim { faults { http-500-rate 1.0; }; }
}
cell "c" server="sim" {
    requests 4
    concurrency 2
    max-tokens 16
    context-tokens 0
}
"#;

#[test]
fn a_cell_that_measured_nothing_says_why_everywhere_and_keeps_its_records() {
    let scratch = Scratch::new();
    let recipe = scratch.write("failing.kdl", RECIPE);
    let outcome = scratch.run(&recipe, &[], 1);
    let text = outcome.transcript();
    assert!(text.contains("no request completed: 4 failed: http_status (4); first: HTTP 500"), "{text}");

    // `show` of the step: the classes, the first reply, the evidence kept.
    let step = format!("{}:c", recipe.display());
    let shown = scratch.anvil(&["show", &step]).expect_code(1);
    assert!(shown.stdout.contains("FAILED in run-"), "{}", shown.transcript());
    assert!(shown.stdout.contains("http_status") && shown.stdout.contains("500"), "{}", shown.transcript());
    let json = scratch.anvil(&["show", &step, "--json"]).expect_code(1).json();
    assert_eq!(json["failed"]["classes"][0]["class"], "http_status", "{json}");
    assert_eq!(json["failed"]["classes"][0]["count"], 4, "{json}");
    let evidence = std::path::PathBuf::from(json["evidence"].as_str().unwrap());
    let records: Value =
        serde_json::from_slice(&std::fs::read(evidence.join("benchmark.json")).unwrap()).unwrap();
    assert_eq!(records["request_timings"].as_array().map(Vec::len), Some(4), "what was sent and received");
    assert!(evidence.join("server-0.log").exists());

    // Not a cached success: a rerun runs it again, with --json saying why.
    let again = scratch.anvil(&["run", recipe.to_str().unwrap(), "--json"]).expect_code(1).json();
    let step_json = &again["steps"].as_array().unwrap().iter().find(|s| s["name"] == "c").unwrap();
    assert_eq!(step_json["status"], "failed", "{again}");
    assert!(step_json["detail"].as_str().unwrap().contains("http_status (4)"), "{again}");

    // gc keeps the evidence of recorded runs.
    scratch.anvil(&["gc"]).expect_code(0);
    assert!(evidence.join("failed-cell.json").exists(), "gc removed the evidence of a recorded run");
}

/// When the decision's headline never ran (here: a GPU server on a machine
/// whose pool has none), no decision summary or manifest is written as if
/// it were a result, and the GPU error says how to go on.
#[test]
fn nothing_is_published_when_the_headline_never_ran() {
    let scratch = Scratch::new();
    let recipe = scratch.write(
        "gpu.kdl",
        r#"
campaign "needs-a-gpu"
server "big" { command "true"; gpus 1; }
cell "headline" server="big" { requests 2; }
decision "d" { headline "headline"; rule label="fast" when="cell.headline.completed > 0"; }
"#,
    );
    let outcome = scratch.anvil(&["run", recipe.to_str().unwrap(), "--gpus", ""]).expect_code(1);
    let text = outcome.transcript();
    assert!(text.contains("`--gpus 0,1,…`") && text.contains("`--sim`"), "{text}");
    assert!(text.contains("no campaign outputs written"), "{text}");
    assert!(!scratch.path().join("results/needs-a-gpu/decision-summary.json").exists(), "{text}");
}
