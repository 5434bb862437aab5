//! anvil-proc: the lifecycle of inference-server processes.
//!
//! - [`launch`] starts a server in its own process group, captures its
//!   output to a log file, and waits until it is ready ([`ReadySpec`]).
//! - [`RunningServer::stop`] ends the whole process tree (SIGTERM, grace,
//!   SIGKILL); dropping a [`RunningServer`] kills it at once.
//! - No orphan survives anvil: servers die with anvil (`PR_SET_PDEATHSIG`),
//!   Ctrl-C stops them ([`install_signal_cleanup`]), and what a `kill -9`
//!   leaves behind is killed by the next anvil ([`reap_orphans`]).
//! - Around the servers: [`free_port`], [`engine_identity`], [`GpuPool`],
//!   [`scrape_metrics`] / [`metric_deltas`], [`GpuSampler`].
//! - What a run really ran, cheap enough for every plan: a Python engine's
//!   interpreter and distributions ([`python_identity`]), the model weights
//!   ([`weights_identity`]) and the GPU driver ([`gpu_driver`]).

mod engine_identity;
mod error;
mod free_port;
mod gpu_driver;
mod gpu_pool;
mod gpu_sampler;
mod launch;
mod launch_spec;
mod live_servers;
mod metrics;
mod metrics_sampler;
pub mod proc_table;
mod python_identity;
mod running_server;
mod server_log;
mod server_registry;
mod teardown;
mod timed_command;
mod weights_identity;

pub use engine_identity::{EngineIdentity, VERSION_TIMEOUT, engine_identity, engine_identity_with_timeout};
pub use error::ProcError;
pub use free_port::free_port;
pub use gpu_driver::gpu_driver;
pub use gpu_pool::{GpuLease, GpuPool};
pub use gpu_sampler::GpuSampler;
pub use launch::launch;
pub use launch_spec::{LaunchSpec, ReadySpec};
pub use live_servers::{install_signal_cleanup, live_server_names, shutdown_all_servers};
pub use metrics::{
    is_cumulative, metric_deltas, metric_name, parse_prometheus_text, scrape_metrics, scrape_metrics_with_tls,
};
pub use metrics_sampler::{MetricsSample, MetricsSampler, SampledMetrics, kept_in_series};
pub use python_identity::{
    InstalledDistribution, PYTHON_PROBE_TIMEOUT, PythonIdentity, SGLANG_DISTRIBUTIONS, TorchBuild,
    VLLM_DISTRIBUTIONS, python_identity, python_identity_with_timeout,
};
pub use running_server::{RunningServer, StopReport, StopSignal};
pub use server_registry::{ReapedServer, ServerRecord, reap_orphans};
pub use weights_identity::{
    HubWeights, LocalWeights, RACY_WINDOW, WeightsFile, WeightsIdentity, default_hub_cache, weights_identity,
    weights_identity_with_hub_cache,
};
