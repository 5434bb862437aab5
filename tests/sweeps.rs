//! Sweeps and grids expand into stable, readable step names; extends
//! accumulates; includes and params work; `graph` shows every step.

use std::path::PathBuf;

use crate::common::Scratch;

const RECIPE: &str = include_str!("fixtures/recipes/sweeps.kdl");
const COMMON: &str = include_str!("fixtures/recipes/sweeps-common.kdl");

const EXPECTED_NAMES: &[&str] = &[
    "depth-4",
    "depth-8",
    "depth-12",
    "grid-chunk256-ratio0p5",
    "grid-chunk256-ratio0p9",
    "grid-chunk512-ratio0p5",
    "grid-chunk512-ratio0p9",
    "leaf",
    "all-depths",
];

fn setup() -> (Scratch, PathBuf) {
    let scratch = Scratch::new();
    scratch.write("sweeps-common.kdl", COMMON);
    let recipe = scratch.write("sweeps.kdl", RECIPE);
    (scratch, recipe)
}

fn sorted(mut names: Vec<String>) -> Vec<String> {
    names.sort();
    names
}

fn expected_sorted() -> Vec<String> {
    sorted(EXPECTED_NAMES.iter().map(|s| s.to_string()).collect())
}

#[test]
fn sweeps_and_grids_expand_to_readable_names() {
    let (scratch, recipe) = setup();
    let plan = scratch.plan(&recipe, &[]);
    assert_eq!(sorted(plan.names()), expected_sorted());
    // The gate's wildcard reads every depth.
    let gate = plan.nodes().iter().find(|n| n["name"] == "all-depths").cloned().unwrap_or_default();
    assert_eq!(gate["deps"], serde_json::json!(["depth-4", "depth-8", "depth-12"]));
}

#[test]
fn names_and_fingerprints_are_stable() {
    let (scratch, recipe) = setup();
    let first = scratch.plan(&recipe, &[]);
    let second = scratch.plan(&recipe, &[]);
    assert_eq!(first.names(), second.names());
    assert_eq!(first.fingerprints(), second.fingerprints());

    // Adding a value to a sweep adds a step and leaves the others alone.
    scratch.run(&recipe, &[], 0);
    scratch.write("sweeps.kdl", &RECIPE.replace("sweep \"depth\" 4 8 12", "sweep \"depth\" 4 8 12 16"));
    let widened = scratch.plan(&recipe, &[]);
    assert_eq!(widened.pending(), ["depth-16", "all-depths"], "statuses: {:?}", widened.statuses());
    for name in EXPECTED_NAMES.iter().filter(|n| **n != "all-depths") {
        assert_eq!(widened.fingerprint(name), first.fingerprint(name), "{name} kept its fingerprint");
    }
}

#[test]
fn sweep_values_reach_the_commands() {
    let (scratch, recipe) = setup();
    scratch.run(&recipe, &[], 0);
    let plan = scratch.plan(&recipe, &[]);
    let stdout = |name: &str| {
        scratch.anvil(&["show", &plan.fingerprint(name), "--json"]).expect_code(0).json()["result"]["stdout"]
            .as_str()
            .unwrap_or_default()
            .trim()
            .to_string()
    };
    assert_eq!(stdout("depth-12"), "depth 12 size 2");
    assert_eq!(stdout("grid-chunk512-ratio0p5"), "chunk 512 ratio 0.5");
}

#[test]
fn extends_accumulates_along_the_chain_through_an_include() {
    let (scratch, recipe) = setup();
    scratch.run(&recipe, &["--only", "leaf"], 0);
    let fingerprint = scratch.plan(&recipe, &[]).fingerprint("leaf");
    let result = scratch.anvil(&["show", &fingerprint, "--json"]).expect_code(0).json()["result"].clone();
    assert_eq!(
        result["stdout"].as_str().map(str::trim),
        Some("A=from-base B=from-middle C=from-leaf"),
        "{result}"
    );
}

#[test]
fn a_missing_include_is_reported_where_it_is_included() {
    let scratch = Scratch::new();
    scratch.write("sweeps.kdl", RECIPE);
    let outcome = scratch.anvil(&["plan", "sweeps.kdl"]).expect_code(2);
    assert!(outcome.stderr.contains("sweeps.kdl:6:1"), "{}", outcome.transcript());
    assert!(outcome.stderr.contains("sweeps-common.kdl"), "{}", outcome.transcript());
}

#[test]
fn set_changes_a_param_for_the_steps_that_use_it() {
    let (scratch, recipe) = setup();
    scratch.run(&recipe, &[], 0);
    let plan = scratch.plan(&recipe, &["--set", "size=3"]);
    assert_eq!(sorted(plan.names()), expected_sorted(), "names do not depend on param values");
    assert_eq!(plan.pending(), ["depth-4", "depth-8", "depth-12", "all-depths"]);
    scratch.run(&recipe, &["--set", "size=3"], 0);
    let fingerprint = scratch.plan(&recipe, &["--set", "size=3"]).fingerprint("depth-4");
    let result = scratch.anvil(&["show", &fingerprint, "--json"]).expect_code(0).json()["result"].clone();
    assert_eq!(result["stdout"].as_str().map(str::trim), Some("depth 4 size 3"));
}

#[test]
fn graph_mentions_every_step_and_every_edge() {
    let (scratch, recipe) = setup();
    let plan = scratch.plan(&recipe, &[]);
    let edges: usize = plan.nodes().iter().map(|n| n["deps"].as_array().map_or(0, Vec::len)).sum();
    assert_eq!(edges, 3);
    let recipe = recipe.to_str().unwrap_or_default();

    let dot = scratch.anvil(&["graph", recipe, "--format", "dot"]).expect_code(0).stdout;
    assert!(dot.starts_with("digraph"), "{dot}");
    assert_eq!(dot.matches(" -> ").count(), edges, "{dot}");
    let mermaid = scratch.anvil(&["graph", recipe, "--format", "mermaid"]).expect_code(0).stdout;
    assert!(mermaid.starts_with("flowchart"), "{mermaid}");
    assert_eq!(mermaid.matches(" --> ").count(), edges, "{mermaid}");
    for name in EXPECTED_NAMES {
        assert!(dot.contains(&format!(" {name}\"")), "dot lacks {name}:\n{dot}");
        assert!(mermaid.contains(&format!(" {name}\"")), "mermaid lacks {name}:\n{mermaid}");
    }
}
