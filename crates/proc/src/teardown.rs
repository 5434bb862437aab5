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

/// Sends `sig` to every live process carrying the server token (those that
/// left the process group included) and returns their pids.
pub fn signal_token_holders(token: &str, sig: Signal) -> Vec<i32> {
    let holders = proc_table::processes_with_token(token);
    for p in &holders {
        let _ = signal::kill(Pid::from_raw(p.pid), sig);
    }
    holders.iter().map(|p| p.pid).collect()
}

/// Pids of the tree still alive: group members plus token holders.
pub fn survivors(pgid: i32, token: &str) -> Vec<i32> {
    let mut pids: Vec<i32> = proc_table::group_members(pgid)
        .iter()
        .map(|p| p.pid)
        .collect();
    for p in proc_table::processes_with_token(token) {
        if !pids.contains(&p.pid) {
            pids.push(p.pid);
        }
    }
    pids.sort_unstable();
    pids
}

/// Polls until no process of the tree is alive or `limit` has passed;
/// returns the survivors (empty on success).
pub async fn wait_tree_gone(pgid: i32, token: &str, limit: Duration) -> Vec<i32> {
    let deadline = Instant::now() + limit;
    loop {
        let left = survivors(pgid, token);
        if left.is_empty() || Instant::now() >= deadline {
            return left;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The full stop sequence shared by `RunningServer::stop` and the signal
/// cleanup: SIGTERM the tree, give it `grace`, then SIGKILL what is left.
/// Returns whether SIGKILL was needed and the pids that still survived.
pub async fn terminate_tree(pgid: i32, token: &str, grace: Duration) -> (bool, Vec<i32>) {
    signal_group(pgid, Signal::SIGTERM);
    signal_token_holders(token, Signal::SIGTERM);
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
    signal_group(pgid, Signal::SIGKILL);
    signal_token_holders(token, Signal::SIGKILL);
}
