//! The servers this anvil process has running right now, so that Ctrl-C
//! (SIGINT) or SIGTERM to anvil stops them before anvil exits.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::signal::unix::{SignalKind, signal};

use crate::server_registry;
use crate::teardown::ServerTree;

/// What the cleanup needs to stop a server it does not own.
#[derive(Debug, Clone)]
pub(crate) struct LiveServer {
    pub name: String,
    pub pgid: i32,
    pub token: String,
    pub grace: Duration,
    pub record_path: PathBuf,
}

impl LiveServer {
    /// Its handle may have reaped the leader, so the group is trusted only
    /// through the token.
    fn tree(&self) -> ServerTree<'_> {
        ServerTree { pgid: self.pgid, token: &self.token, leader_unreaped: false }
    }
}

static LIVE: Mutex<BTreeMap<u64, LiveServer>> = Mutex::new(BTreeMap::new());
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

pub(crate) fn register(server: LiveServer) -> u64 {
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    if let Ok(mut live) = LIVE.lock() {
        live.insert(id, server);
    }
    id
}

pub(crate) fn unregister(id: u64) {
    if let Ok(mut live) = LIVE.lock() {
        live.remove(&id);
    }
}

fn take_all() -> Vec<LiveServer> {
    match LIVE.lock() {
        Ok(mut live) => std::mem::take(&mut *live).into_values().collect(),
        Err(_) => Vec::new(),
    }
}

/// Names of the servers currently running.
pub fn live_server_names() -> Vec<String> {
    match LIVE.lock() {
        Ok(live) => live.values().map(|s| s.name.clone()).collect(),
        Err(_) => Vec::new(),
    }
}

/// Stops every live server (SIGTERM, grace, SIGKILL; all in parallel) and
/// removes their registry records. `RunningServer` handles still held
/// afterwards only find dead processes. Returns how many were stopped.
pub async fn shutdown_all_servers() -> usize {
    // Entries stay registered until each is down, so that a second signal
    // (kill_all_now) still finds the ones that are slow to stop.
    let servers: Vec<(u64, LiveServer)> = match LIVE.lock() {
        Ok(live) => live.iter().map(|(id, s)| (*id, s.clone())).collect(),
        Err(_) => Vec::new(),
    };
    let count = servers.len();
    let stops = servers.into_iter().map(|(id, server)| {
        tokio::spawn(async move {
            server.tree().terminate(server.grace).await;
            server_registry::remove_record(&server.record_path);
            unregister(id);
        })
    });
    for stop in stops.collect::<Vec<_>>() {
        let _ = stop.await;
    }
    count
}

/// SIGKILL every live server at once, without waiting.
fn kill_all_now() {
    for server in take_all() {
        server.tree().kill_now();
        server_registry::remove_record(&server.record_path);
    }
}

/// Call once at startup, inside the tokio runtime. On the first SIGINT,
/// SIGTERM or SIGHUP it stops all live servers gracefully and exits with
/// 130 / 143 / 129;
/// a second signal during that shutdown kills them at once and exits.
///
/// Callers that need their own shutdown logic can skip this and call
/// [`shutdown_all_servers`] from their handler instead.
pub fn install_signal_cleanup() -> std::io::Result<()> {
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    let mut hangup = signal(SignalKind::hangup())?;
    let runtime = tokio::runtime::Handle::try_current().map_err(std::io::Error::other)?;
    runtime.spawn(async move {
        let code = tokio::select! {
            _ = interrupt.recv() => 130,
            _ = terminate.recv() => 143,
            _ = hangup.recv() => 129, // the terminal went away
        };
        let names = live_server_names();
        if !names.is_empty() {
            eprintln!("anvil: stopping servers: {}", names.join(", "));
        }
        tokio::select! {
            _ = shutdown_all_servers() => {}
            _ = interrupt.recv() => kill_all_now(),
            _ = terminate.recv() => kill_all_now(),
        }
        std::process::exit(code);
    });
    Ok(())
}
