//! A cell whose every request fails keeps its evidence: the run line names
//! the failure classes and the first reply, `anvil show`, the report and
//! `run --json` show them, the records and the server's log are kept with
//! the run (never under the cell's fingerprint: a rerun runs it again), and
//! `gc` keeps them while the run's record exists. The same for a check that
//! could not complete (its server went away mid-check).

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

    // The report of the run: the dominant class, its count and the first reply.
    scratch.anvil(&["report", recipe.to_str().unwrap(), "-o", "report.html"]).expect_code(0);
    let html = scratch.read("report.html");
    let block = failed_block(&html, "c");
    assert!(block.contains("<code>http_status</code>"), "{block}");
    assert!(block.contains("data-failure-class=\"http_status\">4</td>"), "{block}");
    assert!(
        block.contains("HTTP 500: {&quot;error&quot;:{&quot;message&quot;:&quot;anvil-sim injected fault"),
        "{block}"
    );

    // Not a cached success: a rerun runs it again, with --json saying why.
    let again = scratch.anvil(&["run", recipe.to_str().unwrap(), "--json"]).expect_code(1).json();
    let step_json = &again["steps"].as_array().unwrap().iter().find(|s| s["name"] == "c").unwrap();
    assert_eq!(step_json["status"], "failed", "{again}");
    let detail = step_json["detail"].as_str().unwrap();
    assert!(detail.contains("4 failed: http_status (4); first: HTTP 500"), "{again}");

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

/// The report's evidence block of failed step `name`.
fn failed_block<'a>(html: &'a str, name: &str) -> &'a str {
    let start = html
        .find(&format!("<div class=\"failed-evidence\" id=\"failed-{name}\">"))
        .unwrap_or_else(|| panic!("no evidence block for {name} in the report"));
    let end = html[start..].find("</div>").map_or(html.len(), |e| start + e);
    &html[start..end]
}

/// A check whose server goes away mid-check (the simulated engine exits
/// after its first request) could not complete: a failure, not a verdict.
/// The attempts it judged, why it stopped and the server's log are kept
/// with the run; the run line, `show`, `run --json` and the report say why;
/// a rerun runs it again.
#[test]
fn a_check_that_could_not_complete_keeps_its_evidence() {
    let scratch = Scratch::new();
    let recipe = scratch.write(
        "dying.kdl",
        r#"
server "dying" {
    sim { faults { exit-after-requests 1; }; }
}
check "smoke" server="dying" type="smoke" { requests 30; }
"#,
    );
    let outcome = scratch.run(&recipe, &[], 1);
    let text = outcome.transcript();
    assert!(text.contains("FAILED check `smoke`: check could not run: unreachable: "), "{text}");
    assert!(text.contains("cannot reach") && text.contains("(evidence: "), "{text}");
    assert!(!text.contains("REJECTED"), "a check that could not complete is no verdict: {text}");

    let step = format!("{}:smoke", recipe.display());
    let shown = scratch.anvil(&["show", &step]).expect_code(1);
    let out = &shown.stdout;
    assert!(out.contains("FAILED in run-") && out.contains("smoke check could not complete"), "{out}");
    assert!(out.contains("unreachable") && out.contains("attempts before it stopped"), "{out}");
    let json = scratch.anvil(&["show", &step, "--json"]).expect_code(1).json();
    let failed = &json["failed"];
    assert_eq!(failed["schema"], "anvil.failed-check/v1", "{json}");
    assert_eq!(failed["type"], "smoke", "{json}");
    assert_eq!(failed["classes"][0]["class"], "unreachable", "{json}");
    assert_eq!(failed["classes"][0]["count"], 1, "{json}");
    let attempts = failed["attempts"].as_u64().unwrap();
    assert!((1..30).contains(&attempts), "it answered its first request, then went away: {json}");

    // What was sent and received before it stopped, and the server's log.
    let evidence = std::path::PathBuf::from(json["evidence"].as_str().unwrap());
    let kept: Value =
        serde_json::from_slice(&std::fs::read(evidence.join("evidence.json")).unwrap()).unwrap();
    let judged = kept[0]["attempts"].as_array().unwrap();
    assert_eq!(judged.len() as u64, attempts, "{kept}");
    assert_eq!(judged[0]["passed"], true, "the first attempt was answered: {kept}");
    assert!(kept[0]["stopped"].as_str().unwrap().contains("cannot reach"), "{kept}");
    assert!(evidence.join("server-0.log").exists());

    // The report shows why.
    scratch.anvil(&["report", recipe.to_str().unwrap(), "-o", "report.html"]).expect_code(0);
    let html = scratch.read("report.html");
    let block = failed_block(&html, "smoke");
    assert!(block.contains("Why check smoke failed"), "{block}");
    assert!(block.contains("data-failure-class=\"unreachable\">1</td>"), "{block}");
    assert!(block.contains("cannot reach"), "{block}");

    // Not a cached verdict: a rerun runs it again, with --json saying why.
    let again = scratch.anvil(&["run", recipe.to_str().unwrap(), "--json"]).expect_code(1).json();
    let step_json = again["steps"].as_array().unwrap().iter().find(|s| s["name"] == "smoke").unwrap();
    assert_eq!(step_json["status"], "failed", "{again}");
    assert!(step_json["detail"].as_str().unwrap().contains("check could not run: unreachable: "), "{again}");

    scratch.anvil(&["gc"]).expect_code(0);
    assert!(evidence.join("failed-check.json").exists(), "gc removed the evidence of a recorded run");
}
