//! Signalling a server's whole process tree and waiting for it to be gone.

use std::time::{Duration, Instant};

use nix::sys::signal::{self, Signal};
use nix::unistd::Pid;

use crate::proc_table;

/// Sends `sig` to every process of the group. A group that no longer
/// exists is not an error.
pub fn signal_group(pgid: i32, sig: Signal) {
    if pgid > 1 {
        let _ = signal::killpg(Pid::from_raw(pgid), sig);
    }
}

/// Sends `sig` to the process group and to every other process of the
/// server's tree (see [`proc_table::server_tree`]); returns the pids found.
pub fn signal_tree(pgid: i32, token: &str, sig: Signal) -> Vec<i32> {
    let tree = proc_table::server_tree(Some(pgid), token);
    signal_group(pgid, sig);
    for pid in &tree {
        let _ = signal::kill(Pid::from_raw(*pid), sig);
    }
    tree
}

/// Pids of the tree still alive.
pub fn survivors(pgid: i32, token: &str) -> Vec<i32> {
    proc_table::server_tree(Some(pgid), token)
}

/// Polls until no process of the tree is alive (seen on two scans in a row,
/// so a process caught mid-`exec` is not missed) or `limit` has passed;
/// returns the survivors (empty on success).
pub async fn wait_tree_gone(pgid: i32, token: &str, limit: Duration) -> Vec<i32> {
    let deadline = Instant::now() + limit;
    let mut empty_scans = 0;
    loop {
        let left = survivors(pgid, token);
        empty_scans = if left.is_empty() { empty_scans + 1 } else { 0 };
        if empty_scans == 2 || Instant::now() >= deadline {
            return left;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The full stop sequence shared by `RunningServer::stop` and the signal
/// cleanup: SIGTERM the tree, give it `grace`, then SIGKILL what is left.
/// Returns whether SIGKILL was needed and the pids that still survived.
pub async fn terminate_tree(pgid: i32, token: &str, grace: Duration) -> (bool, Vec<i32>) {
    signal_tree(pgid, token, Signal::SIGTERM);
    if wait_tree_gone(pgid, token, grace).await.is_empty() {
        return (false, Vec::new());
    }
    kill_tree_now(pgid, token);
    // SIGKILL cannot be ignored; this wait only covers the kernel's work.
    let left = wait_tree_gone(pgid, token, Duration::from_secs(5)).await;
    (true, left)
}

/// SIGKILL the whole tree without waiting (Drop, second Ctrl-C).
pub fn kill_tree_now(pgid: i32, token: &str) {
    signal_tree(pgid, token, Signal::SIGKILL);
}
