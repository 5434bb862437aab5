//! A server's document body: how to launch it, or reach it.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::recipe::decls::ServerDecl;

/// What starting a server needs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServerExec {
    /// The server's settings as declared (command line, readiness, replicas,
    /// GPUs, warm-up, TLS), placeholders still to fill at launch.
    pub server: ServerDecl,
    /// The folder its relative paths (`cwd`, `ca-bundle`) start from.
    pub workdir: PathBuf,
    /// Launched as its simulated twin (`--sim`).
    pub simulated_twin: bool,
}
