//! A launched server that is (or was) ready, and how it is stopped.

use std::path::PathBuf;
use std::process::ExitStatus;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anvil_words::words;
use tokio::process::Child;

use crate::live_servers;
use crate::server_log::ServerLog;
use crate::server_registry;
use crate::teardown::ServerTree;

/// A server process anvil started. Dropping it without [`stop`](Self::stop)
/// SIGKILLs its whole process tree (best effort, no grace).
pub struct RunningServer {
    pub(crate) name: String,
    pub(crate) child: Child,
    pub(crate) pid: u32,
    pub(crate) port: u16,
    pub(crate) token: String,
    pub(crate) startup: Duration,
    pub(crate) log: Arc<ServerLog>,
    pub(crate) log_path: PathBuf,
    pub(crate) grace: Duration,
    pub(crate) record_path: PathBuf,
    pub(crate) live_id: u64,
    /// Set once the leader's exit status was collected: from then on its
    /// pid may be recycled, so its process group is no longer trusted.
    pub(crate) reaped: bool,
    /// Set once the tree is known to be down, so Drop does nothing.
    pub(crate) finished: bool,
}

impl std::fmt::Debug for RunningServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunningServer")
            .field("name", &self.name)
            .field("pid", &self.pid)
            .field("port", &self.port)
            .field("startup", &self.startup)
            .field("log_path", &self.log_path)
            .finish_non_exhaustive()
    }
}

words! {
    #[serde]
    /// Which signal ended the server.
    pub enum StopSignal {
        /// It had already exited, and nothing of its tree was left.
        AlreadyExited = "already_exited",
        /// SIGTERM was enough within the grace period.
        Term = "term",
        /// It outlived the grace period and was SIGKILLed.
        Kill = "kill",
    }
}

#[derive(Debug, Clone)]
pub struct StopReport {
    pub signal_used: StopSignal,
    /// The leader's exit status; None only if it could not be collected.
    pub exit_status: Option<ExitStatus>,
    /// From the first signal until the tree was gone.
    pub duration: Duration,
    /// Pids still alive after SIGKILL (should always be empty).
    pub survivors: Vec<i32>,
}

impl RunningServer {
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Time from spawn until the readiness checks passed.
    pub fn startup(&self) -> Duration {
        self.startup
    }

    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The server's process group id (equal to its pid).
    pub fn pgid(&self) -> i32 {
        self.pid as i32
    }

    pub fn log_path(&self) -> &std::path::Path {
        &self.log_path
    }

    /// Non-blocking: the exit status if the server process has exited.
    pub fn has_exited(&mut self) -> Option<ExitStatus> {
        let status = self.child.try_wait().ok().flatten();
        self.reaped |= status.is_some();
        status
    }

    fn tree(&self) -> ServerTree<'_> {
        ServerTree { pgid: self.pgid(), token: &self.token, leader_unreaped: !self.reaped }
    }

    /// The last `lines` lines of its output.
    pub fn log_tail(&self, lines: usize) -> String {
        self.log.tail(lines)
    }

    /// SIGTERM to the whole tree, wait up to the grace period, SIGKILL what
    /// is left, reap the leader, and remove the registry record.
    pub async fn stop(mut self) -> StopReport {
        let started = Instant::now();
        let already_exited = self.has_exited().is_some() && self.tree().survivors().is_empty();
        let (signal_used, survivors) = if already_exited {
            (StopSignal::AlreadyExited, Vec::new())
        } else {
            let (killed, survivors) = self.tree().terminate(self.grace).await;
            let signal = if killed { StopSignal::Kill } else { StopSignal::Term };
            (signal, survivors)
        };
        // The leader is dead by now (or a zombie); this only collects it.
        let exit_status = match tokio::time::timeout(Duration::from_secs(5), self.child.wait()).await {
            Ok(Ok(status)) => Some(status),
            _ => None,
        };
        self.release();
        StopReport { signal_used, exit_status, duration: started.elapsed(), survivors }
    }

    /// Forget the server everywhere: registry file and live set.
    fn release(&mut self) {
        server_registry::remove_record(&self.record_path);
        live_servers::unregister(self.live_id);
        self.finished = true;
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        self.tree().kill_now();
        // tokio reaps the dropped child in the background.
        self.release();
    }
}
