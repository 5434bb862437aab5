//! The cache: a step runs only when its fingerprint is not stored, and only
//! changes that can change a result change a fingerprint.

use std::path::PathBuf;

use crate::common::Scratch;

const RECIPE: &str = include_str!("fixtures/recipes/cache.kdl");

/// A scratch directory holding the cache recipe as `recipe.kdl`.
fn setup() -> (Scratch, PathBuf) {
    let scratch = Scratch::new();
    let recipe = scratch.write("recipe.kdl", RECIPE);
    (scratch, recipe)
}

/// Which tasks executed, in the order they wrote ran.log; then clear it.
fn executed(scratch: &Scratch) -> Vec<String> {
    let log = scratch.read("ran.log");
    scratch.write("ran.log", "");
    let mut names: Vec<String> = log.lines().map(str::to_string).collect();
    names.sort();
    names
}

#[test]
fn a_second_run_executes_nothing() {
    let (scratch, recipe) = setup();
    assert_eq!(scratch.plan(&recipe, &[]).pending(), ["greet", "shout", "other"]);
    let first = scratch.run(&recipe, &[], 0).summary();
    assert_eq!((first.ran, first.cached), (3, 0));
    assert_eq!(executed(&scratch), ["greet", "other", "shout"]);

    let plan = scratch.plan(&recipe, &[]);
    assert!(
        plan.statuses().values().all(|s| s == "cached"),
        "after a run every step is cached: {:?}",
        plan.statuses()
    );
    let second = scratch.run(&recipe, &[], 0).summary();
    assert_eq!((second.ran, second.cached, second.failed), (0, 3, 0));
    assert!(executed(&scratch).is_empty());
}

#[test]
fn a_changed_param_reruns_its_step_and_the_dependents() {
    let (scratch, recipe) = setup();
    scratch.run(&recipe, &[], 0);
    executed(&scratch);

    let plan = scratch.plan(&recipe, &["--set", "who=anvil"]);
    assert_eq!(plan.pending(), ["greet", "shout"], "statuses: {:?}", plan.statuses());
    let reason = plan
        .nodes()
        .iter()
        .find(|n| n["name"] == "greet")
        .map(|n| n["reason"].to_string())
        .unwrap_or_default();
    assert!(reason.contains("settings.run[2]"), "the reason names the changed field: {reason}");

    let summary = scratch.run(&recipe, &["--set", "who=anvil"], 0).summary();
    assert_eq!((summary.ran, summary.cached), (2, 1));
    assert_eq!(executed(&scratch), ["greet", "shout"]);
    let statuses = scratch.last_run_statuses();
    assert_eq!(statuses["greet"], "ran");
    assert_eq!(statuses["shout"], "ran");
    assert_eq!(statuses["other"], "cached");

    // Back to the default: both variants are stored now.
    assert!(scratch.plan(&recipe, &[]).pending().is_empty());
}

#[test]
fn rewriting_one_command_reruns_exactly_that_step() {
    let (scratch, recipe) = setup();
    scratch.run(&recipe, &[], 0);
    executed(&scratch);

    scratch.write("recipe.kdl", &RECIPE.replace("echo independent", "echo on its own"));
    assert_eq!(scratch.plan(&recipe, &[]).pending(), ["other"]);
    let summary = scratch.run(&recipe, &[], 0).summary();
    assert_eq!((summary.ran, summary.cached), (1, 2));
    assert_eq!(executed(&scratch), ["other"]);
}

#[test]
fn cosmetic_edits_rerun_nothing() {
    let (scratch, recipe) = setup();
    scratch.run(&recipe, &[], 0);
    executed(&scratch);
    let before = scratch.plan(&recipe, &[]).fingerprints();

    // Comments, whitespace, declaration order, a description, and a param
    // renamed with its value kept: none of it can change a result.
    let cosmetic = r#"
/* a block comment
   over two lines */
campaign "cache" { seed 1; }
task "other"    {
        run   "sh" "-c"    "echo other >> ran.log; echo independent"   // trailing comment
}
task "shout" after="greet" { run "sh" "-c" "echo shout >> ran.log; echo LOUD"; }

param "person" "world"
task "greet" {
    run "sh" "-c" "echo greet >> ran.log; echo hello {person}"
    description "a different description"
}
"#;
    scratch.write("recipe.kdl", cosmetic);
    let plan = scratch.plan(&recipe, &[]);
    assert_eq!(plan.fingerprints(), before);
    assert!(plan.pending().is_empty(), "statuses: {:?}", plan.statuses());
    let summary = scratch.run(&recipe, &[], 0).summary();
    assert_eq!((summary.ran, summary.cached), (0, 3));
    assert!(executed(&scratch).is_empty());
}

