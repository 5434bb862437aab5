//! The integration tests of anvil-proc, as one test binary: every other
//! file of this folder is a module here (why: `autotests = false` and
//! the one `[[test]]` in Cargo.toml), so a new test file needs its `mod`
//! line below.

// Helpers shared by the modules.
mod common;

mod engine_identity;
mod gpu_pool;
mod gpu_sampler;
mod launch_readiness;
mod llama_server;
mod metrics;
mod owner_death;
mod python_identity;
mod shutdown_all;
mod teardown;
mod weights_identity;
