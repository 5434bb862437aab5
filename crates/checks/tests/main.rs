//! Anvil-checks' integration tests, as one test binary: each file in this
//! folder is a module here (`autotests = false` and the one `[[test]]` in
//! Cargo.toml say why), so a new test file needs its `mod` line below.

mod checks_against_sim;
mod scripted_server;
