//! The integration tests of anvil-checks, as one test binary: every other
//! file of this folder is a module here (why: `autotests = false` and
//! the one `[[test]]` in Cargo.toml), so a new test file needs its `mod`
//! line below.

mod checks_against_sim;
mod scripted_server;
