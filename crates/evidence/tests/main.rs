//! The integration tests of anvil-evidence, as one test binary: every other
//! file of this folder is a module here (why: `autotests = false` and
//! the one `[[test]]` in Cargo.toml), so a new test file needs its `mod`
//! line below.

// Helpers shared by the modules.
mod common;

mod compare_props;
mod headline;
mod jobs;
mod rederive_anvil;
mod rederive_file;
mod rederive_reference;
