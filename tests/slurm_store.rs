//! The store shared across hosts (`ANVIL_STORE_SHARED=1`, always under the
//! Slurm executor): node locks are lease locks too. No Slurm needed.

use std::process::Stdio;

use crate::common::Scratch;

/// One slow task that appends a line each time it really runs.
const RECIPE: &str = r#"campaign "lease" {
    seed 1
}
task "once" {
    run "sh" "-c" "echo ran >> runs.txt; sleep 1"
}
"#;

#[test]
fn two_heads_on_a_shared_store_run_a_fingerprint_once() {
    let scratch = Scratch::new();
    let recipe = scratch.write("lease.kdl", RECIPE);
    let heads: Vec<_> = (0..3)
        .map(|_| {
            scratch
                .command()
                .env("ANVIL_STORE_SHARED", "1")
                .arg("run")
                .arg(&recipe)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut saw_lease = false;
    for _ in 0..20 {
        std::thread::sleep(std::time::Duration::from_millis(50));
        let locks =
            std::fs::read_dir(scratch.store().join("locks")).map(|d| d.flatten().count()).unwrap_or(0);
        let leases = std::fs::read_dir(scratch.store().join("locks"))
            .map(|d| d.flatten().filter(|e| e.file_name().to_string_lossy().ends_with(".lease")).count())
            .unwrap_or(0);
        saw_lease |= leases == 1 && locks >= 1;
    }
    for mut head in heads {
        assert!(head.wait().unwrap().success());
    }
    assert_eq!(scratch.read("runs.txt"), "ran\n", "the task ran once for three heads");
    assert!(saw_lease, "a lease file was held while the task ran");
    let leases_left = std::fs::read_dir(scratch.store().join("locks"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".lease"))
        .count();
    assert_eq!(leases_left, 0, "leases are removed on release");
    scratch.anvil(&["store", "verify"]).expect_code(0);
}

#[test]
fn a_stale_lease_of_a_dead_node_is_broken() {
    let scratch = Scratch::new();
    let recipe = scratch.write("lease.kdl", RECIPE);
    let fp = scratch.plan(&recipe, &[]).fingerprint("once");
    std::fs::create_dir_all(scratch.store().join("locks")).unwrap();
    let lease = scratch.store().join("locks").join(format!("{fp}.lease"));
    // Expired a minute ago, held by a node that is gone.
    let expired =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() - 60_000;
    std::fs::write(&lease, format!("{{\"holder\":\"dead-node:4242:x\",\"expires_ms\":{expired}}}\n"))
        .unwrap();
    let out = scratch.command().env("ANVIL_STORE_SHARED", "1").arg("run").arg(&recipe).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(scratch.read("runs.txt"), "ran\n");
    assert!(!lease.exists());

    // A live lease of another node is waited for: the run blocks until it expires.
    let scratch = Scratch::new();
    let recipe = scratch.write("lease.kdl", RECIPE);
    std::fs::create_dir_all(scratch.store().join("locks")).unwrap();
    let lease = scratch.store().join("locks").join(format!("{fp}.lease"));
    let soon =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() + 2_000;
    std::fs::write(&lease, format!("{{\"holder\":\"other-node:4242:x\",\"expires_ms\":{soon}}}\n")).unwrap();
    let started = std::time::Instant::now();
    let out = scratch.command().env("ANVIL_STORE_SHARED", "1").arg("run").arg(&recipe).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(started.elapsed() >= std::time::Duration::from_millis(1500), "waited for the live lease");
    assert_eq!(scratch.read("runs.txt"), "ran\n");
}
