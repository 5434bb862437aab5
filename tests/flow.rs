//! Values that flow: a screen's winner used as a setting
//! (`extends="{screen.speed.winner_server}"`, `server="{…}"`). The dependent
//! steps are provisional until the screen has chosen; their fingerprints then
//! hash the winner itself, so a new winner reruns exactly what reads it and
//! an unchanged one reruns nothing. Real runs on the simulated engine.

use std::collections::BTreeSet;
use std::path::PathBuf;

use crate::common::Scratch;

/// Two twins race in a screen; the finalist is whichever wins. `{quick}` and
/// `{steady}` are the twins' decode step costs: the smaller one wins.
const RECIPE: &str = r#"
campaign "flow" {
    seed 7
}

server "base" abstract=#true {
    engine "sim"
    model "flow-model"
    sim {
        prefill-tok-s 50000
        max-running-seqs 8
    }
}
server "quick" extends="base" {
    sim { decode-step-ms QUICK; }
}
server "steady" extends="base" {
    sim { decode-step-ms STEADY; }
}

workload "tiny" {
    context-tokens 64
    concurrency 2
    requests 6
    response-words 8
    max-tokens 16
    thinking "off"
}

cell "try-quick" server="quick" workload="tiny"
cell "try-steady" server="steady" workload="tiny"

screen "speed" {
    over "cell.try-*"
    metric "aggregate_tok_s"
}

// The winner plus one more setting, and the winner itself.
server "finalist" extends="{screen.speed.winner_server}" {
    identity role="finalist"
}
cell "headline" server="finalist" workload="tiny"
cell "again" server="{screen.speed.winner_server}" workload="tiny" {
    requests 5
}
gate "headline-ok" {
    require "cell.headline.failed == 0"
}

// Reads no result: nothing a new winner does may rerun it.
cell "bystander" server="quick" workload="tiny" {
    requests 4
}
"#;

fn recipe(quick: &str, steady: &str) -> String {
    RECIPE.replace("QUICK", quick).replace("STEADY", steady)
}

fn setup(quick: &str, steady: &str) -> (Scratch, PathBuf) {
    let scratch = Scratch::new();
    let path = scratch.write("recipe.kdl", &recipe(quick, steady));
    (scratch, path)
}

/// The steps the newest run executed (its record says `ran`).
fn executed(scratch: &Scratch) -> BTreeSet<String> {
    scratch
        .last_run_statuses()
        .into_iter()
        .filter(|(_, status)| status == "ran")
        .map(|(name, _)| name)
        .collect()
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|n| n.to_string()).collect()
}

#[test]
fn plan_shows_the_dependent_steps_as_provisional_with_their_input() {
    let (scratch, path) = setup("4", "12");
    let plan = scratch.plan(&path, &[]);
    for name in ["finalist", "headline", "again"] {
        let node = plan.nodes().iter().find(|n| n["name"] == name).expect("in the plan");
        assert_eq!(node["provisional"], true, "{name}: {node}");
        if name != "finalist" {
            let reason = node["reason"].as_str().unwrap_or_default();
            assert!(reason.contains("provisional: waits for screen.speed"), "{name}: {reason}");
        }
    }
    let bystander = plan.nodes().iter().find(|n| n["name"] == "bystander").expect("in the plan");
    assert_eq!(bystander["provisional"], false);

    // After a run the winner is known: the plan settles on it, nothing is provisional.
    scratch.run(&path, &[], 0);
    let plan = scratch.plan(&path, &[]);
    assert!(plan.pending().is_empty(), "a second plan runs nothing: {:?}", plan.statuses());
    assert!(plan.nodes().iter().all(|n| n["provisional"] == false), "{:?}", plan.nodes());
}

#[test]
fn a_new_winner_reruns_exactly_what_reads_it() {
    let (scratch, path) = setup("4", "12");
    scratch.run(&path, &[], 0);
    let all = set(&["try-quick", "try-steady", "speed", "headline", "again", "headline-ok", "bystander"]);
    assert_eq!(executed(&scratch), all, "a first run executes everything");

    scratch.run(&path, &[], 0);
    assert_eq!(executed(&scratch), set(&[]), "an unchanged recipe reruns nothing");

    // The steady twin becomes the faster one: the screen picks it.
    scratch.write("recipe.kdl", &recipe("4", "1"));
    let out = scratch.run(&path, &[], 0);
    assert_eq!(
        executed(&scratch),
        set(&["try-steady", "speed", "headline", "again", "headline-ok"]),
        "the changed twin, its screen and what reads the winner — nothing else\n{}",
        out.transcript()
    );
    assert!(out.stderr.contains("winner try-steady"), "{}", out.transcript());
    // What ran is the steady twin's finalist: the same recipe written by hand finds it stored.
    let by_hand = recipe("4", "1")
        .replace("extends=\"{screen.speed.winner_server}\"", "extends=\"steady\"")
        .replace("server=\"{screen.speed.winner_server}\"", "server=\"steady\"");
    let by_hand_path = scratch.write("by-hand.kdl", &by_hand);
    assert!(scratch.plan(&by_hand_path, &[]).pending().is_empty());
}

#[test]
fn an_unchanged_winner_reruns_nothing_downstream() {
    let (scratch, path) = setup("4", "12");
    scratch.run(&path, &[], 0);
    // The loser gets slower still: the screen is re-evaluated, its winner stays.
    scratch.write("recipe.kdl", &recipe("4", "16"));
    scratch.run(&path, &[], 0);
    assert_eq!(executed(&scratch), set(&["try-steady", "speed"]));
}