#[test]
fn force_reruns_the_step() {
    let (scratch, recipe) = setup();
    scratch.run(&recipe, &[], 0);
    executed(&scratch);

    let summary = scratch.run(&recipe, &["--force", "greet"], 0).summary();
    assert_eq!((summary.ran, summary.cached), (1, 2));
    assert_eq!(executed(&scratch), ["greet"]);
    assert_eq!(scratch.last_run_statuses()["greet"], "ran");
    // The stored entry is kept: nothing is pending afterwards.
    assert!(scratch.plan(&recipe, &[]).pending().is_empty());
}

#[test]
fn only_runs_the_step_and_its_dependencies() {
    let (scratch, recipe) = setup();
    scratch.run(&recipe, &["--only", "shout"], 0);
    assert_eq!(executed(&scratch), ["greet", "shout"]);
    assert_eq!(scratch.plan(&recipe, &[]).pending(), ["other"]);
    assert_ne!(scratch.last_run_statuses()["other"], "ran");
}

#[test]
fn only_with_an_unknown_step_is_bad_input() {
    let (scratch, recipe) = setup();
    let outcome =
        scratch.anvil(&["run", recipe.to_str().unwrap_or_default(), "--only", "shoot"]).expect_code(2);
    assert!(outcome.stderr.contains("shout"), "suggests the near name:\n{}", outcome.transcript());
    assert!(executed(&scratch).is_empty());
}

#[test]
fn dry_run_executes_nothing() {
    let (scratch, recipe) = setup();
    let outcome = scratch.run(&recipe, &["--dry-run"], 0);
    for name in ["greet", "shout", "other"] {
        assert!(outcome.stdout.contains(name), "the dry run lists `{name}`:\n{}", outcome.transcript());
    }
    assert!(executed(&scratch).is_empty());
    assert_eq!(scratch.plan(&recipe, &[]).pending(), ["greet", "shout", "other"]);
    assert!(scratch.runs().is_empty(), "a dry run records no run");
}

#[test]
fn the_store_can_be_given_by_flag_instead_of_environment() {
    let (scratch, recipe) = setup();
    let other_store = scratch.path().join("elsewhere");
    let mut command = scratch.command();
    command.env_remove("ANVIL_STORE").arg("--store").arg(&other_store).arg("run").arg(&recipe);
    let output = command.output().expect("start anvil");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(other_store.join("entries").is_dir(), "results went to the --store directory");
    // The environment's store saw nothing.
    assert_eq!(scratch.plan(&recipe, &[]).pending(), ["greet", "shout", "other"]);
}

#[test]
fn a_recipe_named_without_a_directory_runs() {
    let (scratch, _) = setup();
    let summary = scratch.anvil(&["run", "recipe.kdl"]).expect_code(0).summary();
    assert_eq!(summary.ran, 3);
}

/// Stored steps of a server are launched only to report their verdicts:
/// they must not release the server that the steps still to run need.
#[test]
fn stored_steps_do_not_stop_a_server_that_pending_steps_need() {
    let scratch = Scratch::new();
    let text = r#"
server "s" { engine "sim"; sim { decode-step-ms 1; prefill-tok-s 100000; }; }
check "k1" server="s" type="smoke"
check "k2" server="s" type="smoke"
check "k3" server="s" type="smoke"
cell "c" server="s" { requests 2; concurrency 1; max-tokens 8; context-tokens 32; }
"#;
    let recipe = scratch.write("recipe.kdl", text);
    scratch.run(&recipe, &[], 0);
    // Only the cell changes: the three checks are stored and come first.
    scratch.write("recipe.kdl", &text.replace("requests 2", "requests 3"));
    let outcome = scratch.run(&recipe, &[], 0);
    assert!(!outcome.stdout.contains("already stopped"), "{}", outcome.transcript());
}
