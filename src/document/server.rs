//! A server's document body: how to launch it, or reach it.

use std::path::PathBuf;

use anvil_net::TlsSettings;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::launch::{Engine, Warmup};
use crate::recipe::decls::{DEFAULT_MODEL, ServerDecl};

/// What starting a server needs: its settings as declared (engine and
/// command line, readiness, replicas, GPUs, warm-up, TLS), placeholders
/// still to fill at launch.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServerExec {
    pub engine: Engine,
    /// The model its requests name; `default` when none is declared.
    pub model: Option<String>,
    /// GPUs each replica takes.
    pub gpus: u64,
    /// What the GPUs are called in results, when declared.
    pub gpu_label: Option<String>,
    pub replicas: u64,
    /// The `sim` block: the simulated engine's settings.
    pub sim: Option<Value>,
    /// `/metrics` endpoints read beside the server's own.
    pub scrape: Vec<String>,
    pub warmup: Warmup,
    pub tls: TlsSettings,
    /// The folder its relative paths (`cwd`, `ca-bundle`) start from.
    pub workdir: PathBuf,
    /// Launched as its simulated twin (`--sim`).
    pub simulated_twin: bool,
}

impl ServerExec {
    /// The server `decl`, its relative paths from `workdir`.
    pub fn of(decl: &ServerDecl, workdir: PathBuf, simulated_twin: bool) -> ServerExec {
        ServerExec {
            engine: decl.engine.clone(),
            model: decl.model.clone(),
            gpus: decl.gpus,
            gpu_label: decl.gpu_label.clone(),
            replicas: decl.replicas,
            sim: decl.sim.clone(),
            scrape: decl.scrape.clone(),
            warmup: decl.warmup,
            tls: decl.tls.clone(),
            workdir,
            simulated_twin,
        }
    }

    /// Whether a launched server speaks https: it declared how to trust it.
    pub fn serves_https(&self) -> bool {
        !self.tls.is_default()
    }

    /// The model its requests name.
    pub fn served_model(&self) -> &str {
        self.model.as_deref().unwrap_or(DEFAULT_MODEL)
    }
}
