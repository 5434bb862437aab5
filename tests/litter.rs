//! A run leaves nothing in the temporary folder: its servers' logs are
//! copied into the entries that keep them and the run's log folder goes
//! with the run, whether it succeeded, failed or was interrupted. Each run
//! here gets a temporary folder of its own (`TMPDIR`), so what is left in
//! it afterwards is what that run left.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use crate::common::{Outcome, Scratch};
use crate::support_servers;

/// One simulated server, one cell of `requests` requests, and a server
/// whose command exits at once (its cell fails) when `broken`.
fn recipe(requests: u32, broken: bool) -> String {
    let mut text = format!(
        r#"campaign "litter" {{
    seed 7
}}
server "sim" {{
    engine "sim"
    model "litter-model"
    sim {{
        prefill-tok-s 20000
        decode-step-ms 5
        max-running-seqs 4
    }}
}}
workload "w" {{
    context-tokens 64
    max-tokens 16
    concurrency 2
    requests {requests}
}}
cell "c" server="sim" workload="w"
"#
    );
    if broken {
        text.push_str(
            "server \"dying\" {\n    command \"sh\" \"-c\" \"exit 3\"\n    model \"litter-model\"\n}\ncell \"d\" server=\"dying\" workload=\"w\"\n",
        );
    }
    text
}

/// The names left in `dir`.
fn left_in(dir: &Path) -> Vec<String> {
    let entries = std::fs::read_dir(dir).expect("read the run's temporary folder");
    entries.map(|e| e.expect("entry").file_name().to_string_lossy().into_owned()).collect()
}

/// `anvil run RECIPE [extra…]` with its own temporary folder.
fn run_with_tmp(scratch: &Scratch, tmp: &Path, recipe: &Path, extra: &[&str]) -> Outcome {
    let output =
        scratch.command().env("TMPDIR", tmp).arg("run").arg(recipe).args(extra).output().expect("run anvil");
    Outcome::from_output(&["run"], output)
}

#[test]
fn a_run_that_starts_servers_leaves_no_folder_in_tmp_when_it_succeeds_or_fails() {
    let scratch = Scratch::new();
    let tmp = scratch.path().join("tmp");
    std::fs::create_dir_all(&tmp).expect("make tmp");

    let ok = scratch.write("ok.kdl", &recipe(8, false));
    let out = run_with_tmp(&scratch, &tmp, &ok, &[]).expect_code(0);
    assert_eq!(out.summary().ran, 1, "{}", out.transcript());
    assert!(left_in(&tmp).is_empty(), "left after a run that succeeded: {:?}", left_in(&tmp));
    // The cell kept its server's log in its entry.
    let log = scratch.stored_path(&ok, "c", "server-0.log");
    assert!(log.is_file(), "the cell's entry keeps the server log: {}", log.display());

    let broken = scratch.write("broken.kdl", &recipe(8, true));
    let out = run_with_tmp(&scratch, &tmp, &broken, &["--keep-going"]).expect_code(1);
    assert!(out.transcript().contains("exit"), "{}", out.transcript());
    assert!(left_in(&tmp).is_empty(), "left after a run that failed: {:?}", left_in(&tmp));
}

#[test]
fn an_interrupted_run_leaves_no_folder_in_tmp() {
    let scratch = Scratch::new();
    let tmp = scratch.path().join("tmp");
    std::fs::create_dir_all(&tmp).expect("make tmp");
    let long = scratch.write("long.kdl", &recipe(100_000, false));
    let child = scratch
        .command()
        .env("TMPDIR", &tmp)
        .arg("run")
        .arg(&long)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start anvil");
    // Interrupt once the run's log folder exists: its server is up.
    let since = Instant::now();
    while left_in(&tmp).is_empty() && since.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!left_in(&tmp).is_empty(), "the run never made its log folder");
    std::thread::sleep(Duration::from_millis(500));
    support_servers::signal(child.id(), Signal::SIGINT);
    let output = child.wait_with_output().expect("reap anvil");
    let out = Outcome::from_output(&["run"], output);
    assert_eq!(out.code, Some(130), "{}", out.transcript());
    assert!(left_in(&tmp).is_empty(), "left after an interrupted run: {:?}", left_in(&tmp));
}

/// A run killed with SIGKILL cannot remove its folders; the next run does.
/// Only folders of processes that are gone go: a live run's are kept.
#[test]
fn a_run_killed_with_sigkill_leaves_folders_the_next_run_removes() {
    let scratch = Scratch::new();
    let tmp = scratch.path().join("tmp");
    std::fs::create_dir_all(&tmp).expect("make tmp");
    let long = scratch.write("long.kdl", &recipe(100_000, false));
    let mut child = scratch
        .command()
        .env("TMPDIR", &tmp)
        .arg("run")
        .arg(&long)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start anvil");
    // Killed once its cell is measuring: its log folder and the cell's scratch folder exist.
    let since = Instant::now();
    let measuring = |names: &[String]| names.iter().any(|n| n.starts_with("anvil-cell-"));
    while !measuring(&left_in(&tmp)) && since.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().expect("SIGKILL");
    child.wait().expect("reap anvil");
    let killed = left_in(&tmp);
    assert!(
        killed.iter().any(|n| n.starts_with("anvil-run-")) && measuring(&killed),
        "a SIGKILLed run leaves its folders: {killed:?}"
    );
    // A live process's folder, named as a run's: kept.
    let live = tmp.join(format!("anvil-cell-{}-kept", std::process::id()));
    std::fs::create_dir_all(&live).expect("make a live folder");
    // The server the killed run started is orphaned too; the next run reaps it (tests/servers.rs), and its folders.
    let ok = scratch.write("ok.kdl", &recipe(4, false));
    run_with_tmp(&scratch, &tmp, &ok, &[]).expect_code(0);
    assert_eq!(left_in(&tmp), vec![live.file_name().unwrap().to_string_lossy().into_owned()]);
}
