//! What a step needs to talk to a running server: a leaf, shared by the
//! server pool that fills it and the steps (and warm-up) that use it.

use std::path::PathBuf;

use anvil_loadgen::Target;
use anvil_net::TlsSettings;
use serde_json::Value;

/// What a step needs to talk to a running server.
#[derive(Debug, Clone)]
pub struct ServerInfo {
    pub name: String,
    pub targets: Vec<Target>,
    pub engine: String,
    pub simulated: bool,
    pub model: String,
    pub gpu_label: Option<String>,
    pub startup_ms: Vec<u64>,
    pub log_paths: Vec<PathBuf>,
    pub serve_flags: Value,
    /// GPU ids handed to the replicas (for telemetry).
    pub gpu_ids: Vec<String>,
    /// What the server's `warmup` did before its first step.
    pub warmup: Value,
    /// An engine known by name: its prefix-cache block at its defaults
    /// (what its own `/metrics` says comes first).
    pub cache_block_tokens: Option<u64>,
    /// The server's `scrape` targets (an exporter's `/metrics`), read
    /// around and during each cell with its replicas' own.
    pub scrape_targets: Vec<ScrapeTarget>,
}

/// A Prometheus endpoint a server's cells read besides its replicas.
#[derive(Debug, Clone)]
pub struct ScrapeTarget {
    /// The URL as the recipe wrote it: the target's label in the telemetry.
    pub url: String,
    /// The URL without its `/metrics`, where the scrapers add it.
    pub base_url: String,
    pub tls: TlsSettings,
}
