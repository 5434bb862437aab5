//! anvil-quality's integration tests: one binary (the comment at `[[test]]` in
//! the workspace Cargo.toml says why).

mod attribution;
mod coverage;
mod dataset;
mod mcnemar;
mod robust;
mod sim;
