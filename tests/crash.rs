//! A run killed with SIGKILL at any moment leaves a store that verifies,
//! and the next run finishes the rest, reusing what was stored.

use std::process::Stdio;
use std::time::Duration;

use crate::common::{Rng, Scratch};

/// Ten tasks, each sleeping 50–200 ms and writing an output file. Their
/// commands differ, so each has its own fingerprint.
fn recipe() -> String {
    let mut text = String::from("campaign \"crash\" {\n    seed 1\n}\n");
    for i in 0..10 {
        let sleep_ms = 50 + (i * 37) % 151;
        text.push_str(&format!(
            "task \"t{i}\" {{\n    run \"sh\" \"-c\" \"sleep 0.{sleep_ms:03}; echo t{i} > out-{i}.txt\"\n    outputs \"out-{i}.txt\"\n}}\n"
        ));
    }
    text
}

#[test]
fn killed_runs_leave_a_verifiable_store_and_the_rerun_finishes() {
    let mut rng = Rng::new(0x5eed_c4a5);
    for iteration in 0..6 {
        let scratch = Scratch::new();
        let recipe = scratch.write("recipe.kdl", &recipe());

        let mut child = scratch
            .command()
            .args(["run", "-j", "3"])
            .arg(&recipe)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start anvil");
        // Kill somewhere between startup and the end of the run (~0.6 s).
        let moment = Duration::from_millis(rng.below(700));
        std::thread::sleep(moment);
        child.kill().expect("SIGKILL anvil");
        child.wait().expect("reap anvil");

        let verify = scratch.anvil(&["store", "verify"]);
        assert_eq!(
            verify.code,
            Some(0),
            "iteration {iteration}, killed after {moment:?}:\n{}",
            verify.transcript()
        );

        let stored_before = scratch.plan(&recipe, &[]).statuses().values().filter(|s| *s == "cached").count();
        eprintln!("iteration {iteration}: killed after {moment:?} with {stored_before} of 10 steps stored");
        let summary = scratch.run(&recipe, &[], 0).summary();
        assert!(summary.ok);
        assert_eq!(summary.cached, stored_before, "iteration {iteration}: what was stored is reused");
        assert_eq!(summary.ran + summary.cached, 10, "iteration {iteration}: {summary:?}");
        assert!(scratch.plan(&recipe, &[]).pending().is_empty());
        scratch.anvil(&["store", "verify"]).expect_code(0);
    }
}