#[test]
fn a_settled_step_has_the_fingerprint_of_the_same_step_written_by_hand() {
    let (scratch, path) = setup("4", "12");
    scratch.run(&path, &[], 0);
    let settled = scratch.plan(&path, &[]);
    let by_hand = recipe("4", "12")
        .replace("extends=\"{screen.speed.winner_server}\"", "extends=\"quick\"")
        .replace("server=\"{screen.speed.winner_server}\"", "server=\"quick\"");
    let by_hand_path = scratch.write("by-hand.kdl", &by_hand);
    let written = scratch.plan(&by_hand_path, &[]);
    for name in ["finalist", "headline", "again"] {
        assert_eq!(settled.fingerprint(name), written.fingerprint(name), "{name}");
    }
    assert!(written.pending().is_empty(), "the hand-written recipe finds the same stored steps");
}

/// `anvil plan` refuses `text` with a diagnostic pointing at `recipe.kdl:LINE:` that says `says`.
fn assert_refused(text: &str, line: usize, says: &str) {
    let scratch = Scratch::new();
    scratch.write("recipe.kdl", text);
    let out = scratch.anvil(&["plan", "recipe.kdl"]).expect_code(2);
    assert!(out.stderr.contains(&format!("recipe.kdl:{line}:")), "points at line {line}:\n{}", out.stderr);
    assert!(out.stderr.contains(says), "expected {says:?} in:\n{}", out.stderr);
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
}

#[test]
fn the_loader_refuses_unknown_steps_fields_and_cycles() {
    let base = recipe("4", "12");
    assert_refused(
        &base.replace(
            "{screen.speed.winner_server}\" {\n    identity",
            "{screen.sped.winner_server}\" {\n    identity",
        ),
        39,
        "but there is no",
    );
    assert_refused(
        &base.replace("server=\"{screen.speed.winner_server}\"", "server=\"{screen.speed.loser}\""),
        43,
        "a screen result has no field `loser`",
    );
    assert_refused(
        &base.replace(
            "server=\"{screen.speed.winner_server}\"",
            "server=\"{cell.try-quick.aggregate_tok_s}\"",
        ),
        43,
        "cell results cannot be settings",
    );
    // The screen's own cell measures the screen's winner: a cycle.
    assert_refused(
        &base.replace(
            "cell \"try-quick\" server=\"quick\"",
            "cell \"try-quick\" server=\"{screen.speed.winner_server}\"",
        ),
        30,
        "dependency cycle",
    );
}

#[test]
fn slurm_refuses_steps_that_wait_for_results() {
    let (scratch, path) = setup("4", "12");
    let out = scratch.run(&path, &["--executor", "slurm"], 1);
    assert!(out.stderr.contains("not supported under --executor slurm"), "{}", out.transcript());
}

/// A search's answer as a number setting: the cell measures the rate found.
const SEARCH_RECIPE: &str = r#"
campaign "flow-search" {
    seed 7
}

server "sim" {
    model "flow-model"
    sim { decode-step-ms 1; max-running-seqs 16; }
}

workload "chat" {
    context-tokens 64
    max-tokens 8
    requests 8
    concurrency 64
    thinking "off"
}

search "capacity" server="sim" workload="chat" {
    variable "rate"
    ladder 4 8
    slo "probe.failure_pct == 0"
}

cell "at-capacity" server="sim" workload="chat" {
    arrival "poisson"
    rate "{search.capacity.max_rate}"
    requests 6
}
"#;

#[test]
fn a_search_answer_sets_a_rate() {
    let scratch = Scratch::new();
    let path = scratch.write("recipe.kdl", SEARCH_RECIPE);
    let plan = scratch.plan(&path, &[]);
    let cell = plan.nodes().iter().find(|n| n["name"] == "at-capacity").expect("in the plan");
    assert_eq!(cell["provisional"], true, "{cell}");
    assert!(cell["reason"].as_str().unwrap_or_default().contains("waits for search.capacity"), "{cell}");

    let out = scratch.run(&path, &[], 0);
    assert!(executed(&scratch).contains("at-capacity"), "{}", out.transcript());
    // Both rungs pass: the answer is 8, and the cell is the one written with `rate 8`.
    let by_hand = scratch.write("by-hand.kdl", &SEARCH_RECIPE.replace("\"{search.capacity.max_rate}\"", "8"));
    let written = scratch.plan(&by_hand, &[]);
    assert_eq!(written.statuses()["at-capacity"], "cached", "{:?}", written.statuses());
    assert_eq!(written.fingerprint("at-capacity"), scratch.plan(&path, &[]).fingerprint("at-capacity"));
}

#[test]
fn when_the_screen_cannot_choose_what_reads_it_is_skipped_and_the_rest_runs() {
    // The steady variant's server cannot start: its cell fails, so the screen never chooses.
    let broken = recipe("4", "12").replace(
        "server \"steady\" extends=\"base\" {\n    sim { decode-step-ms 12; }\n}",
        "server \"steady\" {\n    command \"sh\" \"-c\" \"exit 3\"\n    model \"flow-model\"\n}",
    );
    assert_ne!(broken, recipe("4", "12"), "the fixture still has the steady server");
    let scratch = Scratch::new();
    let path = scratch.write("recipe.kdl", &broken);
    let out = scratch.run(&path, &["--keep-going"], 1);
    let statuses = scratch.last_run_statuses();
    for name in ["headline", "again", "headline-ok"] {
        assert_eq!(statuses[name], "skipped", "{name}: {statuses:?}\n{}", out.transcript());
    }
    assert!(out.stderr.contains("provisional: screen.speed produced no result"), "{}", out.transcript());
    assert_eq!(statuses["bystander"], "ran", "{statuses:?}");
    assert_eq!(statuses["try-steady"], "failed", "{statuses:?}");
}
