//! Two `anvil run`s of one recipe on one store at the same time: both
//! succeed, the store verifies, and every step is executed exactly once.

use std::collections::BTreeMap;
use std::process::Stdio;

use crate::common::{Outcome, Scratch};

/// Eight tasks that take long enough to overlap; each appends its name to
/// shared.log (outside the store) when it executes.
fn recipe() -> String {
    let mut text = String::from("campaign \"concurrency\" {\n    seed 1\n}\n");
    for i in 0..8 {
        text.push_str(&format!(
            "task \"t{i}\" {{\n    run \"sh\" \"-c\" \"echo t{i} >> shared.log; sleep 0.2\"\n}}\n"
        ));
    }
    text.push_str(
        "task \"last\" after=\"t0\" after=\"t7\" {\n    run \"sh\" \"-c\" \"echo last >> shared.log\"\n}\n",
    );
    text
}

fn run_two_at_once(scratch: &Scratch, recipe: &std::path::Path, jobs: [&str; 2]) -> [Outcome; 2] {
    let spawn = |j: &str| {
        scratch
            .command()
            .args(["run", "-j", j])
            .arg(recipe)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start anvil")
    };
    let first = spawn(jobs[0]);
    let second = spawn(jobs[1]);
    let args = ["run", "(concurrent)"];
    [
        Outcome::from_output(&args, first.wait_with_output().expect("wait")),
        Outcome::from_output(&args, second.wait_with_output().expect("wait")),
    ]
}

fn check_round(jobs: [&str; 2]) {
    let scratch = Scratch::new();
    let recipe = scratch.write("recipe.kdl", &recipe());
    let outcomes = run_two_at_once(&scratch, &recipe, jobs);
    for outcome in &outcomes {
        assert_eq!(outcome.code, Some(0), "{}", outcome.transcript());
    }
    scratch.anvil(&["store", "verify"]).expect_code(0);

    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for line in scratch.read("shared.log").lines() {
        *counts.entry(line.to_string()).or_default() += 1;
    }
    assert_eq!(counts.len(), 9, "every step executed: {counts:?}");
    assert!(counts.values().all(|&n| n == 1), "each fingerprint executed once: {counts:?}");

    let [a, b] = [outcomes[0].summary(), outcomes[1].summary()];
    assert_eq!(a.ran + b.ran, 9, "{a:?} {b:?}");
    assert_eq!(a.cached + b.cached, 9, "{a:?} {b:?}");
    assert!(scratch.plan(&recipe, &[]).pending().is_empty());
}

#[test]
fn two_runs_at_once_execute_each_step_once() {
    check_round(["4", "4"]);
}

#[test]
fn a_narrow_and_a_wide_run_at_once_execute_each_step_once() {
    check_round(["1", "8"]);
}
