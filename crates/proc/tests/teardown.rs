//! Stopping a server ends its whole process tree: the leader, what it
//! forked, and even workers that moved to their own session.

use std::time::Duration;

use crate::common::{Scratch, is_alive, wait_dead};
use anvil_proc::{StopSignal, launch};

#[tokio::test]
async fn stop_terminates_leader_and_grandchildren() {
    let scratch = Scratch::new();
    let spec = scratch.shell_spec(
        "forks",
        "sleep 1000 & echo $! > $DIR/child.pid; \
         sh -c 'sleep 1000 & echo $! > $DIR/grandchild.pid; wait' & \
         echo ready; wait",
        "^ready$",
    );
    let server = launch(spec).await.expect("ready");
    let leader = server.pid() as i32;
    let child = scratch.read_pid("child.pid");
    let grandchild = scratch.read_pid("grandchild.pid");
    assert!(is_alive(child) && is_alive(grandchild));
    assert_eq!(scratch.registry_records().len(), 1);

    let report = server.stop().await;

    assert_eq!(report.signal_used, StopSignal::Term);
    assert!(report.survivors.is_empty(), "{:?}", report.survivors);
    for pid in [leader, child, grandchild] {
        assert!(!is_alive(pid), "pid {pid} survived stop");
    }
    assert!(scratch.registry_records().is_empty(), "record removed");
}

#[tokio::test]
async fn stop_escalates_to_sigkill_when_sigterm_is_ignored() {
    let scratch = Scratch::new();
    let mut spec = scratch.shell_spec(
        "stubborn",
        // An ignored SIGTERM is inherited by the children too.
        "trap '' TERM; sleep 1000 & echo $! > $DIR/child.pid; echo ready; \
         while :; do sleep 1; done",
        "^ready$",
    );
    spec.grace = Duration::from_millis(300);
    let server = launch(spec).await.expect("ready");
    let leader = server.pid() as i32;
    let child = scratch.read_pid("child.pid");

    let report = server.stop().await;

    assert_eq!(report.signal_used, StopSignal::Kill);
    assert!(report.duration >= Duration::from_millis(300));
    let status = report.exit_status.expect("leader reaped");
    assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(9));
    assert!(!is_alive(leader) && !is_alive(child));
}

#[tokio::test]
async fn stop_reaches_workers_that_left_the_process_group() {
    let scratch = Scratch::new();
    let spec = scratch.shell_spec(
        "setsid-worker",
        // Like engines that daemonize workers: a new session and group.
        "setsid sh -c 'echo $$ > $DIR/escaped.pid; exec sleep 1000' & echo ready; wait",
        "^ready$",
    );
    let server = launch(spec).await.expect("ready");
    let escaped = scratch.read_pid("escaped.pid");
    let escaped_stat = anvil_proc::proc_table::stat(escaped).expect("escaped worker runs");
    assert_ne!(escaped_stat.pgid, server.pgid(), "worker really left the group");

    server.stop().await;

    assert!(
        !is_alive(escaped),
        "escaped worker {escaped} survived: {:?} {:?}",
        anvil_proc::proc_table::stat(escaped),
        std::fs::read(format!("/proc/{escaped}/environ")).map(|e| String::from_utf8_lossy(&e).into_owned())
    );
}

#[tokio::test]
async fn dropping_a_server_kills_its_tree() {
    let scratch = Scratch::new();
    let spec =
        scratch.shell_spec("dropped", "sleep 1000 & echo $! > $DIR/child.pid; echo ready; wait", "^ready$");
    let server = launch(spec).await.expect("ready");
    let leader = server.pid() as i32;
    let child = scratch.read_pid("child.pid");

    drop(server);

    // SIGKILL is delivered asynchronously by the kernel.
    assert!(wait_dead(leader), "leader survived drop");
    assert!(wait_dead(child), "child survived drop");
    assert!(scratch.registry_records().is_empty());
}
