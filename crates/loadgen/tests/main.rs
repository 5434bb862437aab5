//! The integration tests of anvil-loadgen, as one test binary: every other
//! file of this folder is a module here (why: `autotests = false` and
//! the one `[[test]]` in Cargo.toml), so a new test file needs its `mod`
//! line below.

// Helpers shared by the modules.
mod support;

mod against_sim;
mod llama_trace;
mod raw_server;
mod tls;
mod token_exact;
mod traffic;
