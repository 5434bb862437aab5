//! The integration tests of anvil-expr, as one test binary: every other
//! file of this folder is a module here (why: `autotests = false` and
//! the one `[[test]]` in Cargo.toml), so a new test file needs its `mod`
//! line below.

// Helpers shared by the modules.
mod common;

mod docs;
mod evaluation;
mod fuzz;
mod over_ranges;
mod properties;
mod syntax;
