//! Gates pass, reject (a stored verdict that fails the run) or lack inputs
//! (never a verdict); `finally` steps always run; `--keep-going` lets
//! independent branches finish after a failure.

use std::path::PathBuf;

use crate::common::Scratch;

const RECIPE: &str = include_str!("fixtures/recipes/gates.kdl");

fn setup() -> (Scratch, PathBuf) {
    let scratch = Scratch::new();
    let recipe = scratch.write("recipe.kdl", RECIPE);
    (scratch, recipe)
}

/// The steps that wrote to ran.log, sorted; the log is cleared.
fn executed(scratch: &Scratch) -> Vec<String> {
    let mut names: Vec<String> = scratch.read("ran.log").lines().map(str::to_string).collect();
    scratch.write("ran.log", "");
    names.sort();
    names
}

/// The stored result of a step, via `anvil show FP --json`.
fn stored_result(scratch: &Scratch, fingerprint: &str) -> serde_json::Value {
    scratch.anvil(&["show", fingerprint, "--json"]).expect_code(0).json()["result"].clone()
}

#[test]
fn a_passing_gate_is_stored_as_passed() {
    let (scratch, recipe) = setup();
    let summary = scratch.run(&recipe, &[], 0).summary();
    assert!(summary.ok);
    assert_eq!((summary.failed, summary.rejected), (0, 0));
    let gate = scratch.plan(&recipe, &[]).fingerprint("measure-ok");
    let result = stored_result(&scratch, &gate);
    assert_eq!(result["status"], "passed", "{result}");
    assert_eq!(result["passed"], true);
}

#[test]
fn a_rejecting_gate_fails_the_run_and_is_stored() {
    let (scratch, recipe) = setup();
    let outcome = scratch.run(&recipe, &["--set", "want=1"], 1);
    let summary = outcome.summary();
    assert!(!summary.ok);
    assert_eq!((summary.rejected, summary.failed), (1, 0));
    assert!(outcome.stdout.contains("REJECTED gate `measure-ok`"), "{}", outcome.transcript());

    // The rejection is a verdict: stored, so a rerun does not re-evaluate it.
    let plan = scratch.plan(&recipe, &["--set", "want=1"]);
    assert_eq!(plan.statuses()["measure-ok"], "cached");
    let result = stored_result(&scratch, &plan.fingerprint("measure-ok"));
    assert_eq!(result["status"], "rejected", "{result}");
}

#[test]
fn a_cached_rejection_still_fails_the_run() {
    let (scratch, recipe) = setup();
    scratch.run(&recipe, &["--set", "want=1"], 1);
    let outcome = scratch.run(&recipe, &["--set", "want=1"], 1);
    let summary = outcome.summary();
    assert!(!summary.ok, "{}", outcome.transcript());
    // Nothing executes; the stored verdict is reported as a rejection again.
    assert_eq!((summary.ran, summary.cached, summary.rejected), (0, 3, 1), "{}", outcome.transcript());
}

#[test]
fn a_gate_reading_a_param_is_reevaluated_when_the_param_changes() {
    let scratch = Scratch::new();
    let recipe = scratch.write(
        "recipe.kdl",
        "param \"want\" 0\ntask \"a\" { run \"true\"; }\ngate \"g\" { require \"task.a.exit_code == param.want\"; }\n",
    );
    scratch.run(&recipe, &[], 0);
    let plan = scratch.plan(&recipe, &["--set", "want=1"]);
    assert_eq!(plan.statuses()["g"], "pending", "the gate's verdict depends on the param");
    scratch.run(&recipe, &["--set", "want=1"], 1);
}

#[test]
fn a_gate_whose_input_failed_is_no_verdict() {
    let (scratch, recipe) = setup();
    let outcome = scratch.run(&recipe, &["--set", "code=3", "--keep-going"], 1);
    let summary = outcome.summary();
    assert_eq!((summary.failed, summary.rejected), (1, 0), "{}", outcome.transcript());
    let statuses = scratch.last_run_statuses();
    assert_eq!(statuses["measure"], "failed");
    assert!(
        statuses["measure-ok"] != "ran" && statuses["measure-ok"] != "cached",
        "no verdict without input: {statuses:?}"
    );
    // Nothing was stored for the gate: the next run evaluates it.
    let plan = scratch.plan(&recipe, &["--set", "code=3"]);
    assert_eq!(plan.statuses()["measure-ok"], "pending");
    assert_eq!(plan.statuses()["measure"], "pending", "failures are never stored");
}

#[test]
fn finally_runs_even_when_a_step_failed() {
    let (scratch, recipe) = setup();
    scratch.run(&recipe, &["--set", "code=3", "-j", "1"], 1);
    let ran = executed(&scratch);
    assert!(ran.contains(&"measure".to_string()), "{ran:?}");
    assert!(ran.contains(&"restore".to_string()), "finally ran after the failure: {ran:?}");
}

#[test]
fn finally_runs_on_success_and_is_never_cached() {
    let (scratch, recipe) = setup();
    scratch.run(&recipe, &[], 0);
    assert!(executed(&scratch).contains(&"restore".to_string()));
    // A change reruns one branch; finally restores again.
    scratch.write("recipe.kdl", &RECIPE.replace("echo independent >>", "echo independent  >>"));
    scratch.run(&recipe, &[], 0);
    assert_eq!(executed(&scratch), ["after-independent", "independent", "restore"]);
}

#[test]
fn without_keep_going_a_failure_stops_what_has_not_started() {
    let (scratch, recipe) = setup();
    // One at a time: `measure` comes first and fails before anything else starts.
    let summary = scratch.run(&recipe, &["--set", "code=3", "-j", "1"], 1).summary();
    assert_eq!(summary.failed, 1);
    assert_eq!(executed(&scratch), ["measure", "restore"]);
    let statuses = scratch.last_run_statuses();
    assert_eq!(statuses["after-independent"], "skipped");
}

#[test]
fn keep_going_lets_independent_branches_finish() {
    let (scratch, recipe) = setup();
    let summary = scratch.run(&recipe, &["--set", "code=3", "-j", "1", "--keep-going"], 1).summary();
    assert_eq!(summary.failed, 1);
    assert_eq!(executed(&scratch), ["after-independent", "independent", "measure", "restore"]);
    // The finished branch is stored; only the failed part is left to do.
    let plan = scratch.plan(&recipe, &["--set", "code=3"]);
    assert_eq!(plan.pending(), ["measure", "measure-ok"]);
}

#[test]
fn plan_after_a_complete_run_shows_nothing_that_run_would_execute() {
    let (scratch, recipe) = setup();
    let before = scratch.plan(&recipe, &[]).statuses();
    assert_eq!(before["restore"], "pending", "a first run executes steps, so it restores: {before:?}");
    scratch.run(&recipe, &[], 0);
    executed(&scratch);

    let plan = scratch.plan(&recipe, &[]);
    let statuses = plan.statuses();
    assert!(
        statuses.values().all(|s| s == "cached" || s == "idle"),
        "plan after a complete run: {statuses:?}"
    );
    assert_eq!(statuses["restore"], "idle");
    // And run agrees: nothing executes, the finally step included.
    scratch.run(&recipe, &[], 0);
    assert_eq!(executed(&scratch), Vec::<String>::new());

    // A changed input makes a step pending, and with it the finally step.
    let changed = scratch.plan(&recipe, &["--set", "want=1"]).statuses();
    assert_eq!(changed["restore"], "pending", "{changed:?}");
}
