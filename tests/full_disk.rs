//! A store on a small real filesystem (a size-limited tmpfs the test mounts
//! as root; skipped with a note where it cannot): a result too large for
//! the space left fails its step with a message that names the disk and the
//! bytes needed, nothing half-written is visible, the store verifies, and
//! the rerun once there is space runs only what was not stored. On a disk
//! filled to the last byte, `store verify` and `gc` still work.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::Scratch;

/// A tmpfs mounted for the test, unmounted when dropped (pass or fail).
struct SmallDisk(PathBuf);

impl SmallDisk {
    fn mount(at: &Path, size: &str) -> Option<SmallDisk> {
        std::fs::create_dir_all(at).ok()?;
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .output()
            .ok()?;
        if !mounted.status.success() {
            eprintln!(
                "skipped: mounting a tmpfs needs root (CAP_SYS_ADMIN): {}",
                String::from_utf8_lossy(&mounted.stderr).trim()
            );
            return None;
        }
        Some(SmallDisk(at.to_path_buf()))
    }

    fn resize(&self, size: &str) {
        let status = Command::new("mount")
            .args(["-o", &format!("remount,size={size}")])
            .arg(&self.0)
            .status()
            .expect("mount runs");
        assert!(status.success(), "remount {} to {size}", self.0.display());
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

const RECIPE: &str = r#"
server "sim" { model "m"; sim { decode-step-ms 0; } }
cell "small" server="sim" { context-tokens 16; max-tokens 4; requests 5; canaries #false; }
cell "large" server="sim" { context-tokens 16; max-tokens 4; requests 3000; concurrency 16; canaries #false; }
"#;

#[test]
fn a_full_disk_fails_the_step_loses_nothing_and_the_rerun_resumes() {
    let scratch = Scratch::new();
    let Some(disk) = SmallDisk::mount(&scratch.path().join("disk"), "1m") else { return };
    let store = disk.0.join("store");
    let store_arg = store.to_str().expect("utf-8");
    let recipe = scratch.write("recipe.kdl", RECIPE);
    let recipe_arg = recipe.to_str().expect("utf-8");

    // The large cell's artifact (about 4.7 MiB) does not fit in 1 MiB.
    let first = scratch.anvil(&["--store", store_arg, "run", recipe_arg, "--json"]).expect_code(1);
    let transcript = first.transcript();
    assert_eq!(crate::broken_inputs::fault_of(&first.json(), "large"), "disk-full", "{transcript}");
    assert!(transcript.contains("no space left on the store's disk"), "{transcript}");
    assert!(transcript.contains(&format!("({}: ", store.display())), "names the disk: {transcript}");
    assert!(transcript.contains("this step's results need"), "says the bytes needed: {transcript}");
    let staging: Vec<_> = std::fs::read_dir(store.join("staging")).expect("staging").collect();
    assert!(staging.is_empty(), "nothing half-written is left: {staging:?}");
    scratch.anvil(&["--store", store_arg, "store", "verify"]).expect_code(0);

    // Space freed: only the step that was not stored runs.
    disk.resize("64m");
    let second = scratch.anvil(&["--store", store_arg, "run", recipe_arg]).expect_code(0);
    let summary = second.summary();
    assert_eq!((summary.ran, summary.cached), (1, 1), "{}", second.transcript());
    scratch.anvil(&["--store", store_arg, "store", "verify"]).expect_code(0);

    // Filled to the last byte (outside the store, on the same disk):
    // checking and collecting still work.
    let _ = Command::new("dd")
        .args(["if=/dev/zero", "bs=64k"])
        .arg(format!("of={}", disk.0.join("filler").display()))
        .output();
    let verify = scratch.anvil(&["--store", store_arg, "store", "verify"]).expect_code(0);
    assert!(verify.stdout.contains("store is clean"), "{}", verify.transcript());
    scratch.anvil(&["--store", store_arg, "gc"]).expect_code(0);
}
