//! No engine outlives anvil: not after `kill -9` of anvil (PDEATHSIG for
//! the server, the reaper for what it forked), not after Ctrl-C (signal
//! cleanup). The "anvil" here is this test binary re-executed as a helper.

use std::path::Path;
use std::process::{Child, Command};
use std::time::Duration;

use crate::common::{Scratch, is_alive, wait_dead};
use anvil_proc::{ServerRecord, launch, proc_table, reap_orphans};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

const ROLE_VAR: &str = "ANVIL_PROC_TEST_ROLE";
const SCRATCH_VAR: &str = "ANVIL_PROC_TEST_SCRATCH";

/// Runs only inside the helper process: launches a server that forks a
/// grandchild, reports pids through files, then waits to be killed.
#[tokio::test]
async fn helper_process() {
    let Ok(role) = std::env::var(ROLE_VAR) else {
        return; // a normal test run: nothing to do
    };
    let dir = std::env::var(SCRATCH_VAR).expect("scratch dir");
    if role == "signal-cleanup" {
        anvil_proc::install_signal_cleanup().expect("install cleanup");
    }
    // The spec builder wants a Scratch; the pid files and registry go to
    // the parent test's directory instead (set just below).
    let scratch = Scratch::with_dir(tempfile::TempDir::with_prefix_in("helper", &dir).expect("dir"));
    let mut spec = scratch.shell_spec(
        "owned",
        "sleep 1000 & echo $! > $DIR/grandchild.pid; echo ready; wait",
        "^ready$",
    );
    spec.registry_dir = Path::new(&dir).join("servers");
    spec.env = vec![("DIR".to_string(), dir.clone())];
    let server = launch(spec).await.expect("ready");
    std::fs::write(Path::new(&dir).join("leader.pid"), server.pid().to_string()).expect("write leader pid");
    tokio::time::sleep(Duration::from_secs(1000)).await;
}

fn start_helper(role: &str, scratch: &Scratch) -> Child {
    Command::new(std::env::current_exe().expect("test binary"))
        .args(["--exact", "owner_death::helper_process", "--nocapture", "--test-threads=1"])
        .env(ROLE_VAR, role)
        .env(SCRATCH_VAR, scratch.dir.path())
        .spawn()
        .expect("start helper")
}

#[test]
fn kill_9_of_anvil_leaves_no_server_behind() {
    let scratch = Scratch::new();
    let mut anvil = start_helper("plain", &scratch);
    let leader = scratch.read_pid("leader.pid");
    let grandchild = scratch.read_pid("grandchild.pid");
    assert!(is_alive(leader) && is_alive(grandchild));

    kill(Pid::from_raw(anvil.id() as i32), Signal::SIGKILL).expect("kill -9 anvil");
    anvil.wait().expect("reap helper");

    // The kernel kills the server itself (PR_SET_PDEATHSIG)...
    assert!(wait_dead(leader), "server {leader} survived its anvil");
    // ...but not what the server forked: that is the reaper's job.
    assert!(is_alive(grandchild), "grandchild expected to need the reaper");
    assert_eq!(scratch.registry_records().len(), 1, "record left by dead anvil");

    let reaped = reap_orphans(&scratch.registry());

    assert_eq!(reaped.len(), 1);
    assert_eq!(reaped[0].name, "owned");
    assert_eq!(reaped[0].pgid, leader);
    assert!(reaped[0].killed_pids.contains(&grandchild), "{reaped:?}");
    assert!(wait_dead(grandchild), "grandchild {grandchild} survived the reaper");
    assert!(scratch.registry_records().is_empty());
}

#[test]
fn ctrl_c_to_anvil_stops_its_servers_then_exits_130() {
    let scratch = Scratch::new();
    let mut anvil = start_helper("signal-cleanup", &scratch);
    let leader = scratch.read_pid("leader.pid");
    let grandchild = scratch.read_pid("grandchild.pid");

    kill(Pid::from_raw(anvil.id() as i32), Signal::SIGINT).expect("Ctrl-C anvil");
    let status = anvil.wait().expect("helper exits");

    assert_eq!(status.code(), Some(130));
    // Cleanup finished before exit, so no waiting is needed here.
    assert!(!is_alive(leader), "server {leader} survived Ctrl-C");
    assert!(!is_alive(grandchild), "grandchild {grandchild} survived Ctrl-C");
    assert!(scratch.registry_records().is_empty());
}

#[tokio::test]
async fn reaper_leaves_servers_of_a_live_anvil_alone() {
    let scratch = Scratch::new();
    let server =
        launch(scratch.shell_spec("mine", "echo ready; exec sleep 1000", "ready")).await.expect("ready");

    let reaped = reap_orphans(&scratch.registry());

    assert!(reaped.is_empty(), "{reaped:?}");
    assert!(is_alive(server.pid() as i32));
    assert_eq!(scratch.registry_records().len(), 1);
    server.stop().await;
}

#[test]
fn reaper_never_kills_a_process_that_reuses_a_recorded_pid() {
    let scratch = Scratch::new();
    // An unrelated process group standing where a dead server's group was.
    let mut bystander = {
        use std::os::unix::process::CommandExt;
        Command::new("sleep").arg("1000").process_group(0).spawn().expect("bystander")
    };
    let pid = bystander.id() as i32;
    let dead_anvil = dead_pid();
    let stale = ServerRecord {
        name: "stale".to_string(),
        anvil_pid: dead_anvil,
        anvil_start_ticks: 1,
        pid,
        pid_start_ticks: 1, // not the bystander's start time
        pgid: pid,
        token: "token-of-a-long-gone-server".to_string(),
        boot_id: proc_table::boot_id(),
        started_unix_ms: 0,
        program: "/usr/bin/engine".to_string(),
        port: 1,
    };
    write_record(&scratch, &stale);
    let from_old_boot =
        ServerRecord { boot_id: "another-boot".to_string(), anvil_pid: dead_anvil + 1, ..stale.clone() };
    write_record(&scratch, &from_old_boot);

    let reaped = reap_orphans(&scratch.registry());

    assert_eq!(reaped.len(), 2, "both stale records are cleared");
    assert!(reaped.iter().all(|r| r.killed_pids.is_empty()), "{reaped:?}");
    assert!(is_alive(pid), "bystander must survive");
    assert!(scratch.registry_records().is_empty());
    bystander.kill().expect("kill bystander");
    bystander.wait().expect("reap bystander");
}

fn write_record(scratch: &Scratch, record: &ServerRecord) {
    std::fs::create_dir_all(scratch.registry()).expect("registry dir");
    std::fs::write(scratch.registry().join(record.file_name()), serde_json::to_vec(record).expect("json"))
        .expect("write record");
}

/// The pid of a process that has exited and been reaped.
fn dead_pid() -> i32 {
    let mut child = Command::new("true").spawn().expect("spawn true");
    let pid = child.id() as i32;
    child.wait().expect("wait true");
    pid
}
