//! Signalling a server's whole process tree and waiting for it to be gone.
//!
//! The tree is: the server's process group, every process carrying its
//! token, and their descendants. A process group id is a pid, and pids are
//! recycled, so the group is signalled only while it is provably the
//! server's: its leader has not been reaped yet (an unreaped pid cannot be
//! reused), or one of its members carries the token.

use std::time::{Duration, Instant};

use nix::sys::signal::{self, Signal};
use nix::unistd::Pid;

use crate::proc_table;

/// Which server tree to act on.
#[derive(Debug, Clone, Copy)]
pub struct ServerTree<'a> {
    pub pgid: i32,
    pub token: &'a str,
    /// True while anvil holds the leader unreaped, which pins the pgid.
    pub leader_unreaped: bool,
}

impl ServerTree<'_> {
    /// The process group, if it is provably still this server's.
    fn trusted_group(&self) -> Option<i32> {
        if self.pgid <= 1 {
            return None;
        }
        let ours = self.leader_unreaped
            || proc_table::group_members(self.pgid).iter().any(|p| proc_table::has_token(p.pid, self.token));
        ours.then_some(self.pgid)
    }

    /// Live pids of the tree.
    pub fn survivors(&self) -> Vec<i32> {
        proc_table::server_tree(self.trusted_group(), self.token)
    }

    /// Sends `sig` to the whole tree.
    pub fn signal(&self, sig: Signal) {
        let group = self.trusted_group();
        if let Some(pgid) = group {
            let _ = signal::killpg(Pid::from_raw(pgid), sig);
        }
        for pid in proc_table::server_tree(group, self.token) {
            let _ = signal::kill(Pid::from_raw(pid), sig);
        }
    }

    /// SIGKILL the whole tree without waiting (Drop, second Ctrl-C).
    pub fn kill_now(&self) {
        self.signal(Signal::SIGKILL);
    }

    /// Polls until no process of the tree is alive (seen on two scans in a
    /// row, so a process caught mid-`exec` is not missed) or `limit` has
    /// passed; returns the survivors (empty on success).
    pub async fn wait_gone(&self, limit: Duration) -> Vec<i32> {
        let deadline = Instant::now() + limit;
        let mut empty_scans = 0;
        loop {
            let left = self.survivors();
            empty_scans = if left.is_empty() { empty_scans + 1 } else { 0 };
            if empty_scans == 2 || Instant::now() >= deadline {
                return left;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// SIGTERM the tree, give it `grace`, then SIGKILL what is left.
    /// Returns whether SIGKILL was needed and the pids that still survived.
    pub async fn terminate(&self, grace: Duration) -> (bool, Vec<i32>) {
        self.signal(Signal::SIGTERM);
        if self.wait_gone(grace).await.is_empty() {
            return (false, Vec::new());
        }
        self.kill_now();
        // SIGKILL cannot be ignored; this wait only covers the kernel's work.
        let left = self.wait_gone(Duration::from_secs(5)).await;
        (true, left)
    }
}

/// Sends `sig` to a process group without any check (version probes,
/// whose child anvil holds unreaped).
pub fn signal_group(pgid: i32, sig: Signal) {
    if pgid > 1 {
        let _ = signal::killpg(Pid::from_raw(pgid), sig);
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::CommandExt;
    use std::process::Command;

    use super::*;

    #[test]
    fn a_group_without_the_token_is_never_signalled_once_the_leader_was_reaped() {
        // Stands where a recycled pid would: a live group that is not ours.
        let mut bystander =
            Command::new("sleep").arg("1000").process_group(0).spawn().expect("spawn bystander");
        let pgid = bystander.id() as i32;
        let tree =
            ServerTree { pgid, token: "token-of-a-server-whose-leader-was-reaped", leader_unreaped: false };

        tree.kill_now();

        assert!(tree.survivors().is_empty(), "not counted as ours");
        // Had kill_now reached it, it would have died of SIGKILL (9); it
        // dies of our SIGTERM (15) instead.
        signal::kill(Pid::from_raw(pgid), Signal::SIGTERM).expect("SIGTERM bystander");
        let status = bystander.wait().expect("reap bystander");
        assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(15));
    }
}
