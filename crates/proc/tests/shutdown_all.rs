//! `shutdown_all_servers` stops every server this process has running.
//! (So the test has the process to itself, `Scratch::alone`: it would stop
//! the servers of concurrent tests.)

use crate::common::{Scratch, is_alive};
use anvil_proc::{StopSignal, launch};

#[tokio::test]
async fn shutdown_all_servers_stops_every_live_server() {
    let scratch = Scratch::alone();
    let first = launch(scratch.shell_spec("first", "echo ready; exec sleep 1000", "ready"))
        .await
        .expect("first ready");
    let second = launch(scratch.shell_spec("second", "echo ready; exec sleep 1000", "ready"))
        .await
        .expect("second ready");
    let pids = [first.pid() as i32, second.pid() as i32];
    let names = anvil_proc::live_server_names();
    assert!(names.contains(&"first".to_string()) && names.contains(&"second".to_string()));

    assert_eq!(anvil_proc::shutdown_all_servers().await, 2);
    assert!(anvil_proc::live_server_names().is_empty());

    for pid in pids {
        assert!(!is_alive(pid), "pid {pid} survived shutdown");
    }
    assert!(scratch.registry_records().is_empty());
    // The handles now only find dead processes.
    assert_ne!(first.stop().await.signal_used, StopSignal::Kill);
    drop(second);
}
