//! `anvil diff`: why two fingerprints differ, field by field, with changes
//! in upstream steps shown as cascades.

use std::path::PathBuf;

use crate::common::Scratch;
use serde_json::Value;

const ONE: &str = r#"
task "make" {
    run "sh" "-c" "echo one"
}
task "use" after="make" {
    run "sh" "-c" "echo using"
}
"#;

/// A recipe run once as ONE, then rewritten so `make` says "two".
fn changed_after_a_run() -> (Scratch, PathBuf) {
    let scratch = Scratch::new();
    let recipe = scratch.write("recipe.kdl", ONE);
    scratch.run(&recipe, &[], 0);
    scratch.write("recipe.kdl", &ONE.replace("echo one", "echo two"));
    (scratch, recipe)
}

fn step_spec(recipe: &std::path::Path, step: &str) -> String {
    format!("{}:{step}", recipe.display())
}

fn changes(doc: &Value) -> &Vec<Value> {
    doc["changes"].as_array().unwrap_or_else(|| panic!("diff --json has a changes list: {doc}"))
}

#[test]
fn diff_against_the_last_run_names_the_changed_argument() {
    let (scratch, recipe) = changed_after_a_run();
    let outcome = scratch.anvil(&["diff", &step_spec(&recipe, "make")]).expect_code(0);
    assert!(
        outcome.stdout.contains(r#"settings.run[2]: "echo one" → "echo two""#),
        "{}",
        outcome.transcript()
    );
    // Only the changed argument is reported, not the whole command line.
    assert!(!outcome.stdout.contains("settings.run[0]"), "{}", outcome.transcript());
}

#[test]
fn diff_json_lists_path_and_both_values() {
    let (scratch, recipe) = changed_after_a_run();
    let doc = scratch.anvil(&["diff", &step_spec(&recipe, "make"), "--json"]).expect_code(0).json();
    assert_eq!(doc["identical"], false);
    let list = changes(&doc);
    assert_eq!(list.len(), 1, "one field changed: {doc}");
    assert_eq!(list[0]["path"], "settings.run[2]");
    assert_eq!(list[0]["a"], "echo one");
    assert_eq!(list[0]["b"], "echo two");
}

#[test]
fn diff_of_an_unchanged_step_is_identical() {
    let scratch = Scratch::new();
    let recipe = scratch.write("recipe.kdl", ONE);
    scratch.run(&recipe, &[], 0);
    let doc = scratch.anvil(&["diff", &step_spec(&recipe, "make"), "--json"]).expect_code(0).json();
    assert_eq!(doc["identical"], true);
    assert!(changes(&doc).is_empty());
}

#[test]
fn diff_by_fingerprint_prefixes() {
    let (scratch, recipe) = changed_after_a_run();
    let old = scratch.runs()[0]["nodes"][0]["fingerprint"].as_str().map(str::to_string).unwrap_or_default();
    scratch.run(&recipe, &[], 0);
    let new = scratch.plan(&recipe, &[]).fingerprint("make");
    assert_ne!(old, new);

    let outcome = scratch.anvil(&["diff", &old[..10], &new[..10]]).expect_code(0);
    assert!(
        outcome.stdout.contains(&old) && outcome.stdout.contains(&new),
        "both full fingerprints are shown:\n{}",
        outcome.transcript()
    );
    assert!(
        outcome.stdout.contains(r#"settings.run[2]: "echo one" → "echo two""#),
        "{}",
        outcome.transcript()
    );
    // Both are stored, so their results are compared as well.
    assert!(outcome.stdout.contains("stored results differ"), "{}", outcome.transcript());
}

#[test]
fn an_upstream_change_shows_as_a_cascade_downstream() {
    let (scratch, recipe) = changed_after_a_run();
    let old = scratch.runs()[0]["nodes"]
        .as_array()
        .and_then(|nodes| nodes.iter().find(|n| n["name"] == "use"))
        .map(|n| n["fingerprint"].as_str().unwrap_or_default().to_string())
        .unwrap_or_default();
    scratch.run(&recipe, &[], 0);
    let new = scratch.plan(&recipe, &[]).fingerprint("use");
    assert_ne!(old, new, "a changed upstream changes the downstream fingerprint");

    let doc = scratch.anvil(&["diff", &old[..12], &new[..12], "--json"]).expect_code(0).json();
    let list = changes(&doc);
    assert!(list.iter().all(|c| c["cause"] == "cascade"), "`use` itself did not change: {doc}");
    let nested: Vec<&Value> =
        list.iter().filter_map(|c| c["upstream_changes"].as_array()).flatten().collect();
    assert!(
        nested.iter().any(|c| c["path"] == "settings.run[2]" && c["a"] == "echo one" && c["b"] == "echo two"),
        "the cascade explains the root cause upstream: {doc}"
    );

    let text = scratch.anvil(&["diff", &old[..12], &new[..12]]).expect_code(0);
    assert!(text.stdout.contains("cascade"), "{}", text.transcript());
    assert!(text.stdout.contains(r#"settings.run[2]: "echo one" → "echo two""#), "{}", text.transcript());
}

#[test]
fn diff_with_an_unknown_prefix_is_bad_input() {
    let scratch = Scratch::new();
    let recipe = scratch.write("recipe.kdl", ONE);
    scratch.run(&recipe, &[], 0);
    scratch.anvil(&["diff", "ffffffff", "eeeeeeee"]).expect_code(2);
    scratch.anvil(&["diff", "not-a-fingerprint"]).expect_code(2);
}

#[test]
fn two_measured_cells_are_compared_by_their_headline_metrics_first() {
    let scratch = Scratch::new();
    let fast = include_str!("fixtures/recipes/cell.kdl");
    let recipe = scratch.write("recipe.kdl", fast);
    scratch.run(&recipe, &[], 0);
    let before = scratch.plan(&recipe, &[]).fingerprint("tiny");
    // The same cell on a server whose decode step is 20x slower.
    scratch.write("recipe.kdl", &fast.replace("decode-step-ms 1", "decode-step-ms 20"));
    scratch.run(&recipe, &[], 0);
    let after = scratch.plan(&recipe, &[]).fingerprint("tiny");

    let outcome = scratch.anvil(&["diff", &before[..12], &after[..12]]).expect_code(0);
    let out = &outcome.stdout;
    assert!(out.contains("measured results:"), "{}", outcome.transcript());
    assert!(out.contains("tpot_p50_ms") && out.contains("differs"), "a 20x slower decode differs:\n{out}");
    assert!(out.contains("(--all lists them)"), "raw fields only on request:\n{out}");
    let all = scratch.anvil(&["diff", &before[..12], &after[..12], "--all"]).expect_code(0);
    assert!(all.stdout.contains("stored results differ ("), "{}", all.transcript());
}

/// `anvil show RECIPE:STEP` shows the step as the recipe's last run
/// recorded it (after an edit, the stored one, not the edited one).
#[test]
fn show_takes_recipe_and_step_as_diff_does() {
    let (scratch, recipe) = changed_after_a_run();
    let shown = scratch.anvil(&["show", &step_spec(&recipe, "make"), "--json"]).expect_code(0).json();
    assert!(shown["result"]["stdout"].as_str().unwrap_or_default().contains("one"), "{shown}");
    let missing = scratch.anvil(&["show", &step_spec(&recipe, "nope")]).expect_code(2);
    assert!(missing.stderr.contains("had no step `nope`"), "{}", missing.stderr);
}
